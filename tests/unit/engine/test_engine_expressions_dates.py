"""The date expressions of the engine's expression language: tables of expression and
result from the MongoDB manual's examples and the server's own jstests
(jstests/aggregation/expressions/date_*.js), with the errors those tests expect, and
properties of the civil calendar against Python's datetime."""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest
from bson import Int64, ObjectId, Timestamp
from bson.decimal128 import Decimal128 as D128
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocore.sim.engine.expressions.dates import (
    civil_from_days,
    date_add,
    date_diff,
    days_from_civil,
    iso_week,
    parse_time_zone,
    utc,
)
from tests.unit.engine.expression_helpers import check, check_error, error, evaluate


def D(text: str) -> datetime.datetime:
    """An ISODate: "2017-07-04T14:56:42.911Z"."""
    text = re.sub(r"\.(\d+)", lambda m: "." + (m.group(1) + "00000")[:6], text)  # for 3.9
    parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed.astimezone(datetime.timezone.utc).replace(tzinfo=None)


# -- $dateToString ----


@pytest.mark.parametrize(
    ("date", "zone", "expected"),
    [
        # jstests/aggregation/expressions/date_to_string.js
        ("2017-07-04T14:56:42.911Z", "UTC", "2017-07-04 14:56:42 +0000 (0 minutes)"),
        ("2017-07-04T14:56:42.911Z", "Europe/London", "2017-07-04 15:56:42 +0100 (60 minutes)"),
        (
            "2017-07-04T14:56:42.911Z",
            "America/New_York",
            "2017-07-04 10:56:42 -0400 (-240 minutes)",
        ),
        (
            "2017-07-04T14:56:42.911Z",
            "Australia/Eucla",
            "2017-07-04 23:41:42 +0845 (525 minutes)",
        ),
        ("2017-07-04T14:56:42.911Z", "Asia/Kathmandu", "2017-07-04 20:41:42 +0545 (345 minutes)"),
        # an offset with seconds: the wall clock has them, %z and %Z drop them
        ("1935-07-10T11:36:37.133Z", "Europe/Amsterdam", "1935-07-10 12:56:09 +0119 (79 minutes)"),
        (
            "1900-07-10T11:41:22.418Z",
            "America/Caracas",
            "1900-07-10 07:13:42 -0427 (-267 minutes)",
        ),
        (
            "2017-01-04T15:08:51.911Z",
            "America/New_York",
            "2017-01-04 10:08:51 -0500 (-300 minutes)",
        ),
        ("2017-07-04T15:09:12.911Z", "+04:30", "2017-07-04 19:39:12 +0430 (270 minutes)"),
        ("2017-07-04T15:09:12.911Z", "-0130", "2017-07-04 13:39:12 -0130 (-90 minutes)"),
    ],
)
def test_date_to_string_in_time_zones(date: str, zone: str, expected: str) -> None:
    expression = {
        "$dateToString": {
            "format": "%Y-%m-%d %H:%M:%S %z (%Z minutes)",
            "date": "$date",
            "timezone": "$tz",
        }
    }
    check(expression, {"date": D(date), "tz": zone}, expected)


@pytest.mark.parametrize(
    ("date", "fmt", "expected"),
    [
        (
            "2017-01-01T15:08:51.911Z",
            "Natural: %Y-W%w-%U, ISO: %G-W%u-%V",
            "Natural: 2017-W1-01, ISO: 2016-W7-52",
        ),
        (
            "2017-07-04T15:09:12.911Z",
            "Natural: %Y-W%w-%U, ISO: %G-W%u-%V",
            "Natural: 2017-W3-27, ISO: 2017-W2-27",
        ),
        (
            "2017-12-04T15:09:14.911Z",
            "Natural: %Y-W%w-%U, ISO: %G-W%u-%V",
            "Natural: 2017-W2-49, ISO: 2017-W1-49",
        ),
        ("2017-01-01T15:08:51.911Z", "%b (%B) %d, %Y", "Jan (January) 01, 2017"),
        ("2017-07-04T15:09:12.911Z", "%b (%B) %d, %Y", "Jul (July) 04, 2017"),
        ("2017-12-04T15:09:14.911Z", "%b (%B) %d, %Y", "Dec (December) 04, 2017"),
        # the manual's $dateToString example
        ("2014-01-01T08:15:39.736Z", "%Y-%m-%d", "2014-01-01"),
        ("2014-01-01T08:15:39.736Z", "%H:%M:%S:%L%z", "08:15:39:736+0000"),
        ("2014-01-01T08:15:39.736Z", "%j %% %w", "001 % 4"),
        ("0001-01-01T00:00:00Z", "%Y", "0001"),
    ],
)
def test_date_to_string_formats(date: str, fmt: str, expected: str) -> None:
    check({"$dateToString": {"format": fmt, "date": D(date)}}, {}, expected)


