"""BSON values as a mongod compares them (MongoDB manual, "Comparison/Sort Order"; the
server's ``canonicalizeBSONType`` and ``compareElementValues``).

Every comparison of the engine goes through :func:`key`: a hashable, totally ordered
Python value such that two BSON values compare as the server compares them exactly
when their keys compare so. Types order first (MinKey, undefined, null, numbers,
strings and symbols, objects, arrays, BinData, ObjectId, booleans, dates, timestamps,
regular expressions, DBPointer, JavaScript, JavaScript with scope, MaxKey); within a
type, values order as the server orders them:

- numbers by value whatever their BSON type (int32, int64, double, Decimal128), exactly
  (Python compares ``int``, ``float`` and ``Decimal`` without rounding, and hashes
  equal numbers equally), with NaN equal to NaN and below every other number, and
  ``-0.0`` equal to ``0``;
- strings by their UTF-8 bytes (the code point order of Python's ``str``), or by their
  collation key (sim/collation.py) under a collation;
- documents element by element (each element's type, then its name, then its value),
  a prefix first; arrays element by element;
- BinData by length, then subtype, then bytes; regular expressions by pattern, then
  flags; JavaScript with scope by code, then scope.

:func:`identical` is the stricter equality a server uses to decide whether an update
changed a document: the same BSON, types included (``1`` is not ``1.0``).
"""

from __future__ import annotations

import datetime
import math
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Optional

from bson import (
    Binary,
    Code,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Timestamp,
)
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef

from mongocore.sim.collation import Collation

__all__ = [
    "MISSING",
    "UNDEFINED",
    "TypeRank",
    "compare",
    "equal",
    "identical",
    "is_nan",
    "is_number",
    "key",
    "numeric_value",
    "regex_flags",
    "type_rank",
]


class _Missing:
    """A field a document does not have (a path that reaches nothing)."""

    _instance: Optional[_Missing] = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


class _Undefined:
    """BSON's deprecated undefined (what an index holds for an empty array)."""

    _instance: Optional[_Undefined] = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"


MISSING: Any = _Missing()
UNDEFINED: Any = _Undefined()


class TypeRank:
    """The server's canonical type order (``canonicalizeBSONType``)."""

    MIN_KEY = -1
    UNDEFINED = 0
    NULL = 5
    NUMBER = 10
    STRING = 15
    OBJECT = 20
    ARRAY = 25
    BINARY = 30
    OBJECT_ID = 35
    BOOLEAN = 40
    DATE = 45
    TIMESTAMP = 47
    REGEX = 50
    DB_POINTER = 55
    CODE = 60
    CODE_WITH_SCOPE = 65
    MAX_KEY = 127


_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)


def is_number(value: Any) -> bool:
    """True for a BSON number (int32, int64, double, Decimal128); booleans are not."""
    return isinstance(value, (int, float, Decimal128)) and not isinstance(value, bool)


def numeric_value(value: Any) -> Any:
    """A number as Python compares it exactly: ``int``, ``float`` or ``Decimal``."""
    if isinstance(value, Decimal128):
        return value.to_decimal()
    if isinstance(value, Int64):
        return int(value)
    return value


def is_nan(value: Any) -> bool:
    """True for a double or Decimal128 NaN."""
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, Decimal128):
        return value.to_decimal().is_nan()
    if isinstance(value, Decimal):
        return value.is_nan()
    return False


