"""Date expressions (MongoDB manual, "Date Expression Operators"; the server's
``TimeZone`` and ``TimeZoneDatabase`` over timelib): ``$year``, ``$month``,
``$dayOfMonth``, ``$hour``, ``$minute``, ``$second``, ``$millisecond``, ``$dayOfYear``,
``$dayOfWeek``, ``$week``, ``$isoWeek``, ``$isoWeekYear``, ``$isoDayOfWeek``,
``$dateToString``, ``$dateFromString``, ``$dateToParts``, ``$dateFromParts``,
``$dateAdd``, ``$dateSubtract``, ``$dateDiff`` and ``$dateTrunc``.

Time zones are what the server accepts: an Olson identifier of the IANA database
(Python's ``zoneinfo``; ``UTC`` is the plain UTC zone), or an offset ``+hh``,
``+hhmm`` or ``+hh:mm`` (``-`` as well); anything else is 40485. Calendar arithmetic
is proleptic Gregorian over any year; a named zone's offset at an instant comes from
``zoneinfo``, and a local time that a transition makes ambiguous or skips takes the
offset in force before it.

``$dateFromString`` with a ``format`` reads it as timelib's format parser does; without
one it reads what timelib's free-form parser reads of ISO 8601 (``2017-02-08``,
``2017-02-08T12:10:40.787``, a space for the ``T``, ``:ss`` or ``.ss``, fractions), a
time alone (incomplete, as the server says), and a zone after them (``Z``, ``+hh``,
``+hhmm``, ``+hh:mm``, ``GMT``/``UTC`` with or without an offset, the military letters,
the common abbreviations). A string with digits outside that grammar, which timelib may
still understand ("Feb 8, 2017"), is refused with NotImplemented (238) rather than
answered wrongly; one with no digit at all is the server's ConversionFailure.
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Callable, Optional

from bson import Int64, ObjectId, Timestamp

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    constant_value,
    fold,
    is_constant,
    operator,
    parse,
)
from mongocore.sim.engine.expressions.datetimes import coerce_to_date, from_millis, is_date
from mongocore.sim.engine.expressions.numbers import (
    INT64_MAX,
    INT64_MIN,
    as_long,
    is_integral64,
)
from mongocore.sim.engine.render import render_document, value_string
from mongocore.sim.engine.types import type_name

__all__ = ["TimeZone", "format_date", "parse_time_zone", "utc"]

_MS_PER_DAY = 86_400_000
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


# -- the civil calendar, for any year ----------------------------------------------------------


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian date of a day count since 1970-01-01."""
    days += 719468
    era = (days if days >= 0 else days - 146096) // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    year = year_of_era + era * 400
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return year + (month <= 2), month, day


def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def day_of_year(year: int, month: int, day: int) -> int:
    """1 to 366."""
    return days_from_civil(year, month, day) - days_from_civil(year, 1, 1) + 1


def iso_day_of_week(year: int, month: int, day: int) -> int:
    """1 (Monday) to 7 (Sunday)."""
    return (days_from_civil(year, month, day) + 3) % 7 + 1


def iso_week(year: int, month: int, day: int) -> tuple[int, int]:
    """The ISO 8601 week-numbering year and week of a date."""
    days = days_from_civil(year, month, day)
    thursday = days - (iso_day_of_week(year, month, day) - 1) + 3
    iso_year = civil_from_days(thursday)[0]
    first_thursday_week = (thursday - days_from_civil(iso_year, 1, 1)) // 7
    return iso_year, first_thursday_week + 1


def date_from_iso(iso_year: int, week: int, weekday: int) -> tuple[int, int, int]:
    """The calendar date of an ISO week date (timelib_date_from_isodate)."""
    january_4 = days_from_civil(iso_year, 1, 4)
    week_one_monday = january_4 - (iso_day_of_week(iso_year, 1, 4) - 1)
    return civil_from_days(week_one_monday + (week - 1) * 7 + (weekday - 1))


# -- time zones --------------------------------------------------------------------------------


class TimeZone:
    """A time zone a date expression computes in: UTC, a fixed offset or an Olson zone."""

    __slots__ = ("name", "offset", "zone")

    def __init__(
        self, name: Optional[str] = None, offset: int = 0, zone: Optional[zoneinfo.ZoneInfo] = None
    ) -> None:
        self.name = name
        self.offset = offset  # seconds, for a fixed-offset zone
        self.zone = zone

    @property
    def is_utc(self) -> bool:
        return self.zone is None and self.offset == 0

    def offset_at(self, milliseconds: int) -> int:
        """The offset from UTC, in seconds, at an instant."""
        if self.zone is None:
            return self.offset
        seconds = milliseconds // 1000
        # zoneinfo holds the years datetime does; outside, the nearest rule applies.
        seconds = max(min(seconds, 253402300799 - 86400), -62135596800 + 86400)
        instant = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
        local = instant.astimezone(self.zone)
        delta = local.utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    def local_offset(self, parts: tuple[int, int, int, int, int, int]) -> int:
        """The offset, in seconds, of a local wall time (the first of two, in a fold; the
        one before a gap)."""
        if self.zone is None:
            return self.offset
        year, month, day, hour, minute, second = parts
        year = max(1, min(year, 9999))
        wall = datetime.datetime(year, month, day, hour, minute, second, tzinfo=self.zone)
        delta = wall.utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    def parts(self, milliseconds: int) -> tuple[int, int, int, int, int, int, int]:
        """Local year, month, day, hour, minute, second and millisecond of an instant."""
        local = milliseconds + self.offset_at(milliseconds) * 1000
        days, remainder = divmod(local, _MS_PER_DAY)
        year, month, day = civil_from_days(days)
        hour, remainder = divmod(remainder, 3_600_000)
        minute, remainder = divmod(remainder, 60_000)
        second, millisecond = divmod(remainder, 1000)
        return year, month, day, hour, minute, second, millisecond

    def from_local(self, year: int, month: int, day: int, milliseconds_of_day: int) -> int:
        """The instant of a local date and time (milliseconds into the day, any sign)."""
        days = days_from_civil(year, month, day)
        local = days * _MS_PER_DAY + milliseconds_of_day
        if self.zone is None:
            return local - self.offset * 1000
        normal_days, of_day = divmod(local, _MS_PER_DAY)
        y, m, d = civil_from_days(normal_days)
        hh, rest = divmod(of_day, 3_600_000)
        mm, rest = divmod(rest, 60_000)
        ss = rest // 1000
        return local - self.local_offset((y, m, d, hh, mm, ss)) * 1000


_UTC = TimeZone()


def utc() -> TimeZone:
    return _UTC


_OFFSETS = (
    re.compile(r"^([+-])(\d\d)()$"),
    re.compile(r"^([+-])(\d\d)(\d\d)$"),
    re.compile(r"^([+-])(\d\d):(\d\d)$"),
)


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