def test_date_to_string_defaults_and_nulls() -> None:
    date = D("2017-01-04T15:08:51.911Z")
    # the default format is the ISO one in every zone, ending in Z even where it lies
    check({"$dateToString": {"date": date}}, {}, "2017-01-04T15:08:51.911Z")
    check(
        {"$dateToString": {"date": date, "timezone": "America/New_York"}},
        {},
        "2017-01-04T10:08:51.911Z",
    )
    for doc in ({}, {"date": None}, {"date": date, "tz": None}):
        check({"$dateToString": {"date": "$date", "timezone": "$tz"}}, doc, None)
    check({"$dateToString": {"date": date, "format": None}}, {}, None)
    check({"$dateToString": {"date": date, "format": "$missing"}}, {}, None)
    check({"$dateToString": {"date": "$missing", "onNull": "none"}}, {}, "none")
    # a Timestamp and an ObjectId are dates too
    check({"$dateToString": {"date": Timestamp(1, 0), "format": "%S"}}, {}, "01")
    check(
        {"$dateToString": {"date": ObjectId("507c7f79bcf86cd7994f6c0e"), "format": "%H:%M:%S"}},
        {},
        "21:26:17",
    )


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ({"$dateToString": {"date": D("2017-01-04T15:08:51Z"), "format": 5}}, 18533, None),
        (
            {"$dateToString": {"format": "%Y", "timezone": "$tz"}},
            18628,
            "Missing 'date' parameter to $dateToString",
        ),
        ({"$dateToString": {"date": D("2017-01-04T15:08:51Z"), "timezone": 5}}, 40517, None),
        ({"$dateToString": {"format": "%Y", "date": 42}}, 16006, None),
        (
            {"$dateToString": {"date": D("2017-01-04T15:08:51Z"), "timezone": "DoesNotExist"}},
            40485,
            'unrecognized time zone identifier: "DoesNotExist"',
        ),
        (
            {"$dateToString": {"date": D("2017-01-04T15:08:51Z"), "format": "%"}},
            18535,
            "Unmatched '%' at end of format string",
        ),
        (
            {"$dateToString": {"date": D("2017-01-04T15:08:51Z"), "format": "%n"}},
            18536,
            "Invalid format character '%n' in format string",
        ),
        ({"$dateToString": "x"}, 18629, "$dateToString only supports an object as its argument"),
        (
            {"$dateToString": {"date": 1, "x": 1}},
            18534,
            "Unrecognized argument to $dateToString: x",
        ),
    ],
)
def test_date_to_string_errors(expression: Any, code: int, message: Any) -> None:
    check_error(expression, {}, code, message)


# -- the date parts ----


def test_date_parts() -> None:
    date = D("2014-01-01T08:15:39.736Z")  # the manual's example, a Wednesday
    for name, expected in [
        ("$year", 2014),
        ("$month", 1),
        ("$dayOfMonth", 1),
        ("$hour", 8),
        ("$minute", 15),
        ("$second", 39),
        ("$millisecond", 736),
        ("$dayOfYear", 1),
        ("$dayOfWeek", 4),
        ("$week", 0),
        ("$isoWeek", 1),
        ("$isoWeekYear", Int64(2014)),
        ("$isoDayOfWeek", 3),
    ]:
        check({name: date}, {}, expected)
        check({name: [date]}, {}, expected)
        check({name: {"date": date}}, {}, expected)
    check({"$hour": {"date": date, "timezone": "America/New_York"}}, {}, 3)
    check({"$dayOfYear": {"date": date, "timezone": "-09:00"}}, {}, 365)
    check({"$year": {"date": date, "timezone": "-09:00"}}, {}, 2013)
    check({"$isoWeekYear": D("2016-01-01T00:00:00Z")}, {}, Int64(2015))
    check({"$isoWeek": D("2016-01-01T00:00:00Z")}, {}, 53)
    check({"$week": D("2016-01-03T00:00:00Z")}, {}, 1)  # the first Sunday starts week 1
    check({"$month": None}, {}, None)
    check({"$month": "$missing"}, {}, None)
    check({"$month": {"date": date, "timezone": None}}, {}, None)
    check({"$minute": Timestamp(90, 1)}, {}, 1)
    # before 1970 (jstests/aggregation/expressions/date_expr_before_1970.js)
    check({"$millisecond": D("1969-12-31T23:59:59.999Z")}, {}, 999)
    check({"$second": D("1960-01-01T00:00:01.5Z")}, {}, 1)


def test_date_part_errors() -> None:
    check_error({"$year": "2014"}, {}, 16006, "can't convert from BSON type string to Date")
    check_error({"$year": {"date": 1, "x": 1}}, {}, 40535, 'unrecognized option to $year: "x"')
    check_error({"$year": [1, 2]}, {}, 40536, None)
    check_error({"$year": {"timezone": "UTC"}}, {}, 40539, None)
    check_error({"$year": {"date": D("2014-01-01T00:00:00Z"), "timezone": "Mars"}}, {}, 40485)


# -- $dateToParts, $dateFromParts ----


