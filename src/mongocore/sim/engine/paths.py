"""Field paths as a mongod resolves them in queries (MongoDB manual, "Dot Notation",
"Query an Array", "Query an Array of Embedded Documents"; the server's element path
traversal).

A dotted path names a field of a document, a field of an embedded document, or an
array element by its index. Where a path meets an array before its end, the server
looks into each element that is a document (an implicit traversal) and, if the next
component is a number, also at the element of that index; scalars and arrays inside
the array yield nothing. At the end of the path an array yields each of its elements
and then the array itself (nested arrays are not opened further). A path that stops
at a missing field or at a scalar before its end yields :data:`MISSING` (the value
``{a: null}`` and ``$exists`` see).

:func:`candidates` returns those values, each with the index of the element of the
first array the path went through (None if it went through none): what the positional
``$`` operator of a projection or an update refers to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from bson.dbref import DBRef

from mongocore.sim.engine.values import MISSING

__all__ = ["Candidate", "Document", "candidates", "get_path", "is_index", "split"]

#: A stored or queried document.
Document = dict[str, Any]
#: A value a path reaches, and the index of the first array element it went through.
Candidate = tuple[Any, Optional[int]]


def split(path: str) -> tuple[str, ...]:
    """The components of a dotted path."""
    return tuple(path.split("."))


def is_index(part: str) -> bool:
    """True for a path component that names an array element (``0``, ``12``; not ``01``)."""
    return part.isdigit() and part.isascii() and (part == "0" or part[0] != "0")


def candidates(
    doc: Mapping[str, Any], parts: tuple[str, ...], expand_leaf: bool = True
) -> list[Candidate]:
    """Every value ``parts`` reaches in ``doc``, as a query sees them (module doc)."""
    out: list[Candidate] = []
    _walk(doc, parts, 0, None, expand_leaf, out)
    return out


def _walk(  # noqa: PLR0917 (a recursion's state)
    value: Any,
    parts: tuple[str, ...],
    depth: int,
    index: Optional[int],
    expand_leaf: bool,
    out: list[Candidate],
) -> None:
    if depth == len(parts):
        if expand_leaf and isinstance(value, list):
            for position, element in enumerate(value):
                out.append((element, position if index is None else index))
        out.append((value, index))
        return
    part = parts[depth]
    if isinstance(value, Mapping):
        child = value.get(part, MISSING)
        if child is MISSING and part not in value:
            out.append((MISSING, index))
            return
        _walk(child, parts, depth + 1, index, expand_leaf, out)
    elif isinstance(value, list):
        for position, element in enumerate(value):
            if isinstance(element, (Mapping, DBRef)):
                _walk(element, parts, depth, position if index is None else index, expand_leaf, out)
        if is_index(part):
            number = int(part)
            if number < len(value):
                _walk(value[number], parts, depth + 1, index, expand_leaf, out)
    elif isinstance(value, DBRef):
        # A DBRef is the embedded document {$ref, $id, $db, ...} it is stored as: a
        # path goes on through its fields (ref.$id), as a server's does.
        _walk(value.as_doc(), parts, depth, index, expand_leaf, out)
    else:
        out.append((MISSING, index))


def get_path(doc: Mapping[str, Any], parts: tuple[str, ...]) -> Any:
    """The one value at ``parts`` without array traversal (numeric components index
    arrays), or MISSING: what an update operator or ``$rename`` reads."""
    value: Any = doc
    for part in parts:
        if isinstance(value, DBRef):
            value = value.as_doc()
        if isinstance(value, Mapping):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, list) and is_index(part) and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value
