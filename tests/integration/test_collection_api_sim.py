"""Collection methods and cursors as pymongo users call them, against the simulator:
positional find arguments, cursor modifiers, indexing, clone and rewind, the index and
catalog helpers, and raw results shaped as pymongo gives them (compared with pymongo's
own, against the same deployment).

Spec: CRUD (find options, results), find/getMore/killCursors, index management.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional, cast

import pytest

pytest.importorskip("pyuca")

import pymongo

from mongocore.api.client import Client
from mongocore.api.collection import Collection
from mongocore.api.operations import DeleteMany, InsertOne, UpdateOne
from mongocore.core.events import CommandStartedEvent
from mongocore.errors import InvalidName
from mongocore.sim import ReplicaSet
from mongocore.write_concern import WriteConcern
from tests.integration.sim_client import Recorder, sim_client

#: Fields that differ between any two replies (cluster time, operation time).
_VOLATILE = ("$clusterTime", "operationTime", "electionId", "opTime")


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(rs: ReplicaSet, recorder: Recorder) -> Iterator[Client]:
    with sim_client(rs.uri, recorder) as mongo:
        yield mongo


@pytest.fixture
def coll(client: Client, request: pytest.FixtureRequest) -> Iterator[Collection]:
    collection = client["api"][request.node.name[:40]]
    collection.drop()
    collection.insert_many([{"_id": i, "group": i % 2} for i in range(6)])
    yield collection
    collection.drop()


def _sent(recorder: Recorder, name: str) -> dict[str, Any]:
    events = recorder.started_of(name)
    assert events, f"no {name} was sent"
    return dict(events[-1].command)


class Model:
    """A stand-in for IndexModel: anything with a ``document``."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = dict(document)


# --- find and cursors ------------------------------------------------------------------------


def test_find_takes_skip_and_limit_positionally(coll: Collection) -> None:
    found = coll.find({}, {"group": False}, 1, 2).sort("_id").to_list()
    assert found == [{"_id": 1}, {"_id": 2}]


def test_find_keyword_options_reach_the_command(coll: Collection, recorder: Recorder) -> None:
    coll.find(
        {}, return_key=True, show_record_id=True, allow_partial_results=True, min={"_id": 1}
    ).to_list()
    command = _sent(recorder, "find")
    assert command["returnKey"] and command["showRecordId"] and command["allowPartialResults"]
    assert command["min"] == {"_id": 1}


def test_cursor_modifiers_reach_the_find_command(coll: Collection, recorder: Recorder) -> None:
    cursor = (
        coll.find({"group": 0})
        .sort("_id")
        .hint([("_id", 1)])
        .max_time_ms(5000)
        .comment("report")
        .collation({"locale": "en"})
        .allow_disk_use(True)
        .batch_size(2)
    )
    assert [d["_id"] for d in cursor] == [0, 2, 4]
    command = _sent(recorder, "find")
    assert command["hint"] == {"_id": 1} and command["maxTimeMS"] == 5000
    assert command["comment"] == "report" and command["collation"] == {"locale": "en"}
    assert command["allowDiskUse"] is True and command["batchSize"] == 2


def test_indexing_slicing_and_cloning(coll: Collection) -> None:
    ordered = coll.find().sort("_id")
    assert ordered[2] == {"_id": 2, "group": 0}
    with pytest.raises(IndexError):
        _ = ordered[10]
    assert [d["_id"] for d in ordered.clone()[1:3]] == [1, 2]
    assert coll.find().sort("_id").skip(1)[2]["_id"] == 3
    assert list(coll.find()[2:2]) == []


def test_cursor_state_rewind_and_close(coll: Collection, recorder: Recorder) -> None:
    cursor = coll.find().sort("_id").batch_size(2)
    before = (cursor.alive, cursor.cursor_id, cursor.address)
    assert before == (True, 0, None)
    assert next(cursor)["_id"] == 0
    assert cursor.cursor_id != 0 and cursor.address is not None
    assert cursor.retrieved == 2 and cursor.collection == coll
    cursor.rewind()
    assert [d["_id"] for d in cursor] == [0, 1, 2, 3, 4, 5] and not cursor.alive
    assert len(recorder.started_of("killCursors")) == 1
    assert len(recorder.started_of("find")) == 2
    with coll.find().batch_size(2) as open_cursor:
        next(open_cursor)
    assert len(recorder.started_of("killCursors")) == 2


def test_cursor_distinct_uses_the_cursors_filter(coll: Collection, recorder: Recorder) -> None:
    assert sorted(coll.find({"_id": {"$lt": 3}}).comment("d").distinct("group")) == [0, 1]
    command = _sent(recorder, "distinct")
    assert command["query"] == {"_id": {"$lt": 3}} and command["comment"] == "d"


def test_explain_wraps_the_find_command(coll: Collection, recorder: Recorder) -> None:
    plan = coll.find({"group": 1}).sort("_id").limit(2).explain()
    assert plan["queryPlanner"]["namespace"] == coll.full_name
    inner = _sent(recorder, "explain")["explain"]
    assert inner == {"find": coll.name, "filter": {"group": 1}, "sort": {"_id": 1}, "limit": 2}


