"""Timeouts are deadlines: a server that keeps sending, slowly, cannot extend them.

Raw-socket servers on loopback drip their replies (one byte, or one piece, at a time,
each well within the timeout): timeoutMS must end the operation, socketTimeoutMS the
reading of one reply, and connectTimeoutMS the whole establishment (TCP, TLS, hello,
authentication), each with NetworkTimeout. The tests assert outcomes only: which
error, and how much of the reply the server had sent when it came, never durations.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Optional

import pytest

import mongocore.io.connection as connection_module
from mongocore.api.client import Client
from mongocore.core.address import Address
from mongocore.core.credentials import Credentials
from mongocore.core.wire import (
    MsgHeader,
    OpCode,
    OpQuery,
    encode_op_msg,
    encode_op_reply,
)
from mongocore.core.wire.codec import Message
from mongocore.errors import NetworkTimeout
from mongocore.io.auth import Authenticator
from mongocore.io.connection import connect
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.counters import next_request_id
from tests.integration.mock_servers import WirePeer, WireServer, hello_reply

#: The drip's pace: each byte arrives far sooner than any timeout used here.
DRIP = 0.2
#: A timeout that ample never runs out while a test passes.
GENEROUS = 30_000


class Dripper:
    """Sends bytes slowly and counts what it sent; ``stop`` ends every drip at once."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._sent = 0
        self._done: Optional[bool] = None

    @property
    def sent(self) -> int:
        with self._lock:
            return self._sent

    def drip(self, sock: socket.socket, data: bytes, piece: int = 1, pause: float = DRIP) -> None:
        """Send ``data`` ``piece`` bytes at a time, ``pause`` seconds apart."""
        for start in range(0, len(data), piece):
            if start and self.stop.wait(pause):
                return
            sock.sendall(data[start : start + piece])
            with self._lock:
                self._sent += len(data[start : start + piece])


@pytest.fixture
def dripper(wire_server_factory: Callable[..., WireServer]) -> Iterator[Dripper]:
    # Requested after wire_server_factory: set before the servers stop, so no drip
    # outlives its test.
    dripper = Dripper()
    yield dripper
    dripper.stop.set()


def _command_name(message: Message) -> str:
    document = message.query if isinstance(message, OpQuery) else getattr(message, "body", {})
    return str(next(iter(document), "")).lower()


def _reply_bytes(request: MsgHeader, document: Mapping[str, Any]) -> bytes:
    if request.op_code == OpCode.OP_QUERY:
        return encode_op_reply([document], next_request_id(), request.request_id)
    return encode_op_msg(document, next_request_id(), response_to=request.request_id)


OK = {"ok": 1.0}


def _drip_commands(
    dripper: Dripper, replies: list[bytes], piece: int = 1, pause: float = DRIP
) -> Callable[[WirePeer], None]:
    """Drip the reply to each ping, and record its bytes; answer anything else (hellos,
    endSessions) at once."""

    def handler(peer: WirePeer) -> None:
        while True:
            request, message = peer.read()
            name = _command_name(message)
            if name != "ping":
                peer.reply(request, hello_reply() if name in ("hello", "ismaster") else OK)
                continue
            data = _reply_bytes(request, OK)
            replies.append(data)
            dripper.drip(peer.sock, data, piece, pause)

    return handler


def _client(server: WireServer, **options: Any) -> Client:
    address = server.address
    return Client(
        f"mongodb://{address.host}:{address.port}/",
        serverSelectionTimeoutMS=GENEROUS,
        connectTimeoutMS=GENEROUS,
        **options,
    )


# --- operations: timeoutMS and socketTimeoutMS ------------------------------------------


def test_timeout_ms_bounds_a_dripping_reply(
    wire_server_factory: Callable[..., WireServer], dripper: Dripper
) -> None:
    """Catches: timeoutMS applied to each recv() (every byte arrives within it, so the
    whole reply would be read and the operation succeed long after timeoutMS)."""
    replies: list[bytes] = []
    server = wire_server_factory(_drip_commands(dripper, replies))
    with _client(server) as client:
        with pytest.raises(NetworkTimeout):
            client.command("admin", {"ping": 1}, timeout_ms=1000)
        sent = dripper.sent
    assert len(replies) == 1
    assert sent < len(replies[0])


def test_socket_timeout_ms_bounds_the_whole_reply(
    wire_server_factory: Callable[..., WireServer], dripper: Dripper
) -> None:
    """Catches: socketTimeoutMS as a bound on each recv() rather than on reading one
    whole reply."""
    replies: list[bytes] = []
    server = wire_server_factory(_drip_commands(dripper, replies))
    with _client(server, socketTimeoutMS=1000) as client:
        with pytest.raises(NetworkTimeout):
            client.command("admin", {"ping": 1})
        sent = dripper.sent
    assert len(replies) == 1
    assert sent < len(replies[0])


@pytest.mark.parametrize("options", [{"socketTimeoutMS": GENEROUS}, {"timeoutMS": GENEROUS}])
def test_reply_arriving_in_time_succeeds(
    wire_server_factory: Callable[..., WireServer], dripper: Dripper, options: dict[str, Any]
) -> None:
    """Catches: a deadline that ends a read too early, or a read that loses bytes when a
    reply arrives in many small pieces (one byte each)."""
    replies: list[bytes] = []
    server = wire_server_factory(_drip_commands(dripper, replies, pause=0.005))
    with _client(server, **options) as client:
        reply = client.command("admin", {"ping": 1})
    assert reply["ok"] == 1.0
    assert dripper.sent == len(replies[0])


