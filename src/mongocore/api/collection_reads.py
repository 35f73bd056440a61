"""Collection reads: find, aggregate, distinct and the counts.

Spec: CRUD ("Read"); which reads are retryable is the retryable-reads seed's
"Supported Read Operations".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from mongocore.api.arguments import (
    _check_filter,
    _collation_document,
    _collation_or_none,
    _command_fields,
    _hint,
    _options,
)
from mongocore.api.client_session import ClientSession
from mongocore.api.collection_base import CollectionBase
from mongocore.api.command_cursor import CommandCursor, _aggregate, _aggregate_options
from mongocore.api.cursor import Cursor, find_first
from mongocore.api.cursor_base import _NAMESPACE_NOT_FOUND
from mongocore.api.types import Document, Filter, Hint
from mongocore.core import codec
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import ConfigurationError, OperationFailure
from mongocore.io.operation import AttemptContext, Command


class CollectionReads(CollectionBase):
    # --- reads -----------------------------------------------------------------------------

    def find(self, *args: Any, **kwargs: Any) -> Cursor:
        """A cursor over the matching documents; nothing is sent until it is iterated.

        Takes the parameters of :class:`~mongocore.api.cursor.Cursor` (pymongo's:
        ``filter``, ``projection``, ``skip``, ``limit``, ``no_cursor_timeout``,
        ``cursor_type``, ``sort``, ... ``let``, positional as there), and mongocore's
        keyword-only ``read_preference`` and ``timeout_ms``. The find command is a
        retryable read; its getMores are not retried.
        """
        return Cursor(self, *args, **kwargs)  # type: ignore[arg-type]

    def find_one(self, filter: Any = None, *args: Any, **kwargs: Any) -> Optional[Document]:
        """The first matching document, or None (a retryable read). A ``filter`` that is
        not a document is taken as an ``_id``; the other arguments are find's."""
        # (type() first: isinstance against an abstract class is a Python call.)
        if filter is not None and type(filter) is not dict and not isinstance(filter, Mapping):
            filter = {"_id": filter}
        if not args and not kwargs:
            # The common call, a filter alone: the same find, without a Cursor object
            # unless the server leaves the cursor open. (self is the Collection this
            # mixin is part of, as _collection() says, without its call.)
            return find_first(self, filter)  # type: ignore[arg-type]
        with self.find(filter, *args, **kwargs).limit(-1) as cursor:
            for document in cursor:
                return document
        return None

    def aggregate(
        self,
        pipeline: Sequence[Mapping[str, Any]],
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """Run an aggregation pipeline. Retryable unless it ends with $out or $merge
        (then it writes, on the primary, and is never retried).

        ``kwargs`` are the aggregate command's options as pymongo takes them
        (``allowDiskUse=True``, ``maxTimeMS=100``, ``hint=...``, ``collation=...``;
        ``batchSize=5`` is the cursor's batch size, sent as ``cursor.batchSize``, and
        ``maxAwaitTimeMS`` the getMores' ``maxTimeMS``), or in snake_case
        (``allow_disk_use=True``, ``batch_size=5``).
        """
        return _aggregate(
            self._database,
            self._database.name,
            self._name,
            pipeline,
            session,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            options=_aggregate_options(kwargs, let, comment),
            collection=self._collection(),
        )

    def distinct(
        self,
        key: str,
        filter: Optional[Filter] = None,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        hint: Hint = None,
        *,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> list[Any]:
        """The distinct values of ``key`` among matching documents (a retryable read).

        ``kwargs`` are distinct's options (``maxTimeMS``, ``collation``), as pymongo
        takes them or in snake_case."""
        if not isinstance(key, str):
            raise TypeError(f"key must be a string, not {type(key).__name__}")
        fields = _command_fields(kwargs)
        collation = _collation_or_none(fields.pop("collation", None))
        if filter is not None:
            fields["query"] = dict(filter)
        if comment is not None:
            fields["comment"] = comment
        if hint is not None:
            fields["hint"] = _hint(hint)
        if collation is not None:
            fields["collation"] = collation

        def build(ctx: AttemptContext) -> Command:
            return Command({"distinct": self._name, "key": key, **fields})

        reply = self._simple_read("distinct", build, session, read_preference, timeout_ms)
        values = list(reply.get("values", []))
        return values if self._decoding is None else codec.decode_values(values, self._decoding)

    def count_documents(
        self,
        filter: Filter,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> int:
        """The exact number of matching documents (an aggregation; a retryable read).

        ``kwargs``: ``skip``, ``limit``, ``maxTimeMS``, ``collation``, ``hint`` (as in
        pymongo; snake_case too)."""
        _check_filter(filter)
        fields = _command_fields(kwargs)
        pipeline: list[Document] = [{"$match": dict(filter)}]
        if "skip" in fields:
            pipeline.append({"$skip": fields.pop("skip")})
        if "limit" in fields:
            pipeline.append({"$limit": fields.pop("limit")})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        if comment is not None:
            fields["comment"] = comment
        if "hint" in fields:
            fields["hint"] = _hint(fields["hint"])
        with _aggregate(
            self._database,
            self._database.name,
            self._name,
            pipeline,
            session,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            options=fields,
            collection=self._collection(),
            # Server selection logs the helper's name, not the aggregate it runs.
            operation_name="countDocuments",
        ) as cursor:
            for document in cursor:
                return int(document["n"])
        return 0

    def estimated_document_count(
        self,
        comment: Any = None,
        *,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> int:
        """The collection's document count from its metadata (count; a retryable read).

        ``kwargs``: ``maxTimeMS`` (or ``max_time_ms``). Takes no session, as the
        sessions spec asks (``session=`` raises ConfigurationError, as in pymongo).
        """
        if "session" in kwargs:
            raise ConfigurationError("estimated_document_count does not support sessions")
        fields = _command_fields(kwargs)
        if comment is not None:
            fields["comment"] = comment

        def build(ctx: AttemptContext) -> Command:
            return Command({"count": self._name, **fields})

        try:
            reply = self._simple_read("count", build, None, read_preference, timeout_ms)
        except OperationFailure as exc:
            if exc.code == _NAMESPACE_NOT_FOUND:
                return 0
            raise
        return int(reply.get("n", 0))

    def count(
        self,
        filter: Optional[Filter] = None,
        *,
        skip: Optional[int] = None,
        limit: Optional[int] = None,
        hint: Hint = None,
        max_time_ms: Optional[int] = None,
        session: Optional[ClientSession] = None,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        collation: Optional[Mapping[str, Any]] = None,
    ) -> int:
        """The count command as it is (a retryable read). Prefer count_documents, which
        is exact on sharded clusters, or estimated_document_count."""

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"count": self._name}
            if filter is not None:
                body["query"] = dict(filter)
            body.update(
                _options(
                    skip=skip,
                    limit=limit,
                    hint=None if hint is None else _hint(hint),
                    maxTimeMS=max_time_ms,
                    collation=None if collation is None else _collation_document(collation),
                )
            )
            return Command(body)

        reply = self._simple_read("count", build, session, read_preference, timeout_ms)
        return int(reply.get("n", 0))

    def _simple_read(
        self,
        name: str,
        build: Callable[[AttemptContext], Command],
        session: Optional[ClientSession],
        read_preference: Optional[ReadPreference],
        timeout_ms: Optional[float],
    ) -> Document:
        use = self._session(session)
        owned = use.implicit
        try:
            return self._read(
                self._database.name,
                name,
                build,
                use,
                read_preference=read_preference,
                timeout_ms=timeout_ms,
            ).reply
        finally:
            if owned:
                use.end_session()
