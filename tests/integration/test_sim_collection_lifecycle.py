"""A collection's life in the simulator, through pymongo, as on a 7.0 server: one an
insert created stays once emptied (so its drop is logged and streamed), a renamed one
keeps its options and index collations, and inserts into a large collection with
unique indexes never read the collection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")
pytest.importorskip("pyuca")

from pymongo import MongoClient, ReadPreference
from pymongo.change_stream import ChangeStream
from pymongo.errors import DuplicateKeyError, WriteError

from mongocore.sim import ReplicaSet
from mongocore.sim.engine import store as engine_store

DEADLINE = 20.0
AWAIT_MS = 100
Client = MongoClient[dict[str, Any]]
CASE_INSENSITIVE = {"locale": "en", "strength": 2}


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(2, election_delay=0.05) as replica_set:
        yield replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    mongo: Client = MongoClient(rs.uri, serverSelectionTimeoutMS=20_000)
    try:
        yield mongo
    finally:
        mongo.close()


def next_change(stream: ChangeStream[Any]) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        change = stream.try_next()
        if change is not None:
            return dict(change)
        assert stream.alive, "the change stream was closed"
    raise AssertionError("no change event before the deadline")


# -- implicit creation ---------------------------------------------------------------------


def test_a_collection_a_write_created_stays_once_its_documents_are_deleted(
    client: Client,
) -> None:
    app = client.app
    app.inserted.insert_one({"_id": 1})
    app.upserted.update_one({"_id": 1}, {"$set": {"a": 1}}, upsert=True)
    app.inserted.delete_many({})
    app.upserted.delete_one({"_id": 1})
    list(app.inserted.aggregate([{"$match": {"none": True}}, {"$out": "out_empty"}]))
    assert {"inserted", "upserted", "out_empty"} <= set(app.list_collection_names())
    secondary = client.get_database("app", read_preference=ReadPreference.SECONDARY)
    assert {"inserted", "upserted"} <= set(secondary.list_collection_names())
    assert app.inserted.count_documents({}) == 0


def test_the_drop_of_an_emptied_collection_is_streamed(client: Client) -> None:
    items = client.app.items
    items.insert_one({"_id": 1})
    items.delete_one({"_id": 1})
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.drop()
        drop, invalidate = next_change(stream), next_change(stream)
    assert drop["operationType"] == "drop"
    assert drop["ns"] == {"db": "app", "coll": "items"}
    assert invalidate["operationType"] == "invalidate"
    assert "items" not in client.app.list_collection_names()


# -- rename ----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["app.renamed", "other.moved"])
def test_a_renamed_collection_keeps_its_options_and_index_collations(
    client: Client, target: str
) -> None:
    client.app.create_collection(
        "people",
        collation=CASE_INSENSITIVE,
        validator={"name": {"$type": "string"}},
        changeStreamPreAndPostImages={"enabled": True},
    )
    client.app.people.create_index("tag", unique=True, collation={"locale": "en", "strength": 1})
    client.app.people.insert_one({"_id": 1, "name": "Ann", "tag": "é"})
    client.admin.command("renameCollection", "app.people", to=target)
    db_name, _, coll_name = target.partition(".")
    moved = client[db_name][coll_name]

    (info,) = list(client[db_name].list_collections(filter={"name": coll_name}))
    assert info["options"]["validator"] == {"name": {"$type": "string"}}
    assert info["options"]["collation"]["strength"] == 2
    assert info["options"]["changeStreamPreAndPostImages"] == {"enabled": True}
    tag_index = next(i for i in moved.list_indexes() if i["name"] == "tag_1")
    assert tag_index["collation"]["strength"] == 1

    assert moved.count_documents({"name": "ANN"}) == 1  # the default collation
    with pytest.raises(WriteError) as invalid:
        moved.insert_one({"_id": 2, "name": 5, "tag": "x"})
    assert invalid.value.code == 121  # the validator
    with pytest.raises(DuplicateKeyError):
        moved.insert_one({"_id": 3, "name": "Bob", "tag": "E"})  # strength 1: é is E
    with moved.watch(full_document_before_change="required", max_await_time_ms=AWAIT_MS) as stream:
        moved.update_one({"_id": 1}, {"$set": {"name": "Anna"}})
        update = next_change(stream)
    assert update["fullDocumentBeforeChange"]["name"] == "Ann"

    client.app.create_collection("people")  # the old name has no options left
    (old,) = list(client.app.list_collections(filter={"name": "people"}))
    assert old["options"] == {}


# -- the cost of inserts ---------------------------------------------------------------------


def test_inserts_into_a_large_collection_read_none_of_it(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = client.app.items
    items.create_index("k", unique=True)
    items.insert_many([{"_id": i, "k": i} for i in range(2_000)])
    items.insert_one({"_id": -1, "k": -1})
    examined = 0
    original = engine_store.Collection.scan

    def scan(self: Any, as_of: Any = None) -> Iterator[Any]:
        nonlocal examined
        for record in original(self, as_of):
            examined += 1
            yield record

    monkeypatch.setattr(engine_store.Collection, "scan", scan)
    for i in range(2_000, 2_050):
        items.insert_one({"_id": i, "k": i})
    with pytest.raises(DuplicateKeyError):
        items.insert_one({"_id": 9_999, "k": 7})
    assert examined == 0  # a scan reads the whole collection per insert (2,000 each)
