"""Unit tests of the wire codec: layouts, round trips, malformed input, size limits."""

from __future__ import annotations

import datetime
import struct
import threading
import types
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import bson
import mockupdb
import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from mongocore.core.wire import (
    CHECKSUM_PRESENT,
    COMMAND_OVERHEAD,
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    EXHAUST_ALLOWED,
    HEADER_SIZE,
    MAX_INT32,
    MORE_TO_COME,
    QUERY_EXHAUST,
    QUERY_SECONDARY_OK,
    REPLY_AWAIT_CAPABLE,
    REPLY_CURSOR_NOT_FOUND,
    REPLY_QUERY_FAILURE,
    MsgHeader,
    OpCode,
    OpMsg,
    OpQuery,
    OpReply,
    SizeLimits,
    check_batch_size,
    check_command_size,
    check_document_size,
    check_header,
    check_message_size,
    crc32c,
    decode_body,
    decode_message,
    decode_op_msg,
    encode_handshake_query,
    encode_op_msg,
    encode_op_query,
    encode_op_reply,
    op_msg_overhead,
    pack_header,
    read_message,
    split_batches,
    unpack_header,
)
from mongocore.core.wire._documents import ENCODE_OPTIONS
from mongocore.errors import DocumentTooLarge, NetworkError, OperationFailure, ProtocolError
from mongocore.io.counters import next_request_id, request_id_generator

MAX = DEFAULT_MAX_MESSAGE_SIZE_BYTES


# --- helpers -----------------------------------------------------------------


def cstring(text: str) -> bytes:
    return text.encode() + b"\x00"


def hand_bson(*elements: bytes) -> bytes:
    """A BSON document from hand-built elements, independent of the bson package."""
    content = b"".join(elements) + b"\x00"
    return struct.pack("<i", 4 + len(content)) + content


def int32_element(name: str, value: int) -> bytes:
    return b"\x10" + cstring(name) + struct.pack("<i", value)


def string_element(name: str, value: str) -> bytes:
    encoded = cstring(value)
    return b"\x02" + cstring(name) + struct.pack("<i", len(encoded)) + encoded


def op_msg_bytes(
    payload: bytes, flag_bits: int = 0, request_id: int = 1, response_to: int = 0
) -> bytes:
    """Frame ``payload`` (the sections) as an OP_MSG by hand."""
    body = struct.pack("<I", flag_bits) + payload
    return struct.pack("<iiii", HEADER_SIZE + len(body), request_id, response_to, 2013) + body


def body_section(document: bytes) -> bytes:
    return b"\x00" + document


def sequence_section(identifier: str, *documents: bytes) -> bytes:
    content = cstring(identifier) + b"".join(documents)
    return b"\x01" + struct.pack("<i", 4 + len(content)) + content


PING = hand_bson(int32_element("ping", 1), string_element("$db", "admin"))


def recv_from(data: bytes) -> tuple[Callable[[int], bytes], list[int]]:
    """A recv_exactly over ``data`` that records every size asked for."""
    position = 0
    asked: list[int] = []

    def recv_exactly(n: int) -> bytes:
        nonlocal position
        asked.append(n)
        chunk = data[position : position + n]
        position += len(chunk)
        return chunk

    return recv_exactly, asked


# --- header and request ids ----------------------------------------------------


def test_header_layout_and_round_trip() -> None:
    raw = pack_header(51, 7, 3, 2013)
    assert raw == struct.pack("<iiii", 51, 7, 3, 2013)
    header = unpack_header(raw)
    assert header == MsgHeader(51, 7, 3, OpCode.OP_MSG)
    assert header.body_length == 35


def test_unpack_header_too_short() -> None:
    with pytest.raises(ProtocolError, match="16 bytes"):
        unpack_header(b"\x00" * 15)


def test_request_ids_are_positive_and_increasing() -> None:
    generate = request_id_generator()
    assert [generate() for _ in range(3)] == [1, 2, 3]
    assert 0 < next_request_id() <= MAX_INT32


def test_request_ids_wrap_within_int32() -> None:
    generate = request_id_generator(start=MAX_INT32 - 1)
    assert [generate() for _ in range(3)] == [MAX_INT32, 1, 2]


@pytest.mark.parametrize("start", [-1, MAX_INT32 + 1])
def test_request_id_start_out_of_range(start: int) -> None:
    with pytest.raises(ValueError, match="start"):
        request_id_generator(start)


def test_request_ids_unique_across_threads() -> None:
    generate = request_id_generator(start=MAX_INT32 - 500)
    results: list[list[int]] = [[] for _ in range(8)]
    barrier = threading.Barrier(len(results))

    def work(out: list[int]) -> None:
        barrier.wait()
        out.extend(generate() for _ in range(1000))

    threads = [threading.Thread(target=work, args=(out,)) for out in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = [i for out in results for i in out]
    assert len(set(ids)) == len(ids) == 8000
    assert all(0 < i <= MAX_INT32 for i in ids)
    for out in results:  # each thread sees its own ids in generation order, modulo the wrap
        unwrapped = [i if i > MAX_INT32 - 1000 else i + MAX_INT32 for i in out]
        assert unwrapped == sorted(unwrapped)


# --- CRC-32C -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"123456789", 0xE3069283),  # the standard check value
        (bytes(32), 0x8A9136AA),  # RFC 3720, B.4
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
        (b"", 0),
    ],
)
def test_crc32c_known_values(data: bytes, expected: int) -> None:
    assert crc32c(data) == expected


def test_crc32c_continues_from_a_previous_value() -> None:
    assert crc32c(b"56789", crc32c(b"1234")) == crc32c(b"123456789")


# --- OP_MSG: known layouts -----------------------------------------------------------


def test_op_msg_ping_layout() -> None:
    # A hand-built BSON document, framed by hand: our encoder must give the same bytes.
    expected = op_msg_bytes(body_section(PING), request_id=42)
    assert encode_op_msg({"ping": 1, "$db": "admin"}, 42) == expected
    assert encode_op_msg(PING, 42) == expected  # an already-encoded body is used as is
    assert len(expected) == HEADER_SIZE + 4 + 1 + len(PING)


