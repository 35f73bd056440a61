"""The simulator's CRUD, cursor and catalog commands: replies shaped like a 7.0 server's."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from bson import Int64, ObjectId

from mongocore.core.wire import MORE_TO_COME, encode_op_msg
from mongocore.io.counters import next_request_id
from mongocore.sim import ReplicaSet, ShardedCluster
from tests.unit.sim_wire import RawClient, connect

NAN = float("nan")


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(2, election_delay=0.02) as replica_set:
        yield replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[RawClient]:
    with connect(rs.members[0]) as raw:
        yield raw


def test_insert_reports_write_errors(client: RawClient) -> None:
    reply = client.command(
        "db", {"insert": "c"}, sequences={"documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}]}
    )
    assert reply["n"] == 1 and reply["ok"] == 1.0
    (error,) = reply["writeErrors"]
    assert error["index"] == 1 and error["code"] == 11000
    assert error["errmsg"].startswith("E11000 duplicate key error collection: db.c")
    unordered = client.command(
        "db", {"insert": "c", "documents": [{"_id": 1}, {"_id": 3}], "ordered": False}
    )
    assert unordered["n"] == 1 and [e["index"] for e in unordered["writeErrors"]] == [0]


def test_update_and_delete_replies(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": i, "v": 0} for i in range(3)]})
    reply = client.command(
        "db",
        {
            "update": "c",
            "updates": [
                {"q": {}, "u": {"$set": {"v": 1}}, "multi": True},
                {"q": {"_id": 9}, "u": {"$set": {"v": 9}}, "upsert": True},
                {"q": {"_id": 0}, "u": {"v": 1}},
            ],
        },
    )
    assert reply["n"] == 5 and reply["nModified"] == 3
    assert reply["upserted"] == [{"index": 1, "_id": 9}]
    deleted = client.command(
        "db",
        {"delete": "c", "deletes": [{"q": {"v": 1}, "limit": 1}, {"q": {"_id": 9}, "limit": 0}]},
    )
    assert deleted["n"] == 2
    assert client.command("db", {"count": "c"})["n"] == 2


def test_find_get_more_and_kill_cursors(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": i} for i in range(10)]})
    found = client.command("db", {"find": "c", "sort": {"_id": 1}, "batchSize": 3})
    cursor = found["cursor"]
    assert cursor["ns"] == "db.c" and cursor["firstBatch"] == [{"_id": i} for i in range(3)]
    assert isinstance(cursor["id"], Int64) and cursor["id"] > 0
    more = client.command("db", {"getMore": cursor["id"], "collection": "c", "batchSize": 4})
    assert more["cursor"]["nextBatch"] == [{"_id": i} for i in range(3, 7)]
    assert more["cursor"]["id"] == cursor["id"]
    killed = client.command("db", {"killCursors": "c", "cursors": [cursor["id"], Int64(42)]})
    assert killed["cursorsKilled"] == [cursor["id"]] and killed["cursorsNotFound"] == [42]
    gone = client.command("db", {"getMore": cursor["id"], "collection": "c"})
    assert gone["code"] == 43 and gone["codeName"] == "CursorNotFound"
    rest = client.command(
        "db", {"find": "c", "filter": {"_id": {"$gte": 5}}, "skip": 1, "limit": 2}
    )
    assert rest["cursor"]["firstBatch"] == [{"_id": 6}, {"_id": 7}] and rest["cursor"]["id"] == 0


def test_a_find_by_one_id_answers_as_a_scan_of_the_id_index(client: RawClient) -> None:
    """A filter on one ``_id`` value is looked up, not scanned: it must find what the
    same match written with ``$in`` (which scans every document) finds, for each plain
    ``_id`` type, numbers matching across their types, with projection, skip and
    limit applied. Broken variants caught: skip ignored by the lookup, and a number
    matching a stored boolean (Python's True == 1; BSON's never)."""
    oid = ObjectId()
    ids = [1, 2.5, "s", oid, Int64(7), {"a": 1}, datetime.datetime(2020, 1, 2, 3, 4, 5)]
    documents = [
        {"_id": value, "x": n, "sub": {"list": [n, {"n": n}]}} for n, value in enumerate(ids)
    ]
    client.command("db", {"insert": "c", "documents": documents})
    client.command("db", {"insert": "flags", "documents": [{"_id": True}, {"_id": 0.5}]})

    def batch(coll: str, filter: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
        reply = client.command("db", {"find": coll, "filter": filter, **options})
        return list(reply["cursor"]["firstBatch"])

    for value in [1, 1.0, Int64(1), 2.5, "s", "S", oid, 7, Int64(7), 99, {"a": 1}, ids[-1]]:
        scanned = batch("c", {"_id": {"$in": [value]}})
        assert batch("c", {"_id": value}) == scanned, value
        assert batch("c", {"_id": value}, projection={"sub": 0}) == [
            {key: v for key, v in doc.items() if key != "sub"} for doc in scanned
        ], value
        assert batch("c", {"_id": value}, skip=1) == [], value
        assert batch("c", {"_id": value}, limit=5) == scanned, value
    assert batch("flags", {"_id": 1}) == []  # a stored true is no number
    assert batch("flags", {"_id": True}) == [{"_id": True}]
    assert batch("flags", {"_id": 0.5}) == [{"_id": 0.5}]
    assert batch("missing", {"_id": 1}) == []
    # NaN: a server's NaN equals every NaN and orders below every number.
    client.command("db", {"insert": "nan", "documents": [{"_id": NAN, "x": NAN}, {"_id": 1}]})
    found = batch("nan", {"_id": NAN})
    assert (
        repr(found) == repr(batch("nan", {"_id": {"$in": [NAN]}})) == repr([{"_id": NAN, "x": NAN}])
    )
    assert batch("nan", {"x": {"$gt": NAN}}) == []
    assert batch("missing", {"_id": NAN}) == []
    stage = {"$match": {"_id": NAN}}
    matched = client.command("db", {"aggregate": "nan", "pipeline": [stage], "cursor": {}})
    assert len(matched["cursor"]["firstBatch"]) == 1
    empty = client.command("db", {"aggregate": "missing", "pipeline": [stage], "cursor": {}})
    assert empty["cursor"]["firstBatch"] == []
    names = client.command("db", {"listCollections": 1, "nameOnly": True})
    assert "missing" not in [c["name"] for c in names["cursor"]["firstBatch"]]


def test_exhaust_get_more_streams_the_rest(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": i} for i in range(5)]})
    cursor = client.command("db", {"find": "c", "batchSize": 1})["cursor"]
    client.exhaust("db", {"getMore": cursor["id"], "collection": "c", "batchSize": 2})
    batches = []
    while True:
        _, message = client.read()
        batches.append(message.body["cursor"]["nextBatch"])
        if not message.flag_bits & MORE_TO_COME:
            break
    assert batches == [[{"_id": 1}, {"_id": 2}], [{"_id": 3}, {"_id": 4}]]


def test_find_and_modify_replies(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": 1, "n": 0}]})
    updated = client.command(
        "db", {"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"n": 1}}}
    )
    assert updated["value"] == {"_id": 1, "n": 0}
    assert updated["lastErrorObject"] == {"n": 1, "updatedExisting": True}
    removed = client.command(
        "db", {"findAndModify": "c", "query": {"_id": 1}, "remove": True, "fields": {"n": 1}}
    )
    assert removed["value"] == {"_id": 1, "n": 1} and removed["lastErrorObject"] == {"n": 1}
    missing = client.command("db", {"findAndModify": "c", "query": {"_id": 1}, "remove": True})
    assert missing["value"] is None and missing["lastErrorObject"] == {"n": 0}


def test_catalog_commands(client: RawClient) -> None:
    assert client.command("db", {"create": "c"})["ok"] == 1.0
    exists = client.command("db", {"create": "c"})
    assert exists["code"] == 48 and exists["codeName"] == "NamespaceExists"
    made = client.command(
        "db", {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1", "unique": True}]}
    )
    assert made["numIndexesBefore"] == 1 and made["numIndexesAfter"] == 2
    indexes = client.command("db", {"listIndexes": "c", "cursor": {}})["cursor"]["firstBatch"]
    assert [i["name"] for i in indexes] == ["_id_", "a_1"] and indexes[1]["unique"] is True
    collections = client.command("db", {"listCollections": 1, "cursor": {}})["cursor"]
    assert collections["ns"] == "db.$cmd.listCollections"
    assert [c["name"] for c in collections["firstBatch"]] == ["c"]
    assert collections["firstBatch"][0]["type"] == "collection"
    databases = client.command("admin", {"listDatabases": 1})
    assert {"admin", "config", "local", "db"} <= {d["name"] for d in databases["databases"]}
    assert client.command("db", {"listDatabases": 1})["code"] == 13
    assert client.command("db", {"dropIndexes": "c", "index": "a_1"})["nIndexesWas"] == 2
    assert client.command("db", {"drop": "c"})["ns"] == "db.c"
    assert client.command("db", {"drop": "c"})["ok"] == 1.0  # since 7.0: no NamespaceNotFound
    assert client.command("db", {"listIndexes": "c", "cursor": {}})["code"] == 26
    assert client.command("db", {"dropDatabase": 1})["ok"] == 1.0


def test_aggregate_distinct_and_count(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"k": i % 3} for i in range(9)]})
    grouped = client.command(
        "db",
        {
            "aggregate": "c",
            "pipeline": [{"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
            "cursor": {},
        },
    )
    assert grouped["cursor"]["firstBatch"] == [{"_id": k, "n": 3} for k in range(3)]
    assert sorted(client.command("db", {"distinct": "c", "key": "k"})["values"]) == [0, 1, 2]
    assert client.command("db", {"count": "c", "query": {"k": 1}})["n"] == 3
    out = client.command(
        "db", {"aggregate": "c", "pipeline": [{"$match": {"k": 0}}, {"$out": "o"}], "cursor": {}}
    )
    assert out["cursor"]["firstBatch"] == []
    assert client.command("db", {"count": "o"})["n"] == 3


def test_group_and_bucket_put_id_first(client: RawClient) -> None:
    # A server's $group and $bucket documents: _id, then the accumulators as named.
    client.command("db", {"insert": "c", "documents": [{"k": i % 2, "n": i} for i in range(6)]})

    def keys(stage: dict[str, Any]) -> list[list[str]]:
        reply = client.command(
            "db", {"aggregate": "c", "pipeline": [stage, {"$sort": {"_id": 1}}], "cursor": {}}
        )
        return [list(doc) for doc in reply["cursor"]["firstBatch"]]

    group = {"$group": {"total": {"$sum": "$n"}, "_id": "$k", "count": {"$sum": 1}}}
    assert keys(group) == [["_id", "total", "count"]] * 2
    bucket = {
        "$bucket": {
            "groupBy": "$n",
            "boundaries": [0, 3, 10],
            "output": {"ns": {"$push": "$n"}, "count": {"$sum": 1}},
        }
    }
    assert keys(bucket) == [["_id", "ns", "count"]] * 2


def test_fire_and_forget_write(rs: ReplicaSet, client: RawClient) -> None:
    client.fire_and_forget("db", {"insert": "c", "documents": [{"_id": 1}]})
    assert client.command("db", {"count": "c"})["n"] == 1  # ordered on the connection
    with connect(rs.members[1]) as secondary:
        secondary.fire_and_forget("db", {"insert": "c", "documents": [{"_id": 2}]})
        assert secondary.closed_by_peer()  # "not primary" closes an unacknowledged write


def test_op_msg_needs_db(client: RawClient) -> None:
    client.sock.sendall(encode_op_msg({"ping": 1}, next_request_id()))
    _, message = client.read()
    assert message.body["code"] == 40571


def test_mongos_routes_reads_and_cursors() -> None:
    cluster = ShardedCluster(1, shard_members=2, election_delay=0.02)
    with cluster.start(), connect(cluster.members[0]) as client:
        client.command("db", {"insert": "c", "documents": [{"_id": i} for i in range(5)]})
        found = client.command("db", {"find": "c", "batchSize": 2})
        more = client.command("db", {"getMore": found["cursor"]["id"], "collection": "c"})
        assert len(more["cursor"]["nextBatch"]) == 3
        secondary = client.command("db", {"count": "c", "$readPreference": {"mode": "secondary"}})
        assert secondary["n"] == 5
        assert client.command("admin", {"replSetGetStatus": 1})["code"] == 59
        cluster.shard.step_down(30)
        # The write waits for the shard's next primary.
        assert client.command("db", {"insert": "c", "documents": [{"_id": 9}]})["n"] == 1


def test_get_parameter_answers_the_parameters_test_runners_ask_for(client: RawClient) -> None:
    reply = client.command(
        "admin",
        {
            "getParameter": 1,
            "enableTestCommands": 1,
            "requireApiVersion": 1,
            "acceptApiVersion2": 1,
        },
    )
    assert reply["enableTestCommands"] is True
    assert reply["requireApiVersion"] is False and reply["acceptApiVersion2"] is False
    mechanisms = client.command("admin", {"getParameter": 1, "authenticationMechanisms": 1})
    assert "SCRAM-SHA-256" in mechanisms["authenticationMechanisms"]
    assert client.command("admin", {"getParameter": 1, "noSuchParameter": 1})["code"] == 72


def test_create_takes_a_causally_consistent_read_concern(client: RawClient) -> None:
    """A causally consistent session's create carries readConcern.afterClusterTime."""
    ping = client.command("admin", {"ping": 1})
    reply = client.command(
        "db",
        {
            "create": "causal",
            "readConcern": {"afterClusterTime": ping["$clusterTime"]["clusterTime"]},
        },
    )
    assert reply["ok"] == 1.0, reply


