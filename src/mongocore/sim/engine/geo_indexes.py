"""The ``2dsphere`` and ``2d`` index kinds (MongoDB manual, "2dsphere Indexes", "2d
Indexes"), registered in :data:`~mongocore.sim.engine.indexes.KINDS`.

A 2dsphere index (version 3, ``2dsphereIndexVersion``) holds GeoJSON geometries and
legacy pairs that are valid longitude/latitude: a document whose indexed value is not
one is refused, on insert, update or index build, with "Can't extract geo keys"
(16755) and the parser's reason; a document without the field (or null) is left out,
as version 2 and later do. A 2d index (``bits``, ``min``, ``max``) holds legacy pairs
within ``[min, max)``: one pair, or an array of pairs; other values are not indexed.

The geo query operators (geo_query.py) find an index of the right kind on a field
through :func:`geo_index_for`; listIndexes shows these specs as the server stores
them (:meth:`SphereIndex.listing`): a 2dsphere index gains ``2dsphereIndexVersion:
3``, a 2d index keeps the options it was given.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.geometry import GeoError, Point, number_text, parse_stored
from mongocore.sim.engine.indexes import KINDS, Index, IndexSpec, Key
from mongocore.sim.engine.paths import Document, candidates, split
from mongocore.sim.engine.render import render, render_document
from mongocore.sim.engine.sort import sort_values
from mongocore.sim.engine.values import MISSING, is_number, key, numeric_value

__all__ = ["SPHERE_INDEX_VERSION", "FlatIndex", "SphereIndex", "geo_index_for"]

SPHERE = "2dsphere"
FLAT = "2d"
SPHERE_INDEX_VERSION = 3


def _values(doc: Document, parts: tuple[str, ...]) -> list[Any]:
    return [
        value
        for value, _ in candidates(doc, parts, expand_leaf=False)
        if value is not MISSING and value is not None
    ]


class _GeoIndex(Index):
    """What both kinds share: the geo fields' keys are their values."""

    kind = ""

    def __init__(self, spec: IndexSpec, namespace: str) -> None:
        super().__init__(spec, namespace)
        self.geo = [value == self.kind for _, value in spec.key]
        self.geo_fields = [name for name, value in spec.key if value == self.kind]

    def keys(self, doc: Document) -> Optional[dict[Key, dict[str, Any]]]:
        if self._partial is not None and not self._partial.matches(doc):
            return None
        combos: list[list[tuple[Any, Any]]] = []
        for geo, (name, _), parts in zip(self.geo, self.spec.key, self.fields):
            if geo:
                located = self.locations_of(doc, name)
                if not located:
                    return None
                combos.append([(key(v), v) for v in located])
            else:
                combos.append([(key(v, self.spec.collation), v) for v in sort_values(doc, parts)])
        out: dict[Key, dict[str, Any]] = {}
        names = [name for name, _ in self.spec.key]
        for combination in itertools.product(*combos):
            out.setdefault(
                tuple(c for c, _ in combination), {n: v for n, (_, v) in zip(names, combination)}
            )
        return out

    def locations_of(self, doc: Document, name: str) -> list[Any]:
        """The geo values of ``doc`` at ``name`` the index holds, each checked as an
        insert checks it (the server's error for a bad one)."""
        raise NotImplementedError

    def check(self, rid: int, doc: Document) -> None:
        for name in self.geo_fields:
            self.locations_of(doc, name)  # raises the server's error for a bad value
        super().check(rid, doc)


