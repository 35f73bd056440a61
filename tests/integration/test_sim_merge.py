"""The simulator's ``$merge`` stage answers as a MongoDB 7.0 server's: pymongo drives
every whenMatched/whenNotMatched mode, the ``on`` rules, the spec errors, and checks
that the writes reach the oplog (a change stream, a secondary) and the target's
validator and unique indexes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient, ReadPreference
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import OperationFailure

from mongocore.sim import ReplicaSet, Standalone

FAST = {"serverSelectionTimeoutMS": 20_000}


@pytest.fixture
def db() -> Iterator[Database[Any]]:
    with Standalone() as server:
        mongo: MongoClient[dict[str, Any]] = MongoClient(server.uri, **FAST)
        try:
            yield mongo.merging
        finally:
            mongo.close()


@pytest.fixture
def source(db: Database[Any]) -> Collection[Any]:
    db.source.insert_many([{"_id": 1, "k": "a", "v": 1}, {"_id": 2, "k": "b", "v": 2}])
    db.target.insert_many([{"_id": 1, "k": "a", "v": 10, "old": True}])
    return db.source


def _merge(source: Collection[Any], **spec: Any) -> None:
    source.aggregate([{"$merge": {"into": "target", **spec}}])


def _error(source: Collection[Any], pipeline: list[Any]) -> OperationFailure:
    with pytest.raises(OperationFailure) as caught:
        source.aggregate(pipeline)
    return caught.value


def test_default_merges_matched_and_inserts_the_rest(source: Collection[Any]) -> None:
    result = list(source.aggregate([{"$merge": "target"}]))
    assert result == []
    assert list(source.database.target.find().sort("_id")) == [
        {"_id": 1, "k": "a", "v": 1, "old": True},
        {"_id": 2, "k": "b", "v": 2},
    ]


@pytest.mark.parametrize(
    ("when_matched", "when_not_matched", "expected"),
    [
        ("replace", "insert", [{"_id": 1, "k": "a", "v": 1}, {"_id": 2, "k": "b", "v": 2}]),
        ("replace", "discard", [{"_id": 1, "k": "a", "v": 1}]),
        (
            "keepExisting",
            "insert",
            [{"_id": 1, "k": "a", "v": 10, "old": True}, {"_id": 2, "k": "b", "v": 2}],
        ),
        ("merge", "discard", [{"_id": 1, "k": "a", "v": 1, "old": True}]),
    ],
)
def test_modes(
    source: Collection[Any], when_matched: str, when_not_matched: str, expected: list[Any]
) -> None:
    _merge(source, whenMatched=when_matched, whenNotMatched=when_not_matched)
    assert list(source.database.target.find().sort("_id")) == expected


def test_when_matched_fail_is_a_duplicate_key_error(db: Database[Any]) -> None:
    db.target.insert_one({"_id": 2, "x": 0})
    with pytest.raises(OperationFailure) as raised:
        db.aggregate(
            [
                {"$documents": [{"_id": 1}, {"_id": 2, "x": 1}, {"_id": 3}]},
                {"$merge": {"into": "target", "whenMatched": "fail"}},
            ]
        )
    error = raised.value
    assert (error.code, error.details and error.details["codeName"]) == (11000, "DuplicateKey")
    assert error.details is not None
    assert (error.details["keyPattern"], error.details["keyValue"]) == ({"_id": 1}, {"_id": 2})
    # Written one by one: the document before the duplicate stays, the one after is not.
    assert list(db.target.find().sort("_id")) == [{"_id": 1}, {"_id": 2, "x": 0}]


def test_when_not_matched_fail(source: Collection[Any]) -> None:
    error = _error(
        source, [{"$merge": {"into": "target", "whenMatched": "merge", "whenNotMatched": "fail"}}]
    )
    assert error.code == 13113
    assert error.details is not None
    assert error.details["codeName"] == "MergeStageNoMatchingDocument"


def test_pipeline_sees_new_and_let(source: Collection[Any]) -> None:
    _merge(
        source,
        let={"bonus": {"$multiply": ["$v", 100]}},
        whenMatched=[{"$set": {"v": {"$add": ["$v", "$$new.v", "$$bonus"]}, "seen": "$$new.k"}}],
        whenNotMatched="insert",
    )
    assert list(source.database.target.find().sort("_id")) == [
        {"_id": 1, "k": "a", "v": 111, "old": True, "seen": "a"},
        {"_id": 2, "k": "b", "v": 2},  # inserted as it is, not through the pipeline
    ]


def test_on_other_fields_needs_a_unique_index(db: Database[Any]) -> None:
    db.source.insert_many([{"_id": 7, "k": "a", "v": 1}, {"_id": 8, "k": "c", "v": 3}])
    db.target.insert_one({"_id": 1, "k": "a", "v": 10})
    error = _error(db.source, [{"$project": {"_id": 0}}, {"$merge": {"into": "target", "on": "k"}}])
    assert error.code == 51183
    db.target.create_index("k", unique=True)
    db.source.aggregate([{"$project": {"_id": 0}}, {"$merge": {"into": "target", "on": "k"}}])
    docs = list(db.target.find({}, {"_id": 0}).sort("k"))
    assert docs == [{"k": "a", "v": 1}, {"k": "c", "v": 3}]
    assert db.target.find_one({"k": "a"})["_id"] == 1  # type: ignore[index]
    # A document whose on field is missing, null or an array is refused.
    db.source.insert_one({"_id": 9, "v": 4})
    error = _error(db.source, [{"$project": {"_id": 0}}, {"$merge": {"into": "target", "on": "k"}}])
    assert error.code == 51132


def test_replace_may_not_change_the_id(db: Database[Any]) -> None:
    db.target.create_index("k", unique=True)
    db.target.insert_one({"_id": 1, "k": "a"})
    db.source.insert_one({"_id": 2, "k": "a"})
    error = _error(db.source, [{"$merge": {"into": "target", "on": "k", "whenMatched": "replace"}}])
    assert error.code == 66
    assert error.details is not None
    assert error.details["codeName"] == "ImmutableField"


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"into": "t", "whenMatched": "fail", "whenNotMatched": "discard"}, 51181),
        ({"into": "t", "whenMatched": "keepExisting", "whenNotMatched": "fail"}, 51181),
        ({"into": "t", "whenMatched": "merge", "let": {"x": 1}}, 51199),
        ({"into": "t", "whenMatched": "nope"}, 2),
        ({"into": "t", "bogus": 1}, 40415),
        ({"into": 5}, 51178),
        ({"into": "t", "on": ["k", "k"]}, 31465),
        ({"into": "t", "whenMatched": [{"$match": {}}]}, 72),
        ({"into": "system.x"}, 31319),
        ({"into": {"db": "admin", "coll": "t"}}, 31320),
    ],
)
def test_spec_errors(source: Collection[Any], spec: dict[str, Any], code: int) -> None:
    assert _error(source, [{"$merge": spec}]).code == code
    assert list(source.database.t.find()) == []


def test_merge_must_be_last(source: Collection[Any]) -> None:
    error = _error(source, [{"$merge": {"into": "t"}}, {"$match": {}}])
    assert error.code == 40601


def test_into_another_database_with_its_validator(db: Database[Any]) -> None:
    other = db.client.other_db
    other.create_collection("checked", validator={"v": {"$type": "int"}})
    db.source.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": "two"}])
    error = _error(db.source, [{"$merge": {"into": {"db": "other_db", "coll": "checked"}}}])
    assert error.code == 121
    assert list(other.checked.find()) == [{"_id": 1, "v": 1}]
    db.source.aggregate(
        [{"$merge": {"into": {"db": "other_db", "coll": "checked"}}}],
        bypassDocumentValidation=True,
    )
    assert other.checked.count_documents({}) == 2


def test_writes_are_replicated_and_streamed() -> None:
    with ReplicaSet(2, election_delay=0.05) as rs:
        mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **FAST)
        try:
            db = mongo.replicated
            db.source.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}])
            db.target.insert_one({"_id": 1, "v": 0})
            with db.target.watch() as stream:
                db.source.aggregate([{"$merge": {"into": "target", "whenMatched": "replace"}}])
                events = [stream.next(), stream.next()]
            assert [e["operationType"] for e in events] == ["replace", "insert"]
            assert [e["documentKey"] for e in events] == [{"_id": 1}, {"_id": 2}]
            secondary = mongo.get_database("replicated", read_preference=ReadPreference.SECONDARY)
            assert list(secondary.target.find().sort("_id")) == [
                {"_id": 1, "v": 1},
                {"_id": 2, "v": 2},
            ]
            # A 5.0+ secondary runs the stage when the read preference lets it read.
            secondary.source.aggregate([{"$merge": {"into": "from_secondary"}}])
            assert db.from_secondary.count_documents({}) == 2
        finally:
            mongo.close()
