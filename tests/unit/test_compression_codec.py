"""OP_COMPRESSED in the wire codec, and the compressors (Wire Compression in Drivers)."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core import compression
from mongocore.core.compression import (
    COMPRESSOR_IDS,
    available_compressors,
    compressor_for,
    is_compressible,
    negotiate,
)
from mongocore.core.wire import (
    CHECKSUM_PRESENT,
    HEADER_SIZE,
    OpCode,
    OpMsg,
    OpQuery,
    OpReply,
    decode_message,
    decode_op_compressed,
    encode_op_compressed,
    encode_op_msg,
    encode_op_query,
    encode_op_reply,
    pack_header,
    unpack_header,
)
from mongocore.errors import ConfigurationError, ProtocolError

MAX = 48_000_000
COMPRESSORS = ["noop", *available_compressors()]
DOC = {"insert": "c", "documents": [{"text": "compressible " * 200, "n": i} for i in range(5)]}


def compressed_frame(original: int, size: int, compressor_id: int, payload: bytes) -> bytes:
    body = struct.pack("<iiB", original, size, compressor_id) + payload
    return pack_header(HEADER_SIZE + len(body), 7, 0, 2012) + body


@pytest.mark.parametrize("name", COMPRESSORS)
def test_op_msg_round_trip(name: str) -> None:
    plain = encode_op_msg(DOC, 123, response_to=45)
    wrapped = encode_op_compressed(plain, compressor_for(name))
    header = unpack_header(wrapped)
    assert header.op_code == OpCode.OP_COMPRESSED
    assert (header.request_id, header.response_to) == (123, 45)
    assert header.message_length == len(wrapped)
    if name != "noop":
        assert len(wrapped) < len(plain)  # the repeated text does compress
    _, message = decode_message(wrapped, MAX)
    assert isinstance(message, OpMsg)
    assert message.body == DOC
    unwrapped = decode_op_compressed(header, wrapped[HEADER_SIZE:])
    assert unwrapped.compressor_id == COMPRESSOR_IDS[name]
    assert unwrapped.original_op_code == OpCode.OP_MSG


@pytest.mark.parametrize("name", COMPRESSORS)
def test_legacy_opcodes_round_trip(name: str) -> None:
    compressor = compressor_for(name)
    query = encode_op_compressed(encode_op_query("admin.$cmd", {"isMaster": 1}, 9), compressor)
    _, message = decode_message(query, MAX)
    assert isinstance(message, OpQuery)
    assert message.query == {"isMaster": 1}
    reply = encode_op_compressed(encode_op_reply([{"ok": 1.0}], 10, 9), compressor)
    _, message = decode_message(reply, MAX)
    assert isinstance(message, OpReply)
    assert message.documents == [{"ok": 1.0}]


def test_a_checksum_inside_is_verified() -> None:
    plain = bytearray(encode_op_msg({"ping": 1, "$db": "admin"}, 5, flag_bits=CHECKSUM_PRESENT))
    wrapped = encode_op_compressed(bytes(plain), compressor_for("zlib"))
    assert decode_message(wrapped, MAX)[1].body["ping"] == 1  # type: ignore[union-attr]
    plain[-1] ^= 0xFF
    with pytest.raises(ProtocolError, match="checksum"):
        decode_message(encode_op_compressed(bytes(plain), compressor_for("zlib")), MAX)


def test_zlib_level_applies_to_what_is_sent() -> None:
    data = encode_op_msg(DOC, 1)[HEADER_SIZE:]
    for level in (-1, 0, 1, 9):
        assert compressor_for("zlib", level).compress(data) == zlib.compress(data, level)
    with pytest.raises(ConfigurationError, match="zlibCompressionLevel"):
        compressor_for("zlib", 10)


def test_uncompressed_size_is_checked_before_inflating() -> None:
    bomb = zlib.compress(b"\x00" * 2_000_000)
    with pytest.raises(ProtocolError, match="exceeds the maximum message size 1000000"):
        decode_message(compressed_frame(2013, 2_000_000, 2, bomb), 1_000_000)


@pytest.mark.parametrize("name", available_compressors())
def test_data_may_not_inflate_beyond_what_was_announced(name: str) -> None:
    payload = compressor_for(name).compress(b"\x00" * 100_000)
    with pytest.raises(ProtocolError, match="OP_COMPRESSED"):
        decode_message(compressed_frame(2013, 1000, COMPRESSOR_IDS[name], payload), MAX)


def test_data_shorter_than_announced() -> None:
    body = encode_op_msg({"ping": 1}, 1)[HEADER_SIZE:]
    payload = zlib.compress(body)
    with pytest.raises(ProtocolError, match="announced"):
        decode_message(compressed_frame(2013, len(body) + 5, 2, payload), MAX)


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (compressed_frame(2012, 0, 0, b""), "unsupported originalOpcode 2012"),
        (compressed_frame(2005, 0, 0, b""), "unsupported originalOpcode 2005"),
        (compressed_frame(2013, 0, 7, b""), "unknown compressorId 7"),
        (compressed_frame(2013, -1, 0, b""), "uncompressedSize -1"),
        (compressed_frame(2013, 10, 2, b"not zlib"), "invalid zlib data"),
        (compressed_frame(2013, 10, 2, zlib.compress(b"0123456789")[:-3]), "zlib"),
        (pack_header(HEADER_SIZE + 4, 1, 0, 2012) + b"\x00" * 4, "needs 9 bytes"),
    ],
)
def test_malformed_op_compressed(frame: bytes, match: str) -> None:
    with pytest.raises(ProtocolError, match=match):
        decode_message(frame, MAX)


def test_a_compressor_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression, "_zstd", None)
    monkeypatch.setattr(compression, "_DECOMPRESSORS", {})
    assert "zstd" not in available_compressors()
    with pytest.raises(ConfigurationError, match=r"mongocore\[zstd\]"):
        compressor_for("zstd")
    with pytest.raises(ProtocolError, match="not available"):
        decode_message(compressed_frame(2013, 1, 3, b"x"), MAX)


def test_unknown_compressor_name() -> None:
    with pytest.raises(ConfigurationError, match="unknown compressor 'lz4'"):
        compressor_for("lz4")


@given(st.integers(min_value=-5, max_value=5000), st.integers(0, 255), st.binary(max_size=200))
def test_arbitrary_compressed_payloads(size: int, compressor_id: int, payload: bytes) -> None:
    # Whatever a peer sends decodes or is a ProtocolError; nothing else escapes.
    try:
        _, message = decode_message(compressed_frame(2013, size, compressor_id, payload), 4096)
    except ProtocolError:
        return
    assert isinstance(message, OpMsg)


def test_commands_never_compressed() -> None:
    for name in (
        "hello",
        "isMaster",
        "ismaster",
        "saslStart",
        "saslContinue",
        "getnonce",
        "authenticate",
        "createUser",
        "updateUser",
        "copydbSaslStart",
        "copydbgetnonce",
        "copydb",
    ):
        assert not is_compressible(name), name
    for name in ("find", "insert", "ping", "endSessions", "getMore"):
        assert is_compressible(name)


@pytest.mark.parametrize(
    ("client", "server", "chosen"),
    [
        (["zstd", "zlib"], ["zlib", "zstd"], "zstd"),  # the client's order decides
        (["snappy", "zlib"], ["zlib"], "zlib"),
        (["zlib"], ["snappy"], None),
        (["zlib"], [], None),
        (["zlib"], [1, None, "zlib"], "zlib"),
    ],
)
def test_negotiation(client: list[str], server: list[object], chosen: str | None) -> None:
    assert negotiate(client, server) == chosen