def test_geo_and_text_indexes_check_documents_as_a_server_does(client: RawClient) -> None:
    created = client.command(
        "db",
        {
            "createIndexes": "places",
            "indexes": [
                {"key": {"loc": "2dsphere"}, "name": "loc_2dsphere"},
                {"key": {"about": "text"}, "name": "about_text"},
            ],
        },
    )
    assert created["ok"] == 1.0
    line = {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}
    stored = client.command(
        "db",
        {
            "insert": "places",
            "documents": [{"_id": 1, "loc": line}, {"_id": 2, "about": "x", "language": "en"}],
        },
    )
    assert stored["n"] == 2 and "writeErrors" not in stored
    refused = client.command(
        "db", {"insert": "places", "documents": [{"_id": 3, "loc": [500, 500]}]}
    )
    (error,) = refused["writeErrors"]
    assert error["code"] == 16755 and error["errmsg"].startswith("Can't extract geo keys")
    listed = client.command("db", {"listIndexes": "places"})["cursor"]["firstBatch"]
    text = next(doc for doc in listed if doc["name"] == "about_text")
    assert dict(text["key"]) == {"_fts": "text", "_ftsx": 1}
    assert text["weights"] == {"about": 1} and text["textIndexVersion"] == 3
    sphere = next(doc for doc in listed if doc["name"] == "loc_2dsphere")
    assert sphere["2dsphereIndexVersion"] == 3


