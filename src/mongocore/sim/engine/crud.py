"""Reads and writes over a versioned collection, as a mongod's query and write layer
performs them for find, count, insert, update, delete and findAndModify (independent
of how a command is parsed: the command layer hands in the parsed fields).

Every write takes its stamps from ``stamps`` (a function giving the next optime), one
per document written, so each document's version is stamped with the oplog entry that
wrote it. The command layer passes :class:`Writes` instead when it needs more: a check
of each document before it is stored (the validator, what may be stored), and a
record of each write after it (the oplog entry).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Union

from bson import ObjectId

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.matcher import DEFAULT_CONTEXT, Matcher, compile_filter
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.projection import Projection, compile_projection
from mongocore.sim.engine.query_operators import is_operator_document
from mongocore.sim.engine.sort import Sort, compile_sort
from mongocore.sim.engine.store import Collection, Stamp
from mongocore.sim.engine.update import (
    compile_replacement,
    compile_update,
    replace,
    upsert_seed,
)
from mongocore.sim.engine.values import identical

__all__ = [
    "CompiledUpdate",
    "UpdateResult",
    "Writes",
    "count",
    "delete",
    "find",
    "find_and_modify",
    "insert",
    "update",
]

Stamps = Callable[[], Stamp]


class Writes:
    """What happens around each document a write stores or deletes. The default only
    stamps; the command layer overrides :meth:`check` and :meth:`written`."""

    def __init__(self, stamps: Stamps) -> None:
        self._stamps = stamps

    def stamp(self) -> Stamp:
        return self._stamps()

    def check(self, new: Document, old: Optional[Document]) -> Document:
        """The document to store for ``new`` (``old`` the one it replaces, None for an
        insert); raises CommandError to refuse it. Called before the document is stamped."""
        return new

    def written(self, op: str, doc_id: Any, doc: Optional[Document], stamp: Stamp) -> None:
        """A write landed: "i" (inserted ``doc``), "u" (``doc`` replaced the document
        ``doc_id``), "d" (``doc_id`` deleted)."""


class CompiledUpdate(Protocol):
    """An update computed by the command layer (a pipeline update, until the engine
    has stages): the new document, given the old one or an upsert's seed."""

    def apply(
        self, doc: Document, *, position: Optional[int] = None, inserting: bool = False
    ) -> Document: ...


def _writes(stamps: Union[Stamps, Writes]) -> Writes:
    return stamps if isinstance(stamps, Writes) else Writes(stamps)


def find(
    collection: Collection,
    flt: Any,
    *,
    sort: Any = None,
    projection: Any = None,
    skip: int = 0,
    limit: int = 0,
    context: MatchContext = DEFAULT_CONTEXT,
    as_of: Stamp = None,
) -> list[Document]:
    """The documents a find returns, in its order (``limit`` 0: no limit; a negative
    limit is its absolute value, as a single batch)."""
    matcher = compile_filter(flt, context)
    compiled_projection = compile_projection(projection, context)
    natural_sort = _natural_order(sort) is not None
    compiled_sort = compile_sort(sort, context.collation) if sort and not natural_sort else None
    _check_meta(matcher, compiled_projection, compiled_sort)
    wants_position = compiled_projection is not None and compiled_projection.needs_position
    hits = collection.find(matcher, as_of, context.collation)
    limit = abs(limit)
    natural = _natural_order(sort)
    order = matcher.annotations.order
    if natural is not None:
        # {$natural: 1 | -1}: record order, forwards or backwards (a collection scan).
        ordered = [doc for _, doc in hits]
        if natural < 0:
            ordered.reverse()
        selected = ordered[skip : skip + limit if limit else None]
    elif compiled_sort is not None or order is not None:
        ordered = [doc for _, doc in hits]
        if order is not None:  # a near query: nearest first, ties in scan order
            ordered.sort(key=order)
        if compiled_sort is not None:
            ordered = compiled_sort.sort(ordered, matcher.meta)
        selected = ordered[skip : skip + limit if limit else None]
    else:
        selected = []
        for index, (_, doc) in enumerate(hits):
            if index < skip:
                continue
            selected.append(doc)
            if limit and len(selected) == limit:
                break
    if compiled_projection is None:
        return selected
    results = []
    for doc in selected:
        position = matcher.match_position(doc)[1] if wants_position else None
        results.append(compiled_projection.apply(doc, position, matcher.meta))
    return results


