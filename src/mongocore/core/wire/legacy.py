"""Legacy OP_QUERY (opcode 2004) and OP_REPLY (opcode 1), kept for the first handshake.

A client does not know a server's wire version before its first hello, so the
connection handshake is sent as an OP_QUERY on ``admin.$cmd`` and answered with an
OP_REPLY (MongoDB Wire Protocol, "OP_QUERY" and "OP_REPLY"; Connection Handshake,
"Connection handshake"). Both directions are here: the client encodes queries and
decodes replies; a simulated server decodes queries and encodes replies.

    OP_QUERY:  int32 flags, cstring fullCollectionName, int32 numberToSkip,
               int32 numberToReturn, document query, [document returnFieldsSelector]
    OP_REPLY:  int32 responseFlags, int64 cursorID, int32 startingFrom,
               int32 numberReturned, document* documents
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

from mongocore.core.wire._documents import (
    DEFAULT_OPTIONS,
    AnyCodecOptions,
    Buffer,
    EncodedOrDocument,
    decode_documents,
    encode_document,
    has_field,
    read_cstring,
)
from mongocore.core.wire.header import HEADER_SIZE, OpCode, pack_header
from mongocore.core.wire.limits import SizeLimits, check_command_size, check_message_size
from mongocore.errors import OperationFailure, ProtocolError

__all__ = [
    "QUERY_AWAIT_DATA",
    "QUERY_EXHAUST",
    "QUERY_NO_CURSOR_TIMEOUT",
    "QUERY_OPLOG_REPLAY",
    "QUERY_PARTIAL",
    "QUERY_SECONDARY_OK",
    "QUERY_TAILABLE_CURSOR",
    "REPLY_AWAIT_CAPABLE",
    "REPLY_CURSOR_NOT_FOUND",
    "REPLY_QUERY_FAILURE",
    "REPLY_SHARD_CONFIG_STALE",
    "OpQuery",
    "OpReply",
    "decode_op_query",
    "decode_op_reply",
    "encode_handshake_query",
    "encode_op_query",
    "encode_op_reply",
]

# OP_QUERY flags. Bit 0 is reserved and must be 0; bits 8-31 are reserved too.
QUERY_TAILABLE_CURSOR = 1 << 1
QUERY_SECONDARY_OK = 1 << 2
QUERY_OPLOG_REPLAY = 1 << 3
QUERY_NO_CURSOR_TIMEOUT = 1 << 4
QUERY_AWAIT_DATA = 1 << 5
QUERY_EXHAUST = 1 << 6
QUERY_PARTIAL = 1 << 7
_QUERY_KNOWN_FLAGS = 0xFE

# OP_REPLY responseFlags; bits 4-31 are reserved and ignored when received.
REPLY_CURSOR_NOT_FOUND = 1 << 0
REPLY_QUERY_FAILURE = 1 << 1
REPLY_SHARD_CONFIG_STALE = 1 << 2
REPLY_AWAIT_CAPABLE = 1 << 3

_OP_QUERY = int(OpCode.OP_QUERY)
_OP_REPLY = int(OpCode.OP_REPLY)

_INT32 = struct.Struct("<i")
_unpack_int32 = _INT32.unpack_from
_SKIP_RETURN = struct.Struct("<ii")
_REPLY_FIELDS = struct.Struct("<iqii")
_REPLY_FIELDS_SIZE = _REPLY_FIELDS.size


class OpQuery(NamedTuple):
    """A decoded OP_QUERY."""

    flags: int
    full_collection_name: str
    number_to_skip: int
    number_to_return: int
    query: Any
    return_fields_selector: Optional[Any] = None

    @property
    def is_command(self) -> bool:
        """True for a command, i.e. a query on the ``<db>.$cmd`` pseudo-collection."""
        return self.full_collection_name.endswith(".$cmd")

    @property
    def database(self) -> str:
        return self.full_collection_name.partition(".")[0]

    @property
    def secondary_ok(self) -> bool:
        return bool(self.flags & QUERY_SECONDARY_OK)

    def encode(self, request_id: int, codec_options: AnyCodecOptions = DEFAULT_OPTIONS) -> bytes:
        return encode_op_query(
            self.full_collection_name,
            self.query,
            request_id,
            flags=self.flags,
            number_to_skip=self.number_to_skip,
            number_to_return=self.number_to_return,
            return_fields_selector=self.return_fields_selector,
            codec_options=codec_options,
        )


class OpReply(NamedTuple):
    """A decoded OP_REPLY."""

    response_flags: int
    cursor_id: int
    starting_from: int
    number_returned: int
    documents: list[Any]

    @property
    def cursor_not_found(self) -> bool:
        return bool(self.response_flags & REPLY_CURSOR_NOT_FOUND)

    @property
    def query_failure(self) -> bool:
        return bool(self.response_flags & REPLY_QUERY_FAILURE)

    @property
    def error_document(self) -> Optional[Any]:
        """The ``$err`` document when QueryFailure is set, else None."""
        return self.documents[0] if self.query_failure else None

    def command_reply(self) -> Any:
        """The one reply document of a command.

        Raises OperationFailure carrying the ``$err`` document if QueryFailure is
        set, and ProtocolError if there is not exactly one document.
        """
        if self.query_failure:
            error = self.documents[0]
            code = error.get("code")
            raise OperationFailure(
                str(error.get("$err")), code if isinstance(code, int) else None, error
            )
        if len(self.documents) != 1:
            raise ProtocolError(
                f"OP_REPLY to a command has {len(self.documents)} documents, expected 1"
            )
        return self.documents[0]

    def encode(
        self,
        request_id: int,
        response_to: int,
        codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
    ) -> bytes:
        return encode_op_reply(
            self.documents,
            request_id,
            response_to,
            response_flags=self.response_flags,
            cursor_id=self.cursor_id,
            starting_from=self.starting_from,
            codec_options=codec_options,
        )


def encode_op_query(
    full_collection_name: str,
    query: EncodedOrDocument,
    request_id: int,
    *,
    flags: int = 0,
    number_to_skip: int = 0,
    number_to_return: int = -1,
    return_fields_selector: Optional[EncodedOrDocument] = None,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
    limits: Optional[SizeLimits] = None,
) -> bytes:
    """Encode a whole OP_QUERY, header included.

    With ``limits``, the query document is checked against maxBsonObjectSize + 16 KiB
    (it is a command in every use mongocore has) and the message against
    maxMessageSizeBytes before the bytes are built.
    """
    if flags & ~_QUERY_KNOWN_FLAGS:
        raise ValueError(f"OP_QUERY flags 0x{flags:x} set reserved bits")
    if not full_collection_name or "\x00" in full_collection_name:
        raise ValueError(f"invalid OP_QUERY namespace {full_collection_name!r}")
    namespace = full_collection_name.encode("utf-8") + b"\x00"
    encoded_query = encode_document(query, codec_options)
    length = HEADER_SIZE + 4 + len(namespace) + _SKIP_RETURN.size + len(encoded_query)
    encoded_fields: Optional[Buffer] = None
    if return_fields_selector is not None:
        encoded_fields = encode_document(return_fields_selector, codec_options)
        length += len(encoded_fields)
    if limits is not None:
        check_command_size(len(encoded_query), limits.max_bson_object_size, "OP_QUERY")
        check_message_size(length, limits.max_message_size_bytes)
    try:
        parts: list[Buffer] = [
            pack_header(length, request_id, 0, _OP_QUERY),
            _INT32.pack(flags),
            namespace,
            _SKIP_RETURN.pack(number_to_skip, number_to_return),
            encoded_query,
        ]
    except struct.error as exc:
        raise ValueError(f"OP_QUERY field out of int32 range: {exc}") from exc
    if encoded_fields is not None:
        parts.append(encoded_fields)
    return b"".join(parts)


def encode_handshake_query(
    command: EncodedOrDocument,
    request_id: int,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
) -> bytes:
    """Encode the first handshake command as OP_QUERY on ``admin.$cmd``.

    numberToReturn is -1 (one document, close the cursor) and secondaryOk is set, so
    that any member answers whatever its state.
    """
    return encode_op_query(
        "admin.$cmd",
        command,
        request_id,
        flags=QUERY_SECONDARY_OK,
        number_to_return=-1,
        codec_options=codec_options,
    )


def decode_op_query(data: Buffer, codec_options: AnyCodecOptions = DEFAULT_OPTIONS) -> OpQuery:
    """Decode the part of an OP_QUERY after its 16-byte header; ProtocolError if malformed."""
    size = len(data)
    # flags, a one-character namespace and its NUL, skip and return, an empty document.
    if size < 4 + 2 + 8 + 5:
        raise ProtocolError(f"OP_QUERY: {size} bytes after the header is too short")
    view = data if isinstance(data, memoryview) else memoryview(data)
    flags: int = _unpack_int32(data, 0)[0]
    if flags & ~_QUERY_KNOWN_FLAGS:
        raise ProtocolError(f"OP_QUERY: reserved flag bits set (flags 0x{flags & 0xFFFFFFFF:08x})")
    namespace, pos = read_cstring(data, 4, size, "OP_QUERY fullCollectionName")
    if not namespace:
        raise ProtocolError("OP_QUERY: empty fullCollectionName")
    if pos + 8 > size:
        raise ProtocolError("OP_QUERY: truncated before numberToSkip and numberToReturn")
    number_to_skip, number_to_return = _SKIP_RETURN.unpack_from(data, pos)
    documents = decode_documents(view[pos + 8 :], codec_options, "OP_QUERY documents")
    if not 1 <= len(documents) <= 2:
        raise ProtocolError(
            f"OP_QUERY: expected a query and an optional field selector,"
            f" got {len(documents)} documents"
        )
    return OpQuery(
        flags,
        namespace,
        number_to_skip,
        number_to_return,
        documents[0],
        documents[1] if len(documents) == 2 else None,
    )


def encode_op_reply(
    documents: Sequence[EncodedOrDocument],
    request_id: int,
    response_to: int,
    *,
    response_flags: int = 0,
    cursor_id: int = 0,
    starting_from: int = 0,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
) -> bytes:
    """Encode a whole OP_REPLY, header included (the server side of the handshake)."""
    if response_flags & REPLY_QUERY_FAILURE and len(documents) != 1:
        raise ValueError("an OP_REPLY with QueryFailure carries exactly one $err document")
    encoded = [encode_document(document, codec_options) for document in documents]
    length = HEADER_SIZE + _REPLY_FIELDS_SIZE + sum(map(len, encoded))
    try:
        fields = _REPLY_FIELDS.pack(response_flags, cursor_id, starting_from, len(encoded))
        header = pack_header(length, request_id, response_to, _OP_REPLY)
    except struct.error as exc:
        raise ValueError(f"OP_REPLY field out of range: {exc}") from exc
    return b"".join([header, fields, *encoded])


def decode_op_reply(data: Buffer, codec_options: AnyCodecOptions = DEFAULT_OPTIONS) -> OpReply:
    """Decode the part of an OP_REPLY after its 16-byte header; ProtocolError if malformed.

    numberReturned must match the documents present, and a QueryFailure reply must
    carry exactly one document with an ``$err`` field.
    """
    size = len(data)
    if size < _REPLY_FIELDS_SIZE:
        raise ProtocolError(
            f"OP_REPLY: {size} bytes after the header; the fixed fields need {_REPLY_FIELDS_SIZE}"
        )
    response_flags, cursor_id, starting_from, number_returned = _REPLY_FIELDS.unpack_from(data)
    if number_returned < 0:
        raise ProtocolError(f"OP_REPLY: negative numberReturned {number_returned}")
    view = data if isinstance(data, memoryview) else memoryview(data)
    documents = decode_documents(view[_REPLY_FIELDS_SIZE:], codec_options, "OP_REPLY documents")
    if len(documents) != number_returned:
        raise ProtocolError(
            f"OP_REPLY: numberReturned is {number_returned} but {len(documents)} documents follow"
        )
    if response_flags & REPLY_QUERY_FAILURE and (
        number_returned != 1 or not has_field(documents[0], "$err", "OP_REPLY document")
    ):
        raise ProtocolError("OP_REPLY: QueryFailure is set without exactly one $err document")
    return OpReply(response_flags, cursor_id, starting_from, number_returned, documents)
