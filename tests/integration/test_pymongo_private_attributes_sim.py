"""The private attributes of pymongo's objects that libraries written for pymongo read
(MongoEngine's tests among them), on mongocore's objects, beside pymongo's on the same
simulated server: ``client._options`` (pymongo 4.9 and newer keep ``client.options``
there) and ``CommandCursor._collection`` (the collection the cursor reads, whose
``read_preference`` an ODM checks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

import mongocore  # noqa: E402
from mongocore.sim import ReplicaSet  # noqa: E402

FAST: dict[str, Any] = {"serverSelectionTimeoutMS": 20_000}
_NAMES = {"secondaryPreferred": "SECONDARY_PREFERRED", "nearest": "NEAREST"}


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[Any, Any]]:
    with ReplicaSet(members=1, name="rs0") as rs:
        rs.wait_for_primary()
        theirs: Any = pymongo.MongoClient(rs.uri, **FAST)
        ours: Any = mongocore.MongoClient(rs.uri, **FAST)
        try:
            for client in (theirs, ours):
                client.private.items.insert_many([{"_id": 1}, {"_id": 2}])
                client.private.items.delete_many({})
            yield theirs, ours
        finally:
            theirs.close()
            ours.close()


def test_client_options_are_kept_as_pymongos(clients: tuple[Any, Any]) -> None:
    for client in clients:
        assert client._options is client.options
        assert client._options.replica_set_name == "rs0"


@pytest.mark.parametrize("mode", ["secondaryPreferred", "nearest"])
def test_aggregate_cursor_keeps_its_collection(clients: tuple[Any, Any], mode: str) -> None:
    for client in clients:
        module = pymongo if client is clients[0] else mongocore
        wanted = getattr(module.ReadPreference, _NAMES[mode])
        collection = client.private.items.with_options(read_preference=wanted)
        with collection.aggregate([{"$match": {}}]) as cursor:
            assert cursor._collection.full_name == "private.items"
            assert cursor._collection.read_preference == wanted
            assert cursor._collection.read_preference.mongos_mode == mode


def test_database_command_cursor_keeps_the_cmd_collection(clients: tuple[Any, Any]) -> None:
    names = []
    for client in clients:
        with client.private.list_collections() as cursor:
            names.append(cursor._collection.full_name)
        with client.private.aggregate([{"$documents": [{"a": 1}]}]) as cursor:
            assert cursor._collection.database.name == "private"
    assert names[1] == names[0] == "private.$cmd"