def test_date_to_parts() -> None:
    date = D("2017-01-01T01:29:09.123Z")  # the manual's example
    check(
        {"$dateToParts": {"date": date}},
        {},
        {
            "year": 2017,
            "month": 1,
            "day": 1,
            "hour": 1,
            "minute": 29,
            "second": 9,
            "millisecond": 123,
        },
    )
    check(
        {"$dateToParts": {"date": date, "timezone": "America/New_York"}},
        {},
        {
            "year": 2016,
            "month": 12,
            "day": 31,
            "hour": 20,
            "minute": 29,
            "second": 9,
            "millisecond": 123,
        },
    )
    check(
        {"$dateToParts": {"date": date, "timezone": "America/New_York", "iso8601": True}},
        {},
        {
            "isoWeekYear": 2016,
            "isoWeek": 52,
            "isoDayOfWeek": 6,
            "hour": 20,
            "minute": 29,
            "second": 9,
            "millisecond": 123,
        },
    )
    check({"$dateToParts": {"date": "$missing"}}, {}, None)
    check({"$dateToParts": {"date": date, "iso8601": None}}, {}, None)
    check_error({"$dateToParts": {"date": date, "iso8601": 1}}, {}, 40521, None)
    check_error({"$dateToParts": {"timezone": "UTC"}}, {}, 40522, None)
    check_error({"$dateToParts": {"date": date, "x": 1}}, {}, 40520, None)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        # jstests/aggregation/expressions/date_from_parts.js: parts out of their range carry
        ({"year": 1}, "0001-01-01T00:00:00.000Z"),
        ({"year": 9999}, "9999-01-01T00:00:00.000Z"),
        ({"year": 2017, "month": -1}, "2016-11-01T00:00:00.000Z"),
        ({"year": 2017, "month": 0}, "2016-12-01T00:00:00.000Z"),
        ({"year": 2017, "month": 13}, "2018-01-01T00:00:00.000Z"),
        ({"year": 2017, "day": -1}, "2016-12-30T00:00:00.000Z"),
        ({"year": 2017, "day": 0}, "2016-12-31T00:00:00.000Z"),
        ({"year": 2017, "day": 61}, "2017-03-02T00:00:00.000Z"),
        ({"year": 2017, "hour": -1}, "2016-12-31T23:00:00.000Z"),
        ({"year": 2017, "hour": 25}, "2017-01-02T01:00:00.000Z"),
        ({"year": 2017, "minute": -1}, "2016-12-31T23:59:00.000Z"),
        ({"year": 2017, "minute": 61}, "2017-01-01T01:01:00.000Z"),
        ({"year": 2017, "second": -1}, "2016-12-31T23:59:59.000Z"),
        ({"year": 2017, "second": 71841012}, "2019-04-12T11:50:12.000Z"),
        ({"year": 1970, "second": 1502095918}, "2017-08-07T08:51:58.000Z"),
        ({"year": 2017, "millisecond": -1}, "2016-12-31T23:59:59.999Z"),
        ({"year": 2017, "millisecond": 1001}, "2017-01-01T00:00:01.001Z"),
        ({"year": 1970, "millisecond": Int64(1502095918551)}, "2017-08-07T08:51:58.551Z"),
        # the manual's examples
        (
            {"year": 2017, "month": 2, "day": 8, "hour": 12, "timezone": "America/New_York"},
            "2017-02-08T17:00:00Z",
        ),
        (
            {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12},
            "2017-02-08T12:00:00Z",
        ),
        ({"isoWeekYear": 2017}, "2017-01-02T00:00:00Z"),
        # every numeric type, a fixed offset
        (
            {
                "timezone": "-02",
                "year": Int64(2017),
                "month": 6.0,
                "day": 23,
                "hour": 10,
                "minute": 27,
                "second": 37,
                "millisecond": 742,
            },
            "2017-06-23T12:27:37.742Z",
        ),
        (
            {"year": 2017, "month": 6, "day": 23, "hour": 16, "minute": 42, "timezone": "+04:15"},
            "2017-06-23T12:27:00Z",
        ),
        ({"year": 2017, "timezone": "Europe/Amsterdam"}, "2016-12-31T23:00:00Z"),
    ],
)
def test_date_from_parts(parts: dict[str, Any], expected: str) -> None:
    check({"$dateFromParts": parts}, {}, D(expected))


def test_date_from_parts_nulls_and_errors() -> None:
    for parts in (
        {"year": "$year"},
        {"year": 2017, "month": "$month"},
        {"year": 2017, "millisecond": "$millisecond"},
        {"isoWeekYear": 2017, "isoDayOfWeek": "$isoDayOfWeek"},
        {"year": 2017, "timezone": "$timezone"},
    ):
        check({"$dateFromParts": parts}, {}, None)
    check_error({"$dateFromParts": "$date"}, {}, 40519, None)
    check_error({"$dateFromParts": {"timezone": "UTC"}}, {}, 40516, None)
    check_error(
        {"$dateFromParts": {"year": False}},
        {},
        40515,
        "'year' must evaluate to an integer, found bool with value false",
    )
    check_error({"$dateFromParts": {"year": 2017, "month": 1.5}}, {}, 40515, None)
    check_error({"$dateFromParts": {"year": 2012, "timezone": "DoesNot/Exist"}}, {}, 40485)
    check_error({"$dateFromParts": {"year": 2012, "timezone": 5}}, {}, 40517)
    for year in (-1, 0, 10000, 10002):
        check_error(
            {"$dateFromParts": {"year": year}},
            {},
            40523,
            f"'year' must evaluate to an integer in the range 1 to 9999, found {year}",
        )
    check_error({"$dateFromParts": {"year": 2017, "month": 40000}}, {}, 31034, None)
    check_error({"$dateFromParts": {"year": 2017, "isoWeek": 1}}, {}, 40489, None)
    check_error({"$dateFromParts": {"isoWeekYear": 2017, "day": 1}}, {}, 40525, None)
    check_error({"$dateFromParts": {"year": 2017, "x": 1}}, {}, 40518, None)


