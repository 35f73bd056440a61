"""Document-level write rules of a simulated mongod: what a stored document may contain
and the post-image of an update (MongoDB manual, "Field Names", "Update Operators").

An update is computed on a throwaway mongomock collection holding only the matched
document (or nothing, for an upsert), so the store can check the post-image (the
validator, unique indexes, ``_id``) before anything is written. Unique indexes are
checked by the store (sim/unique_index.py), not by mongomock, so that a DuplicateKey
error carries the ``keyPattern`` and ``keyValue`` a 7.0 server reports, an index with
a collation compares its keys under it, and the check is a lookup, not a scan.
Pipeline updates are run by sim/update_pipeline.py, and ``$[]``/``$[<identifier>]``
paths made concrete for the document by sim/array_filters.py first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import bson
import mongomock

from mongocore.sim import array_filters as positional
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.mongomock_fixes import is_nan
from mongocore.sim.query import id_first
from mongocore.sim.update_pipeline import apply_pipeline, check_pipeline, upsert_seed

__all__ = [
    "check_storable",
    "check_update",
    "has_positional",
    "is_replacement",
    "post_image",
    "same_document",
]

Document = dict[str, Any]

_POSITIONAL = re.compile(r"(^|\.)\$(\.|$)")


def is_replacement(update: Any) -> bool:
    return isinstance(update, Mapping) and not any(str(k).startswith("$") for k in update)


def has_positional(update: Any) -> bool:
    """Does an operator update name a path with the positional ``$`` (set by the query)?"""
    if not isinstance(update, Mapping) or is_replacement(update):
        return False
    return any(
        isinstance(fields, Mapping) and any(_POSITIONAL.search(str(path)) for path in fields)
        for fields in update.values()
    )


def check_update(update: Any, array_filters: Any) -> None:
    """Refuse, before any document is read, what a server refuses when it parses an
    update statement (its arrayFilters, its pipeline's stages)."""
    positional.parse(update, array_filters)
    if isinstance(update, list):
        check_pipeline(update)


def check_storable(doc: Mapping[str, Any]) -> None:
    """Refuse an ``_id`` a server cannot store."""
    if "_id" not in doc:
        return
    value = doc["_id"]
    if isinstance(value, list):
        raise CommandError(53, "The '_id' value cannot be of type array")
    if isinstance(value, (re.Pattern, bson.Regex)):
        raise CommandError(53, "The '_id' value cannot be of type regex")
    if isinstance(value, Mapping):
        _check_no_dollar_keys(value)


def _check_no_dollar_keys(value: Mapping[str, Any]) -> None:
    for key, item in value.items():
        if str(key).startswith("$"):
            raise CommandError(
                52,
                f"_id fields may not contain '$'-prefixed fields: {key} is not valid for storage.",
            )
        if isinstance(item, Mapping):
            _check_no_dollar_keys(item)


def _null_id_query(query: Mapping[str, Any]) -> bool:
    value = query.get("_id", ...)
    return value is None or (isinstance(value, Mapping) and list(value.items()) == [("$eq", None)])


def _stored_as_given(doc_id: Any) -> bool:
    """An upserted replacement's ``_id`` mongomock's upsert mishandles: null, NaN."""
    return doc_id is None or is_nan(doc_id)


def post_image(
    pre: Optional[Mapping[str, Any]],
    query: Mapping[str, Any],
    update: Any,
    *,
    array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
    collation: Optional[Collation] = None,
) -> Document:
    """The document ``update`` makes of ``pre`` (or, with ``pre`` None, the document an
    upsert inserts, built from the query's equality fields)."""
    if isinstance(update, list):
        return apply_pipeline(pre, upsert_seed(query), update)  # sim/update_pipeline.py
    if positional.has_array_paths(update):
        # $[] and $[<identifier>] become the concrete paths of this document.
        filters = positional.parse(update, array_filters)
        base = dict(pre) if pre is not None else upsert_seed(query)
        update = positional.expand(base, update, filters, collation)
        if not update:
            return id_first(base) if pre is not None else _upserted_seed(base, query)
    scratch: Any = mongomock.MongoClient()["scratch"]["scratch"]
    # A NaN _id stands aside while mongomock works: its checks that an update keeps the
    # _id compare with Python's NaN != NaN. The _id is immutable; it comes back below.
    nan_id = pre is not None and is_nan(pre.get("_id"))
    if pre is not None:
        scratch.insert_one({**pre, "_id": 0} if nan_id else dict(pre))
    kwargs: dict[str, Any] = {"upsert": pre is None}
    if is_replacement(update):
        if (
            pre is not None
            and "_id" in update
            and "_id" in pre
            and update["_id"] != pre["_id"]
            and not (is_nan(update["_id"]) and is_nan(pre["_id"]))  # NaN is NaN in BSON
        ):
            raise CommandError(
                66,
                "After applying the update, the (immutable) field '_id' was found to have been"
                f" altered to _id: {update['_id']!r}",
            )
        if pre is None and "_id" in update and _stored_as_given(update["_id"]):
            # mongomock refuses a replacement's null _id, and a NaN one (its NaN is not
            # equal to itself); the server stores either as it is.
            scratch.insert_one(dict(update))
        elif nan_id:
            scratch.replace_one({}, {k: v for k, v in update.items() if k != "_id"})
        else:
            scratch.replace_one(dict(query) if pre is None else {}, dict(update), **kwargs)
    else:
        scratch.update_one(dict(query), update, **kwargs)
    image = scratch.find_one()
    if image is None:
        raise CommandError(2, "the update produced no document")
    if nan_id and pre is not None:
        changed = image.get("_id") != 0  # the stand-in changed: so would the NaN have
        image["_id"] = pre["_id"]
    else:
        changed = pre is not None and "_id" in pre and image.get("_id") != pre["_id"]
    if pre is None and _null_id_query(query) and not is_replacement(update):
        image["_id"] = None  # mongomock makes an ObjectId of {_id: null}; a server keeps null
    if changed:
        raise CommandError(
            66,
            "Performing an update on the path '_id' would modify the immutable field '_id'",
        )
    return id_first(image)


def _upserted_seed(seed: Document, query: Mapping[str, Any]) -> Document:
    """An upsert whose update named no concrete path inserts the query's fields."""
    if _null_id_query(query):
        seed["_id"] = None
    return id_first(seed)


def same_document(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Byte-for-byte the same BSON (an update that changes nothing is not a modification)."""
    try:
        return bool(bson.encode(dict(a)) == bson.encode(dict(b)))
    except Exception:
        return dict(a) == dict(b)