def test_op_msg_with_document_sequence_layout() -> None:
    command = hand_bson(string_element("insert", "c"), string_element("$db", "d"))
    doc1 = hand_bson(int32_element("_id", 1))
    doc2 = hand_bson(int32_element("_id", 2), string_element("x", "y"))
    expected = op_msg_bytes(
        body_section(command) + sequence_section("documents", doc1, doc2), request_id=5
    )
    encoded = encode_op_msg(
        {"insert": "c", "$db": "d"}, 5, sequences={"documents": [{"_id": 1}, doc2]}
    )
    assert encoded == expected


def test_op_msg_reply_layout_with_flags() -> None:
    ok = hand_bson(b"\x01ok\x00" + struct.pack("<d", 1.0))
    expected = op_msg_bytes(body_section(ok), flag_bits=MORE_TO_COME, request_id=9, response_to=42)
    assert encode_op_msg({"ok": 1.0}, 9, response_to=42, flag_bits=MORE_TO_COME) == expected


def test_op_msg_checksum_layout() -> None:
    unsigned = op_msg_bytes(body_section(PING), flag_bits=CHECKSUM_PRESENT, request_id=3)
    # messageLength counts the 4 checksum bytes, which cover everything before them.
    length = len(unsigned) + 4
    unsigned = struct.pack("<i", length) + unsigned[4:]
    expected = unsigned + struct.pack("<I", crc32c(unsigned))
    assert encode_op_msg(PING, 3, flag_bits=CHECKSUM_PRESENT) == expected


# --- OP_MSG: round trips --------------------------------------------------------------


def test_op_msg_round_trip_command() -> None:
    command = {
        "find": "c",
        "filter": {"a": {"$gt": 1}},
        "$db": "d",
        "lsid": {"id": bson.ObjectId()},
    }
    header, message = decode_message(encode_op_msg(command, 11), MAX)
    assert header.op_code == OpCode.OP_MSG
    assert header.request_id == 11
    assert header.response_to == 0
    assert isinstance(message, OpMsg)
    assert message.body == command
    assert message.sequences == {}
    assert message.checksum is None
    assert not message.more_to_come
    assert not message.exhaust_allowed
    assert not message.checksum_present


@pytest.mark.parametrize("identifier", ["documents", "updates", "deletes"])
def test_op_msg_round_trip_write_sequences(identifier: str) -> None:
    command = {"op": "c", "ordered": True, "$db": "d"}
    statements = [{"q": {"_id": i}, "n": "x" * i} for i in range(5)]
    _, message = decode_message(encode_op_msg(command, 12, sequences={identifier: statements}), MAX)
    assert isinstance(message, OpMsg)
    assert message.body == command
    assert message.sequences == {identifier: statements}
    assert message.to_document() == {**command, identifier: statements}


def test_op_msg_round_trip_several_sequences_keep_order() -> None:
    sequences = {"b": [{"x": 1}], "a": [], "c": [{"y": 2}, {"z": 3}]}
    _, message = decode_message(encode_op_msg({"cmd": 1}, 1, sequences=sequences), MAX)
    assert isinstance(message, OpMsg)
    assert list(message.sequences.items()) == list(sequences.items())


def test_op_msg_round_trip_reply_with_flags_and_checksum() -> None:
    flags = MORE_TO_COME | EXHAUST_ALLOWED | CHECKSUM_PRESENT
    data = encode_op_msg({"ok": 1}, 99, response_to=12, flag_bits=flags)
    header, message = decode_message(data, MAX)
    assert header == MsgHeader(len(data), 99, 12, 2013)
    assert isinstance(message, OpMsg)
    assert message.flag_bits == flags
    assert message.more_to_come
    assert message.exhaust_allowed
    assert message.checksum_present
    assert message.checksum == struct.unpack("<I", data[-4:])[0]
    assert message.body == {"ok": 1}


def test_op_msg_checksum_with_sequences_round_trip() -> None:
    data = encode_op_msg(
        {"insert": "c"}, 4, flag_bits=CHECKSUM_PRESENT, sequences={"documents": [{"a": 1}]}
    )
    _, message = decode_message(data, MAX)
    assert isinstance(message, OpMsg)
    assert message.sequences == {"documents": [{"a": 1}]}
    assert message.checksum == crc32c(data[:-4])


def test_op_msg_encode_method_round_trip() -> None:
    original = OpMsg(EXHAUST_ALLOWED, {"getMore": 5}, {"x": [{"a": 1}]})
    data = original.encode(77, response_to=3)
    header, message = decode_message(data, MAX)
    assert (header.request_id, header.response_to) == (77, 3)
    assert message == original


def test_op_msg_codec_options_apply_to_decoding() -> None:
    options: CodecOptions[Any] = CodecOptions(document_class=OrderedDict)
    data = encode_op_msg({"b": 1, "a": {"c": 2}}, 1, sequences={"s": [{"d": 3}]})
    _, message = decode_message(data, MAX, options)
    assert isinstance(message, OpMsg)
    assert type(message.body) is OrderedDict
    assert type(message.body["a"]) is OrderedDict
    assert type(message.sequences["s"][0]) is OrderedDict


def test_default_encoding_options_encode_as_bson_defaults() -> None:
    """encode_op_msg's default options (ENCODE_OPTIONS, whose document class spares
    bson a failed attribute look-up) encode every type as bson's defaults do, and
    refuse what they refuse: options differing in anything that matters to encoding
    (the UUID representation, the type registry, datetime handling) would fail here."""
    document = {
        "i": 1,
        "l": bson.Int64(2),
        "f": 1.5,
        "s": "text",
        "b": True,
        "n": None,
        "d": {"nested": [1, {"x": "y"}]},
        "bin": bson.Binary(b"\x01" * 16, 4),
        "oid": bson.ObjectId("64b7f0c2a1b2c3d4e5f60718"),
        "dt": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000),
        "aware": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "ts": bson.Timestamp(1, 2),
        "dec": bson.Decimal128("1.25"),
        "raw": RawBSONDocument(bson.encode({"r": 1})),
    }
    expected = bson.encode({"x": document})
    assert encode_op_msg({"x": document}, 1)[21:] == expected
    assert OpMsg(0, {"x": document}, {}).encode(1)[21:] == expected
    assert ENCODE_OPTIONS.document_class is not dict  # the point of them
    with pytest.raises(ValueError, match=r"UuidRepresentation\.UNSPECIFIED"):
        encode_op_msg({"u": uuid.UUID(int=1)}, 1)
    with pytest.raises(bson.errors.InvalidDocument):
        encode_op_msg({"o": object()}, 1)