def test_text_and_geo_queries_run_on_the_collections_indexes(client: RawClient) -> None:
    places = [
        {"_id": 1, "loc": {"type": "Point", "coordinates": [-73.97, 40.77]}, "about": "park"},
        {"_id": 2, "loc": {"type": "Point", "coordinates": [-73.9928, 40.7193]}, "about": "cafe"},
        {"_id": 3, "loc": {"type": "Point", "coordinates": [-73.9375, 40.8303]}, "about": "parks"},
    ]
    client.command("db", {"insert": "places", "documents": places})
    near = {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [-73.9667, 40.78]}}}}
    unindexed = client.command("db", {"find": "places", "filter": near})
    # NoQueryExecutionPlans: $near needs its index.
    assert (unindexed["code"], unindexed["codeName"]) == (291, "NoQueryExecutionPlans")
    no_text = client.command("db", {"find": "places", "filter": {"$text": {"$search": "park"}}})
    assert no_text["code"] == 27  # IndexNotFound: text index required for $text query
    client.command(
        "db",
        {
            "createIndexes": "places",
            "indexes": [
                {"key": {"loc": "2dsphere"}, "name": "loc_2dsphere"},
                {"key": {"about": "text"}, "name": "about_text"},
            ],
        },
    )

    def ids(flt: Any, **options: Any) -> list[Any]:
        reply = client.command("db", {"find": "places", "filter": flt, **options})
        return [doc["_id"] for doc in reply["cursor"]["firstBatch"]]

    assert ids(near) == [1, 3, 2]  # nearest first
    within = {"$geoWithin": {"$centerSphere": [[-73.93414657, 40.82302903], 5 / 3963.2]}}
    assert ids({"loc": within}) == [1, 3]
    # "parks" stems to "park": both match; the string that is the term itself scores 1.1.
    scored = client.command(
        "db",
        {
            "find": "places",
            "filter": {"$text": {"$search": "park"}},
            "projection": {"score": {"$meta": "textScore"}},
            "sort": {"score": {"$meta": "textScore"}},
        },
    )["cursor"]["firstBatch"]
    assert [(doc["_id"], doc["score"]) for doc in scored] == [(1, 1.1), (3, 1.0)]

    def aggregated(pipeline: list[Any]) -> list[Any]:
        reply = client.command("db", {"aggregate": "places", "pipeline": pipeline, "cursor": {}})
        return [doc["_id"] for doc in reply["cursor"]["firstBatch"]]

    # A pipeline parses with the collection's search: $text in its leading $match and
    # the $geoNear stage over the collection's 2dsphere index.
    text_match = {"$match": {"$text": {"$search": "park"}}}
    assert aggregated([text_match, {"$sort": {"_id": -1}}]) == [3, 1]
    geo_near = {
        "$geoNear": {
            "near": {"type": "Point", "coordinates": [-73.9667, 40.78]},
            "distanceField": "d",
            "query": {"about": {"$ne": "cafe"}},
        }
    }
    assert aggregated([geo_near]) == [1, 3]

    def refused(pipeline: list[Any]) -> Any:
        reply = client.command("db", {"aggregate": "places", "pipeline": pipeline, "cursor": {}})
        return reply["code"]

    assert refused([{"$match": near}]) == 5626500  # a pipeline's $match may not sort
    assert refused([{"$sort": {"_id": 1}}, text_match]) == 238  # $text only leads
    assert refused([text_match, {"$project": {"s": {"$meta": "textScore"}}}]) == 238
    assert refused([{"$sort": {"_id": 1}}, geo_near]) == 40602  # $geoNear only leads
    deleted = client.command("db", {"delete": "places", "deletes": [{"q": near, "limit": 1}]})
    assert deleted["n"] == 1 and ids({}) == [2, 3]