# --- establishment: connectTimeoutMS --------------------------------------------------------


def _drip_hello(dripper: Dripper, hello: Mapping[str, Any]) -> Callable[[WirePeer], None]:
    def handler(peer: WirePeer) -> None:
        request, _ = peer.read()
        dripper.drip(peer.sock, _reply_bytes(request, hello))
        peer.wait_closed()

    return handler


def test_connect_timeout_bounds_a_dripping_hello(
    wire_server_factory: Callable[..., WireServer], dripper: Dripper
) -> None:
    """Catches: connectTimeoutMS applied to each recv() of the handshake (the hello
    reply would arrive whole, one byte at a time, long after connectTimeoutMS)."""
    hello = {"isWritablePrimary": True, "maxWireVersion": 21, "ok": 1.0}
    server = wire_server_factory(_drip_hello(dripper, hello))
    with pytest.raises(NetworkTimeout, match="connectTimeoutMS"):
        connect(server.address, ConnectionSettings(connect_timeout=1.0))
    assert dripper.sent < len(_reply_bytes(MsgHeader(0, 1, 0, OpCode.OP_QUERY), hello))


def test_connect_timeout_bounds_hello_and_authentication_together(
    wire_server_factory: Callable[..., WireServer], dripper: Dripper
) -> None:
    """Catches: connectTimeoutMS restarted for each step of establishment. The hello
    reply and the saslStart reply each arrive within connectTimeoutMS, but not both:
    with a fresh timeout per step, the server's authentication error would come back
    instead of a timeout."""
    pieces = 6  # each reply in six pieces, 0.12 s apart: ~0.6 s per reply

    def handler(peer: WirePeer) -> None:
        request, _ = peer.read()
        data = _reply_bytes(request, hello_reply())
        dripper.drip(peer.sock, data, -(-len(data) // pieces), 0.12)
        request, _ = peer.read()  # saslStart
        failure = {"ok": 0.0, "code": 18, "codeName": "AuthenticationFailed", "errmsg": "no"}
        data = _reply_bytes(request, failure)
        dripper.drip(peer.sock, data, -(-len(data) // pieces), 0.12)
        peer.wait_closed()

    server = wire_server_factory(handler)
    authenticator = Authenticator(
        Credentials(mechanism="SCRAM-SHA-256", username="user", password="pencil", source="admin")
    )
    with pytest.raises(NetworkTimeout):
        connect(server.address, ConnectionSettings(connect_timeout=1.0), authenticate=authenticator)


def test_connect_timeout_bounds_a_dripping_tls_handshake(
    wire_server_factory: Callable[..., WireServer], dripper: Dripper
) -> None:
    """Catches: a TLS handshake outside the establishment deadline, e.g. run on a
    socket left without a timeout (a TLS record announced whole, its bytes dripped
    until the server gives up)."""
    # A handshake record header announcing 16 KiB, then its bytes one at a time.
    record = bytes([22, 3, 3, 0x40, 0x00]) + bytes(60)

    def handler(peer: WirePeer) -> None:
        dripper.drip(peer.sock, record)
        peer.wait_closed()

    server = wire_server_factory(handler)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    settings = ConnectionSettings(connect_timeout=1.0, ssl_context=context)
    with pytest.raises(NetworkTimeout):
        connect(Address("127.0.0.1", server.address.port), settings)
    assert dripper.sent < len(record)


@pytest.mark.parametrize("monitoring", [True, False], ids=["monitoring", "application"])
def test_a_monitoring_connection_gives_each_step_a_connect_timeout_of_its_own(
    wire_server_factory: Callable[..., WireServer],
    monkeypatch: pytest.MonkeyPatch,
    monitoring: bool,
) -> None:
    """The thread ran late (it waited for the GIL, say): the deadline taken when the
    establishment began has passed before the TCP connect is tried. A monitoring
    connection gives each step connectTimeoutMS from its own start (each address
    tried, then the hello), as pymongo and the monitoring spec's socket timeout do,
    so it connects; an application connection's connectTimeoutMS bounds the whole
    establishment. Catches: a monitor's establishment bounded as one deadline (under
    CPU contention, the server marked Unknown although it answered at once)."""
    real_deadline_after = connection_module.deadline_after
    calls: list[None] = []

    def expired_first(timeout: Optional[float], now: Optional[float] = None) -> Optional[float]:
        calls.append(None)
        if len(calls) == 1:
            return time.monotonic() - 1.0  # gone before the first step began
        return real_deadline_after(timeout, now)

    monkeypatch.setattr(connection_module, "deadline_after", expired_first)
    server = wire_server_factory(_answer_hellos)
    settings = ConnectionSettings(connect_timeout=GENEROUS / 1000)
    if monitoring:
        connection = connect(server.address, settings, monitoring=True)
        assert connection.hello["isWritablePrimary"] is True
        connection.close("test over")
    else:
        with pytest.raises(NetworkTimeout):
            connect(server.address, settings)


def _answer_hellos(peer: WirePeer) -> None:
    while True:
        request, _ = peer.read()
        peer.reply(request, hello_reply())
