"""The simulator's ``simControl`` command (sim/control.py), sent by pymongo.

Every wait is on the deployment's condition variable with a generous deadline; every
pymongo client is closed.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

import pymongo
from pymongo.errors import OperationFailure

from mongocore.sim import (
    DOWN,
    PRIMARY,
    SECONDARY,
    Member,
    Process,
    ReplicaSet,
    ShardedCluster,
    Standalone,
    User,
)

DEADLINE = 20.0


@contextmanager
def direct(process: Process, **options: Any) -> Iterator[pymongo.MongoClient[dict[str, Any]]]:
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        process.host, directConnection=True, serverSelectionTimeoutMS=10_000, **options
    )
    try:
        yield client
    finally:
        client.close()


def control(process: Process, action: str, **fields: Any) -> dict[str, Any]:
    with direct(process) as client:
        return client.admin.command({"simControl": action, **fields})


def refused(process: Process, action: str, **fields: Any) -> OperationFailure:
    with pytest.raises(OperationFailure) as failure:
        control(process, action, **fields)
    return failure.value


def connection_refused(process: Process) -> bool:
    try:
        with socket.create_connection(process.address, timeout=DEADLINE):
            return False
    except ConnectionRefusedError:
        return True


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    tags = [{"dc": "ny"}, {"dc": "sf"}, {}]
    with ReplicaSet(3, election_delay=0.05, tags=tags) as replica_set:
        yield replica_set


def test_status_lists_every_member(rs: ReplicaSet) -> None:
    primary = rs.wait_for_primary()
    reply = control(rs.members[2], "status")
    assert reply["topology"] == "replicaSet"
    assert reply["setName"] == "rs0"
    assert reply["primary"] == primary.host
    assert reply["members"] == [
        {"host": m.host, "type": "mongod", "state": m.role, "tags": m.tags} for m in rs.members
    ]
    assert reply["members"][0]["tags"] == {"dc": "ny"}


def test_step_down_elects_another_primary(rs: ReplicaSet) -> None:
    old = rs.wait_for_primary()
    reply = control(rs.members[1], "stepDown", secs=30)
    assert (reply["action"], reply["member"]) == ("stepDown", old.host)
    assert rs.wait_for(lambda: rs.primary not in (None, old), DEADLINE)
    assert old.role == SECONDARY


def test_step_down_names_the_primary_or_nothing(rs: ReplicaSet) -> None:
    old = rs.wait_for_primary()
    secondary = rs.secondaries[0]
    failure = refused(rs.members[0], "stepDown", member=secondary.host)
    assert failure.code == 2
    assert f"{secondary.host} is not the primary" in str(failure)
    assert refused(rs.members[0], "stepDown", secs=0).code == 2
    assert rs.primary is old  # nothing changed


def test_kill_and_restart_another_member(rs: ReplicaSet) -> None:
    victim = rs.members[2]
    assert control(rs.members[0], "kill", member=victim.host)["member"] == victim.host
    assert victim.role == DOWN and connection_refused(victim)
    # Named by 127.0.0.1:<port> too.
    control(rs.members[1], "restart", member=f"127.0.0.1:{victim.port}")
    assert victim.alive and victim.role == SECONDARY
    failure = refused(rs.members[1], "restart", member=victim.host)
    assert "is running; kill it first" in str(failure)


def test_a_member_killing_itself_replies_first(rs: ReplicaSet) -> None:
    primary = rs.wait_for_primary()
    reply = control(primary, "kill", member=primary.host)
    assert (reply["ok"], reply["member"]) == (1.0, primary.host)
    assert rs.wait_for(lambda: primary.role == DOWN, DEADLINE)
    assert rs.wait_for(lambda: rs.primary not in (None, primary), DEADLINE)


def test_partition_and_heal(rs: ReplicaSet) -> None:
    primary = rs.wait_for_primary()
    control(rs.members[1], "partition", member=primary.host)
    assert primary.partition_mode == "refuse" and connection_refused(primary)
    assert rs.wait_for(lambda: rs.primary not in (None, primary), DEADLINE)
    status = control(rs.members[1], "status")
    entry = next(e for e in status["members"] if e["host"] == primary.host)
    assert entry["partitioned"] == "refuse"
    control(rs.members[1], "heal", member=primary.host)
    assert primary.partition_mode is None
    with direct(primary) as client:
        assert client.admin.command("ping")["ok"] == 1.0
    assert refused(primary, "partition", member=primary.host, mode="cut").code == 2
    other = next(m for m in rs.members if m not in (primary, rs.primary))
    with direct(other) as client:
        # Cut off once it has replied; healed before the client closes (and ends its
        # sessions there).
        client.admin.command({"simControl": "partition", "member": other.host, "mode": "drop"})
        assert rs.wait_for(lambda: other.partition_mode == "drop", DEADLINE)
        control(primary, "heal", member=other.host)


def test_freeze_and_elect(rs: ReplicaSet) -> None:
    old = rs.wait_for_primary()
    ny, sf, untagged = rs.members
    assert old is ny
    control(ny, "freeze", member=untagged.host, secs=60)
    control(ny, "elect", member=sf.host)
    assert rs.primary is sf and old.role == SECONDARY
    control(sf, "freeze", member=ny.host, secs=60)
    control(ny, "stepDown")  # sf may not stand again for 60 seconds
    # Everyone is frozen or stepped down; unfreezing untagged lets it win, where ny
    # (the lowest index) would win if its freeze had not held.
    control(sf, "freeze", member=untagged.host, secs=0)
    assert rs.wait_for(lambda: rs.primary is untagged, DEADLINE)
    failure = refused(sf, "freeze", member=untagged.host)
    assert "needs 'secs'" in str(failure)
    assert refused(sf, "freeze", member=untagged.host, secs=-1).code == 14


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        ({"simControl": "explode"}, 2, "unknown simControl action 'explode'"),
        ({"simControl": "kill"}, 2, "needs 'member'"),
        ({"simControl": "kill", "member": 1}, 14, "must be a host:port string"),
        ({"simControl": "kill", "member": "127.0.0.1:1"}, 2, "no process 127.0.0.1:1"),
    ],
)
def test_bad_requests(rs: ReplicaSet, fields: dict[str, Any], code: int, message: str) -> None:
    with direct(rs.members[0]) as client, pytest.raises(OperationFailure) as failure:
        client.admin.command(fields)
    assert failure.value.code == code
    assert message in str(failure.value)
    assert all(m.alive for m in rs.members)


def test_only_on_admin(rs: ReplicaSet) -> None:
    with direct(rs.members[0]) as client, pytest.raises(OperationFailure) as failure:
        client.app.command({"simControl": "status"})
    assert failure.value.code == 13


def test_needs_authentication_when_there_are_users() -> None:
    with Standalone(users=[User("app", "s3cret")]) as server:
        failure = refused(server.member, "status")
        assert failure.code == 13
        with direct(server.member, username="app", password="s3cret") as client:
            assert client.admin.command({"simControl": "status"})["topology"] == "standalone"


def test_a_standalone_answers_status_only() -> None:
    with Standalone() as server:
        reply = control(server.member, "status")
        assert reply["members"] == [
            {"host": server.member.host, "type": "mongod", "state": "RUNNING"}
        ]
        failure = refused(server.member, "kill", member=server.member.host)
        assert "needs a replica set or a sharded cluster" in str(failure)
        assert server.member.alive


def test_a_mongos_answers_for_the_shard_and_the_routers() -> None:
    with ShardedCluster(2, shard_members=2, election_delay=0.05) as cluster:
        first, second = cluster.mongoses
        shard = cluster.shard
        old: Member = shard.wait_for_primary()
        status = control(first, "status")
        assert status["topology"] == "sharded" and status["setName"] == "shard01"
        assert [e["type"] for e in status["members"]] == ["mongos", "mongos", "mongod", "mongod"]
        assert control(first, "stepDown")["member"] == old.host
        assert shard.wait_for(lambda: shard.primary not in (None, old), DEADLINE)
        control(first, "kill", member=second.host)
        assert not second.alive and connection_refused(second)
        assert control(first, "status")["members"][1]["state"] == DOWN
        control(first, "restart", member=second.host)
        assert second.alive
        failure = refused(first, "elect", member=second.host)
        assert "acts on a replica set member, not a mongos" in str(failure)
        assert shard.primary is not None and shard.primary.role == PRIMARY
