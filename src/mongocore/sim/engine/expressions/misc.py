"""The remaining expressions (MongoDB manual, "Miscellaneous Operators", "Data Size
Operators", "Timestamp Expression Operators", "Text Expression Operator"): ``$rand``,
``$meta``, ``$bsonSize``, ``$binarySize``, ``$tsSecond``, ``$tsIncrement`` and
``$toHashedIndexKey``, and :func:`hash_key`, the server's hash of a value for hashed
indexes (``BSONElementHasher::hash64``: MD5 of the seed, the value's canonical type and
its bytes, numbers taken as 64-bit integers; the first eight bytes, little-endian).

``$meta`` reads the document's metadata: the mapping a stage puts in the frame's
``META`` slot (``textScore``, ``randVal``, ``searchScore``, ``searchHighlights``,
``geoNearDistance``, ``geoNearPoint``, ``recordId``, ``indexKey``, ``sortKey``,
``searchScoreDetails``, ``searchSortValues``, ``vectorSearchScore``); a field the
document has no metadata for is missing, as on a server.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Mapping
from typing import Any

import bson
from bson import Binary, Int64, Timestamp

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.core import (
    META,
    Frame,
    Node,
    Scope,
    fixed_arguments,
    fold,
    operator,
)
from mongocore.sim.engine.expressions.numbers import INT64_MAX, INT64_MIN, kind
from mongocore.sim.engine.expressions.strings import is_string
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING, UNDEFINED, type_rank

__all__ = ["META_NAMES", "hash_key"]

#: The names ``$meta`` knows in 7.0.
META_NAMES = frozenset(
    {
        "textScore",
        "randVal",
        "searchScore",
        "searchHighlights",
        "geoNearDistance",
        "geoNearPoint",
        "recordId",
        "indexKey",
        "sortKey",
        "searchScoreDetails",
        "searchSortValues",
        "vectorSearchScore",
    }
)


@operator("$rand")
def _parse_rand(value: Any, scope: Scope) -> Node:
    if not (isinstance(value, Mapping) and not value):
        raise CommandError(3040501, "$rand does not currently accept arguments")
    rng = scope.context.rng

    def node(frame: Frame) -> Any:
        return float(rng())

    return node  # not folded: each evaluation draws anew


@operator("$meta")
def _parse_meta(value: Any, scope: Scope) -> Node:
    if not is_string(value):
        raise CommandError(17307, "$meta only supports string arguments")
    if value not in META_NAMES:
        raise CommandError(17308, f"Unsupported argument to $meta: {value}")
    name = str(value)

    def node(frame: Frame) -> Any:
        metadata = frame[META]
        if metadata is None:
            return MISSING
        return metadata.get(name, MISSING)

    return node


@operator("$bsonSize")
def _parse_bson_size(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$bsonSize", 1, value, scope)

    def node(frame: Frame) -> Any:
        document = child(frame)
        if nullish(document):
            return None
        if not isinstance(document, Mapping):
            raise CommandError(
                31393, f"$bsonSize requires a document input, found: {type_name(document)}"
            )
        return len(bson.encode(document))

    return fold(node, [child])


@operator("$binarySize")
def _parse_binary_size(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$binarySize", 1, value, scope)

    def node(frame: Frame) -> Any:
        data = child(frame)
        if nullish(data):
            return None
        if is_string(data):
            return len(data.encode("utf-8"))
        if type_name(data) == "binData":
            return len(data.bytes if not isinstance(data, (bytes, Binary)) else bytes(data))
        raise CommandError(
            51276, f"$binarySize requires a string or BinData argument, found: {type_name(data)}"
        )

    return fold(node, [child])


def _timestamp_part(name: str, code: int, part: str) -> None:
    def parse_timestamp_part(value: Any, scope: Scope) -> Node:
        (child,) = fixed_arguments(name, 1, value, scope)

        def node(frame: Frame) -> Any:
            stamp = child(frame)
            if nullish(stamp):
                return None
            if not isinstance(stamp, Timestamp):
                raise CommandError(
                    code, f" Argument to {name} must be a timestamp, but is {type_name(stamp)}"
                )
            return Int64(stamp.time if part == "time" else stamp.inc)

        return fold(node, [child])

    operator(name)(parse_timestamp_part)


_timestamp_part("$tsSecond", 5687301, "time")
_timestamp_part("$tsIncrement", 5687302, "inc")


# -- hashing -------------------------------------------------------------------------------------


def _number_for_hash(value: Any) -> int:
    # BSONElement::safeNumberLong: doubles and decimals truncated, saturating; NaN is 0.
    number_kind = kind(value)
    if number_kind == "double":
        if math.isnan(value):
            return 0
        if value >= 2.0**63:
            return INT64_MAX
        if value < -(2.0**63):
            return INT64_MIN
        return int(value)
    if number_kind == "decimal":
        number = value.to_decimal()
        if number.is_nan():
            return 0
        if number.is_infinite():
            return INT64_MAX if number > 0 else INT64_MIN
        return max(INT64_MIN, min(INT64_MAX, int(number)))
    return int(value)


def _value_bytes(value: Any) -> bytes:
    # The BSON bytes of a value without its type and name: encode it in a document and
    # cut the element's header ({"": value} has one byte of name).
    encoded = bson.encode({"": value})
    return encoded[4 + 1 + 1 : -1]


def _hash_element(digest: Any, value: Any, name: str, with_name: bool) -> None:
    digest.update(struct.pack("<i", type_rank(value)))
    if with_name:
        digest.update(name.encode("utf-8") + b"\0")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _hash_element(digest, item, str(key), True)
        _hash_terminator(digest)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _hash_element(digest, item, str(index), True)
        _hash_terminator(digest)
    elif kind(value) is not None:
        digest.update(struct.pack("<q", _number_for_hash(value)))
    elif (
        value is None
        or value is MISSING
        or value is UNDEFINED
        or type_name(value) in ("minKey", "maxKey")
    ):
        return
    else:
        digest.update(_value_bytes(value))


def _hash_terminator(digest: Any) -> None:
    # The EOO element that ends an object: canonical type 0 (as undefined's is) and an
    # empty name.
    digest.update(struct.pack("<i", 0) + b"\0")


def hash_key(value: Any, seed: int = 0) -> Int64:
    """The server's 64-bit hash of a value (what a hashed index stores for it)."""
    digest = hashlib.md5(usedforsecurity=False)
    digest.update(struct.pack("<i", seed))
    _hash_element(digest, None if value is MISSING else value, "", False)
    return Int64(struct.unpack("<q", digest.digest()[:8])[0])


@operator("$toHashedIndexKey")
def _parse_to_hashed_index_key(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$toHashedIndexKey", 1, value, scope)

    def node(frame: Frame) -> Any:
        return hash_key(child(frame))

    return fold(node, [child])
