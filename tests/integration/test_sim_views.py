"""Read-only views in the simulator, driven by pymongo: reads run the view's pipeline,
writes are refused with CommandNotSupportedOnView (166), as on a 7.0 server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient, ReadPreference
from pymongo.database import Database
from pymongo.errors import OperationFailure

from mongocore.sim import ReplicaSet

FAST = {"serverSelectionTimeoutMS": 20_000}


@pytest.fixture
def db() -> Iterator[Database[Any]]:
    with ReplicaSet(2, election_delay=0.05) as rs:
        mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **FAST)
        try:
            views = mongo.views
            views.coll.insert_many(
                [{"_id": i, "x": i * 11, "even": i % 2 == 0} for i in range(1, 6)]
            )
            views.command("create", "big", viewOn="coll", pipeline=[{"$match": {"x": {"$gt": 11}}}])
            views.command("create", "bigx", viewOn="big", pipeline=[{"$project": {"x": 1}}])
            yield views
        finally:
            mongo.close()


def test_reads_run_the_pipeline(db: Database[Any]) -> None:
    assert db.big.estimated_document_count() == 4
    assert db.big.count_documents({"even": True}) == 2
    assert list(db.bigx.find({"x": {"$lt": 50}}).sort("x", -1).skip(1).limit(1)) == [
        {"_id": 3, "x": 33}
    ]
    assert sorted(db.big.distinct("even")) == [False, True]
    grouped = db.bigx.aggregate([{"$group": {"_id": None, "total": {"$sum": "$x"}}}])
    assert list(grouped) == [{"_id": None, "total": 154}]


def test_cursors_belong_to_the_view(db: Database[Any]) -> None:
    cursor = db.bigx.find(batch_size=1)
    assert [doc["_id"] for doc in cursor] == [2, 3, 4, 5]
    cursor = db.bigx.aggregate([{"$sort": {"_id": 1}}], batchSize=1)
    assert [doc["_id"] for doc in cursor] == [2, 3, 4, 5]


def test_listed_as_views(db: Database[Any]) -> None:
    listed = {doc["name"]: doc for doc in db.list_collections()}
    assert listed["big"]["type"] == "view"
    assert listed["big"]["options"] == {
        "viewOn": "coll",
        "pipeline": [{"$match": {"x": {"$gt": 11}}}],
    }
    assert listed["big"]["info"] == {"readOnly": True}
    assert listed["coll"]["type"] == "collection"
    assert sorted(db.list_collection_names(filter={"type": "view"})) == ["big", "bigx"]


def test_writes_are_refused(db: Database[Any]) -> None:
    for write in (
        lambda: db.big.insert_one({}),
        lambda: db.big.update_one({}, {"$set": {"a": 1}}),
        lambda: db.big.delete_many({}),
        lambda: db.big.find_one_and_delete({}),
        lambda: db.big.create_index("x"),
        lambda: list(db.big.list_indexes()),
    ):
        with pytest.raises(OperationFailure) as caught:
            write()
        assert caught.value.code == 166
        assert caught.value.details is not None
        assert caught.value.details["codeName"] == "CommandNotSupportedOnView"
    assert db.coll.count_documents({}) == 5


def test_create_errors_and_drop(db: Database[Any]) -> None:
    with pytest.raises(OperationFailure) as caught:
        db.command("create", "big", viewOn="coll")
    assert caught.value.code == 48
    with pytest.raises(OperationFailure) as caught:
        db.command("create", "v", viewOn="coll", pipeline=[{"$out": "elsewhere"}])
    assert caught.value.code == 167
    for refused in (
        lambda: db.client.admin.command("renameCollection", "views.big", to="views.other"),
        lambda: db.command("collMod", "big", viewOn="coll", pipeline=[]),
    ):
        with pytest.raises(OperationFailure) as caught:
            refused()
        assert caught.value.code == 238
    db.drop_collection("big")
    assert "big" not in db.list_collection_names()
    # A view on a missing collection (or view) reads nothing.
    assert list(db.bigx.find()) == []


def test_secondaries_read_views(db: Database[Any]) -> None:
    secondary = db.client.get_database("views", read_preference=ReadPreference.SECONDARY)
    assert secondary.big.count_documents({}) == 4
