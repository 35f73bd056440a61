"""Cursors behind a load balancer whose getMore fails (Load Balancer spec, "Behaviour
With Cursors", as the load-balancers suite's cursors tests and pymongo have it): the
failed cursor is closed at once, a command error's killCursors goes over the cursor's
own pinned connection, a network error sends none, and the connection is back in the
pool before the error reaches the caller; close() afterwards sends nothing more.
The same for a command cursor (aggregate), and for a change stream that resumes:
the old cursor is killed over its connection before the stream reopens.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca")

from mongocore.api.client import Client
from mongocore.core.events import ConnectionCheckedInEvent, ConnectionCheckedOutEvent
from mongocore.errors import NetworkError, OperationFailure
from mongocore.sim import LoadBalanced
from tests.integration.sim_client import Recorder, configure_fail_point, sim_client


class _CheckedOut(Recorder):
    """A Recorder that also counts the connections checked out of the pool."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self.checked_out = 0
        #: Checkouts since the last reset(): a pinned cursor checks out once.
        self.checkouts = 0

    def reset(self) -> None:
        self.clear()
        with self._lock:
            self.checkouts = 0

    def connection_checked_out(self, event: ConnectionCheckedOutEvent) -> None:
        with self._lock:
            self.checked_out += 1
            self.checkouts += 1

    def connection_checked_in(self, event: ConnectionCheckedInEvent) -> None:
        with self._lock:
            self.checked_out -= 1


@pytest.fixture
def client(lb: LoadBalanced) -> Iterator[tuple[Client, _CheckedOut]]:
    recorder = _CheckedOut()
    with sim_client(lb.uri, recorder) as connected:
        collection = connected["lb_cursors"]["c"]
        collection.drop()
        collection.insert_many([{"_id": i} for i in range(5)])
        recorder.clear()
        yield connected, recorder


def _open(client: Client, kind: str) -> Any:
    collection = client["lb_cursors"]["c"]
    if kind == "find":
        return collection.find({}, batch_size=2)
    return collection.aggregate([{"$sort": {"_id": 1}}], batch_size=2)


@pytest.mark.parametrize("kind", ["find", "aggregate"])
def test_a_command_error_kills_the_cursor_over_its_connection_and_returns_it(
    client: tuple[Client, _CheckedOut], kind: str
) -> None:
    """The broken variants this catches: the connection released before the
    killCursors (which then goes over another connection, to whichever mongos that
    reaches), or kept checked out after the cursor failed."""
    connected, recorder = client
    configure_fail_point(connected, {"times": 1}, {"failCommands": ["getMore"], "errorCode": 7})
    recorder.reset()
    cursor = _open(connected, kind)
    assert [next(cursor), next(cursor)] == [{"_id": 0}, {"_id": 1}]
    assert recorder.checked_out == 1  # pinned to the cursor
    with pytest.raises(OperationFailure) as failed:
        next(cursor)
    assert failed.value.code == 7
    assert recorder.checked_out == 0
    opened = recorder.started_of(kind)[0]
    (get_more,) = recorder.started_of("getMore")
    (kill,) = recorder.started_of("killCursors")
    assert get_more.connection_id == kill.connection_id == opened.connection_id
    cursor.close()
    assert len(recorder.started_of("killCursors")) == 1
    assert recorder.checked_out == 0
    # One checkout for the cursor's life: its find (or aggregate), getMore and
    # killCursors all went over the connection pinned to it.
    assert recorder.checkouts == 1


@pytest.mark.parametrize("kind", ["find", "aggregate"])
def test_a_network_error_returns_the_connection_without_killcursors(
    client: tuple[Client, _CheckedOut], kind: str
) -> None:
    connected, recorder = client
    configure_fail_point(
        connected, {"times": 1}, {"failCommands": ["getMore"], "closeConnection": True}
    )
    recorder.reset()
    cursor = _open(connected, kind)
    assert [next(cursor), next(cursor)] == [{"_id": 0}, {"_id": 1}]
    with pytest.raises(NetworkError):
        next(cursor)
    assert recorder.checked_out == 0
    cursor.close()
    assert recorder.started_of("killCursors") == []
    assert recorder.checked_out == 0
    assert recorder.checkouts == 1


def test_a_resuming_change_stream_kills_its_old_cursor_over_its_connection(
    client: tuple[Client, _CheckedOut],
) -> None:
    connected, recorder = client
    collection = connected["lb_cursors"]["c"]
    configure_fail_point(
        connected,
        {"times": 1},
        {
            "failCommands": ["getMore"],
            "errorCode": 6,  # HostUnreachable, which the server labels resumable
            "errorLabels": ["ResumableChangeStreamError"],
        },
    )
    recorder.reset()
    with collection.watch() as stream:
        assert recorder.checked_out == 1
        assert stream.try_next() is None  # the getMore failed; the stream resumed
        first, second = recorder.started_of("aggregate")
        (kill,) = recorder.started_of("killCursors")
        assert kill.connection_id == first.connection_id
        assert kill.command["cursors"] == [
            recorder.succeeded_of("aggregate")[0].reply["cursor"]["id"]
        ]
        assert recorder.checked_out == 1  # the resumed stream's own cursor
        assert second.command_name == "aggregate"
        # The first cursor's aggregate, getMore and killCursors: one checkout; the
        # resumed stream's aggregate: the second.
        assert recorder.checkouts == 2
    assert recorder.checked_out == 0