# -- $dateFromString ----


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # jstests/aggregation/expressions/date_from_string.js
        ("2017-07-04T11:56:02Z", "2017-07-04T11:56:02Z"),
        ("2017-07-04T11:56:02.813Z", "2017-07-04T11:56:02.813Z"),
        ("2017-07-04T11:56:02.81Z", "2017-07-04T11:56:02.810Z"),
        ("2017-07-04T11:56:02.8Z", "2017-07-04T11:56:02.800Z"),
        ("2017-07-04T11:56.02", "2017-07-04T11:56:02Z"),
        ("2017-07-04T11:56.02.813", "2017-07-04T11:56:02.813Z"),
        ("2017-07-06T12:35:37", "2017-07-06T12:35:37Z"),
        ("1960-07-10T12:10:37.448", "1960-07-10T12:10:37.448Z"),
        ("2017-01-01 00:00:00", "2017-01-01T00:00:00Z"),
        ("2017-07-06", "2017-07-06T00:00:00Z"),
        ("2017-07-06 11:36", "2017-07-06T11:36:00Z"),
        ("2017-07-14T12:02:44.771 GMT", "2017-07-14T12:02:44.771Z"),
        ("2017-07-14T12:02:44.771 GMT+00", "2017-07-14T12:02:44.771Z"),
        ("2017-07-14T12:02:44.771 GMT+00:00", "2017-07-14T12:02:44.771Z"),
        ("2017-07-14T12:02:44.771 GMT+02", "2017-07-14T10:02:44.771Z"),
        ("2017-07-14T12:02:44.771 GMT+02:00", "2017-07-14T10:02:44.771Z"),
        ("2017-07-14T12:02:44.771+03", "2017-07-14T09:02:44.771Z"),
        ("2017-07-14T12:02:44.771+0330", "2017-07-14T08:32:44.771Z"),
        ("2017-07-14T12:02:44.771+03:30", "2017-07-14T08:32:44.771Z"),
        ("2017-07-14T12:02:44.771 UTC", "2017-07-14T12:02:44.771Z"),
        ("2017-07-14T12:02:44.771 CEST", "2017-07-14T10:02:44.771Z"),
        ("2017-07-14T12:02:44.771 EST", "2017-07-14T17:02:44.771Z"),
        ("2017-07-14T12:02:44.771 PDT", "2017-07-14T19:02:44.771Z"),
        ("2017-07-14T12:02:44.771 A", "2017-07-14T11:02:44.771Z"),
        ("2017-07-14T12:02:44.771 L", "2017-07-14T01:02:44.771Z"),
        ("2017-07-14T12:02:44.771 P", "2017-07-14T15:02:44.771Z"),
        ("2017-07-14T12:02:44.771 Z", "2017-07-14T12:02:44.771Z"),
        ("2017-07-04 12:48:07 GMT+0545", "2017-07-04T07:03:07Z"),
        ("2017-07-04 12:48:07 GMT-0200", "2017-07-04T14:48:07Z"),
    ],
)
def test_date_from_string(text: str, expected: str) -> None:
    check({"$dateFromString": {"dateString": text}}, {}, D(expected))


@pytest.mark.parametrize(
    ("text", "zone", "expected"),
    [
        ("2017-07-04T11:56.02", "Europe/London", "2017-07-04T10:56:02Z"),
        ("2017-07-04T11:56.02.813", "+01:00", "2017-07-04T10:56:02.813Z"),
        ("2017-07-06T12:35:37.513", "GMT", "2017-07-06T12:35:37.513Z"),
        ("1960-07-10T12:35:37.513", "America/New_York", "1960-07-10T16:35:37.513Z"),
        ("1960-07-10T12:35:37.513", "Europe/London", "1960-07-10T11:35:37.513Z"),
        ("2017-07-06T12:35:37.513", "America/Los_Angeles", "2017-07-06T19:35:37.513Z"),
        ("2017-07-06T12:35:37.513", "Europe/Paris", "2017-07-06T10:35:37.513Z"),
        ("2017-07-06T12:35:37.513", "+04:00", "2017-07-06T08:35:37.513Z"),
        ("2017-07-06T12:35:37", "Asia/Tokyo", "2017-07-06T03:35:37Z"),
        ("2017-07-19T18:52:35.199", "-05:00", "2017-07-19T23:52:35.199Z"),
    ],
)
def test_date_from_string_in_a_zone(text: str, zone: str, expected: str) -> None:
    check({"$dateFromString": {"dateString": text, "timezone": zone}}, {}, D(expected))


@pytest.mark.parametrize(
    ("text", "fmt", "expected"),
    [
        ("2017-07-04T11:56:02.81Z", "%Y-%m-%dT%H:%M:%S.%LZ", "2017-07-04T11:56:02.810Z"),
        ("2017-07-04T11:56.02.8", "%Y-%m-%dT%H:%M.%S.%L", "2017-07-04T11:56:02.800Z"),
        ("05 12 1988", "%d %m %Y", "1988-12-05T00:00:00Z"),
        ("05*12*1988", "%d*%m*%Y", "1988-12-05T00:00:00Z"),
        ("1992 % 04 % 26", "%Y %% %m %% %d", "1992-04-26T00:00:00Z"),
        ("Day: 05 Month: 12 Year: 1988", "Day: %d Month: %m Year: %Y", "1988-12-05T00:00:00Z"),
        ("4/26/1992:+0445", "%m/%d/%Y:%z", "1992-04-25T19:15:00Z"),
        ("4/26/1992:+285", "%m/%d/%Y:%Z", "1992-04-25T19:15:00Z"),
        ("2017-07-14T12:02:44.771+03:30", "%Y-%m-%dT%H:%M:%S.%L%z", "2017-07-14T08:32:44.771Z"),
        ("2017", "%G", "2017-01-02T00:00:00Z"),
        ("2017, Week 53", "%G, Week %V", "2018-01-01T00:00:00Z"),
        ("2017, Day 5", "%G, Day %u", "2017-01-06T00:00:00Z"),
        ("53.7.2017", "%V.%u.%G", "2018-01-07T00:00:00Z"),
        ("1.1.1", "%V.%u.%G", "0001-01-01T00:00:00Z"),
        ("Jul 4, 2017", "%b %d, %Y", "2017-07-04T00:00:00Z"),
        ("2017 060", "%Y %j", "2017-03-01T00:00:00Z"),
        # the manual: "15-06-2018" with "%d-%m-%Y"
        ("15-06-2018", "%d-%m-%Y", "2018-06-15T00:00:00Z"),
    ],
)
def test_date_from_string_with_a_format(text: str, fmt: str, expected: str) -> None:
    check({"$dateFromString": {"dateString": text, "format": fmt}}, {}, D(expected))