def test_op_msg_decodes_from_bytearray_and_memoryview() -> None:
    data = encode_op_msg({"x": 1}, 1, sequences={"documents": [{"y": 2}]})
    for buffer in (bytearray(data[16:]), memoryview(data)[16:]):
        message = decode_op_msg(buffer)
        assert message.body == {"x": 1}
        assert message.sequences == {"documents": [{"y": 2}]}


def test_op_msg_optional_unknown_flag_bits_are_ignored() -> None:
    data = op_msg_bytes(body_section(PING), flag_bits=(1 << 17) | (1 << 31))
    _, message = decode_message(data, MAX)
    assert isinstance(message, OpMsg)
    assert message.body == {"ping": 1, "$db": "admin"}


# --- OP_MSG: malformed input ----------------------------------------------------------


def decode_bad(data: bytes, match: str) -> None:
    with pytest.raises(ProtocolError, match=match):
        decode_message(data, MAX)


def test_op_msg_too_short() -> None:
    decode_bad(op_msg_bytes(b""), "need flagBits and a section")
    decode_bad(struct.pack("<iiii", 18, 1, 0, 2013) + b"\x00\x00", "need flagBits")


def test_op_msg_no_body_section() -> None:
    decode_bad(op_msg_bytes(sequence_section("documents", PING)), "no body")


def test_op_msg_two_body_sections() -> None:
    decode_bad(op_msg_bytes(body_section(PING) + body_section(PING)), "second body")


@pytest.mark.parametrize("kind", [2, 3, 0x80, 0xFF])
def test_op_msg_unknown_section_kind(kind: int) -> None:
    decode_bad(op_msg_bytes(body_section(PING) + bytes([kind]) + PING), "unknown section kind")


def test_op_msg_unknown_section_kind_first() -> None:
    decode_bad(op_msg_bytes(b"\x02" + PING), f"unknown section kind 2 at offset {HEADER_SIZE + 4}")


@pytest.mark.parametrize("bit", range(2, 16))
def test_op_msg_unknown_required_flag_bit(bit: int) -> None:
    decode_bad(op_msg_bytes(body_section(PING), flag_bits=1 << bit), "unknown required flag")


def test_op_msg_truncated_body_section() -> None:
    decode_bad(op_msg_bytes(body_section(PING[:-3])), "declares")


def test_op_msg_section_truncated_before_size() -> None:
    decode_bad(op_msg_bytes(body_section(PING) + b"\x01\x10\x00"), "truncated before its size")


def test_op_msg_truncated_sequence() -> None:
    section = sequence_section("documents", PING)
    decode_bad(op_msg_bytes(body_section(PING) + section[:-1]), "declares")


@pytest.mark.parametrize("size", [-1, -(2**31), 0, 4, 2**31 - 1])
def test_op_msg_bad_body_section_size(size: int) -> None:
    decode_bad(op_msg_bytes(b"\x00" + struct.pack("<i", size) + PING[4:]), "declares")


@pytest.mark.parametrize("size", [-1, -(2**31), 0, 5, 2**31 - 1])
def test_op_msg_bad_sequence_size(size: int) -> None:
    sequence = b"\x01" + struct.pack("<i", size) + cstring("documents") + PING
    decode_bad(op_msg_bytes(body_section(PING) + sequence), "declares")


def test_op_msg_sequence_size_smaller_than_its_documents() -> None:
    section = sequence_section("documents", PING)
    short = section[:1] + struct.pack("<i", len(section) - 1 - 3) + section[5:]
    decode_bad(op_msg_bytes(body_section(PING) + short), "sequence 'documents': invalid BSON")


def test_op_msg_identifier_without_nul() -> None:
    sequence = b"\x01" + struct.pack("<i", 4 + 9) + b"documents"
    decode_bad(op_msg_bytes(body_section(PING) + sequence), "not NUL-terminated")


def test_op_msg_identifier_invalid_utf8() -> None:
    sequence = b"\x01" + struct.pack("<i", 4 + 3) + b"\xff\xfe\x00"
    decode_bad(op_msg_bytes(body_section(PING) + sequence), "UTF-8")


def test_op_msg_empty_identifier() -> None:
    sequence = b"\x01" + struct.pack("<i", 4 + 1) + b"\x00" + PING
    decode_bad(op_msg_bytes(body_section(PING) + sequence), "declares 5 bytes")
    sequence = b"\x01" + struct.pack("<i", 4 + 1 + len(PING)) + b"\x00" + PING
    decode_bad(op_msg_bytes(body_section(PING) + sequence), "has no name")


def test_op_msg_duplicate_sequence_identifier() -> None:
    sections = sequence_section("documents", PING) + sequence_section("documents")
    decode_bad(op_msg_bytes(body_section(PING) + sections), "appears twice")


def test_op_msg_sequence_identifier_also_in_body() -> None:
    decode_bad(op_msg_bytes(body_section(PING) + sequence_section("ping")), "both a body field")


def test_op_msg_garbage_bson_in_body() -> None:
    bad_terminator = struct.pack("<i", 12) + b"\x10a\x00\x01\x00\x00\x00\x01"
    decode_bad(op_msg_bytes(body_section(bad_terminator)), "invalid BSON")
    inner_overrun = struct.pack("<i", 12) + b"\x02a\x00\x40\x00\x00\x00\x00"
    decode_bad(op_msg_bytes(body_section(inner_overrun)), "invalid BSON")
    bad_type = hand_bson(b"\x42a\x00")  # element type 0x42 does not exist
    decode_bad(op_msg_bytes(body_section(bad_type)), "invalid BSON")
    bad_utf8 = hand_bson(b"\x02a\x00" + struct.pack("<i", 2) + b"\xff\x00")
    decode_bad(op_msg_bytes(body_section(bad_utf8)), "invalid BSON")


