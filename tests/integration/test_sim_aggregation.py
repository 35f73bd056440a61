"""The command layer's aggregations on the engine's stages (sim/aggregation.py), driven
by pymongo: what the engine's resolver and writer give a pipeline, the command's
``let`` in every stage and in pipeline updates, and the server's refusals."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient
from pymongo.database import Database
from pymongo.errors import OperationFailure

from mongocore.sim import Standalone

FAST = {"serverSelectionTimeoutMS": 20_000}
CASELESS = {"locale": "en", "strength": 2}


@pytest.fixture
def db() -> Iterator[Database[Any]]:
    with Standalone() as server:
        mongo: MongoClient[dict[str, Any]] = MongoClient(server.uri, **FAST)
        try:
            yield mongo.agg
        finally:
            mongo.close()


def test_lookup_under_a_collation_joins_by_it(db: Database[Any]) -> None:
    db.orders.insert_many([{"_id": 1, "sku": "ABC"}, {"_id": 2, "sku": "xyz"}])
    db.items.insert_many([{"_id": 10, "sku": "abc"}, {"_id": 11, "sku": "XYZ"}])
    pipeline = [
        {"$lookup": {"from": "items", "localField": "sku", "foreignField": "sku", "as": "i"}},
        {"$project": {"ids": "$i._id"}},
    ]
    assert list(db.orders.aggregate(pipeline, collation=CASELESS)) == [
        {"_id": 1, "ids": [10]},
        {"_id": 2, "ids": [11]},
    ]
    assert list(db.orders.aggregate(pipeline)) == [{"_id": 1, "ids": []}, {"_id": 2, "ids": []}]


def test_lookup_reads_a_view_through_its_pipeline(db: Database[Any]) -> None:
    db.items.insert_many([{"_id": 10, "k": 1, "on": True}, {"_id": 11, "k": 1, "on": False}])
    db.create_collection("live", viewOn="items", pipeline=[{"$match": {"on": True}}])
    db.orders.insert_one({"_id": 1, "k": 1})
    pipeline = [{"$lookup": {"from": "live", "localField": "k", "foreignField": "k", "as": "i"}}]
    [order] = db.orders.aggregate(pipeline)
    assert [item["_id"] for item in order["i"]] == [10]


def test_group_puts_id_first(db: Database[Any]) -> None:
    db.c.insert_many([{"k": "a", "n": 1}, {"k": "a", "n": 2}, {"k": "b", "n": 5}])
    out = list(
        db.c.aggregate([{"$group": {"_id": "$k", "t": {"$sum": "$n"}}}, {"$sort": {"_id": 1}}])
    )
    assert out == [{"_id": "a", "t": 3}, {"_id": "b", "t": 5}]
    assert [list(doc) for doc in out] == [["_id", "t"], ["_id", "t"]]


def test_let_reaches_stages_and_pipeline_updates(db: Database[Any]) -> None:
    db.c.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 7}])
    out = db.c.aggregate(
        [
            {"$match": {"$expr": {"$gt": ["$n", "$$low"]}}},
            # A $let that binds a name of its own beside the command's.
            {
                "$project": {
                    "v": {"$let": {"vars": {"two": 2}, "in": {"$add": ["$n", "$$two", "$$low"]}}}
                }
            },
        ],
        let={"low": 3},
    )
    assert list(out) == [{"_id": 2, "v": 12}]
    db.c.update_one({"_id": 1}, [{"$set": {"m": {"$multiply": ["$n", "$$k"]}}}], let={"k": 10})
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "n": 1, "m": 10}


def test_out_writes_through_the_store_and_keeps_indexes(db: Database[Any]) -> None:
    db.src.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}])
    db.dst.insert_one({"_id": 9})
    db.dst.create_index("v")
    list(db.src.aggregate([{"$match": {"v": {"$gte": 2}}}, {"$out": "dst"}]))
    assert list(db.dst.find()) == [{"_id": 2, "v": 2}]
    assert "v_1" in db.dst.index_information()


def test_what_the_engine_does_not_evaluate_is_refused(db: Database[Any]) -> None:
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as unknown:
        list(db.c.aggregate([{"$nosuchstage": {}}]))
    assert unknown.value.code == 40324
    with pytest.raises(OperationFailure) as unsupported:
        list(
            db.c.aggregate(
                [{"$project": {"x": {"$function": {"body": "1", "args": [], "lang": "js"}}}}]
            )
        )
    assert unsupported.value.code == 238


def test_no_other_library_is_imported_or_patched() -> None:
    """The simulator runs an aggregation, a pipeline update and $expr without importing
    mongomock (or any query library besides its own engine)."""
    code = (
        "import sys\n"
        "from pymongo import MongoClient\n"
        "from mongocore.sim import Standalone\n"
        "with Standalone() as s:\n"
        "    c = MongoClient(s.uri)\n"
        "    db = c.t\n"
        "    db.x.insert_one({'a': 1})\n"
        "    list(db.x.aggregate([{'$group': {'_id': '$a'}}]))\n"
        "    db.x.update_one({}, [{'$set': {'b': 2}}])\n"
        "    db.x.find_one({'$expr': {'$eq': ['$a', 1]}})\n"
        "    c.close()\n"
        "print('mongomock' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip().splitlines()[-1] == "False"