@pytest.mark.parametrize(
    ("arguments", "code", "contains"),
    [
        ({"dateString": "12:50:53"}, 241, "an incomplete date/time string has been found"),
        ({"dateString": "2018-01", "format": "%Y-%m-%d"}, 241, "Data missing"),
        ({"dateString": "2018-01", "format": "%Y"}, 241, "Trailing data"),
        ({"dateString": "1992-26-04", "format": "Y-d-m"}, 241, "Format literal not found"),
        ({"dateString": "1992", "format": "%n"}, 18536, "Invalid format character"),
        (
            {"dateString": "4/26/1992:+0445", "format": "%m/%d/%Y:%z", "timezone": "+0500"},
            241,
            "you cannot pass in a date/time string with GMT offset together with a timezone"
            " argument",
        ),
        (
            {"dateString": "2017-07-12T22:23:55 GMT+02:00", "timezone": "Europe/Amsterdam"},
            241,
            "GMT offset",
        ),
        (
            {"dateString": "2017-07-12T22:23:55Z", "timezone": "Europe/Amsterdam"},
            241,
            "you cannot pass in a date/time string with time zone information ('Z') together"
            " with a timezone argument",
        ),
        ({"dateString": "4/26/1992", "format": 5}, 40684, "requires that 'format' be a string"),
        ({"dateString": "4/26/1992", "format": {}}, 40684, "requires that 'format' be a string"),
        ({"dateString": "ISO Day 6", "format": "ISO Day %u"}, 241, "The parsed date was invalid"),
        (
            {"dateString": "ISO Week 52", "format": "ISO Week %V"},
            241,
            "The parsed date was invalid",
        ),
        (
            {"dateString": "ISO Week 1, 2018", "format": "ISO Week %V, %Y"},
            241,
            "Mixing of ISO dates with natural dates is not allowed",
        ),
        (
            {"dateString": "12/31/2018", "format": "%m/%d/%G"},
            241,
            "Mixing of ISO dates with natural dates is not allowed",
        ),
        ({"dateString": "12/31\0/2018", "format": "%m/%d/%Y"}, 241, "Data missing"),
        ({"dateString": "12/31/2018", "format": "%m/%d\0/%Y"}, 241, "Trailing data"),
        ({"dateString": 5}, 241, "$dateFromString requires that 'dateString' be a string"),
        ({"dateString": "12:50:53", "format": "%H:%M:%S"}, 241, "an incomplete date/time string"),
        ({"unknown": "$tz"}, 40541, "Unrecognized argument"),
        ({"format": "%Y"}, 40542, "Missing 'dateString' parameter to $dateFromString"),
    ],
)
def test_date_from_string_errors(arguments: Any, code: int, contains: Any) -> None:
    raised = error({"$dateFromString": arguments})
    assert raised.code == code, raised.errmsg
    if contains is not None:
        assert contains in raised.errmsg, raised.errmsg


def test_date_from_string_nulls_on_error_and_refusals() -> None:
    for doc in ({}, {"tz": None}):
        check({"$dateFromString": {"dateString": "$tz"}}, doc, None)
        check(
            {"$dateFromString": {"dateString": "2017-07-11T17:05:19Z", "timezone": "$tz"}},
            doc,
            None,
        )
        check(
            {"$dateFromString": {"dateString": "2017-07-11T17:05:19Z", "format": "$tz"}}, doc, None
        )
    check({"$dateFromString": {"dateString": "$missing", "onNull": 0}}, {}, 0)
    check({"$dateFromString": {"dateString": "oops", "onError": "bad"}}, {}, "bad")
    check({"$dateFromString": {"dateString": 5, "onError": "bad"}}, {}, "bad")
    # onError catches conversion failures only
    check_error(
        {"$dateFromString": {"dateString": "2017", "format": 5, "onError": "bad"}}, {}, 40684
    )
    check_error({"$dateFromString": "no-object"}, {}, 40540, None)
    # what timelib's free-form parser reads beyond ISO 8601 is refused, not guessed
    for text in ("July 4th", "July 4th, 2017", "7/4/17", "04-07-2017", "2017-Jul-04 noon"):
        check_error({"$dateFromString": {"dateString": text}}, {}, 238)


# -- $dateAdd, $dateSubtract ----

START = D("2020-12-31T12:10:05Z")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # jstests/aggregation/expressions/date_add_subtract.js
        (
            {"startDate": D("2020-11-30T12:10:05Z"), "unit": "day", "amount": 1},
            "2020-12-01T12:10:05Z",
        ),
        (
            {
                "startDate": D("2020-10-24T18:10:00Z"),
                "unit": "hour",
                "amount": 24,
                "timezone": "Europe/Paris",
            },
            "2020-10-25T18:10:00Z",
        ),
        # a day keeps the local time across the change of offset
        (
            {
                "startDate": D("2020-10-24T18:10:00Z"),
                "unit": "day",
                "amount": 1,
                "timezone": "Europe/Paris",
            },
            "2020-10-25T19:10:00Z",
        ),
        (
            {
                "startDate": D("2021-01-30T23:30:00Z"),
                "unit": "month",
                "amount": 1,
                "timezone": "Europe/Paris",
            },
            "2021-02-27T23:30:00Z",
        ),
        ({"startDate": START, "unit": "week", "amount": 1}, "2021-01-07T12:10:05Z"),
        ({"startDate": START, "unit": "minute", "amount": 50}, "2020-12-31T13:00:05Z"),
        ({"startDate": START, "unit": "millisecond", "amount": 1050}, "2020-12-31T12:10:06.050Z"),
        ({"startDate": START, "unit": "month", "amount": 1}, "2021-01-31T12:10:05Z"),
        # the manual: the last day of the month is kept
        (
            {"startDate": D("2020-01-31T00:00:00Z"), "unit": "month", "amount": 1},
            "2020-02-29T00:00:00Z",
        ),
        (
            {"startDate": D("2020-02-29T00:00:00Z"), "unit": "year", "amount": 1},
            "2021-02-28T00:00:00Z",
        ),
        ({"startDate": Timestamp(0, 1), "unit": "second", "amount": 1}, "1970-01-01T00:00:01Z"),
        ({"startDate": START, "unit": "day", "amount": 2.0}, "2021-01-02T12:10:05Z"),
    ],
)
def test_date_add(arguments: dict[str, Any], expected: str) -> None:
    check({"$dateAdd": arguments}, {}, D(expected))


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"startDate": START, "unit": "year", "amount": 1}, "2019-12-31T12:10:05Z"),
        ({"startDate": START, "unit": "quarter", "amount": 2}, "2020-06-30T12:10:05Z"),
        (
            {"startDate": START, "unit": "month", "amount": 3, "timezone": "Europe/Paris"},
            "2020-09-30T11:10:05Z",
        ),
        ({"startDate": START, "unit": "day", "amount": 15}, "2020-12-16T12:10:05Z"),
        ({"startDate": START, "unit": "hour", "amount": 48}, "2020-12-29T12:10:05Z"),
        ({"startDate": START, "unit": "second", "amount": 125}, "2020-12-31T12:08:00Z"),
        (
            {"startDate": D("2021-01-31T03:00:00Z"), "unit": "month", "amount": 2},
            "2020-11-30T03:00:00Z",
        ),
        (
            {
                "startDate": D("2021-01-31T03:00:00Z"),
                "unit": "month",
                "amount": 2,
                "timezone": "America/New_York",
            },
            "2020-12-01T03:00:00Z",
        ),
    ],
)
def test_date_subtract(arguments: dict[str, Any], expected: str) -> None:
    check({"$dateSubtract": arguments}, {}, D(expected))