class SphereIndex(_GeoIndex):
    """A 2dsphere index (module doc)."""

    kind = SPHERE

    def __init__(self, spec: IndexSpec, namespace: str) -> None:
        version = spec.options.get("2dsphereIndexVersion", SPHERE_INDEX_VERSION)
        if not is_number(version) or numeric_value(version) not in (1, 2, 3):
            raise CommandError(
                67,
                f"unsupported geo index version {{ 2dsphereIndexVersion : {render(version)} }},"
                " only support versions: [1,2,3]",
            )
        for _, value in spec.key:
            if isinstance(value, str) and value != SPHERE:
                raise CommandError(
                    16823 if value in ("text", FLAT) else 67,
                    f"Cannot use {value} index with other special index types: "
                    f"{render_document(dict(spec.key))}",
                )
        super().__init__(spec, namespace)

    def locations_of(self, doc: Document, name: str) -> list[Any]:
        out: list[Any] = []
        for value in _values(doc, split(name)):
            shapes = value if _is_geometry_array(value) else [value]
            for shape in shapes:
                try:
                    parsed = parse_stored(shape)
                    if isinstance(parsed, Point) and parsed.legacy and not parsed.on_sphere:
                        raise GeoError(
                            f"longitude/latitude is out of bounds, lng: {number_text(parsed.x)}"
                            f" lat: {number_text(parsed.y)}"
                        )
                except GeoError as exc:
                    raise CommandError(
                        16755, f"Can't extract geo keys: {render_document(doc)}  {exc.reason}"
                    ) from exc
                out.append(shape)
        return out

    @classmethod
    def listing(cls, document: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(document)
        out.setdefault("2dsphereIndexVersion", SPHERE_INDEX_VERSION)
        return out


def _is_geometry_array(value: Any) -> bool:
    # An array whose first element is not a number holds several geometries; one whose
    # first element is a number is a legacy pair.
    return isinstance(value, list) and bool(value) and not is_number(value[0])


class FlatIndex(_GeoIndex):
    """A 2d index (module doc)."""

    kind = FLAT

    def __init__(self, spec: IndexSpec, namespace: str) -> None:
        names = [name for name, value in spec.key if value == FLAT]
        if len(names) > 1:
            raise CommandError(16800, "can't have 2 geo fields")
        if spec.key[0][1] != FLAT:
            raise CommandError(16801, "2d has to be first in index")
        for _, value in spec.key[1:]:
            if isinstance(value, str):
                raise CommandError(
                    16823,
                    f"Cannot use 2d index with other special index types: "
                    f"{render_document(dict(spec.key))}",
                )
        bits = spec.options.get("bits", 26)
        if not is_number(bits) or not 1 <= numeric_value(bits) <= 32:
            raise CommandError(13028, "bits in geo index must be between 1 and 32")
        low = spec.options.get("min", -180.0)
        high = spec.options.get("max", 180.0)
        if (
            not is_number(low)
            or not is_number(high)
            or not numeric_value(high) > numeric_value(low)
        ):
            raise CommandError(13022, "region for hash must be valid and have positive area")
        self.low = float(numeric_value(low))
        self.high = float(numeric_value(high))
        super().__init__(spec, namespace)

    def locations_of(self, doc: Document, name: str) -> list[Any]:
        out: list[Any] = []
        for value in _values(doc, split(name)):
            if not isinstance(value, (list, Mapping)) or not value:
                continue
            items = list(value.values()) if isinstance(value, Mapping) else value
            locations = [value] if is_number(items[0]) else items
            for location in locations:
                if not isinstance(location, (list, Mapping)):
                    raise CommandError(
                        16804, "location object expected, location array not in correct format"
                    )
                if not location:
                    continue
                out.append(self._checked(location, doc))
        return out

    def _checked(self, location: Any, doc: Document) -> Any:
        items = list(location.values()) if isinstance(location, Mapping) else list(location)
        if len(items) < 2:
            raise CommandError(13068, "geo field only has 1 element")
        if not is_number(items[0]) or not is_number(items[1]):
            raise CommandError(13026, "geo values must be 'legacy coordinate pairs' for 2d indexes")
        for number in (float(numeric_value(items[0])), float(numeric_value(items[1]))):
            if not self.low <= number < self.high:
                raise CommandError(
                    13027,
                    f"point not in interval of [ {number_text(self.low)}, {number_text(self.high)}"
                    f" ) :: caused by :: {render_document(doc)}",
                )
        return location


def geo_index_for(indexes: Iterable[Index], path: str, kinds: tuple[str, ...]) -> Optional[Index]:
    """The first index of one of ``kinds`` whose geo field is ``path``."""
    for index in indexes:
        if isinstance(index, _GeoIndex) and index.kind in kinds and path in index.geo_fields:
            return index
    return None


KINDS[SPHERE] = SphereIndex
KINDS[FLAT] = FlatIndex
