"""Unified test format: the index operations of a collection entity ("createIndex",
"createIndexes", "dropIndex", "dropIndexes"), on ``Collection.create_index(es)`` and
``drop_index(es)``. Newer files give "createIndexes" a list of ``indexes`` (each its
``keys`` and options) and "dropIndexes" an ``index`` to drop one by name.

Kept apart from :mod:`tests.spec.unified.operations`, which dispatches here for these
names (:func:`handles`).
"""

from __future__ import annotations

from typing import Any

from mongocore.api.collection import Collection
from mongocore.api.index_model import IndexModel
from tests.spec.unified.entities import UnsupportedFeature

OPERATIONS = frozenset({"createIndex", "createIndexes", "dropIndex", "dropIndexes"})

#: createIndex's index options (the format's names are the server's).
_INDEX_OPTIONS = ("name", "unique", "sparse", "expireAfterSeconds", "hidden", "background")


def handles(target: Any, name: str) -> bool:
    """Is this operation one of this module's?"""
    return isinstance(target, Collection) and name in OPERATIONS


def run(collection: Collection, name: str, args: Any) -> Any:
    """Run the operation (``args`` is an ``operations.Arguments``); createIndex returns
    the index's name."""
    session = args.session()
    comment = args.take("comment")
    max_time_ms = args.take("maxTimeMS")
    extra = {} if max_time_ms is None else {"maxTimeMS": max_time_ms}
    if name == "createIndex":
        keys = dict(args.require("keys"))
        options = {key: args.take(key) for key in _INDEX_OPTIONS}
        options = {key: value for key, value in options.items() if value is not None}
        args.done()
        return collection.create_index(list(keys.items()), session, comment, **options, **extra)
    if name == "createIndexes":
        models = [_index_model(index) for index in args.require("indexes")]
        args.done()
        return collection.create_indexes(models, session, comment, **extra)
    if name == "dropIndex" or args.has("index"):
        index = args.require("name" if name == "dropIndex" else "index")
        args.done()
        collection.drop_index(index, session, comment, **extra)
        return None
    args.done()
    collection.drop_indexes(session, comment, **extra)
    return None


def _index_model(index: Any) -> IndexModel:
    """One entry of createIndexes' ``indexes``: ``keys`` and the index's options."""
    options = {key: value for key, value in index.items() if key != "keys"}
    unknown = set(options) - set(_INDEX_OPTIONS)
    if unknown:
        raise UnsupportedFeature(f"createIndexes index options {sorted(unknown)}")
    return IndexModel(list(dict(index["keys"]).items()), **options)
