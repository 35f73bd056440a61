"""Pipeline-style updates in the simulator, driven by pymongo: ``$set``/``$addFields``,
``$unset``, ``$project``, ``$replaceRoot``/``$replaceWith`` keeping ``_id`` as a 7.0
server does, and the ``$setField``/``$getField``/``$unsetField`` expressions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient, ReturnDocument
from pymongo.collection import Collection
from pymongo.errors import OperationFailure, WriteError

from mongocore.sim import Standalone

FAST = {"serverSelectionTimeoutMS": 20_000}


@pytest.fixture
def coll() -> Iterator[Collection[Any]]:
    with Standalone() as server:
        mongo: MongoClient[dict[str, Any]] = MongoClient(server.uri, **FAST)
        try:
            items = mongo.pipelines.items
            items.insert_many(
                [
                    {"_id": 1, "t": {"u": {"v": 1}}, "foo": {}, "x": 1},
                    {"_id": 2, "x": 2, "y": 1},
                ]
            )
            yield items
        finally:
            mongo.close()


def test_replace_root_keeps_the_id(coll: Collection[Any]) -> None:
    result = coll.update_one(
        {"_id": 1}, [{"$replaceRoot": {"newRoot": "$t"}}, {"$addFields": {"foo": 1}}]
    )
    assert (result.matched_count, result.modified_count) == (1, 1)
    assert coll.find_one({"_id": 1}) == {"_id": 1, "u": {"v": 1}, "foo": 1}


def test_replace_with_and_set_field(coll: Collection[Any]) -> None:
    coll.update_one(
        {"_id": 1},
        [
            {
                "$replaceWith": {
                    "$setField": {"field": {"$literal": "$a"}, "value": 1, "input": "$$ROOT"}
                }
            }
        ],
    )
    assert coll.find_one({"_id": 1}) == {"_id": 1, "t": {"u": {"v": 1}}, "foo": {}, "x": 1, "$a": 1}
    before = coll.find_one_and_update(
        {"_id": 1},
        [{"$set": {"foo": {"$setField": {"field": "a.b", "value": 1, "input": "$foo"}}}}],
    )
    assert before is not None and before["foo"] == {}
    assert coll.find_one({"_id": 1})["foo"] == {"a.b": 1}  # type: ignore[index]


def test_get_field_and_unset_field(coll: Collection[Any]) -> None:
    after = coll.find_one_and_update(
        {"_id": 1},
        [
            {"$set": {"copy": {"$getField": {"field": "x", "input": "$$ROOT"}}}},
            {"$replaceWith": {"$unsetField": {"field": "t", "input": "$$ROOT"}}},
            {"$unset": "foo"},
        ],
        return_document=ReturnDocument.AFTER,
    )
    assert after == {"_id": 1, "x": 1, "copy": 1}
    assert list(coll.aggregate([{"$project": {"v": {"$getField": "y"}}}])) == [
        {"_id": 1},
        {"_id": 2, "v": 1},
    ]


def test_project_and_multi_update(coll: Collection[Any]) -> None:
    result = coll.update_many({}, [{"$project": {"x": 1}}, {"$set": {"z": {"$add": ["$x", 1]}}}])
    assert (result.matched_count, result.modified_count) == (2, 2)
    assert list(coll.find().sort("_id")) == [{"_id": 1, "x": 1, "z": 2}, {"_id": 2, "x": 2, "z": 3}]


def test_upsert_starts_from_the_query(coll: Collection[Any]) -> None:
    result = coll.update_one(
        {"_id": 9, "k": "q"}, [{"$set": {"n": {"$concat": ["$k", "!"]}}}], upsert=True
    )
    assert result.upserted_id == 9
    assert coll.find_one({"_id": 9}) == {"_id": 9, "k": "q", "n": "q!"}


def test_changing_the_id_is_refused(coll: Collection[Any]) -> None:
    with pytest.raises(WriteError) as caught:
        coll.update_one({"_id": 2}, [{"$set": {"_id": 3}}])
    assert caught.value.code == 66  # ImmutableField
    with pytest.raises(WriteError) as caught:
        coll.update_one({"_id": 2}, [{"$replaceWith": {"_id": 5}}])
    assert caught.value.code == 66
    assert coll.find_one({"_id": 2}) == {"_id": 2, "x": 2, "y": 1}


@pytest.mark.parametrize(
    ("pipeline", "code"),
    [
        ([{"$match": {}}], 72),
        ([{"$nope": {}}], 40324),
        ([{"$replaceWith": 5}], 40228),
        ([{"$set": {"a": {"$setField": {"field": "$x", "input": "$$ROOT", "value": 1}}}}], 4161108),
        ([{"$set": {"a": {"$setField": {"field": "f", "input": 5, "value": 1}}}}], 4161105),
        ([{"$set": {"a": {"$setField": {"field": "f", "value": 1}}}}], 4161109),
        ([{"$set": {"a": {"$setField": {"field": "f", "input": "$$ROOT"}}}}], 4161103),
        ([{"$set": {"a": {"$getField": {"field": 1, "input": "$$ROOT"}}}}], 5654602),
    ],
)
def test_errors(coll: Collection[Any], pipeline: list[Any], code: int) -> None:
    with pytest.raises(OperationFailure) as caught:
        coll.update_one({"_id": 2}, pipeline)
    assert caught.value.code == code