def _natural_order(sort: Any) -> Optional[int]:
    if isinstance(sort, Mapping) and list(sort) == ["$natural"]:
        direction = sort["$natural"]
        if (
            isinstance(direction, (int, float))
            and not isinstance(direction, bool)
            and direction in (1, -1)
        ):
            return int(direction)
        raise CommandError(2, "$natural sort cannot be set to a value other than -1 or 1")
    return None


def _ordered(
    matcher: Matcher, hits: list[tuple[int, Document]], sort: Any, context: MatchContext
) -> list[tuple[int, Document]]:
    """A write's matches in the order it takes them: a near query's nearest first, then
    the statement's sort (its ``$meta`` keys from the query)."""
    order = matcher.annotations.order
    if not sort and order is None:
        return hits
    by_identity = {id(doc): rid for rid, doc in hits}
    docs = [doc for _, doc in hits]
    if order is not None:
        docs.sort(key=order)
    if sort:
        compiled = compile_sort(sort, context.collation)
        _check_meta(matcher, None, compiled)
        docs = compiled.sort(docs, matcher.meta)
    return [(by_identity[id(doc)], doc) for doc in docs]


def _check_meta(matcher: Matcher, projection: Optional[Projection], sort: Optional[Sort]) -> None:
    """The ``$meta`` values a projection or sort asks for must come from the query."""
    wanted = (projection.meta_names if projection is not None else set()) | (
        sort.meta_names if sort is not None else set()
    )
    for name in sorted(wanted):
        if matcher.has_meta(name):
            continue
        if name == "textScore":
            raise CommandError(40218, "query requires text score metadata, but it is not available")
        raise CommandError(
            238,
            f'$meta: "{name}" without a query that provides it is not implemented by the simulator',
        )


def count(
    collection: Collection,
    flt: Any,
    *,
    skip: int = 0,
    limit: int = 0,
    context: MatchContext = DEFAULT_CONTEXT,
    as_of: Stamp = None,
) -> int:
    """The number of documents a count (or countDocuments) reports."""
    matcher = compile_filter(flt, context)
    total = sum(1 for _ in collection.find(matcher, as_of, context.collation))
    total = max(total - skip, 0)
    return min(total, abs(limit)) if limit else total


def insert(collection: Collection, doc: Mapping[str, Any], stamp: Union[Stamp, Writes]) -> Document:
    """Insert a document (an ``_id`` ObjectId added first if it has none); the document
    stored. ``stamp`` is its stamp, or the :class:`Writes` that checks, stamps and
    records it."""
    stored = dict(doc) if "_id" in doc else {"_id": ObjectId(), **doc}
    if not isinstance(stamp, Writes):
        collection.insert(stored, stamp)
        return stored
    stored = stamp.check(stored, None)
    collection.check_insert(stored)
    at = stamp.stamp()
    collection.insert(stored, at)
    stamp.written("i", stored["_id"], stored, at)
    return stored


@dataclass
class UpdateResult:
    matched: int = 0
    modified: int = 0
    upserted_id: Any = None
    upserted: bool = False


def _compile(u: Any, array_filters: Any, context: MatchContext) -> Any:
    if isinstance(u, Mapping) and u and not is_operator_document(u):
        if array_filters is not None:
            raise CommandError(2, "Cannot use array filters with a replacement-style update")
        return compile_replacement(u)
    if isinstance(u, Mapping) and any(not str(k).startswith("$") for k in u):
        first = next(k for k in u if not str(k).startswith("$"))
        raise CommandError(
            9,
            f"Unknown modifier: {first}. Expected a valid update modifier or pipeline-style"
            " update specified as an array",
        )
    if isinstance(u, list):
        raise CommandError(238, "pipeline updates are not implemented by the engine yet")
    if not isinstance(u, Mapping) and hasattr(u, "apply"):
        return u  # computed by the command layer (a CompiledUpdate)
    return compile_update(u, array_filters, context)


def _apply(compiled: Any, doc: Document, position: Optional[int], inserting: bool) -> Document:
    if isinstance(compiled, dict):
        return replace(doc, compiled) if not inserting else _upserted_replacement(doc, compiled)
    result: Document = compiled.apply(doc, position=position, inserting=inserting)
    return result