@lru_cache(maxsize=1024)
def _zone(name: str) -> Optional[zoneinfo.ZoneInfo]:
    if name not in _zone_names():
        return None
    return zoneinfo.ZoneInfo(name)


def parse_time_zone(name: str) -> TimeZone:
    """A time zone identifier as ``TimeZoneDatabase::getTimeZone`` reads it: an Olson
    name, or a UTC offset ±hh, ±hhmm or ±hh:mm (40485 for anything else)."""
    if name == "UTC":
        return _UTC
    zone = _zone(name)
    if zone is not None:
        return TimeZone(name, 0, zone)
    for pattern in _OFFSETS:
        match = pattern.match(name)
        if match:
            sign = 1 if match.group(1) == "+" else -1
            offset = sign * (int(match.group(2)) * 3600 + int(match.group(3) or 0) * 60)
            return _UTC if offset == 0 else TimeZone(None, offset)
    raise CommandError(40485, f'unrecognized time zone identifier: "{name}"')


def _time_zone_of(value: Any) -> Optional[TimeZone]:
    # makeTimeZone: None for a null timezone.
    if nullish(value):
        return None
    if not (isinstance(value, str)):
        raise CommandError(40517, f"timezone must evaluate to a string, found {type_name(value)}")
    return parse_time_zone(value)


class _ZoneArgument:
    """A ``timezone`` argument: parsed once when constant, as the server does."""

    __slots__ = ("node", "parsed")

    def __init__(self, node: Optional[Node]) -> None:
        self.node = node
        self.parsed: Any = _UTC if node is None else None
        if node is not None and is_constant(node):
            self.parsed = _time_zone_of(constant_value(node))

    def __call__(self, frame: Frame) -> Optional[TimeZone]:
        if self.parsed is not None or self.node is None:
            return self.parsed  # type: ignore[no-any-return]
        return _time_zone_of(self.node(frame))

    def value(self, frame: Frame) -> Any:
        """The argument's value, unchecked: a TimeZone when it was constant, None for a
        null one (the zone is then null)."""
        if self.parsed is not None or self.node is None:
            return self.parsed
        value = self.node(frame)
        return None if nullish(value) else value

    def resolve(self, value: Any) -> TimeZone:
        if isinstance(value, TimeZone):
            return value
        zone = _time_zone_of(value)
        assert zone is not None
        return zone


# -- formatting --------------------------------------------------------------------------------

_TO_STRING_SPECIFIERS = frozenset("bBdGHjLmMSwuUVYzZ")
_FROM_STRING_SPECIFIERS = frozenset("bBdGHjLmMSuVYzZ")


def _validate_format(text: str, allowed: frozenset[str]) -> None:
    position = 0
    while position < len(text):
        if text[position] == "%":
            position += 1
            if position == len(text):
                raise CommandError(18535, "Unmatched '%' at end of format string")
            letter = text[position]
            if letter != "%" and letter not in allowed:
                raise CommandError(18536, f"Invalid format character '%{letter}' in format string")
        position += 1


def _padded(number: int, width: int) -> str:
    if number < 0 or number > 9999:
        raise CommandError(
            18537,
            "Could not convert date to string: date component was outside the supported range"
            f" of 0-9999: {number}",
        )
    return str(number).zfill(width)


def week_of_year(year: int, month: int, day: int) -> int:
    """%U and $week: weeks start on Sunday; days before the first Sunday are week 0."""
    weekday = (days_from_civil(year, month, day) + 4) % 7 + 1  # 1 = Sunday
    previous_sunday = day_of_year(year, month, day) - weekday
    return (previous_sunday + 7) // 7


@lru_cache(maxsize=256)
def _format_tokens(text: str) -> tuple[tuple[str, str], ...]:
    """A validated format as (literal text, specifier letter) pairs, parsed once."""
    tokens: list[tuple[str, str]] = []
    literal: list[str] = []
    position = 0
    while position < len(text):
        if text[position] == "%":
            tokens.append(("".join(literal), text[position + 1]))
            literal = []
            position += 2
        else:
            literal.append(text[position])
            position += 1
    if literal:
        tokens.append(("".join(literal), ""))
    return tuple(tokens)


