"""The all-positional ``$[]`` and filtered positional ``$[<identifier>]`` update
operators, with ``arrayFilters`` (MongoDB manual, "$[]", "$[<identifier>]"; the
``arrayFilters`` option of update, findAndModify and bulk updates).

mongomock knows neither, so an operator update naming them is made concrete for each
document before mongomock applies it: every path is expanded, element by element, into
the indexes of the array elements it names (all of them for ``$[]``, those its filter
matches for ``$[<identifier>]``), so ``{$set: {"y.$[i].b": 2}}`` with ``[{"i.b": 3}]``
becomes ``{$set: {"y.0.b": 2}}`` for ``{y: [{b: 3}, {b: 1}]}``. A filter is a query on
one element, named by its identifier (``{"i.b": 3}`` matches an element whose ``b`` is
3, ``{i: {$gt: 2}}`` an element above 2), matched under the update's collation.

The errors are a 7.0 server's: when the command is parsed (whatever the documents),
an unused filter, a filter without or with two identifiers, an invalid or repeated
identifier, an identifier without a filter, ``arrayFilters`` on a pipeline update, a
dynamic ``$rename`` path; when a document is updated, a path that does not reach an
array ("must exist", "non-array element") or that cannot be created under an element
(PathNotViable, 28).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

from mongomock import filtering

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, wrap, wrap_query

__all__ = ["ArrayFilters", "expand", "has_array_paths", "parse"]

#: The identifier of each filter and its query on one element.
ArrayFilters = dict[str, Mapping[str, Any]]

_IDENTIFIER = re.compile(r"^[a-z][a-zA-Z0-9]*$")
_ARRAY_PART = re.compile(r"^\$\[(.*)\]$")
_LOGICAL = ("$and", "$or", "$nor")
_MISSING: Any = object()
# Operators that never create a field: an unreachable path is no change for them.
_REMOVING = frozenset({"$unset", "$pull", "$pullAll", "$pop"})


def has_array_paths(update: Any) -> bool:
    """Does an operator update name a path with ``$[]`` or ``$[<identifier>]``?"""
    if not isinstance(update, Mapping):
        return False
    return any(
        isinstance(fields, Mapping) and any("$[" in str(path) for path in fields)
        for fields in update.values()
    )


# -- parsing ----------------------------------------------------------------------------


def parse(update: Any, array_filters: Any, *, field: str = "arrayFilters") -> ArrayFilters:
    """Check ``arrayFilters`` against the update as a server parses the statement, and
    return the filter of each identifier."""
    if array_filters is None:
        filters: ArrayFilters = {}
    else:
        filters = _parse_filters(array_filters, field)
    if isinstance(update, list):
        if filters:
            raise CommandError(9, "arrayFilters may not be specified for pipeline-style updates")
        return filters
    if not isinstance(update, Mapping) or not any(str(k).startswith("$") for k in update):
        return filters  # a replacement: the filters are parsed, never used
    used: set[str] = set()
    for operator, fields in update.items():
        if not isinstance(fields, Mapping):
            continue
        for path, value in fields.items():
            used |= _check_path(str(operator), str(path), filters)
            if operator == "$rename" and any(
                _ARRAY_PART.match(p) or p == "$" for p in str(value).split(".")
            ):
                raise CommandError(
                    2, f"The destination field for $rename may not be dynamic: {value}"
                )
    for identifier in filters:
        if identifier not in used:
            raise CommandError(
                9,
                f"The array filter for identifier '{identifier}' was not used in the update"
                f" {_render(update)}",
            )
    return filters


def _parse_filters(array_filters: Any, field: str) -> ArrayFilters:
    if not isinstance(array_filters, list):
        raise CommandError(
            14,
            f"BSON field '{field}' is the wrong type '{_type_name(array_filters)}',"
            " expected type 'array'",
        )
    filters: ArrayFilters = {}
    for spec in array_filters:
        if not isinstance(spec, Mapping):
            raise CommandError(
                14,
                f"BSON field '{field}' has an element of the wrong type"
                f" '{_type_name(spec)}', expected type 'object'",
            )
        names = _top_level_names(spec)
        if not names:
            raise CommandError(
                9, "Cannot use an expression without a top-level field name in arrayFilters"
            )
        if len(names) > 1:
            raise CommandError(
                9,
                "Error parsing array filter :: caused by :: Expected a single top-level field"
                f" name, found '{names[0]}' and '{names[1]}'",
            )
        identifier = names[0]
        if not _IDENTIFIER.match(identifier):
            raise CommandError(
                2,
                "Error parsing array filter :: caused by :: The top-level field name must be an"
                f" alphanumeric string beginning with a lowercase letter, found '{identifier}'",
            )
        if identifier in filters:
            raise CommandError(
                9, f"Found multiple array filters with the same top-level field name {identifier}"
            )
        filters[identifier] = spec
    return filters


def _top_level_names(spec: Mapping[str, Any]) -> list[str]:
    """The distinct first path components a filter uses, in order ($and/$or/$nor looked
    into, as a server does)."""
    names: list[str] = []
    for raw_key, value in spec.items():
        key = str(raw_key)
        found: list[str] = []
        if key in _LOGICAL and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    found.extend(_top_level_names(clause))
        elif not key.startswith("$"):
            found.append(key.split(".", 1)[0])
        for name in found:
            if name not in names:
                names.append(name)
    return names


def _check_path(operator: str, path: str, filters: ArrayFilters) -> set[str]:
    """The identifiers ``path`` uses; refuses what a server refuses when parsing it."""
    parts = path.split(".")
    used: set[str] = set()
    for index, part in enumerate(parts):
        match = _ARRAY_PART.match(part)
        if match is None:
            continue
        identifier = match.group(1)
        if operator == "$rename":
            raise CommandError(2, f"The source field for $rename may not be dynamic: {path}")
        if index == 0:
            if identifier:
                raise CommandError(
                    2,
                    "Cannot have array filter identifier (i.e. '$[<id>]') element in the first"
                    f" position in path '{path}'",
                )
            raise CommandError(
                2,
                f"Cannot have positional (i.e. '$') element in the first position in path '{path}'",
            )
        if identifier:
            if identifier not in filters:
                raise CommandError(
                    2, f"No array filter found for identifier '{identifier}' in path '{path}'"
                )
            used.add(identifier)
    return used


# -- expanding --------------------------------------------------------------------------


def expand(
    doc: Mapping[str, Any],
    update: Mapping[str, Any],
    filters: ArrayFilters,
    collation: Optional[Collation] = None,
) -> dict[str, Any]:
    """``update`` with each ``$[]``/``$[<identifier>]`` path replaced by the concrete
    paths of ``doc`` it names (an operator left with no path is dropped)."""
    out: dict[str, Any] = {}
    for operator, fields in update.items():
        if not isinstance(fields, Mapping) or not any("$[" in str(p) for p in fields):
            out[operator] = fields
            continue
        concrete: dict[str, Any] = {}
        for path, value in fields.items():
            if "$[" not in str(path):
                concrete[path] = value
                continue
            parts = str(path).split(".")
            if "$" in parts:
                raise CommandError(
                    238,
                    "the positional $ operator together with $[] in one path is not supported"
                    " by the simulator",
                )
            walk = _Walk(str(operator), filters, collation)
            for target in walk.paths(doc, parts, []):
                concrete[".".join(target)] = value
        if concrete:
            out[operator] = concrete
    return out


class _Walk:
    """Expands one path over one document."""

    def __init__(
        self, operator: str, filters: ArrayFilters, collation: Optional[Collation]
    ) -> None:
        self.operator = operator
        self.filters = filters
        self.collation = collation

    def paths(self, node: Any, parts: Sequence[str], taken: list[str]) -> Iterator[list[str]]:
        if not parts:
            yield taken
            return
        part = parts[0]
        match = _ARRAY_PART.match(part)
        if match is None:
            yield from self._field(node, part, parts, taken)
            return
        if node is _MISSING:
            raise CommandError(
                2,
                f"The path '{'.'.join(taken)}' must exist in the document in order to apply"
                " array updates.",
            )
        if not isinstance(node, list):
            raise CommandError(
                2,
                f"Cannot apply array updates to non-array element {taken[-1]}: {_render(node)}",
            )
        identifier = match.group(1)
        for index, element in enumerate(node):
            if identifier and not self._matches(identifier, element):
                continue
            yield from self.paths(element, parts[1:], [*taken, str(index)])

    def _field(
        self, node: Any, part: str, parts: Sequence[str], taken: list[str]
    ) -> Iterator[list[str]]:
        if isinstance(node, Mapping):
            child = node.get(part, _MISSING)
        elif isinstance(node, list) and part.isdigit():
            child = node[int(part)] if int(part) < len(node) else _MISSING
        elif node is _MISSING:
            child = _MISSING
        else:
            # A scalar (or an array, by a field name) cannot hold the field.
            rest = list(parts)
            if any(_ARRAY_PART.match(p) for p in rest):
                # The array the path goes on to is missing.
                head = rest[: next(i for i, p in enumerate(rest) if _ARRAY_PART.match(p))]
                raise CommandError(
                    2,
                    f"The path '{'.'.join([*taken, *head])}' must exist in the document in"
                    " order to apply array updates.",
                )
            if self.operator in _REMOVING:
                return
            raise CommandError(
                28,
                f"Cannot create field '{part}' in element"
                f" {{{taken[-1] if taken else ''}: {_render(node)}}}",
            )
        yield from self.paths(child, parts[1:], [*taken, part])

    def _matches(self, identifier: str, element: Any) -> bool:
        query = dict(self.filters[identifier])
        candidate: dict[str, Any] = {identifier: element}
        if self.collation is not None:
            query = wrap_query(query, self.collation)
            candidate = wrap(candidate, self.collation)
        return bool(filtering.filter_applies(query, candidate))  # type: ignore[no-untyped-call]


# -- rendering, as a server prints BSON in its messages --------------------------------


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    return "null" if value is None else type(value).__name__


def _render(value: Any) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {_render(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[ " + ", ".join(_render(v) for v in value) + " ]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else f"{value:.1f}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)
