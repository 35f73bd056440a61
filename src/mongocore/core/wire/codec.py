"""Whole messages: reading one from a stream, and decoding by opcode.

Implements the framing of the MongoDB Wire Protocol ("Standard Message Header"): a
message is its 16-byte header, whose messageLength counts the whole message, then
the opcode's own fields. The length is validated before the body is read, so a
hostile or corrupt length (say 2 GiB) fails at once instead of allocating.

OP_COMPRESSED (Wire Compression in Drivers, "OP_COMPRESSED") wraps another opcode:
decoding unwraps it transparently (the caller gets the OpMsg, OpQuery or OpReply it
carried), after checking the announced uncompressedSize against the same size limit;
:func:`decode_op_compressed` also tells which compressor was used, and
:func:`encode_op_compressed` wraps an encoded message.

The codec stays pure: read_message takes the caller's ``recv_exactly``, so the same
code serves the client's connections and the simulated server.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, Optional, Union

from mongocore.core.wire._documents import DEFAULT_OPTIONS, AnyCodecOptions, Buffer
from mongocore.core.wire.header import HEADER_SIZE, MsgHeader, OpCode, pack_header, unpack_header
from mongocore.core.wire.legacy import OpQuery, OpReply, decode_op_query, decode_op_reply
from mongocore.core.wire.limits import DEFAULT_MAX_MESSAGE_SIZE_BYTES
from mongocore.core.wire.op_msg import OpMsg, decode_op_msg
from mongocore.errors import NetworkError, ProtocolError

if TYPE_CHECKING:
    from mongocore.core.compression import Compressor

__all__ = [
    "CompressedMessage",
    "Message",
    "check_header",
    "decode_body",
    "decode_message",
    "decode_op_compressed",
    "encode_op_compressed",
    "read_message",
]

Message = Union[OpMsg, OpQuery, OpReply]

_Decoder = Callable[[Buffer, AnyCodecOptions, Optional[Buffer]], Message]


def _decode_op_msg(body: Buffer, options: AnyCodecOptions, raw_header: Optional[Buffer]) -> Message:
    return decode_op_msg(body, options, raw_header)


def _decode_op_query(
    body: Buffer, options: AnyCodecOptions, raw_header: Optional[Buffer]
) -> Message:
    return decode_op_query(body, options)


def _decode_op_reply(
    body: Buffer, options: AnyCodecOptions, raw_header: Optional[Buffer]
) -> Message:
    return decode_op_reply(body, options)


_OP_MSG = int(OpCode.OP_MSG)

_DECODERS: dict[int, _Decoder] = {
    OpCode.OP_MSG: _decode_op_msg,
    OpCode.OP_REPLY: _decode_op_reply,
    OpCode.OP_QUERY: _decode_op_query,
}

_OP_COMPRESSED = int(OpCode.OP_COMPRESSED)
# originalOpcode (int32), uncompressedSize (int32), compressorId (uint8).
_COMPRESSED_PREFIX = struct.Struct("<iiB")


class CompressedMessage(NamedTuple):
    """An OP_COMPRESSED message, unwrapped: which compressor, which opcode, what it held."""

    compressor_id: int
    original_op_code: int
    message: Message


def decode_op_compressed(
    header: MsgHeader,
    body: Buffer,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES,
) -> CompressedMessage:
    """Unwrap an OP_COMPRESSED body (the bytes after ``header``) and decode what it held.

    The inflated message, with its own 16-byte header, must fit ``max_message_size``;
    that is checked before inflating, and the compressor is never allowed to produce
    more than announced. An OP_COMPRESSED inside an OP_COMPRESSED is refused.
    """
    if len(body) < _COMPRESSED_PREFIX.size:
        raise ProtocolError(
            f"OP_COMPRESSED needs {_COMPRESSED_PREFIX.size} bytes of originalOpcode,"
            f" uncompressedSize and compressorId; got {len(body)}"
        )
    original, size, compressor_id = _COMPRESSED_PREFIX.unpack_from(body)
    if original == _OP_COMPRESSED or original not in _DECODERS:
        raise ProtocolError(f"OP_COMPRESSED wraps unsupported originalOpcode {original}")
    if size < 0 or size + HEADER_SIZE > max_message_size:
        raise ProtocolError(
            f"OP_COMPRESSED uncompressedSize {size} exceeds the maximum message size"
            f" {max_message_size}"
        )
    # Compression loads with the first compressed message, not with every client.
    from mongocore.core.compression import decompress  # noqa: PLC0415

    view = body if isinstance(body, memoryview) else memoryview(body)
    inflated = decompress(compressor_id, view[_COMPRESSED_PREFIX.size :], size)
    if len(inflated) != size:
        raise ProtocolError(
            f"OP_COMPRESSED announced {size} uncompressed bytes but held {len(inflated)}"
        )
    # The wrapped message as it was before compression, header included, so an OP_MSG
    # checksum can be verified against it.
    original_header = pack_header(
        size + HEADER_SIZE, header.request_id, header.response_to, original
    )
    message = _DECODERS[original](memoryview(inflated), codec_options, original_header)
    return CompressedMessage(compressor_id, original, message)


def encode_op_compressed(message: Buffer, compressor: Compressor) -> bytes:
    """Wrap a whole encoded message (header included) in OP_COMPRESSED.

    The new header keeps the message's requestID and responseTo.
    """
    header = unpack_header(message)
    view = message if isinstance(message, memoryview) else memoryview(message)
    payload = view[HEADER_SIZE : header.message_length]
    compressed = compressor.compress(payload)
    length = HEADER_SIZE + _COMPRESSED_PREFIX.size + len(compressed)
    return b"".join(
        (
            pack_header(length, header.request_id, header.response_to, _OP_COMPRESSED),
            _COMPRESSED_PREFIX.pack(header.op_code, len(payload), compressor.id),
            compressed,
        )
    )


def check_header(header: MsgHeader, max_message_size: int) -> None:
    """Raise ProtocolError unless 16 <= messageLength <= ``max_message_size``."""
    length = header.message_length
    if length < HEADER_SIZE:
        raise ProtocolError(
            f"message length {length} in header (opcode {header.op_code}) is below"
            f" the {HEADER_SIZE}-byte header"
        )
    if length > max_message_size:
        raise ProtocolError(
            f"message length {length} in header (opcode {header.op_code}) exceeds the"
            f" maximum message size {max_message_size}"
        )


def decode_body(
    header: MsgHeader,
    body: Buffer,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
    raw_header: Optional[Buffer] = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES,
) -> Message:
    """Decode the bytes after a header according to its opcode.

    Returns OpMsg, OpQuery or OpReply (OP_COMPRESSED is unwrapped into one of them,
    its inflated size bounded by ``max_message_size``); raises ProtocolError for an
    unknown opcode or malformed content. ``raw_header`` lets an OP_MSG checksum be
    verified.
    """
    if header.op_code == _OP_MSG:
        # The reply to every command after the handshake: skip the table.
        return decode_op_msg(body, codec_options, raw_header)
    if header.op_code == _OP_COMPRESSED:
        return decode_op_compressed(header, body, codec_options, max_message_size).message
    decoder = _DECODERS.get(header.op_code)
    if decoder is None:
        raise ProtocolError(f"unsupported opcode {header.op_code} in message header")
    return decoder(body, codec_options, raw_header)


def decode_message(
    data: Buffer,
    max_message_size: int,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
) -> tuple[MsgHeader, Message]:
    """Decode one whole message, header included, that fills ``data`` exactly."""
    header = unpack_header(data)
    check_header(header, max_message_size)
    if header.message_length != len(data):
        raise ProtocolError(
            f"message length {header.message_length} in header (opcode {header.op_code})"
            f" does not match the {len(data)} bytes given"
        )
    view = data if isinstance(data, memoryview) else memoryview(data)
    return header, decode_body(
        header, view[HEADER_SIZE:], codec_options, view[:HEADER_SIZE], max_message_size
    )


def read_message(
    recv_exactly: Callable[[int], bytes],
    max_message_size: int,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
) -> tuple[MsgHeader, Message]:
    """Read and decode one message from a stream.

    ``recv_exactly(n)`` must return exactly ``n`` bytes or raise the caller's own
    network error, which passes through untouched. If it returns fewer bytes, the
    stream ended early and NetworkError is raised. The header's messageLength is
    checked against ``max_message_size`` (the server's maxMessageSizeBytes) before
    the body is read. Malformed content raises ProtocolError naming the opcode.
    """
    raw_header = recv_exactly(HEADER_SIZE)
    if len(raw_header) != HEADER_SIZE:
        raise NetworkError(
            f"connection closed while reading a message header:"
            f" got {len(raw_header)} of {HEADER_SIZE} bytes"
        )
    header = unpack_header(raw_header)
    check_header(header, max_message_size)
    body_length = header.message_length - HEADER_SIZE
    body = recv_exactly(body_length) if body_length else b""
    if len(body) != body_length:
        raise NetworkError(
            f"connection closed while reading a message body (opcode {header.op_code}):"
            f" got {len(body)} of {body_length} bytes"
        )
    return header, decode_body(header, body, codec_options, raw_header, max_message_size)