def format_date(text: str, milliseconds: int, zone: TimeZone, parts: Any = None) -> str:
    """A date in a validated format (the server's ``outputDateWithFormat``); ``parts``,
    when given, are the date's local parts (:func:`local_parts`)."""
    year, month, day, hour, minute, second, millisecond = parts or zone.parts(milliseconds)
    out: list[str] = []
    for literal, letter in _format_tokens(text):
        if literal:
            out.append(literal)
        if not letter:
            continue
        if letter == "%":
            out.append("%")
        elif letter == "Y":
            out.append(_padded(year, 4))
        elif letter == "m":
            out.append(_padded(month, 2))
        elif letter == "d":
            out.append(_padded(day, 2))
        elif letter == "H":
            out.append(_padded(hour, 2))
        elif letter == "M":
            out.append(_padded(minute, 2))
        elif letter == "S":
            out.append(_padded(second, 2))
        elif letter == "L":
            out.append(_padded(millisecond, 3))
        elif letter == "j":
            out.append(_padded(day_of_year(year, month, day), 3))
        elif letter == "w":
            out.append(_padded((days_from_civil(year, month, day) + 4) % 7 + 1, 1))
        elif letter == "U":
            out.append(_padded(week_of_year(year, month, day), 2))
        elif letter == "G":
            out.append(_padded(iso_week(year, month, day)[0], 4))
        elif letter == "V":
            out.append(_padded(iso_week(year, month, day)[1], 2))
        elif letter == "u":
            out.append(_padded(iso_day_of_week(year, month, day), 1))
        elif letter == "b":
            out.append(_MONTHS[month - 1][:3])
        elif letter == "B":
            out.append(_MONTHS[month - 1])
        elif letter == "z":
            offset = zone.offset_at(milliseconds)
            minutes = abs(offset) // 60
            out.append(
                ("-" if offset < 0 else "+") + _padded(minutes // 60, 2) + _padded(minutes % 60, 2)
            )
        elif letter == "Z":
            out.append(str(int(zone.offset_at(milliseconds) / 60)))
    return "".join(out)


#: The format of a date with no format given (kISOFormatString).
ISO_FORMAT = "%Y-%m-%dT%H:%M:%S.%LZ"


# -- argument parsing helpers ------------------------------------------------------------------


def _object_arguments(  # noqa: PLR0917 (one call shape for every operator)
    name: str,
    value: Any,
    allowed: tuple[str, ...],
    scope: Scope,
    not_object: Callable[[], CommandError],
    unknown: Callable[[str], CommandError],
) -> dict[str, Node]:
    if not isinstance(value, Mapping):
        raise not_object()
    parts: dict[str, Node] = {}
    for field, item in value.items():
        if field not in allowed:
            raise unknown(str(field))
        parts[str(field)] = parse(item, scope)
    return parts


# -- $year and the other parts -----------------------------------------------------------------


_Parts = tuple[int, int, int, int, int, int, int]


def local_parts(date: Any, zone: TimeZone) -> _Parts:
    """Local year, month, day, hour, minute, second and millisecond of a date value (a
    naive datetime, BSON's own, is read directly in UTC)."""
    if type(date) is datetime.datetime and date.tzinfo is None and zone.is_utc:
        return (
            date.year,
            date.month,
            date.day,
            date.hour,
            date.minute,
            date.second,
            date.microsecond // 1000,
        )
    return zone.parts(coerce_to_date(date))


def _date_part(name: str, compute: Callable[[_Parts], Any]) -> None:
    def parse_date_part(value: Any, scope: Scope) -> Node:
        date_node: Node
        zone_node: Optional[Node] = None
        if isinstance(value, Mapping) and not (value and str(next(iter(value))).startswith("$")):
            found: dict[str, Node] = {}
            for field, item in value.items():
                if field not in ("date", "timezone"):
                    raise CommandError(40535, f'unrecognized option to {name}: "{field}"')
                found[str(field)] = parse(item, scope)
            if "date" not in found:
                raise CommandError(
                    40539,
                    f"missing 'date' argument to {name}, provided: {name}: "
                    + render_document(value),
                )
            date_node, zone_node = found["date"], found.get("timezone")
        else:
            if isinstance(value, list):
                if len(value) != 1:
                    raise CommandError(
                        40536,
                        f"{name} accepts exactly one argument if given an array, but was given"
                        f" {len(value)}",
                    )
                value = value[0]
            date_node = parse(value, scope)
        zone = _ZoneArgument(zone_node)

        def node(frame: Frame) -> Any:
            date = date_node(frame)
            if nullish(date):
                return None
            if type(date) is not datetime.datetime:
                coerce_to_date(date)  # 16006 before the time zone is looked at
            time_zone = zone(frame)
            if time_zone is None:
                return None
            return compute(local_parts(date, time_zone))

        return fold(node, [date_node, zone_node])

    operator(name)(parse_date_part)


_date_part("$year", lambda p: p[0])
_date_part("$month", lambda p: p[1])
_date_part("$dayOfMonth", lambda p: p[2])
_date_part("$hour", lambda p: p[3])
_date_part("$minute", lambda p: p[4])
_date_part("$second", lambda p: p[5])
_date_part("$millisecond", lambda p: p[6])
_date_part("$dayOfYear", lambda p: day_of_year(p[0], p[1], p[2]))
_date_part("$dayOfWeek", lambda p: (days_from_civil(p[0], p[1], p[2]) + 4) % 7 + 1)
_date_part("$week", lambda p: week_of_year(p[0], p[1], p[2]))
_date_part("$isoWeek", lambda p: iso_week(p[0], p[1], p[2])[1])
_date_part("$isoWeekYear", lambda p: Int64(iso_week(p[0], p[1], p[2])[0]))
_date_part("$isoDayOfWeek", lambda p: iso_day_of_week(p[0], p[1], p[2]))


# -- $dateToString -----------------------------------------------------------------------------


@operator("$dateToString")
def _parse_date_to_string(value: Any, scope: Scope) -> Node:
    parts = _object_arguments(
        "$dateToString",
        value,
        ("format", "date", "timezone", "onNull"),
        scope,
        lambda: CommandError(18629, "$dateToString only supports an object as its argument"),
        lambda field: CommandError(18534, f"Unrecognized argument to $dateToString: {field}"),
    )
    if "date" not in parts:
        raise CommandError(18628, "Missing 'date' parameter to $dateToString")
    date_node, format_node = parts["date"], parts.get("format")
    on_null = parts.get("onNull")
    zone = _ZoneArgument(parts.get("timezone"))

    def node(frame: Frame) -> Any:
        date = date_node(frame)
        text: Any = None
        if format_node is not None:
            text = format_node(frame)
            if not nullish(text):
                if not isinstance(text, str):
                    raise CommandError(
                        18533,
                        "$dateToString requires that 'format' be a string, found: "
                        f"{type_name(text)} with value {value_string(text)}",
                    )
                _validate_format(text, _TO_STRING_SPECIFIERS)
        time_zone = zone(frame)
        if nullish(date):
            return on_null(frame) if on_null is not None else None
        if time_zone is None:
            return None
        if format_node is not None and nullish(text):
            return None
        milliseconds = coerce_to_date(date)
        return format_date(
            text if format_node is not None else ISO_FORMAT,
            milliseconds,
            time_zone,
            local_parts(date, time_zone) if time_zone.is_utc else None,
        )

    return fold(node, [date_node, format_node, on_null, parts.get("timezone")])


# -- $dateToParts and $dateFromParts -----------------------------------------------------------


@operator("$dateToParts")
def _parse_date_to_parts(value: Any, scope: Scope) -> Node:
    parts = _object_arguments(
        "$dateToParts",
        value,
        ("date", "timezone", "iso8601"),
        scope,
        lambda: CommandError(40524, "$dateToParts only supports an object as its argument"),
        lambda field: CommandError(40520, f"Unrecognized argument to $dateToParts: {field}"),
    )
    if "date" not in parts:
        raise CommandError(40522, "Missing 'date' parameter to $dateToParts")
    date_node, iso_node = parts["date"], parts.get("iso8601")
    zone = _ZoneArgument(parts.get("timezone"))

    def node(frame: Frame) -> Any:
        date = date_node(frame)
        time_zone = zone(frame)
        if time_zone is None:
            return None
        iso = False
        if iso_node is not None:
            flag = iso_node(frame)
            if nullish(flag):
                return None
            if not isinstance(flag, bool):
                raise CommandError(
                    40521, f"iso8601 must evaluate to a bool, found {type_name(flag)}"
                )
            iso = flag
        if nullish(date):
            return None
        year, month, day, hour, minute, second, millisecond = time_zone.parts(coerce_to_date(date))
        if iso:
            iso_year, week = iso_week(year, month, day)
            return {
                "isoWeekYear": iso_year,
                "isoWeek": week,
                "isoDayOfWeek": iso_day_of_week(year, month, day),
                "hour": hour,
                "minute": minute,
                "second": second,
                "millisecond": millisecond,
            }
        return {
            "year": year,
            "month": month,
            "day": day,
            "hour": hour,
            "minute": minute,
            "second": second,
            "millisecond": millisecond,
        }

    return fold(node, [date_node, iso_node, parts.get("timezone")])


_FROM_PARTS = (
    "year",
    "month",
    "day",
    "hour",
    "minute",
    "second",
    "millisecond",
    "isoWeekYear",
    "isoWeek",
    "isoDayOfWeek",
    "timezone",
)


def _part_number(
    node: Optional[Node], name: str, default: int, frame: Frame, bounded: bool
) -> Optional[int]:
    # evaluateNumberWithDefault(AndBounds): None for a null part.
    if node is None:
        return default
    value = node(frame)
    if nullish(value):
        return None
    if not is_integral64(value):
        raise CommandError(
            40515,
            f"'{name}' must evaluate to an integer, found {type_name(value)} with value"
            f" {value_string(value)}",
        )
    number = as_long(value)
    if bounded and not -32768 <= number <= 32767:
        raise CommandError(
            31034,
            f"'{name}' must evaluate to a value in the range [-32768, 32767]; value {number} is"
            " not in range",
        )
    return number


@operator("$dateFromParts")
def _parse_date_from_parts(value: Any, scope: Scope) -> Node:
    parts = _object_arguments(
        "$dateFromParts",
        value,
        _FROM_PARTS,
        scope,
        lambda: CommandError(40519, "$dateFromParts only supports an object as its argument"),
        lambda field: CommandError(40518, f"Unrecognized argument to $dateFromParts: {field}"),
    )
    if "year" not in parts and "isoWeekYear" not in parts:
        raise CommandError(
            40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present"
        )
    if "year" in parts and any(p in parts for p in ("isoWeekYear", "isoWeek", "isoDayOfWeek")):
        raise CommandError(
            40489, "$dateFromParts does not allow mixing natural dates with ISO dates"
        )
    if "isoWeekYear" in parts and any(p in parts for p in ("year", "month", "day")):
        raise CommandError(
            40525, "$dateFromParts does not allow mixing ISO dates with natural dates"
        )
    zone = _ZoneArgument(parts.get("timezone"))
    get = parts.get

    def node(frame: Frame) -> Any:
        hour = _part_number(get("hour"), "hour", 0, frame, True)
        minute = _part_number(get("minute"), "minute", 0, frame, True) if hour is not None else None
        second = (
            _part_number(get("second"), "second", 0, frame, False) if minute is not None else None
        )
        millisecond = (
            _part_number(get("millisecond"), "millisecond", 0, frame, False)
            if second is not None
            else None
        )
        if hour is None or minute is None or second is None or millisecond is None:
            return None
        time_zone = zone(frame)
        if time_zone is None:
            return None
        of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millisecond
        if "year" in parts:
            year = _part_number(get("year"), "year", 1970, frame, False)
            month = (
                _part_number(get("month"), "month", 1, frame, True) if year is not None else None
            )
            day = _part_number(get("day"), "day", 1, frame, True) if month is not None else None
            if year is None or month is None or day is None:
                return None
            if not 1 <= year <= 9999:
                raise CommandError(
                    40523,
                    f"'year' must evaluate to an integer in the range 1 to 9999, found {year}",
                )
            # timelib normalizes months and days out of their range (month 13 is January).
            year_carry, month_index = divmod(month - 1, 12)
            year, month = year + year_carry, month_index + 1
            start = days_from_civil(year, month, 1) + day - 1
            y, m, d = civil_from_days(start)
            return from_millis(time_zone.from_local(y, m, d, of_day))
        iso_year = _part_number(get("isoWeekYear"), "isoWeekYear", 1970, frame, False)
        week = (
            _part_number(get("isoWeek"), "isoWeek", 1, frame, True)
            if iso_year is not None
            else None
        )
        weekday = (
            _part_number(get("isoDayOfWeek"), "isoDayOfWeek", 1, frame, True)
            if week is not None
            else None
        )
        if iso_year is None or week is None or weekday is None:
            return None
        if not 1 <= iso_year <= 9999:
            raise CommandError(
                31095,
                "'isoWeekYear' must evaluate to an integer in the range 1 to 9999, found"
                f" {iso_year}",
            )
        y, m, d = date_from_iso(iso_year, week, weekday)
        return from_millis(time_zone.from_local(y, m, d, of_day))

    return fold(node, list(parts.values()))


# -- $dateFromString ---------------------------------------------------------------------------


def _conversion_failure(message: str) -> CommandError:
    return CommandError(241, message)


class _Parsed:
    """What a date string gave: the fields timelib's parser sets."""

    __slots__ = (
        "day",
        "hour",
        "iso_week",
        "iso_weekday",
        "iso_year",
        "millisecond",
        "minute",
        "month",
        "offset",
        "second",
        "year",
        "year_day",
        "zone_abbreviation",
    )

    def __init__(self) -> None:
        self.year: Optional[int] = None
        self.month: Optional[int] = None
        self.day: Optional[int] = None
        self.hour: Optional[int] = None
        self.minute: Optional[int] = None
        self.second: Optional[int] = None
        self.millisecond = 0
        self.offset: Optional[int] = None  # seconds, a GMT offset in the string
        self.zone_abbreviation: Optional[str] = None  # "Z" and the like
        self.iso_year: Optional[int] = None
        self.iso_week: Optional[int] = None
        self.iso_weekday: Optional[int] = None
        self.year_day: Optional[int] = None


_ISO = re.compile(
    r"^\s*(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})"
    r"(?:[T ](?P<hour>\d{1,2}):(?P<minute>\d{2})"
    r"(?:[:.](?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?)?"
    r"\s*(?:(?P<offset>[+-]\d{2}(?::?\d{2})?)"
    r"|(?P<gmt>GMT|UTC)(?P<gmt_offset>[+-]\d{2}(?::?\d{2})?)?"
    r"|(?P<abbreviation>[A-Z]{1,5}))?\s*$",
    re.IGNORECASE,
)

#: The abbreviations of timelib's table the parser knows (seconds east of UTC), and the
#: military zones (A to I and K to M east, N to Y west, Z for UTC). An abbreviation
#: outside the list is refused with NotImplemented rather than guessed.
_ABBREVIATIONS = {
    "UTC": 0,
    "UT": 0,
    "GMT": 0,
    "WET": 0,
    "WEST": 3600,
    "BST": 3600,
    "CET": 3600,
    "CEST": 7200,
    "EET": 7200,
    "EEST": 10800,
    "MSK": 10800,
    "JST": 32400,
    "EST": -18000,
    "EDT": -14400,
    "CST": -21600,
    "CDT": -18000,
    "MST": -25200,
    "MDT": -21600,
    "PST": -28800,
    "PDT": -25200,
    "AKST": -32400,
    "AKDT": -28800,
    "HST": -36000,
    **{letter: (index + 1) * 3600 for index, letter in enumerate("ABCDEFGHI")},
    **{letter: (index + 10) * 3600 for index, letter in enumerate("KLM")},
    **{letter: -(index + 1) * 3600 for index, letter in enumerate("NOPQRSTUVWXY")},
    "Z": 0,
}


_TIME_ONLY = re.compile(r"^\s*\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\s*$")


def _parse_free(text: str) -> _Parsed:
    if _TIME_ONLY.match(text):
        parsed = _Parsed()
        parsed.hour = parsed.minute = parsed.second = 0  # a time, and no date
        return parsed
    match = _ISO.match(text)
    abbreviation = match.group("abbreviation") if match is not None else None
    if match is None or (abbreviation is not None and abbreviation.upper() not in _ABBREVIATIONS):
        if not any(char.isdigit() for char in text):
            # timelib takes a word for a time zone, which the server never makes available
            raise _conversion_failure(
                f"Error parsing date string '{text}'; 0: passing a time zone identifier as part"
                f" of the string is not allowed '{text[:1]}'"
            )
        raise CommandError(
            238,
            f"$dateFromString of '{text}' without a format is not implemented by the simulator"
            " (it reads ISO 8601 dates and times)",
        )
    parsed = _Parsed()
    parsed.year, parsed.month, parsed.day = (
        int(match.group("year")),
        int(match.group("month")),
        int(match.group("day")),
    )
    if match.group("hour") is not None:
        parsed.hour, parsed.minute = int(match.group("hour")), int(match.group("minute"))
        parsed.second = int(match.group("second") or 0)
        fraction = match.group("fraction")
        if fraction:
            parsed.millisecond = int((fraction + "000")[:3])
    offset = match.group("offset") or match.group("gmt_offset")
    if offset:
        parsed.offset = _offset_seconds(offset)
    elif match.group("gmt"):
        parsed.zone_abbreviation = match.group("gmt").upper()
        parsed.offset = None
    elif abbreviation is not None:
        parsed.zone_abbreviation = abbreviation.upper()
    return parsed


def _offset_seconds(text: str) -> int:
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:4] or 0)
    return sign * (hours * 3600 + minutes * 60)


