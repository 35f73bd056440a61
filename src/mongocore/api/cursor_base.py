"""What every cursor shares: the find/aggregate command, getMore and killCursors.

Spec: the find, getMore and killCursors commands; ``limit``, ``batchSize`` and
``singleBatch``.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import time
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional

from bson import Int64

from mongocore.api.client_session import ClientSession
from mongocore.api.types import Document
from mongocore.core import codec
from mongocore.core.address import Address
from mongocore.core.change_streams import GET_MORE_COMMENT_WIRE_VERSION
from mongocore.core.codec import AnyCodecOptions
from mongocore.core.retry_policy import RetryKind
from mongocore.errors import (
    MAX_TIME_MS_EXPIRED,
    ExecutionTimeout,
    NetworkTimeout,
    OperationFailure,
    error_code,
)
from mongocore.io.operation import AttemptContext, Command, CommandOutcome, new_operation
from mongocore.io.pinning import CURSOR, PinnedConnection

if TYPE_CHECKING:
    from mongocore.api.client import Client


# --- cursors ---------------------------------------------------------------------------


#: NamespaceNotFound: listIndexes on a missing collection is an empty list.
_NAMESPACE_NOT_FOUND = 26
_NONE = RetryKind.NONE  # bound once: an enum member read from its class costs more
#: getMore errors after which the server has no cursor to kill: CursorNotFound,
#: QueryPlanKilled, CursorKilled.
_CURSOR_GONE = frozenset({43, 175, 237})


def _cursor_id(value: Any) -> int:
    """A cursor id as the server sent it (an Int64, or an int32 from some compatible
    servers), so getMore and killCursors echo it in the same BSON type."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    code = error_code(value)
    return 0 if code is None else Int64(code)


