"""Database-level aggregation (``aggregate: 1``) in the simulator, driven by pymongo:
``$documents``, ``$listLocalSessions`` (the process's session cache) and their later
stages, ``$out`` and ``$merge`` included, with a 7.0 server's errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient, ReadPreference
from pymongo.database import Database
from pymongo.errors import OperationFailure

from mongocore.sim import ReplicaSet, Standalone

FAST = {"serverSelectionTimeoutMS": 20_000}


@pytest.fixture
def client(standalone: Standalone) -> Iterator[MongoClient[dict[str, Any]]]:
    mongo: MongoClient[dict[str, Any]] = MongoClient(standalone.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


@pytest.fixture
def db(client: MongoClient[dict[str, Any]]) -> Database[Any]:
    return client.dbagg


def test_documents_and_later_stages(db: Database[Any]) -> None:
    pipeline = [
        {"$documents": [{"x": 1}, {"x": 2, "y": "a"}, {"x": 3}]},
        {"$match": {"x": {"$gte": 2}}},
        {"$set": {"double": {"$multiply": ["$x", 2]}}},
    ]
    assert list(db.aggregate(pipeline)) == [
        {"x": 2, "y": "a", "double": 4},
        {"x": 3, "double": 6},
    ]
    cursor = db.aggregate([{"$documents": [{"i": i} for i in range(5)]}], batchSize=2)
    assert [doc["i"] for doc in cursor] == [0, 1, 2, 3, 4]


def test_documents_can_look_up_a_collection(db: Database[Any]) -> None:
    db.people.insert_many([{"_id": 1, "name": "ann"}, {"_id": 2, "name": "bob"}])
    pipeline = [
        {"$documents": [{"who": 2}]},
        {"$lookup": {"from": "people", "localField": "who", "foreignField": "_id", "as": "p"}},
        {"$project": {"name": {"$first": "$p.name"}}},
    ]
    assert list(db.aggregate(pipeline)) == [{"name": "bob"}]


def test_documents_into_out_and_merge(db: Database[Any]) -> None:
    db.aggregate([{"$documents": [{"_id": 1, "a": 1}]}, {"$out": "copied"}])
    assert list(db.copied.find()) == [{"_id": 1, "a": 1}]
    db.aggregate([{"$documents": [{"_id": 1, "b": 2}, {"_id": 2}]}, {"$merge": "copied"}])
    assert list(db.copied.find().sort("_id")) == [{"_id": 1, "a": 1, "b": 2}, {"_id": 2}]


@pytest.mark.parametrize(
    ("pipeline", "code"),
    [
        ([{"$match": {}}], 73),
        ([], 73),
        ([{"$documents": [{}]}, {"$documents": [{}]}], 40602),
        ([{"$documents": 5}], 5858203),
        ([{"$listLocalSessions": {"bogus": 1}}], 40415),
    ],
)
def test_errors(db: Database[Any], pipeline: list[Any], code: int) -> None:
    with pytest.raises(OperationFailure) as caught:
        db.aggregate(pipeline)
    assert caught.value.code == code


def test_a_collection_cannot_start_with_documents(db: Database[Any]) -> None:
    with pytest.raises(OperationFailure) as caught:
        db.coll.aggregate([{"$documents": [{"a": 1}]}])
    assert caught.value.code == 73
    assert "can only be run with {aggregate: 1}" in str(caught.value)


def test_list_local_sessions(client: MongoClient[dict[str, Any]], db: Database[Any]) -> None:
    with client.start_session() as session:
        db.coll.insert_one({"a": 1}, session=session)
        session_id = session.session_id["id"]
        listed = list(db.aggregate([{"$listLocalSessions": {}}]))
        ids = [doc["_id"]["id"] for doc in listed]
        assert session_id in ids
        record = listed[ids.index(session_id)]
        # Without authentication the uid is the SHA-256 of the empty user name.
        assert record["_id"]["uid"] == bytes.fromhex(
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
        assert "lastUse" in record
        assert len(list(db.aggregate([{"$listLocalSessions": {"allUsers": True}}]))) >= 1
        other = {"users": [{"user": "nobody", "db": "admin"}]}
        assert list(db.aggregate([{"$listLocalSessions": other}])) == []
    # Ending a session (pymongo does at close) removes it from the cache. (A second
    # client lists them: this one would use the ended session again, from its pool.)
    client.admin.command("endSessions", [{"id": session_id}])
    host, port = client.address or ("", 0)
    with MongoClient(host, port, **FAST) as other_client:
        listed = list(other_client.dbagg.aggregate([{"$listLocalSessions": {"allUsers": True}}]))
    assert session_id not in [doc["_id"]["id"] for doc in listed]


def test_each_member_has_its_own_cache_and_secondaries_can_write_out() -> None:
    with ReplicaSet(2, election_delay=0.05) as rs:
        mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **FAST)
        try:
            primary_db = mongo.dbagg
            secondary_db = mongo.get_database("dbagg", read_preference=ReadPreference.SECONDARY)
            with mongo.start_session() as session:
                primary_db.coll.insert_one({"a": 1}, session=session)
                session_id = session.session_id["id"]
                on_secondary = list(
                    secondary_db.aggregate([{"$listLocalSessions": {"allUsers": True}}])
                )
                assert session_id not in [doc["_id"]["id"] for doc in on_secondary]
            secondary_db.aggregate(
                [{"$listLocalSessions": {}}, {"$limit": 1}, {"$project": {"_id": 1}}, {"$out": "s"}]
            )
            assert primary_db.s.count_documents({}) == 1
        finally:
            mongo.close()