def test_op_msg_garbage_bson_in_sequence() -> None:
    sequence = sequence_section("documents", PING, b"\x07\x00\x00\x00\x00\x00")
    decode_bad(op_msg_bytes(body_section(PING) + sequence), "invalid BSON")


def test_op_msg_trailing_bytes_after_sections() -> None:
    decode_bad(op_msg_bytes(body_section(PING) + b"\x00"), "truncated before its size")


def test_op_msg_checksum_mismatch() -> None:
    data = bytearray(encode_op_msg(PING, 1, flag_bits=CHECKSUM_PRESENT))
    data[-1] ^= 0x01
    decode_bad(bytes(data), "checksum mismatch")
    # The checksum also covers the header.
    data = bytearray(encode_op_msg(PING, 1, flag_bits=CHECKSUM_PRESENT))
    data[4] ^= 0x01
    decode_bad(bytes(data), "checksum mismatch")


def test_op_msg_checksum_skipped_without_header() -> None:
    data = bytearray(encode_op_msg(PING, 1, flag_bits=CHECKSUM_PRESENT))
    data[-1] ^= 0x01
    # Without the raw header the checksum cannot be verified, but it is still skipped.
    message = decode_op_msg(bytes(data[HEADER_SIZE:]))
    assert message.body == {"ping": 1, "$db": "admin"}
    assert message.checksum == struct.unpack("<I", bytes(data[-4:]))[0]


def test_op_msg_checksum_flag_without_room_for_checksum() -> None:
    # The flag claims the last 4 bytes of the body document as the checksum.
    data = op_msg_bytes(body_section(PING), flag_bits=CHECKSUM_PRESENT)
    decode_bad(data, "checksum mismatch")
    with pytest.raises(ProtocolError, match="declares"):
        decode_op_msg(data[HEADER_SIZE:])
    decode_bad(op_msg_bytes(b"\x00\x05\x00", flag_bits=CHECKSUM_PRESENT), "checksumPresent")


def test_op_msg_raw_bson_body_with_invalid_content() -> None:
    # RawBSONDocument defers validation; the identifier check must still fail cleanly.
    options: CodecOptions[Any] = CodecOptions(document_class=RawBSONDocument)
    bad_type = hand_bson(b"\x42a\x00")
    data = op_msg_bytes(body_section(bad_type) + sequence_section("documents", PING))
    with pytest.raises(ProtocolError, match="invalid BSON"):
        decode_message(data, MAX, options)


# --- OP_MSG: encoding errors ------------------------------------------------------------


@pytest.mark.parametrize("flag_bits", [1 << 2, 1 << 15, -1, 2**32])
def test_encode_op_msg_rejects_unknown_flags(flag_bits: int) -> None:
    with pytest.raises(ValueError, match="flagBits"):
        encode_op_msg({"ping": 1}, 1, flag_bits=flag_bits)


@pytest.mark.parametrize("identifier", ["", "a\x00b"])
def test_encode_op_msg_rejects_bad_identifier(identifier: str) -> None:
    with pytest.raises(ValueError, match="identifier"):
        encode_op_msg({"insert": "c"}, 1, sequences={identifier: [{}]})


def test_encode_op_msg_rejects_identifier_in_body() -> None:
    with pytest.raises(ValueError, match="both a body field"):
        encode_op_msg({"insert": "c", "documents": []}, 1, sequences={"documents": [{}]})


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_an_encoded_body_goes_out_as_given_beside_a_sequence(kind: type) -> None:
    # Its fields are not searched for the identifier: the bytes are taken as they are.
    body = bson.encode({"insert": "c", "$db": "d"})
    data = encode_op_msg(kind(body), 1, sequences={"documents": [{"x": 1}]})
    message = decode_op_msg(data[HEADER_SIZE:])
    assert message.body == {"insert": "c", "$db": "d"}
    assert message.sequences == {"documents": [{"x": 1}]}


@pytest.mark.parametrize(("request_id", "response_to"), [(2**31, 0), (1, -(2**31) - 1)])
def test_encode_rejects_ids_out_of_int32(request_id: int, response_to: int) -> None:
    with pytest.raises(ValueError, match="int32"):
        encode_op_msg({"ping": 1}, request_id, response_to=response_to)
    with pytest.raises(ValueError, match="int32"):
        encode_op_msg({"ping": 1}, request_id, response_to=response_to, sequences={"s": []})


# --- OP_QUERY and OP_REPLY ---------------------------------------------------------------


def test_handshake_query_layout() -> None:
    hello = hand_bson(int32_element("hello", 1), string_element("$db", "admin"))
    payload = (
        struct.pack("<i", QUERY_SECONDARY_OK)
        + cstring("admin.$cmd")
        + struct.pack("<ii", 0, -1)
        + hello
    )
    expected = struct.pack("<iiii", HEADER_SIZE + len(payload), 5, 0, 2004) + payload
    assert encode_handshake_query({"hello": 1, "$db": "admin"}, 5) == expected


def test_op_query_round_trip_with_field_selector() -> None:
    data = encode_op_query(
        "db.coll",
        {"a": 1},
        8,
        flags=QUERY_SECONDARY_OK | QUERY_EXHAUST,
        number_to_skip=3,
        number_to_return=10,
        return_fields_selector={"a": 1, "_id": 0},
    )
    header, message = decode_message(data, MAX)
    assert header == MsgHeader(len(data), 8, 0, 2004)
    assert message == OpQuery(
        QUERY_SECONDARY_OK | QUERY_EXHAUST, "db.coll", 3, 10, {"a": 1}, {"a": 1, "_id": 0}
    )
    assert isinstance(message, OpQuery)
    assert not message.is_command
    assert message.database == "db"
    assert message.secondary_ok
    assert message.encode(8) == data


def test_op_query_handshake_round_trip() -> None:
    _, message = decode_message(encode_handshake_query({"hello": 1}, 1), MAX)
    assert isinstance(message, OpQuery)
    assert message.is_command
    assert message.database == "admin"
    assert message.number_to_return == -1
    assert message.secondary_ok
    assert message.query == {"hello": 1}
    assert message.return_fields_selector is None


