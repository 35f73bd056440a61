"""The CRUD API end to end against the simulated deployment: round trips, result shapes,
bulk writes and their batches, cursors with getMore and killCursors, enumeration.

Spec: CRUD (operations, results, ordered and unordered bulk writes), find/getMore/
killCursors (limit, batchSize, singleBatch), the enumeration commands; batches are
cut by the server's maxWriteBatchSize and maxMessageSizeBytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca")

from mongocore.api.client import Client
from mongocore.api.collection import Collection
from mongocore.api.collection_writes import ReturnDocument
from mongocore.api.cursor import Cursor
from mongocore.api.database import Database
from mongocore.api.operations import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from mongocore.api.results import BulkWriteResult
from mongocore.core.events import CommandStartedEvent
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import (
    BulkWriteError,
    DocumentTooLarge,
    InvalidName,
    InvalidOperation,
    OperationFailure,
    WriteError,
)
from mongocore.read_concern import ReadConcern
from mongocore.sim import ReplicaSet
from mongocore.write_concern import WriteConcern
from tests.integration.sim_client import Recorder, sim_client


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(rs: ReplicaSet, recorder: Recorder) -> Iterator[Client]:
    with sim_client(rs.uri, recorder, retryWrites=True) as mongo:
        yield mongo


@pytest.fixture
def coll(client: Client) -> Collection:
    return client["crud"]["items"]


# --- objects ------------------------------------------------------------------------------


def test_databases_and_collections_are_views(client: Client) -> None:
    db = client["crud"]
    assert isinstance(db, Database) and db.name == "crud" and db.client is client
    coll = db["items"]
    assert coll.full_name == "crud.items" and coll.database == db
    assert coll == client.get_database("crud").get_collection("items")
    assert repr(coll) == f"Collection({db!r}, 'items')"
    secondary = coll.with_options(read_preference=ReadPreference(Mode.SECONDARY))
    assert secondary.read_preference.mode is Mode.SECONDARY
    assert coll.read_preference.mode is Mode.PRIMARY
    with pytest.raises(InvalidName):
        client["bad.name"]
    with pytest.raises(InvalidName):
        db["$bad"]


# --- single-document writes -----------------------------------------------------------------


def test_insert_one_generates_an_id_and_find_one_reads_it_back(coll: Collection) -> None:
    document: dict[str, Any] = {"name": "a"}
    result = coll.insert_one(document)
    assert result.acknowledged and document["_id"] == result.inserted_id
    assert coll.find_one(result.inserted_id) == {"_id": result.inserted_id, "name": "a"}
    assert coll.find_one({"name": "missing"}) is None
    assert coll.insert_one({"_id": 7}).inserted_id == 7


def test_insert_one_sends_the_id_first(coll: Collection, recorder: Recorder) -> None:
    """The document travels inside the command, where bson keeps a document's own
    order: the _id of a document that has one elsewhere is moved first, as the server
    stores it (broken variant caught: a plain copy of the document)."""
    document = {"name": "b", "_id": 8}
    coll.insert_one(document)
    (started,) = recorder.started_of("insert")
    assert [list(d) for d in started.command["documents"]] == [["_id", "name"]]
    assert list(document) == ["name", "_id"]  # the caller's document is left as it was


def test_a_duplicate_key_is_a_write_error(coll: Collection) -> None:
    coll.insert_one({"_id": 1})
    with pytest.raises(WriteError) as info:
        coll.insert_one({"_id": 1})
    assert info.value.code == 11000


def test_updates_and_replacements(coll: Collection) -> None:
    coll.insert_many([{"_id": i, "group": i % 2, "n": 0} for i in range(4)])
    one = coll.update_one({"group": 0}, {"$inc": {"n": 1}})
    assert (one.matched_count, one.modified_count, one.upserted_id) == (1, 1, None)
    many = coll.update_many({"group": 1}, {"$set": {"n": 5}})
    assert (many.matched_count, many.modified_count) == (2, 2)
    upsert = coll.update_one({"_id": 10}, {"$set": {"n": 1}}, upsert=True)
    assert upsert.upserted_id == 10 and upsert.matched_count == 0 and upsert.did_upsert
    replaced = coll.replace_one({"_id": 0}, {"group": 9})
    assert replaced.matched_count == 1
    assert coll.find_one({"_id": 0}) == {"_id": 0, "group": 9}
    none = coll.update_one({"_id": 99}, {"$set": {"n": 1}})
    assert (none.matched_count, none.modified_count) == (0, 0)
    with pytest.raises(ValueError):
        coll.update_one({}, {"n": 1})
    with pytest.raises(ValueError):
        coll.replace_one({}, {"$set": {"n": 1}})


def test_deletes(coll: Collection) -> None:
    coll.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(6)])
    assert coll.delete_one({"even": True}).deleted_count == 1
    assert coll.delete_many({"even": True}).deleted_count == 2
    assert coll.delete_many({"nothing": 1}).deleted_count == 0
    assert coll.count_documents({}) == 3


def test_find_one_and_modify(coll: Collection) -> None:
    coll.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
    before = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 10}})
    assert before == {"_id": 1, "n": 1}
    after = coll.find_one_and_update(
        {"_id": 1}, {"$inc": {"n": 1}}, return_document=ReturnDocument.AFTER, projection=["n"]
    )
    assert after == {"_id": 1, "n": 12}
    replaced = coll.find_one_and_replace(
        {"_id": 2}, {"n": 20}, return_document=ReturnDocument.AFTER
    )
    assert replaced == {"_id": 2, "n": 20}
    upserted = coll.find_one_and_update(
        {"_id": 3}, {"$set": {"n": 3}}, upsert=True, return_document=ReturnDocument.AFTER
    )
    assert upserted == {"_id": 3, "n": 3}
    deleted = coll.find_one_and_delete({}, sort=[("n", -1)])
    assert deleted == {"_id": 2, "n": 20}
    assert coll.find_one_and_delete({"_id": 42}) is None


# --- bulk writes ------------------------------------------------------------------------


def test_bulk_write_counts(coll: Collection) -> None:
    coll.insert_many([{"_id": 1, "n": 0}, {"_id": 2, "n": 0}, {"_id": 3, "n": 0}])
    result = coll.bulk_write(
        [
            InsertOne({"_id": 4, "n": 0}),
            UpdateOne({"_id": 1}, {"$set": {"n": 1}}),
            UpdateMany({"n": 0}, {"$set": {"n": 2}}),
            ReplaceOne({"_id": 5}, {"n": 5}, upsert=True),
            DeleteOne({"_id": 2}),
            DeleteMany({"n": 2}),
        ]
    )
    assert isinstance(result, BulkWriteResult)
    assert result.inserted_count == 1 and result.inserted_ids == {0: 4}
    assert result.matched_count == 4 and result.modified_count == 4
    assert result.upserted_count == 1 and result.upserted_ids == {3: 5}
    assert result.deleted_count == 3
    assert sorted(d["_id"] for d in coll.find()) == [1, 5]


def test_an_ordered_bulk_write_stops_at_the_first_error(
    coll: Collection, recorder: Recorder
) -> None:
    coll.insert_one({"_id": 2})
    recorder.clear()
    with pytest.raises(BulkWriteError) as info:
        coll.bulk_write(
            [InsertOne({"_id": 1}), InsertOne({"_id": 2}), InsertOne({"_id": 3}), DeleteOne({})]
        )
    details = info.value.details
    assert details["nInserted"] == 1 and details["nRemoved"] == 0
    (error,) = details["writeErrors"]
    assert error["index"] == 1 and error["code"] == 11000 and error["op"] == {"_id": 2}
    assert info.value.code == 65
    assert [e.command_name for e in recorder.of(CommandStartedEvent)] == ["insert"]
    assert sorted(d["_id"] for d in coll.find()) == [1, 2]


def test_an_unordered_bulk_write_attempts_everything(coll: Collection) -> None:
    coll.insert_one({"_id": 2})
    with pytest.raises(BulkWriteError) as info:
        coll.bulk_write(
            [
                DeleteOne({"_id": 2}),
                InsertOne({"_id": 1}),
                InsertOne({"_id": 2}),
                InsertOne({"_id": 3}),
            ],
            ordered=False,
        )
    details = info.value.details
    # Unordered: inserts ran before the delete.
    assert details["nInserted"] == 2 and details["nRemoved"] == 1
    assert [e["index"] for e in details["writeErrors"]] == [2]
    assert sorted(d["_id"] for d in coll.find()) == [1, 3]


def test_insert_many_is_split_by_max_write_batch_size(
    rs: ReplicaSet, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mongocore.sim.process.MAX_WRITE_BATCH_SIZE", 3)
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["crud"]["items"]
        result = coll.insert_many([{"_id": i} for i in range(10)])
        assert result.inserted_ids == list(range(10))
        inserts = recorder.started_of("insert")
        assert [len(e.command["documents"]) for e in inserts] == [3, 3, 3, 1]
        numbers = [int(e.command["txnNumber"]) for e in inserts]
        assert numbers == sorted(set(numbers)), "each batch its own transaction number"
        assert len({e.operation_id for e in inserts}) == 1
        # Ordered: an error in the second batch stops the rest.
        coll.insert_one({"_id": 104})
        recorder.clear()
        with pytest.raises(BulkWriteError) as info:
            coll.insert_many([{"_id": 100 + i} for i in range(10)])
        assert info.value.details["nInserted"] == 4
        assert info.value.details["writeErrors"][0]["index"] == 4
        assert len(recorder.started_of("insert")) == 2


def test_insert_many_is_split_by_max_message_size(
    rs: ReplicaSet, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mongocore.sim.process.MAX_MESSAGE_SIZE_BYTES", 100_000)
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["crud"]["items"]
        documents = [{"_id": i, "pad": "x" * 30_000} for i in range(7)]
        coll.insert_many(documents)
        sizes = [len(e.command["documents"]) for e in recorder.started_of("insert")]
        assert sum(sizes) == 7 and len(sizes) >= 3 and max(sizes) <= 3
        assert coll.count_documents({}) == 7


def test_insert_one_refuses_a_document_over_the_servers_limit_before_sending(
    rs: ReplicaSet, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """insert_one's own path checks the document against the server's
    maxBsonObjectSize: the broken variant sends it (and the server refuses it) or
    retries it. Nothing is sent, and a document under the limit goes through."""
    monkeypatch.setattr("mongocore.sim.process.MAX_BSON_OBJECT_SIZE", 50_000)
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["crud"]["big"]
        with pytest.raises(DocumentTooLarge):
            coll.insert_one({"_id": 1, "pad": "x" * 60_000})
        assert recorder.started_of("insert") == []
        coll.insert_one({"_id": 2, "pad": "x" * 40_000})
        assert [d["_id"] for d in coll.find({})] == [2]


def test_a_write_concern_error_in_a_bulk_write(rs: ReplicaSet, coll: Collection) -> None:
    primary = rs.primary
    assert primary is not None
    primary.fail_command(
        "insert",
        write_concern_error={"code": 64, "errmsg": "waiting for replication timed out"},
        mode={"times": 1},
    )
    with pytest.raises(BulkWriteError) as info:
        coll.insert_many([{"_id": 1}, {"_id": 2}])
    assert info.value.details["nInserted"] == 2
    assert info.value.details["writeConcernErrors"][0]["code"] == 64


def test_a_bulk_write_stopped_by_a_command_error_keeps_its_partial_result(
    rs: ReplicaSet, coll: Collection
) -> None:
    primary = rs.primary
    assert primary is not None
    primary.fail_command("delete", error_code=2, mode={"times": 1})  # not retryable
    requests = [InsertOne({"_id": 1}), UpdateOne({"_id": 1}, {"$set": {"x": 1}}), DeleteOne({})]
    with pytest.raises(OperationFailure) as info:
        coll.bulk_write(requests)
    error = info.value
    assert error.code == 2 and not isinstance(error, BulkWriteError)
    assert error.partial_result is not None
    assert error.partial_result["nInserted"] == 1
    assert error.partial_result["nModified"] == 1
    assert error.partial_result["nRemoved"] == 0
    # A single-statement write has no intermediary result to report.
    primary.fail_command("insert", error_code=2, mode={"times": 1})
    with pytest.raises(OperationFailure) as single:
        coll.insert_one({"_id": 2})
    assert single.value.partial_result is None


def test_unacknowledged_writes(coll: Collection, recorder: Recorder) -> None:
    fire_and_forget = coll.with_options(write_concern=WriteConcern(w=0))
    result = fire_and_forget.insert_one({"_id": 1})
    assert not result.acknowledged and result.inserted_id == 1
    deleted = fire_and_forget.delete_many({})
    assert not deleted.acknowledged
    with pytest.raises(InvalidOperation):
        _ = deleted.deleted_count
    sent = recorder.of(CommandStartedEvent)
    assert all(e.command["writeConcern"] == {"w": 0} for e in sent)
    assert all("lsid" not in e.command for e in sent)


# --- reads and cursors ------------------------------------------------------------------


def test_find_with_filter_sort_skip_limit_and_projection(coll: Collection) -> None:
    coll.insert_many([{"_id": i, "n": i % 3, "x": i} for i in range(10)])
    found = list(coll.find({"n": {"$gte": 1}}, {"x": 1}, sort=[("x", -1)], skip=1, limit=3))
    assert found == [{"_id": 7, "x": 7}, {"_id": 5, "x": 5}, {"_id": 4, "x": 4}]
    cursor = coll.find({}).sort("x", -1).skip(8)
    assert [d["x"] for d in cursor] == [1, 0]
    assert coll.find_one({"n": 2}, sort=[("x", 1)]) == {"_id": 2, "n": 2, "x": 2}


def test_a_cursor_fetches_batches_with_get_more(coll: Collection, recorder: Recorder) -> None:
    coll.insert_many([{"_id": i} for i in range(7)])
    recorder.clear()
    cursor = coll.find({}, batch_size=3)
    before = cursor.alive
    assert isinstance(cursor, Cursor) and before
    assert [d["_id"] for d in cursor] == list(range(7))
    assert not cursor.alive
    finds, more = recorder.started_of("find"), recorder.started_of("getMore")
    assert len(finds) == 1 and finds[0].command["batchSize"] == 3
    assert len(more) == 2
    assert all(m.command["lsid"] == finds[0].command["lsid"] for m in more)
    assert all(m.address == finds[0].address for m in more)
    with pytest.raises(InvalidOperation):
        cursor.limit(1)


def test_a_cursors_session_is_only_the_one_it_was_given(coll: Collection, client: Client) -> None:
    """``Cursor.session`` is the explicit session, never the implicit one (not even
    after the cursor is exhausted and that session has ended), as pymongo's is."""
    coll.insert_many([{"_id": i} for i in range(3)])
    cursor = coll.find({}, batch_size=2)
    assert cursor.session is None
    assert len(cursor.to_list()) == 3
    assert cursor.session is None
    with client.start_session() as session:
        given = coll.find({}, batch_size=2, session=session)
        given.to_list()
        assert given.session is session