_FIELD_WIDTHS = {
    "d": 2,
    "m": 2,
    "H": 2,
    "M": 2,
    "S": 2,
    "L": 3,
    "j": 3,
    "G": 4,
    "V": 2,
    "u": 1,
    "Y": 4,
}


def _parse_with_format(whole: str, fmt: str) -> _Parsed:
    # timelib reads both as C strings: each ends at its first NUL
    text, fmt = whole.split("\0", 1)[0], fmt.split("\0", 1)[0]
    parsed = _Parsed()
    position = 0
    index = 0

    def fail(message: str) -> CommandError:
        char = text[position] if position < len(text) else ""
        return _conversion_failure(
            f"Error parsing date string '{whole}'; {position}: {message} '{char}'"
        )

    messages = {
        "Y": "A four digit year could not be found",
        "G": "A four digit ISO year could not be found",
        "m": "A two digit month could not be found",
        "d": "A two digit day could not be found",
        "H": "A two digit hour could not be found",
        "M": "A two digit minute could not be found",
        "S": "A two digit second could not be found",
        "L": "A three digit millisecond could not be found",
        "j": "A three digit day-of-year could not be found",
        "V": "A two digit ISO week could not be found",
        "u": "An ISO day of week could not be found",
    }

    while index < len(fmt):
        char = fmt[index]
        if position >= len(text):
            raise fail("Data missing")  # the format goes on where the string has ended
        if char != "%":
            if text[position] != char:
                raise fail("Format literal not found")
            position += 1
            index += 1
            continue
        letter = fmt[index + 1]
        index += 2
        if letter == "%":
            if text[position] != "%":
                raise fail("Format literal not found")
            position += 1
            continue
        if letter in ("b", "B"):
            for number, month_name in enumerate(_MONTHS, 1):
                candidate = month_name if letter == "B" else month_name[:3]
                if text[position : position + len(candidate)].lower() == candidate.lower():
                    parsed.month = number
                    position += len(candidate)
                    break
            else:
                raise fail("A textual month could not be found")
            continue
        if letter in ("z", "Z"):
            match = re.compile(r"[+-]\d{1,4}(?::\d\d)?" if letter == "z" else r"[+-]?\d+").match(
                text, position
            )
            if match is None:
                raise fail("The timezone could not be found in the database")
            found = match.group(0)
            if letter == "Z":
                parsed.offset = int(found) * 60
            else:
                digits = found[1:].replace(":", "")
                sign = -1 if found[0] == "-" else 1
                if len(digits) <= 2:
                    parsed.offset = sign * int(digits) * 3600
                else:
                    parsed.offset = sign * (int(digits[:-2]) * 3600 + int(digits[-2:]) * 60)
            position = match.end()
            continue
        width = _FIELD_WIDTHS[letter]
        match = re.compile(rf"\d{{1,{width}}}").match(text, position)
        if match is None:
            raise fail(messages[letter])
        number = int(match.group(0))
        position = match.end()
        if letter == "Y":
            parsed.year = number
        elif letter == "m":
            parsed.month = number
        elif letter == "d":
            parsed.day = number
        elif letter == "H":
            parsed.hour = number
        elif letter == "M":
            parsed.minute = number
        elif letter == "S":
            parsed.second = number
        elif letter == "L":
            # the digits are a fraction of the second: ".81" is 810 milliseconds
            parsed.millisecond = int((match.group(0) + "00")[:3])
        elif letter == "j":
            parsed.year_day = number
        elif letter == "G":
            parsed.iso_year = number
        elif letter == "V":
            parsed.iso_week = number
        elif letter == "u":
            parsed.iso_weekday = number
    if position < len(text):
        raise fail("Trailing data")
    if (parsed.hour, parsed.minute, parsed.second) != (None, None, None):
        # timelib: a time with some of its parts has the others at 0
        parsed.hour, parsed.minute, parsed.second = (
            parsed.hour or 0,
            parsed.minute or 0,
            parsed.second or 0,
        )
    iso = (parsed.iso_year, parsed.iso_week, parsed.iso_weekday)
    if iso != (None, None, None):
        if (parsed.year, parsed.month, parsed.day, parsed.year_day) != (None, None, None, None):
            raise fail("Mixing of ISO dates with natural dates is not allowed")
        if parsed.iso_year is None:
            raise fail("The parsed date was invalid")
        parsed.year, parsed.month, parsed.day = date_from_iso(
            parsed.iso_year, parsed.iso_week or 1, parsed.iso_weekday or 1
        )
    if parsed.year_day is not None and parsed.year is not None:
        parsed.year, parsed.month, parsed.day = civil_from_days(
            days_from_civil(parsed.year, 1, 1) + parsed.year_day - 1
        )
    return parsed