def test_op_reply_layout() -> None:
    ok = hand_bson(int32_element("ok", 1))
    payload = struct.pack("<iqii", REPLY_AWAIT_CAPABLE, 0, 0, 1) + ok
    expected = struct.pack("<iiii", HEADER_SIZE + len(payload), 6, 5, 1) + payload
    assert encode_op_reply([{"ok": 1}], 6, 5, response_flags=REPLY_AWAIT_CAPABLE) == expected


def test_op_reply_round_trip() -> None:
    documents = [{"a": i} for i in range(3)]
    data = encode_op_reply(
        documents, 6, 5, response_flags=REPLY_CURSOR_NOT_FOUND, cursor_id=2**40, starting_from=7
    )
    header, message = decode_message(data, MAX)
    assert header == MsgHeader(len(data), 6, 5, 1)
    assert message == OpReply(REPLY_CURSOR_NOT_FOUND, 2**40, 7, 3, documents)
    assert isinstance(message, OpReply)
    assert message.cursor_not_found
    assert not message.query_failure
    assert message.error_document is None
    assert message.encode(6, 5) == data
    with pytest.raises(ProtocolError, match="3 documents"):
        message.command_reply()


def test_op_reply_command_reply() -> None:
    _, message = decode_message(encode_op_reply([{"ok": 1, "maxWireVersion": 21}], 2, 1), MAX)
    assert isinstance(message, OpReply)
    assert message.command_reply() == {"ok": 1, "maxWireVersion": 21}


def test_op_reply_query_failure_gives_err_document() -> None:
    error = {"$err": "not authorized", "code": 13}
    data = encode_op_reply([error], 2, 1, response_flags=REPLY_QUERY_FAILURE)
    _, message = decode_message(data, MAX)
    assert isinstance(message, OpReply)
    assert message.query_failure
    assert message.error_document == error
    with pytest.raises(OperationFailure) as info:
        message.command_reply()
    assert info.value.code == 13
    assert info.value.details == error
    assert "not authorized" in str(info.value)


def test_encode_op_reply_query_failure_needs_one_document() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        encode_op_reply([], 1, 1, response_flags=REPLY_QUERY_FAILURE)


def test_encode_op_query_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="reserved"):
        encode_op_query("a.b", {}, 1, flags=1)
    with pytest.raises(ValueError, match="namespace"):
        encode_op_query("", {}, 1)
    with pytest.raises(ValueError, match="int32"):
        encode_op_query("a.b", {}, 1, number_to_return=2**31)


def query_bytes(payload: bytes) -> bytes:
    return struct.pack("<iiii", HEADER_SIZE + len(payload), 1, 0, 2004) + payload


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"\x00" * 10, "too short"),
        (struct.pack("<i", 1) + cstring("a.b") + struct.pack("<ii", 0, 1) + PING, "reserved"),
        (struct.pack("<i", 1 << 8) + cstring("a.b") + struct.pack("<ii", 0, 1) + PING, "reserved"),
        (struct.pack("<i", 0) + b"a" * 20, "not NUL-terminated"),
        (struct.pack("<i", 0) + b"\x00" + struct.pack("<ii", 0, 1) + PING, "empty"),
        (struct.pack("<i", 0) + b"\xff\x00" + struct.pack("<ii", 0, 1) + PING, "UTF-8"),
        (struct.pack("<i", 0) + cstring("a.bcdefghijklmnop") + b"\x00", "truncated"),
        (struct.pack("<i", 0) + cstring("a.b") + struct.pack("<ii", 0, 1) + PING * 3, "3 doc"),
        (struct.pack("<i", 0) + cstring("a.b") + struct.pack("<ii", 0, 1) + PING[:-1], "BSON"),
        (struct.pack("<i", 0) + cstring("a.bcdefghijklmno") + struct.pack("<ii", 0, 1), "0 doc"),
    ],
)
def test_op_query_malformed(payload: bytes, match: str) -> None:
    decode_bad(query_bytes(payload), match)


def reply_bytes(payload: bytes) -> bytes:
    return struct.pack("<iiii", HEADER_SIZE + len(payload), 1, 0, 1) + payload


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"\x00" * 19, "fixed fields"),
        (struct.pack("<iqii", 0, 0, 0, -1), "negative"),
        (struct.pack("<iqii", 0, 0, 0, 2) + PING, "numberReturned is 2"),
        (struct.pack("<iqii", 0, 0, 0, 0) + PING, "numberReturned is 0"),
        (struct.pack("<iqii", 0, 0, 0, 1) + PING[:-1], "BSON"),
        (struct.pack("<iqii", REPLY_QUERY_FAILURE, 0, 0, 1) + PING, r"\$err"),
        (struct.pack("<iqii", REPLY_QUERY_FAILURE, 0, 0, 0), r"\$err"),
    ],
)
def test_op_reply_malformed(payload: bytes, match: str) -> None:
    decode_bad(reply_bytes(payload), match)


# --- whole messages and reading from a stream ---------------------------------------------


def test_unknown_opcode() -> None:
    data = struct.pack("<iiii", 20, 1, 0, 2005) + b"\x00" * 4
    decode_bad(data, "unsupported opcode 2005")


def test_op_compressed_is_not_supported() -> None:
    data = struct.pack("<iiii", 25, 1, 0, 2012) + struct.pack("<iiB", 2013, 0, 1)
    decode_bad(data, "OP_COMPRESSED")


@pytest.mark.parametrize("length", [-(2**31), -1, 0, 15])
def test_length_below_header(length: int) -> None:
    header = MsgHeader(length, 1, 0, 2013)
    with pytest.raises(ProtocolError, match="below the 16-byte header"):
        check_header(header, MAX)


def test_decode_message_length_mismatch() -> None:
    data = encode_op_msg(PING, 1)
    decode_bad(data + b"\x00", "does not match")
    decode_bad(data[:-1], "does not match")


def test_read_message_round_trip() -> None:
    data = encode_op_msg({"ok": 1}, 3, response_to=2)
    recv_exactly, asked = recv_from(data + b"trailing")
    header, message = read_message(recv_exactly, MAX)
    assert header == MsgHeader(len(data), 3, 2, 2013)
    assert isinstance(message, OpMsg)
    assert message.body == {"ok": 1}
    assert asked == [16, len(data) - 16]