def test_find_one_takes_find_arguments(coll: Collection) -> None:
    assert coll.find_one({"group": 1}, {"_id": True}, 1, sort=[("_id", 1)]) == {"_id": 3}
    assert coll.find_one(4) == {"_id": 4, "group": 0}


# --- indexes and the catalog --------------------------------------------------------------


def test_create_indexes_drop_indexes_and_information(coll: Collection, recorder: Recorder) -> None:
    names = coll.create_indexes(
        [Model({"key": {"group": 1, "_id": -1}}), Model({"key": {"x": 1}, "name": "by_x"})],
        comment="build",
        maxTimeMS=10_000,
    )
    assert names == ["group_1__id_-1", "by_x"]
    command = _sent(recorder, "createIndexes")
    assert command["comment"] == "build" and command["maxTimeMS"] == 10_000
    assert coll.create_index([("y", -1)], name="by_y", sparse=True) == "by_y"
    assert coll.create_index("z", None, None, maxTimeMS=1000) == "z_1"
    assert "maxTimeMS" not in _sent(recorder, "createIndexes")["indexes"][0]
    info = coll.index_information()
    assert info["group_1__id_-1"]["key"] == [("group", 1), ("_id", -1)]
    assert set(info) == {"_id_", "group_1__id_-1", "by_x", "by_y", "z_1"}
    coll.drop_index([("z", 1)])
    coll.drop_index("by_y")
    coll.drop_indexes()
    assert list(coll.index_information()) == ["_id_"]
    assert _sent(recorder, "dropIndexes")["index"] == "*"
    with pytest.raises(TypeError):
        coll.create_indexes([{"key": {"a": 1}}])


def test_options_reads_list_collections(client: Client, recorder: Recorder) -> None:
    db = client["api"]
    db.drop_collection("plain")
    db["plain"].insert_one({})
    assert db["plain"].options() == {}
    assert _sent(recorder, "listCollections")["filter"] == {"name": "plain"}
    assert db["missing"].options() == {}
    db.drop_collection("plain")


def test_rename_runs_on_admin(coll: Collection, recorder: Recorder) -> None:
    with pytest.raises(InvalidName):
        coll.rename("bad$name")
    with pytest.raises(TypeError):
        coll.rename(cast(Any, 5))
    coll.insert_one({"_id": "moved"})
    coll.rename("renamed", dropTarget=True)
    assert coll.database["renamed"].find_one({"_id": "moved"}) == {"_id": "moved"}
    assert coll.name not in coll.database.list_collection_names()
    event: CommandStartedEvent = recorder.started_of("renameCollection")[-1]
    assert event.database_name == "admin"
    assert event.command["renameCollection"] == coll.full_name
    assert event.command["to"] == "api.renamed" and event.command["dropTarget"] is True


# --- raw results, as pymongo gives them -------------------------------------------------------


def _stable(raw: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    return None if raw is None else {k: v for k, v in raw.items() if k not in _VOLATILE}


def _writes(collection: Any, make_bulk: Any) -> list[Any]:
    collection.drop()
    collection.insert_many([{"_id": i} for i in range(3)])
    update = collection.update_one({"_id": 1}, {"$set": {"a": 1}})
    upsert = collection.update_one({"_id": 9}, {"$set": {"a": 1}}, upsert=True)
    missed = collection.update_many({"_id": 99}, {"$set": {"a": 1}})
    replaced = collection.replace_one({"_id": 2}, {"b": 1})
    deleted = collection.delete_many({"_id": {"$lt": 2}})
    bulk = collection.bulk_write(make_bulk())
    results = [update, upsert, missed, replaced, deleted]
    return [_stable(r.raw_result) for r in results] + [bulk.bulk_api_result, bulk.upserted_ids]


def test_raw_results_match_pymongos(rs: ReplicaSet, client: Client) -> None:
    ours = _writes(
        client["api"]["raw"],
        lambda: [
            InsertOne({"_id": 20}),
            UpdateOne({"_id": 21}, {"$set": {"a": 1}}, upsert=True),
            DeleteMany({"_id": 20}),
        ],
    )
    reference: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        rs.uri, serverSelectionTimeoutMS=20_000
    )
    try:
        theirs = _writes(
            reference["api"]["raw"],
            lambda: [
                pymongo.InsertOne({"_id": 20}),
                pymongo.UpdateOne({"_id": 21}, {"$set": {"a": 1}}, upsert=True),
                pymongo.DeleteMany({"_id": 20}),
            ],
        )
        reference["api"].drop_collection("raw")
    finally:
        reference.close()
    assert ours == theirs
    assert ours[0]["ok"] == 1.0 and ours[0]["updatedExisting"] is True


def test_unacknowledged_results_have_no_raw_result(coll: Collection) -> None:
    fire_and_forget = coll.with_options(write_concern=WriteConcern(w=0))
    assert fire_and_forget.update_one({"_id": 1}, {"$set": {"a": 1}}).raw_result is None
    assert fire_and_forget.delete_one({"_id": 1}).raw_result is None
    assert fire_and_forget.bulk_write([InsertOne({"_id": 50})]).bulk_api_result == {}
