"""``$[]`` and ``$[<identifier>]`` with ``arrayFilters`` in the simulator, driven by
pymongo: update, findAndModify and bulk writes change the elements a 7.0 server
changes, and refuse what it refuses with its codes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient, ReturnDocument, UpdateMany, UpdateOne
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

from mongocore.sim import Standalone

FAST = {"serverSelectionTimeoutMS": 20_000}


@pytest.fixture
def coll() -> Iterator[Collection[Any]]:
    with Standalone() as server:
        mongo: MongoClient[dict[str, Any]] = MongoClient(server.uri, **FAST)
        try:
            items = mongo.filters.items
            items.insert_many(
                [
                    {"_id": 1, "y": [{"b": 3}, {"b": 1}], "n": [0, 1, 0, 1]},
                    {"_id": 2, "y": [{"b": 5, "c": [{"d": 2}, {"d": 1}]}], "n": [5]},
                ]
            )
            yield items
        finally:
            mongo.close()


def test_filtered_positional_update_one_and_many(coll: Collection[Any]) -> None:
    result = coll.update_one({}, {"$set": {"y.$[i].b": 2}}, array_filters=[{"i.b": 1}])
    assert (result.matched_count, result.modified_count) == (1, 1)
    assert coll.find_one({"_id": 1})["y"] == [{"b": 3}, {"b": 2}]  # type: ignore[index]
    result = coll.update_many({}, {"$inc": {"n.$[x]": 10}}, array_filters=[{"x": {"$gte": 1}}])
    assert (result.matched_count, result.modified_count) == (2, 2)
    assert [d["n"] for d in coll.find().sort("_id")] == [[0, 11, 0, 11], [15]]


def test_nested_identifiers_and_all_positional(coll: Collection[Any]) -> None:
    coll.update_one(
        {"_id": 2},
        {"$set": {"y.$[i].c.$[j].d": 0}},
        array_filters=[{"i.b": 5}, {"j.d": 1}],
    )
    assert coll.find_one({"_id": 2})["y"] == [{"b": 5, "c": [{"d": 2}, {"d": 0}]}]  # type: ignore[index]
    coll.update_one({"_id": 1}, {"$mul": {"n.$[]": 3}, "$set": {"y.$[].seen": True}})
    doc = coll.find_one({"_id": 1})
    assert doc == {
        "_id": 1,
        "y": [{"b": 3, "seen": True}, {"b": 1, "seen": True}],
        "n": [0, 3, 0, 3],
    }


def test_no_element_matches_is_no_modification(coll: Collection[Any]) -> None:
    result = coll.update_one({"_id": 1}, {"$set": {"y.$[i].b": 9}}, array_filters=[{"i.b": 42}])
    assert (result.matched_count, result.modified_count) == (1, 0)


def test_find_one_and_update_and_bulk(coll: Collection[Any]) -> None:
    before = coll.find_one_and_update(
        {"_id": 1}, {"$unset": {"n.$[z]": ""}}, array_filters=[{"z": 0}]
    )
    assert before is not None and before["n"] == [0, 1, 0, 1]
    after = coll.find_one_and_update(
        {"_id": 1},
        {"$set": {"n.$[z]": 7}},
        array_filters=[{"z": None}],
        return_document=ReturnDocument.AFTER,
    )
    assert after is not None and after["n"] == [7, 1, 7, 1]
    result = coll.bulk_write(
        [
            UpdateOne({"_id": 2}, {"$set": {"y.$[e].b": 6}}, array_filters=[{"e.b": 5}]),
            UpdateMany({}, {"$push": {"y.$[e].tags": "t"}}, array_filters=[{"e.b": 3}]),
        ]
    )
    assert (result.matched_count, result.modified_count) == (3, 2)
    assert coll.find_one({"_id": 1})["y"][0] == {"b": 3, "tags": ["t"]}  # type: ignore[index]


@pytest.mark.parametrize(
    ("update", "filters", "code", "message"),
    [
        ({"$set": {"y.$[i].b": 1}}, [{"i.b": 1}, {"j": 1}], 9, "identifier 'j' was not used"),
        ({"$set": {"y.$[i].b": 1}}, [{"i.b": 1}, {"i.b": 2}], 9, "multiple array filters"),
        ({"$set": {"y.$[i].b": 1}}, [{"i.b": 1, "k": 1}], 9, "found 'i' and 'k'"),
        ({"$set": {"y.$[i].b": 1}}, [{}], 9, "without a top-level field name"),
        ({"$set": {"y.$[I].b": 1}}, [{"I": 1}], 2, "beginning with a lowercase letter"),
        ({"$set": {"y.$[x].b": 1}}, [], 2, "No array filter found for identifier 'x'"),
        ({"$set": {"$[i]": 1}}, [{"i": 1}], 2, "first position"),
        ({"$rename": {"y.$[]": "z"}}, None, 2, "may not be dynamic"),
    ],
)
def test_parse_errors_even_without_a_match(
    coll: Collection[Any], update: Any, filters: Any, code: int, message: str
) -> None:
    with pytest.raises(WriteError) as caught:
        coll.update_one({"_id": "none"}, update, array_filters=filters)
    assert caught.value.code == code
    assert message in str(caught.value)


def test_document_errors(coll: Collection[Any]) -> None:
    coll.insert_one({"_id": 3, "s": "abc", "a": {"b": [1, 2]}})
    with pytest.raises(WriteError) as caught:
        coll.update_one({"_id": 3}, {"$set": {"s.$[]": 1}})
    assert caught.value.code == 2
    assert "Cannot apply array updates to non-array element s" in str(caught.value)
    with pytest.raises(WriteError) as caught:
        coll.update_one({"_id": 3}, {"$set": {"missing.$[]": 1}})
    assert "The path 'missing' must exist" in str(caught.value)
    with pytest.raises(WriteError) as caught:
        coll.update_one({"_id": 3}, {"$set": {"a.b.$[x].c": 1}}, array_filters=[{"x": 2}])
    assert caught.value.code == 28  # PathNotViable
    with pytest.raises(OperationFailure) as failed:
        coll.find_one_and_update({"_id": 3}, [{"$set": {"q": 1}}], array_filters=[{"i": 1}])
    assert failed.value.code == 9
    with pytest.raises(BulkWriteError) as bulk:
        coll.bulk_write([UpdateOne({}, {"$set": {"n.$[k]": 1}})])
    assert bulk.value.details["writeErrors"][0]["code"] == 2


def test_collation_applies_to_array_filters(coll: Collection[Any]) -> None:
    coll.insert_one({"_id": 4, "names": ["Ann", "ann", "Bob"]})
    coll.update_one(
        {"_id": 4},
        {"$set": {"names.$[n]": "x"}},
        array_filters=[{"n": "ANN"}],
        collation={"locale": "en", "strength": 2},
    )
    assert coll.find_one({"_id": 4})["names"] == ["x", "x", "Bob"]  # type: ignore[index]
