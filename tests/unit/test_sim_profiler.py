"""The simulated mongod's profiler (sim/profiler.py): the ``profile`` command as
``db.getProfilingStatus()`` and ``db.setProfilingLevel()`` use it, and
``<db>.system.profile`` in a 7.0 server's document shape (MongoDB manual, "Database
Profiler Output"), as MongoEngine's ``query_counter`` reads it."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from tests.unit.sim_wire import RawClient, connect


@pytest.fixture
def client() -> Iterator[RawClient]:
    with Standalone() as standalone, connect(standalone.member) as raw:
        yield raw


def _profile(client: RawClient, db: str = "db") -> list[dict[str, Any]]:
    reply = client.command(db, {"find": "system.profile", "filter": {}, "batchSize": 1000})
    assert reply["ok"] == 1.0, reply
    docs: list[dict[str, Any]] = reply["cursor"]["firstBatch"]
    return docs


def test_the_profiling_status(client: RawClient) -> None:
    status = client.command("db", {"profile": -1})
    assert status == {"was": 0, "slowms": 100, "sampleRate": 1.0, "ok": 1.0}
    assert client.command("db", {"profile": 2, "slowms": 50})["was"] == 0
    assert client.command("db", {"profile": -1}) == {
        "was": 2,
        "slowms": 50,
        "sampleRate": 1.0,
        "ok": 1.0,
    }
    # Levels are per database; slowms and sampleRate are the server's.
    assert client.command("other", {"profile": -1})["was"] == 0
    assert client.command("other", {"profile": -1})["slowms"] == 50
    assert client.command("db", {"profile": 0, "slowms": 100})["was"] == 2
    refused = client.command("db", {"profile": 3})
    assert (refused["ok"], refused["code"]) == (0.0, 2)
    bad_rate = client.command("db", {"profile": 1, "sampleRate": 2})
    assert bad_rate["code"] == 2
    assert client.command("db", {"profile": -1})["was"] == 0  # the refused change did nothing


def test_a_filter_is_reported_and_unset(client: RawClient) -> None:
    client.command("db", {"profile": 1, "filter": {"op": "query"}})
    status = client.command("db", {"profile": -1})
    assert status["filter"] == {"op": "query"} and "note" in status
    client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
    client.command("db", {"find": "c", "filter": {}})
    assert [doc["op"] for doc in _profile(client)] == ["query"]
    # The read of system.profile is recorded too, once it ran.
    assert [doc["op"] for doc in _profile(client)] == ["query", "query"]
    client.command("db", {"profile": 0, "filter": "unset"})
    assert "filter" not in client.command("db", {"profile": -1})


def test_level_two_records_every_operation_in_the_servers_shape(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": 0}]})
    assert client.command("db", {"profile": 2})["was"] == 0
    client.command("db", {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})
    client.command("db", {"find": "c", "filter": {"_id": {"$gte": 1}}, "comment": "mine"})
    client.command(
        "db",
        {
            "update": "c",
            "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}}],
        },
    )
    client.command("db", {"delete": "c", "deletes": [{"q": {"_id": 2}, "limit": 1}]})
    client.command("db", {"count": "c"})
    client.command("admin", {"ping": 1})  # another database: not this one's profile
    docs = _profile(client)
    assert [doc["op"] for doc in docs] == ["insert", "query", "update", "remove", "command"]
    insert, find, update, remove, count = docs
    assert insert["ns"] == "db.c" and insert["ninserted"] == 2
    assert insert["command"]["insert"] == "c" and insert["command"]["$db"] == "db"
    assert find["command"]["comment"] == "mine" and find["nreturned"] == 2
    assert find["cursorExhausted"] is True
    assert update["command"] == {"q": {"_id": 1}, "u": {"$set": {"a": 1}}}
    assert (update["nMatched"], update["nModified"], update["nUpserted"]) == (1, 1, 0)
    assert remove["ndeleted"] == 1 and remove["command"] == {"q": {"_id": 2}, "limit": 1}
    assert count["command"]["count"] == "c"
    # A statement with the command's comment, its hint by name as {$hint: name}.
    client.command(
        "db",
        {
            "delete": "c",
            "deletes": [{"q": {}, "limit": 0, "hint": "_id_"}],
            "comment": "why",
        },
    )
    (statement,) = [d for d in _profile(client) if d["op"] == "remove"][1:]
    assert statement["command"] == {
        "q": {},
        "limit": 0,
        "hint": {"$hint": "_id_"},
        "comment": "why",
    }
    for doc in docs:
        assert "_id" not in doc
        assert isinstance(doc["millis"], int) and isinstance(doc["ts"], datetime.datetime)
        assert doc["client"] == "127.0.0.1" and doc["user"] == "" and doc["allUsers"] == []
        assert doc["protocol"] == "op_msg" and "responseLength" in doc


def test_what_query_counter_reads(client: RawClient) -> None:
    """MongoEngine's query_counter: profile 0 (its "was"), drop system.profile, profile
    2, run the queries, then count system.profile documents that are no killCursors."""
    was = client.command("db", {"profile": 0})["was"]
    assert client.command("db", {"drop": "system.profile"})["ok"] == 1.0
    client.command("db", {"profile": 2})
    client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
    client.command("db", {"find": "c", "filter": {}})
    ignored = {
        "ns": {"$ne": "db.system.indexes"},
        "op": {"$ne": "killcursors"},
        "command.killCursors": {"$exists": False},
    }
    pipeline = [{"$match": ignored}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]
    counted = client.command(
        "db", {"aggregate": "system.profile", "pipeline": pipeline, "cursor": {}}
    )
    assert counted["cursor"]["firstBatch"] == [{"_id": 1, "n": 2}]
    # The count itself is profiled: query_counter allows for it.
    assert len(_profile(client)) == 3
    names = client.command("db", {"listCollections": 1, "nameOnly": True})["cursor"]
    assert {"name": "system.profile", "type": "collection"} in names["firstBatch"]
    refused = client.command("db", {"drop": "system.profile"})
    assert (refused["ok"], refused["code"]) == (0.0, 20)  # not while it profiles
    client.command("db", {"profile": was})
    assert client.command("db", {"drop": "system.profile"})["ok"] == 1.0
    assert _profile(client) == []


def test_errors_are_recorded_with_the_servers_fields(client: RawClient) -> None:
    client.command("db", {"profile": 2})
    failed = client.command("db", {"find": "c", "filter": {"$bad": 1}})
    assert failed["ok"] == 0.0
    (doc,) = [d for d in _profile(client) if d["op"] == "query"]
    assert doc["ok"] == 0.0
    assert (doc["errCode"], doc["errName"], doc["errMsg"]) == (
        failed["code"],
        failed["codeName"],
        failed["errmsg"],
    )


def test_each_member_has_its_own_profiler() -> None:
    with ReplicaSet(2, election_delay=0.02) as rs:
        primary = rs.wait_for_primary()
        secondary = next(m for m in rs.members if m is not primary)
        with connect(primary) as raw:
            raw.command("db", {"profile": 2})
            raw.command("db", {"insert": "c", "documents": [{"_id": 1}]})
            assert [d["op"] for d in _profile(raw)] == ["insert"]
        with connect(secondary) as raw:
            assert raw.command("db", {"profile": -1})["was"] == 0


def test_a_mongos_refuses_to_profile() -> None:
    cluster = ShardedCluster(1, shard_members=1, election_delay=0.02)
    with cluster, connect(cluster.mongoses[0]) as raw:
        refused = raw.command("db", {"profile": 2})
        assert (refused["code"], refused["codeName"]) == (238, "NotImplemented")
