"""Snapshot sessions (Snapshot Reads spec): the options, the read concern every command
of the session carries, the snapshot time taken from the first read's reply, and the
client-side error on a server older than 5.0; and the simulated server's side
(sim/snapshot_reads.py). tests/integration/test_snapshot_sessions_sim.py runs them
against simulated deployments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bson import Int64, Timestamp

from mongocore.api.client import Client
from mongocore.api.client_session import SessionOptions
from mongocore.errors import ConfigurationError
from mongocore.sim import CommandError
from mongocore.sim.snapshot_reads import add_at_cluster_time, check_snapshot_read

AT = Timestamp(1_700_000_000, 7)


@pytest.fixture
def client() -> Iterator[Client]:
    # No server: nothing here needs one (the client never connects).
    with Client("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100") as created:
        yield created


def test_snapshot_and_causal_consistency_together_are_refused(client: Client) -> None:
    with pytest.raises(ConfigurationError, match="causal_consistency"):
        SessionOptions(causal_consistency=True, snapshot=True)
    with pytest.raises(ConfigurationError):
        client.start_session(causal_consistency=True, snapshot=True)
    with client.start_session(snapshot=True) as session:
        assert session.options.snapshot is True
        assert session.causal_consistency is False  # not causally consistent by default
    with client.start_session(causal_consistency=False, snapshot=True) as session:
        assert session.causal_consistency is False


def test_every_command_gets_read_concern_snapshot(client: Client) -> None:
    with client.start_session(snapshot=True) as session:
        insert: dict[str, Any] = {"insert": "c", "documents": [{}]}
        session._apply_snapshot(insert, 21)
        assert insert["readConcern"] == {"level": "snapshot"}  # so the server refuses it
        given = {"level": "majority"}
        find: dict[str, Any] = {"find": "c", "readConcern": given}
        session._apply_snapshot(find, 21)
        assert find["readConcern"] == {"level": "snapshot"}
        assert given == {"level": "majority"}  # the caller's document is not changed
        get_more: dict[str, Any] = {"getMore": Int64(5), "collection": "c"}
        session._apply_snapshot(get_more, 21)
        assert "readConcern" not in get_more  # a cursor keeps its own read concern


def test_the_first_reads_at_cluster_time_is_kept(client: Client) -> None:
    with client.start_session(snapshot=True) as session:
        session._process_reply({"ok": 0, "atClusterTime": Timestamp(1, 1)})  # an error
        assert session._snapshot_time is None
        session._process_reply({"ok": 1, "cursor": {"id": Int64(0), "atClusterTime": AT}})
        session._process_reply({"ok": 1, "atClusterTime": Timestamp(AT.time + 9, 1)})
        assert session._snapshot_time == AT
        command: dict[str, Any] = {"distinct": "c", "key": "x"}
        session._apply_snapshot(command, 21)
        assert command["readConcern"] == {"level": "snapshot", "atClusterTime": AT}
    with client.start_session(snapshot=True) as other:
        other._process_reply({"ok": 1, "values": [], "atClusterTime": AT})  # distinct
        assert other._snapshot_time == AT


def test_a_server_older_than_5_0_is_a_client_error(client: Client) -> None:
    with (
        client.start_session(snapshot=True) as session,
        pytest.raises(ConfigurationError, match=r"Snapshot reads require MongoDB 5\.0"),
    ):
        session._apply_snapshot({"find": "c"}, 12)
    with client.start_session() as plain:
        command: dict[str, Any] = {"find": "c"}
        plain._apply_snapshot(command, 12)  # not a snapshot session: nothing to do
        assert "readConcern" not in command


# --- the simulated server -----------------------------------------------------------------


def test_sim_refuses_snapshot_where_a_server_would() -> None:
    snapshot = {"readConcern": {"level": "snapshot"}}
    check_snapshot_read("find", snapshot, supported=True)
    for name, supported in [("insert", True), ("listCollections", True), ("find", False)]:
        with pytest.raises(CommandError) as info:
            check_snapshot_read(name, snapshot, supported=supported)
        assert info.value.code == 72
    both = {"readConcern": {"level": "snapshot", "atClusterTime": AT, "afterClusterTime": AT}}
    with pytest.raises(CommandError):
        check_snapshot_read("find", both, supported=True)
    check_snapshot_read("insert", {"readConcern": {"level": "majority"}}, supported=False)


def test_sim_reports_the_snapshot_time() -> None:
    cmd = {"readConcern": {"level": "snapshot"}}
    reply: dict[str, Any] = {"ok": 1.0, "cursor": {"id": Int64(0), "firstBatch": []}}
    add_at_cluster_time("find", cmd, reply, AT)
    assert reply["cursor"]["atClusterTime"] == AT
    distinct: dict[str, Any] = {"ok": 1.0, "values": []}
    given = {"readConcern": {"level": "snapshot", "atClusterTime": Timestamp(5, 1)}}
    add_at_cluster_time("distinct", given, distinct, AT)
    assert distinct["atClusterTime"] == Timestamp(5, 1)
