"""Values as a mongod writes them into error messages (its ``BSONObj::toString``
shape: ``{ a: 1, b: "x" }``, ``[ 1, 2 ]``)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from bson import Decimal128, Int64, ObjectId

__all__ = ["render", "render_document"]


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
