"""Property tests of the wire codec.

Any bytes given to a decoder either decode or raise ProtocolError (never a
struct.error, IndexError, InvalidBSON, ...); any BSON-encodable document survives a
round trip through every message kind; batches cover their input within the limits.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from typing import Any, Optional

import bson
import mockupdb
from hypothesis import assume, given
from hypothesis import strategies as st

from mongocore.core.wire import (
    CHECKSUM_PRESENT,
    EXHAUST_ALLOWED,
    HEADER_SIZE,
    MORE_TO_COME,
    OpMsg,
    OpQuery,
    OpReply,
    SizeLimits,
    decode_message,
    decode_op_msg,
    decode_op_query,
    decode_op_reply,
    encode_op_msg,
    encode_op_query,
    encode_op_reply,
    op_msg_overhead,
    read_message,
    split_batches,
)
from mongocore.errors import NetworkError, ProtocolError

MAX = 48_000_000

# --- strategies ---------------------------------------------------------------------

keys = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"),
    max_size=8,
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
    st.binary(max_size=20),
    st.builds(bson.ObjectId, st.binary(min_size=12, max_size=12)),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=12,
)
documents = st.dictionaries(keys, values, max_size=6)
identifiers = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"),
    min_size=1,
    max_size=10,
)
int32s = st.integers(min_value=-(2**31), max_value=2**31 - 1)


def decodes_or_protocol_error(decode: Callable[[], Any]) -> None:
    with contextlib.suppress(ProtocolError):
        decode()


def frame(op_code: int, payload: bytes) -> bytes:
    return struct.pack("<iiii", HEADER_SIZE + len(payload), 1, 0, op_code) + payload


# --- arbitrary bytes ------------------------------------------------------------------


@given(st.binary(max_size=200))
def test_arbitrary_bytes_op_msg(data: bytes) -> None:
    decodes_or_protocol_error(lambda: decode_op_msg(data))
    decodes_or_protocol_error(lambda: decode_op_msg(data, raw_header=bytes(16)))


@given(st.binary(max_size=200))
def test_arbitrary_bytes_op_query(data: bytes) -> None:
    decodes_or_protocol_error(lambda: decode_op_query(data))


@given(st.binary(max_size=200))
def test_arbitrary_bytes_op_reply(data: bytes) -> None:
    decodes_or_protocol_error(lambda: decode_op_reply(data))


@given(st.binary(max_size=300))
def test_arbitrary_bytes_whole_message(data: bytes) -> None:
    decodes_or_protocol_error(lambda: decode_message(data, MAX))


@given(st.sampled_from([1, 2004, 2012, 2013, 0, -1, 2005]), st.binary(max_size=200))
def test_arbitrary_payload_behind_a_valid_header(op_code: int, payload: bytes) -> None:
    decodes_or_protocol_error(lambda: decode_message(frame(op_code, payload), MAX))


@given(st.binary(max_size=300), st.integers(min_value=0, max_value=400))
def test_arbitrary_stream(data: bytes, max_size: int) -> None:
    position = 0

    def recv_exactly(n: int) -> bytes:
        nonlocal position
        chunk = data[position : position + n]
        position += len(chunk)
        return chunk

    with contextlib.suppress(ProtocolError, NetworkError):
        read_message(recv_exactly, max_size)
    assert position <= max(HEADER_SIZE, max_size)


# --- mutated valid messages (reach deeper than random bytes) ------------------------------


@st.composite
def valid_messages(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["msg", "query", "reply"]))
    if kind == "msg":
        sequences = draw(st.dictionaries(identifiers, st.lists(documents, max_size=3), max_size=2))
        body = draw(documents)
        assume(not any(identifier in body for identifier in sequences))
        flags = draw(st.sampled_from([0, MORE_TO_COME, EXHAUST_ALLOWED, CHECKSUM_PRESENT]))
        return encode_op_msg(body, 1, flag_bits=flags, sequences=sequences)
    if kind == "query":
        return encode_op_query("db.$cmd", draw(documents), 1)
    return encode_op_reply(draw(st.lists(documents, max_size=3)), 1, 1)


@given(valid_messages(), st.data())
def test_mutated_messages(message: bytes, data: st.DataObject) -> None:
    mutated = bytearray(message)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        index = data.draw(st.integers(min_value=0, max_value=len(mutated) - 1))
        mutated[index] = data.draw(st.integers(min_value=0, max_value=255))
    decodes_or_protocol_error(lambda: decode_message(bytes(mutated), MAX))
    body = bytes(mutated[HEADER_SIZE:])
    for decode in (decode_op_msg, decode_op_query, decode_op_reply):
        decodes_or_protocol_error(lambda: decode(body))  # noqa: B023


@given(valid_messages(), st.data())
def test_truncated_and_extended_messages(message: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=HEADER_SIZE, max_value=len(message) - 1))
    truncated = message[:cut]
    # Keep the header consistent with the shorter length, so the body itself is tested.
    truncated = struct.pack("<i", len(truncated)) + truncated[4:]
    decodes_or_protocol_error(lambda: decode_message(truncated, MAX))
    extra = data.draw(st.binary(min_size=1, max_size=20))
    extended = message + extra
    extended = struct.pack("<i", len(extended)) + extended[4:]
    decodes_or_protocol_error(lambda: decode_message(extended, MAX))


# --- round trips ----------------------------------------------------------------------------


@given(
    documents,
    st.dictionaries(identifiers, st.lists(documents, max_size=3), max_size=3),
    st.sampled_from([0, MORE_TO_COME, EXHAUST_ALLOWED, CHECKSUM_PRESENT, 0xFFFF0003]),
    int32s,
    int32s,
)
def test_op_msg_round_trip(
    body: dict[str, Any],
    sequences: dict[str, list[dict[str, Any]]],
    flags: int,
    request_id: int,
    response_to: int,
) -> None:
    assume(not any(identifier in body for identifier in sequences))
    data = encode_op_msg(
        body, request_id, response_to=response_to, flag_bits=flags, sequences=sequences
    )
    header, message = decode_message(data, MAX)
    assert (header.message_length, header.request_id, header.response_to) == (
        len(data),
        request_id,
        response_to,
    )
    assert isinstance(message, OpMsg)
    assert message.flag_bits == flags
    assert message.body == body
    assert message.sequences == sequences
    # Encoded documents are taken as they are, giving the same bytes.
    encoded = {k: [bson.encode(d) for d in v] for k, v in sequences.items()}
    again = encode_op_msg(
        bson.encode(body), request_id, response_to=response_to, flag_bits=flags, sequences=encoded
    )
    assert again == data


@given(documents, st.lists(documents, max_size=3))
def test_op_msg_agrees_with_mockupdb(body: dict[str, Any], docs: list[dict[str, Any]]) -> None:
    body = {**body, "$db": "db"}
    body.pop("documents", None)
    data = encode_op_msg(body, 5, sequences={"documents": docs})
    request = mockupdb.OpMsg.unpack(data[HEADER_SIZE:], None, None, 5)
    _, ours = decode_message(data, MAX)
    assert isinstance(ours, OpMsg)
    assert request.doc == ours.to_document() == {**body, "documents": docs}


@given(documents, st.one_of(st.none(), documents), int32s, int32s, st.sampled_from([0, 4, 0x22]))
def test_op_query_round_trip(
    query: dict[str, Any],
    fields: Optional[dict[str, Any]],
    skip: int,
    to_return: int,
    flags: int,
) -> None:
    data = encode_op_query(
        "db.coll",
        query,
        3,
        flags=flags,
        number_to_skip=skip,
        number_to_return=to_return,
        return_fields_selector=fields,
    )
    _, message = decode_message(data, MAX)
    assert message == OpQuery(flags, "db.coll", skip, to_return, query, fields)


@given(
    st.lists(documents, max_size=4),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    int32s,
    st.sampled_from([0, 1, 8, 9]),
)
def test_op_reply_round_trip(
    docs: list[dict[str, Any]], cursor_id: int, starting_from: int, flags: int
) -> None:
    data = encode_op_reply(
        docs, 4, 3, response_flags=flags, cursor_id=cursor_id, starting_from=starting_from
    )
    _, message = decode_message(data, MAX)
    assert message == OpReply(flags, cursor_id, starting_from, len(docs), docs)


# --- batching --------------------------------------------------------------------------------


@given(
    st.lists(st.integers(min_value=5, max_value=60), max_size=60),
    st.integers(min_value=0, max_value=40),
    st.integers(min_value=60, max_value=300),
    st.integers(min_value=1, max_value=10),
)
def test_split_batches_properties(
    sizes: list[int], overhead: int, room: int, max_count: int
) -> None:
    docs = [b"x" * size for size in sizes]
    limits = SizeLimits(100, overhead + room, max_count)
    batches = split_batches(docs, overhead, limits)
    # In order, covering every document exactly once, none empty.
    assert [i for batch in batches for i in batch] == list(range(len(docs)))
    for index, batch in enumerate(batches):
        assert 1 <= len(batch) <= max_count
        used = sum(sizes[i] for i in batch)
        assert overhead + used <= limits.max_message_size_bytes
        if index + 1 < len(batches) and len(batch) < max_count:
            # Greedy: the next document did not fit.
            assert used + sizes[batch.stop] > room


@given(st.lists(documents, min_size=1, max_size=20), documents)
def test_split_batches_yield_messages_within_limits(
    docs: list[dict[str, Any]], body: dict[str, Any]
) -> None:
    body.pop("documents", None)
    encoded = [bson.encode(d) for d in docs]
    body_size = len(bson.encode(body))
    overhead = op_msg_overhead(body_size, "documents")
    limits = SizeLimits(10_000, overhead + max(map(len, encoded)) + 40, 5)
    for batch in split_batches(encoded, overhead, limits):
        message = encode_op_msg(
            body, 1, sequences={"documents": encoded[batch.start : batch.stop]}, limits=limits
        )
        assert len(message) <= limits.max_message_size_bytes
