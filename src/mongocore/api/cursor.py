"""Cursor: the result of ``find``, with pymongo's chained modifiers."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from mongocore.api.arguments import _projection, _sort_document
from mongocore.api.client_session import ClientSession
from mongocore.api.cursor_base import _cursor_id, _CursorBase
from mongocore.api.cursor_options import FindModifiers, slice_bounds
from mongocore.api.types import Document, Filter, Projection, SortSpec
from mongocore.core import codec
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import InvalidOperation, OperationFailure
from mongocore.io.operation import AttemptContext, Command

if TYPE_CHECKING:
    from mongocore.api.collection import Collection


class Cursor(FindModifiers, _CursorBase):
    """The cursor of a find. Configure it (``sort``, ``limit``, ``skip``, ``batch_size``,
    ``hint``, ``max_time_ms``, ...) before iterating; the find command is sent on the
    first ``next()``. ``cursor[i]`` runs a new find for one document; ``cursor[a:b]``
    sets this cursor's skip and limit.

    A positive ``limit`` bounds the documents returned; a negative one also asks for
    a single batch (the server closes the cursor after it). Close cursors you do not
    exhaust (``close()`` or a ``with`` block): the server cursor is then killed.
    """

    def __init__(
        self,
        collection: Collection,
        filter: Optional[Filter],
        projection: Projection,
        *,
        skip: int,
        limit: int,
        sort: SortSpec,
        batch_size: Optional[int],
        session: Optional[ClientSession],
        read_preference: Optional[ReadPreference],
        timeout_ms: Optional[float],
        options: Mapping[str, Any],
    ) -> None:
        super().__init__(collection.client)
        if session is not None:
            session._check_usable(collection.client)
        self._collection = collection
        self._decoding = collection._decoding
        self._filter = dict(filter) if filter is not None else {}
        self._projection = _projection(projection)
        self._skip = 0
        self._single_batch = False
        self._sort: Optional[Document] = None
        self._given_session = session
        self._read_preference = read_preference
        self._timeout_ms = timeout_ms
        self._options = dict(options)
        #: Set by an empty slice: nothing is sent, nothing is returned.
        self._empty = False
        self.skip(skip)
        self.limit(limit)
        if sort is not None:
            self.sort(sort)
        if batch_size is not None:
            self.batch_size(batch_size)

    @property
    def collection(self) -> Collection:
        return self._collection

    def _check_not_started(self) -> None:
        if self._started:
            raise InvalidOperation("cannot change a cursor after it has started")

    def limit(self, limit: int) -> Cursor:
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("limit must be an int")
        self._check_not_started()
        self._single_batch = limit < 0
        self._limit = abs(limit)
        self._empty = False
        return self

    def skip(self, skip: int) -> Cursor:
        if not isinstance(skip, int) or isinstance(skip, bool) or skip < 0:
            raise ValueError("skip must be a non-negative int")
        self._check_not_started()
        self._skip = skip
        self._empty = False
        return self

    def batch_size(self, batch_size: int) -> Cursor:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 0:
            raise ValueError("batch_size must be a non-negative int")
        self._check_not_started()
        self._batch_size = batch_size or None
        return self

    def sort(self, key_or_list: SortSpec, direction: Any = None) -> Cursor:
        self._check_not_started()
        self._sort = _sort_document(key_or_list, direction)
        return self

    def __enter__(self) -> Cursor:
        return self

    def clone(self) -> Cursor:
        """A new, unstarted cursor with this one's query and options."""
        twin = Cursor(
            self._collection,
            copy.deepcopy(self._filter),
            self._projection,
            skip=self._skip,
            limit=-self._limit if self._single_batch else self._limit,
            sort=self._sort,
            batch_size=self._batch_size,
            session=self._given_session,
            read_preference=self._read_preference,
            timeout_ms=self._timeout_ms,
            options=copy.deepcopy(self._options),
        )
        twin._empty = self._empty
        return twin

    def __copy__(self) -> Cursor:
        return self.clone()

    def rewind(self) -> Cursor:
        """Back to the unstarted state, options kept: the next ``next()`` sends the find
        again (a server cursor still open is killed first)."""
        self.close()
        self._started = self._killed = False
        self._id = 0
        self._address = None
        self._retrieved = 0
        self._session = None
        return self

    def __getitem__(self, index: Union[int, slice]) -> Any:
        """``cursor[i]``: the i-th document (after this cursor's skip), by a new find;
        IndexError if there is none. ``cursor[a:b]``: this cursor, skipping ``a`` and
        limited to ``b - a`` documents."""
        self._check_not_started()
        if isinstance(index, slice):
            skip, limit = slice_bounds(index)
            self._skip = skip
            self._limit = limit or 0
            self._single_batch = False
            self._empty = limit == 0
            return self
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"cursor indexes must be ints or slices, not {type(index).__name__}")
        if index < 0:
            raise IndexError("cursors do not support negative indexes")
        with self.clone().skip(self._skip + index).limit(-1) as one:
            for document in one:
                return document
        raise IndexError("no such item for this cursor")

    def distinct(self, key: str) -> list[Any]:
        """The distinct values of ``key`` among the documents this cursor's filter
        matches (a distinct command, with the cursor's collation, comment, maxTimeMS)."""
        return self._collection.distinct(
            key,
            self._filter,
            session=self._given_session,
            read_preference=self._read_preference,
            timeout_ms=self._timeout_ms,
            collation=self._options.get("collation"),
            comment=self._options.get("comment"),
            max_time_ms=self._options.get("maxTimeMS"),
        )

    def explain(self) -> Document:
        """The server's query plan for this cursor's find (the explain command, run
        as it is: never retried, no read concern)."""
        collection = self._collection
        body: Document = {"explain": self._find_body()}
        owned = self._given_session is None
        session = collection._session(self._given_session)
        try:
            return collection._read(
                collection.database.name,
                "explain",
                lambda ctx: Command(body),
                session,
                read_preference=self._read_preference,
                timeout_ms=self._timeout_ms,
                retryable=False,
                read_concern=False,
            ).reply
        finally:
            if owned:
                session.end_session()

    def _find_body(self) -> Document:
        limit = self._limit
        batch_size = self._batch_size
        if self._single_batch:
            batch_size = None  # one batch of up to ``limit`` documents
        elif limit and batch_size:
            # A batch of exactly ``limit`` would leave the server cursor open for one
            # more (empty) getMore: ask for one more so the first batch closes it.
            batch_size = limit + 1 if batch_size == limit else min(batch_size, limit)
        body: Document = {"find": self._collection.name, "filter": self._filter}
        if self._sort is not None:
            body["sort"] = self._sort
        if self._projection is not None:
            body["projection"] = self._projection
        if self._skip:
            body["skip"] = self._skip
        if limit:
            body["limit"] = limit
        if batch_size:
            body["batchSize"] = batch_size
        if self._single_batch:
            body["singleBatch"] = True
        body.update(self._options)
        return body

    def _start(self) -> None:
        self._started = True
        if self._empty:
            return
        collection = self._collection
        owned = self._given_session is None
        session = collection._session(self._given_session)
        self._session = session
        self._owned_session = session if owned else None
        body = self._find_body()

        def build(ctx: AttemptContext) -> Command:
            return Command(dict(body))

        try:
            outcome = collection._read(
                collection.database.name,
                "find",
                build,
                session,
                read_preference=self._read_preference,
                timeout_ms=self._timeout_ms,
                opens_cursor=True,
            )
        except BaseException:
            self._killed = True
            self._release()
            raise
        self._adopt(outcome, (collection.database.name, collection.name))
        if self._single_batch and self._id:
            self.close()


