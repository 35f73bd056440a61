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

The same dictionary answers whether an ``_id`` is taken (the ``_id`` index's
uniqueness) and, through :func:`insert`, stores a new document without mongomock's
own unique-index check, which scans the collection once per unique index: the store
checks unique indexes itself, by lookup (sim/unique_index.py).

If a mongomock release moves that dictionary, or an ``_id`` cannot be a key, the
functions fall back to the public, scanning methods: slower, never wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Optional

import bson
import mongomock.helpers
from pymongo.errors import DuplicateKeyError

from mongocore.sim.mongomock_fixes import store_key

__all__ = ["count", "documents", "get", "insert", "put", "remove"]

Document = dict[str, Any]
_STORE_METHODS = ("__setitem__", "__delitem__", "__getitem__", "__contains__", "__len__")


def _slot(client: Any, db: str, coll: str, doc_id: Any) -> Optional[tuple[Any, Any]]:
    """mongomock's per-collection document dictionary and the document's key in it, or
    None if either is out of reach (a mongomock that moved it, an unhashable ``_id``)."""
    server_store = getattr(client, "_store", None)
    if server_store is None:
        return None
    store = server_store[db][coll]
    if not all(hasattr(store, name) for name in _STORE_METHODS):
        return None
    # The store's key (mongomock_fixes.store_key: an embedded document becomes its
    # hashable dict, a decimal its value, ...).
    key = store_key(doc_id)
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


def get(client: Any, db: str, coll: str, doc_id: Any) -> Optional[Document]:
    """The stored document with this ``_id`` (not a copy: do not change it), or None."""
    slot = _slot(client, db, coll, doc_id)
    if slot is None:
        found: Optional[Document] = client[db][coll].find_one({"_id": doc_id})
        return found
    store, key = slot
    if key not in store:
        return None
    document: Document = store[key]
    return document


def insert(client: Any, db: str, coll: str, document: Mapping[str, Any]) -> None:
    """Store a new document (its ``_id`` set) as mongomock's insert stores it, after the
    checks that insert makes (a storable BSON document, a free ``_id``) but without
    its unique-index scan: the caller checked the unique indexes."""
    slot = _slot(client, db, coll, document["_id"])
    if slot is None:
        client[db][coll].insert_one(dict(document))
        return
    bson.encode(document)  # string field names, no NUL in them, encodable values
    store, key = slot
    if key in store:
        raise DuplicateKeyError("E11000 Duplicate Key Error", 11000)
    store[key] = _normalized(document)


def count(client: Any, db: str, coll: str) -> Optional[int]:
    """How many documents the collection holds, None if mongomock's storage is out of reach."""
    store = _collection_store(client, db, coll)
    return None if store is None else len(store)


def documents(client: Any, db: str, coll: str) -> Iterator[Document]:
    """The stored documents in natural order (not copies: do not change them)."""
    store = _collection_store(client, db, coll)
    if store is None:
        yield from client[db][coll].find()
        return
    yield from list(getattr(store, "documents", ()))


def _collection_store(client: Any, db: str, coll: str) -> Any:
    server_store = getattr(client, "_store", None)
    if server_store is None:
        return None
    store = server_store[db][coll]
    if not all(hasattr(store, name) for name in (*_STORE_METHODS, "documents")):
        return None
    return store
