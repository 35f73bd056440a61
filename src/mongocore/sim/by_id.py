"""Reaching one document of a simulated collection by its ``_id``, in constant time.

mongomock keeps a collection's documents in a dictionary keyed by ``_id`` but offers
no public way to use it: ``find_one({"_id": x})``, ``replace_one`` and
``delete_one`` all evaluate the filter against the documents one by one. Replication
applies one full post-image or one deletion per oplog entry; done through those
methods, each costs a scan of the collection, so the work of a catch-up grew with the
square of the history. This module goes to the dictionary directly, keyed as
mongomock keys it (a document ``_id`` becomes its hashable dict), and stores what
mongomock's own insert would store (datetimes made naive UTC with millisecond
precision, a fresh copy of every nested document and array).

If a mongomock release moves that dictionary, or an ``_id`` cannot be a key, the
functions fall back to the public, scanning methods: slower, never wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Optional

import mongomock.helpers

__all__ = ["put", "remove"]

Document = dict[str, Any]


def _slot(client: Any, db: str, coll: str, doc_id: Any) -> Optional[tuple[Any, Any]]:
    """mongomock's per-collection document dictionary and the document's key in it, or
    None if either is out of reach (a mongomock that moved it, an unhashable ``_id``)."""
    server_store = getattr(client, "_store", None)
    if server_store is None:
        return None
    store = server_store[db][coll]
    if not all(hasattr(store, name) for name in ("__setitem__", "__delitem__")):
        return None
    # mongomock's own key: an embedded document becomes its hashable dict.
    key = mongomock.helpers.hashdict(doc_id) if isinstance(doc_id, dict) else doc_id
    try:
        hash(key)
    except TypeError:
        return None
    return store, key


def _normalized(document: Mapping[str, Any]) -> Document:
    patch: Callable[[Any], Document] = mongomock.helpers.patch_datetime_awareness_in_document
    return patch(dict(document))


def put(client: Any, db: str, coll: str, doc_id: Any, document: Mapping[str, Any]) -> None:
    """Store ``document`` as the document with this ``_id``, inserting or replacing it
    (a replaced document keeps its place in natural order, as mongomock's replace does)."""
    slot = _slot(client, db, coll, doc_id)
    if slot is None:
        client[db][coll].replace_one({"_id": doc_id}, _normalized(document), upsert=True)
        return
    store, key = slot
    store[key] = _normalized(document)


def remove(client: Any, db: str, coll: str, doc_id: Any) -> None:
    """Delete the document with this ``_id``, if there is one."""
    slot = _slot(client, db, coll, doc_id)
    if slot is None:
        client[db][coll].delete_one({"_id": doc_id})
        return
    store, key = slot
    with contextlib.suppress(KeyError):
        del store[key]
