"""Reading and writing a dotted field of a document the way the aggregation stages do
(the server's Document::getNestedField and MutableDocument::setNestedField): no array
traversal, numbers are field names, and a write copies the documents on its path so
that the input (shared with the store) is never changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.values import MISSING

__all__ = ["get_field", "remove_field", "set_field", "values_along"]


def get_field(doc: Mapping[str, Any], parts: tuple[str, ...]) -> Any:
    """The value at ``parts``, or MISSING (an array or scalar on the way stops it)."""
    value: Any = doc
    for part in parts:
        if not isinstance(value, Mapping):
            return MISSING
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value


def set_field(doc: Mapping[str, Any], parts: tuple[str, ...], value: Any) -> Document:
    """A copy of ``doc`` with ``parts`` set to ``value`` (a field that exists keeps its
    place; anything but a document on the way is replaced by one)."""
    out = dict(doc)
    if len(parts) == 1:
        out[parts[0]] = value
        return out
    inner = out.get(parts[0], MISSING)
    out[parts[0]] = set_field(inner if isinstance(inner, Mapping) else {}, parts[1:], value)
    return out


def remove_field(doc: Mapping[str, Any], parts: tuple[str, ...]) -> Document:
    """A copy of ``doc`` without the field at ``parts``."""
    out = dict(doc)
    if len(parts) == 1:
        out.pop(parts[0], None)
        return out
    inner = out.get(parts[0], MISSING)
    if isinstance(inner, Mapping):
        out[parts[0]] = remove_field(inner, parts[1:])
    return out


def values_along(doc: Any, parts: tuple[str, ...]) -> list[Any]:
    """Every value at ``parts``, arrays on the way and at the end opened (the server's
    extractAllElementsAlongPath: what ``$lookup``'s localField and ``$graphLookup``'s
    connectFromField join on)."""
    out: list[Any] = []
    _along(doc, parts, 0, out)
    return out


def _along(value: Any, parts: tuple[str, ...], depth: int, out: list[Any]) -> None:
    if depth == len(parts):
        if isinstance(value, list):
            out.extend(value)
        elif value is not MISSING:
            out.append(value)
        return
    if isinstance(value, Mapping):
        child = value.get(parts[depth], MISSING)
        if child is not MISSING:
            _along(child, parts, depth + 1, out)
    elif isinstance(value, list):
        for element in value:
            _along(element, parts, depth, out)
