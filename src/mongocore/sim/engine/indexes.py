"""Indexes as objects (MongoDB manual, "Indexes": single-field and compound, multikey,
unique, sparse, partial, TTL, hashed; the server's DuplicateKey error).

An :class:`Index` holds, for each key, the records (store.py's record ids) that have
it. Keys are generated as a server generates them: an indexed array contributes each
element (one key per combination over a compound index), an empty array undefined, a
missing field null; a sparse index leaves out a document without any indexed field,
a partial index one its ``partialFilterExpression`` does not match. Keys compare as
BSON values (values.py) under the index's collation, so 1, 1.0 and Decimal128("1") are
one key. A unique index refuses a second record with a key (DuplicateKey, 11000, with
``keyPattern`` and ``keyValue`` as 7.0 reports them).

Text, 2d, 2dsphere and wildcard indexes are kinds a later module adds: :data:`KINDS`
maps a key pattern's value (``"text"``, ``"2dsphere"``, ...) to a class with this
interface; until then :func:`make_index` refuses them with NotImplemented (238).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import bson

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, parse_collation
from mongocore.sim.engine.matcher import Matcher, compile_filter
from mongocore.sim.engine.paths import Document, candidates
from mongocore.sim.engine.render import render
from mongocore.sim.engine.sort import sort_values
from mongocore.sim.engine.values import MISSING, UNDEFINED, is_number, key, numeric_value

__all__ = [
    "KINDS",
    "Index",
    "IndexSpec",
    "duplicate_key_error",
    "index_kind",
    "index_listing",
    "make_index",
]

Key = tuple[Any, ...]


@dataclass(frozen=True)
class IndexSpec:
    """An index's definition, as createIndexes gives it."""

    name: str
    key: tuple[tuple[str, Any], ...]
    unique: bool = False
    sparse: bool = False
    partial_filter: Optional[Mapping[str, Any]] = None
    expire_after_seconds: Optional[float] = None
    collation: Optional[Collation] = None
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_document(cls, spec: Mapping[str, Any]) -> IndexSpec:
        """From an index document (``{key: ..., name: ..., unique: ...}``)."""
        pattern = spec.get("key")
        if not isinstance(pattern, Mapping) or not pattern:
            raise CommandError(67, "Index keys cannot be empty.")
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise CommandError(
                9, "The 'name' field is a required property of an index specification"
            )
        collation = parse_collation(spec["collation"]) if "collation" in spec else None
        expire = spec.get("expireAfterSeconds")
        if expire is not None and not is_number(expire):
            raise CommandError(2, "TTL index 'expireAfterSeconds' option must be numeric")
        partial = spec.get("partialFilterExpression")
        if partial is not None and not isinstance(partial, Mapping):
            raise CommandError(67, "'partialFilterExpression' for an index must be a document")
        return cls(
            name=name,
            key=tuple((str(k), v) for k, v in pattern.items()),
            unique=bool(spec.get("unique", False)),
            sparse=bool(spec.get("sparse", False)),
            partial_filter=partial,
            expire_after_seconds=float(numeric_value(expire)) if expire is not None else None,
            collation=collation,
            options={k: v for k, v in spec.items() if k not in ("key", "name")},
        )

    @property
    def key_pattern(self) -> dict[str, Any]:
        return dict(self.key)


def duplicate_key_error(namespace: str, spec: IndexSpec, values: Mapping[str, Any]) -> CommandError:
    """The DuplicateKey (11000) error of a 7.0 server for a key of ``spec``."""
    shown = ", ".join(f"{name}: {render(value)}" for name, value in values.items())
    return CommandError(
        11000,
        f"E11000 duplicate key error collection: {namespace} index: {spec.name}"
        f" dup key: {{ {shown} }}",
        extra={"keyPattern": spec.key_pattern, "keyValue": dict(values)},
    )


def _hashed(value: Any) -> int:
    # A stand-in for the server's hash (MD5 of the BSON element, first 8 bytes, little
    # endian): equal values hash equally; numbers are hashed by value as 64-bit.
    if is_number(value):
        number = numeric_value(value)
        data = repr(("n", int(number) if number == int(number) else float(number))).encode()
    else:
        data = bson.encode({"": value}) if value is not None else b"null"
    return int.from_bytes(hashlib.md5(data).digest()[:8], "little", signed=True)