def date_from_string(text: str, zone: TimeZone, fmt: Optional[str] = None) -> int:
    """``TimeZoneDatabase::fromString``: the instant a string names."""
    parsed = _parse_free(text) if fmt is None else _parse_with_format(text, fmt)
    # timelib's warnings, which the server turns into errors, come first
    year, month, day = parsed.year, parsed.month, parsed.day
    if (year, month, day) != (None, None, None) and not (
        year is not None
        and month is not None
        and day is not None
        and 1 <= month <= 12
        and 1 <= day <= days_in_month(year, month)
    ):
        raise _conversion_failure(
            f"Error parsing date string '{text}'; {len(text)}: The parsed date was invalid ''"
        )
    if parsed.hour is not None and (
        parsed.hour > 23 or (parsed.minute or 0) > 59 or (parsed.second or 0) > 59
    ):
        raise _conversion_failure(
            f"Error parsing date string '{text}'; {len(text)}: The parsed time was invalid ''"
        )
    if parsed.hour is None and parsed.minute is None and parsed.second is None:
        parsed.hour = parsed.minute = parsed.second = 0
        parsed.millisecond = 0
    if None in (parsed.year, parsed.month, parsed.day, parsed.hour, parsed.minute, parsed.second):
        raise _conversion_failure(
            f'an incomplete date/time string has been found, with elements missing: "{text}"'
        )
    if not zone.is_utc:
        if parsed.offset is not None:
            raise _conversion_failure(
                "you cannot pass in a date/time string with GMT offset together with a timezone"
                " argument"
            )
        if parsed.zone_abbreviation is not None:
            raise _conversion_failure(
                "you cannot pass in a date/time string with time zone information"
                f" ('{parsed.zone_abbreviation}') together with a timezone argument"
            )
    assert parsed.year is not None and parsed.month is not None and parsed.day is not None
    assert parsed.hour is not None and parsed.minute is not None and parsed.second is not None
    of_day = ((parsed.hour * 60 + parsed.minute) * 60 + parsed.second) * 1000 + parsed.millisecond
    y, m, d = parsed.year, parsed.month, parsed.day
    offset = parsed.offset
    if offset is None and parsed.zone_abbreviation is not None:
        offset = _ABBREVIATIONS[parsed.zone_abbreviation]
    if offset is not None:
        return days_from_civil(y, m, d) * _MS_PER_DAY + of_day - offset * 1000
    return zone.from_local(y, m, d, of_day)


