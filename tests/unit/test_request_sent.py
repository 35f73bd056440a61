"""The connection's record of whether a request left in full, on which a failed
write's outcome rests (mongocore.core.write_outcome, tested in
test_write_outcome.py): a request never sent in full wrote nothing."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from mongocore.core.address import Address
from mongocore.errors import NetworkError
from mongocore.io.connection import Connection
from mongocore.io.connection_io import request_not_sent
from mongocore.io.connection_settings import ConnectionSettings

ADDRESS = Address("db", 27017)


@pytest.fixture
def pair() -> Iterator[tuple[Connection, socket.socket]]:
    ours, theirs = socket.socketpair()
    conn = Connection(ours, ADDRESS, ConnectionSettings(connect_timeout=5.0, socket_timeout=5.0))
    yield conn, theirs
    conn.close("test over")
    theirs.close()


def test_a_request_on_a_closed_connection_was_not_sent(
    pair: tuple[Connection, socket.socket],
) -> None:
    conn, _ = pair
    conn.close("stale")
    with pytest.raises(NetworkError) as info:
        conn.command("db", {"insert": "c"})
    assert request_not_sent(info.value)


def test_a_request_cut_while_being_written_was_not_sent(
    pair: tuple[Connection, socket.socket],
) -> None:
    conn, theirs = pair
    theirs.close()  # the peer is gone: writing fails with a broken pipe
    with pytest.raises(NetworkError) as info:
        conn.command("db", {"insert": "c"})
    assert request_not_sent(info.value)


def test_a_request_whose_reply_was_lost_was_sent(
    pair: tuple[Connection, socket.socket],
) -> None:
    """Catches: every network error counted as "not sent" (a caller told "not
    applied" after its write ran would apply it twice)."""
    conn, theirs = pair
    theirs.shutdown(socket.SHUT_WR)  # takes the request, then closes without a reply
    with pytest.raises(NetworkError) as info:
        conn.command("db", {"insert": "c"})
    assert not request_not_sent(info.value)
    assert theirs.recv(1 << 16), "the request arrived"
