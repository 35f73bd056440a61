"""Reading a collection as a server does under a collation: selection, sort, projection,
distinct and aggregation (MongoDB manual, "Collation"; "Projection").

mongomock evaluates the query language with binary string comparison. With a
collation, the documents and the query are wrapped (:mod:`mongocore.sim.collation`)
and mongomock's own matcher, sort keys and pipeline run over the wrapped copies; the
results are the original documents (or, for an aggregation, the unwrapped output).
Without a collation, mongomock runs as it is, except for a filter on one ``_id`` value
of a plain type, which is looked up in constant time as a server's ``_id`` index
answers it (:func:`select`). Projections put ``_id`` first, where a server keeps it
(mongomock moves it last).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import mongomock
from bson import Int64, ObjectId
from mongomock import filtering
from pymongo import errors as pymongo_errors

from mongocore.sim import by_id, pipeline_extensions  # noqa: F401  (adds stages to mongomock)
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, unwrap, wrap, wrap_query
from mongocore.sim.mongomock_fixes import MISSING, is_nan

__all__ = [
    "aggregate",
    "batch_size",
    "distinct",
    "id_first",
    "project",
    "select",
    "sort_list",
]

Document = dict[str, Any]


def batch_size(value: Any) -> Optional[int]:
    """A cursor's ``batchSize`` option, checked as a server checks it."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise CommandError(
            51024, f"BSON field 'batchSize' value must be >= 0, actual value '{value}'"
        )
    return int(value)


def sort_list(sort: Any) -> Optional[list[tuple[str, Any]]]:
    if not sort:
        return None
    return [(key, value) for key, value in dict(sort).items()]


def id_first(doc: Mapping[str, Any]) -> Document:
    """``doc`` with its ``_id`` (if any) as the first field, as a server stores it."""
    if "_id" not in doc or next(iter(doc)) == "_id":
        return dict(doc)
    out: Document = {"_id": doc["_id"]}
    out.update((key, value) for key, value in doc.items() if key != "_id")
    return out


def select(
    collection: Any,
    query: Mapping[str, Any],
    *,
    collation: Optional[Collation],
    sort: Optional[Sequence[tuple[str, Any]]] = None,
    skip: int = 0,
    limit: int = 0,
) -> list[Document]:
    """The whole documents of ``collection`` matching ``query``, in ``sort`` order."""
    if collation is None and not sort and len(query) == 1:
        doc_id = query.get("_id", MISSING)
        kind = type(doc_id)
        if kind in _POINT_ID_TYPES and not (kind is float and math.isnan(doc_id)):
            return _point_lookup(collection, doc_id, skip)
    if collection.estimated_document_count() == 0:
        _validate(dict(query))
        return []
    if _compares_with_nan(query):
        # mongomock's equality is Python's, under which NaN matches nothing; a server
        # matches a NaN with a NaN. Nothing to match (above) is the one case it gets right.
        raise CommandError(238, _NAN_REFUSED)
    if collation is None:
        return list(collection.find(dict(query), sort=sort or None, skip=skip, limit=limit))
    docs = list(collection.find())
    wrapped_query = wrap_query(dict(query), collation)
    selected = []
    for doc in docs:
        wrapped = wrap(doc, collation)
        if filtering.filter_applies(wrapped_query, wrapped):  # type: ignore[no-untyped-call]
            selected.append((wrapped, doc))
    for key, direction in reversed(list(sort or ())):
        if key.startswith("$"):
            raise CommandError(238, f"sorting by {key} with a collation is not supported")
        selected.sort(
            key=lambda pair, k=key: filtering.resolve_sort_key(k, pair[0]),  # type: ignore[misc,no-untyped-call]
            reverse=direction < 0,
        )
    selected = selected[skip:]
    if limit:
        selected = selected[:limit]
    return [doc for _, doc in selected]


