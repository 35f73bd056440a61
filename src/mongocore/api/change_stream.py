"""ChangeStream: a resumable cursor over a ``$changeStream`` aggregation.

Spec: Change Streams ("Driver API", "Helper Method", "ChangeStream", "Resume
Process", "Exposing All Resume Tokens", "Not Blocking on Iteration"). The rules of
resuming (which errors, which token, which starting point) are pure and live in
:mod:`mongocore.core.change_streams`; this module runs the commands.

The aggregate that opens a stream, and the one that reopens it on a resume, is a
retryable read (the retryable-reads seed lists ``watch()``): the executor retries it
as that seed says. A getMore is never retried; a resumable error of a getMore makes
the stream resume once, with the same session and the original read preference.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Optional, Union, cast

from mongocore.api.client_session import ClientSession
from mongocore.api.command_cursor import CommandCursor
from mongocore.api.types import Document, _DocumentType
from mongocore.core.change_streams import (
    MissingResumeToken,
    ResumeState,
    get_more_fields,
    is_resumable,
    kills_old_cursor,
)
from mongocore.errors import InvalidOperation, MongoCoreError
from mongocore.io.operation import AttemptContext, Command

if TYPE_CHECKING:
    from mongocore.api.client import Client
    from mongocore.api.collection import Collection
    from mongocore.api.database import Database
    from mongocore.api.target import _Target


class _ChangeStreamCursor(CommandCursor):
    """The stream's server cursor: remembers each batch's postBatchResumeToken and is
    read one batch at a time (a tailable cursor's empty batch is not its end)."""

    post_batch_resume_token: Optional[Document] = None

    def _batch_reply(self, cursor: Mapping[str, Any]) -> None:
        token = cursor.get("postBatchResumeToken")
        self.post_batch_resume_token = dict(token) if isinstance(token, Mapping) else None

    def next_change(self, get_more_allowed: bool) -> tuple[Optional[Document], bool]:
        """The next buffered document, after at most one getMore when none is
        buffered, and whether it is the last of its batch; (None, True) when the
        server had nothing (yet) or the cursor is closed."""
        self._settle()
        buffered = self._position < len(self._buffer)
        if not buffered and get_more_allowed and self._id != 0 and not self._killed:
            self._get_more()
        if self._position >= len(self._buffer):
            return None, True
        document = self._buffer[self._position]
        self._position += 1
        return document, self._position == len(self._buffer)

    def kill(self) -> None:
        """killCursors on the cursor's own server (best effort, errors suppressed)."""
        if self._id != 0 and self._address is not None:
            self._kill()
        self.close()


class ChangeStream(Generic[_DocumentType]):
    """A change stream: iterate it for change documents (``for change in stream``,
    ``next(stream)``), or poll with :meth:`try_next`; close it (or leave a ``with``
    block) when done. Made by ``watch()`` on a client, a database or a collection;
    prefer these helpers to an aggregation with a ``$changeStream`` stage: only
    they resume.

    Iterating blocks until a change arrives (each getMore waits up to
    ``max_await_time_ms`` on the server). :meth:`try_next` returns None when a
    getMore brought nothing, so a caller that stores :attr:`resume_token` after every
    call, document or not, always holds the most recent one, and can pass it as
    ``resume_after`` (or ``start_after``, past an invalidate) to a later ``watch()``.

    After a resumable error of a getMore (a network error, CursorNotFound, or a
    server error labeled ResumableChangeStreamError) the stream resumes once, from
    its cached resume token, on a server selected with the original read preference.
    Any other error closes the stream and is raised. An invalidate event (the
    collection was dropped or renamed, the database dropped) ends it. Not thread-safe.
    """

    def __init__(  # noqa: PLR0917 - positional as pymongo's
        self,
        target: Any,
        pipeline: Optional[Sequence[Mapping[str, Any]]],
        full_document: Optional[str],
        resume_after: Optional[Mapping[str, Any]],
        max_await_time_ms: Optional[int],
        batch_size: Optional[int],
        collation: Optional[Mapping[str, Any]],
        start_at_operation_time: Optional[Any],
        session: Optional[ClientSession],
        start_after: Optional[Mapping[str, Any]],
        comment: Any = None,
        full_document_before_change: Optional[str] = None,
        show_expanded_events: Optional[bool] = None,
    ) -> None:
        self._pipeline = _pipeline(pipeline)
        for name, value in (
            ("full_document", full_document),
            ("full_document_before_change", full_document_before_change),
        ):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a string, not {type(value).__name__}")
        self._batch_size = _optional_count("batch_size", batch_size)
        self._max_await_time_ms = _optional_count("max_await_time_ms", max_await_time_ms)
        scope, database, aggregate = self._scope(target)
        self._scope_target: _Target = scope
        self._client: Client = scope.client
        self._database = database
        self._aggregate = aggregate
        # The $changeStream stage's options as given; the server validates them
        # (unknown fullDocument values, two starting points, ...).
        stage: Document = {}
        given: tuple[tuple[str, Any], ...] = (
            ("fullDocument", full_document),
            ("fullDocumentBeforeChange", full_document_before_change),
            ("resumeAfter", resume_after),
            ("startAfter", start_after),
            ("startAtOperationTime", start_at_operation_time),
            ("showExpandedEvents", show_expanded_events),
        )
        for key, value in given:
            if value is not None:
                stage[key] = copy.deepcopy(dict(value)) if isinstance(value, Mapping) else value
        stage.update(self._stage_fields())
        self._stage = stage
        self._fields: Document = {}
        if collation is not None:
            self._fields["collation"] = dict(collation)
        if comment is not None:
            self._fields["comment"] = comment
        self._comment = comment
        self._state = ResumeState.started(
            resume_after=resume_after,
            start_after=start_after,
            start_at_operation_time=start_at_operation_time,
        )
        self._owned_session: Optional[ClientSession] = None
        self._session = scope._session(session)
        if self._session.implicit:
            # One implicit session for the stream's life: a resume "MUST use the same
            # session as the previous attempt's command".
            self._owned_session = self._session
        self._closed = False
        self._wire_version = 0
        self._cursor: Optional[_ChangeStreamCursor] = None
        try:
            self._cursor = self._open(resuming=False)
        except BaseException:
            self._release()
            raise

    # --- what each kind of stream watches ---------------------------------------------------

    def _scope(self, target: Any) -> tuple[_Target, str, Union[str, int]]:
        """The target the aggregate runs through (its options, read preference and
        concerns), its database, and the aggregate command's value."""
        raise NotImplementedError

    def _stage_fields(self) -> Document:
        """Fields of the ``$changeStream`` stage that this kind of stream adds."""
        return {}

    # --- public -----------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """False once the stream is closed, by :meth:`close`, an error, or an invalidate."""
        return not self._closed

    @property
    def resume_token(self) -> Optional[Document]:
        """The token a resume would use now ("Exposing All Resume Tokens"): the
        postBatchResumeToken of the last batch or the ``_id`` of the last document
        returned, or the ``resume_after``/``start_after`` given, until one arrives."""
        token = self._state.resume_token
        return None if token is None else cast(Document, copy.deepcopy(token))

    def __iter__(self) -> Iterator[Document]:
        return self

    def __next__(self) -> Document:
        while self.alive:
            change = self.try_next()
            if change is not None:
                return change
        raise StopIteration

    def next(self) -> Document:
        """The next change document, waiting for one; StopIteration once closed."""
        return self.__next__()

    def try_next(self) -> Optional[Document]:
        """The next change document, or None if one getMore brought none (or the
        stream is closed). Never more than one getMore, and at most one resume."""
        if self._closed or self._cursor is None:
            return None
        try:
            try:
                change, last = self._cursor.next_change(get_more_allowed=True)
            except MongoCoreError as exc:
                if not is_resumable(exc, self._wire_version):
                    raise
                self._resume(exc)
                change, last = self._cursor.next_change(get_more_allowed=False)
        except BaseException:
            self.close()
            raise
        cursor = self._cursor
        token = cursor.post_batch_resume_token
        if change is None:
            self._state = self._state.after_batch(batch_empty=True, post_batch_resume_token=token)
        else:
            try:
                self._state = self._state.after_document(
                    change, last_in_batch=last, post_batch_resume_token=token
                )
            except MissingResumeToken as exc:
                self.close()
                raise InvalidOperation(str(exc)) from None
        if not cursor.alive:
            # The server closed the cursor (after an invalidate): the stream has ended.
            self._closed = True
            self._release()
        return change

    def close(self) -> None:
        """Kill the server cursor (best effort) and release the stream's session."""
        self._closed = True
        cursor, self._cursor = self._cursor, None
        if cursor is not None:
            cursor.close()
        self._release()

    def __enter__(self) -> ChangeStream[_DocumentType]:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_val: Optional[BaseException],
        exc_tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # No I/O from a finalizer: the session goes back to the pool; the server cursor
        # times out on its own.
        with contextlib.suppress(Exception):  # a finalizer must never raise
            self._release()

    # --- internals --------------------------------------------------------------------------

    def _open(self, *, resuming: bool) -> _ChangeStreamCursor:
        """Run the aggregate (a retryable read) and take its cursor."""
        sent: Document = {}
        # The wire version of the connection the aggregate ran on (a load balancer's
        # server description has none): "Resumable Error" decides by it.
        wire_version = [0]

        def build(ctx: AttemptContext) -> Command:
            wire_version[0] = ctx.max_wire_version
            if resuming:
                stage = self._state.resume_stage(self._stage, ctx.max_wire_version)
            else:
                stage = copy.deepcopy(self._stage)
            sent.clear()
            sent.update(stage)
            body: Document = {
                "aggregate": self._aggregate,
                "pipeline": [{"$changeStream": stage}, *copy.deepcopy(self._pipeline)],
                "cursor": {} if self._batch_size is None else {"batchSize": self._batch_size},
            }
            body.update(self._fields)
            return Command(body)

        scope = self._scope_target
        outcome = scope._read(
            self._database,
            "aggregate",
            build,
            self._session,
            read_preference=None,
            timeout_ms=None,
            opens_cursor=True,  # behind a load balancer, its getMores keep the connection
            operation_name="watch",  # server selection's log name, resumes included
        )
        namespace = (
            self._database,
            self._aggregate if isinstance(self._aggregate, str) else "$cmd.aggregate",
        )
        cursor = cast(
            _ChangeStreamCursor,
            _ChangeStreamCursor.from_reply(
                self._client,
                outcome,
                None,
                self._session,
                self._batch_size,
                namespace=namespace,
                codec_options=scope._decoding,
            ),
        )
        self._wire_version = wire_version[0]
        cursor._get_more_options = get_more_fields(
            self._max_await_time_ms, self._comment, self._wire_version
        )
        self._state = self._state.after_aggregate(
            stage=sent,
            first_batch_empty=not cursor._buffer,
            post_batch_resume_token=cursor.post_batch_resume_token,
            operation_time=outcome.reply.get("operationTime"),
            max_wire_version=self._wire_version,
        )
        return cursor

    def _resume(self, error: MongoCoreError) -> None:
        """ "Resume Process": kill the old cursor where it lives, then aggregate again
        from the cached starting point (server selection with the original read
        preference, the same session)."""
        old = self._cursor
        self._cursor = None
        if old is not None:
            if kills_old_cursor(error):
                old.kill()
            else:
                old.close()
        self._cursor = self._open(resuming=True)

    def _release(self) -> None:
        owned, self._owned_session = self._owned_session, None
        if owned is not None:
            owned.end_session()


class CollectionChangeStream(ChangeStream[_DocumentType]):
    """The changes of one collection (``Collection.watch()``)."""

    def _scope(self, target: Any) -> tuple[_Target, str, Union[str, int]]:
        collection = cast("Collection", target)
        return collection, collection.database.name, collection.name


class DatabaseChangeStream(ChangeStream[_DocumentType]):
    """The changes of every collection of a database (``Database.watch()``; MongoDB
    4.0+), system collections excepted."""

    def _scope(self, target: Any) -> tuple[_Target, str, Union[str, int]]:
        database = cast("Database", target)
        return database, database.name, 1


class ClusterChangeStream(ChangeStream[_DocumentType]):
    """The changes of every database of the deployment (``Client.watch()``; MongoDB
    4.0+), but admin, config and local. Runs on the admin database."""

    def _scope(self, target: Any) -> tuple[_Target, str, Union[str, int]]:
        client = cast("Client", target)
        return client.get_database("admin"), "admin", 1

    def _stage_fields(self) -> Document:
        return {"allChangesForCluster": True}


def _pipeline(pipeline: Optional[Sequence[Mapping[str, Any]]]) -> list[Document]:
    if pipeline is None:
        return []
    if not isinstance(pipeline, (list, tuple)):
        raise TypeError(f"pipeline must be a list, not {type(pipeline).__name__}")
    stages = []
    for stage in pipeline:
        if not isinstance(stage, Mapping):
            raise TypeError(f"each pipeline stage must be a mapping, not {stage!r}")
        stages.append(dict(stage))
    return stages


def _optional_count(name: str, value: Optional[int]) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be non-negative")
    return value