class _CursorBase:
    """A server cursor being read: the current batch, getMore, killCursors.

    An implicit session is held while the server cursor is open and returned to the
    pool as soon as it is exhausted or closed. Behind a load balancer the connection
    that opened the cursor is held likewise (its getMore and killCursors go over it),
    then checked back in.
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self._buffer: list[Document] = []
        self._position = 0
        #: While a ``for`` loop reads the current batch (see __iter__): the list
        #: iterator handing it out, which then holds the position.
        self._live: Optional[Iterator[Document]] = None
        self._id = 0
        self._address: Optional[Address] = None
        self._namespace: tuple[str, str] = ("", "")
        self._session: Optional[ClientSession] = None
        self._owned_session: Optional[ClientSession] = None
        #: Load-balanced mode: the connection pinned to this cursor while it is open.
        self._pinned: Optional[PinnedConnection] = None
        self._batch_size: Optional[int] = None
        self._limit = 0
        self._retrieved = 0
        self._killed = False
        self._started = False
        self._timeout_ms: Optional[float] = None
        #: When timeoutMS ends the cursor's life (a monotonic time; None: no limit).
        self._expires: Optional[float] = None
        self._operation_id: Optional[int] = None
        #: Fields every getMore carries: the comment of the command that opened the
        #: cursor (or cursor_command's), maxTimeMS (maxAwaitTimeMS). The comment goes
        #: to servers 4.4 and newer only.
        self._get_more_options: Document = {}
        #: Non-default codec options the batches are decoded with (None: as they come).
        self._decoding: Optional[AnyCodecOptions] = None

    # --- public -------------------------------------------------------------------------

    @property
    def cursor_id(self) -> int:
        return self._id

    @property
    def address(self) -> Optional[Address]:
        """The server the cursor lives on (None before it started)."""
        return self._address

    @property
    def alive(self) -> bool:
        """True while there may be more documents (buffered, or on the server)."""
        if not self._started:
            return True
        if self._live is not None:
            self._settle()
        return self._position < len(self._buffer) or (self._id != 0 and not self._killed)

    @property
    def retrieved(self) -> int:
        return self._retrieved

    @property
    def session(self) -> Optional[ClientSession]:
        """The explicit session of the cursor, if it was given one."""
        return None if self._session is self._owned_session else self._session

    def __iter__(self) -> Iterator[Document]:
        # A batch at a time: the chain hands out each document of a batch from a list
        # iterator, in C, and runs _batches() (Python) only between batches, where a
        # cursor returning itself would run __next__ once per document. The cursor's
        # own methods stay usable during a loop, and a loop that stopped can go on
        # where it left off, as with pymongo's cursor: see _settle().
        return itertools.chain.from_iterable(self._batches())

    def _batches(self) -> Iterator[Iterator[Document]]:
        while True:
            self._settle()  # another loop over this cursor may hold the position
            buffer, position = self._buffer, self._position
            if position < len(buffer):
                live = iter(buffer)
                if position:
                    live.__setstate__(position)  # type: ignore[attr-defined]
                self._live = live
                yield live
                if self._live is live:  # read to its end by the loop
                    self._live = None
                    self._position = len(buffer)
                # (else _settle() took the position back: go on from there)
            elif not self._more():
                return

    def _settle(self) -> None:
        """Take the position back from the list iterator of a ``for`` loop, which then
        hands out nothing more: the loop's next document comes from the cursor, so
        that no document is returned twice, whichever way the cursor is read next."""
        live = self._live
        if live is not None:
            self._live = None
            size = len(self._buffer)
            self._position = size - operator.length_hint(live)
            live.__setstate__(size)  # type: ignore[attr-defined]

    def __next__(self) -> Document:
        if self._live is not None:
            self._settle()
        # The common case in this one frame: the next document of the current batch
        # (a batch is only ever set once the cursor has started).
        position = self._position
        buffer = self._buffer
        if position < len(buffer):
            self._position = position + 1
            return buffer[position]
        document = self._next()
        if document is None:
            raise StopIteration
        return document

    def next(self) -> Document:
        return self.__next__()

    def try_next(self) -> Optional[Document]:
        """The next document, or None when the cursor is exhausted."""
        return self._next()

    def to_list(self, length: Optional[int] = None) -> list[Document]:
        self._settle()
        out: list[Document] = []
        while length is None or len(out) < length:
            buffer, position = self._buffer, self._position
            if position < len(buffer):
                # The rest of the batch (or what ``length`` allows) in one slice.
                end = (
                    len(buffer)
                    if length is None
                    else min(len(buffer), position + length - len(out))
                )
                out.extend(buffer[position:end])
                self._position = end
                continue
            document = self._next()
            if document is None:
                break
            out.append(document)
        return out

    def close(self) -> None:
        """Kill the server cursor if it is still open (best effort), release its session."""
        self._settle()
        if self._id and not self._killed and self._address is not None:
            self._kill()
        self._killed = True
        self._buffer = []
        self._position = 0
        self._release()

    def __enter__(self) -> _CursorBase:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_val: Optional[BaseException],
        exc_tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # The session goes back to the pool; the server cursor (if any) times out on its
        # own: no I/O from a finalizer.
        with contextlib.suppress(Exception):  # a finalizer must never raise
            self._release()

    # --- internals ------------------------------------------------------------------------

    def _start(self) -> None:
        self._started = True

    def _adopt(self, outcome: CommandOutcome, namespace: tuple[str, str]) -> None:
        """Take the first batch; ``namespace`` is the one the command named, for
        replies without ``ns``."""
        reply = outcome.reply
        cursor = reply.get("cursor")
        if not isinstance(cursor, Mapping):
            raise OperationFailure("the reply has no cursor document", None, reply)
        self._address = outcome.address
        self._operation_id = outcome.operation_id
        self._pinned = outcome.pinned
        self._id = _cursor_id(cursor.get("id", 0))
        ns = cursor.get("ns")
        if isinstance(ns, str) and "." in ns:
            db, _, coll = ns.partition(".")
            self._namespace = (db, coll)
        else:
            self._namespace = namespace
        self._batch_reply(cursor)
        self._set_batch(list(cursor.get("firstBatch") or []))
        if self._id == 0:
            self._release()

    def _batch_reply(self, cursor: Mapping[str, Any]) -> None:
        """Each reply's cursor document, before its batch is taken (a hook: a change
        stream reads its postBatchResumeToken)."""

    def _set_batch(self, documents: list[Document]) -> None:
        self._settle()
        if self._limit:
            documents = documents[: max(0, self._limit - self._retrieved)]
        if self._decoding is not None:
            documents = codec.decode_documents(documents, self._decoding)
        self._buffer = documents
        self._position = 0
        self._retrieved += len(documents)

    def _next(self) -> Optional[Document]:
        self._settle()
        while True:
            if self._position < len(self._buffer):
                document = self._buffer[self._position]
                self._position += 1
                return document
            if not self._more():
                return None

    def _more(self) -> bool:
        """Start the cursor, or bring its next batch; False once it has no more."""
        if not self._started:
            self._start()
            return True
        if self._id == 0 or self._killed:
            return False
        if self._limit and self._retrieved >= self._limit:
            self.close()
            return False
        self._get_more()
        return True

    def _begin_lifetime(self, timeout_ms: Optional[float], started: float) -> None:
        """Client Side Operations Timeout, "Non-tailable Cursors": timeoutMS (the
        operation's, else the client's) bounds the command that opened the cursor
        (``started``: when it was run) and every getMore after it together, the
        cursor's lifetime; killCursors has it afresh ("Cursors": close)."""
        self._timeout_ms = timeout_ms
        limit = timeout_ms if timeout_ms is not None else self._client.settings.timeout_ms
        self._expires = started + limit / 1000.0 if limit else None

    def _get_more(self) -> None:
        session = self._session
        assert session is not None and self._address is not None
        db, coll = self._namespace
        batch_size = self._batch_size
        if self._limit:
            remaining = self._limit - self._retrieved
            batch_size = remaining if not batch_size else min(batch_size, remaining)
        cursor_id = self._id

        options = self._get_more_options

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"getMore": cursor_id, "collection": coll}
            if batch_size:
                body["batchSize"] = int(batch_size)
            if options:
                body.update(options)
                if "comment" in body and ctx.max_wire_version < GET_MORE_COMMENT_WIRE_VERSION:
                    # Servers before 4.4 refuse a comment on getMore; pymongo sends it
                    # from 4.4 on, as the CRUD and change streams specs ask.
                    del body["comment"]
            return Command(body)

        timeout_ms = self._timeout_ms
        expires = self._expires
        try:
            if expires is not None:
                # The rest of the cursor's lifetime, or, with none left, its end.
                timeout_ms = (expires - time.monotonic()) * 1000.0
                if timeout_ms <= 0:
                    message = "timeoutMS expired: the cursor's lifetime ended before a getMore"
                    raise ExecutionTimeout(
                        message,
                        MAX_TIME_MS_EXPIRED,
                        {"ok": 0, "errmsg": message, "code": MAX_TIME_MS_EXPIRED},
                    )
            op = new_operation(
                name="getMore",
                database=db,
                build=build,
                session=session,
                retry=_NONE,
                address=self._address,
                timeout_ms=timeout_ms,
                operation_id=self._operation_id,
                pinned=self._pinned,
            )
            outcome = self._client._executor.run(op)
        except BaseException as exc:
            # The cursor is unusable after a failed getMore (never retried). A command
            # error leaves the server's cursor open unless it says it is gone: kill it,
            # on its pinned connection if it has one, before releasing that. So does a
            # timeout, which closed the connection: killCursors goes over another one
            # (CSOT, "Cursors": close refreshes timeoutMS for the killCursors).
            if isinstance(exc, OperationFailure) and error_code(exc.code) not in _CURSOR_GONE:
                self._kill()
            elif isinstance(exc, NetworkTimeout):
                pinned, self._pinned = self._pinned, None
                if pinned is not None:
                    pinned.release(CURSOR)
                self._kill()
            self._killed = True
            self._release()
            raise
        cursor = outcome.reply.get("cursor") or {}
        self._id = _cursor_id(cursor.get("id", 0))
        self._batch_reply(cursor)
        self._set_batch(list(cursor.get("nextBatch") or []))
        if self._id == 0:
            self._release()

    def _kill(self) -> None:
        session = self._session
        db, coll = self._namespace
        cursor_id = self._id
        if session is None or session.has_ended:
            return

        def build(ctx: AttemptContext) -> Command:
            return Command({"killCursors": coll, "cursors": [cursor_id]})

        op = new_operation(
            name="killCursors",
            database=db,
            build=build,
            session=session,
            retry=_NONE,
            address=self._address,
            timeout_ms=self._timeout_ms,
            operation_id=self._operation_id,
            pinned=self._pinned,
        )
        # Best effort: the server times idle cursors out anyway.
        with contextlib.suppress(Exception):
            self._client._executor.run(op)
        self._id = 0

    def _release(self) -> None:
        pinned, self._pinned = self._pinned, None
        if pinned is not None:
            pinned.release(CURSOR)
        owned, self._owned_session = self._owned_session, None
        if owned is not None:
            if self._session is owned:
                # ``session`` stays None for a cursor given none (not the ended session).
                self._session = None
            owned.end_session()
