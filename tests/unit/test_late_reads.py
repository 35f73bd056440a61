"""A read whose deadline passed before its thread ran again (mongocore.io.deadlines):
what had arrived by then is read, and only an empty socket is a timeout.

Under CPU contention a thread may run again long after its reply arrived; a monitor
that then checked its deadline against the clock alone reported a server that had
answered in time as timed out (server Unknown, pool cleared). The tests place the
reply in the socket first and make the deadline pass before the read, so they never
depend on timing.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Optional

import pytest

from mongocore.core.address import Address
from mongocore.core.wire import MORE_TO_COME, encode_op_msg
from mongocore.errors import NetworkTimeout
from mongocore.io.connection import Connection
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.counters import next_request_id
from mongocore.io.deadlines import recv_exactly, recv_some

ADDRESS = Address("db", 27017)
#: A deadline already in the past: the read is "late".
PASSED = -1.0


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def test_recv_some_after_its_deadline_takes_what_arrived(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    theirs.sendall(b"reply")
    assert recv_some(ours, 16, time.monotonic() + PASSED) == b"reply"


def test_recv_exactly_after_its_deadline_takes_what_arrived(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    theirs.sendall(b"-body")
    assert bytes(recv_exactly(ours, 9, time.monotonic() + PASSED, b"head")) == b"head-body"


def test_a_late_read_with_nothing_there_times_out(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """socket.timeout, as a wait that ran out raises, never the BlockingIOError of the
    read that did not wait (which the connection would report as a network error)."""
    ours, theirs = pair
    with pytest.raises(socket.timeout):
        recv_some(ours, 16, time.monotonic() + PASSED)
    theirs.sendall(b"part")
    with pytest.raises(socket.timeout):
        recv_exactly(ours, 16, time.monotonic() + PASSED)


class _LateSocket:
    """A socket whose wait runs out although the data arrives meanwhile: every read
    that waits times out, a read that does not wait finds the data (the thread was
    woken at its deadline and ran again only after the reply came)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._timeout: Optional[float] = None

    def gettimeout(self) -> Optional[float]:
        return self._timeout

    def settimeout(self, timeout: Optional[float]) -> None:
        self._timeout = timeout

    def recv(self, size: int) -> bytes:
        if self._timeout != 0.0:
            raise socket.timeout("timed out")
        data, self._data = self._data[:size], self._data[size:]
        return data

    def recv_into(self, buffer: memoryview) -> int:
        data = self.recv(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def test_a_monitors_wait_that_ran_out_looks_once_more() -> None:
    late = _LateSocket(b"0123456789")
    deadline = time.monotonic() + 30  # far away: the wait itself ran out
    assert recv_some(late, 4, deadline, look_again=True) == b"0123"  # type: ignore[arg-type]
    view = recv_exactly(late, 6, deadline, look_again=True)  # type: ignore[arg-type]
    assert bytes(view) == b"456789"


def test_an_applications_wait_that_ran_out_is_final() -> None:
    """Without look_again (an application connection's reads) a server slower than
    the timeout is a timeout, however late the thread runs: the reply that came
    after the wait ran out is not taken."""
    late = _LateSocket(b"0123456789")
    deadline = time.monotonic() + 30
    with pytest.raises(socket.timeout):
        recv_some(late, 4, deadline)  # type: ignore[arg-type]
    with pytest.raises(socket.timeout):
        recv_exactly(late, 6, deadline)  # type: ignore[arg-type]


def _monitoring_connection(sock: socket.socket) -> Connection:
    connection = Connection(
        sock,
        ADDRESS,
        ConnectionSettings(connect_timeout=5.0, socket_timeout=5.0),
        monitoring=True,
    )
    connection.max_wire_version = 21  # as after a handshake with a 7.0 server: OP_MSG
    return connection


def test_a_stream_reply_read_after_its_timeout_is_a_reply(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """The monitor's case: the next streamed hello reply is already there when its
    read starts with no time left (timeout 0 stands for a thread that ran late)."""
    ours, theirs = pair
    connection = _monitoring_connection(ours)
    request_id = next_request_id()
    first = next_request_id()
    theirs.sendall(
        encode_op_msg({"n": 1, "ok": 1}, first, response_to=request_id, flag_bits=MORE_TO_COME)
        + encode_op_msg({"n": 2, "ok": 1}, next_request_id(), response_to=first)
    )
    reply = connection.command("admin", {"hello": 1}, exhaust_allowed=True, request_id=request_id)
    assert reply["n"] == 1 and connection.more_to_come()
    assert connection.receive(0.0)["n"] == 2
    assert not connection.more_to_come()
    connection.close("test over")


def test_a_late_read_that_finds_nothing_is_a_network_timeout(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    connection = _monitoring_connection(ours)
    request_id = next_request_id()
    theirs.sendall(
        encode_op_msg(
            {"n": 1, "ok": 1}, next_request_id(), response_to=request_id, flag_bits=MORE_TO_COME
        )
    )
    connection.command("admin", {"hello": 1}, exhaust_allowed=True, request_id=request_id)
    with pytest.raises(NetworkTimeout):
        connection.receive(0.0)
    assert connection.closed


@pytest.fixture
def tls_pair() -> Iterator[tuple[ssl.SSLSocket, ssl.SSLSocket]]:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(server_context)
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client_context)
    ours, theirs = socket.socketpair()
    server = server_context.wrap_socket(theirs, server_side=True, do_handshake_on_connect=False)
    handshake = threading.Thread(target=server.do_handshake)
    handshake.start()
    client = client_context.wrap_socket(ours, server_hostname="localhost")
    handshake.join()
    yield client, server
    client.close()
    server.close()


def test_a_late_tls_read_takes_what_arrived_and_times_out_on_nothing(
    tls_pair: tuple[ssl.SSLSocket, ssl.SSLSocket],
) -> None:
    """A TLS socket that has nothing to read says so with SSLWantReadError: a
    timeout too, never a network error."""
    ours, theirs = tls_pair
    with pytest.raises(socket.timeout):
        recv_some(ours, 16, time.monotonic() + PASSED)
    theirs.sendall(b"reply")
    # The record may take a moment to cross the socket pair: wait for it to be
    # readable (no deadline involved), then read it late.
    select.select([ours], [], [], 30)
    assert recv_some(ours, 16, time.monotonic() + PASSED) == b"reply"


class _LateServerSocket(_LateSocket):
    """A _LateSocket a Connection can use: sends go nowhere, closing does nothing."""

    def send(self, data: bytes) -> int:
        return len(data)

    def sendall(self, data: bytes) -> None:
        pass

    def shutdown(self, how: int) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.parametrize("monitoring", [True, False], ids=["monitoring", "application"])
def test_only_a_monitoring_connection_looks_again_after_its_wait(monitoring: bool) -> None:
    """The reply came while the thread waited to run again after its wait ran out: a
    monitor takes it, an application's command times out. Catches: the connection
    not telling its reads which it is."""
    request_id = next_request_id()
    reply = encode_op_msg({"ok": 1, "n": 1}, next_request_id(), response_to=request_id)
    connection = Connection(
        _LateServerSocket(reply),  # type: ignore[arg-type]
        ADDRESS,
        ConnectionSettings(connect_timeout=30.0, socket_timeout=30.0),
        monitoring=monitoring,
    )
    connection.max_wire_version = 21
    if monitoring:
        assert connection.command("admin", {"hello": 1}, request_id=request_id)["n"] == 1
    else:
        with pytest.raises(NetworkTimeout):
            connection.command("admin", {"ping": 1}, request_id=request_id)
