"""Change events: which records a stream sees, and the documents it returns (change
streams spec, "Response Format"; the server's event transformation).

A stream watches a collection, a database, or the whole deployment (its ``Scope``). It
sees the CRUD events of what it watches, drop, rename and dropDatabase, and with
``showExpandedEvents`` the create, createIndexes, dropIndexes and modify events too.
A collection stream is invalidated by the drop or rename of its collection (or a
rename onto it), a database stream by dropDatabase; a deployment stream never is.

Fields, in a 7.0 server's order: ``_id`` (the resume token), ``operationType``,
``clusterTime``, ``txnNumber`` and ``lsid`` (events from a transaction),
``collectionUUID`` (expanded events), ``wallTime``, ``fullDocument``, ``ns``, ``to``
(rename), ``documentKey``, ``operationDescription`` (expanded events),
``updateDescription``, ``stateBeforeChange`` (modify), ``fullDocumentBeforeChange``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from mongocore.sim.change_log import ChangeRecord
from mongocore.sim.codes import CommandError
from mongocore.sim.update_description import describe_update

__all__ = ["EXPANDED_EVENTS", "Scope", "StreamOptions", "build_event", "invalidate_event"]

Document = dict[str, Any]
Lookup = Callable[[str, str, Any], Optional[Document]]

#: Events a stream shows only with showExpandedEvents.
EXPANDED_EVENTS = frozenset({"create", "createIndexes", "dropIndexes", "modify"})
_INTERNAL_DATABASES = frozenset({"admin", "config", "local"})
_IMAGE_EVENTS = frozenset({"update", "replace", "delete"})


@dataclass(frozen=True)
class Scope:
    """What a stream watches: ``db.coll``, a database (coll None), or all (db None)."""

    db: Optional[str] = None
    coll: Optional[str] = None

    def covers(self, record: ChangeRecord, expanded: bool) -> bool:
        if record.op in EXPANDED_EVENTS and not expanded:
            return False
        if self.db is None:
            return record.db not in _INTERNAL_DATABASES and not _system(record.coll)
        if self.coll is None:
            if record.op == "dropDatabase":
                return record.db == self.db
            to_db = record.to[0] if record.to is not None else None
            return self.db in (record.db, to_db) and not _system(record.coll)
        if record.op == "dropDatabase":
            return False  # the drop of the collection came first and invalidated it
        return (record.db, record.coll) == (self.db, self.coll) or record.to == (
            self.db,
            self.coll,
        )

    def invalidated_by(self, record: ChangeRecord) -> bool:
        if self.db is None:
            return False
        if self.coll is None:
            return record.op == "dropDatabase" and record.db == self.db
        watched = (self.db, self.coll)
        if record.op == "drop":
            return (record.db, record.coll) == watched
        return record.op == "rename" and watched in ((record.db, record.coll), record.to)


def _system(coll: str) -> bool:
    return coll.startswith("system.")


@dataclass(frozen=True)
class StreamOptions:
    """The $changeStream options that shape events."""

    full_document: str = "default"  # default, updateLookup, whenAvailable, required
    full_document_before_change: str = "off"  # off, whenAvailable, required
    show_expanded_events: bool = False


def build_event(record: ChangeRecord, options: StreamOptions, lookup: Lookup) -> Document:
    """The change event a stream with ``options`` returns for ``record``."""
    expanded = options.show_expanded_events
    event: Document = {
        "_id": record.position.token(),
        "operationType": record.op,
        "clusterTime": record.optime.ts,
    }
    if record.txn is not None:
        event.update(record.txn)
    if expanded and record.uuid is not None and record.op != "dropDatabase":
        event["collectionUUID"] = record.uuid
    event["wallTime"] = record.optime.wall_datetime
    if record.op in ("insert", "replace"):
        event["fullDocument"] = copy.deepcopy(record.post)
    elif record.op == "update" and options.full_document != "default":
        event["fullDocument"] = _post_image(record, options, lookup, event)
    event["ns"] = {"db": record.db, "coll": record.coll} if record.coll else {"db": record.db}
    if record.to is not None:
        event["to"] = {"db": record.to[0], "coll": record.to[1]}
    if record.key is not None:
        event["documentKey"] = copy.deepcopy(record.key)
    if expanded and record.description is not None:
        event["operationDescription"] = copy.deepcopy(record.description)
    if record.op == "update" and record.pre is not None and record.post is not None:
        event["updateDescription"] = describe_update(
            record.pre, record.post, record.update, disambiguate=expanded
        )
    if expanded and record.state_before is not None:
        event["stateBeforeChange"] = copy.deepcopy(record.state_before)
    if options.full_document_before_change != "off" and record.op in _IMAGE_EVENTS:
        event["fullDocumentBeforeChange"] = _pre_image(record, options, event)
    return event


def invalidate_event(record: ChangeRecord) -> Document:
    """The invalidate event that follows ``record`` (a drop, rename or dropDatabase)."""
    return {
        "_id": record.position.invalidated().token(),
        "operationType": "invalidate",
        "clusterTime": record.optime.ts,
        "wallTime": record.optime.wall_datetime,
    }


def _post_image(
    record: ChangeRecord, options: StreamOptions, lookup: Lookup, event: Mapping[str, Any]
) -> Optional[Document]:
    if options.full_document == "updateLookup":
        # The document as it is now, not as the update left it (null once deleted).
        key = record.key or {}
        return lookup(record.db, record.coll, key.get("_id"))
    if record.images and record.post is not None:
        return copy.deepcopy(record.post)
    if options.full_document == "required":
        raise CommandError(
            47,
            "Change stream was configured to require a post-image for all update events, "
            f"but the post-image was not found for event: {_describe(event, record)}",
        )
    return None


def _pre_image(
    record: ChangeRecord, options: StreamOptions, event: Mapping[str, Any]
) -> Optional[Document]:
    if record.images and record.pre is not None:
        return copy.deepcopy(record.pre)
    if options.full_document_before_change == "required":
        raise CommandError(
            47,
            "Change stream was configured to require a pre-image for all update, delete and "
            f"replace events, but the pre-image was not found for event: "
            f"{_describe(event, record)}",
        )
    return None


def _describe(event: Mapping[str, Any], record: ChangeRecord) -> str:
    return (
        f"{{_id: {event['_id']!r}, operationType: {record.op!r}, "
        f"ns: {record.db}.{record.coll}, documentKey: {record.key!r}}}"
    )