@operator("$dateFromString")
def _parse_date_from_string(value: Any, scope: Scope) -> Node:
    parts = _object_arguments(
        "$dateFromString",
        value,
        ("format", "dateString", "timezone", "onNull", "onError"),
        scope,
        lambda: CommandError(
            40540,
            f"$dateFromString only supports an object as an argument, found: {type_name(value)}",
        ),
        lambda field: CommandError(40541, f"Unrecognized argument to $dateFromString: {field}"),
    )
    if "dateString" not in parts:
        raise CommandError(40542, "Missing 'dateString' parameter to $dateFromString")
    string_node, format_node = parts["dateString"], parts.get("format")
    on_null, on_error = parts.get("onNull"), parts.get("onError")
    zone = _ZoneArgument(parts.get("timezone"))

    def node(frame: Frame) -> Any:
        text = string_node(frame)
        fmt: Any = None
        if format_node is not None:
            fmt = format_node(frame)
            if not nullish(fmt):
                if not isinstance(fmt, str):
                    raise CommandError(
                        40684,
                        "$dateFromString requires that 'format' be a string, found: "
                        f"{type_name(fmt)} with value {value_string(fmt)}",
                    )
                _validate_format(fmt, _FROM_STRING_SPECIFIERS)
        time_zone = zone(frame)
        if nullish(text):
            return on_null(frame) if on_null is not None else None
        try:
            if not isinstance(text, str):
                raise _conversion_failure(
                    "$dateFromString requires that 'dateString' be a string, found: "
                    f"{type_name(text)} with value {value_string(text)}"
                )
            if time_zone is None:
                return None
            if format_node is not None:
                if nullish(fmt):
                    return None
                return from_millis(date_from_string(text, time_zone, fmt))
            return from_millis(date_from_string(text, time_zone))
        except CommandError as exc:
            if exc.code == 241 and on_error is not None:
                return on_error(frame)
            raise

    return fold(node, list(parts.values()))


# -- $dateAdd, $dateSubtract, $dateDiff, $dateTrunc --------------------------------------------

_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
_UNIT_MS = {
    "week": 7 * _MS_PER_DAY,
    "day": _MS_PER_DAY,
    "hour": 3_600_000,
    "minute": 60_000,
    "second": 1000,
    "millisecond": 1,
}
_DAYS = {
    "monday": 1,
    "mon": 1,
    "tuesday": 2,
    "tue": 2,
    "wednesday": 3,
    "wed": 3,
    "thursday": 4,
    "thu": 4,
    "friday": 5,
    "fri": 5,
    "saturday": 6,
    "sat": 6,
    "sunday": 7,
    "sun": 7,
}


def parse_unit(value: Any, name: str) -> str:
    """A ``unit`` argument of $dateDiff and $dateTrunc (the server's ``parseTimeUnit``)."""
    if not isinstance(value, str):
        raise CommandError(
            5439013, f"{name} requires 'unit' to be a string, but got {type_name(value)}"
        )
    if value not in _UNITS:
        raise CommandError(
            5439014,
            f"{name} parameter 'unit' value cannot be recognized as a time unit: {value}",
        )
    return value


def _arithmetic_unit(value: Any, name: str) -> str:
    # $dateAdd and $dateSubtract check their unit with codes of their own
    if not isinstance(value, str):
        raise CommandError(5166404, f"{name} expects string defining the time unit")
    if value not in _UNITS:
        raise CommandError(9, f"unknown time unit value: {value}")
    return value


def parse_day_of_week(value: Any, name: str, parameter: str) -> int:
    if not isinstance(value, str):
        raise CommandError(
            5439015, f"{name} requires '{parameter}' to be a string, but got {type_name(value)}"
        )
    day = _DAYS.get(value.lower())
    if day is None:
        raise CommandError(
            5439016,
            f"{name} parameter '{parameter}' value cannot be recognized as a day of a week:"
            f" {value}",
        )
    return day


def _cdiv(a: int, b: int) -> int:
    # C++'s integer division, which truncates toward zero.
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def _add_months(year: int, month: int, amount: int) -> tuple[int, int]:
    carry, index = divmod(month - 1 + amount, 12)
    return year + carry, index + 1