_new_tuple = tuple.__new__


def find_first(collection: Collection, filter: Optional[Filter]) -> Optional[Document]:
    """``find_one(filter)``: the find a ``Cursor`` with ``limit(-1)`` sends (limit 1,
    singleBatch, a retryable read), its one document taken from the reply directly.

    Should the server leave the cursor open (or a load balancer pin its connection),
    a Cursor adopts the reply and closes it, as iterating one would.
    """
    body: Document = {
        "find": collection._name,
        "filter": dict(filter) if filter is not None else {},
        "limit": 1,
        "singleBatch": True,
    }
    session = collection._session(None)
    database = collection._database._name
    try:
        outcome = collection._read(
            database,
            "find",
            lambda ctx: _new_tuple(Command, (dict(body), None, None)),  # Command(...), faster
            session,
            read_preference=None,
            timeout_ms=None,
            opens_cursor=True,
        )
        reply_cursor = outcome.reply.get("cursor")
        if type(reply_cursor) is not dict and not isinstance(reply_cursor, Mapping):
            raise OperationFailure("the reply has no cursor document", None, outcome.reply)
    except BaseException:
        session.end_session()
        raise
    cursor_id = reply_cursor.get("id", 0)
    if outcome.pinned is not None or (cursor_id != 0 and _cursor_id(cursor_id) != 0):
        cursor = Cursor(
            collection,
            filter,
            None,
            skip=0,
            limit=-1,
            sort=None,
            batch_size=None,
            session=None,
            read_preference=None,
            timeout_ms=None,
            options={},
        )
        cursor._started = True
        cursor._session = cursor._owned_session = session
        with cursor:
            cursor._adopt(outcome, (database, collection.name))
            return next(cursor, None)
    session.end_session()
    batch = reply_cursor.get("firstBatch")
    if not batch:
        return None
    documents = list(batch)[:1]
    decoding = collection._decoding
    if decoding is not None:
        documents = codec.decode_documents(documents, decoding)
    return documents[0]  # type: ignore[no-any-return]