#: The ``_id`` types a dictionary lookup matches exactly as a server's ``_id`` index:
#: Python's equality between them is BSON's (1 == 1.0 == Int64(1), as in BSON).
#: bool is not among them: True == 1 in Python, never in BSON.
_POINT_ID_TYPES = frozenset({str, ObjectId, int, Int64, float})


_NAN_REFUSED = "a query comparing with NaN is not supported by the simulator"


def _compares_with_nan(value: Any) -> bool:
    """Does a query hold a NaN (double or decimal) anywhere?"""
    if isinstance(value, Mapping):
        return any(_compares_with_nan(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_compares_with_nan(item) for item in value)
    return is_nan(value)


def _point_lookup(collection: Any, doc_id: Any, skip: int) -> list[Document]:
    """``find({"_id": doc_id})`` by the collection's dictionary of documents (a
    server's ``_id`` index), not by a scan of every document; a copy, as find returns."""
    database = collection.database
    found = by_id.get(database.client, database.name, collection.name, doc_id)
    # A stored True is the dictionary's key 1 too: BSON never matches it with a number.
    if found is None or skip or type(found.get("_id")) is bool:
        return []
    return [copy.deepcopy(found)]


def _validate(query: dict[str, Any]) -> None:
    """Refuse an invalid filter even when there is nothing to match it against."""
    # mongomock's $expr misreads a missing field of the empty document (KeyError).
    with contextlib.suppress(KeyError):
        filtering.filter_applies(query, {})  # type: ignore[no-untyped-call]


def _scratch(docs: Sequence[Mapping[str, Any]]) -> Any:
    """A throwaway mongomock collection holding ``docs`` in order."""
    collection: Any = mongomock.MongoClient()["scratch"]["scratch"]
    if docs:
        try:
            collection.insert_many([dict(doc) for doc in docs])
        except pymongo_errors.BulkWriteError as exc:
            raise CommandError(
                238,
                "this collation makes two _id values equal; the simulator cannot evaluate"
                " the operation",
            ) from exc
    return collection


def project(
    docs: Sequence[Mapping[str, Any]], projection: Optional[Mapping[str, Any]]
) -> list[Document]:
    """The projection of ``docs`` (already selected and ordered), ``_id`` first."""
    if not projection:
        return [dict(doc) for doc in docs]
    return [id_first(doc) for doc in _scratch(docs).find({}, dict(projection))]


def distinct(
    collection: Any, key: str, query: Mapping[str, Any], collation: Optional[Collation]
) -> list[Any]:
    """The distinct values of ``key``; under a collation, one value per equal class."""
    if collation is None:
        return list(collection.distinct(key, dict(query)))
    values = [
        item
        for doc in select(collection, query, collation=collation)
        for value in filtering.iter_key_candidates(key, doc)  # type: ignore[no-untyped-call]
        if value is not MISSING
        for item in (value if isinstance(value, list) else [value])
    ]
    kept: list[Any] = []
    seen: list[Any] = []
    for value in values:
        wrapped = wrap(value, collation)
        if wrapped not in seen:
            seen.append(wrapped)
            kept.append(value)
    return kept


def aggregate(
    collection: Any, pipeline: list[Any], collation: Optional[Collation]
) -> list[Document]:
    """Run ``pipeline`` (without a final $out) over ``collection``."""
    matches = [
        stage["$match"] for stage in pipeline if isinstance(stage, Mapping) and "$match" in stage
    ]
    if (
        any(_compares_with_nan(match) for match in matches)
        and collection.estimated_document_count()
    ):
        raise CommandError(238, _NAN_REFUSED)  # as select() does
    if collation is None:
        return list(collection.aggregate(pipeline))
    wrapped_docs = [wrap(doc, collation) for doc in collection.find()]
    scratch = _scratch(wrapped_docs)
    results = scratch.aggregate(wrap_query(pipeline, collation))
    return [unwrap(doc) for doc in results]
