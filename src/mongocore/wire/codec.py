"""Whole messages: reading one from a stream, and decoding by opcode.

Implements the framing of the MongoDB Wire Protocol ("Standard Message Header"): a
message is its 16-byte header, whose messageLength counts the whole message, then
the opcode's own fields. The length is validated before the body is read, so a
hostile or corrupt length (say 2 GiB) fails at once instead of allocating.

The codec stays pure: read_message takes the caller's ``recv_exactly``, so the same
code serves the client's connections and the simulated server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional, Union

from mongocore.errors import NetworkError, ProtocolError
from mongocore.wire._documents import DEFAULT_OPTIONS, AnyCodecOptions, Buffer
from mongocore.wire.header import HEADER_SIZE, MsgHeader, OpCode, unpack_header
from mongocore.wire.legacy import OpQuery, OpReply, decode_op_query, decode_op_reply
from mongocore.wire.op_msg import OpMsg, decode_op_msg

__all__ = [
    "Message",
    "check_header",
    "decode_body",
    "decode_message",
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


def _decode_op_compressed(
    body: Buffer, options: AnyCodecOptions, raw_header: Optional[Buffer]
) -> Message:
    # Extension point for compression (MongoDB Wire Protocol, "OP_COMPRESSED"): parse
    # originalOpcode, uncompressedSize and compressorId, check uncompressedSize against
    # the size limit before inflating, decompress, then decode the result with
    # _DECODERS[originalOpcode]. mongocore negotiates no compressor, so a peer must
    # never send this.
    raise ProtocolError(
        "OP_COMPRESSED (opcode 2012) received, but no compressor was negotiated and"
        " mongocore does not support compression"
    )


_OP_MSG = int(OpCode.OP_MSG)

_DECODERS: dict[int, _Decoder] = {
    OpCode.OP_MSG: _decode_op_msg,
    OpCode.OP_REPLY: _decode_op_reply,
    OpCode.OP_QUERY: _decode_op_query,
    OpCode.OP_COMPRESSED: _decode_op_compressed,
}


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
) -> Message:
    """Decode the bytes after a header according to its opcode.

    Returns OpMsg, OpQuery or OpReply; raises ProtocolError for an unknown opcode,
    OP_COMPRESSED, or malformed content. ``raw_header`` lets an OP_MSG checksum be
    verified.
    """
    if header.op_code == _OP_MSG:
        # The reply to every command after the handshake: skip the table.
        return decode_op_msg(body, codec_options, raw_header)
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
    return header, decode_body(header, view[HEADER_SIZE:], codec_options, view[:HEADER_SIZE])


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
    return header, decode_body(header, body, codec_options, raw_header)