def test_limit_bounds_batches_and_closes_the_cursor(coll: Collection, recorder: Recorder) -> None:
    coll.insert_many([{"_id": i} for i in range(10)])
    recorder.clear()
    assert [d["_id"] for d in coll.find({}, limit=5, batch_size=2)] == list(range(5))
    (find,) = recorder.started_of("find")
    assert find.command["limit"] == 5 and find.command["batchSize"] == 2
    assert [m.command["batchSize"] for m in recorder.started_of("getMore")] == [2, 1]
    recorder.clear()
    assert len(list(coll.find({}, limit=-3, batch_size=2))) == 3
    (single,) = recorder.started_of("find")
    assert single.command["singleBatch"] is True
    assert not recorder.started_of("getMore")


def test_closing_a_cursor_kills_it_on_the_server(
    rs: ReplicaSet, coll: Collection, recorder: Recorder
) -> None:
    coll.insert_many([{"_id": i} for i in range(10)])
    primary = rs.primary
    assert primary is not None
    with coll.find({}, batch_size=2) as cursor:
        assert next(cursor) == {"_id": 0}
        cursor_id = cursor.cursor_id
        assert cursor_id != 0 and len(primary.cursors) == 1
    (kill,) = recorder.started_of("killCursors")
    assert kill.command["cursors"] == [cursor_id]
    assert len(primary.cursors) == 0
    assert not cursor.alive
    assert cursor.try_next() is None


