"""A hostile server cannot make the client allocate what its messages only claim.

Raw-socket servers on loopback announce absurd limits and send headers claiming
gigabytes, OP_COMPRESSED messages claiming huge uncompressed sizes, and compression
bombs. The client must refuse them with a ProtocolError naming the length and the
limit, close the connection, and keep its memory flat: allocations are measured with
tracemalloc around the one read, never wall-clock time.
"""

from __future__ import annotations

import struct
import threading
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mongocore.core.wire import (
    HEADER_SIZE,
    MAX_MESSAGE_SIZE_CAP,
    MsgHeader,
    OpCode,
    SizeLimits,
    encode_op_msg,
    max_reply_size,
    pack_header,
)
from mongocore.errors import NetworkError, ProtocolError
from mongocore.io.connection import Connection, connect
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.counters import next_request_id
from tests.integration.mock_servers import WirePeer, WireServer, hello_reply

SETTINGS = ConnectionSettings(connect_timeout=10.0, socket_timeout=10.0)
#: Peak bytes a refused read may allocate: far below any size a server claims here.
MEMORY_CEILING = 4 * 1024 * 1024

Reply = Callable[[MsgHeader], bytes]


def _serve(hello: dict[str, Any], reply: Reply) -> Callable[[WirePeer], None]:
    """Answer the handshake with ``hello``, then the next request with raw bytes."""

    def handler(peer: WirePeer) -> None:
        header, _ = peer.read()
        peer.reply(header, hello)
        request, _ = peer.read()
        peer.send(reply(request))
        peer.wait_closed()

    return handler


@pytest.fixture
def hostile(
    wire_server_factory: Callable[..., WireServer],
) -> Iterator[Callable[..., Connection]]:
    """Connect to a server that answers the handshake, then sends one hostile reply."""
    connections: list[Connection] = []

    def open_connection(reply: Reply, **hello_fields: Any) -> Connection:
        server = wire_server_factory(_serve(hello_reply(**hello_fields), reply))
        conn = connect(server.address, SETTINGS)
        connections.append(conn)
        return conn

    yield open_connection
    for conn in connections:
        conn.close("test over")


def _ping_peak(conn: Connection) -> tuple[BaseException, int]:
    """Run a ping expected to fail; return its error and the peak memory it allocated."""
    tracemalloc.start()
    try:
        try:
            conn.command("admin", {"ping": 1})
        except (ProtocolError, NetworkError) as exc:
            error: BaseException = exc
        else:
            raise AssertionError("the hostile reply was accepted")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return error, peak


def _header_only(length: int, op_code: int = OpCode.OP_MSG) -> Reply:
    return lambda request: pack_header(length, next_request_id(), request.request_id, op_code)


def _op_compressed(uncompressed_size: int, compressor_id: int, payload: bytes) -> Reply:
    def reply(request: MsgHeader) -> bytes:
        prefix = struct.pack("<iiB", OpCode.OP_MSG, uncompressed_size, compressor_id)
        length = HEADER_SIZE + len(prefix) + len(payload)
        header = pack_header(length, next_request_id(), request.request_id, OpCode.OP_COMPRESSED)
        return header + prefix + payload

    return reply


def _zlib_zeros(count: int) -> bytes:
    """zlib data inflating to ``count`` zero bytes, made without holding them."""
    deflater = zlib.compressobj(9)
    chunk = bytes(1024 * 1024)
    parts = []
    for start in range(0, count, len(chunk)):
        parts.append(deflater.compress(chunk[: min(len(chunk), count - start)]))
    parts.append(deflater.flush())
    return b"".join(parts)


# --- the announced limit ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("announced", "used"),
    [
        (2**31 - 1, MAX_MESSAGE_SIZE_CAP),
        (10**12, MAX_MESSAGE_SIZE_CAP),
        (0, MAX_MESSAGE_SIZE_CAP),
        (-1, MAX_MESSAGE_SIZE_CAP),
        (4096, 4096),
    ],
)
def test_announced_max_message_size_is_capped(
    hostile: Callable[..., Connection], announced: int, used: int
) -> None:
    """Catches: trusting any positive maxMessageSizeBytes from hello (or refusing a
    non-positive one instead of using the default)."""
    conn = hostile(_header_only(HEADER_SIZE), maxMessageSizeBytes=announced)
    assert conn.limits.max_message_size_bytes == used
    assert SizeLimits.from_hello({"maxMessageSizeBytes": announced}).max_message_size_bytes == used


