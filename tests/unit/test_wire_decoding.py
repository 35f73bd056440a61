"""Wire codec details: codec options reach every decoder and encoder, the exact bounds of
each message part, and the error messages that name the part that was malformed.

Spec: the MongoDB Wire Protocol ("Standard Message Header", OP_MSG with its sections
and checksum, legacy OP_QUERY and OP_REPLY) and Wire Compression in Drivers
("OP_COMPRESSED").
"""

from __future__ import annotations

import struct
import sys
import types
import uuid
from collections import OrderedDict
from typing import Any

import bson
import pytest
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from mongocore.core.compression import compressor_for
from mongocore.core.wire import (
    CHECKSUM_PRESENT,
    HEADER_SIZE,
    MAX_INT32,
    REPLY_QUERY_FAILURE,
    OpMsg,
    OpQuery,
    OpReply,
    SizeLimits,
    check_batch_size,
    check_command_size,
    check_document_size,
    check_sequence_sizes,
    decode_body,
    decode_message,
    decode_op_compressed,
    decode_op_msg,
    encode_handshake_query,
    encode_op_compressed,
    encode_op_msg,
    encode_op_query,
    encode_op_reply,
    op_msg_overhead,
    read_message,
    split_batches,
    unpack_header,
)
from mongocore.core.wire.legacy import decode_op_query, decode_op_reply
from mongocore.errors import DocumentTooLarge, OperationFailure, ProtocolError
from mongocore.io.counters import request_id_generator

MAX = 48_000_000
ORDERED: CodecOptions[Any] = CodecOptions(document_class=OrderedDict)
UUIDS: CodecOptions[Any] = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
AN_ID = uuid.UUID(int=7)


def body_of(message: bytes) -> bytes:
    return message[HEADER_SIZE:]


def stream(data: bytes) -> Any:
    position = 0

    def recv_exactly(n: int) -> bytes:
        nonlocal position
        chunk = data[position : position + n]
        position += n
        return chunk

    return recv_exactly


def protocol_error(call: Any, *args: Any) -> str:
    with pytest.raises(ProtocolError) as raised:
        call(*args)
    return str(raised.value)


# --- codec options reach every decoder and encoder ---


@pytest.mark.parametrize(
    "message",
    [
        encode_op_msg({"b": 1}, 1),  # one body section: the fast path
        encode_op_query("db.$cmd", {"b": 1}, 1),
        encode_op_reply([{"b": 1}], 1, 2),
        encode_op_compressed(encode_op_msg({"b": 1}, 1), compressor_for("noop")),
        encode_op_compressed(encode_op_reply([{"b": 1}], 1, 2), compressor_for("zlib")),
    ],
)
def test_codec_options_apply_to_every_opcode(message: bytes) -> None:
    for decoded in (
        decode_message(message, MAX, ORDERED)[1],
        read_message(stream(message), MAX, ORDERED)[1],
        decode_body(unpack_header(message), body_of(message), ORDERED),
    ):
        if isinstance(decoded, OpMsg):
            document = decoded.body
        elif isinstance(decoded, OpQuery):
            document = decoded.query
        else:
            document = decoded.documents[0]
        assert type(document) is OrderedDict and document == {"b": 1}


def test_legacy_decoders_take_codec_options() -> None:
    query = decode_op_query(body_of(encode_op_query("db.$cmd", {"b": 1}, 1)), ORDERED)
    assert type(query.query) is OrderedDict
    reply = decode_op_reply(body_of(encode_op_reply([{"b": 1}], 1, 2)), ORDERED)
    assert type(reply.documents[0]) is OrderedDict
    single = decode_op_msg(body_of(encode_op_msg({"b": 1}, 1)), ORDERED)
    assert type(single.body) is OrderedDict
    compressed = encode_op_compressed(
        encode_op_query("db.$cmd", {"b": 1}, 1), compressor_for("noop")
    )
    unwrapped = decode_op_compressed(unpack_header(compressed), body_of(compressed), ORDERED)
    assert isinstance(unwrapped.message, OpQuery) and type(unwrapped.message.query) is OrderedDict


def test_encoders_use_the_codec_options() -> None:
    document = {"u": AN_ID}
    # The default options refuse to encode a UUID without a representation.
    with pytest.raises(ValueError):
        encode_op_msg(document, 1)
    encoded = [
        encode_op_msg(document, 1, codec_options=UUIDS),
        encode_op_msg({"insert": "c"}, 1, sequences={"documents": [document]}, codec_options=UUIDS),
        OpMsg(0, document, {}).encode(1, codec_options=UUIDS),
        encode_op_query("db.$cmd", document, 1, codec_options=UUIDS),
        OpQuery(0, "db.$cmd", 0, -1, document).encode(1, UUIDS),
        encode_handshake_query(document, 1, UUIDS),
        encode_op_reply([document], 1, 2, codec_options=UUIDS),
        OpReply(0, 0, 0, 1, [document]).encode(1, 2, UUIDS),
    ]
    for message in encoded:
        _, decoded = decode_message(message, MAX, UUIDS)
        assert repr(AN_ID) in repr(decoded)


