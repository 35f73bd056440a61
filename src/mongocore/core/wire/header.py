"""The standard message header of the MongoDB wire protocol and its opcodes.

Every message starts with the same 16 bytes (MongoDB Wire Protocol, "Standard Message
Header"): ``int32 messageLength`` (the whole message, header included),
``int32 requestID``, ``int32 responseTo`` and ``int32 opCode``, all little-endian.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple, Union

from mongocore.errors import ProtocolError

__all__ = [
    "HEADER_SIZE",
    "MAX_INT32",
    "MsgHeader",
    "OpCode",
    "pack_header",
    "unpack_header",
]

HEADER_SIZE = 16
MAX_INT32 = 2**31 - 1

_HEADER = struct.Struct("<iiii")
_pack_header = _HEADER.pack
_unpack_header_from = _HEADER.unpack_from

_Buffer = Union[bytes, bytearray, memoryview]


class OpCode(enum.IntEnum):
    """The opcodes this codec knows (MongoDB Wire Protocol, "Opcodes")."""

    OP_REPLY = 1
    OP_QUERY = 2004
    OP_COMPRESSED = 2012
    OP_MSG = 2013


class MsgHeader(NamedTuple):
    """A decoded standard message header."""

    message_length: int
    request_id: int
    response_to: int
    op_code: int

    @property
    def body_length(self) -> int:
        """How many bytes follow the header."""
        return self.message_length - HEADER_SIZE


_new_tuple = tuple.__new__


def pack_header(message_length: int, request_id: int, response_to: int, op_code: int) -> bytes:
    """Encode the 16-byte header."""
    return _pack_header(message_length, request_id, response_to, op_code)


def unpack_header(data: _Buffer) -> MsgHeader:
    """Decode the first 16 bytes of ``data`` as a header; the length is not validated here."""
    if len(data) < HEADER_SIZE:
        raise ProtocolError(
            f"message header needs {HEADER_SIZE} bytes, got {len(data)}",
        )
    # tuple.__new__ straight from the four unpacked ints: what _make does, minus two calls.
    return _new_tuple(MsgHeader, _unpack_header_from(data))