def test_read_message_verifies_checksum() -> None:
    data = bytearray(encode_op_msg({"ok": 1}, 3, flag_bits=CHECKSUM_PRESENT))
    recv_exactly, _ = recv_from(bytes(data))
    assert read_message(recv_exactly, MAX)[1] == OpMsg(
        CHECKSUM_PRESENT, {"ok": 1}, {}, crc32c(data[:-4])
    )
    data[-2] ^= 0x10
    recv_exactly, _ = recv_from(bytes(data))
    with pytest.raises(ProtocolError, match="checksum mismatch"):
        read_message(recv_exactly, MAX)


@pytest.mark.parametrize("length", [2**31 - 1, MAX + 1, 2**30])
def test_read_message_hostile_length_rejected_before_reading_body(length: int) -> None:
    recv_exactly, asked = recv_from(struct.pack("<iiii", length, 1, 0, 2013) + b"\x00" * 64)
    with pytest.raises(ProtocolError, match=f"message length {length}.*opcode 2013.*exceeds"):
        read_message(recv_exactly, MAX)
    assert asked == [16]


@pytest.mark.parametrize("length", [-(2**31), -1, 0, 15])
def test_read_message_negative_or_small_length(length: int) -> None:
    recv_exactly, asked = recv_from(struct.pack("<iiii", length, 1, 0, 2013) + b"\x00" * 64)
    with pytest.raises(ProtocolError, match="below the 16-byte header"):
        read_message(recv_exactly, MAX)
    assert asked == [16]


def test_read_message_respects_a_smaller_limit() -> None:
    data = encode_op_msg({"x": "y" * 100}, 1)
    recv_exactly, _ = recv_from(data)
    with pytest.raises(ProtocolError, match="exceeds"):
        read_message(recv_exactly, len(data) - 1)
    recv_exactly, _ = recv_from(data)
    assert read_message(recv_exactly, len(data))[1] == OpMsg(0, {"x": "y" * 100}, {})


def test_read_message_header_only() -> None:
    recv_exactly, asked = recv_from(struct.pack("<iiii", 16, 1, 0, 2013))
    with pytest.raises(ProtocolError, match="OP_MSG"):
        read_message(recv_exactly, MAX)
    assert asked == [16]


def test_read_message_short_reads_are_network_errors() -> None:
    data = encode_op_msg(PING, 1)
    recv_exactly, _ = recv_from(data[:10])
    with pytest.raises(NetworkError, match="header"):
        read_message(recv_exactly, MAX)
    recv_exactly, _ = recv_from(data[:-1])
    with pytest.raises(NetworkError, match="body"):
        read_message(recv_exactly, MAX)


class Disconnected(Exception):
    pass


def test_read_message_recv_errors_pass_through() -> None:
    data = encode_op_msg(PING, 1)

    def chunks() -> Iterator[bytes]:
        yield data[:16]
        raise Disconnected("peer closed")

    source = chunks()

    def recv_exactly(n: int) -> bytes:
        return next(source)

    with pytest.raises(Disconnected):
        read_message(recv_exactly, MAX)


def test_decode_body_dispatch() -> None:
    data = encode_op_reply([{"ok": 1}], 1, 1)
    header = unpack_header(data)
    message = decode_body(header, data[16:])
    assert isinstance(message, OpReply)


# --- size limits -------------------------------------------------------------------------


def test_size_limits_defaults_and_from_hello() -> None:
    assert SizeLimits() == (
        DEFAULT_MAX_BSON_OBJECT_SIZE,
        DEFAULT_MAX_MESSAGE_SIZE_BYTES,
        DEFAULT_MAX_WRITE_BATCH_SIZE,
    )
    assert SizeLimits.from_hello({}) == SizeLimits()
    hello = {
        "maxBsonObjectSize": 100,
        "maxMessageSizeBytes": bson.Int64(1000),
        "maxWriteBatchSize": 3,
    }
    limits = SizeLimits.from_hello(hello)
    assert limits == SizeLimits(100, 1000, 3)
    assert limits.max_command_size == 100 + COMMAND_OVERHEAD == 100 + 16 * 1024


def test_check_document_size() -> None:
    check_document_size(100, 100)
    with pytest.raises(DocumentTooLarge, match=r"101 bytes.*maxBsonObjectSize \(100 bytes\)"):
        check_document_size(101, 100)


def test_check_command_size_allows_16_kib_overhead() -> None:
    check_command_size(100 + 16384, 100)
    with pytest.raises(DocumentTooLarge, match=r"16485 bytes.*maxBsonObjectSize \(100 bytes\)"):
        check_command_size(100 + 16385, 100)


def test_check_message_size() -> None:
    check_message_size(1000, 1000)
    with pytest.raises(DocumentTooLarge, match=r"1001 bytes.*maxMessageSizeBytes \(1000 bytes\)"):
        check_message_size(1001, 1000)


def test_check_batch_size() -> None:
    check_batch_size(5, 5)
    with pytest.raises(DocumentTooLarge, match=r"6 statements.*maxWriteBatchSize \(5\)"):
        check_batch_size(6, 5)


def test_encode_op_msg_checks_limits() -> None:
    limits = SizeLimits(max_bson_object_size=64, max_message_size_bytes=400, max_write_batch_size=2)
    big_value = "x" * 100
    # A command may exceed maxBsonObjectSize by up to 16 KiB...
    body = {"insert": "c", "comment": big_value}
    encode_op_msg(body, 1, limits=SizeLimits(64, 10**6, 2))
    # ... but not the message limit.
    with pytest.raises(DocumentTooLarge, match="maxMessageSizeBytes"):
        encode_op_msg({"insert": "c", "comment": "y" * 500}, 1, limits=limits)
    with pytest.raises(
        DocumentTooLarge, match=r"index 0 of sequence 'documents'.*maxBsonObjectSize"
    ):
        encode_op_msg(
            {"insert": "c"}, 1, sequences={"documents": [{"v": big_value}]}, limits=limits
        )
    with pytest.raises(DocumentTooLarge, match="maxWriteBatchSize"):
        encode_op_msg({"insert": "c"}, 1, sequences={"documents": [{}, {}, {}]}, limits=limits)
    with pytest.raises(DocumentTooLarge, match="maxMessageSizeBytes"):
        docs = [{"v": "z" * 40}] * 2
        encode_op_msg(
            {"insert": "c", "comment": "y" * 300}, 1, sequences={"documents": docs}, limits=limits
        )
    with pytest.raises(DocumentTooLarge, match="command allowance"):
        encode_op_msg(
            {"insert": "c", "comment": "y" * (16 * 1024 + 100)}, 1, limits=SizeLimits(64, 10**6, 2)
        )


