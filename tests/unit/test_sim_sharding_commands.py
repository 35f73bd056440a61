"""enableSharding and shardCollection on a simulated mongos, and the ``config``
collections they change, in a 7.0 cluster's shapes (MongoDB manual, "enableSharding",
"shardCollection", "Config Database")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bson import MaxKey, MinKey

from mongocore.sim import ShardedCluster
from tests.unit.sim_wire import RawClient, connect


@pytest.fixture
def client(cluster: ShardedCluster) -> Iterator[RawClient]:
    with connect(cluster.mongoses[0]) as raw:
        yield raw


def _config(client: RawClient, coll: str, flt: dict[str, Any]) -> list[dict[str, Any]]:
    reply = client.command("config", {"find": coll, "filter": flt})
    assert reply["ok"] == 1.0, reply
    docs: list[dict[str, Any]] = reply["cursor"]["firstBatch"]
    return docs


def test_enable_sharding_lists_the_database(cluster: ShardedCluster, client: RawClient) -> None:
    assert _config(client, "databases", {"_id": "empty"}) == []
    assert client.command("admin", {"enableSharding": "empty"})["ok"] == 1.0
    (entry,) = _config(client, "databases", {"_id": "empty"})
    assert entry["primary"] == cluster.shard.name
    assert set(entry["version"]) == {"uuid", "timestamp", "lastMod"}
    assert client.command("admin", {"enableSharding": "empty"})["ok"] == 1.0  # again: fine
    assert client.command("db", {"enableSharding": "x"})["code"] == 13  # admin only
    assert client.command("admin", {"enableSharding": "a.b"})["code"] == 73
    wrong_shard = client.command("admin", {"enableSharding": "x", "primaryShard": "nope"})
    assert (wrong_shard["code"], wrong_shard["codeName"]) == (70, "ShardNotFound")


def test_shard_collection(cluster: ShardedCluster, client: RawClient) -> None:
    reply = client.command("admin", {"shardCollection": "app.items", "key": {"sku": 1}})
    assert reply["ok"] == 1.0 and reply["collectionsharded"] == "app.items"
    (entry,) = _config(client, "collections", {"_id": "app.items"})
    assert entry["key"] == {"sku": 1} and entry["unique"] is False
    assert entry["noBalance"] is False
    assert {"lastmodEpoch", "lastmod", "timestamp", "uuid"} <= set(entry)
    (chunk,) = _config(client, "chunks", {"uuid": entry["uuid"]})
    assert chunk["min"] == {"sku": MinKey()} and chunk["max"] == {"sku": MaxKey()}
    assert chunk["shard"] == cluster.shard.name
    # The new collection has the shard key's index.
    indexes = client.command("app", {"listIndexes": "items"})["cursor"]["firstBatch"]
    assert [index["key"] for index in indexes] == [{"_id": 1}, {"sku": 1}]
    stats = client.command("app", {"collStats": "items"})
    assert stats["sharded"] is True
    # Again with the same key: done; with another: refused.
    assert client.command("admin", {"shardCollection": "app.items", "key": {"sku": 1}})["ok"]
    other = client.command("admin", {"shardCollection": "app.items", "key": {"x": 1}})
    assert (other["code"], other["codeName"]) == (23, "AlreadyInitialized")
    # Dropped, it is no longer sharded.
    client.command("app", {"drop": "items"})
    assert _config(client, "collections", {"_id": "app.items"}) == []


def test_shard_collection_of_a_collection_with_documents_needs_its_index(
    client: RawClient,
) -> None:
    client.command("app", {"insert": "full", "documents": [{"_id": 1, "k": 1}]})
    refused = client.command("admin", {"shardCollection": "app.full", "key": {"k": 1}})
    assert (refused["code"], refused["codeName"]) == (72, "InvalidOptions")
    assert "create an index that starts with the proposed shard key" in refused["errmsg"]
    client.command("app", {"createIndexes": "full", "indexes": [{"key": {"k": 1}, "name": "k"}]})
    assert client.command("admin", {"shardCollection": "app.full", "key": {"k": 1}})["ok"]


@pytest.mark.parametrize(
    ("cmd", "code"),
    [
        ({"shardCollection": "app.c"}, 40414),
        ({"shardCollection": "app.c", "key": {"k": -1}}, 2),
        ({"shardCollection": "app.c", "key": {"a": "hashed", "b": "hashed"}}, 2),
        ({"shardCollection": "app.c", "key": {"k": "hashed"}, "unique": True}, 2),
        ({"shardCollection": "nodot", "key": {"k": 1}}, 73),
        ({"shardCollection": "admin.c", "key": {"k": 1}}, 20),
    ],
)
def test_shard_collection_refuses_what_a_server_refuses(
    client: RawClient, cmd: dict[str, Any], code: int
) -> None:
    assert client.command("admin", cmd)["code"] == code


def test_a_mongod_has_no_sharding_commands(cluster: ShardedCluster) -> None:
    with connect(cluster.shard.wait_for_primary()) as raw:
        assert raw.command("admin", {"enableSharding": "x"})["code"] == 59
        assert raw.command("admin", {"shardCollection": "x.y", "key": {"a": 1}})["code"] == 59
