"""Capped and time-series collections, mapReduce, hints and covered queries on the
simulator, through pymongo (an independent client), as a 7.0 replica set answers them:
the manual's examples and the server's errors."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("dukpy")

import bson
from bson import SON, Code, Int64
from pymongo import MongoClient
from pymongo.errors import OperationFailure, WriteError

from mongocore.sim import ReplicaSet
from tests.integration.sim_client import FAST

Client = MongoClient[dict[str, Any]]


@pytest.fixture(scope="module")
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(1, election_delay=0.05) as replica_set:
        yield replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    mongo: Client = MongoClient(rs.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.drop_database("kinds")
        mongo.drop_database("kinds_out")
        mongo.close()


def _error(call: Any) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        call()
    return info.value


# -- capped collections -----------------------------------------------------------------


def test_a_capped_collection_keeps_the_newest_documents(client: Client) -> None:
    log = client.kinds.create_collection("log", capped=True, size=5242880, max=3)
    for i in range(5):
        log.insert_one({"i": i})
    assert [d["i"] for d in log.find()] == [2, 3, 4]
    assert [d["i"] for d in log.find().sort("$natural", -1)] == [4, 3, 2]
    assert log.options() == {"capped": True, "size": 5242880, "max": 3}
    # A 7.0 server deletes from a capped collection, and updates may change a size.
    assert log.delete_one({"i": 3}).deleted_count == 1
    log.update_one({"i": 4}, {"$set": {"pad": "x" * 50}})
    assert [d["i"] for d in log.find()] == [2, 4]


def test_a_capped_collection_holds_its_size_in_bytes(client: Client) -> None:
    small = client.kinds.create_collection("small", capped=True, size=10000)
    assert small.options()["size"] == 10240  # raised to a multiple of 256
    for i in range(200):
        small.insert_one({"i": i, "pad": "x" * 100})
    docs = list(small.find())
    assert docs[-1]["i"] == 199
    assert sum(len(bson.encode(d)) for d in docs) <= 10240
    assert [d["i"] for d in docs] == list(range(docs[0]["i"], 200))


def test_what_a_capped_collection_refuses(client: Client) -> None:
    error = _error(lambda: client.kinds.command({"create": "c", "capped": True}))
    assert (error.code, error.details["errmsg"]) == (
        72,
        "the 'size' field is required when 'capped' is true",
    )
    log = client.kinds.create_collection("log", capped=True, size=4096)
    assert _error(lambda: log.create_index("when", expireAfterSeconds=60)).code == 67
    session = client.start_session()
    with session, pytest.raises(OperationFailure) as info, session.start_transaction():
        log.insert_one({"i": 1}, session=session)
    assert info.value.code == 263


def test_coll_mod_changes_a_capped_collections_bounds(client: Client) -> None:
    log = client.kinds.create_collection("log", capped=True, size=4096, max=10)
    client.kinds.command({"collMod": "log", "cappedMax": 2})
    for i in range(3):
        log.insert_one({"i": i})
    assert [d["i"] for d in log.find()] == [1, 2]
    assert log.options() == {"capped": True, "size": 4096, "max": 2}


# -- time-series collections ------------------------------------------------------------

WHEN = datetime.datetime(2021, 5, 18, 0, 0)


def _weather(client: Client) -> Any:
    return client.kinds.create_collection(
        "weather",
        timeseries={"timeField": "timestamp", "metaField": "metadata", "granularity": "hours"},
        expireAfterSeconds=86400,
    )


def test_a_time_series_collection_is_listed_as_one(client: Client) -> None:
    weather = _weather(client)
    (entry,) = [e for e in client.kinds.list_collections() if e["name"] == "weather"]
    assert entry == {
        "name": "weather",
        "type": "timeseries",
        "options": {
            "timeseries": {
                "timeField": "timestamp",
                "metaField": "metadata",
                "granularity": "hours",
                "bucketMaxSpanSeconds": 2592000,
            },
            "expireAfterSeconds": 86400,
        },
        "info": {"readOnly": False},
    }
    assert isinstance(entry["options"]["expireAfterSeconds"], Int64)
    # No _id index; the {metaField, timeField} index a server creates with it.
    assert [i["name"] for i in weather.list_indexes()] == ["metadata_1_timestamp_1"]


def test_measurements_are_inserted_and_queried(client: Client) -> None:
    weather = _weather(client)
    weather.insert_many(
        [
            {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": WHEN, "temp": 12},
            {
                "metadata": {"sensorId": 5578, "type": "temperature"},
                "timestamp": WHEN + datetime.timedelta(hours=4),
                "temp": 11,
            },
        ]
    )
    found = weather.find({"timestamp": {"$gte": WHEN + datetime.timedelta(hours=1)}})
    assert [d["temp"] for d in found] == [11]
    error = _error(lambda: weather.insert_one({"metadata": {}, "temp": 1}))
    assert isinstance(error, WriteError)
    assert error.code == 2
    assert "'timestamp' must be present and contain a valid BSON UTC datetime value" in str(error)


def test_what_a_time_series_collection_runs_and_refuses(client: Client) -> None:
    weather = _weather(client)
    weather.insert_one({"metadata": {"sensorId": 1}, "timestamp": WHEN, "temp": 3})
    # Updates of the metaField alone run; others a 7.0 server refuses.
    changed = weather.update_many({"metadata.sensorId": 1}, {"$set": {"metadata.type": "t"}})
    assert changed.modified_count == 1
    assert _error(lambda: weather.update_many({}, {"$set": {"temp": 4}})).code == 238
    # Deletes take any filter in 7.0.
    assert weather.delete_many({"temp": 3}).deleted_count == 1
    session = client.start_session()
    with session, pytest.raises(OperationFailure) as info, session.start_transaction():
        weather.insert_one({"timestamp": WHEN}, session=session)
    assert info.value.code == 263
    error = _error(
        lambda: client.kinds.create_collection(
            "bad", timeseries={"timeField": "t", "metaField": "t"}
        )
    )
    assert error.code == 72


def test_coll_mod_changes_a_time_series_expiry(client: Client) -> None:
    weather = _weather(client)
    client.kinds.command({"collMod": "weather", "expireAfterSeconds": 60})
    assert weather.options()["expireAfterSeconds"] == 60
    client.kinds.command({"collMod": "weather", "expireAfterSeconds": "off"})
    assert "expireAfterSeconds" not in weather.options()
    client.kinds.create_collection("plain")
    error = _error(lambda: client.kinds.command({"collMod": "plain", "expireAfterSeconds": 60}))
    assert error.code == 238


# -- mapReduce --------------------------------------------------------------------------

MAP = Code("function() { emit(this.cust_id, this.price); }")
REDUCE = Code("function(key, values) { return Array.sum(values); }")


def _orders(client: Client) -> Any:
    orders = client.kinds.orders
    orders.insert_many(
        [
            {"_id": 1, "cust_id": "Ant O. Knee", "price": 25, "status": "A"},
            {"_id": 2, "cust_id": "Ant O. Knee", "price": 70, "status": "A"},
            {"_id": 3, "cust_id": "Busby Bee", "price": 50, "status": "B"},
            {"_id": 4, "cust_id": "Busby Bee", "price": 25, "status": "A"},
        ]
    )
    return orders


def test_map_reduce_inline(client: Client) -> None:
    _orders(client)
    reply = client.kinds.command("mapReduce", "orders", map=MAP, reduce=REDUCE, out={"inline": 1})
    assert reply["results"] == [
        {"_id": "Ant O. Knee", "value": 95.0},
        {"_id": "Busby Bee", "value": 75.0},
    ]
    reply = client.kinds.command(
        "mapReduce",
        "orders",
        map=MAP,
        reduce=REDUCE,
        out={"inline": 1},
        query={"status": "A"},
        sort={"_id": -1},
        limit=2,
        finalize=Code("function(key, value) { return value * rate; }"),
        scope={"rate": 2},
    )
    assert reply["results"] == [
        {"_id": "Ant O. Knee", "value": 140},
        {"_id": "Busby Bee", "value": 50},
    ]


def test_map_reduce_output_actions(client: Client) -> None:
    _orders(client)
    db = client.kinds
    assert db.command("mapReduce", "orders", map=MAP, reduce=REDUCE, out="totals")["result"] == (
        "totals"
    )
    assert list(db.totals.find()) == [
        {"_id": "Ant O. Knee", "value": 95.0},
        {"_id": "Busby Bee", "value": 75.0},
    ]
    db.command("mapReduce", "orders", map=MAP, reduce=REDUCE, out=SON([("reduce", "totals")]))
    assert [d["value"] for d in db.totals.find()] == [190.0, 150.0]
    db.totals.insert_one({"_id": "Zed", "value": 1})
    db.command("mapReduce", "orders", map=MAP, reduce=REDUCE, out=SON([("merge", "totals")]))
    assert [d["value"] for d in db.totals.find()] == [95.0, 75.0, 1]
    db.command("mapReduce", "orders", map=MAP, reduce=REDUCE, out=SON([("replace", "totals")]))
    assert db.totals.count_documents({}) == 2
    reply = db.command(
        "mapReduce",
        "orders",
        map=MAP,
        reduce=REDUCE,
        out=SON([("merge", "t"), ("db", "kinds_out")]),
    )
    assert reply["result"] == {"db": "kinds_out", "collection": "t"}
    assert client.kinds_out.t.count_documents({}) == 2


def test_map_reduce_errors(client: Client) -> None:
    _orders(client)
    db = client.kinds
    error = _error(lambda: db.command("mapReduce", "orders", map=MAP, reduce=REDUCE, out={"x": 1}))
    assert (error.code, error.details["errmsg"]) == (
        2,
        "'out' requires 'replace', 'merge' or 'reduce'",
    )
    error = _error(lambda: db.command("mapReduce", "orders", map=MAP, reduce=REDUCE))
    assert error.code == 40414
    db.create_collection("recent", viewOn="orders", pipeline=[{"$match": {"status": "A"}}])
    error = _error(
        lambda: db.command("mapReduce", "recent", map=MAP, reduce=REDUCE, out={"inline": 1})
    )
    assert (error.code, error.details["errmsg"]) == (
        166,
        "Namespace kinds.recent is a view, not a collection",
    )
    error = _error(
        lambda: db.command(
            "mapReduce", "orders", map=Code("function() { throw 'no'; }"), reduce=REDUCE, out="t"
        )
    )
    assert error.code == 139
    session = client.start_session()
    with session, pytest.raises(OperationFailure) as info, session.start_transaction():
        db.command(
            "mapReduce", "orders", map=MAP, reduce=REDUCE, out={"inline": 1}, session=session
        )
    assert info.value.code == 263


# -- hints, the _id index, covered queries ----------------------------------------------


def test_a_hint_must_name_an_index(client: Client) -> None:
    items = client.kinds.items
    items.insert_one({"a": 1})
    items.create_index("a")
    assert items.count_documents({}, hint="a_1") == 1
    assert len(list(items.find().hint([("a", 1)]))) == 1
    assert len(list(items.find().hint([("$natural", 1)]))) == 1
    for call in (
        lambda: list(items.find().hint("b_1")),
        lambda: items.count_documents({}, hint=[("b", 1)]),
        lambda: list(items.aggregate([], hint="nope")),
    ):
        error = _error(call)
        assert error.code == 2
        assert "hint provided does not correspond to an existing index" in str(error)
    # A collection that does not exist plans EOF whatever the hint.
    assert list(client.kinds.missing.find().hint("b_1")) == []


def test_an_id_index_takes_no_options(client: Client) -> None:
    error = _error(lambda: client.kinds.people.create_index([("_id", 1)], unique=True))
    assert error.code == 197
    assert "The field 'unique' is not valid for an _id index specification" in str(error)


def test_explain_of_a_covered_query(client: Client) -> None:
    items = client.kinds.items
    items.insert_many([{"a": 1, "b": 2}, {"a": 2, "b": 3}])
    items.create_index("a")
    plan = items.find({"a": 1}, {"a": 1, "_id": 0}).explain()
    winning = plan["queryPlanner"]["winningPlan"]
    assert (winning["stage"], winning["inputStage"]["stage"]) == ("PROJECTION_COVERED", "IXSCAN")
    assert plan["executionStats"]["totalDocsExamined"] == 0
    # With _id, another field, or an array in the indexed field: FETCH.
    for projection in ({"a": 1}, {"a": 1, "b": 1, "_id": 0}):
        winning = items.find({"a": 1}, projection).explain()["queryPlanner"]["winningPlan"]
        assert winning["inputStage"]["stage"] == "FETCH"
    items.insert_one({"a": [1, 5]})
    winning = items.find({"a": 1}, {"a": 1, "_id": 0}).explain()["queryPlanner"]["winningPlan"]
    assert winning["inputStage"]["stage"] == "FETCH"
    assert winning["inputStage"]["inputStage"]["isMultiKey"] is True