def _sections(data: bytes) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    message = decode_op_msg(data[16:])
    return message.body, message.sequences


def test_encode_op_msg_sends_documents_not_yet_encoded_in_the_body_when_it_fits() -> None:
    docs = [{"_id": 1}, {"_id": 2, "tags": ["a"]}]
    body = {"insert": "c", "$db": "d"}
    expected = {"insert": "c", "$db": "d", "documents": docs}
    limit = len(bson.encode(expected))
    # Exactly maxBsonObjectSize: one body section, the documents an array in it.
    data = encode_op_msg(body, 1, sequences={"documents": docs}, limits=SizeLimits(limit, 10**6, 2))
    assert _sections(data) == (expected, {})
    assert data == encode_op_msg(expected, 1)  # nothing else: the same message
    assert body == {"insert": "c", "$db": "d"}  # the caller's body is left as it was
    # A tuple of documents becomes an array too.
    tupled = encode_op_msg(body, 1, sequences={"documents": tuple(docs)}, limits=SizeLimits())
    assert _sections(tupled) == (expected, {})
    # One byte less: document sequences, each document within its limit.
    data = encode_op_msg(
        body, 1, sequences={"documents": docs}, limits=SizeLimits(limit - 1, 10**6, 2)
    )
    assert _sections(data) == (body, {"documents": docs})
    # No limits given: sequences, as asked.
    data = encode_op_msg(body, 1, sequences={"documents": docs})
    assert _sections(data) == (body, {"documents": docs})


def test_encode_op_msg_sends_encoded_documents_as_sequences() -> None:
    docs = [{"_id": 1}, {"_id": 2}]
    body = {"insert": "c", "$db": "d"}
    for mixed in ([bson.encode(docs[0]), docs[1]], [docs[0], bson.encode(docs[1])]):
        data = encode_op_msg(body, 1, sequences={"documents": mixed}, limits=SizeLimits())
        assert _sections(data) == (body, {"documents": docs})
    # A mapping that is not a dict is encoded on its own too.
    data = encode_op_msg(
        body, 1, sequences={"documents": [OrderedDict(docs[0])]}, limits=SizeLimits()
    )
    assert _sections(data) == (body, {"documents": [docs[0]]})
    # So is every sequence when the body is given encoded.
    data = encode_op_msg(bson.encode(body), 1, sequences={"documents": docs}, limits=SizeLimits())
    assert _sections(data) == (body, {"documents": docs})


def test_encode_op_msg_limits_at_their_boundaries() -> None:
    def body_of(size: int) -> dict[str, Any]:
        # {"c": "<padding>"}: 4 + 1 + 2 + 4 + padding + 1 + 1 bytes.
        return {"c": "x" * (size - 13)}

    assert len(bson.encode(body_of(1000))) == 1000
    # A command may be maxBsonObjectSize plus 16 KiB, not one byte more.
    limits = SizeLimits(64, 10**6, 2)
    largest = 64 + 16 * 1024
    assert len(encode_op_msg(body_of(largest), 1, limits=limits)) == largest + 21
    with pytest.raises(
        DocumentTooLarge, match=rf"command document is {largest + 1} bytes.*command allowance"
    ):
        encode_op_msg(body_of(largest + 1), 1, limits=limits)
    # A message may be maxMessageSizeBytes, not one byte more.
    limits = SizeLimits(10**6, 1021, 2)
    assert len(encode_op_msg(body_of(1000), 1, limits=limits)) == 1021
    with pytest.raises(
        DocumentTooLarge,
        match=r"message is 1022 bytes, which exceeds maxMessageSizeBytes \(1021 bytes\)",
    ):
        encode_op_msg(body_of(1001), 1, limits=limits)


def test_encode_op_msg_encodes_any_mapping_body() -> None:
    ordered = OrderedDict([("ping", 1), ("$db", "admin")])
    assert encode_op_msg(ordered, 1) == encode_op_msg({"ping": 1, "$db": "admin"}, 1)


def test_encode_op_msg_checks_sequences_sent_in_the_body_too() -> None:
    body = {"insert": "c"}
    # maxWriteBatchSize documents fit in the body; one more is refused.
    data = encode_op_msg(body, 1, sequences={"documents": [{}, {}]}, limits=SizeLimits(64, 400, 2))
    assert _sections(data) == ({"insert": "c", "documents": [{}, {}]}, {})
    with pytest.raises(DocumentTooLarge, match="maxWriteBatchSize"):
        encode_op_msg(
            body, 1, sequences={"documents": [{}] * 3}, limits=SizeLimits(10**6, 10**7, 2)
        )
    with pytest.raises(ValueError, match="both a body field and a document sequence"):
        encode_op_msg(
            {"insert": "c", "documents": []}, 1, sequences={"documents": [{}]}, limits=SizeLimits()
        )
    with pytest.raises(ValueError, match="invalid document sequence identifier"):
        encode_op_msg(body, 1, sequences={"": [{}]}, limits=SizeLimits())
    with pytest.raises(ValueError, match="invalid document sequence identifier"):
        encode_op_msg(body, 1, sequences={"a\x00b": [{}]}, limits=SizeLimits())


def test_encode_op_query_checks_limits() -> None:
    with pytest.raises(DocumentTooLarge, match="OP_QUERY document"):
        encode_op_query("admin.$cmd", {"x": "y" * 20000}, 1, limits=SizeLimits(16, 10**6, 1))
    with pytest.raises(DocumentTooLarge, match="maxMessageSizeBytes"):
        encode_op_query("admin.$cmd", {"x": "y" * 200}, 1, limits=SizeLimits(16, 100, 1))