def test_date_add_nulls_and_errors() -> None:
    check({"$dateAdd": {"startDate": "$dateSent", "unit": "day", "amount": 1}}, {}, None)
    check({"$dateAdd": {"startDate": START, "unit": "$u", "amount": 1}}, {}, None)
    check({"$dateAdd": {"startDate": START, "unit": "day", "amount": None}}, {}, None)
    check(
        {"$dateAdd": {"startDate": START, "unit": "day", "amount": 1, "timezone": "$tz"}}, {}, None
    )
    # nulls come before the checks of the other arguments
    check({"$dateAdd": {"startDate": None, "unit": "epoch", "amount": 1.5}}, {}, None)
    check_error({"$dateAdd": {"unit": "second", "amount": 120}}, {}, 5166402, None)
    check_error({"$dateSubtract": {"startDate": START, "amount": 1}}, {}, 5166402, None)
    check_error({"$dateAdd": {"startDate": START, "units": "day", "amount": 1}}, {}, 5166401, None)
    check_error(
        {"$dateSubtract": {"startDate": "myBirthDate", "unit": "year", "amount": 10}},
        {},
        5166403,
        "$dateSubtract requires startDate to be convertible to a date",
    )
    check_error(
        {"$dateAdd": {"startDate": START, "unit": 1, "amount": 10}},
        {},
        5166404,
        "$dateAdd expects string defining the time unit",
    )
    check_error(
        {"$dateAdd": {"startDate": START, "unit": "epoch", "amount": 10}},
        {},
        9,
        "unknown time unit value: epoch",
    )
    check_error(
        {"$dateSubtract": {"startDate": START, "unit": "year", "amount": 1.001}},
        {},
        5166405,
        "$dateSubtract expects integer amount of time units",
    )
    check_error(
        {"$dateSubtract": {"startDate": START, "unit": "year", "amount": 1, "timezone": "Unknown"}},
        {},
        40485,
    )
    check_error({"$dateAdd": 1}, {}, 5166400, "$dateAdd expects an object as its argument")
    check_error(
        {"$dateAdd": {"startDate": START, "unit": "day", "amount": Int64(2**62)}}, {}, 5976500
    )
    check_error(
        {"$dateAdd": {"startDate": START, "unit": "millisecond", "amount": Int64(2**63 - 1)}},
        {},
        5166406,
    )


# -- $dateDiff ----

SOME_DATE = D("2020-11-01T18:23:36Z")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # jstests/aggregation/expressions/date_diff.js
        ({"startDate": SOME_DATE, "endDate": D("2020-11-02T00:00:00Z"), "unit": "hour"}, 6),
        (
            {
                "startDate": SOME_DATE,
                "endDate": D("2020-11-02T00:00:00Z"),
                "unit": "hour",
                "timezone": "America/New_York",
                "startOfWeek": "IGNORED",
            },
            6,
        ),
        (
            {
                "startDate": D("2021-01-24T18:23:36Z"),
                "endDate": D("2021-01-25T02:23:36Z"),
                "unit": "week",
                "timezone": "GMT",
                "startOfWeek": "MONDAY",
            },
            1,
        ),
        (
            {
                "startDate": D("2021-01-17T05:00:00Z"),
                "endDate": D("2021-01-17T04:59:00Z"),
                "unit": "week",
                "timezone": "America/New_York",
                "startOfWeek": "sunday",
            },
            -1,
        ),
        (
            {
                "startDate": D("2021-01-24T18:23:36Z"),
                "endDate": D("2021-01-25T02:23:36Z"),
                "unit": "week",
            },
            0,
        ),
        ({"startDate": Timestamp(5, 0), "endDate": Timestamp(5, 0), "unit": "millisecond"}, 0),
        # the manual: boundaries crossed, not elapsed whole units
        (
            {
                "startDate": D("2020-12-31T23:59:59Z"),
                "endDate": D("2021-01-01T00:00:00Z"),
                "unit": "year",
            },
            1,
        ),
        (
            {
                "startDate": D("2020-01-01T00:00:00Z"),
                "endDate": D("2021-12-31T00:00:00Z"),
                "unit": "quarter",
            },
            7,
        ),
        (
            {
                "startDate": D("2021-03-31T00:00:00Z"),
                "endDate": D("2021-02-01T00:00:00Z"),
                "unit": "month",
            },
            -1,
        ),
        (
            {
                "startDate": D("2020-01-01T00:00:00Z"),
                "endDate": D("2020-01-02T00:00:00Z"),
                "unit": "day",
            },
            1,
        ),
        (
            {
                "startDate": D("2020-01-01T00:00:59Z"),
                "endDate": D("2020-01-01T00:01:00Z"),
                "unit": "minute",
            },
            1,
        ),
        (
            {
                "startDate": D("2020-01-01T00:00:00.999Z"),
                "endDate": D("2020-01-01T00:00:01Z"),
                "unit": "second",
            },
            1,
        ),
        # a day in a zone with a change of offset
        (
            {
                "startDate": D("2020-03-07T12:00:00Z"),
                "endDate": D("2020-03-08T12:00:00Z"),
                "unit": "hour",
                "timezone": "America/New_York",
            },
            24,
        ),
        (
            {
                "startDate": D("2020-03-08T04:59:00Z"),
                "endDate": D("2020-03-08T05:00:00Z"),
                "unit": "day",
                "timezone": "America/New_York",
            },
            1,
        ),
    ],
)
def test_date_diff(arguments: dict[str, Any], expected: int) -> None:
    check({"$dateDiff": arguments}, {}, Int64(expected))


