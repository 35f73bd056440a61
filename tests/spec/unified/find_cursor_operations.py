"""Unified test format: "createFindCursor" on a collection entity and the operations on
the find cursor entity it creates ("iterateUntilDocumentOrError", "iterateOnce",
"close").

The format wants the server-side cursor to exist when createFindCursor returns (a
test then counts the connections it holds, or fails its getMore): mongocore's find
cursor is lazy, so the operation starts it, sending the find, without consuming a
document.

Kept apart from :mod:`tests.spec.unified.operations`, which dispatches here for these
names (:func:`handles`).
"""

from __future__ import annotations

from typing import Any

from mongocore.api.collection import Collection
from mongocore.api.cursor import Cursor

CREATE = "createFindCursor"
CURSOR_OPERATIONS = frozenset({"iterateUntilDocumentOrError", "iterateOnce", "close"})

#: createFindCursor's options (the format's names) and find()'s keywords.
_OPTIONS = {
    "projection": "projection",
    "sort": "sort",
    "skip": "skip",
    "limit": "limit",
    "batchSize": "batch_size",
    "hint": "hint",
    "maxTimeMS": "max_time_ms",
    "comment": "comment",
    "collation": "collation",
    "allowDiskUse": "allow_disk_use",
    "let": "let",
    "timeoutMS": "timeout_ms",
}


def handles(target: Any, name: str) -> bool:
    """Is this operation one of this module's?"""
    if isinstance(target, Cursor):
        return name in CURSOR_OPERATIONS
    return name == CREATE and isinstance(target, Collection)


def run(target: Any, name: str, args: Any) -> Any:
    """Run the operation (``args`` is an ``operations.Arguments``). createFindCursor
    returns the started cursor (the test saves it as an entity)."""
    if isinstance(target, Cursor):
        args.done()
        return _cursor_operation(target, name)
    session = args.session()
    filter_ = args.require("filter")
    keywords = args.keywords(_OPTIONS)
    args.done()
    cursor = target.find(filter_, session=session, **keywords)
    # Sends the find and takes its first batch; the documents stay for the test.
    cursor._start()
    return cursor


def _cursor_operation(cursor: Cursor, name: str) -> Any:
    if name == "iterateUntilDocumentOrError":
        return cursor.next()
    if name == "iterateOnce":
        # One getMore at most: the document it returned, if any.
        return cursor.try_next()
    cursor.close()
    return None
