"""Text, 2d and 2dsphere indexes as catalog entries (MongoDB manual, "Text Indexes",
"2d Indexes", "2dsphere Indexes"): created, listed as a 7.0 server lists them, dropped,
and kept by every write, while the queries that need them (``$text``, ``$near``,
``$geoWithin``, ...) are refused with NotImplemented by the matcher until their
modules plug in.

Such an index holds no keys: nothing is looked up through it, and none of these kinds
may be unique. What it would refuse on a server is refused here too, or, where the
simulator cannot tell, refused with NotImplemented (238) rather than stored: a 2d index
takes a legacy pair of numbers, a 2dsphere index a GeoJSON point or a legacy pair
within the sphere's bounds (another geometry is refused: the simulator does not check
polygons and lines), and a text index a document without a language override field
(the simulator does not check languages).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.indexes import KINDS, Index, IndexSpec, Key
from mongocore.sim.engine.paths import Document, get_path, split
from mongocore.sim.engine.values import MISSING, is_number, numeric_value

__all__ = ["GEO_2D", "GEO_2DSPHERE", "TEXT", "listing"]

TEXT = "text"
GEO_2D = "2d"
GEO_2DSPHERE = "2dsphere"
TEXT_INDEX_VERSION = 3
SPHERE_INDEX_VERSION = 3


def _not_checked(what: str) -> CommandError:
    return CommandError(238, f"the simulator cannot check {what}")


class CatalogIndex(Index):
    """An index of a kind whose keys the simulator does not build."""

    def __init__(self, spec: IndexSpec, namespace: str) -> None:
        if spec.unique:
            raise CommandError(67, f"Index type '{_kind(spec)}' does not support the unique option")
        super().__init__(spec, namespace)
        self.kind = _kind(spec)
        self.paths = [split(name) for name, value in spec.key if value == self.kind]

    def keys(self, doc: Document) -> Optional[dict[Key, dict[str, Any]]]:
        return None

    def check(self, rid: int, doc: Document) -> None:
        for parts in self.paths:
            value = get_path(doc, parts)
            if value is MISSING or value is None:
                continue
            if self.kind == GEO_2D and not _legacy_pair(value, sphere=False):
                raise _not_checked(f"the value of {'.'.join(parts)} for a 2d index")
            if self.kind == GEO_2DSPHERE and not _sphere_point(value):
                raise _not_checked(f"the geometry of {'.'.join(parts)} for a 2dsphere index")
        if self.kind == TEXT:
            override = str(self.spec.options.get("language_override", "language"))
            if get_path(doc, split(override)) is not MISSING:
                raise _not_checked("the language of a document in a text index")

    def add(self, rid: int, doc: Document) -> None:
        return None

    def remove(self, rid: int) -> None:
        return None

    def lookup(self, values: tuple[Any, ...]) -> set[int]:
        raise _not_checked(f"a lookup through a {self.kind} index")

    def __len__(self) -> int:
        return 0


def _kind(spec: IndexSpec) -> str:
    kinds = {value for _, value in spec.key if isinstance(value, str)}
    return next(iter(kinds)) if len(kinds) == 1 else TEXT


def _numbers(values: Any) -> Optional[list[float]]:
    if isinstance(values, Mapping):
        values = list(values.values())
    if not isinstance(values, list) or len(values) < 2:
        return None
    pair = values[:2]
    if not all(is_number(v) and not isinstance(v, bool) for v in pair):
        return None
    return [float(numeric_value(v)) for v in pair]


def _legacy_pair(value: Any, *, sphere: bool) -> bool:
    pair = _numbers(value)
    if pair is None:
        return False
    if sphere:
        return -180.0 <= pair[0] <= 180.0 and -90.0 <= pair[1] <= 90.0
    return -180.0 <= pair[0] < 180.0 and -180.0 <= pair[1] < 180.0


def _sphere_point(value: Any) -> bool:
    if isinstance(value, Mapping) and "type" in value:
        return (
            value.get("type") == "Point"
            and set(value) <= {"type", "coordinates"}
            and isinstance(value.get("coordinates"), list)
            and len(value["coordinates"]) == 2
            and _legacy_pair(value["coordinates"], sphere=True)
        )
    return _legacy_pair(value, sphere=True)


def listing(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` (an index document) as listIndexes shows an index of these kinds: a text
    index's key with ``_fts``/``_ftsx`` and its weights and language options, a
    2dsphere index with its version."""
    key = spec.get("key")
    if not isinstance(key, Mapping):
        return dict(spec)
    values = set(key.values())
    out = dict(spec)
    if TEXT in values:
        listed: dict[str, Any] = {}
        weights: dict[str, Any] = {}
        for name, value in key.items():
            if value == TEXT:
                weights[str(name)] = 1
                if "_fts" not in listed:
                    listed["_fts"] = TEXT
                    listed["_ftsx"] = 1
            else:
                listed[str(name)] = value
        given = spec.get("weights")
        if isinstance(given, Mapping):
            weights.update({str(k): v for k, v in given.items()})
        out["key"] = listed
        out["weights"] = dict(sorted(weights.items()))
        out.setdefault("default_language", "english")
        out.setdefault("language_override", "language")
        out["textIndexVersion"] = TEXT_INDEX_VERSION
    elif GEO_2DSPHERE in values:
        out["2dsphereIndexVersion"] = SPHERE_INDEX_VERSION
    return out


for _kind_name in (TEXT, GEO_2D, GEO_2DSPHERE):
    KINDS[_kind_name] = CatalogIndex