_MAX_DAYS = (2**64 - 1) // _MS_PER_DAY + 1
_MAX_AMOUNT = {
    "year": _MAX_DAYS // 365 + 1,
    "quarter": (_MAX_DAYS // 365 + 1) * 4,
    "month": (_MAX_DAYS // 365 + 1) * 12,
    "week": _MAX_DAYS // 7,
    "day": _MAX_DAYS,
    "hour": _MAX_DAYS * 24,
    "minute": _MAX_DAYS * 24 * 60,
    "second": _MAX_DAYS * 24 * 60 * 60,
}


def date_add(milliseconds: int, unit: str, amount: int, zone: TimeZone) -> int:
    """The server's ``dateAdd``: calendar units in local time (the last day of a month
    kept), hours and smaller in UTC under a named zone."""
    if unit == "millisecond":
        return _checked_date(milliseconds + amount)
    limit = _MAX_AMOUNT[unit]
    if not -limit < amount < limit:
        raise CommandError(5976500, f"invalid dateAdd 'amount' parameter value: {amount} {unit}")
    offset = zone.offset_at(milliseconds)
    year, month, day, hour, minute, second, millisecond = zone.parts(milliseconds)
    of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millisecond
    days_to_add: Optional[int] = None
    if unit in ("year", "quarter", "month") and (day > 28 or offset != 0):
        months = amount * {"year": 12, "quarter": 3, "month": 1}[unit]
        target_year, target_month = _add_months(year, month, months)
        target_day = min(day, days_in_month(target_year, target_month))
        days_to_add = days_from_civil(target_year, target_month, target_day) - days_from_civil(
            year, month, day
        )
    if days_to_add is not None or unit in ("day", "week"):
        days = days_to_add if days_to_add is not None else amount * (7 if unit == "week" else 1)
        y, m, d = civil_from_days(days_from_civil(year, month, day) + days)
        return _checked_date(zone.from_local(y, m, d, of_day))
    if unit in ("year", "quarter", "month"):
        months = amount * {"year": 12, "quarter": 3, "month": 1}[unit]
        y, m = _add_months(year, month, months)
        return _checked_date(zone.from_local(y, m, day, of_day))
    # Hours and smaller: the same instant-based sum in every zone (a named zone's is done
    # in UTC so that a transition does not move it).
    return _checked_date(milliseconds + _UNIT_MS[unit] * amount)


def _checked_date(milliseconds: int) -> int:
    if not INT64_MIN <= milliseconds <= INT64_MAX:
        raise CommandError(5166406, "dateAdd overflowed")
    return milliseconds


def _date_arithmetic(name: str, sign: int) -> None:
    def parse_date_arithmetic(value: Any, scope: Scope) -> Node:
        parts = _object_arguments(
            name,
            value,
            ("startDate", "unit", "amount", "timezone"),
            scope,
            lambda: CommandError(5166400, f"{name} expects an object as its argument"),
            lambda field: CommandError(
                5166401,
                f"Unrecognized argument to {name}: {field}. Expected arguments are startDate,"
                " unit, amount, and optionally timezone.",
            ),
        )
        if not all(p in parts for p in ("startDate", "unit", "amount")):
            raise CommandError(
                5166402, f"{name} requires startDate, unit, and amount to be present"
            )
        start_node, unit_node, amount_node = parts["startDate"], parts["unit"], parts["amount"]
        zone = _ZoneArgument(parts.get("timezone"))

        def node(frame: Frame) -> Any:
            # ExpressionDateArithmetics::evaluate: each null answers null, in this order,
            # before any argument is checked
            start = start_node(frame)
            if nullish(start):
                return None
            unit_value = unit_node(frame)
            if nullish(unit_value):
                return None
            amount = amount_node(frame)
            if nullish(amount):
                return None
            time_zone = zone(frame)
            if time_zone is None:
                return None
            if not (is_date(start) or isinstance(start, Timestamp) or _is_object_id(start)):
                raise CommandError(
                    5166403, f"{name} requires startDate to be convertible to a date"
                )
            unit = _arithmetic_unit(unit_value, name)
            if not is_integral64(amount):
                raise CommandError(5166405, f"{name} expects integer amount of time units")
            count = as_long(amount)
            if sign < 0:
                if count == INT64_MIN:
                    raise CommandError(
                        6045000, f"invalid $dateSubtract 'amount' parameter value: {count}"
                    )
                count = -count
            return from_millis(date_add(coerce_to_date(start), unit, count, time_zone))

        return fold(node, list(parts.values()))

    operator(name)(parse_date_arithmetic)


def _is_object_id(value: Any) -> bool:
    return isinstance(value, ObjectId)


_date_arithmetic("$dateAdd", 1)
_date_arithmetic("$dateSubtract", -1)


def _convert_date(value: Any, name: str, parameter: str, code: int = 5166307) -> int:
    if not (is_date(value) or isinstance(value, Timestamp) or _is_object_id(value)):
        raise CommandError(
            code, f"{name} requires '{parameter}' to be a date, but got {type_name(value)}"
        )
    return coerce_to_date(value)


def _local_days(milliseconds: int, zone: TimeZone) -> tuple[int, tuple[int, ...], int]:
    parts = zone.parts(milliseconds)
    return days_from_civil(*parts[:3]), parts, zone.offset_at(milliseconds)


def date_diff(start: int, end: int, unit: str, zone: TimeZone, start_of_week: int = 7) -> int:
    """The number of ``unit`` boundaries between two instants in ``zone``."""
    if unit == "millisecond":
        difference = end - start
        if not INT64_MIN <= difference <= INT64_MAX:
            raise CommandError(5166308, "dateDiff overflowed")
        return difference
    start_days, start_parts, start_offset = _local_days(start, zone)
    end_days, end_parts, end_offset = _local_days(end, zone)
    if unit == "year":
        return end_parts[0] - start_parts[0]
    if unit == "quarter":
        return (
            (end_parts[1] - 1) // 3
            - (start_parts[1] - 1) // 3
            + (end_parts[0] - start_parts[0]) * 4
        )
    if unit == "month":
        return end_parts[1] - start_parts[1] + (end_parts[0] - start_parts[0]) * 12
    days = end_days - start_days
    if unit == "day":
        return days
    if unit == "week":
        start_weekday = (iso_day_of_week(*start_parts[:3]) - start_of_week + 7) % 7
        end_weekday = (iso_day_of_week(*end_parts[:3]) - start_of_week + 7) % 7
        return _cdiv(days + start_weekday - end_weekday, 7)
    hours = end_parts[3] - start_parts[3] + days * 24
    if unit == "hour":
        return hours + _cdiv(start_offset - end_offset, 3600)
    minutes = end_parts[4] - start_parts[4] + hours * 60
    if unit == "minute":
        return minutes + _cdiv(start_offset - end_offset, 60)
    return end_parts[5] - start_parts[5] + minutes * 60 + (start_offset - end_offset)


def _week_start_argument(parts: dict[str, Node], name: str) -> Optional[int]:
    node = parts.get("startOfWeek")
    if node is not None and is_constant(node) and not nullish(constant_value(node)):
        return parse_day_of_week(constant_value(node), name, "startOfWeek")
    return None


@operator("$dateDiff")
def _parse_date_diff(value: Any, scope: Scope) -> Node:
    name = "$dateDiff"
    parts = _object_arguments(
        name,
        value,
        ("startDate", "endDate", "unit", "timezone", "startOfWeek"),
        scope,
        lambda: CommandError(5166301, "$dateDiff only supports an object as its argument"),
        lambda field: CommandError(5166302, f"Unrecognized argument to $dateDiff: {field}"),
    )
    for field, code in (("startDate", 5166303), ("endDate", 5166304), ("unit", 5166305)):
        if field not in parts:
            raise CommandError(code, f"Missing '{field}' parameter to $dateDiff")
    start_node, end_node, unit_node = parts["startDate"], parts["endDate"], parts["unit"]
    week_node = parts.get("startOfWeek")
    parsed_unit = (
        parse_unit(constant_value(unit_node), name)
        if is_constant(unit_node) and not nullish(constant_value(unit_node))
        else None
    )
    parsed_week = _week_start_argument(parts, name) if parsed_unit in (None, "week") else None
    zone = _ZoneArgument(parts.get("timezone"))

    def node(frame: Frame) -> Any:
        # every null answers null before any argument is checked (the unit's is known when
        # startOfWeek matters)
        start = start_node(frame)
        end = end_node(frame)
        unit_value = unit_node(frame) if parsed_unit is None else parsed_unit
        if nullish(start) or nullish(end) or nullish(unit_value):
            return None
        time_zone_value = zone.value(frame)
        if time_zone_value is None:
            return None
        unit = parsed_unit if parsed_unit is not None else parse_unit(unit_value, name)
        week_start = 7
        if unit == "week":
            if parsed_week is not None:
                week_start = parsed_week
            elif week_node is not None:
                week_value = week_node(frame)
                if nullish(week_value):
                    return None
                week_start = parse_day_of_week(week_value, name, "startOfWeek")
        time_zone = zone.resolve(time_zone_value)
        begin = _convert_date(start, name, "startDate")
        finish = _convert_date(end, name, "endDate")
        return Int64(date_diff(begin, finish, unit, time_zone, week_start))

    return fold(node, list(parts.values()))


_REFERENCE_MS = 946_684_800_000  # 2000-01-01T00:00:00Z, a Saturday


def date_trunc(
    milliseconds: int, unit: str, bin_size: int, zone: TimeZone, start_of_week: int = 7
) -> int:
    """The server's ``truncateDate``: the start of the ``bin_size``-unit bin of the date,
    bins counted from 2000-01-01 in the zone (a week's from the first ``start_of_week``
    on or after it)."""
    reference = _REFERENCE_MS - zone.offset_at(_REFERENCE_MS) * 1000
    reference_day = 1
    if unit == "week":
        reference_weekday = (6 - start_of_week + 7) % 7
        adjust = (7 - reference_weekday) % 7
        reference += adjust * _MS_PER_DAY
        reference_day += adjust
    if unit in ("millisecond", "second", "minute", "hour"):
        size = bin_size * _UNIT_MS[unit]
        if size > INT64_MAX:
            raise CommandError(5439002, "dateTrunc overflowed")
        shifted = milliseconds - reference
        if not INT64_MIN <= shifted <= INT64_MAX:
            raise CommandError(5439000, "dateTrunc overflowed")
        return milliseconds - shifted % size
    if bin_size > 100_000_000_000:
        raise CommandError(5439006, "dateTrunc unsupported binSize value")
    year, month, day = zone.parts(milliseconds)[:3]
    reference_days = days_from_civil(2000, 1, reference_day)
    if unit == "day":
        distance = days_from_civil(year, month, day) - reference_days
    elif unit == "week":
        days = days_from_civil(year, month, day) - reference_days
        start_weekday = (iso_day_of_week(2000, 1, reference_day) - start_of_week + 7) % 7
        end_weekday = (iso_day_of_week(year, month, day) - start_of_week + 7) % 7
        distance = _cdiv(days + start_weekday - end_weekday, 7)
    elif unit == "month":
        distance = month - 1 + (year - 2000) * 12
    elif unit == "quarter":
        distance = (month - 1) // 3 + (year - 2000) * 4
    else:
        distance = year - 2000
    lower = distance - distance % bin_size
    return date_add(reference, unit, lower, zone)


@operator("$dateTrunc")
def _parse_date_trunc(value: Any, scope: Scope) -> Node:
    name = "$dateTrunc"
    parts = _object_arguments(
        name,
        value,
        ("date", "unit", "binSize", "timezone", "startOfWeek"),
        scope,
        lambda: CommandError(5439007, "$dateTrunc only supports an object as its argument"),
        lambda field: CommandError(
            5439008,
            f"Unrecognized argument to $dateTrunc: {field}. Expected arguments are date, unit,"
            " and optionally, binSize, timezone, startOfWeek",
        ),
    )
    if "date" not in parts:
        raise CommandError(5439009, "Missing 'date' parameter to $dateTrunc")
    if "unit" not in parts:
        raise CommandError(5439010, "Missing 'unit' parameter to $dateTrunc")
    date_node, unit_node = parts["date"], parts["unit"]
    size_node, week_node = parts.get("binSize"), parts.get("startOfWeek")
    parsed_unit = (
        parse_unit(constant_value(unit_node), name)
        if is_constant(unit_node) and not nullish(constant_value(unit_node))
        else None
    )
    parsed_week = _week_start_argument(parts, name) if parsed_unit in (None, "week") else None
    parsed_size = (
        _bin_size(constant_value(size_node))
        if size_node is not None
        and is_constant(size_node)
        and not nullish(constant_value(size_node))
        else None
    )
    zone = _ZoneArgument(parts.get("timezone"))

    def node(frame: Frame) -> Any:
        # every null answers null before any argument is checked (the unit's is known when
        # startOfWeek matters)
        date = date_node(frame)
        unit_value = unit_node(frame) if parsed_unit is None else parsed_unit
        size_value: Any = 1 if size_node is None else size_node(frame)
        if nullish(date) or nullish(unit_value) or nullish(size_value):
            return None
        time_zone_value = zone.value(frame)
        if time_zone_value is None:
            return None
        unit = parsed_unit if parsed_unit is not None else parse_unit(unit_value, name)
        week_start = 7
        if unit == "week":
            if parsed_week is not None:
                week_start = parsed_week
            elif week_node is not None:
                week_value = week_node(frame)
                if nullish(week_value):
                    return None
                week_start = parse_day_of_week(week_value, name, "startOfWeek")
        bin_size = parsed_size if parsed_size is not None else _bin_size(size_value)
        time_zone = zone.resolve(time_zone_value)
        instant = _convert_date(date, name, "date", 5439012)
        return from_millis(date_trunc(instant, unit, bin_size, time_zone, week_start))

    return fold(node, list(parts.values()))


def _bin_size(value: Any) -> int:
    if not is_integral64(value):
        raise CommandError(
            5439017,
            f"$dateTrunc requires 'binSize' to be a 64-bit integer, but got value"
            f" '{value_string(value)}' of type {type_name(value)}",
        )
    size = as_long(value)
    if size <= 0:
        raise CommandError(
            5439018, f"$dateTrunc requires 'binSize' to be greater than 0, but got value {size}"
        )
    return size
