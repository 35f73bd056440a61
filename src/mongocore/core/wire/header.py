"""The standard message header of the MongoDB wire protocol, opcodes and request ids.

Every message starts with the same 16 bytes (MongoDB Wire Protocol, "Standard Message
Header"): ``int32 messageLength`` (the whole message, header included),
``int32 requestID``, ``int32 responseTo`` and ``int32 opCode``, all little-endian.
"""

from __future__ import annotations

import enum
import itertools
import struct
from typing import Callable, NamedTuple, Union

from mongocore.core.counters import atomic_next
from mongocore.errors import ProtocolError

__all__ = [
    "HEADER_SIZE",
    "MAX_INT32",
    "MsgHeader",
    "OpCode",
    "next_request_id",
    "pack_header",
    "request_id_generator",
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


def request_id_generator(start: int = 0) -> Callable[[], int]:
    """A thread-safe source of request ids: ``start + 1`` up to 2**31 - 1, then from 1
    again.

    Zero and negative ids are never produced: ``responseTo`` 0 means "not a reply",
    and a positive id cannot be mistaken for it. The source is a chain of C iterators
    (ranges, repeated), taken without a Python call (:func:`atomic_next`).
    """
    if not 0 <= start <= MAX_INT32:
        raise ValueError(f"start must be in [0, {MAX_INT32}], got {start}")
    every_id = range(1, MAX_INT32 + 1)
    return atomic_next(
        itertools.chain(every_id[start:], itertools.chain.from_iterable(itertools.repeat(every_id)))
    )


next_request_id = request_id_generator()
"""The process-wide request id source used by connections and the simulated server."""