def test_replies_and_messages_encode_with_their_defaults() -> None:
    _, reply = decode_message(encode_op_reply([{"ok": 1}], 1, 2), MAX)
    assert isinstance(reply, OpReply) and reply.response_flags == 0 and reply.cursor_id == 0
    _, message = decode_message(OpMsg(0, {"ok": 1}, {}).encode(9), MAX)
    header = unpack_header(OpMsg(0, {"ok": 1}, {}).encode(9))
    assert header.response_to == 0 and isinstance(message, OpMsg)


def test_the_checksum_is_verified_through_decode_body() -> None:
    message = bytearray(encode_op_msg({"ping": 1}, 1, flag_bits=CHECKSUM_PRESENT))
    message[-1] ^= 0xFF
    header = unpack_header(message)
    text = protocol_error(
        decode_body, header, body_of(bytes(message)), ORDERED, bytes(message[:16])
    )
    assert text.startswith("OP_MSG: checksum mismatch")


# --- OP_COMPRESSED ---


def test_uncompressed_size_bound_includes_the_header() -> None:
    message = encode_op_msg({"ping": 1}, 1)
    wrapped = encode_op_compressed(message, compressor_for("noop"))
    exact = len(message)  # uncompressedSize + 16
    decode_op_compressed(unpack_header(wrapped), body_of(wrapped), max_message_size=exact)
    text = protocol_error(
        decode_op_compressed, unpack_header(wrapped), body_of(wrapped), ORDERED, exact - 1
    )
    size = exact - HEADER_SIZE
    assert (
        text
        == f"OP_COMPRESSED uncompressedSize {size} exceeds the maximum message size {exact - 1}"
    )
    # read_message passes its limit on to the unwrapping: the compressed message fits,
    # what it inflates to does not.
    large = encode_op_msg({"text": "compressible " * 100}, 1)
    small = encode_op_compressed(large, compressor_for("zlib"))
    assert len(small) < len(large) - 1
    read_message(stream(small), len(large))
    with pytest.raises(ProtocolError, match=r"^OP_COMPRESSED uncompressedSize"):
        read_message(stream(small), len(large) - 1)


# --- OP_MSG: bounds and messages ---


def test_op_msg_shortest_forms() -> None:
    assert protocol_error(decode_op_msg, b"\x00" * 4) == (
        "OP_MSG: 4 bytes after the header; need flagBits and a section"
    )
    assert protocol_error(decode_op_msg, b"\x00" * 5) == (
        "OP_MSG: section of kind 0 at offset 20 is truncated before its size"
    )
    # The size field fits exactly (the bytes available count from it), the section does not.
    assert protocol_error(decode_op_msg, b"\x00" * 5 + struct.pack("<i", 5)) == (
        "OP_MSG: body section at offset 20 declares 5 bytes, 4 available"
    )
    checksum_flag = struct.pack("<I", CHECKSUM_PRESENT)
    assert protocol_error(decode_op_msg, checksum_flag + b"\x00" * 4) == (
        "OP_MSG: checksumPresent is set but 8 bytes cannot hold flagBits, a section and the "
        "checksum"
    )
    assert protocol_error(decode_op_msg, checksum_flag + b"\x00" * 5) == (
        "OP_MSG: section of kind 0 at offset 20 is truncated before its size"
    )


def body_section(document: bytes) -> bytes:
    return b"\x00" + document


def sequence_section(identifier: bytes, *documents: bytes) -> bytes:
    content = identifier + b"".join(documents)
    return b"\x01" + struct.pack("<i", 4 + len(content)) + content


PING = bson.encode({"ping": 1})
FLAGS = b"\x00\x00\x00\x00"


def test_op_msg_section_messages_count_from_the_section() -> None:
    short_body = FLAGS + b"\x00" + struct.pack("<i", 50) + b"\x00" * 6
    assert protocol_error(decode_op_msg, short_body) == (
        "OP_MSG: body section at offset 20 declares 50 bytes, 10 available"
    )
    short_sequence = FLAGS + body_section(PING) + b"\x01" + struct.pack("<i", 90) + b"d\x00" * 3
    assert protocol_error(decode_op_msg, short_sequence) == (
        f"OP_MSG: document sequence at offset {20 + len(PING) + 1} declares 90 bytes, 10 available"
    )


