"""Capped and time-series collections' rules (sim/engine/capped.py, timeseries.py)
against the manual's examples and a 7.0 server's errors."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.engine import capped, timeseries

# -- capped ---------------------------------------------------------------------------


def test_capped_options_as_listed() -> None:
    # The manual's db.createCollection("log", {capped: true, size: 5242880, max: 5000}).
    options = capped.capped_options({"create": "log", "capped": True, "size": 5242880, "max": 5000})
    assert options is not None
    assert options.to_document() == {"capped": True, "size": 5242880, "max": 5000}
    # A size is raised to a multiple of 256, and to 4096 at least.
    raised = capped.capped_options({"capped": True, "size": 10000})
    assert raised == capped.CappedOptions(size=10240)
    assert capped.capped_options({"capped": True, "size": 100}) == capped.CappedOptions(4096)
    assert capped.capped_options({"capped": True, "size": 4096.0, "max": Int64(10)}) == (
        capped.CappedOptions(4096, 10)
    )
    # size and max without capped make an ordinary collection.
    assert capped.capped_options({"size": 100, "max": 3}) is None
    assert capped.capped_options({"capped": False, "size": 100}) is None


@pytest.mark.parametrize(
    ("cmd", "code"),
    [
        ({"capped": True}, 72),
        ({"capped": True, "size": "big"}, 14),
        ({"capped": True, "size": 100, "max": "many"}, 14),
        ({"capped": True, "size": float("inf")}, 2),
        ({"capped": True, "size": 2 * 1024**5}, 2),
    ],
)
def test_capped_option_errors(cmd: dict[str, Any], code: int) -> None:
    with pytest.raises(CommandError) as info:
        capped.capped_options(cmd)
    assert info.value.code == code


def test_overflow_removes_the_oldest_first() -> None:
    by_count = capped.CappedOptions(size=4096, max=3)
    assert capped.overflow([10, 10, 10], by_count) == 0
    assert capped.overflow([10, 10, 10, 10], by_count) == 1
    by_size = capped.CappedOptions(size=4096)
    assert capped.overflow([2000, 2000, 100], by_size) == 1
    assert capped.overflow([2000, 2000, 96], by_size) == 0
    # The newest document stays, even alone over the bound.
    assert capped.overflow([10, 5000], by_size) == 1
    assert capped.overflow([5000], by_size) == 0


def test_document_size_is_the_bson_length() -> None:
    assert capped.document_size({}) == 5
    assert capped.document_size({"a": 1}) == 12


def test_coll_mod_changes_the_bounds() -> None:
    options = capped.CappedOptions(size=4096, max=10)
    assert capped.modified_capped({"cappedMax": 5000}, options) == capped.CappedOptions(4096, 5000)
    assert capped.modified_capped({"cappedMax": 0}, options) == capped.CappedOptions(4096)
    assert capped.modified_capped({"cappedSize": 5000}, options).size == 5120
    with pytest.raises(CommandError) as info:
        capped.modified_capped({"cappedSize": 100}, None)
    assert info.value.code == 72


# -- time series ----------------------------------------------------------------------

WEATHER = {
    "create": "weather",
    "timeseries": {"timeField": "timestamp", "metaField": "metadata", "granularity": "hours"},
}


def test_timeseries_options_as_listed() -> None:
    options = timeseries.timeseries_options(WEATHER)
    assert options is not None
    assert options.to_document() == {
        "timeseries": {
            "timeField": "timestamp",
            "metaField": "metadata",
            "granularity": "hours",
            "bucketMaxSpanSeconds": 2592000,
        }
    }
    plain = timeseries.timeseries_options(
        {"timeseries": {"timeField": "t"}, "expireAfterSeconds": 3600}
    )
    assert plain is not None
    listed = plain.to_document()
    assert listed == {
        "timeseries": {"timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3600},
        "expireAfterSeconds": 3600,
    }
    assert isinstance(listed["expireAfterSeconds"], Int64)
    assert timeseries.timeseries_options({"create": "c"}) is None


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        ([], 14, "BSON field 'create.timeseries' is the wrong type 'array'"),
        ({}, 40414, "BSON field 'create.timeseries.timeField' is missing"),
        ({"timeField": "t", "x": 1}, 40415, "BSON field 'create.timeseries.x' is an unknown"),
        ({"timeField": 1}, 14, "BSON field 'create.timeseries.timeField' is the wrong type"),
        ({"timeField": "a.b"}, 72, "The 'timeField' field cannot contain embedded fields"),
        ({"timeField": "t", "metaField": "_id"}, 72, "The 'metaField' field cannot be \"_id\""),
        ({"timeField": "t", "metaField": "t"}, 72, "The 'metaField' field cannot be the same"),
        ({"timeField": "t", "granularity": "days"}, 2, "Enumeration value 'days'"),
        ({"timeField": "t", "bucketMaxSpanSeconds": 60}, 238, "bucketMaxSpanSeconds and"),
        (
            {"timeField": "t", "bucketMaxSpanSeconds": 60, "bucketRoundingSeconds": 30},
            238,
            "bucketMaxSpanSeconds and",
        ),
    ],
)
def test_timeseries_option_errors(spec: Any, code: int, message: str) -> None:
    with pytest.raises(CommandError) as info:
        timeseries.timeseries_options({"create": "c", "timeseries": spec})
    assert info.value.code == code
    assert info.value.errmsg.startswith(message)


def test_custom_bucketing() -> None:
    spec = {"timeField": "time", "bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600}
    options = timeseries.timeseries_options({"timeseries": spec})
    assert options is not None
    assert options.to_document() == {
        "timeseries": {
            "timeField": "time",
            "bucketRoundingSeconds": 3600,
            "bucketMaxSpanSeconds": 3600,
        }
    }


def test_coll_mod_changes_the_expiry() -> None:
    options = timeseries.TimeseriesOptions("t", expire_after_seconds=5)
    assert timeseries.modified_expiry(options, 60).expire_after_seconds == 60
    assert timeseries.modified_expiry(options, "off").expire_after_seconds is None
    with pytest.raises(CommandError) as info:
        timeseries.modified_expiry(options, -1)
    assert info.value.code == 2


def test_a_measurement_needs_a_date_in_the_time_field() -> None:
    options = timeseries.TimeseriesOptions(time_field="timestamp")
    timeseries.check_measurement(options, {"timestamp": datetime.datetime(2021, 5, 18)})
    for doc in ({}, {"timestamp": "2021-05-18"}, {"timestamp": 1}):
        with pytest.raises(CommandError) as info:
            timeseries.check_measurement(options, doc)
        assert (info.value.code, info.value.errmsg) == (
            2,
            "'timestamp' must be present and contain a valid BSON UTC datetime value",
        )


def test_the_index_a_server_creates() -> None:
    options = timeseries.timeseries_options(WEATHER)
    assert options is not None
    assert timeseries.default_index(options) == {
        "key": {"metadata": 1, "timestamp": 1},
        "name": "metadata_1_timestamp_1",
    }
    assert timeseries.default_index(timeseries.TimeseriesOptions("t")) is None


@pytest.mark.parametrize(
    ("statement", "allowed"),
    [
        (
            {"q": {"metadata.sensorId": 5}, "u": {"$set": {"metadata.type": "x"}}, "multi": True},
            True,
        ),
        ({"q": {}, "u": {"$unset": {"metadata": ""}}, "multi": True}, True),
        ({"q": {"metadata": 1}, "u": {"$set": {"metadata": 2}}}, False),  # one document
        ({"q": {"temp": 1}, "u": {"$set": {"metadata": 2}}, "multi": True}, False),
        ({"q": {}, "u": {"$set": {"temp": 2}}, "multi": True}, False),
        ({"q": {}, "u": {"metadata": 2}, "multi": True}, False),  # a replacement
        ({"q": {}, "u": {"$set": {"metadata": 2}}, "multi": True, "upsert": True}, False),
        (
            {
                "q": {"$or": [{"metadata": 1}, {"metadata": 2}]},
                "u": {"$inc": {"metadata.n": 1}},
                "multi": True,
            },
            True,
        ),
        ({"q": {"$expr": {}}, "u": {"$inc": {"metadata.n": 1}}, "multi": True}, False),
    ],
)
def test_only_metafield_updates_run(statement: dict[str, Any], allowed: bool) -> None:
    options = timeseries.timeseries_options(WEATHER)
    assert options is not None
    assert timeseries.update_allowed(options, statement) is allowed
