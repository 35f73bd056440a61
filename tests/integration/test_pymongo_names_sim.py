"""pymongo's names end to end against a simulated replica set: MongoClient with host
and port, pymongo-style read preference objects at every level they are taken
(client, database, collection, operation), the write models in bulk_write, and
IndexModel in create_indexes.

Seed: server-selection.rst 1.5 (tag sets pick the member a read goes to; the read
preference reaches the server as ``$readPreference``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca")

from mongocore import (
    ASCENDING,
    DESCENDING,
    DeleteMany,
    DeleteOne,
    IndexModel,
    InsertOne,
    MongoClient,
    ReadPreference,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from mongocore.read_preferences import Nearest, Secondary, SecondaryPreferred
from mongocore.sim import ReplicaSet
from mongocore.sim.member import Member
from tests.integration.sim_client import FAST, Recorder, wait_for_topology

TAGS = [{"dc": "ny"}, {"dc": "sf"}, {"dc": "la"}]


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(3, tags=TAGS, election_delay=0.05) as replica_set:
        yield replica_set


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(rs: ReplicaSet, recorder: Recorder) -> Iterator[MongoClient]:
    with MongoClient(
        rs.hosts, replicaSet=rs.name, event_listeners=[recorder], retryWrites=True, **FAST
    ) as mongo:
        # Tag sets choose among known secondaries: wait until the client has seen all
        # three members, or a read could fall back to the primary before they are.
        wait_for_topology(
            mongo,
            lambda td: sum(s.type.value == "RSSecondary" for s in td.servers.values()) == 2,
        )
        yield mongo


def tagged(rs: ReplicaSet, dc: str) -> Member:
    """The member tagged ``dc``, checked to be a secondary."""
    member = next(m for m in rs.members if m.config.tags == {"dc": dc})
    assert member in rs.secondaries
    return member


def served_by(recorder: Recorder, command_name: str) -> tuple[tuple[str, int], dict[str, Any]]:
    """Where the last ``command_name`` went, and its $readPreference (if any)."""
    event = recorder.started_of(command_name)[-1]
    address = (event.address.host, event.address.port)
    return address, dict(event.command).get("$readPreference", {})


def test_write_models_in_bulk_write(client: MongoClient) -> None:
    items = client["app"]["items"]
    result = items.bulk_write(
        [
            InsertOne({"_id": 1, "n": 0}),
            InsertOne({"_id": 2, "n": 0}),
            InsertOne({"_id": 3, "n": 5}),
            UpdateOne({"_id": 1}, {"$set": {"n": 1}}),
            UpdateMany({"n": 0}, {"$inc": {"n": 10}}),
            ReplaceOne({"_id": 4}, {"n": 4}, True),  # pymongo's positional upsert
            UpdateOne({"_id": 5}, {"$set": {"n": 5}}, upsert=True),
            DeleteOne({"_id": 3}),
            DeleteMany({"n": {"$gte": 10}}),
        ]
    )
    assert result.inserted_count == 3
    assert result.matched_count == 2
    assert result.modified_count == 2
    assert result.upserted_count == 2
    assert result.upserted_ids == {5: 4, 6: 5}
    assert result.deleted_count == 2
    assert sorted(d["_id"] for d in items.find({})) == [1, 4, 5]


def test_index_models_in_create_indexes(client: MongoClient) -> None:
    items = client["app"]["items"]
    items.insert_one({"_id": 1, "sku": "a", "at": 1})
    names = items.create_indexes(
        [IndexModel([("sku", ASCENDING), ("at", DESCENDING)]), IndexModel("at", name="by_at")]
    )
    assert names == ["sku_1_at_-1", "by_at"]
    assert {"sku_1_at_-1", "by_at"} <= set(items.index_information())


def test_tag_sets_pick_the_member_at_every_level(
    rs: ReplicaSet, client: MongoClient, recorder: Recorder
) -> None:
    client["app"]["items"].insert_one({"_id": 1})
    sf, la = tagged(rs, "sf"), tagged(rs, "la")

    # A collection's read preference.
    on_sf = client["app"]["items"].with_options(
        read_preference=SecondaryPreferred(tag_sets=[{"dc": "sf"}])
    )
    assert on_sf.find_one({"_id": 1}) == {"_id": 1}
    address, sent = served_by(recorder, "find")
    assert address == sf.address
    assert sent == {"mode": "secondaryPreferred", "tags": [{"dc": "sf"}]}

    # A database's, positional tag sets.
    database = client.get_database("app", read_preference=Secondary([{"dc": "la"}]))
    assert database["items"].count_documents({}) == 1
    address, sent = served_by(recorder, "aggregate")
    assert address == la.address
    assert sent == {"mode": "secondary", "tags": [{"dc": "la"}]}

    # One operation's, over the collection's.
    assert on_sf.find_one({}, read_preference=Nearest([{"dc": "la"}])) == {"_id": 1}
    address, sent = served_by(recorder, "find")
    assert address == la.address
    assert sent == {"mode": "nearest", "tags": [{"dc": "la"}]}

    # The namespace's primary, and the client's default (primary) by default.
    assert client.read_preference == ReadPreference.PRIMARY
    assert client["app"]["items"].find_one({}) == {"_id": 1}
    address, _ = served_by(recorder, "find")
    assert rs.primary is not None
    assert address == rs.primary.address


def test_host_and_port_and_a_client_read_preference(rs: ReplicaSet) -> None:
    recorder = Recorder()
    seed = rs.members[0]
    sf = tagged(rs, "sf")
    with MongoClient(
        "127.0.0.1",
        seed.port,
        read_preference=Secondary(tag_sets=[{"dc": "sf"}]),
        replicaSet=rs.name,
        event_listeners=[recorder],
        **FAST,
    ) as client:
        assert client.read_preference == Secondary([{"dc": "sf"}])
        # Writes go to the primary whatever the read preference.
        client["app"]["items"].insert_one({"_id": "x"})
        assert client["app"]["items"].find_one({"_id": "x"}) == {"_id": "x"}
        address, sent = served_by(recorder, "find")
        assert address == sf.address
        assert sent == {"mode": "secondary", "tags": [{"dc": "sf"}]}