def test_op_msg_part_names_in_errors() -> None:
    bad = struct.pack("<i", 6) + b"\x42\x00"
    slow_path = FLAGS + body_section(bad) + sequence_section(b"d\x00", PING)
    assert protocol_error(decode_op_msg, slow_path).startswith(
        "OP_MSG body section: invalid BSON document: "
    )
    assert protocol_error(decode_op_msg, FLAGS + body_section(bad)).startswith(
        "OP_MSG body section: invalid BSON document: "
    )
    no_nul = FLAGS + body_section(PING) + b"\x01" + struct.pack("<i", 7) + b"abc" + PING
    assert protocol_error(decode_op_msg, no_nul) == (
        "OP_MSG document sequence identifier: string is not NUL-terminated within its bounds"
    )
    only_sequence = FLAGS + sequence_section(b"d\x00", PING)
    assert protocol_error(decode_op_msg, only_sequence) == "OP_MSG: no body (kind 0) section"


def test_a_document_sequence_filling_the_message_is_not_a_body() -> None:
    # A kind 1 section whose size is a multiple of 256 and fills the message.
    document = bson.encode({"x": "a" * 237})
    section = sequence_section(b"d\x00", document)
    assert len(section) == 1 + 256
    assert protocol_error(decode_op_msg, FLAGS + section) == "OP_MSG: no body (kind 0) section"


def test_raw_body_checked_against_sequence_names_reports_the_body() -> None:
    options: CodecOptions[Any] = CodecOptions(document_class=RawBSONDocument)
    bad = struct.pack("<i", 9) + b"\x42a\x00" + b"\x00\x00"
    data = FLAGS + body_section(bad) + sequence_section(b"documents\x00", PING)
    assert protocol_error(decode_op_msg, data, options).startswith(
        "OP_MSG body section: invalid BSON document: "
    )


def test_long_sequence_identifiers_are_read_from_any_buffer() -> None:
    name = "n" * 300
    message = encode_op_msg({"insert": "c"}, 1, sequences={name: [{"a": 1}]})
    for data in (body_of(message), memoryview(message)[HEADER_SIZE:], bytearray(body_of(message))):
        decoded = decode_op_msg(data)
        assert list(decoded.sequences) == [name]
    # A name must end inside its own section, even when a NUL follows later.
    cut = FLAGS + b"\x01" + struct.pack("<i", 8) + b"abcd" + body_section(PING)
    assert protocol_error(decode_op_msg, cut) == (
        "OP_MSG document sequence identifier: string is not NUL-terminated within its bounds"
    )


def test_a_sequence_at_its_limits_passes_one_past_them_names_what_failed() -> None:
    limits = SizeLimits(max_bson_object_size=10, max_write_batch_size=3)
    check_sequence_sizes([10, 1, 10], limits, "documents")
    check_sequence_sizes([], limits, "documents")
    with pytest.raises(DocumentTooLarge) as raised:
        check_sequence_sizes([10, 11, 12], limits, "updates")
    assert str(raised.value) == (
        "document at index 1 of sequence 'updates' is 11 bytes, which exceeds"
        " maxBsonObjectSize (10 bytes)"
    )
    with pytest.raises(DocumentTooLarge) as raised:
        check_sequence_sizes([1, 1, 1, 1], limits, "deletes")
    assert str(raised.value) == (
        "document sequence 'deletes' has 4 statements, which exceeds maxWriteBatchSize (3)"
    )


def test_document_sequence_batch_limit_names_the_sequence() -> None:
    limits = SizeLimits(max_write_batch_size=1)
    with pytest.raises(DocumentTooLarge) as raised:
        encode_op_msg({"insert": "c"}, 1, sequences={"documents": [{}, {}]}, limits=limits)
    assert str(raised.value) == (
        "document sequence 'documents' has 2 statements, which exceeds maxWriteBatchSize (1)"
    )


# --- OP_QUERY and OP_REPLY ---


def query_body(flags: int, namespace: bytes, rest: bytes) -> bytes:
    return struct.pack("<i", flags) + namespace + rest


EMPTY = bson.encode({})


def test_op_query_bounds_and_messages() -> None:
    shortest = query_body(0, b"a\x00", struct.pack("<ii", 0, -1) + EMPTY)
    assert len(shortest) == 19
    assert decode_op_query(shortest).full_collection_name == "a"
    assert protocol_error(decode_op_query, shortest[:18]) == (
        "OP_QUERY: 18 bytes after the header is too short"
    )
    assert protocol_error(decode_op_query, query_body(1, b"a\x00", b"\x00" * 13)) == (
        "OP_QUERY: reserved flag bits set (flags 0x00000001)"
    )
    assert protocol_error(decode_op_query, query_body(0, b"abc", b"d" * 16)) == (
        "OP_QUERY fullCollectionName: string is not NUL-terminated within its bounds"
    )
    assert protocol_error(decode_op_query, query_body(0, b"\x00", b"\x00" * 14)) == (
        "OP_QUERY: empty fullCollectionName"
    )
    assert protocol_error(decode_op_query, query_body(0, b"a" * 14 + b"\x00", b"\x00" * 4)) == (
        "OP_QUERY: truncated before numberToSkip and numberToReturn"
    )
    garbage = query_body(0, b"a\x00", struct.pack("<ii", 0, -1) + b"\x05\x00\x00\x00\x01")
    assert protocol_error(decode_op_query, garbage).startswith(
        "OP_QUERY documents: invalid BSON documents: "
    )


