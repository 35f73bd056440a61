"""The ``watch()`` helpers of a collection, a database and the client.

Spec: Change Streams, "Helper Method" (``Collection.watch``, ``Database.watch``,
``MongoClient.watch``); the signature is pymongo's. Each helper opens a
:class:`~mongocore.api.change_stream.ChangeStream` at once (its aggregate is a
retryable read, per the retryable-reads seed's "Supported Read Operations").

The options, as pymongo names them:

- ``pipeline``: stages appended to the ``$changeStream`` stage (``$match``,
  ``$project``, ``$addFields``, ``$replaceRoot``, ``$redact``, ...); a stage that
  removes ``_id`` makes the stream unable to resume.
- ``full_document``: "default", "updateLookup", "whenAvailable" or "required";
  ``full_document_before_change``: "off", "whenAvailable" or "required".
- ``resume_after``, ``start_after`` (a resume token; ``start_after`` also past an
  invalidate) or ``start_at_operation_time`` (a ``bson.Timestamp``): where to start,
  at most one of them.
- ``max_await_time_ms``: how long each getMore waits on the server for a change.
- ``batch_size``, ``collation`` and ``comment`` go on the aggregate (the comment on
  its getMores too, MongoDB 4.4+); ``show_expanded_events`` asks for the DDL events
  (create, createIndexes, modify, ...); ``session``: an explicit session for every
  command of the stream.

The read concern must be "majority" or the server default. The server validates the
options: mongocore passes them on as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from mongocore.api.change_stream import (
        ClusterChangeStream,
        CollectionChangeStream,
        DatabaseChangeStream,
    )
    from mongocore.api.client_session import ClientSession

# The change stream classes load with the first watch(): a client, a database and a
# collection are built without them.


class CollectionWatch:
    """``Collection.watch()``."""

    def watch(  # noqa: PLR0917 - positional as pymongo's
        self,
        pipeline: Optional[Sequence[Mapping[str, Any]]] = None,
        full_document: Optional[str] = None,
        resume_after: Optional[Mapping[str, Any]] = None,
        max_await_time_ms: Optional[int] = None,
        batch_size: Optional[int] = None,
        collation: Optional[Mapping[str, Any]] = None,
        start_at_operation_time: Optional[Any] = None,
        session: Optional[ClientSession] = None,
        start_after: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        full_document_before_change: Optional[str] = None,
        show_expanded_events: Optional[bool] = None,
    ) -> CollectionChangeStream:
        """A change stream over this collection's changes.

        The options are described in :mod:`mongocore.api.watch`."""
        from mongocore.api.change_stream import CollectionChangeStream  # noqa: PLC0415

        return CollectionChangeStream(
            self,
            pipeline,
            full_document,
            resume_after,
            max_await_time_ms,
            batch_size,
            collation,
            start_at_operation_time,
            session,
            start_after,
            comment,
            full_document_before_change,
            show_expanded_events,
        )


class DatabaseWatch:
    """``Database.watch()``."""

    def watch(  # noqa: PLR0917 - positional as pymongo's
        self,
        pipeline: Optional[Sequence[Mapping[str, Any]]] = None,
        full_document: Optional[str] = None,
        resume_after: Optional[Mapping[str, Any]] = None,
        max_await_time_ms: Optional[int] = None,
        batch_size: Optional[int] = None,
        collation: Optional[Mapping[str, Any]] = None,
        start_at_operation_time: Optional[Any] = None,
        session: Optional[ClientSession] = None,
        start_after: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        full_document_before_change: Optional[str] = None,
        show_expanded_events: Optional[bool] = None,
    ) -> DatabaseChangeStream:
        """A change stream over the changes of every collection of this database
        (MongoDB 4.0+; system collections excepted).

        The options are described in :mod:`mongocore.api.watch`."""
        from mongocore.api.change_stream import DatabaseChangeStream  # noqa: PLC0415

        return DatabaseChangeStream(
            self,
            pipeline,
            full_document,
            resume_after,
            max_await_time_ms,
            batch_size,
            collation,
            start_at_operation_time,
            session,
            start_after,
            comment,
            full_document_before_change,
            show_expanded_events,
        )


class ClientWatch:
    """``Client.watch()``."""

    def watch(  # noqa: PLR0917 - positional as pymongo's
        self,
        pipeline: Optional[Sequence[Mapping[str, Any]]] = None,
        full_document: Optional[str] = None,
        resume_after: Optional[Mapping[str, Any]] = None,
        max_await_time_ms: Optional[int] = None,
        batch_size: Optional[int] = None,
        collation: Optional[Mapping[str, Any]] = None,
        start_at_operation_time: Optional[Any] = None,
        session: Optional[ClientSession] = None,
        start_after: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        full_document_before_change: Optional[str] = None,
        show_expanded_events: Optional[bool] = None,
    ) -> ClusterChangeStream:
        """A change stream over the changes of every database of the deployment but
        admin, config and local (MongoDB 4.0+; run on the admin database).

        The options are described in :mod:`mongocore.api.watch`."""
        from mongocore.api.change_stream import ClusterChangeStream  # noqa: PLC0415

        return ClusterChangeStream(
            self,
            pipeline,
            full_document,
            resume_after,
            max_await_time_ms,
            batch_size,
            collation,
            start_at_operation_time,
            session,
            start_after,
            comment,
            full_document_before_change,
            show_expanded_events,
        )
