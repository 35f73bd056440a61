"""Unified test format: the index operations of a collection entity ("createIndex",
"createIndexes", "dropIndex", "dropIndexes"), on ``Collection.create_index(es)`` and
``drop_index(es)``. Newer files give "createIndexes" a list of ``indexes`` (each its
``keys`` and options) and "dropIndexes" an ``index`` to drop one by name. The search
index operations ("createSearchIndex", "createSearchIndexes", "dropSearchIndex",
"updateSearchIndex", "listSearchIndexes", the format's "Collection Operations") run
on the collection's search index helpers, with SearchIndexModel.

Kept apart from :mod:`tests.spec.unified.operations`, which dispatches here for these
names (:func:`handles`).
"""

from __future__ import annotations

from typing import Any

from mongocore.api.collection import Collection
from mongocore.api.index_model import IndexModel
from mongocore.operations import SearchIndexModel
from tests.spec.unified.entities import UnsupportedFeature

OPERATIONS = frozenset({"createIndex", "createIndexes", "dropIndex", "dropIndexes"})
SEARCH_OPERATIONS = frozenset(
    {
        "createSearchIndex",
        "createSearchIndexes",
        "dropSearchIndex",
        "updateSearchIndex",
        "listSearchIndexes",
    }
)
#: A SearchIndexModel's fields in the format ("SearchIndexModel" of Index Management).
_SEARCH_INDEX_MODEL = frozenset({"definition", "name", "type"})

#: createIndex's index options (the format's names are the server's).
_INDEX_OPTIONS = ("name", "unique", "sparse", "expireAfterSeconds", "hidden", "background")


def handles(target: Any, name: str) -> bool:
    """Is this operation one of this module's?"""
    return isinstance(target, Collection) and name in OPERATIONS | SEARCH_OPERATIONS


def run(collection: Collection, name: str, args: Any) -> Any:
    """Run the operation (``args`` is an ``operations.Arguments``); createIndex returns
    the index's name."""
    if name in SEARCH_OPERATIONS:
        return _search_operation(collection, name, args)
    session = args.session()
    comment = args.take("comment")
    max_time_ms = args.take("maxTimeMS")
    extra: dict[str, Any] = {} if max_time_ms is None else {"maxTimeMS": max_time_ms}
    timeout_ms = args.take("timeoutMS")
    if timeout_ms is not None:
        extra["timeout_ms"] = timeout_ms
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


def _search_model(model: Any) -> SearchIndexModel:
    if not isinstance(model, dict) or "definition" not in model:
        raise ValueError(f"a search index model is a document with a definition: {model!r}")
    unknown = set(model) - _SEARCH_INDEX_MODEL
    if unknown:
        raise UnsupportedFeature(f"SearchIndexModel fields {sorted(unknown)}")
    return SearchIndexModel(model["definition"], model.get("name"), model.get("type"))


def _search_operation(collection: Collection, name: str, args: Any) -> Any:
    session = args.session()
    if name == "createSearchIndex":
        model = _search_model(args.require("model"))
        args.done()
        return collection.create_search_index(model, session)
    if name == "createSearchIndexes":
        models = [_search_model(m) for m in args.require("models")]
        args.done()
        return collection.create_search_indexes(models, session)
    if name == "dropSearchIndex":
        index = args.require("name")
        args.done()
        collection.drop_search_index(index, session)
        return None
    if name == "updateSearchIndex":
        index = args.require("name")
        definition = args.require("definition")
        args.done()
        collection.update_search_index(index, definition, session)
        return None
    index_name = args.take("name")
    options = dict(args.take("aggregationOptions") or {})
    args.done()
    with collection.list_search_indexes(index_name, session, **options) as cursor:
        return cursor.to_list()
