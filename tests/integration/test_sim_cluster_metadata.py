"""What monitoring tools and shell helpers read about a deployment, from mongocore.sim,
driven by pymongo: listShards and the ``config`` database (sh.status()), the oplog and
``local.system.replset`` (rs.printReplicationInfo()), and replSetGetStatus."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from bson import Timestamp
from pymongo import MongoClient, ReadPreference
from pymongo.errors import OperationFailure

from mongocore.pytest_plugin import MongoDBDeployment
from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from tests.integration.sim_client import FAST

Client = MongoClient[dict[str, Any]]


@pytest.fixture
def rs(mongodb_replica_set_per_test: MongoDBDeployment) -> ReplicaSet:
    """A replica set of each test's own (the plugin's): its tests read the oplog from its start."""
    replica_set: ReplicaSet = mongodb_replica_set_per_test.sim
    return replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    mongo: Client = MongoClient(rs.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


@pytest.fixture
def cluster() -> Iterator[ShardedCluster]:
    with ShardedCluster(2, shard_members=3, election_delay=0.05) as sharded:
        yield sharded


@pytest.fixture
def router(cluster: ShardedCluster) -> Iterator[Client]:
    mongo: Client = MongoClient(cluster.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


# -- a sharded cluster's metadata --------------------------------------------------------


def test_list_shards(cluster: ShardedCluster, router: Client) -> None:
    (shard,) = router.admin.command("listShards")["shards"]
    hosts = ",".join(m.host for m in cluster.shard.members)
    assert shard["_id"] == cluster.shard.name
    assert shard["host"] == f"{cluster.shard.name}/{hosts}"
    assert shard["state"] == 1 and isinstance(shard["topologyTime"], Timestamp)
    with pytest.raises(OperationFailure) as failure:
        router.app.command("listShards")
    assert failure.value.code == 13  # an admin command


def test_a_mongod_does_not_know_list_shards(client: Client) -> None:
    with pytest.raises(OperationFailure) as failure:
        client.admin.command("listShards")
    assert failure.value.code == 59


def test_what_sh_status_reads(cluster: ShardedCluster, router: Client) -> None:
    """The queries mongosh's sh.status() runs against a mongos, in its order."""
    router.app.items.insert_one({"_id": 1})
    config = router.config
    version = config.version.find_one()
    assert version is not None and version["_id"] == 1 and "clusterId" in version
    assert config.version.find_one()["clusterId"] == version["clusterId"]  # stable
    shards = list(config.shards.find().sort("_id", 1))
    assert [s["_id"] for s in shards] == [cluster.shard.name]
    recent = list(config.mongos.find().sort("ping", -1).limit(1))
    assert len(recent) == 1
    assert recent[0]["ping"] >= datetime.datetime.now() - datetime.timedelta(minutes=1)
    since = recent[0]["ping"] - datetime.timedelta(seconds=60)
    versions = list(
        config.mongos.aggregate(
            [
                {"$match": {"ping": {"$gt": since}}},
                {"$group": {"_id": "$mongoVersion", "num": {"$sum": 1}}},
                {"$sort": {"num": -1}},
            ]
        )
    )
    assert versions == [{"_id": "7.0.12", "num": 2}]
    assert config.settings.find_one({"_id": "balancer"}) is None
    assert router.admin.command("balancerStatus")["inBalancerRound"] is False
    assert list(config.locks.find({"state": {"$eq": 2}})) == []
    databases = list(config.databases.find().sort("name", 1))
    assert [(d["_id"], d["primary"]) for d in databases] == [("app", cluster.shard.name)]
    sharded = list(config.collections.find({"_id": {"$regex": "^config\\."}}).sort("_id", 1))
    assert [c["_id"] for c in sharded] == ["config.system.sessions"]
    assert sharded[0]["key"] == {"_id": 1}
    chunks = list(
        config.chunks.aggregate(
            [
                {"$match": {"$or": [{"uuid": sharded[0]["uuid"]}, {"ns": sharded[0]["_id"]}]}},
                {"$group": {"_id": "$shard", "cnt": {"$sum": 1}}},
                {"$project": {"_id": 0, "shard": "$_id", "nChunks": "$cnt"}},
                {"$sort": {"shard": 1}},
            ]
        )
    )
    assert chunks == [{"shard": cluster.shard.name, "nChunks": 1}]
    assert "shards" in config.list_collection_names()