class Index:
    """A B-tree index over the indexed fields' values (here a hash table of keys: the
    engine answers equality lookups and uniqueness from it; ranges scan)."""

    def __init__(self, spec: IndexSpec, namespace: str) -> None:
        self.spec = spec
        self.namespace = namespace
        self.fields = [tuple(name.split(".")) for name, _ in spec.key]
        self.hashed = [value == "hashed" for _, value in spec.key]
        self._partial: Optional[Matcher] = (
            compile_filter(spec.partial_filter) if spec.partial_filter is not None else None
        )
        self._entries: dict[Key, set[int]] = {}
        self._keys_of: dict[int, list[Key]] = {}

    def keys(self, doc: Document) -> Optional[dict[Key, dict[str, Any]]]:
        """The keys ``doc`` has here, each with the values a DuplicateKey error reports;
        None if the index leaves the document out (sparse, partial)."""
        collation = self.spec.collation
        values = [sort_values(doc, parts) for parts in self.fields]
        if self.spec.sparse and all(_absent(doc, parts) for parts in self.fields):
            return None
        if self._partial is not None and not self._partial.matches(doc):
            return None
        distinct: list[list[tuple[Any, Any]]] = []
        for hashed, field_values in zip(self.hashed, values):
            pairs: dict[Any, Any] = {}
            for value in field_values:
                reported = None if value is UNDEFINED else value
                canonical = ("hashed", _hashed(value)) if hashed else key(value, collation)
                pairs.setdefault(canonical, reported)
            distinct.append(list(pairs.items()))
        names = [name for name, _ in self.spec.key]
        keys: dict[Key, dict[str, Any]] = {}
        for combination in itertools.product(*distinct):
            index_key = tuple(c for c, _ in combination)
            keys.setdefault(index_key, {n: v for n, (_, v) in zip(names, combination)})
        return keys

    def check(self, rid: int, doc: Document) -> None:
        """Raise DuplicateKey if a unique index holds a key of ``doc`` for another record."""
        if not self.spec.unique:
            return
        for index_key, values in (self.keys(doc) or {}).items():
            holders = self._entries.get(index_key)
            if holders and (len(holders) > 1 or rid not in holders):
                raise duplicate_key_error(self.namespace, self.spec, values)

    def add(self, rid: int, doc: Document) -> None:
        keys = list((self.keys(doc) or {}).keys())
        self._keys_of[rid] = keys
        for index_key in keys:
            self._entries.setdefault(index_key, set()).add(rid)

    def remove(self, rid: int) -> None:
        for index_key in self._keys_of.pop(rid, ()):
            holders = self._entries.get(index_key)
            if holders is not None:
                holders.discard(rid)
                if not holders:
                    del self._entries[index_key]

    def lookup(self, values: tuple[Any, ...]) -> set[int]:
        """The records whose key equals ``values`` (one value per indexed field)."""
        collation = self.spec.collation
        index_key = tuple(
            ("hashed", _hashed(v)) if hashed else key(v, collation)
            for hashed, v in zip(self.hashed, values)
        )
        return set(self._entries.get(index_key, ()))

    def __len__(self) -> int:
        return sum(len(holders) for holders in self._entries.values())

    @classmethod
    def listing(cls, document: Mapping[str, Any]) -> dict[str, Any]:
        """``document`` (an index as createIndexes gave it) as listIndexes shows an index
        of this kind: a kind that stores its spec otherwise (text, 2dsphere) says how."""
        return dict(document)


def _absent(doc: Document, parts: tuple[str, ...]) -> bool:
    return all(value is MISSING for value, _ in candidates(doc, parts, expand_leaf=False))


#: Index kinds beyond ascending/descending/hashed, by the key pattern's value: the text,
#: geo and wildcard modules register theirs (an Index subclass taking (spec, namespace)).
KINDS: dict[str, type[Index]] = {}
_LATER = ("text", "2d", "2dsphere", "geoHaystack")


def index_kind(pattern: Mapping[str, Any]) -> Optional[str]:
    """The registered kind of a key pattern (its first string value in KINDS), or None."""
    for value in pattern.values():
        if isinstance(value, str) and value in KINDS:
            return value
    return None


def index_listing(document: Mapping[str, Any]) -> dict[str, Any]:
    """An index document as listIndexes shows it, by its kind (:meth:`Index.listing`)."""
    pattern = document.get("key")
    kind = index_kind(pattern) if isinstance(pattern, Mapping) else None
    if kind is None:
        return dict(document)
    return KINDS[kind].listing(document)


def make_index(spec: IndexSpec, namespace: str) -> Index:
    """An index object for ``spec``, or the server's error for a key pattern it refuses."""
    for name, value in spec.key:
        if isinstance(value, str):
            if value == "hashed":
                if spec.unique:
                    raise CommandError(
                        16764,
                        "Currently hashed indexes cannot guarantee uniqueness. Use a regular "
                        "index.",
                    )
                continue
            if value in KINDS:
                return KINDS[value](spec, namespace)
            if value in _LATER or name.endswith("$**"):
                raise CommandError(238, f"{value} indexes are not implemented by the simulator")
            raise CommandError(67, f"Unknown index plugin '{value}'")
        if name.endswith("$**"):
            raise CommandError(238, "wildcard indexes are not implemented by the simulator")
        if not is_number(value) or numeric_value(value) == 0:
            raise CommandError(
                67,
                f"Values in the index key pattern can only be numbers or strings, found: "
                f"{name}: {render(value)}",
            )
    return Index(spec, namespace)
