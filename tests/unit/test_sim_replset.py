"""The simulated replica set's state machine: elections, kills, partitions, reconfig, lag."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from bson import ObjectId

from mongocore.sim import DOWN, PRIMARY, REMOVED, SECONDARY, ReplicaSet, election_id
from tests.unit.sim_wire import RawClient, connect

SECONDARY_OK = {"$readPreference": {"mode": "secondaryPreferred"}}


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(3, election_delay=0.02) as replica_set:
        yield replica_set


class FakeClock:
    """Wall-clock time under the test's control, for lag."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_step_down_elects_a_new_primary_with_a_higher_election_id(rs: ReplicaSet) -> None:
    old = rs.primary
    assert old is not None and rs.term == 1
    counters = [m.counter for m in rs.members]
    stepped = rs.step_down(30)
    assert stepped is old and old.role == SECONDARY
    assert all(m.counter > c for m, c in zip(rs.members, counters))
    new = rs.wait_for_primary()
    assert new is not old and rs.term == 2
    with connect(new) as client:
        reply = client.command("admin", {"hello": 1})
    assert reply["isWritablePrimary"] is True
    assert reply["electionId"] == election_id(2) > election_id(1)
    assert reply["electionId"] == ObjectId("7fffffff0000000000000002")


def test_killing_the_primary_elects_another(rs: ReplicaSet) -> None:
    old = rs.primary
    assert old is not None
    rs.kill(old)
    assert old.role == DOWN
    new = rs.wait_for_primary()
    assert new is not old
    rs.restart(old)
    assert old.role == SECONDARY
    assert rs.primary is new


def test_losing_the_majority_steps_the_primary_down(rs: ReplicaSet) -> None:
    primary, second, third = rs.members
    rs.kill(second)
    assert rs.primary is primary
    rs.kill(third)
    assert primary.role == SECONDARY
    assert rs.primary is None
    rs.restart(third)
    assert rs.wait_for_primary() in (primary, third)


def test_partition_refuse_and_heal(rs: ReplicaSet) -> None:
    member = rs.members[2]
    rs.partition(member, "refuse")
    with pytest.raises(OSError):
        socket.create_connection(member.address, timeout=5).close()
    rs.heal(member)
    with connect(member) as client:
        assert client.command("admin", {"ping": 1})["ok"] == 1.0


def test_partition_drop_never_answers(rs: ReplicaSet) -> None:
    member = rs.members[2]
    with connect(member, timeout=0.2) as client:
        rs.partition(member, "drop")
        client.send_msg("admin", {"ping": 1})
        with pytest.raises(socket.timeout):
            client.read()
    rs.heal(member)
    with connect(member) as client:
        assert client.command("admin", {"ping": 1})["ok"] == 1.0


def test_partitioned_primary_steps_down(rs: ReplicaSet) -> None:
    old = rs.primary
    assert old is not None
    rs.partition(old, "refuse")
    assert old.role == SECONDARY
    assert rs.wait_for_primary() is not old
    rs.heal(old)


