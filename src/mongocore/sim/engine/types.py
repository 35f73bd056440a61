"""BSON type names and numbers as ``$type`` and ``$jsonSchema``'s ``bsonType`` know them
(MongoDB manual, "$type": the aliases, their numbers, and ``"number"``)."""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef

from mongocore.sim.engine.values import MISSING, UNDEFINED

__all__ = ["ALIASES", "NUMBERS", "type_name"]

#: Each alias and its number (the server's ``typeName`` table).
ALIASES: dict[str, int] = {
    "double": 1,
    "string": 2,
    "object": 3,
    "array": 4,
    "binData": 5,
    "undefined": 6,
    "objectId": 7,
    "bool": 8,
    "date": 9,
    "null": 10,
    "regex": 11,
    "dbPointer": 12,
    "javascript": 13,
    "symbol": 14,
    "javascriptWithScope": 15,
    "int": 16,
    "timestamp": 17,
    "long": 18,
    "decimal": 19,
    "minKey": -1,
    "maxKey": 127,
}
NUMBERS = frozenset({"double", "int", "long", "decimal"})


def type_name(value: Any) -> str:
    """The alias of a decoded value's BSON type ("missing" for a field that is absent)."""
    if value is MISSING:
        return "missing"
    if value is None:
        return "null"
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
    if isinstance(value, Code):  # a str subclass
        return "javascript" if value.scope is None else "javascriptWithScope"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (Mapping, DBRef)):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, (datetime.datetime, DatetimeMS)):
        return "date"
    if isinstance(value, (bytes, Binary, uuid.UUID)):
        return "binData"
    if isinstance(value, (Regex, re.Pattern)):
        return "regex"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    if value is UNDEFINED:
        return "undefined"
    raise TypeError(f"not a BSON value: {type(value).__name__}")
