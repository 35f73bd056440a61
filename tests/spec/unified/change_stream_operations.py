"""Unified test format: change streams. "createChangeStream" on a client, database or
collection entity (``watch()``), and the operations on the change stream entity it
returns ("iterateUntilDocumentOrError", "iterateOnce", "close").

Kept apart from :mod:`tests.spec.unified.operations`, which dispatches here for these
names (:func:`handles`).
"""

from __future__ import annotations

import time
from typing import Any

from mongocore.api.change_stream import ChangeStream
from mongocore.api.collection import Collection
from mongocore.api.database import Database
from tests.spec.unified.entities import WAIT_TIMEOUT, ClientEntity

CREATE = "createChangeStream"
STREAM_OPERATIONS = frozenset({"iterateUntilDocumentOrError", "iterateOnce", "close"})

#: createChangeStream's options (the format's names) and watch()'s keywords.
_OPTIONS = {
    "fullDocument": "full_document",
    "fullDocumentBeforeChange": "full_document_before_change",
    "resumeAfter": "resume_after",
    "startAfter": "start_after",
    "startAtOperationTime": "start_at_operation_time",
    "maxAwaitTimeMS": "max_await_time_ms",
    "batchSize": "batch_size",
    "collation": "collation",
    "comment": "comment",
    "showExpandedEvents": "show_expanded_events",
}


def handles(target: Any, name: str) -> bool:
    """Is this operation one of this module's?"""
    if isinstance(target, ChangeStream):
        return name in STREAM_OPERATIONS
    return name == CREATE and isinstance(target, (ClientEntity, Database, Collection))


def run(target: Any, name: str, args: Any) -> Any:
    """Run the operation (``args`` is an ``operations.Arguments``). createChangeStream
    returns the change stream (the test saves it as an entity)."""
    if isinstance(target, ChangeStream):
        args.done()
        return _stream_operation(target, name)
    session = args.session()
    pipeline = args.take("pipeline", [])
    keywords = args.keywords(_OPTIONS)
    args.done()
    watched = target.client if isinstance(target, ClientEntity) else target
    return watched.watch(pipeline, session=session, **keywords)


def _stream_operation(stream: ChangeStream, name: str) -> Any:
    if name == "iterateUntilDocumentOrError":
        # The stream's own next() would wait for ever for an event that never comes:
        # poll with try_next (one getMore each) until a deadline instead.
        deadline = time.monotonic() + WAIT_TIMEOUT
        while stream.alive:
            change = stream.try_next()
            if change is not None:
                return change
            if time.monotonic() > deadline:
                raise AssertionError(f"no change event in {WAIT_TIMEOUT}s")
        raise AssertionError("the change stream ended without a document")
    if name == "iterateOnce":
        # At most one getMore: the document it brought, if any.
        return stream.try_next()
    stream.close()
    return None
