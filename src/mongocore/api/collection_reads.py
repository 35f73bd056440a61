"""Collection reads: find, aggregate, distinct and the counts.

Spec: CRUD ("Read"); which reads are retryable is the retryable-reads seed's
"Supported Read Operations".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Union

from mongocore.api.arguments import _collation_document, _hint, _options
from mongocore.api.client_session import ClientSession
from mongocore.api.collection_base import CollectionBase
from mongocore.api.command_cursor import CommandCursor, _aggregate
from mongocore.api.cursor import Cursor, find_first
from mongocore.api.cursor_base import _NAMESPACE_NOT_FOUND
from mongocore.api.types import Document, Filter, Hint, Projection, SortSpec
from mongocore.core import codec
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import (
    OperationFailure,
)
from mongocore.io.operation import AttemptContext, Command


class CollectionReads(CollectionBase):
    # --- reads -----------------------------------------------------------------------------

    def find(
        self,
        filter: Optional[Filter] = None,
        projection: Projection = None,
        skip: int = 0,
        limit: int = 0,
        *,
        no_cursor_timeout: Optional[bool] = None,
        sort: SortSpec = None,
        allow_partial_results: Optional[bool] = None,
        batch_size: Optional[int] = None,
        hint: Hint = None,
        max_time_ms: Optional[int] = None,
        comment: Any = None,
        collation: Optional[Mapping[str, Any]] = None,
        allow_disk_use: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        max: Optional[Union[Sequence[tuple[str, Any]], Mapping[str, Any]]] = None,
        min: Optional[Union[Sequence[tuple[str, Any]], Mapping[str, Any]]] = None,
        return_key: Optional[bool] = None,
        show_record_id: Optional[bool] = None,
        session: Optional[ClientSession] = None,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
    ) -> Cursor:
        """A cursor over the matching documents; nothing is sent until it is iterated.

        The find command is a retryable read; its getMores are not retried.
        """
        cursor = Cursor(
            self._collection(),
            filter,
            projection,
            skip=skip,
            limit=limit,
            sort=sort,
            batch_size=batch_size,
            session=session,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            options=_options(
                hint=None if hint is None else _hint(hint),
                maxTimeMS=max_time_ms,
                comment=comment,
                collation=None if collation is None else dict(collation),
                allowDiskUse=allow_disk_use,
                let=None if let is None else dict(let),
                noCursorTimeout=no_cursor_timeout,
                allowPartialResults=allow_partial_results,
                returnKey=return_key,
                showRecordId=show_record_id,
            ),
        )
        if max is not None:
            cursor.max(max)
        if min is not None:
            cursor.min(min)
        return cursor

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
        *,
        batch_size: Optional[int] = None,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        **options: Any,
    ) -> CommandCursor:
        """Run an aggregation pipeline. Retryable unless it ends with $out or $merge
        (then it writes, on the primary, and is never retried).

        ``options`` are command fields, in the command's spelling or snake_case
        (``allow_disk_use=True``, ``maxTimeMS=100``, ``let={...}``, ``hint=...``).
        """
        return _aggregate(
            self._database,
            self._database.name,
            self._name,
            pipeline,
            session,
            batch_size=batch_size,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            options=options,
            collection=self._collection(),
        )

    def distinct(
        self,
        key: str,
        filter: Optional[Filter] = None,
        *,
        session: Optional[ClientSession] = None,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        collation: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        max_time_ms: Optional[int] = None,
        hint: Hint = None,
    ) -> list[Any]:
        """The distinct values of ``key`` among matching documents (a retryable read)."""
        if not isinstance(key, str):
            raise TypeError("key must be a string")

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"distinct": self._name, "key": key}
            if filter is not None:
                body["query"] = dict(filter)
            body.update(
                _options(
                    collation=None if collation is None else dict(collation),
                    comment=comment,
                    maxTimeMS=max_time_ms,
                    hint=None if hint is None else _hint(hint),
                )
            )
            return Command(body)

        reply = self._simple_read("distinct", build, session, read_preference, timeout_ms)
        values = list(reply.get("values", []))
        return values if self._decoding is None else codec.decode_values(values, self._decoding)

    def count_documents(
        self,
        filter: Filter,
        *,
        skip: Optional[int] = None,
        limit: Optional[int] = None,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        max_time_ms: Optional[int] = None,
        comment: Any = None,
        session: Optional[ClientSession] = None,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
    ) -> int:
        """The exact number of matching documents (an aggregation; a retryable read)."""
        pipeline: list[Document] = [{"$match": dict(filter)}]
        if skip:
            pipeline.append({"$skip": int(skip)})
        if limit:
            pipeline.append({"$limit": int(limit)})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        options = _options(
            hint=None if hint is None else _hint(hint),
            collation=None if collation is None else dict(collation),
            maxTimeMS=max_time_ms,
            comment=comment,
        )
        with _aggregate(
            self._database,
            self._database.name,
            self._name,
            pipeline,
            session,
            batch_size=None,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            options=options,
            collection=self._collection(),
            # Server selection logs the helper's name, not the aggregate it runs.
            operation_name="countDocuments",
        ) as cursor:
            for document in cursor:
                return int(document["n"])
        return 0

    def estimated_document_count(
        self,
        *,
        max_time_ms: Optional[int] = None,
        comment: Any = None,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
    ) -> int:
        """The collection's document count from its metadata (count; a retryable read).

        Takes no session, as the sessions spec asks.
        """

        def build(ctx: AttemptContext) -> Command:
            return Command(
                {"count": self._name, **_options(maxTimeMS=max_time_ms, comment=comment)}
            )

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
        owned = session is None
        use = self._session(session)
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
