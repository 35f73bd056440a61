"""A simulated deployment advertises the host name its user chooses (``hostname=``,
``MemberConfig(host=...)``), as a mongod started with ``--bind_ip localhost`` and a
replica set config naming ``localhost:<port>`` does, while it listens on 127.0.0.1."""

from __future__ import annotations

import pymongo
import pytest

from mongocore.sim import MemberConfig, ReplicaSet, ShardedCluster, Standalone
from tests.unit.sim_wire import connect


def test_a_replica_set_on_localhost() -> None:
    with ReplicaSet(2, election_delay=0.02, hostname="localhost") as rs:
        ports = [m.port for m in rs.members]
        expected = [f"localhost:{port}" for port in ports]
        assert rs.hosts == expected
        assert rs.uri == f"mongodb://{','.join(expected)}/?replicaSet=rs0"
        primary = rs.wait_for_primary()
        with connect(primary) as raw:
            hello = raw.command("admin", {"hello": 1})
            assert hello["me"] == primary.host == f"localhost:{primary.port}"
            assert hello["hosts"] == expected and hello["primary"] == primary.host
            config = raw.command("admin", {"replSetGetConfig": 1})["config"]
            assert [m["host"] for m in config["members"]] == expected
        client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(
            rs.uri, serverSelectionTimeoutMS=10_000
        )
        try:
            client.db.c.insert_one({"_id": 1})
            assert client.db.c.find_one() == {"_id": 1}
            assert client.primary == ("localhost", primary.port)
        finally:
            client.close()


def test_a_member_named_without_a_port_gets_its_own() -> None:
    with ReplicaSet([MemberConfig(host="localhost"), MemberConfig()], election_delay=0.02) as rs:
        first, second = rs.members
        assert first.host == f"localhost:{first.port}"
        assert second.host == f"127.0.0.1:{second.port}"


def test_a_standalone_and_a_cluster_on_localhost() -> None:
    with Standalone(hostname="localhost") as standalone:
        assert standalone.uri == f"mongodb://localhost:{standalone.member.port}/"
        with connect(standalone.member) as raw:
            assert raw.command("admin", {"serverStatus": 1})["host"] == standalone.member.host
    cluster = ShardedCluster(1, shard_members=1, election_delay=0.02, hostname="localhost")
    with cluster:
        (mongos,) = cluster.mongoses
        assert cluster.uri == f"mongodb://localhost:{mongos.port}/"
        assert cluster.shard.members[0].host.startswith("localhost:")


def test_a_hostname_is_a_name_without_a_port() -> None:
    for wrong in ("localhost:27017", "", "a,b"):
        with pytest.raises(ValueError, match="without a port"):
            ReplicaSet(1, hostname=wrong)
