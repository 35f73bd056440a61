"""Cursor: the result of ``find``, with pymongo's chained modifiers."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, Optional, Union

from bson.code import Code

from mongocore.api.arguments import _collation_document, _projection, _sort_document
from mongocore.api.client_session import ClientSession
from mongocore.api.cursor_base import _cursor_id, _CursorBase
from mongocore.api.cursor_options import (
    FindModifiers,
    _bound_document,
    _option_fields,
    index_spec,
    slice_bounds,
)
from mongocore.api.cursor_type import CursorType, check_cursor_type
from mongocore.api.types import (
    CollationSpec,
    Document,
    Filter,
    Hint,
    Projection,
    SortSpec,
    _DocumentType,
)
from mongocore.core import codec
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import InvalidOperation, OperationFailure
from mongocore.io.operation import AttemptContext, Command

if TYPE_CHECKING:
    from mongocore.api.collection import Collection


class Cursor(FindModifiers, _CursorBase, Generic[_DocumentType]):
    """The cursor of a find. Configure it (``sort``, ``limit``, ``skip``, ``batch_size``,
    ``hint``, ``max_time_ms``, ...) before iterating; the find command is sent on the
    first ``next()``. ``cursor[i]`` runs a new find for one document; ``cursor[a:b]``
    sets this cursor's skip and limit.

    A positive ``limit`` bounds the documents returned; a negative one also asks for
    a single batch (the server closes the cursor after it). Close cursors you do not
    exhaust (``close()`` or a ``with`` block): the server cursor is then killed.
    """

    def __init__(  # noqa: PLR0917 - pymongo's parameters, positional as its
        self,
        collection: Collection,
        filter: Optional[Filter] = None,
        projection: Projection = None,
        skip: int = 0,
        limit: int = 0,
        no_cursor_timeout: bool = False,
        cursor_type: int = CursorType.NON_TAILABLE,
        sort: SortSpec = None,
        allow_partial_results: bool = False,
        oplog_replay: bool = False,
        batch_size: int = 0,
        collation: Optional[CollationSpec] = None,
        hint: Hint = None,
        max_scan: Optional[int] = None,
        max_time_ms: Optional[int] = None,
        max: Optional[SortSpec] = None,
        min: Optional[SortSpec] = None,
        return_key: Optional[bool] = None,
        show_record_id: Optional[bool] = None,
        snapshot: Optional[bool] = None,
        comment: Any = None,
        session: Optional[ClientSession] = None,
        allow_disk_use: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        *,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
    ) -> None:
        super().__init__(collection.client)
        if session is not None:
            session._check_usable(collection.client)
        self._collection = collection
        self._decoding = collection._decoding
        if filter is not None and type(filter) is not dict and not isinstance(filter, Mapping):
            raise TypeError(f"filter must be a mapping (a dict), not {type(filter).__name__}")
        self._filter = dict(filter) if filter else {}
        self._projection = _projection(projection) or None
        self._skip = 0
        self._single_batch = False
        self._sort: Optional[Document] = None
        self._given_session = session
        self._read_preference = read_preference
        self._timeout_ms = timeout_ms
        #: Set by an empty slice: nothing is sent, nothing is returned.
        self._empty = False
        check_cursor_type(cursor_type)
        for name, flag in (
            ("no_cursor_timeout", no_cursor_timeout),
            ("allow_partial_results", allow_partial_results),
            ("oplog_replay", oplog_replay),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, not {flag!r}")
        if allow_disk_use is not None and not isinstance(allow_disk_use, bool):
            raise TypeError(f"allow_disk_use must be True or False, not {allow_disk_use!r}")
        if let is not None and not isinstance(let, Mapping):
            raise TypeError(f"let must be a mapping (a dict), not {type(let).__name__}")
        # The find command's fields, in the order pymongo sends them.
        self._options: dict[str, Any] = {}
        options = self._options
        if hint is not None:
            options["hint"] = index_spec(hint)
        if comment is not None:
            options["comment"] = comment
        if max_scan is not None:
            options["maxScan"] = max_scan
        if max_time_ms is not None:
            options["maxTimeMS"] = max_time_ms
        if max is not None:
            options["max"] = _bound_document(max)
        if min is not None:
            options["min"] = _bound_document(min)
        if return_key is not None:
            options["returnKey"] = return_key
        if show_record_id is not None:
            options["showRecordId"] = show_record_id
        if snapshot is not None:
            options["snapshot"] = snapshot
        if let is not None:
            options["let"] = dict(let)
        if collation is not None:
            options["collation"] = _collation_document(collation)
        if allow_disk_use is not None:
            options["allowDiskUse"] = allow_disk_use
        if oplog_replay:
            options["oplogReplay"] = True
        if no_cursor_timeout:
            options["noCursorTimeout"] = True
        if allow_partial_results:
            options["allowPartialResults"] = True
        self.skip(skip)
        self.limit(limit)
        if sort is not None:
            self.sort(sort)
        self.batch_size(batch_size)

    @property
    def collection(self) -> Collection:
        return self._collection

    def _check_not_started(self) -> None:
        if self._started:
            raise InvalidOperation("cannot change a cursor after it has started")

    def limit(self, limit: int) -> Cursor[_DocumentType]:
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError(f"limit must be an int, not {type(limit).__name__}")
        self._check_not_started()
        self._single_batch = limit < 0
        self._limit = abs(limit)
        self._empty = False
        return self

    def skip(self, skip: int) -> Cursor[_DocumentType]:
        if not isinstance(skip, int) or isinstance(skip, bool):
            raise TypeError(f"skip must be an int, not {type(skip).__name__}")
        if skip < 0:
            raise ValueError("skip must be >= 0")
        self._check_not_started()
        self._skip = skip
        self._empty = False
        return self

    def batch_size(self, batch_size: int) -> Cursor[_DocumentType]:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool):
            raise TypeError(f"batch_size must be an int, not {type(batch_size).__name__}")
        if batch_size < 0:
            raise ValueError("batch_size must be >= 0")
        self._check_not_started()
        self._batch_size = batch_size or None
        return self

    def sort(self, key_or_list: SortSpec, direction: Any = None) -> Cursor[_DocumentType]:
        self._check_not_started()
        self._sort = _sort_document(key_or_list, direction)
        return self

    def __enter__(self) -> Cursor[_DocumentType]:
        return self

    def _clone_base(self) -> Cursor[_DocumentType]:
        """The new cursor :meth:`clone` copies this one's query into: of this class, on
        the same collection and session (a subclass built otherwise overrides it, as
        pymongo's ``_clone_base`` lets GridOutCursor do)."""
        return type(self)(
            self._collection,
            session=self._given_session,
            read_preference=self._read_preference,
            timeout_ms=self._timeout_ms,
        )

    def clone(self) -> Cursor[_DocumentType]:
        """A new, unstarted cursor with this one's query and options (of the same class,
        as pymongo's, for subclasses)."""
        twin = self._clone_base()
        twin._filter = copy.deepcopy(self._filter)
        twin._projection = copy.deepcopy(self._projection)
        twin._skip = self._skip
        twin._limit = self._limit
        twin._single_batch = self._single_batch
        twin._sort = None if self._sort is None else dict(self._sort)
        twin._batch_size = self._batch_size
        twin._options = copy.deepcopy(self._options)
        twin._empty = self._empty
        return twin

    def __copy__(self) -> Cursor[_DocumentType]:
        return self.clone()

    def __deepcopy__(self, memo: Any) -> Cursor[_DocumentType]:
        return self.clone()

    def where(self, code: Union[str, Code]) -> Cursor[_DocumentType]:
        """Add a ``$where`` clause (server-side JavaScript: ``code`` a string or a
        :class:`bson.code.Code`) to this cursor's filter."""
        self._check_not_started()
        if not isinstance(code, Code):
            code = Code(code)
        # A copy: the filter the caller gave is not changed.
        self._filter = {**self._filter, "$where": code}
        return self

    def add_option(self, mask: int) -> Cursor[_DocumentType]:
        """Set query flags by their OP_QUERY bits, as pymongo's: 8 (oplogReplay), 16
        (noCursorTimeout), 128 (allowPartialResults). The tailable (2), awaitData (32)
        and exhaust (64) bits ask for cursors mongocore does not have and raise
        ConfigurationError."""
        for field in _option_fields(mask):
            self._set(field, True)
        return self

    def remove_option(self, mask: int) -> Cursor[_DocumentType]:
        """Unset query flags by their OP_QUERY bits (see :meth:`add_option`)."""
        for field in _option_fields(mask, removing=True):
            self._set(field, None)
        return self

    def max_scan(self, max_scan: Optional[int]) -> Cursor[_DocumentType]:
        """The find command's ``maxScan`` (removed in MongoDB 4.2, whose servers refuse
        it), sent as pymongo sends it."""
        return self._set("maxScan", max_scan)

    def max_await_time_ms(self, max_await_time_ms: Optional[int]) -> Cursor[_DocumentType]:
        """How long a tailable-await cursor's getMore waits for data. As in pymongo it
        applies to tailable-await cursors only, so for mongocore's (never tailable) it
        is checked and has no effect."""
        if max_await_time_ms is not None and (
            not isinstance(max_await_time_ms, int) or isinstance(max_await_time_ms, bool)
        ):
            raise TypeError(
                f"max_await_time_ms must be an int or None, not {type(max_await_time_ms)}"
            )
        self._check_not_started()
        return self

    def rewind(self) -> Cursor[_DocumentType]:
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
        session = collection._session(self._given_session)
        owned = session.implicit
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
        if "collation" in body and not body["collation"]:
            # An empty collation is the collection's own: pymongo's find leaves it out
            # (a server refuses {} as a collation without a locale, 40414).
            del body["collation"]
        return body

    def _start(self) -> None:
        self._started = True
        if self._empty:
            return
        collection = self._collection
        session = collection._session(self._given_session)
        owned = session.implicit
        self._session = session
        self._owned_session = session if owned else None
        body = self._find_body()

        def build(ctx: AttemptContext) -> Command:
            return Command(dict(body))

        started = time.monotonic()
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
        # The find's comment tags its getMores too, as pymongo's does.
        comment = body.get("comment")
        self._get_more_options = {} if comment is None else {"comment": comment}
        timeout_ms = self._timeout_ms
        self._begin_lifetime(collection._timeout_ms if timeout_ms is None else timeout_ms, started)
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
    owned = session.implicit  # False for a session bound by ClientSession.bind()
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
        if owned:
            session.end_session()
        raise
    cursor_id = reply_cursor.get("id", 0)
    if outcome.pinned is not None or (cursor_id != 0 and _cursor_id(cursor_id) != 0):
        cursor = Cursor(collection, filter, limit=-1)
        cursor._started = True
        cursor._session = session
        cursor._owned_session = session if owned else None
        with cursor:
            cursor._adopt(outcome, (database, collection.name))
            return next(cursor, None)
    if owned:
        session.end_session()
    batch = reply_cursor.get("firstBatch")
    if not batch:
        return None
    documents = list(batch)[:1]
    decoding = collection._decoding
    if decoding is not None:
        documents = codec.decode_documents(documents, decoding)
    return documents[0]  # type: ignore[no-any-return]
