"""configureFailPoint failCommand on the simulator, over the wire and from Python."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from bson import ObjectId

from mongocore.sim import ReplicaSet
from mongocore.sim.codes import CommandError
from mongocore.sim.failpoints import FailPoints, parse_mode
from tests.unit.sim_wire import connect


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(2, election_delay=0.02) as replica_set:
        yield replica_set


def configure(client: object, mode: object, **data: object) -> dict[str, object]:
    return client.command(  # type: ignore[attr-defined,no-any-return]
        "admin", {"configureFailPoint": "failCommand", "mode": mode, "data": data}
    )


def insert(client: object, txn: int | None = None, lsid: object = None) -> dict[str, object]:
    cmd: dict[str, object] = {"insert": "c", "documents": [{"x": 1}]}
    if txn is not None:
        cmd["lsid"] = lsid or {"id": ObjectId().binary}
        cmd["txnNumber"] = txn
    return client.command("db", cmd)  # type: ignore[attr-defined,no-any-return]


def test_times_mode_fails_then_runs(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        reply = configure(client, {"times": 2}, failCommands=["insert"], errorCode=91)
        assert reply == {
            "count": 0,
            "ok": 1.0,
            **{k: reply[k] for k in ("$clusterTime", "operationTime")},
        }
        first = insert(client, txn=1)
        assert (
            first["ok"] == 0 and first["code"] == 91 and first["codeName"] == "ShutdownInProgress"
        )
        assert first["errmsg"] == "Failing command via 'failCommand' failpoint"
        assert first["errorLabels"] == ["RetryableWriteError"]
        # A 4.4+ server adds its topologyVersion to NotPrimary errors, not shutdown ones.
        assert "topologyVersion" not in first
        second = insert(client)
        assert second["code"] == 91 and "errorLabels" not in second  # no txnNumber, no label
        assert insert(client)["n"] == 1
        assert configure(client, "off")["count"] == 2


def test_skip_mode_and_always_on(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        configure(client, {"skip": 1}, failCommands=["find"], errorCode=2, errmsg="boom")
        assert client.command("db", {"find": "c"})["ok"] == 1.0
        failed = client.command("db", {"find": "c"})
        assert failed["code"] == 2 and failed["errmsg"] == "boom"
        assert client.command("db", {"find": "c"})["code"] == 2
        configure(client, "alwaysOn", failCommands=["ping"], errorCode=7)
        assert client.command("admin", {"ping": 1})["code"] == 7
        assert client.command("admin", {"ping": 1})["code"] == 7
        configure(client, "off")
        assert client.command("admin", {"ping": 1})["ok"] == 1.0


def test_explicit_error_labels_replace_the_computed_ones(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        configure(
            client, {"times": 1}, failCommands=["insert"], errorCode=10107, errorLabels=["Custom"]
        )
        assert insert(client, txn=1)["errorLabels"] == ["Custom"]


def test_close_connection(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        configure(client, {"times": 1}, failCommands=["insert"], closeConnection=True)
        client.send_msg("db", {"insert": "c", "documents": [{"x": 1}]})
        assert client.closed_by_peer()
    with connect(rs.members[0]) as client:
        assert client.command("db", {"count": "c"})["n"] == 0  # the write did not run


def test_write_concern_error_is_attached_after_the_write(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        configure(
            client,
            {"times": 1},
            failCommands=["insert"],
            writeConcernError={"code": 91, "errmsg": "Replication is being shut down"},
        )
        reply = insert(client, txn=1)
        assert reply["ok"] == 1.0 and reply["n"] == 1
        assert reply["writeConcernError"] == {
            "code": 91,
            "errmsg": "Replication is being shut down",
        }
        assert reply["errorLabels"] == ["RetryableWriteError"]
        assert client.command("db", {"count": "c"})["n"] == 1


def test_block_connection_then_run(rs: ReplicaSet) -> None:
    primary = rs.members[0]
    with connect(primary) as client:
        configure(client, {"times": 1}, failCommands=["ping"], blockConnection=True, blockTimeMS=10)
        assert client.command("admin", {"ping": 1})["ok"] == 1.0
        assert primary.blocked_operations == 0


def test_blocked_operation_is_visible_while_blocked(rs: ReplicaSet) -> None:
    primary = rs.members[0]
    primary.fail_command("ping", block_time_ms=60_000, mode={"times": 1})
    with connect(primary) as client, connect(primary) as other:
        client.send_msg("admin", {"ping": 1})
        assert rs.wait_for(lambda: primary.blocked_operations == 1)
        # One blocked connection does not hold up the others.
        assert other.command("admin", {"ping": 1})["ok"] == 1.0


def test_app_name_selects_connections(rs: ReplicaSet) -> None:
    primary = rs.members[0]
    primary.fail_command("ping", error_code=8000, app_name="victim")
    with (
        connect(primary, app_name="bystander") as other,
        connect(primary, app_name="victim") as victim,
    ):
        assert other.command("admin", {"ping": 1})["ok"] == 1.0
        assert victim.command("admin", {"ping": 1})["code"] == 8000
    primary.clear_fail_points()


def test_fail_point_on_hello(rs: ReplicaSet) -> None:
    member = rs.members[1]
    with connect(member) as client:
        member.fail_command("hello", error_code=91, mode={"times": 1})
        assert client.command("admin", {"hello": 1})["code"] == 91
        assert client.command("admin", {"hello": 1})["ok"] == 1.0


def test_fail_points_are_per_member_and_reset_by_restart(rs: ReplicaSet) -> None:
    secondary = rs.members[1]
    secondary.fail_command("ping", error_code=7)
    with connect(rs.members[0]) as client:
        assert client.command("admin", {"ping": 1})["ok"] == 1.0
    rs.kill(secondary)
    rs.restart(secondary)
    with connect(secondary) as client:
        assert client.command("admin", {"ping": 1})["ok"] == 1.0


def test_configure_fail_point_validation(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        assert (
            client.command("db", {"configureFailPoint": "failCommand", "mode": "off"})["code"] == 13
        )
        unknown = client.command("admin", {"configureFailPoint": "noSuchPoint", "mode": "off"})
        assert unknown["code"] == 2
        bad_mode = client.command(
            "admin", {"configureFailPoint": "failCommand", "mode": "sometimes"}
        )
        assert bad_mode["code"] == 2
        no_commands = configure(client, "alwaysOn", errorCode=2)
        assert no_commands["code"] == 2


def test_parse_mode() -> None:
    assert parse_mode("alwaysOn") == ("alwaysOn", 0, 1.0)
    assert parse_mode({"times": 3}) == ("times", 3, 1.0)
    assert parse_mode({"times": 0}) == ("off", 0, 1.0)
    assert parse_mode({"skip": 2}) == ("skip", 2, 1.0)
    assert parse_mode({"activationProbability": 0.5}) == ("probability", 0, 0.5)
    for bad in ("never", {"times": -1}, {"times": 1, "skip": 1}, {"activationProbability": 2}):
        with pytest.raises(CommandError):
            parse_mode(bad)  # type: ignore[arg-type]


def test_fail_points_count_only_matching_commands() -> None:
    points = FailPoints()
    points.configure("failCommand", {"times": 1}, {"failCommands": ["insert"], "errorCode": 1})
    assert points.fail_command("find", None) is None
    assert points.fail_command("insert", None, internal=True) is None
    action = points.fail_command("insert", None)
    assert action is not None and action.error is not None and action.error.code == 1
    assert points.fail_command("insert", None) is None
    point = points.get("failCommand")
    assert point is not None and point.entered == 1 and not point.active


def test_fail_commands_match_a_command_by_any_of_its_names() -> None:
    # A server matches "ismaster" against the "isMaster" of a handshake (one command,
    # two names); "hello" is another command.
    points = FailPoints()
    points.configure("failCommand", "alwaysOn", {"failCommands": ["ismaster"], "errorCode": 1})
    assert points.fail_command("isMaster", None) is not None
    assert points.fail_command("ismaster", None) is not None
    assert points.fail_command("hello", None) is None
    points.configure("failCommand", "alwaysOn", {"failCommands": ["isMaster"], "errorCode": 1})
    assert points.fail_command("ismaster", None) is not None


def test_concurrent_blocked_commands_all_finish_on_stop() -> None:
    rs = ReplicaSet(1, election_delay=0.02).start()
    member = rs.members[0]
    member.fail_command("ping", block_time_ms=600_000)
    clients = [connect(member) for _ in range(3)]
    try:
        for client in clients:
            client.send_msg("admin", {"ping": 1})
        assert rs.wait_for(lambda: member.blocked_operations == 3)
        stopper = threading.Thread(target=rs.stop, name="test-stop")
        stopper.start()
        stopper.join(timeout=30)
        assert not stopper.is_alive()
        assert all(client.closed_by_peer() for client in clients)
    finally:
        for client in clients:
            client.close()
        rs.stop()