def _upserted_replacement(seed: Document, replacement: Document) -> Document:
    doc = dict(replacement)
    if "_id" not in doc and "_id" in seed:
        doc = {"_id": seed["_id"], **doc}
    return doc


def update(
    collection: Collection,
    q: Any,
    u: Any,
    stamps: Union[Stamps, Writes],
    *,
    multi: bool = False,
    upsert: bool = False,
    array_filters: Any = None,
    sort: Any = None,
    context: MatchContext = DEFAULT_CONTEXT,
) -> UpdateResult:
    """One update statement: matched and modified counts, and an upserted ``_id``."""
    matcher = compile_filter(q, context)
    compiled = _compile(u, array_filters, context)
    if multi and isinstance(compiled, dict):
        raise CommandError(9, "multi update is not supported for replacement-style update")
    writes = _writes(stamps)
    result = UpdateResult()
    hits = _ordered(matcher, list(collection.find(matcher, None, context.collation)), sort, context)
    if not multi:
        hits = hits[:1]
    for rid, doc in hits:
        position = matcher.match_position(doc)[1]
        new = _apply(compiled, doc, position, inserting=False)
        result.matched += 1
        if not identical(new, doc):
            _replace(collection, writes, rid, doc, new)
            result.modified += 1
    if not hits and upsert:
        seed = upsert_seed(q)
        new = _apply(compiled, seed, None, inserting=True)
        stored = insert(collection, new, writes)
        result.upserted_id = stored["_id"]
        result.upserted = True
    return result


def _replace(
    collection: Collection, writes: Writes, rid: int, old: Document, new: Document
) -> Document:
    new = writes.check(new, old)
    collection.check_replace(rid, new)
    at = writes.stamp()
    collection.replace(rid, new, at)
    writes.written("u", new["_id"], new, at)
    return new


def _delete(collection: Collection, writes: Writes, rid: int) -> Document:
    at = writes.stamp()
    before = collection.delete(rid, at)
    writes.written("d", before["_id"], None, at)
    return before


def delete(
    collection: Collection,
    q: Any,
    stamps: Union[Stamps, Writes],
    *,
    limit: int = 0,
    context: MatchContext = DEFAULT_CONTEXT,
) -> int:
    """One delete statement (``limit`` 1: the first match only); the number deleted."""
    matcher = compile_filter(q, context)
    hits = _ordered(matcher, list(collection.find(matcher, None, context.collation)), None, context)
    if limit:
        hits = hits[:1]
    writes = _writes(stamps)
    for rid, _ in hits:
        _delete(collection, writes, rid)
    return len(hits)


def find_and_modify(
    collection: Collection,
    q: Any,
    stamps: Union[Stamps, Writes],
    *,
    update: Any = None,
    remove: bool = False,
    new: bool = False,
    upsert: bool = False,
    sort: Any = None,
    fields: Any = None,
    array_filters: Any = None,
    context: MatchContext = DEFAULT_CONTEXT,
) -> tuple[Optional[Document], dict[str, Any]]:
    """findAndModify: the document (before or after) and the ``lastErrorObject``."""
    matcher = compile_filter(q, context)
    projection = compile_projection(fields, context)
    _check_meta(matcher, projection, None)
    hits = _ordered(matcher, list(collection.find(matcher, None, context.collation)), sort, context)
    writes = _writes(stamps)
    value: Optional[Document] = None
    last_error: dict[str, Any] = {"n": 0}
    if remove:
        if hits:
            rid, doc = hits[0]
            _delete(collection, writes, rid)
            value, last_error = doc, {"n": 1}
    else:
        compiled = _compile(update, array_filters, context)
        if hits:
            rid, doc = hits[0]
            position = matcher.match_position(doc)[1]
            after = _apply(compiled, doc, position, inserting=False)
            if not identical(after, doc):
                after = _replace(collection, writes, rid, doc, after)
            value = after if new else doc
            last_error = {"n": 1, "updatedExisting": True}
        elif upsert:
            seed = upsert_seed(q)
            after = insert(collection, _apply(compiled, seed, None, inserting=True), writes)
            value = after if new else None
            last_error = {"n": 1, "updatedExisting": False, "upserted": after["_id"]}
        else:
            last_error = {"n": 0, "updatedExisting": False}
    if value is not None and projection is not None:
        value = projection.apply(
            value,
            matcher.match_position(value)[1] if projection.needs_position else None,
            matcher.meta,
        )
    return value, last_error