def test_op_msg_overhead_matches_encoding() -> None:
    body = {"insert": "coll", "ordered": False, "$db": "db"}
    docs = [bson.encode({"_id": i, "pad": "p" * i}) for i in range(10)]
    for checksum in (False, True):
        flags = CHECKSUM_PRESENT if checksum else 0
        data = encode_op_msg(body, 1, flag_bits=flags, sequences={"documents": docs})
        overhead = op_msg_overhead(len(bson.encode(body)), "documents", checksum)
        assert len(data) == overhead + sum(map(len, docs))


def test_split_batches_by_count() -> None:
    docs = [b"x" * 10] * 7
    limits = SizeLimits(100, 10_000, 3)
    assert split_batches(docs, 50, limits) == [range(0, 3), range(3, 6), range(6, 7)]


def test_split_batches_by_message_size() -> None:
    docs = [b"a" * 40, b"b" * 40, b"c" * 21, b"d" * 41, b"e" * 60]
    limits = SizeLimits(100, 150, 1000)  # 100 bytes of room after a 50-byte overhead
    assert split_batches(docs, 50, limits) == [range(0, 2), range(2, 4), range(4, 5)]
    # Exactly full is still one batch.
    assert split_batches([b"a" * 50, b"b" * 50], 50, limits) == [range(0, 2)]


def test_split_batches_empty() -> None:
    assert split_batches([], 50, SizeLimits()) == []


def test_split_batches_document_too_large() -> None:
    limits = SizeLimits(100, 10_000, 1000)
    docs = [b"a" * 10, b"b" * 101]
    with pytest.raises(DocumentTooLarge, match=r"index 1 is 101 bytes.*maxBsonObjectSize"):
        split_batches(docs, 50, limits)
    # An update statement may be given the command allowance.
    assert split_batches(docs, 50, limits, max_document_size=100 + COMMAND_OVERHEAD) == [
        range(0, 2)
    ]


def test_split_batches_document_cannot_fit_a_message() -> None:
    limits = SizeLimits(1000, 500, 1000)
    with pytest.raises(DocumentTooLarge, match=r"index 0 is 460 bytes.*maxMessageSizeBytes \(500"):
        split_batches([b"x" * 460], 50, limits)


def test_split_batches_rejects_zero_batch_size() -> None:
    with pytest.raises(ValueError, match="maxWriteBatchSize"):
        split_batches([b"x"], 10, SizeLimits(100, 1000, 0))


# --- cross-check with mockupdb, an independent implementation ------------------------------


def test_mockupdb_reads_our_op_msg() -> None:
    body = {"insert": "coll", "ordered": True, "$db": "db"}
    docs = [{"_id": i, "x": [i, {"y": str(i)}]} for i in range(4)]
    data = encode_op_msg(body, 31, flag_bits=EXHAUST_ALLOWED, sequences={"documents": docs})
    request = mockupdb.OpMsg.unpack(data[HEADER_SIZE:], None, None, 31)
    assert request.doc == {**body, "documents": docs}
    assert request.namespace == "db"
    assert request.flags == EXHAUST_ALLOWED
    assert request.request_id == 31
    _, ours = decode_message(data, MAX)
    assert isinstance(ours, OpMsg)
    assert ours.to_document() == request.doc


def test_mockupdb_reads_our_checksum() -> None:
    data = encode_op_msg({"ping": 1, "$db": "admin"}, 1, flag_bits=CHECKSUM_PRESENT)
    request = mockupdb.OpMsg.unpack(data[HEADER_SIZE:], None, None, 1)
    assert request.checksum == crc32c(data[:-4])
    assert request.doc == {"ping": 1, "$db": "admin"}


def test_mockupdb_reads_our_handshake() -> None:
    hello = {"hello": 1, "client": {"driver": {"name": "mongocore"}}}
    data = encode_handshake_query(hello, 4)
    request = mockupdb.OpQuery.unpack(data[HEADER_SIZE:], None, None, 4)
    assert isinstance(request, mockupdb.Command)
    assert request.doc == hello
    assert request.namespace == "admin"
    assert request.slave_ok
    assert request.flags == QUERY_SECONDARY_OK


def test_we_read_mockupdb_replies() -> None:
    request = types.SimpleNamespace(request_id=17)
    reply = mockupdb.OpReply({"ok": 1, "isWritablePrimary": True}, cursor_id=5, starting_from=2)
    header, message = decode_message(reply.reply_bytes(request), MAX)
    assert header.response_to == 17
    assert message == OpReply(0, 5, 2, 1, [{"ok": 1, "isWritablePrimary": True}])

    failure = mockupdb.OpReply({"$err": "bad", "code": 2}, flags=REPLY_QUERY_FAILURE)
    _, message = decode_message(failure.reply_bytes(request), MAX)
    assert isinstance(message, OpReply)
    assert message.error_document == {"$err": "bad", "code": 2}

    op_msg = mockupdb.OpMsgReply({"ok": 1, "n": 3}, flags=MORE_TO_COME)
    header, message = decode_message(op_msg.reply_bytes(request), MAX)
    assert header.response_to == 17
    assert message == OpMsg(MORE_TO_COME, {"ok": 1, "n": 3}, {})


def test_the_reply_size_bound_follows_the_announced_message_size() -> None:
    """A reply may claim the server's maxMessageSizeBytes (1 is a valid, if tiny,
    announcement; below 1 means "not announced") plus the OP_COMPRESSED overhead."""
    from mongocore.core.wire.limits import (  # noqa: PLC0415 - helpers of limits only
        MAX_MESSAGE_SIZE_CAP,
        REPLY_OVERHEAD,
        bounded_max_message_size,
        max_reply_size,
    )

    assert bounded_max_message_size(1) == 1
    assert bounded_max_message_size(2) == 2
    assert bounded_max_message_size(0) == DEFAULT_MAX_MESSAGE_SIZE_BYTES
    assert bounded_max_message_size(MAX_MESSAGE_SIZE_CAP + 1) == MAX_MESSAGE_SIZE_CAP
    assert max_reply_size(1000) == 1000 + REPLY_OVERHEAD
    assert max_reply_size(0) == DEFAULT_MAX_MESSAGE_SIZE_BYTES + REPLY_OVERHEAD