def test_op_query_namespace_must_not_contain_nul() -> None:
    with pytest.raises(ValueError, match="invalid OP_QUERY namespace"):
        encode_op_query("db\x00.$cmd", {"ping": 1}, 1)


def test_op_reply_messages() -> None:
    with pytest.raises(ValueError) as raised:
        encode_op_reply([], 1, 2, response_flags=REPLY_QUERY_FAILURE)
    assert str(raised.value) == "an OP_REPLY with QueryFailure carries exactly one $err document"
    with pytest.raises(ValueError) as raised:
        encode_op_reply([], 1, 2, cursor_id=2**64)
    assert str(raised.value).startswith("OP_REPLY field out of range: ")
    fields = struct.pack("<iqii", 0, 0, 0, 1)
    assert protocol_error(decode_op_reply, fields + b"\x05\x00\x00\x00\x01").startswith(
        "OP_REPLY documents: invalid BSON documents: "
    )
    failure = struct.pack("<iqii", REPLY_QUERY_FAILURE, 0, 0, 1) + bson.encode({"ok": 0})
    assert protocol_error(decode_op_reply, failure) == (
        "OP_REPLY: QueryFailure is set without exactly one $err document"
    )
    options: CodecOptions[Any] = CodecOptions(document_class=RawBSONDocument)
    raw_bad = struct.pack("<iqii", REPLY_QUERY_FAILURE, 0, 0, 1) + struct.pack("<i", 9)
    raw_bad += b"\x42a\x00\x00\x00"
    assert protocol_error(decode_op_reply, raw_bad, options).startswith(
        "OP_REPLY document: invalid BSON document: "
    )


def test_query_failure_with_a_non_integer_code() -> None:
    reply = OpReply(REPLY_QUERY_FAILURE, 0, 0, 1, [{"$err": "bad", "code": "E1"}])
    with pytest.raises(OperationFailure) as raised:
        reply.command_reply()
    assert raised.value.code is None and str(raised.value).startswith("bad")


# --- size limits ---


def test_size_limit_messages_name_what_is_too_large() -> None:
    cases = [
        (
            check_document_size,
            (101, 100),
            "document is 101 bytes, which exceeds maxBsonObjectSize (100 bytes)",
        ),
        (
            check_command_size,
            (16_485, 100),
            "command document is 16485 bytes, which exceeds maxBsonObjectSize (100 bytes) plus "
            "the 16384-byte command allowance (16484 bytes)",
        ),
        (
            check_batch_size,
            (6, 5),
            "write batch has 6 statements, which exceeds maxWriteBatchSize (5)",
        ),
    ]
    for check, args, message in cases:
        with pytest.raises(DocumentTooLarge) as raised:
            check(*args)
        assert str(raised.value) == message


def test_op_msg_overhead_has_no_checksum_by_default() -> None:
    message = encode_op_msg({"insert": "c"}, 1, sequences={"documents": [{"a": 1}]})
    body_size = len(bson.encode({"insert": "c"}))
    documents_size = len(bson.encode({"a": 1}))
    assert op_msg_overhead(body_size, "documents") + documents_size == len(message)
    assert op_msg_overhead(body_size, "documents", checksum=True) == (
        op_msg_overhead(body_size, "documents") + 4
    )


def test_a_document_of_exactly_the_limit_fits_a_batch() -> None:
    limits = SizeLimits(max_bson_object_size=10, max_message_size_bytes=1000)
    assert split_batches([b"x" * 10, b"y" * 10], 0, limits) == [range(0, 2)]
    with pytest.raises(DocumentTooLarge, match="document at index 1 is 11 bytes"):
        split_batches([b"x" * 10, b"y" * 11], 0, limits)


@pytest.mark.parametrize("gil", [True, False])
def test_request_ids_with_and_without_the_interpreter_lock(
    gil: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A free-threaded build (sys._is_gil_enabled() false) gets ids taken under a lock.
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: gil, raising=False)
    ids = request_id_generator(MAX_INT32 - 1)
    assert isinstance(ids, types.FunctionType) is not gil  # a Python function: the lock
    assert [ids(), ids(), ids()] == [MAX_INT32, 1, 2]


def test_request_ids_may_start_at_the_largest_int32() -> None:
    ids = request_id_generator(MAX_INT32)
    assert ids() == 1
    with pytest.raises(ValueError):
        request_id_generator(MAX_INT32 + 1)