def test_a_partitioned_primary_steps_down_before_it_drops_connections(
    rs: ReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches: connections closed (or the listener closed) while the member is still
    primary, so that a client which sees its connection drop can still find that
    member primary (and a write blocked on it not yet interrupted)."""
    old = rs.primary
    assert old is not None
    epoch = old.state_epoch
    seen: list[tuple[str, str, bool]] = []

    def recorder(name: str, original: Any) -> Any:
        def record() -> None:
            seen.append((name, old.role, old.state_epoch > epoch))
            original()

        return record

    server = old.server
    monkeypatch.setattr(server, "close_listener", recorder("listener", server.close_listener))
    monkeypatch.setattr(
        server, "close_connections", recorder("connections", server.close_connections)
    )
    rs.partition(old, "refuse")
    assert seen == [("listener", SECONDARY, True), ("connections", SECONDARY, True)]
    rs.heal(old)


def test_a_bad_partition_mode_changes_nothing(rs: ReplicaSet) -> None:
    old = rs.primary
    assert old is not None
    with pytest.raises(ValueError, match="partition mode"):
        rs.partition(old, "cut")
    assert rs.primary is old and old.partition_mode is None


def test_reconfig_adds_and_removes_members(rs: ReplicaSet) -> None:
    primary = rs.primary
    assert primary is not None
    with connect(primary) as client:
        client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
    (added,) = rs.reconfig(add=1)
    assert rs.set_version == 2 and added.role == SECONDARY
    with connect(primary) as client:
        hello = client.command("admin", {"hello": 1})
        assert added.host in hello["hosts"] and hello["setVersion"] == 2
    with connect(added) as client:
        found = client.command("db", {"find": "c", **SECONDARY_OK})
        assert found["cursor"]["firstBatch"] == [{"_id": 1}]  # initial sync copied the data
    removed = rs.members[1]
    rs.reconfig(remove=[removed])
    assert removed.role == REMOVED and rs.set_version == 3
    with connect(removed) as client:
        hello = client.command("admin", {"hello": 1})
        assert hello["isreplicaset"] is True and "setName" not in hello
    with connect(primary) as client:
        assert removed.host not in client.command("admin", {"hello": 1})["hosts"]
    with pytest.raises(ValueError):
        rs.reconfig(remove=[primary])


def test_writes_and_reads_by_role(rs: ReplicaSet) -> None:
    with connect(rs.members[1]) as client:
        write = client.command("db", {"insert": "c", "documents": [{"x": 1}]})
        assert write["ok"] == 0 and write["code"] == 10107
        assert write["codeName"] == "NotWritablePrimary"
        assert write["topologyVersion"]["processId"] == rs.members[1].process_id
        read = client.command("db", {"find": "c"})
        assert read["code"] == 13435 and read["codeName"] == "NotPrimaryNoSecondaryOk"
        primary_mode = client.command("db", {"find": "c", "$readPreference": {"mode": "primary"}})
        assert primary_mode["code"] == 13435
        assert client.command("db", {"find": "c", **SECONDARY_OK})["ok"] == 1.0
        assert client.command("db", {"count": "c", **SECONDARY_OK})["n"] == 0
        unknown = client.command("db", {"frobnicate": 1})
        assert unknown["code"] == 59 and unknown["codeName"] == "CommandNotFound"


def test_repl_set_commands_over_the_wire(rs: ReplicaSet) -> None:
    primary = rs.primary
    assert primary is not None
    with connect(rs.members[1]) as client:
        status = client.command("admin", {"replSetGetStatus": 1})
        assert status["set"] == "rs0" and status["myState"] == 2
        assert [m["stateStr"] for m in status["members"]] == [PRIMARY, SECONDARY, SECONDARY]
        assert [m.get("self", False) for m in status["members"]] == [False, True, False]
        assert client.command("admin", {"replSetStepDown": 10})["code"] == 10107
        assert client.command("admin", {"replSetFreeze": 60})["ok"] == 1.0
        config = client.command("admin", {"replSetGetConfig": 1})["config"]
        assert config["_id"] == "rs0" and len(config["members"]) == 3
    with connect(primary) as client:
        assert client.command("admin", {"replSetFreeze": 10})["code"] == 95
        assert client.command("db", {"replSetStepDown": 10})["code"] == 13
        assert client.command("admin", {"replSetStepDown": 10})["ok"] == 1.0
    # members[1] is frozen, members[0] stepped down: members[2] wins.
    assert rs.wait_for_primary() is rs.members[2]


def test_step_down_refused_without_an_electable_secondary() -> None:
    with ReplicaSet(1, election_delay=0.02) as rs:
        primary = rs.members[0]
        with connect(primary) as client:
            refused = client.command("admin", {"replSetStepDown": 60})
            assert refused["code"] == 262
            forced = client.command(
                "admin", {"replSetStepDown": 1, "secondaryCatchUpPeriodSecs": 0, "force": True}
            )
            assert forced["ok"] == 1.0
        # The only member may stand again once its step-down period is over.
        assert rs.wait_for_primary(timeout=30) is primary


def test_blocked_write_is_interrupted_by_step_down(rs: ReplicaSet) -> None:
    primary = rs.primary
    assert primary is not None
    primary.fail_command("insert", block_time_ms=60_000, mode={"times": 1})
    replies: list[dict[str, object]] = []
    with connect(primary) as client:
        lsid = {"id": ObjectId().binary}

        def insert() -> None:
            replies.append(
                client.command(
                    "db", {"insert": "c", "documents": [{"x": 1}], "lsid": lsid, "txnNumber": 1}
                )
            )

        writer = threading.Thread(target=insert, name="test-blocked-insert")
        writer.start()
        assert rs.wait_for(lambda: primary.blocked_operations == 1)
        rs.step_down(10)
        writer.join(timeout=30)
        assert not writer.is_alive()
    reply = replies[0]
    assert reply["code"] == 11602 and reply["codeName"] == "InterruptedDueToReplStateChange"
    assert reply["errorLabels"] == ["RetryableWriteError"]


def test_secondary_sees_writes_after_its_lag() -> None:
    clock = FakeClock()
    with ReplicaSet(2, lag=[0.0, 5.0], election_delay=0.02, clock=clock) as rs:
        primary, secondary = rs.members
        with connect(primary) as client:
            client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
            primary_optime = client.command("admin", {"hello": 1})["lastWrite"]["opTime"]
        with connect(secondary) as client:
            assert client.command("db", {"find": "c", **SECONDARY_OK})["cursor"]["firstBatch"] == []
            behind = client.command("admin", {"hello": 1})["lastWrite"]["opTime"]
            assert behind["ts"] < primary_optime["ts"]
            clock.now += 5.0
            batch = client.command("db", {"find": "c", **SECONDARY_OK})["cursor"]["firstBatch"]
            assert batch == [{"_id": 1}]
            caught_up = client.command("admin", {"hello": 1})["lastWrite"]["opTime"]
            assert caught_up == primary_optime


def test_lagging_member_elected_primary_has_every_write() -> None:
    clock = FakeClock()
    with ReplicaSet(2, lag=10.0, election_delay=0.02, clock=clock) as rs:
        first, second = rs.members
        with connect(first) as client:
            client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
        rs.elect(second)
        with connect(second) as client:
            batch = client.command("db", {"find": "c"})["cursor"]["firstBatch"]
        assert batch == [{"_id": 1}]


def test_after_cluster_time_waits_for_the_lagging_secondary() -> None:
    with ReplicaSet(2, lag=[0.0, 0.05], election_delay=0.02) as rs:
        primary, secondary = rs.members
        with connect(primary) as client:
            written = client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
        with connect(secondary) as client:
            reply = client.command(
                "db",
                {
                    "find": "c",
                    "readConcern": {"afterClusterTime": written["operationTime"]},
                    **SECONDARY_OK,
                },
            )
        assert reply["cursor"]["firstBatch"] == [{"_id": 1}]


def test_stop_joins_connection_threads_blocked_in_awaitable_hello() -> None:
    rs = ReplicaSet(1, election_delay=0.02).start()
    client = RawClient(rs.members[0].address)
    try:
        first = client.handshake()
        client.send_msg(
            "admin",
            {"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 600_000},
        )
        rs.stop()
        assert client.closed_by_peer()
    finally:
        client.close()
        rs.stop()
