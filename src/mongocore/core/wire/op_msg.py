"""OP_MSG (opcode 2013), the message of every command and every reply since MongoDB 3.6.

Implements the OP_MSG specification ("OP_MSG" in the MongoDB Wire Protocol):

    uint32    flagBits
    Section+  sections     kind 0: one body document
                           kind 1: int32 size, cstring identifier, document*
    [uint32   checksum]    CRC-32C of all preceding bytes, if checksumPresent

Flag bits 0-15 are "required": a receiver must reject a message with one it does not
know. Bits 16-31 are optional and ignored when unknown. The same functions encode
requests (client) and replies (simulated server); the codec is pure, bytes in and out.

Checksums: mongocore sends none unless asked. A received checksum is verified
(pure-Python CRC-32C) whenever the decoder is given the raw header it covers, which
read_message and decode_message always do.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Optional

from mongocore.core.wire._documents import (
    DEFAULT_OPTIONS,
    ENCODE_OPTIONS,
    AnyCodecOptions,
    Buffer,
    EncodedOrDocument,
    _bson_to_dict,
    _dict_to_bson,
    decode_document,
    decode_documents,
    encode_document,
    has_field,
    read_cstring,
)
from mongocore.core.wire.checksum import crc32c
from mongocore.core.wire.header import HEADER_SIZE, OpCode
from mongocore.core.wire.limits import (
    COMMAND_OVERHEAD,
    SizeLimits,
    check_message_size,
    check_sequence_sizes,
    command_too_large,
    message_too_large,
)
from mongocore.errors import ProtocolError

_new_tuple = tuple.__new__

__all__ = [
    "CHECKSUM_PRESENT",
    "EXHAUST_ALLOWED",
    "MORE_TO_COME",
    "OpMsg",
    "decode_op_msg",
    "encode_op_msg",
]

CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16

_REQUIRED_BITS = 0xFFFF
_KNOWN_REQUIRED_BITS = CHECKSUM_PRESENT | MORE_TO_COME

_OP_MSG = int(OpCode.OP_MSG)
#: A body or document given already encoded (the other kind of EncodedOrDocument).
_ENCODED = (bytes, bytearray, memoryview)

# Header, flagBits and the kind byte of the body section: one pack for the common case.
_PREFIX = struct.Struct("<iiiiIB")
_pack_prefix = _PREFIX.pack
# Kind byte and size of a document sequence section.
_SEQUENCE_PREFIX = struct.Struct("<Bi")
_pack_sequence_prefix = _SEQUENCE_PREFIX.pack
_UINT32 = struct.Struct("<I")
_INT32 = struct.Struct("<i")
_unpack_uint32 = _UINT32.unpack_from
_unpack_int32 = _INT32.unpack_from


class OpMsg(NamedTuple):
    """A decoded OP_MSG: flag bits, the body document and the document sequences."""

    flag_bits: int
    body: Any
    sequences: dict[str, list[Any]]
    checksum: Optional[int] = None

    @property
    def checksum_present(self) -> bool:
        return bool(self.flag_bits & CHECKSUM_PRESENT)

    @property
    def more_to_come(self) -> bool:
        """The sender will send another message without waiting for a reply."""
        return bool(self.flag_bits & MORE_TO_COME)

    @property
    def exhaust_allowed(self) -> bool:
        """The requester accepts several replies with moreToCome set."""
        return bool(self.flag_bits & EXHAUST_ALLOWED)

    def to_document(self) -> dict[str, Any]:
        """The command as the server reads it: the body plus each sequence as an array field."""
        document = dict(self.body)
        document.update(self.sequences)
        return document

    def encode(
        self,
        request_id: int,
        response_to: int = 0,
        codec_options: AnyCodecOptions = ENCODE_OPTIONS,
    ) -> bytes:
        """Encode this message again (a new checksum is computed if the flag is set)."""
        return encode_op_msg(
            self.body,
            request_id,
            response_to=response_to,
            flag_bits=self.flag_bits,
            sequences=self.sequences,
            codec_options=codec_options,
        )


def encode_op_msg(
    body: EncodedOrDocument,
    request_id: int,
    *,
    response_to: int = 0,
    flag_bits: int = 0,
    sequences: Optional[Mapping[str, Sequence[EncodedOrDocument]]] = None,
    codec_options: AnyCodecOptions = ENCODE_OPTIONS,
    limits: Optional[SizeLimits] = None,
) -> bytes:
    """Encode a whole OP_MSG, header included.

    ``body`` is the command (or reply) document, or its BSON bytes; it is encoded
    exactly once. ``sequences`` maps an identifier ("documents", "updates",
    "deletes") to documents sent as a kind-1 section, each a mapping or BSON bytes.
    ``flag_bits`` may hold MORE_TO_COME, EXHAUST_ALLOWED and CHECKSUM_PRESENT (the
    CRC-32C is then computed and appended).

    With ``limits``, the sizes are checked before the bytes are built: the body
    against maxBsonObjectSize + 16 KiB, each sequence document against
    maxBsonObjectSize, each sequence's length against maxWriteBatchSize, and the whole
    message against maxMessageSizeBytes; a breach raises DocumentTooLarge.

    Also with ``limits``: when the body is a dict and every sequence document is a dict
    (none given encoded), the sequences travel inside the body, as arrays named by
    their identifiers, if the body then stays within maxBsonObjectSize. The server
    reads both forms alike; this one is a single encoding, and every document in it is
    smaller than the body, so within its own limit. Encoded documents (a batch split by
    size), or documents too large together, go as document sequences.
    """
    unknown = flag_bits & _REQUIRED_BITS & ~_KNOWN_REQUIRED_BITS
    if unknown or not 0 <= flag_bits <= 0xFFFFFFFF:
        raise ValueError(f"OP_MSG flagBits 0x{flag_bits:x} has bits this codec does not know")
    encoded_body: Optional[Buffer] = None
    if sequences and limits is not None and type(body) is dict:
        merged = _body_with_sequences(body, sequences, limits.max_write_batch_size)
        if merged is not None:
            encoded_merged = _dict_to_bson(merged, False, codec_options)
            if len(encoded_merged) <= limits.max_bson_object_size:
                encoded_body, sequences = encoded_merged, None
    if encoded_body is None:
        # encode_document() without its call for the usual body, a dict.
        encoded_body = (
            _dict_to_bson(body, False, codec_options)
            if type(body) is dict
            else encode_document(body, codec_options)
        )
    body_size = len(encoded_body)
    with_checksum = flag_bits & CHECKSUM_PRESENT
    # (The checks of check_command_size and check_message_size, without their calls.)
    if limits is not None and body_size > limits.max_bson_object_size + COMMAND_OVERHEAD:
        raise command_too_large(body_size, limits.max_bson_object_size)

    if not sequences and not with_checksum:
        # The common case: one body section, a single copy of the encoded body.
        length = HEADER_SIZE + 5 + body_size
        if limits is not None and length > limits.max_message_size_bytes:
            raise message_too_large(length, limits.max_message_size_bytes)
        try:
            prefix = _pack_prefix(length, request_id, response_to, _OP_MSG, flag_bits, 0)
        except struct.error as exc:
            raise ValueError(f"OP_MSG header field out of int32 range: {exc}") from exc
        return prefix + encoded_body

    parts: list[Buffer] = [b"", encoded_body]
    length = HEADER_SIZE + 5 + body_size
    for identifier, documents in (sequences or {}).items():
        _check_identifier(identifier, body)
        ident = identifier.encode("utf-8") + b"\x00"
        # Encoded documents, what the write helpers send, pass through without a call
        # each (encode_document would return them as they are).
        encoded = [
            document if type(document) is bytes else encode_document(document, codec_options)
            for document in documents
        ]
        sizes = list(map(len, encoded))
        if limits is not None:
            check_sequence_sizes(sizes, limits, identifier)
        section_size = 4 + len(ident) + sum(sizes)
        parts.append(_pack_sequence_prefix(1, section_size))
        parts.append(ident)
        parts.extend(encoded)
        length += 1 + section_size
    if with_checksum:
        length += 4
    if limits is not None:
        check_message_size(length, limits.max_message_size_bytes)
    try:
        parts[0] = _pack_prefix(length, request_id, response_to, _OP_MSG, flag_bits, 0)
    except struct.error as exc:
        raise ValueError(f"OP_MSG header field out of int32 range: {exc}") from exc
    if with_checksum:
        crc = 0
        for part in parts:
            crc = crc32c(part, crc)
        parts.append(_UINT32.pack(crc))
    return b"".join(parts)


def _body_with_sequences(
    body: dict[str, Any],
    sequences: Mapping[str, Sequence[EncodedOrDocument]],
    max_write_batch_size: int,
) -> Optional[dict[str, Any]]:
    """A copy of ``body`` with each sequence as an array field; None when a document is
    not a dict, or a sequence has more than maxWriteBatchSize documents (the sequence
    path then sends or refuses them, saying which)."""
    merged = dict(body)
    for identifier, documents in sequences.items():
        if not identifier or "\x00" in identifier or identifier in body:
            _check_identifier(identifier, body)  # raises, saying why
        if len(documents) > max_write_batch_size:
            return None
        for document in documents:
            if type(document) is not dict:
                return None
        merged[identifier] = list(documents)
    return merged


def _check_identifier(identifier: str, body: EncodedOrDocument) -> None:
    if not identifier or "\x00" in identifier:
        raise ValueError(f"invalid document sequence identifier {identifier!r}")
    # (Not isinstance(body, Mapping): against an abstract class that is a Python call.)
    if not isinstance(body, _ENCODED) and identifier in body:
        # The server rejects a field given both in the body and as a sequence.
        raise ValueError(f"{identifier!r} is both a body field and a document sequence")


def decode_op_msg(
    data: Buffer,
    codec_options: AnyCodecOptions = DEFAULT_OPTIONS,
    raw_header: Optional[Buffer] = None,
) -> OpMsg:
    """Decode the part of an OP_MSG after its 16-byte header.

    Raises ProtocolError, saying what was wrong, for: a message too short for its
    flag bits and a section; an unknown required flag bit; a checksum that does not
    match (verified only when ``raw_header``, the 16 header bytes it also covers, is
    given); a section running past the end; an unknown section kind; zero or several
    body sections; a bad or duplicate sequence identifier, or one that is also a body
    field; invalid BSON. (With RawBSONDocument as the document class, bson checks a
    document's length and terminator here but its contents only on first access.)
    """
    size = len(data)
    if size < 5:
        raise ProtocolError(f"OP_MSG: {size} bytes after the header; need flagBits and a section")
    view = data if isinstance(data, memoryview) else memoryview(data)
    flag_bits: int = _unpack_uint32(data, 0)[0]
    unknown = flag_bits & _REQUIRED_BITS & ~_KNOWN_REQUIRED_BITS
    if unknown:
        raise ProtocolError(
            f"OP_MSG: unknown required flag bits 0x{unknown:04x} set (flagBits 0x{flag_bits:08x})"
        )
    end = size
    checksum: Optional[int] = None
    if flag_bits & CHECKSUM_PRESENT:
        end = size - 4
        if end < 5:
            raise ProtocolError(
                f"OP_MSG: checksumPresent is set but {size} bytes cannot hold"
                " flagBits, a section and the checksum"
            )
        checksum = _unpack_uint32(data, end)[0]
        if raw_header is not None:
            actual = crc32c(view[:end], crc32c(raw_header))
            if actual != checksum:
                raise ProtocolError(
                    f"OP_MSG: checksum mismatch: message says 0x{checksum:08x},"
                    f" content gives 0x{actual:08x}"
                )

    if end == size and size >= 10 and data[4] == 0 and _unpack_int32(data, 5)[0] == size - 5:
        # The usual reply: one body section filling the message, nothing else to check.
        try:
            # OpMsg(...) without the NamedTuple's generated __new__ (a Python call).
            return _new_tuple(OpMsg, (flag_bits, _bson_to_dict(view[5:], codec_options), {}, None))
        except Exception as exc:
            raise ProtocolError(f"OP_MSG body section: invalid BSON document: {exc}") from exc

    body: Any = None
    sequences: dict[str, list[Any]] = {}
    pos = 4
    while pos < end:
        kind = data[pos]
        offset = HEADER_SIZE + pos
        pos += 1
        if pos + 4 > end:
            raise ProtocolError(
                f"OP_MSG: section of kind {kind} at offset {offset} is truncated before its size"
            )
        section_size: int = _unpack_int32(data, pos)[0]
        section_end = pos + section_size
        if kind == 0:
            if body is not None:
                raise ProtocolError(f"OP_MSG: second body (kind 0) section at offset {offset}")
            if section_size < 5 or section_end > end:
                raise ProtocolError(
                    f"OP_MSG: body section at offset {offset} declares {section_size} bytes,"
                    f" {end - pos} available"
                )
            body = decode_document(view[pos:section_end], codec_options, "OP_MSG body section")
        elif kind == 1:
            if section_size < 6 or section_end > end:
                raise ProtocolError(
                    f"OP_MSG: document sequence at offset {offset} declares {section_size}"
                    f" bytes, {end - pos} available"
                )
            identifier, docs_start = read_cstring(
                data, pos + 4, section_end, "OP_MSG document sequence identifier"
            )
            if not identifier:
                raise ProtocolError(f"OP_MSG: document sequence at offset {offset} has no name")
            if identifier in sequences:
                raise ProtocolError(f"OP_MSG: document sequence {identifier!r} appears twice")
            sequences[identifier] = decode_documents(
                view[docs_start:section_end],
                codec_options,
                f"OP_MSG document sequence {identifier!r}",
            )
        else:
            raise ProtocolError(f"OP_MSG: unknown section kind {kind} at offset {offset}")
        pos = section_end

    if body is None:
        raise ProtocolError("OP_MSG: no body (kind 0) section")
    for identifier in sequences:
        if has_field(body, identifier, "OP_MSG body section"):
            raise ProtocolError(
                f"OP_MSG: {identifier!r} is both a body field and a document sequence"
            )
    return OpMsg(flag_bits, body, sequences, checksum)