def test_router_shapes_of_routed_statistics(cluster: ShardedCluster, router: Client) -> None:
    router.app.items.insert_many([{"_id": i} for i in range(5)])
    stats = router.app.command("dbStats")
    (raw,) = stats["raw"].values()
    assert raw["objects"] == stats["objects"] == 5
    coll = router.app.command("collStats", "items")
    assert coll["sharded"] is False and coll["primary"] == cluster.shard.name
    assert coll["shards"][cluster.shard.name]["count"] == 5
    (doc,) = list(router.app.items.aggregate([{"$collStats": {"count": {}}}]))
    assert doc["shard"] == cluster.shard.name and doc["count"] == 5
    plan = router.app.items.find({"_id": 2}).explain()
    assert plan["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"
    (shard_plan,) = plan["queryPlanner"]["winningPlan"]["shards"]
    assert shard_plan["shardName"] == cluster.shard.name
    assert shard_plan["winningPlan"]["stage"] == "IDHACK"
    assert plan["executionStats"]["nReturned"] == 1


# -- the oplog and the replica set config ------------------------------------------------


def test_oplog_entries(client: Client) -> None:
    items = client.app.items
    items.insert_one({"_id": 1, "v": 1})
    items.update_one({"_id": 1}, {"$set": {"v": 2}})
    items.delete_one({"_id": 1})
    oplog = client.local["oplog.rs"]
    entries = list(oplog.find({"ns": "app.items"}))
    assert [e["op"] for e in entries] == ["i", "u", "d"]
    inserted, updated, deleted = entries
    assert inserted["o"] == {"_id": 1, "v": 1}
    assert updated["o2"] == {"_id": 1} and updated["o"]["v"] == 2
    assert deleted["o"] == {"_id": 1}
    for entry in entries:
        assert "_id" not in entry
        assert isinstance(entry["ts"], Timestamp) and isinstance(entry["wall"], datetime.datetime)
        assert entry["v"] == 2 and entry["t"] >= 1
        assert entry["ui"].subtype == 4
    assert inserted["ts"] < updated["ts"] < deleted["ts"]
    (created,) = list(oplog.find({"op": "c", "o.create": "items"}))
    assert created["ns"] == "app.$cmd"
    assert oplog.find_one({"op": "n"})["o"] == {"msg": "new primary"}
    (last,) = list(oplog.find().sort("$natural", -1).limit(1))
    assert last["ts"] == deleted["ts"]
    (first,) = list(oplog.find().sort("$natural", 1).limit(1))
    assert first["ts"] <= inserted["ts"]
    assert len(list(oplog.find(batch_size=2))) == oplog.count_documents({})
    assert [doc["n"] for doc in oplog.aggregate([{"$count": "n"}])] == [
        oplog.estimated_document_count()
    ]


def test_what_rs_print_replication_info_reads(client: Client) -> None:
    client.app.items.insert_one({"x": 1})
    local = client.local
    assert {"oplog.rs", "system.replset"} <= set(local.list_collection_names())
    (info,) = list(local.list_collections(filter={"name": "oplog.rs"}))
    assert info["options"]["capped"] is True
    (stats,) = list(local["oplog.rs"].aggregate([{"$collStats": {"storageStats": {"scale": 1}}}]))
    assert stats["storageStats"]["capped"] is True
    assert stats["storageStats"]["maxSize"] > 0 and stats["storageStats"]["size"] > 0
    assert local["system.replset"].count_documents({}) == 1
    assert local["oplog.rs"].index_information() == {}


def test_system_replset_is_the_config(rs: ReplicaSet, client: Client) -> None:
    config = client.local["system.replset"].find_one()
    assert config is not None
    assert config == client.admin.command("replSetGetConfig")["config"]
    assert config["_id"] == rs.name
    assert [m["host"] for m in config["members"]] == rs.hosts


def test_a_secondary_reads_its_local_database_without_secondary_ok(rs: ReplicaSet) -> None:
    primary = rs.wait_for_primary()
    secondary = rs.secondaries[0]
    writer: Client = MongoClient(rs.uri, **FAST)
    direct: Client = MongoClient(secondary.host, directConnection=True, **FAST)
    try:
        writer.app.items.insert_one({"_id": "x"})
        # A direct connection's default read preference is primary: local is readable anyway.
        oplog = direct.local.get_collection("oplog.rs", read_preference=ReadPreference.PRIMARY)
        assert oplog.find_one({"ns": "app.items", "op": "i"})["o"] == {"_id": "x"}
        (newest,) = list(oplog.find().sort("$natural", -1).limit(1))
        last = newest["ts"]
        assert last <= primary.applied_optime().ts
    finally:
        writer.close()
        direct.close()


def test_a_standalone_has_no_oplog() -> None:
    with Standalone() as server:
        mongo: Client = MongoClient(server.uri, **FAST)
        try:
            mongo.app.items.insert_one({"x": 1})
            assert "oplog.rs" not in mongo.local.list_collection_names()
            assert mongo.local["oplog.rs"].find_one() is None
        finally:
            mongo.close()


# -- replSetGetStatus --------------------------------------------------------------------


def test_repl_set_get_status_fields_tools_read(rs: ReplicaSet, client: Client) -> None:
    client.app.items.insert_one({"x": 1})
    status = client.admin.command("replSetGetStatus")
    primary = rs.wait_for_primary()
    assert status["set"] == rs.name and status["myState"] == 1
    assert status["syncSourceHost"] == "" and status["syncSourceId"] == -1
    assert status["heartbeatIntervalMillis"] == 2000
    assert status["majorityVoteCount"] == 2 and status["writeMajorityCount"] == 2
    optimes = status["optimes"]
    for key in (
        "lastCommittedOpTime",
        "appliedOpTime",
        "durableOpTime",
        "readConcernMajorityOpTime",
    ):
        assert set(optimes[key]) == {"ts", "t"}
    assert optimes["appliedOpTime"]["ts"] == primary.applied_optime().ts
    by_name = {m["name"]: m for m in status["members"]}
    me = by_name[primary.host]
    assert me["self"] is True and me["stateStr"] == "PRIMARY"
    assert "lastHeartbeat" not in me
    for secondary in rs.secondaries:
        entry = by_name[secondary.host]
        assert entry["stateStr"] == "SECONDARY" and entry["health"] == 1.0
        assert set(entry["optime"]) == {"ts", "t"}
        assert isinstance(entry["optimeDate"], datetime.datetime)
        assert set(entry["optimeDurable"]) == {"ts", "t"}
        assert isinstance(entry["lastHeartbeat"], datetime.datetime)
        assert isinstance(entry["lastHeartbeatRecv"], datetime.datetime)
        assert entry["syncSourceHost"] == primary.host
        assert entry["syncSourceId"] == primary.member_id
        assert entry["configVersion"] == rs.set_version and entry["configTerm"] == rs.term
        assert entry["pingMs"] == 0 and entry["uptime"] >= 0


def test_repl_set_get_status_of_an_unreachable_member(rs: ReplicaSet, client: Client) -> None:
    down = rs.secondaries[0]
    rs.kill(down)
    status = client.admin.command("replSetGetStatus")
    (entry,) = [m for m in status["members"] if m["name"] == down.host]
    assert entry["health"] == 0.0
    assert entry["lastHeartbeatRecv"] == datetime.datetime(1970, 1, 1)