def test_aggregate_distinct_and_counts(coll: Collection, recorder: Recorder) -> None:
    coll.insert_many([{"_id": i, "k": i % 3} for i in range(9)])
    groups = list(
        coll.aggregate([{"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}])
    )
    assert groups == [{"_id": 0, "n": 3}, {"_id": 1, "n": 3}, {"_id": 2, "n": 3}]
    batched = coll.aggregate([{"$match": {}}], batch_size=4)
    assert len(batched.to_list()) == 9
    assert len(recorder.started_of("getMore")) == 2
    assert sorted(coll.distinct("k")) == [0, 1, 2]
    assert coll.distinct("k", {"k": {"$gt": 0}}) == [1, 2]
    assert coll.count_documents({"k": 1}) == 3
    assert coll.count_documents({}, skip=2, limit=5) == 5
    assert coll.count_documents({"k": 9}) == 0
    assert coll.estimated_document_count() == 9
    assert coll.count({"k": 2}) == 3
    out = list(coll.aggregate([{"$match": {"k": 0}}, {"$out": "zeros"}]))
    assert out == []
    assert coll.database["zeros"].count_documents({}) == 3
    (write,) = [e for e in recorder.started_of("aggregate") if "$out" in str(e.command["pipeline"])]
    assert "$readPreference" not in write.command


def test_enumeration_and_catalog(client: Client, coll: Collection) -> None:
    coll.insert_one({"_id": 1, "name": "a"})
    assert "crud" in client.list_database_names()
    databases = list(client.list_databases())
    assert any(d["name"] == "crud" for d in databases)
    db = client["crud"]
    assert db.list_collection_names() == ["items"]
    (info,) = list(db.list_collections(filter={"name": "items"}))
    assert info["name"] == "items" and info["type"] == "collection"
    assert coll.create_index([("name", 1)]) == "name_1"
    assert sorted(coll.list_index_names()) == ["_id_", "name_1"]
    assert coll.index_information()["name_1"]["key"] == [("name", 1)]
    coll.drop_index("name_1")
    assert coll.list_index_names() == ["_id_"]
    assert list(db["nothing"].list_indexes()) == []
    db.create_collection("other")
    assert sorted(db.list_collection_names()) == ["items", "other"]
    db["other"].drop()
    db["never"].drop()  # a missing collection is not an error
    assert db.list_collection_names() == ["items"]
    client.drop_database("crud")
    assert "crud" not in client.list_database_names()


def test_the_generic_command_method(client: Client, recorder: Recorder) -> None:
    db = client["crud"]
    assert db.command("ping")["ok"] == 1
    assert db.command({"count": "items"})["n"] == 0
    reply = db.command("buildInfo")
    assert reply["version"].startswith("7.")
    with pytest.raises(OperationFailure) as info:
        db.command("noSuchCommand")
    assert info.value.code == 59
    secondary = db.command("ping", read_preference=ReadPreference(Mode.SECONDARY))
    assert secondary["ok"] == 1
    pings = recorder.started_of("ping")
    assert "$readPreference" not in pings[0].command
    assert pings[1].command["$readPreference"] == {"mode": "secondary"}


def test_per_operation_read_preference_and_read_concern(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, readConcernLevel="local") as client:
        coll = client["crud"]["items"]
        coll.insert_one({"_id": 1})
        secondaries = {m.host for m in rs.secondaries}
        recorder.clear()
        coll.find_one({}, read_preference=ReadPreference(Mode.SECONDARY))
        (find,) = recorder.started_of("find")
        assert str(find.address) in secondaries
        assert find.command["$readPreference"] == {"mode": "secondary"}
        assert find.command["readConcern"] == {"level": "local"}
        assert client.read_concern == ReadConcern("local")
        majority = coll.with_options(read_concern=ReadConcern("majority"))
        recorder.clear()
        majority.count_documents({})
        (aggregate,) = recorder.started_of("aggregate")
        assert aggregate.command["readConcern"] == {"level": "majority"}
