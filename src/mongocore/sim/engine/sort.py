"""Sort orders as a mongod applies them (MongoDB manual, "cursor.sort()", "Comparison/
Sort Order": arrays, missing fields, ties).

A sort key of a document for one field is taken as an index takes its keys: an array
offers its elements (ascending order uses the smallest, descending the largest), an
empty array sorts as undefined (before null), a missing field as null, and a path
through an array of documents offers the field of each element. Values compare as BSON
(values.py), strings under the sort's collation. Documents that tie keep the order
they came in (a collection scan's order), as the server's sort is stable for a scan.

``{field: {$meta: "textScore"}}`` sorts by a ``$text`` query's score, highest first
(the field's name does not matter); the caller passes the query's metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.paths import Document, is_index, split
from mongocore.sim.engine.values import MISSING, UNDEFINED, is_number, key, numeric_value

__all__ = ["Sort", "compile_sort", "sort_values"]

#: A provider of ``{$meta: ...}`` sort keys (the text module's ``textScore``).
MetaSort = Callable[[str, Document], Any]

_SORTABLE_META = frozenset({"textScore"})


def sort_values(doc: Mapping[str, Any], parts: tuple[str, ...]) -> list[Any]:
    """The values a sort (or an index) takes from ``doc`` at ``parts``."""
    out: list[Any] = []
    _walk(doc, parts, 0, out)
    return out or [None]


def _walk(value: Any, parts: tuple[str, ...], depth: int, out: list[Any]) -> None:
    if depth == len(parts):
        if isinstance(value, list):
            out.extend(value if value else [UNDEFINED])
        else:
            out.append(None if value is MISSING else value)
        return
    part = parts[depth]
    if isinstance(value, Mapping):
        _walk(value.get(part, MISSING) if part in value else MISSING, parts, depth + 1, out)
    elif isinstance(value, list):
        if is_index(part) and int(part) < len(value):
            _walk(value[int(part)], parts, depth + 1, out)
            return
        for element in value:
            if isinstance(element, Mapping):
                _walk(element, parts, depth, out)
        if not value:
            out.append(None)
    else:
        out.append(None)


class Sort:
    """A compiled sort specification."""

    def __init__(
        self,
        fields: list[tuple[tuple[str, ...], int]],
        collation: Optional[Collation],
        metas: Optional[dict[int, str]] = None,
    ) -> None:
        self.fields = fields
        self.collation = collation
        #: The fields that sort by metadata: their position in ``fields`` and the name.
        self.metas = metas or {}

    @property
    def meta_names(self) -> set[str]:
        return set(self.metas.values())

    def field_key(self, parts: tuple[str, ...], direction: int) -> Callable[[Document], Any]:
        collation = self.collation

        def field_key(doc: Document) -> Any:
            keys = [key(v, collation) for v in sort_values(doc, parts)]
            return min(keys) if direction > 0 else max(keys)

        return field_key

    def key(self, doc: Document) -> tuple[Any, ...]:
        """The document's key for this sort with every direction ascending (for a
        single-direction sort; :meth:`sort` handles mixed directions)."""
        return tuple(self.field_key(p, d)(doc) for p, d in self.fields)

    def sort(self, docs: Iterable[Document], meta: Optional[MetaSort] = None) -> list[Document]:
        """The documents in this sort's order, ties in their incoming order; ``meta``
        gives the query's metadata for ``$meta`` keys."""
        result = list(docs)
        for position in reversed(range(len(self.fields))):
            parts, direction = self.fields[position]
            name = self.metas.get(position)
            if name is not None:
                if meta is None:
                    raise CommandError(
                        40218, "query requires text score metadata, but it is not available"
                    )
                provide = meta
                result.sort(key=lambda doc: key(provide(name, doc)), reverse=True)
                continue
            result.sort(key=self.field_key(parts, direction), reverse=direction < 0)
        return result


def compile_sort(spec: Any, collation: Optional[Collation] = None) -> Sort:
    """Parse a sort document as a 7.0 server parses a find's ``sort``."""
    if not isinstance(spec, Mapping):
        raise CommandError(14, "Expected sort to be an object")
    fields: list[tuple[tuple[str, ...], int]] = []
    metas: dict[int, str] = {}
    for name, direction in spec.items():
        path = str(name)
        if not path:
            raise CommandError(40352, "FieldPath cannot be constructed with empty string")
        if path.startswith("$"):
            raise CommandError(16410, "FieldPath field names may not start with '$'.")
        if any(not part for part in path.split(".")):
            raise CommandError(15998, "FieldPath field names may not be empty strings.")
        if isinstance(direction, Mapping):
            metas[len(fields)] = _meta_sort(path, direction)
            fields.append((split(path), -1))
            continue
        if not is_number(direction) or numeric_value(direction) not in (1, -1):
            raise CommandError(
                15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"
            )
        fields.append((split(path), int(numeric_value(direction))))
    return Sort(fields, collation, metas)


def _meta_sort(path: str, direction: Mapping[str, Any]) -> str:
    if len(direction) != 1 or "$meta" not in direction:
        raise CommandError(
            15974, f"Illegal key in $sort specification: {path}: {dict(direction)!r}"
        )
    name = direction["$meta"]
    if not isinstance(name, str):
        raise CommandError(17307, "$meta expects a string argument")
    if name in _SORTABLE_META:
        return name
    if name in ("randVal", "searchScore", "geoNearDistance", "vectorSearchScore"):
        raise CommandError(238, f'sorting by $meta: "{name}" is not implemented by the simulator')
    raise CommandError(31138, f'Illegal $meta sort: $meta: "{name}"')
