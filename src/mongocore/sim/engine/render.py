"""Values as a mongod writes them into error messages: a document as its
``BSONObj::toString`` shape (``{ a: 1, b: "x" }``, ``[ 1, 2 ]``), and a value of the
aggregation layer as its ``Value`` prints (``{a: 1, b: "x"}``, ``[1, 2]``, doubles with
six significant digits)."""

from __future__ import annotations

import datetime
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any

from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.datetime_ms import DatetimeMS

from mongocore.sim.engine.values import MISSING, UNDEFINED, regex_flags

__all__ = ["render", "render_document", "value_string"]


def render(value: Any) -> str:
    """One value, as in a server's message."""
    if isinstance(value, Mapping):
        return render_document(value)
    if isinstance(value, (list, tuple)):
        return "[ " + ", ".join(render(v) for v in value) + " ]" if value else "[]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, ObjectId):
        return f"ObjectId('{value}')"
    if isinstance(value, Int64):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) >= 1e16 else f"{value:.1f}"
    if isinstance(value, Decimal128):
        return f'NumberDecimal("{value}")'
    if isinstance(value, datetime.datetime):
        return f"new Date({int(value.timestamp() * 1000)})"
    return str(value)


def render_document(doc: Mapping[str, Any]) -> str:
    """A document, as in a server's message."""
    if not doc:
        return "{}"
    return "{ " + ", ".join(f"{k}: {render(v)}" for k, v in doc.items()) + " }"


def value_string(value: Any) -> str:
    """A value as the aggregation layer's messages print it (``operator<<(Value)``)."""
    if value is MISSING:
        return "MISSING"
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return format(value, "g")
    if isinstance(value, Decimal128):
        return str(value)
    if isinstance(value, Code):
        return f'Code("{value}")'
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{" + ", ".join(f"{k}: {value_string(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_string(v) for v in value) + "]"
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        stamp: str = value.strftime("%Y-%m-%dT%H:%M:%S.")
        return stamp + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, DatetimeMS):
        return f"Date({int(value)})"
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    if isinstance(value, (Regex, re.Pattern)):
        return f"/{value.pattern}/{regex_flags(value)}"
    if isinstance(value, MinKey):
        return "MinKey"
    if isinstance(value, MaxKey):
        return "MaxKey"
    if isinstance(value, uuid.UUID):
        return f'BinData(4, "{value.hex.upper()}")'
    if isinstance(value, (Binary, bytes)):
        subtype = value.subtype if isinstance(value, Binary) else 0
        return f'BinData({subtype}, "{bytes(value).hex().upper()}")'
    return str(value)
