"""The keys a document has in an index (MongoDB manual, "Multikey Indexes", "Sparse
Indexes", "Partial Indexes", "Comparison/Sort Order"; the server's key generator).

A server's index holds, for each document, one key per combination of the indexed
fields' values: an indexed array contributes each of its elements (a multikey index;
an array inside the array is one value), an empty array the value ``undefined``, and
a missing field ``null``. A sparse index leaves out a document that has none of the
indexed fields; a partial index one its filter does not match.

:func:`canonical` turns a value into a hashable form under which two values are equal
exactly when a server's key comparison finds them equal: numbers by value whatever
their BSON type (1, 1.0, ``Int64(1)`` and ``Decimal128("1")``), strings under the
index's collation, documents field by field in order, booleans apart from numbers.
"""

from __future__ import annotations

import datetime
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Optional

import bson
from bson import Binary, Code, Decimal128, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from mongomock import filtering

from mongocore.sim.collation import Collation
from mongocore.sim.mongomock_fixes import MISSING

__all__ = ["UNDEFINED", "Key", "canonical", "index_keys"]

#: A canonical key: one canonical value per indexed field.
Key = tuple[Any, ...]


class _Undefined:
    """The value a server indexes for an empty array."""

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Any = _Undefined()
_EPOCH = datetime.datetime(1970, 1, 1)


def _number(value: Any) -> Any:
    if isinstance(value, Decimal128):
        value = value.to_decimal()
    if isinstance(value, Decimal):
        if value.is_nan():
            return "nan"
        if value.is_infinite():
            return "inf" if value > 0 else "-inf"
        return Fraction(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return Fraction(value)  # exact: an integral value equals (and hashes as) the int
    return int(value)


def _millis(value: datetime.datetime) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def canonical(value: Any, collation: Optional[Collation] = None) -> Any:
    """A hashable form of ``value``: equal exactly when a server finds the values equal
    in an index key (strings compared under ``collation``)."""
    if value is None or value is MISSING:
        return ("null",)
    if value is UNDEFINED:
        return ("undefined",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float, Decimal128)):
        return ("number", _number(value))
    if isinstance(value, Code):  # a str subclass: code is not a string
        scope = canonical(value.scope, collation) if value.scope is not None else None
        return ("code", str(value), scope)
    if isinstance(value, str):
        return ("string", collation.key(value) if collation is not None else value)
    if isinstance(value, DBRef):
        value = value.as_doc()
    if isinstance(value, Mapping):
        return ("object", tuple((str(k), canonical(v, collation)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(canonical(item, collation) for item in value))
    if isinstance(value, Binary):
        return ("binary", value.subtype, bytes(value))
    if isinstance(value, bytes):
        return ("binary", 0, value)
    if isinstance(value, ObjectId):
        return ("objectId", value.binary)
    if isinstance(value, datetime.datetime):
        return ("date", _millis(value))
    if isinstance(value, DatetimeMS):
        return ("date", int(value))
    if isinstance(value, Timestamp):
        return ("timestamp", value.time, value.inc)
    if isinstance(value, MinKey):
        return ("minKey",)
    if isinstance(value, MaxKey):
        return ("maxKey",)
    if isinstance(value, (Regex, re.Pattern)):
        regex = value if isinstance(value, Regex) else Regex.from_native(value)
        return ("regex", regex.pattern, str(regex.flags))
    try:
        return ("bson", bytes(bson.encode({"": value})))
    except Exception:
        return ("python", type(value).__name__, repr(value))


def _walk(value: Any, parts: Sequence[str], depth: int, out: list[Any]) -> None:
    if depth == len(parts):
        if isinstance(value, list):
            out.extend(value if value else [UNDEFINED])
        else:
            out.append(value)
        return
    part = parts[depth]
    if isinstance(value, Mapping):
        if part in value:
            _walk(value[part], parts, depth + 1, out)
        else:
            out.append(MISSING)  # indexed as null
    elif isinstance(value, list):
        for element in value:
            if isinstance(element, Mapping):
                _walk(element, parts, depth, out)
        if part.isdigit() and int(part) < len(value):
            _walk(value[int(part)], parts, depth + 1, out)


def _field_values(doc: Mapping[str, Any], path: str) -> list[Any]:
    out: list[Any] = []
    _walk(doc, path.split("."), 0, out)
    return out or [MISSING]


def _reported(value: Any) -> Any:
    return None if value is MISSING or value is UNDEFINED else value


def index_keys(
    info: Mapping[str, Any], collation: Optional[Collation], doc: Mapping[str, Any]
) -> Optional[dict[Key, dict[str, Any]]]:
    """The keys ``doc`` has in the index ``info`` (as index_information gives it), each
    with the values a DuplicateKey error reports as ``keyValue``; None if the index
    leaves the document out (sparse, partial)."""
    fields = [str(field) for field, _ in info["key"]]
    values = [_field_values(doc, field) for field in fields]
    if info.get("sparse") and all(v is MISSING for field in values for v in field):
        return None
    partial = info.get("partialFilterExpression")
    if partial is not None and not filtering.filter_applies(partial, doc):  # type: ignore[no-untyped-call]
        return None
    # One (canonical, value) pair per distinct value of each field, then every combination.
    distinct = [
        list({canonical(v, collation): v for v in field_values}.items()) for field_values in values
    ]
    keys: dict[Key, dict[str, Any]] = {}
    for combination in itertools.product(*distinct):
        key = tuple(c for c, _ in combination)
        if key not in keys:
            keys[key] = {f: _reported(v) for f, (_, v) in zip(fields, combination)}
    return keys