def millis(value: datetime.datetime) -> int:
    """A datetime as milliseconds since the epoch (naive datetimes are UTC, as bson's)."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    delta = value - _EPOCH_NAIVE
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def type_rank(value: Any) -> int:
    """The canonical type of ``value`` (:class:`TypeRank`)."""
    if value is None or value is MISSING:
        return TypeRank.NULL
    if isinstance(value, bool):
        return TypeRank.BOOLEAN
    if isinstance(value, (int, float, Decimal128, Decimal)):
        return TypeRank.NUMBER
    if isinstance(value, Code):  # a str subclass
        return TypeRank.CODE if value.scope is None else TypeRank.CODE_WITH_SCOPE
    if isinstance(value, str):
        return TypeRank.STRING
    if isinstance(value, (Mapping, DBRef)):
        return TypeRank.OBJECT
    if isinstance(value, (list, tuple)):
        return TypeRank.ARRAY
    if isinstance(value, (Binary, bytes, uuid.UUID)):
        return TypeRank.BINARY
    if isinstance(value, ObjectId):
        return TypeRank.OBJECT_ID
    if isinstance(value, (datetime.datetime, DatetimeMS)):
        return TypeRank.DATE
    if isinstance(value, Timestamp):
        return TypeRank.TIMESTAMP
    if isinstance(value, (Regex, re.Pattern)):
        return TypeRank.REGEX
    if isinstance(value, MinKey):
        return TypeRank.MIN_KEY
    if isinstance(value, MaxKey):
        return TypeRank.MAX_KEY
    if value is UNDEFINED:
        return TypeRank.UNDEFINED
    raise TypeError(f"not a BSON value: {type(value).__name__}")


def _number_key(value: Any) -> tuple[Any, ...]:
    number = numeric_value(value)
    if isinstance(number, Decimal):
        if number.is_nan():
            return (TypeRank.NUMBER, 0, 0)
        if number.is_infinite():
            return (TypeRank.NUMBER, 1, math.inf if number > 0 else -math.inf)
        return (TypeRank.NUMBER, 1, number)
    if isinstance(number, float) and math.isnan(number):
        return (TypeRank.NUMBER, 0, 0)
    return (TypeRank.NUMBER, 1, number)


_FLAG_LETTERS = (("i", re.I), ("l", re.L), ("m", re.M), ("s", re.S), ("u", re.U), ("x", re.X))


def regex_flags(value: Any) -> str:
    """The flags of a regular expression (a bson Regex, whose flags are bits, or a
    compiled pattern) as the server's sorted letters; Python's implicit UNICODE flag of
    a compiled ``str`` pattern is not one."""
    if isinstance(value, re.Pattern):
        bits = int(value.flags) & ~int(re.UNICODE)
    else:
        raw: Any = value.flags
        if isinstance(raw, str):
            return "".join(sorted(raw))
        bits = int(raw)
    return "".join(sorted(letter for letter, bit in _FLAG_LETTERS if bits & bit))


def _regex_parts(value: Any) -> tuple[str, str]:
    return str(value.pattern), regex_flags(value)


def _binary_parts(value: Any) -> tuple[int, int, bytes]:
    if isinstance(value, uuid.UUID):
        return (16, 4, value.bytes)
    subtype = value.subtype if isinstance(value, Binary) else 0
    data = bytes(value)
    return (len(data), subtype, data)


def key(value: Any, collation: Optional[Collation] = None) -> tuple[Any, ...]:
    """The comparison key of a BSON value: keys order, compare equal and hash as the
    server orders and equates the values (strings under ``collation`` if given)."""
    if isinstance(value, str) and not isinstance(value, Code):
        return (TypeRank.STRING, collation.key(value) if collation is not None else value)
    if value is None or value is MISSING:
        return (TypeRank.NULL,)
    if isinstance(value, bool):
        return (TypeRank.BOOLEAN, value)
    if isinstance(value, (int, float, Decimal128, Decimal)):
        return _number_key(value)
    if isinstance(value, Mapping):
        return (
            TypeRank.OBJECT,
            tuple((type_rank(v), str(k), key(v, collation)) for k, v in value.items()),
        )
    if isinstance(value, (list, tuple)):
        return (TypeRank.ARRAY, tuple(key(item, collation) for item in value))
    if isinstance(value, ObjectId):
        return (TypeRank.OBJECT_ID, value.binary)
    if isinstance(value, datetime.datetime):
        return (TypeRank.DATE, millis(value))
    if isinstance(value, DatetimeMS):
        return (TypeRank.DATE, int(value))
    if isinstance(value, Code):
        if value.scope is None:
            return (TypeRank.CODE, str(value))
        return (TypeRank.CODE_WITH_SCOPE, str(value), key(value.scope, collation))
    if isinstance(value, (Binary, bytes, uuid.UUID)):
        return (TypeRank.BINARY, _binary_parts(value))
    if isinstance(value, Timestamp):
        return (TypeRank.TIMESTAMP, value.time, value.inc)
    if isinstance(value, (Regex, re.Pattern)):
        return (TypeRank.REGEX, _regex_parts(value))
    if isinstance(value, DBRef):
        return key(value.as_doc(), collation)
    if isinstance(value, MinKey):
        return (TypeRank.MIN_KEY,)
    if isinstance(value, MaxKey):
        return (TypeRank.MAX_KEY,)
    if value is UNDEFINED:
        return (TypeRank.UNDEFINED,)
    raise TypeError(f"not a BSON value: {type(value).__name__}")


def compare(a: Any, b: Any, collation: Optional[Collation] = None) -> int:
    """-1, 0 or 1 as the server's comparison of two BSON values."""
    ka, kb = key(a, collation), key(b, collation)
    return (ka > kb) - (ka < kb)


def equal(a: Any, b: Any, collation: Optional[Collation] = None) -> bool:
    """True when the server finds the two values equal (``$eq``, ``$in``, grouping)."""
    return key(a, collation) == key(b, collation)


def _bson_type_tag(value: Any) -> Any:
    # What distinguishes values a comparison finds equal: their BSON element type.
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if -(2**31) <= value < 2**31 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, (Decimal128, Decimal)):
        return "decimal"
    if isinstance(value, Code):
        return "code"
    if isinstance(value, str):
        return "string"
    if isinstance(value, datetime.datetime):
        return "date"
    return type(value).__name__


def identical(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are the same BSON: same types, same field order, same
    bits (a double NaN is identical to itself; ``1`` and ``1.0`` are not)."""
    if _bson_type_tag(a) != _bson_type_tag(b):
        return False
    if isinstance(a, Mapping):
        if len(a) != len(b):
            return False
        return all(
            ka == kb and identical(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items())
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (
            math.isnan(a) and math.isnan(b)
        )
    if isinstance(a, Decimal128):
        return bool(a.bid == b.bid)
    if isinstance(a, datetime.datetime):
        return millis(a) == millis(b)
    return bool(a == b) and key(a) == key(b)