def test_reply_header_claiming_2_gib_is_refused_without_allocating(
    hostile: Callable[..., Connection],
) -> None:
    """Catches: a reply's length checked against the server's own 2 GiB announcement
    (the read then waits for, or allocates, 2 GiB) instead of the capped limit."""
    conn = hostile(_header_only(2**31 - 1), maxMessageSizeBytes=2**31 - 1)
    error, peak = _ping_peak(conn)
    assert isinstance(error, ProtocolError)
    message = str(error)
    assert str(2**31 - 1) in message
    assert str(max_reply_size(MAX_MESSAGE_SIZE_CAP)) in message
    assert peak < MEMORY_CEILING
    assert conn.closed


def test_body_buffer_grows_only_as_bytes_arrive(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    """Catches: ``bytearray(length)`` allocated upfront for a length within the limit
    (40 MB claimed, a few bytes sent, then the server hangs up)."""
    claimed = 40_000_000
    sent = threading.Event()

    def handler(peer: WirePeer) -> None:
        header, _ = peer.read()
        peer.reply(header, hello_reply())
        request, _ = peer.read()
        head = pack_header(claimed, next_request_id(), request.request_id, OpCode.OP_MSG)
        peer.send(head + bytes(1000))
        sent.set()
        # Hang up without the rest: the client sees the stream end.

    server = wire_server_factory(handler)
    conn = connect(server.address, SETTINGS)
    try:
        error, peak = _ping_peak(conn)
    finally:
        conn.close("test over")
    assert sent.is_set()
    assert isinstance(error, NetworkError)
    assert f"of {claimed - HEADER_SIZE} bytes" in str(error)
    assert peak < MEMORY_CEILING


def test_reply_within_the_limit_is_read_whole(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    """Catches: a growing buffer that loses or reorders bytes (a 3 MB reply, several
    times the first chunk, sent in pieces)."""
    payload = bytes(range(256)) * (3 * 1024 * 4)

    def handler(peer: WirePeer) -> None:
        header, _ = peer.read()
        peer.reply(header, hello_reply())
        request, _ = peer.read()
        data = encode_op_msg(
            {"ok": 1.0, "blob": payload}, next_request_id(), response_to=request.request_id
        )
        for start in range(0, len(data), 100_000):
            peer.send(data[start : start + 100_000])
        peer.wait_closed()

    server = wire_server_factory(handler)
    conn = connect(server.address, SETTINGS)
    try:
        reply = conn.command("admin", {"ping": 1})
    finally:
        conn.close("test over")
    assert reply["blob"] == payload


# --- OP_COMPRESSED -------------------------------------------------------------------------


def test_op_compressed_claiming_2_gib_uncompressed_is_refused(
    hostile: Callable[..., Connection],
) -> None:
    """Catches: OP_COMPRESSED's uncompressedSize trusted (or checked against the
    server's 2 GiB announcement) before inflating."""
    conn = hostile(
        _op_compressed(2**31 - 17, 2, zlib.compress(b"x" * 100)),
        maxMessageSizeBytes=2**31 - 1,
    )
    error, peak = _ping_peak(conn)
    assert isinstance(error, ProtocolError)
    assert "uncompressedSize" in str(error)
    assert str(2**31 - 17) in str(error)
    assert peak < MEMORY_CEILING
    assert conn.closed


def test_zlib_bomb_announcing_a_small_size_is_refused(hostile: Callable[..., Connection]) -> None:
    """Catches: a decompressor not told the maximum output (40 MB of zeros inflated from
    ~40 KB while the message announced 200 bytes)."""
    conn = hostile(_op_compressed(200, 2, _zlib_zeros(40_000_000)))
    error, peak = _ping_peak(conn)
    assert isinstance(error, ProtocolError)
    assert "200-byte limit" in str(error)
    assert peak < MEMORY_CEILING


def test_zlib_bomb_announcing_more_than_the_limit_is_refused_before_inflating(
    hostile: Callable[..., Connection],
) -> None:
    """Catches: the uncompressed size checked only after decompressing (60 MB
    announced, and really held, beyond the 48 MB cap)."""
    size = 60_000_000
    conn = hostile(_op_compressed(size, 2, _zlib_zeros(size)), maxMessageSizeBytes=2**31 - 1)
    error, peak = _ping_peak(conn)
    assert isinstance(error, ProtocolError)
    assert str(size) in str(error)
    assert peak < MEMORY_CEILING