def test_date_diff_nulls_and_errors() -> None:
    pipeline = {
        "$dateDiff": {
            "startDate": "$startDate",
            "endDate": "$endDate",
            "unit": "$unit",
            "timezone": "$timeZone",
        }
    }
    with_week = {"$dateDiff": dict(pipeline["$dateDiff"], startOfWeek="$startOfWeek")}
    # a null or missing argument answers null before any other is checked
    for doc in (
        {"endDate": 1, "unit": "century", "timeZone": "INVALID"},
        {"startDate": "", "unit": "epoch", "timeZone": "INVALID"},
        {"startDate": 1, "endDate": 2, "timeZone": "INVALID"},
        {"startDate": 1, "endDate": 2, "unit": "century"},
        {"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": None, "timeZone": "UTC"},
    ):
        check(pipeline, doc, None)
    check(with_week, {"startDate": 1, "endDate": 2, "unit": "week", "timeZone": 1}, None)
    check(
        with_week,
        {
            "startDate": SOME_DATE,
            "endDate": SOME_DATE,
            "unit": "hour",
            "timeZone": "GMT",
            "startOfWeek": 1,
        },
        Int64(0),
    )
    for doc, code in (
        ({"startDate": "string", "endDate": SOME_DATE, "unit": "hour", "timeZone": "UTC"}, 5166307),
        ({"startDate": SOME_DATE, "endDate": 1, "unit": "hour", "timeZone": "UTC"}, 5166307),
        ({"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": 5, "timeZone": "UTC"}, 5439013),
        (
            {"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "decade", "timeZone": "UTC"},
            5439014,
        ),
        ({"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "hour", "timeZone": 1}, 40517),
        (
            {
                "startDate": SOME_DATE,
                "endDate": SOME_DATE,
                "unit": "hour",
                "timeZone": "America/Invalid",
            },
            40485,
        ),
    ):
        check_error(pipeline, doc, code)
    for start_of_week, code in ((1, 5439015), ("FRIDIE", 5439016)):
        check_error(
            with_week,
            {
                "startDate": SOME_DATE,
                "endDate": SOME_DATE,
                "unit": "week",
                "timeZone": "GMT",
                "startOfWeek": start_of_week,
            },
            code,
        )
    check_error(
        {"$dateDiff": {"startDate": SOME_DATE, "endDate": SOME_DATE, "unit": "decade"}},
        {},
        5439014,
        "$dateDiff parameter 'unit' value cannot be recognized as a time unit: decade",
    )
    check_error({"$dateDiff": {"startDate": 1, "unit": "day"}}, {}, 5166304, None)
    check_error({"$dateDiff": 1}, {}, 5166301, None)


# -- $dateTrunc ----


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # jstests/aggregation/expressions/date_trunc.js
        ({"date": SOME_DATE, "unit": "hour", "binSize": 2}, "2020-11-01T18:00:00Z"),
        (
            {
                "date": D("2021-12-01T18:23:36Z"),
                "unit": "hour",
                "binSize": 4,
                "timezone": "America/New_York",
                "startOfWeek": "IGNORED",
            },
            "2021-12-01T17:00:00Z",
        ),
        ({"date": D("2021-02-15T18:23:36Z"), "unit": "week"}, "2021-02-14T00:00:00Z"),
        (
            {
                "date": D("2000-01-30T18:00:00Z"),
                "unit": "week",
                "binSize": 2,
                "timezone": "America/New_York",
                "startOfWeek": "mon",
            },
            "2000-01-17T05:00:00Z",
        ),
        (
            {"date": ObjectId("507c7f79bcf86cd7994f6c0e"), "unit": "minute", "binSize": 10},
            "2012-10-15T21:20:00Z",
        ),
        (
            {"date": Timestamp(1350336377, 0), "unit": "second", "binSize": 10},
            "2012-10-15T21:26:10Z",
        ),
        (
            {"date": D("2020-01-30T18:59:00Z"), "unit": "minute", "binSize": D128("15")},
            "2020-01-30T18:45:00Z",
        ),
        (
            {"date": D("2020-01-30T18:59:00Z"), "unit": "day", "binSize": Int64(1)},
            "2020-01-30T00:00:00Z",
        ),
        (
            {"date": D("2020-01-30T18:59:00.003Z"), "unit": "millisecond", "binSize": 1000},
            "2020-01-30T18:59:00Z",
        ),
        (
            {
                "date": D("2020-01-30T18:59:00Z"),
                "unit": "year",
                "timezone": "GMT",
                "startOfWeek": 1,
            },
            "2020-01-01T00:00:00Z",
        ),
        # the manual's examples
        (
            {"date": D("2020-05-18T14:10:30Z"), "unit": "month", "binSize": 6},
            "2020-01-01T00:00:00Z",
        ),
        ({"date": D("2021-03-20T11:30:05Z"), "unit": "quarter"}, "2021-01-01T00:00:00Z"),
        ({"date": D("2021-03-20T11:30:05Z"), "unit": "year", "binSize": 5}, "2020-01-01T00:00:00Z"),
        ({"date": D("1999-03-20T11:30:05Z"), "unit": "year", "binSize": 5}, "1995-01-01T00:00:00Z"),
        (
            {"date": D("2021-03-20T11:30:05Z"), "unit": "day", "timezone": "Asia/Tokyo"},
            "2021-03-19T15:00:00Z",
        ),
    ],
)
def test_date_trunc(arguments: dict[str, Any], expected: str) -> None:
    check({"$dateTrunc": arguments}, {}, D(expected))


def test_date_trunc_nulls_and_errors() -> None:
    pipeline = {
        "$dateTrunc": {
            "date": "$date",
            "unit": "$unit",
            "binSize": "$binSize",
            "timezone": "$timeZone",
        }
    }
    with_week = {"$dateTrunc": dict(pipeline["$dateTrunc"], startOfWeek="$startOfWeek")}
    for doc in (
        {"unit": "H", "binSize": "string", "timeZone": 1},
        {"date": "Invalid", "binSize": "Invalid", "timeZone": "Invalid"},
        {"date": "Invalid", "unit": "invalid", "timeZone": "Invalid"},
        {"date": 1, "unit": "century", "binSize": "1"},
        {"date": SOME_DATE, "unit": "hour", "binSize": None, "timeZone": "UTC"},
    ):
        check(pipeline, doc, None)
    check(with_week, {"date": 1, "unit": "week", "binSize": "", "timeZone": 1}, None)
    for doc, code in (
        ({"date": "string", "unit": "hour", "binSize": 1, "timeZone": "UTC"}, 5439012),
        ({"date": SOME_DATE, "unit": 1, "binSize": 1, "timeZone": "UTC"}, 5439013),
        ({"date": SOME_DATE, "unit": "century", "binSize": 1, "timeZone": "UTC"}, 5439014),
        ({"date": SOME_DATE, "unit": "hour", "binSize": "Number", "timeZone": "UTC"}, 5439017),
        ({"date": SOME_DATE, "unit": "hour", "binSize": 0, "timeZone": "UTC"}, 5439018),
        ({"date": SOME_DATE, "unit": "hour", "binSize": 2.5, "timeZone": "UTC"}, 5439017),
        ({"date": SOME_DATE, "unit": "hour", "binSize": 1, "timeZone": 1}, 40517),
        ({"date": SOME_DATE, "unit": "hour", "binSize": 1, "timeZone": "America/Invalid"}, 40485),
    ):
        check_error(pipeline, doc, code)
    for start_of_week, code in ((1, 5439015), ("FRIDIE", 5439016)):
        check_error(
            with_week,
            {
                "date": SOME_DATE,
                "unit": "week",
                "binSize": 1,
                "timeZone": "GMT",
                "startOfWeek": start_of_week,
            },
            code,
        )
    check_error({"$dateTrunc": "A"}, {}, 5439007, None)
    check_error({"$dateTrunc": {"endDate": 1}}, {}, 5439008, None)
    check_error({"$dateTrunc": {"unit": "week"}}, {}, 5439009, None)
    check_error({"$dateTrunc": {"date": SOME_DATE}}, {}, 5439010, None)


# -- time zones ----


def test_time_zone_identifiers() -> None:
    for name in ("+05", "+0530", "+05:30", "-11", "UTC", "GMT", "Europe/Paris", "Etc/GMT+3"):
        parse_time_zone(name)
    for name in ("+5", "+05:3", "05:00", "Europe/Nowhere", "utc", "", "+24:00x"):
        with pytest.raises(Exception) as raised:
            parse_time_zone(name)
        assert getattr(raised.value, "code", None) == 40485
    assert evaluate({"$hour": {"date": D("2020-01-01T00:00:00Z"), "timezone": "Etc/GMT+3"}}) == 21


# -- properties ----


@settings(max_examples=200, deadline=None)
@given(st.dates(min_value=datetime.date(1, 1, 1), max_value=datetime.date(9999, 12, 31)))
def test_civil_days_match_python(day: datetime.date) -> None:
    days = (day - datetime.date(1970, 1, 1)).days
    assert days_from_civil(day.year, day.month, day.day) == days
    assert civil_from_days(days) == (day.year, day.month, day.day)
    assert iso_week(day.year, day.month, day.day) == tuple(day.isocalendar())[:2]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=-(10**12), max_value=10**13),
    st.sampled_from(["day", "week", "month", "quarter", "year", "hour", "minute", "second"]),
    st.integers(min_value=-500, max_value=500),
    st.sampled_from(["UTC", "America/New_York", "Europe/Paris", "+05:30", "Australia/Lord_Howe"]),
)
def test_date_diff_counts_what_date_add_added(
    start: int, unit: str, amount: int, name: str
) -> None:
    """Adding n units and diffing in the same unit gives back n, where the sum keeps the
    local time of day (calendar units, away from a month's end and from a change of offset)."""
    zone = parse_time_zone(name)
    end = date_add(start, unit, amount, zone)
    if unit in ("month", "quarter", "year") and zone.parts(start)[2] > 28:
        return  # the end of the month moves the day
    if zone.offset_at(start) != zone.offset_at(end) and unit in ("hour", "minute", "second"):
        return
    assert date_diff(start, end, unit, zone) == amount


def test_utc_is_the_default_zone() -> None:
    assert utc().is_utc
    assert parse_time_zone("+00:00").is_utc
