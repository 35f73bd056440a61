"""The CRUD API: databases, collections, cursors, write models, results.

Specs: CRUD (the operations, their options and result shapes, bulk write
semantics: ordered writes stop at the first error, unordered ones run every
statement), the find/getMore/killCursors commands (cursors, ``limit`` and
``batchSize``, ``singleBatch``), and the enumeration commands (listDatabases,
listCollections, listIndexes). Every operation runs through the executor of
:mod:`mongocore.retry`, which applies the retryable reads and writes rules; which
operations retry is decided here, per the seeds' "Supported ... Operations":

- retryable writes (when retryWrites is on, with an acknowledged write concern):
  insert_one, insert_many, update_one, replace_one, delete_one,
  find_one_and_delete/replace/update, and bulk_write when it has no UpdateMany or
  DeleteMany request. Each command sent (one per batch) has its own txnNumber.
- retryable reads (when retryReads is on): find, find_one, aggregate without $out
  or $merge, distinct, count, count_documents, estimated_document_count,
  list_databases, list_collections, list_indexes. getMore never retries.
- never retried: update_many, delete_many, aggregate with $out/$merge, index and
  collection management, and ``Database.command`` (the generic command method).

Objects here are cheap views: ``client["db"]["coll"]`` makes no I/O. Documents are
returned as plain dicts.
"""

from __future__ import annotations

import contextlib
import copy
import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Union

import bson
from bson import Int64, ObjectId

from mongocore import codec
from mongocore.address import Address
from mongocore.codec import AnyCodecOptions
from mongocore.cursor_options import FindModifiers, IndexSpec, slice_bounds
from mongocore.errors import (
    BulkWriteError,
    ConfigurationError,
    InvalidOperation,
    MongoCoreError,
    OperationFailure,
    error_code,
    write_concern_error_from_reply,
    write_error_from_document,
)
from mongocore.monitoring import next_operation_id
from mongocore.retry import (
    AttemptContext,
    Command,
    CommandOutcome,
    Operation,
    RetryKind,
    is_acknowledged,
)
from mongocore.selection.read_preference import Mode, ReadPreference
from mongocore.session import ClientSession
from mongocore.wire.limits import COMMAND_OVERHEAD, op_msg_overhead, split_batches

if TYPE_CHECKING:
    from mongocore.client import Client

__all__ = [
    "BulkWriteResult",
    "Collection",
    "CommandCursor",
    "Cursor",
    "Database",
    "DeleteMany",
    "DeleteOne",
    "DeleteResult",
    "InsertManyResult",
    "InsertOne",
    "InsertOneResult",
    "ReadConcern",
    "ReplaceOne",
    "ReturnDocument",
    "UpdateMany",
    "UpdateOne",
    "UpdateResult",
    "WriteConcern",
]

Document = dict[str, Any]
Filter = Mapping[str, Any]
SortSpec = Union[str, Sequence[tuple[str, Any]], Mapping[str, Any], None]
Projection = Union[Mapping[str, Any], Sequence[str], None]
Hint = Union[str, Sequence[tuple[str, Any]], Mapping[str, Any], None]

#: Room kept in each write message for what the executor adds to the command body
#: after the batch is cut (lsid, txnNumber, $clusterTime, $db, $readPreference).
_COMMAND_FIELDS_ALLOWANCE = 1024
#: NamespaceNotFound: listIndexes on a missing collection is an empty list.
_NAMESPACE_NOT_FOUND = 26
#: Tells "no such field" from a field whose value is None.
_MISSING: Any = object()


# --- read and write concern ------------------------------------------------------------


class WriteConcern:
    """A write concern: ``w`` (a number or a tag such as "majority"), ``wtimeout`` (ms),
    ``j`` (journal). With nothing set it is the server's default and not sent."""

    __slots__ = ("_document",)

    def __init__(
        self,
        w: Union[int, str, None] = None,
        wtimeout: Optional[int] = None,
        j: Optional[bool] = None,
    ) -> None:
        if isinstance(w, bool) or (w is not None and not isinstance(w, (int, str))):
            raise ConfigurationError(f"w must be a number or a string, not {w!r}")
        if isinstance(w, int) and w < 0:
            raise ConfigurationError(f"w must be non-negative, not {w}")
        if w == 0 and j:
            raise ConfigurationError("w=0 cannot be combined with j=True")
        if wtimeout is not None and wtimeout < 0:
            raise ConfigurationError(f"wtimeout must be non-negative, not {wtimeout}")
        document: Document = {}
        if w is not None:
            document["w"] = w
        if wtimeout is not None:
            document["wtimeout"] = int(wtimeout)
        if j is not None:
            document["j"] = bool(j)
        self._document = document

    @classmethod
    def from_options(
        cls, w: Union[int, str, None], wtimeout_ms: Optional[int], journal: Optional[bool]
    ) -> WriteConcern:
        return cls(w, wtimeout_ms, journal)

    @property
    def document(self) -> Document:
        """The ``writeConcern`` document to send (a copy; empty: the server's default)."""
        return dict(self._document)

    @property
    def acknowledged(self) -> bool:
        return is_acknowledged(self._document)

    @property
    def is_server_default(self) -> bool:
        return not self._document

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WriteConcern) and other._document == self._document

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._document.items())))

    def __repr__(self) -> str:
        return "WriteConcern(" + ", ".join(f"{k}={v!r}" for k, v in self._document.items()) + ")"


class ReadConcern:
    """A read concern level ("local", "majority", ...); None is the server's default."""

    __slots__ = ("level",)

    def __init__(self, level: Optional[str] = None) -> None:
        if level is not None and not isinstance(level, str):
            raise ConfigurationError(f"the read concern level must be a string, not {level!r}")
        self.level = level

    @property
    def document(self) -> Document:
        return {} if self.level is None else {"level": self.level}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReadConcern) and other.level == self.level

    def __hash__(self) -> int:
        return hash(self.level)

    def __repr__(self) -> str:
        return f"ReadConcern({self.level!r})"


class ReturnDocument(enum.Enum):
    """Which document find_one_and_replace/update return: before or after the change."""

    BEFORE = False
    AFTER = True


# --- write models ----------------------------------------------------------------------


class _WriteModel:
    """A request of bulk_write."""

    _kind: str = ""
    _multi = False

    def _statement(self) -> Document:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), repr(self)))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if v is not None)
        return f"{type(self).__name__}({fields})"


class InsertOne(_WriteModel):
    """Insert one document (retryable); an ``_id`` is added when it has none."""

    _kind = "insert"

    def __init__(self, document: Mapping[str, Any], namespace: Optional[str] = None) -> None:
        if not isinstance(document, Mapping):
            raise TypeError(f"document must be a mapping (a dict), not {type(document).__name__}")
        _check_namespace(namespace)
        self.document = document

    def _statement(self) -> Document:
        return _with_id(self.document)


class _Update(_WriteModel):
    _kind = "update"
    _replacement = False

    def __init__(  # noqa: PLR0917 (pymongo's positional parameters)
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: Optional[bool] = None,
        collation: Optional[Mapping[str, Any]] = None,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
        sort: Optional[Mapping[str, Any]] = None,
    ) -> None:
        _check_filter(filter)
        if upsert is not None and not isinstance(upsert, bool):
            raise TypeError(f"upsert must be True or False, not {upsert!r}")
        if array_filters is not None and not isinstance(array_filters, (list, tuple)):
            raise TypeError(
                f"array_filters must be a list of documents, not {type(array_filters).__name__}"
            )
        _check_namespace(namespace)
        self.filter = filter
        self.update = update
        self.upsert = upsert
        self.array_filters = array_filters
        self.hint = hint
        self.collation = collation
        self.sort = sort

    def _statement(self) -> Document:
        if self._replacement:
            _check_replacement(self.update)
        else:
            _check_update(self.update)
        statement: Document = {
            "q": dict(self.filter),
            "u": self.update if isinstance(self.update, Mapping) else list(self.update),
            "multi": self._multi,
            "upsert": bool(self.upsert),
        }
        if self.array_filters is not None:
            statement["arrayFilters"] = list(self.array_filters)
        if self.hint is not None:
            statement["hint"] = _hint(self.hint)
        if self.collation is not None:
            statement["collation"] = _collation_document(self.collation)
        if self.sort is not None:
            # Which of several matches an UpdateOne or ReplaceOne changes (MongoDB 8.0).
            statement["sort"] = _sort_document(self.sort)
        return statement


class UpdateOne(_Update):
    """Update the first matching document (retryable).

    ``UpdateOne(filter, update, upsert=None, collation=None, array_filters=None,
    hint=None, namespace=None, sort=None)``, as pymongo's.
    """


class UpdateMany(_Update):
    """Update every matching document (never retryable: it may touch many documents)."""

    _multi = True

    def __init__(  # noqa: PLR0917 (pymongo's positional parameters)
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: Optional[bool] = None,
        collation: Optional[Mapping[str, Any]] = None,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
    ) -> None:
        super().__init__(filter, update, upsert, collation, array_filters, hint, namespace)


class ReplaceOne(_Update):
    """Replace the first matching document (retryable)."""

    _replacement = True

    def __init__(  # noqa: PLR0917 (pymongo's positional parameters)
        self,
        filter: Filter,
        replacement: Mapping[str, Any],
        upsert: Optional[bool] = None,
        collation: Optional[Mapping[str, Any]] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
        sort: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(
            filter,
            replacement,
            upsert,
            collation=collation,
            hint=hint,
            namespace=namespace,
            sort=sort,
        )


class _Delete(_WriteModel):
    _kind = "delete"

    def __init__(
        self,
        filter: Filter,
        collation: Optional[Mapping[str, Any]] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
    ) -> None:
        _check_filter(filter)
        _check_namespace(namespace)
        self.filter = filter
        self.hint = hint
        self.collation = collation

    def _statement(self) -> Document:
        statement: Document = {"q": dict(self.filter), "limit": 0 if self._multi else 1}
        if self.hint is not None:
            statement["hint"] = _hint(self.hint)
        if self.collation is not None:
            statement["collation"] = _collation_document(self.collation)
        return statement


class DeleteOne(_Delete):
    """Delete the first matching document (retryable)."""


class DeleteMany(_Delete):
    """Delete every matching document (never retryable)."""

    _multi = True


def _check_filter(filter: object) -> None:
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a mapping (a dict), not {type(filter).__name__}")


def _check_namespace(namespace: object) -> None:
    # pymongo's namespace names the collection of a client-level bulk write.
    if namespace is not None:
        raise ConfigurationError(
            f"namespace={namespace!r}: write models with a namespace are for a "
            "client-level bulk write, which mongocore does not provide; use "
            "Collection.bulk_write without namespace"
        )


def _collation_document(collation: object) -> Document:
    """A collation document, or an object with one (pymongo's ``Collation``)."""
    document = getattr(collation, "document", collation)
    if not isinstance(document, Mapping):
        raise TypeError(f"collation must be a document, not {type(collation).__name__}")
    return dict(document)


WriteModel = Union[InsertOne, UpdateOne, UpdateMany, ReplaceOne, DeleteOne, DeleteMany]


# --- results ---------------------------------------------------------------------------


class _Result:
    __slots__ = ("_acknowledged",)

    def __init__(self, acknowledged: bool) -> None:
        self._acknowledged = acknowledged

    @property
    def acknowledged(self) -> bool:
        """False for a write with ``w: 0``: the counts are then unknown."""
        return self._acknowledged

    def _check(self, what: str) -> None:
        if not self._acknowledged:
            raise InvalidOperation(
                f"{what} is unknown for an unacknowledged write (write concern w=0)"
            )


class InsertOneResult(_Result):
    __slots__ = ("_inserted_id",)

    def __init__(self, inserted_id: Any, acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._inserted_id = inserted_id

    @property
    def inserted_id(self) -> Any:
        return self._inserted_id

    def __repr__(self) -> str:
        return f"InsertOneResult({self._inserted_id!r}, acknowledged={self._acknowledged})"


class InsertManyResult(_Result):
    __slots__ = ("_inserted_ids",)

    def __init__(self, inserted_ids: list[Any], acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._inserted_ids = inserted_ids

    @property
    def inserted_ids(self) -> list[Any]:
        """The ``_id`` of every document, in order."""
        return self._inserted_ids

    def __repr__(self) -> str:
        return f"InsertManyResult({self._inserted_ids!r}, acknowledged={self._acknowledged})"


class UpdateResult(_Result):
    """The result of update_one, update_many, replace_one. ``raw_result`` is the
    server's reply, with ``updatedExisting`` added and ``upserted`` as the upserted
    document's ``_id`` (the shape other drivers give); None when unacknowledged."""

    __slots__ = ("_raw",)

    def __init__(self, raw_result: Optional[Mapping[str, Any]], acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._raw = None if raw_result is None else dict(raw_result)

    @property
    def raw_result(self) -> Optional[Document]:
        return self._raw

    def _reply(self, what: str) -> Document:
        self._check(what)
        return self._raw or {}

    @property
    def matched_count(self) -> int:
        raw = self._reply("matched_count")
        if self.did_upsert:
            return 0
        return int(raw.get("n", 0))

    @property
    def modified_count(self) -> int:
        return int(self._reply("modified_count").get("nModified", 0))

    @property
    def upserted_id(self) -> Any:
        upserted = self._reply("upserted_id").get("upserted")
        # The command's own shape, a list of {index, _id}, is read too.
        if isinstance(upserted, list):
            return upserted[0].get("_id") if upserted else None
        return upserted

    @property
    def did_upsert(self) -> bool:
        """True when the update inserted a document (even one whose ``_id`` is None)."""
        upserted = self._reply("did_upsert").get("upserted", _MISSING)
        return upserted is not _MISSING and upserted != []

    def __repr__(self) -> str:
        return f"UpdateResult({self._raw!r}, acknowledged={self._acknowledged})"


class DeleteResult(_Result):
    """The result of delete_one, delete_many. ``raw_result`` is the server's reply;
    None when unacknowledged."""

    __slots__ = ("_raw",)

    def __init__(self, raw_result: Optional[Mapping[str, Any]], acknowledged: bool) -> None:
        super().__init__(acknowledged)
        self._raw = None if raw_result is None else dict(raw_result)

    @property
    def raw_result(self) -> Optional[Document]:
        return self._raw

    @property
    def deleted_count(self) -> int:
        self._check("deleted_count")
        return int((self._raw or {}).get("n", 0))

    def __repr__(self) -> str:
        return f"DeleteResult({self._raw!r}, acknowledged={self._acknowledged})"


class BulkWriteResult(_Result):
    """The counts of a bulk write; ``bulk_api_result`` is the raw shape (``nInserted``,
    ``nMatched``, ``nModified``, ``nRemoved``, ``nUpserted``, ``upserted``, ...)."""

    __slots__ = ("_inserted_ids", "_raw")

    def __init__(
        self,
        bulk_api_result: Mapping[str, Any],
        acknowledged: bool,
        inserted_ids: Optional[Mapping[int, Any]] = None,
    ) -> None:
        super().__init__(acknowledged)
        self._raw = dict(bulk_api_result)
        self._inserted_ids = dict(inserted_ids or {})

    @property
    def bulk_api_result(self) -> Document:
        return self._raw

    @property
    def inserted_count(self) -> int:
        self._check("inserted_count")
        return int(self._raw.get("nInserted", 0))

    @property
    def matched_count(self) -> int:
        self._check("matched_count")
        return int(self._raw.get("nMatched", 0))

    @property
    def modified_count(self) -> int:
        self._check("modified_count")
        return int(self._raw.get("nModified", 0))

    @property
    def deleted_count(self) -> int:
        self._check("deleted_count")
        return int(self._raw.get("nRemoved", 0))

    @property
    def upserted_count(self) -> int:
        self._check("upserted_count")
        return int(self._raw.get("nUpserted", 0))

    @property
    def upserted_ids(self) -> Optional[dict[int, Any]]:
        """Request index -> ``_id`` of each upserted document (None for an empty
        ``bulk_api_result``, as other drivers give)."""
        self._check("upserted_ids")
        if not self._raw:
            return None
        return {int(u["index"]): u["_id"] for u in self._raw.get("upserted", [])}

    @property
    def inserted_ids(self) -> dict[int, Any]:
        """Request index -> ``_id`` of each InsertOne that was sent."""
        return dict(self._inserted_ids)

    def __repr__(self) -> str:
        return f"BulkWriteResult({self._raw!r}, acknowledged={self._acknowledged})"


# --- argument helpers ------------------------------------------------------------------


def _with_id(document: Mapping[str, Any]) -> Document:
    """The document to insert, with an ``_id``. Like other drivers, a missing ``_id`` is
    also set on the caller's document (when it is a mutable mapping), so the caller
    learns it."""
    if "_id" in document:
        return dict(document)
    new_id = ObjectId()
    if isinstance(document, dict):
        document["_id"] = new_id
    return {"_id": new_id, **document}


def _check_update(update: Any) -> None:
    if isinstance(update, Mapping):
        if not update or not all(str(key).startswith("$") for key in update):
            raise ValueError("an update must be a non-empty document of $-operators or a pipeline")
    elif isinstance(update, (list, tuple)):
        if not update:
            raise ValueError("an update pipeline must have at least one stage")
    else:
        raise TypeError(f"an update must be a document or a pipeline, not {type(update).__name__}")


def _check_replacement(replacement: Any) -> None:
    if not isinstance(replacement, Mapping):
        raise TypeError(f"a replacement must be a document, not {type(replacement).__name__}")
    if any(str(key).startswith("$") for key in replacement):
        raise ValueError("a replacement document must not contain $-operators")


def _sort_document(sort: SortSpec, direction: Any = None) -> Optional[Document]:
    if sort is None:
        return None
    if isinstance(sort, str):
        return {sort: 1 if direction is None else direction}
    if isinstance(sort, Mapping):
        return dict(sort)
    return {key: value for key, value in sort}


def _projection(projection: Projection) -> Optional[Document]:
    if projection is None:
        return None
    if isinstance(projection, Mapping):
        return dict(projection)
    if isinstance(projection, str):
        raise TypeError("projection must be a document or a list of field names")
    return {name: 1 for name in projection}


def _hint(hint: Hint) -> Any:
    if isinstance(hint, (str, Mapping)):
        return hint if isinstance(hint, str) else dict(hint)
    return {key: value for key, value in (hint or ())}


def _index_keys(keys: Union[str, Sequence[tuple[str, Any]], Mapping[str, Any]]) -> Document:
    if isinstance(keys, str):
        return {keys: 1}
    if isinstance(keys, Mapping):
        return dict(keys)
    return {key: value for key, value in keys}


def _index_name(keys: Mapping[str, Any]) -> str:
    return "_".join(f"{key}_{value}" for key, value in keys.items())


def _options(**options: Any) -> Document:
    """The command options that were given (None means "not given")."""
    return {key: value for key, value in options.items() if value is not None}


def _raise_write_concern_error(reply: Mapping[str, Any]) -> None:
    error = write_concern_error_from_reply(reply)
    if error is not None:
        raise error


def _raise_single_write_errors(reply: Mapping[str, Any]) -> None:
    """A single-statement write: its write error, else its write concern error."""
    errors = reply.get("writeErrors")
    if isinstance(errors, list) and errors:
        raise write_error_from_document(errors[0], reply.get("errorLabels") or ())
    _raise_write_concern_error(reply)


# --- the shared machinery --------------------------------------------------------------


class _Target:
    """What Database and Collection share: the client, options, running operations."""

    _client: Client
    _read_preference: ReadPreference
    _write_concern: WriteConcern
    _read_concern: ReadConcern
    _codec_options: AnyCodecOptions
    #: The codec options when they differ from the defaults, else None: documents are
    #: then re-encoded and re-decoded (mongocore.codec); None keeps the plain path.
    _decoding: Optional[AnyCodecOptions]

    def _set_codec_options(self, options: AnyCodecOptions) -> None:
        self._codec_options = options
        self._decoding = None if codec.is_default(options) else options

    @property
    def client(self) -> Client:
        return self._client

    @property
    def codec_options(self) -> AnyCodecOptions:
        """How documents are encoded and decoded (bson's CodecOptions)."""
        return self._codec_options

    @property
    def read_preference(self) -> ReadPreference:
        return self._read_preference

    @property
    def write_concern(self) -> WriteConcern:
        return self._write_concern

    @property
    def read_concern(self) -> ReadConcern:
        return self._read_concern

    def _encode(self, document: Mapping[str, Any]) -> bytes:
        """A document as BSON, with this target's codec options."""
        return bson.encode(document, False, self._codec_options)

    def _session(self, session: Optional[ClientSession]) -> ClientSession:
        if session is None:
            return ClientSession(self._client, implicit=True)
        session._check_usable(self._client)
        return session

    def _write_session(
        self, session: Optional[ClientSession], write_concern: WriteConcern
    ) -> ClientSession:
        if session is not None and not write_concern.acknowledged:
            raise ConfigurationError(
                "explicit sessions are incompatible with an unacknowledged write concern"
                " (w=0): an unacknowledged write never carries a session id"
            )
        return self._session(session)

    def _run(self, op: Operation) -> CommandOutcome:
        options = self._decoding
        if options is not None:
            op.build = _encoding_with(op.build, options)
        return self._client._executor.run(op)

    def _read(
        self,
        database: str,
        name: str,
        build: Callable[[AttemptContext], Command],
        session: ClientSession,
        *,
        read_preference: Optional[ReadPreference],
        timeout_ms: Optional[float],
        retryable: bool = True,
        read_concern: bool = True,
    ) -> CommandOutcome:
        op = Operation(
            name=name,
            database=database,
            build=build,
            session=session,
            retry=RetryKind.READ if retryable else RetryKind.NONE,
            read_preference=read_preference or self._read_preference,
            read_concern=self._read_concern.document if read_concern else None,
            timeout_ms=timeout_ms,
        )
        return self._run(op)


def _encoding_with(
    build: Callable[[AttemptContext], Command], options: AnyCodecOptions
) -> Callable[[AttemptContext], Command]:
    """``build``, with the command's documents encoded by the user's codec options into
    BSON values the wire layer's default encoding sends as they are."""

    def encoded(ctx: AttemptContext) -> Command:
        command = build(ctx)
        sequences = command.sequences
        if sequences:
            sequences = {
                identifier: [codec.to_wire_value(d, options) for d in documents]
                for identifier, documents in sequences.items()
            }
        return Command(codec.to_wire(command.body, options), sequences, command.event_sequences)

    return encoded


class Database(_Target):
    """A database of the deployment: ``client["name"]`` or ``client.name``;
    ``db["coll"]`` and ``db.coll`` are Collections (names starting with ``_`` only
    through ``db["_coll"]``)."""

    def __init__(  # noqa: PLR0917 - positional as pymongo's
        self,
        client: Client,
        name: str,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
    ) -> None:
        if not isinstance(name, str) or not name or any(c in name for c in ' ./\\"$\x00'):
            raise ValueError(f"invalid database name {name!r}")
        self._client = client
        self._name = name
        self._set_codec_options(codec_options or client.codec_options)
        self._read_preference = read_preference or client.read_preference
        self._write_concern = write_concern or client.write_concern
        self._read_concern = read_concern or client.read_concern

    @property
    def name(self) -> str:
        return self._name

    def __getitem__(self, name: str) -> Collection:
        return Collection(self, name)

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(
                f"Database has no attribute {name!r}. To reach the collection {name!r},"
                f" use database[{name!r}]."
            )
        return Collection(self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            f"'Database' object is not callable. If you meant to call a method"
            f" {self._name!r} of the client, the client has no such method."
        )

    def get_collection(
        self,
        name: str,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
    ) -> Collection:
        """The collection ``name``; each option not given is this database's."""
        return Collection(
            self,
            name,
            codec_options=codec_options,
            read_preference=read_preference,
            write_concern=write_concern,
            read_concern=read_concern,
        )

    def with_options(
        self,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
    ) -> Database:
        """This database with some options changed (the others are this one's)."""
        return Database(
            self._client,
            self._name,
            codec_options=codec_options or self._codec_options,
            read_preference=read_preference or self._read_preference,
            write_concern=write_concern or self._write_concern,
            read_concern=read_concern or self._read_concern,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Database):
            return NotImplemented
        return other._client == self._client and other._name == self._name

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._client, self._name))

    def __repr__(self) -> str:
        return f"Database({self._name!r})"

    # --- commands ------------------------------------------------------------------------

    def command(
        self,
        command: Union[str, Mapping[str, Any]],
        value: Any = 1,
        *,
        read_preference: Optional[ReadPreference] = None,
        codec_options: Optional[AnyCodecOptions] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> Any:
        """Run any command as it is: the generic command method, never retried.

        ``command`` is a document, or a command name (``value`` is then its value and
        ``kwargs`` its other fields, in order). It runs with read preference primary
        unless one is given; the database's read preference is not consulted. An
        ``ok: 0`` reply raises OperationFailure.

        As in pymongo, the command is encoded and its reply decoded with
        ``codec_options`` if given, else with the default options (not the database's).
        """
        if isinstance(command, str):
            document: Document = {command: value, **kwargs}
        else:
            document = {**command, **kwargs}
        options = codec_options
        if options is not None and codec.is_default(options):
            options = None
        if options is not None:
            document = codec.to_wire(document, options)
        reply = self._client.command(
            self._name,
            document,
            read_preference,
            session=session,
            timeout_ms=timeout_ms,
        )
        return reply if options is None else codec.decode_document(reply, options)

    def cursor_command(  # noqa: PLR0917 - positional as pymongo's
        self,
        command: Union[str, Mapping[str, Any]],
        value: Any = 1,
        read_preference: Optional[ReadPreference] = None,
        codec_options: Optional[AnyCodecOptions] = None,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        max_await_time_ms: Optional[int] = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """Run a command that returns a cursor, as it is, and iterate its cursor
        (RunCommand spec, "RunCursorCommand"): never retried, read preference primary
        unless one is given, none of the database's options applied.

        ``comment`` and ``max_await_time_ms`` (as ``maxTimeMS``) go on the cursor's
        getMores; the returned cursor's ``batch_size()`` sets theirs. A reply without
        a cursor raises InvalidOperation."""
        document: Document = (
            {command: value, **kwargs} if isinstance(command, str) else {**command, **kwargs}
        )
        name = str(next(iter(document), "command"))
        owned = session is None
        use = self._session(session)
        try:
            outcome = self._read(
                self._name,
                name,
                lambda ctx: Command(dict(document)),
                use,
                read_preference=read_preference or ReadPreference(Mode.PRIMARY),
                timeout_ms=timeout_ms,
                retryable=False,
                read_concern=False,
            )
            if not isinstance(outcome.reply.get("cursor"), Mapping):
                raise InvalidOperation(f"the {name} command does not return a cursor")
        except BaseException:
            if owned:
                use.end_session()
            raise
        cursor = CommandCursor.from_reply(
            self._client,
            outcome,
            use if owned else None,
            use,
            None,
            codec_options=codec_options,
            namespace=_command_namespace(self._name, document),
        )
        cursor._get_more_options = _options(comment=comment, maxTimeMS=max_await_time_ms)
        return cursor

    def list_collections(
        self,
        session: Optional[ClientSession] = None,
        filter: Optional[Filter] = None,
        *,
        name_only: bool = False,
        batch_size: Optional[int] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
        authorized_collections: Optional[bool] = None,
    ) -> CommandCursor:
        """The collections of this database (listCollections; a retryable read).

        A "should-use-primary" helper (server selection, "Use of read preferences with
        commands"): it reads from the primary and takes no read preference."""

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"listCollections": 1, "cursor": _cursor_options(batch_size)}
            if filter is not None:
                body["filter"] = dict(filter)
            if name_only:
                body["nameOnly"] = True
            body.update(_options(authorizedCollections=authorized_collections, comment=comment))
            return Command(body)

        return self._cursor_command(
            "listCollections",
            build,
            session,
            read_preference=ReadPreference(Mode.PRIMARY),
            timeout_ms=timeout_ms,
            batch_size=batch_size,
            read_concern=False,
        )

    def list_collection_names(
        self,
        session: Optional[ClientSession] = None,
        filter: Optional[Filter] = None,
        **kwargs: Any,
    ) -> list[str]:
        with self.list_collections(session, filter, name_only=True, **kwargs) as cursor:
            return [str(c["name"]) for c in cursor]

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
        """A database-level aggregation (``aggregate: 1``, e.g. $currentOp)."""
        return _aggregate(
            self,
            self._name,
            1,
            pipeline,
            session,
            batch_size=batch_size,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            options=options,
        )

    def create_collection(
        self, name: str, session: Optional[ClientSession] = None, **options: Any
    ) -> Collection:
        """Create a collection (the create command, never retried)."""
        body: Document = {"create": name, **options}
        if not self._write_concern.is_server_default:
            body["writeConcern"] = self._write_concern.document
        self.command(body, session=session)
        return self[name]

    def drop_collection(
        self, name: str, session: Optional[ClientSession] = None, **options: Any
    ) -> None:
        """Drop a collection; a missing collection is not an error."""
        body: Document = {"drop": name, **options}
        if not self._write_concern.is_server_default:
            body["writeConcern"] = self._write_concern.document
        try:
            self.command(body, session=session)
        except OperationFailure as exc:
            if exc.code != _NAMESPACE_NOT_FOUND:
                raise

    # --- cursors -------------------------------------------------------------------------

    def _cursor_command(
        self,
        name: str,
        build: Callable[[AttemptContext], Command],
        session: Optional[ClientSession],
        *,
        read_preference: Optional[ReadPreference],
        timeout_ms: Optional[float],
        batch_size: Optional[int],
        retryable: bool = True,
        read_concern: bool = True,
        empty_on_missing: bool = False,
        write: bool = False,
    ) -> CommandCursor:
        return _run_cursor_command(
            self,
            self._name,
            name,
            build,
            session,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            batch_size=batch_size,
            retryable=retryable,
            read_concern=read_concern,
            empty_on_missing=empty_on_missing,
            write=write,
        )


class Collection(_Target):
    """A collection: ``client["db"]["coll"]`` or ``client.db.coll``. Thread-safe; makes
    no I/O until used. ``coll.sub`` (or ``coll["sub"]``) is the collection ``coll.sub``."""

    def __init__(  # noqa: PLR0917 - positional as pymongo's
        self,
        database: Database,
        name: str,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
    ) -> None:
        if not isinstance(name, str) or not name or "$" in name or "\x00" in name:
            raise ValueError(f"invalid collection name {name!r}")
        self._database = database
        self._client = database.client
        self._name = name
        self._set_codec_options(codec_options or database.codec_options)
        self._read_preference = read_preference or database.read_preference
        self._write_concern = write_concern or database.write_concern
        self._read_concern = read_concern or database.read_concern

    @property
    def name(self) -> str:
        return self._name

    @property
    def full_name(self) -> str:
        return f"{self._database.name}.{self._name}"

    @property
    def database(self) -> Database:
        return self._database

    def __getitem__(self, name: str) -> Collection:
        """The sub-collection ``<this name>.<name>``, with this collection's options."""
        return Collection(
            self._database,
            f"{self._name}.{name}",
            codec_options=self._codec_options,
            read_preference=self._read_preference,
            write_concern=self._write_concern,
            read_concern=self._read_concern,
        )

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            full_name = f"{self._name}.{name}"
            raise AttributeError(
                f"Collection has no attribute {name!r}. To reach the collection"
                f" {full_name!r}, use database[{full_name!r}]."
            )
        return self[name]

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        method = self._name.rpartition(".")[2]
        raise TypeError(
            f"'Collection' object is not callable. If you meant to call the method"
            f" {method!r} of a Collection, Collection has no such method."
        )

    def with_options(
        self,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
    ) -> Collection:
        """This collection with some options changed (the others are this one's)."""
        return Collection(
            self._database,
            self._name,
            codec_options=codec_options or self._codec_options,
            read_preference=read_preference or self._read_preference,
            write_concern=write_concern or self._write_concern,
            read_concern=read_concern or self._read_concern,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Collection):
            return NotImplemented
        return other._database == self._database and other._name == self._name

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._database, self._name))

    def __repr__(self) -> str:
        return f"Collection({self.full_name!r})"

    # --- writes ----------------------------------------------------------------------------

    def _write(
        self,
        name: str,
        build: Callable[[AttemptContext], Command],
        session: ClientSession,
        *,
        retryable: bool,
        timeout_ms: Optional[float],
        operation_id: Optional[int] = None,
    ) -> Document:
        op = Operation(
            name=name,
            database=self._database.name,
            build=build,
            session=session,
            retry=RetryKind.WRITE if retryable else RetryKind.NONE,
            acknowledged=self._write_concern.acknowledged,
            timeout_ms=timeout_ms,
            operation_id=operation_id,
        )
        return self._run(op).reply

    def _write_command_fields(self, body: Document, **options: Any) -> Document:
        if not self._write_concern.is_server_default:
            body["writeConcern"] = self._write_concern.document
        body.update(_options(**options))
        return body

    def insert_one(
        self,
        document: Mapping[str, Any],
        *,
        bypass_document_validation: Optional[bool] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
    ) -> InsertOneResult:
        """Insert one document (a retryable write). A missing ``_id`` is generated."""
        result = self._bulk(
            [InsertOne(document)],
            ordered=True,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            single=True,
        )[0]
        return InsertOneResult(result.inserted_ids.get(0), result.acknowledged)

    def insert_many(
        self,
        documents: Iterable[Mapping[str, Any]],
        ordered: bool = True,
        *,
        bypass_document_validation: Optional[bool] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
    ) -> InsertManyResult:
        """Insert documents, split into as few commands as the server's limits allow
        (a retryable write: each command has its own transaction number)."""
        requests = [InsertOne(d) for d in documents]
        if not requests:
            raise TypeError("documents must be a non-empty list")
        result = self._bulk(
            requests,
            ordered=ordered,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
        )[0]
        ids = result.inserted_ids
        return InsertManyResult(
            [ids[i] for i in range(len(requests)) if i in ids], result.acknowledged
        )

    def _update(
        self,
        model: _Update,
        *,
        bypass_document_validation: Optional[bool],
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        comment: Any,
        let: Optional[Mapping[str, Any]],
    ) -> UpdateResult:
        result, reply = self._bulk(
            [model],
            ordered=True,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
            single=True,
        )
        if not result.acknowledged or reply is None:
            return UpdateResult(None, False)
        raw = dict(reply)
        upserted = raw.get("upserted")
        # The shape other drivers give: updatedExisting, and upserted as the _id.
        if isinstance(upserted, list) and upserted:
            raw["upserted"] = upserted[0].get("_id")
            raw["updatedExisting"] = False
        else:
            raw.pop("upserted", None)
            raw["updatedExisting"] = bool(raw.get("n"))
        return UpdateResult(raw, True)

    def update_one(
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: bool = False,
        *,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
        sort: Optional[Mapping[str, Any]] = None,
    ) -> UpdateResult:
        """Update the first document matching ``filter`` (a retryable write); with
        ``sort`` (MongoDB 8.0+), the first in that order."""
        model = UpdateOne(
            filter,
            update,
            upsert,
            array_filters=array_filters,
            hint=hint,
            collation=collation,
            sort=sort,
        )
        return self._update(
            model,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def update_many(
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: bool = False,
        *,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
    ) -> UpdateResult:
        """Update every document matching ``filter`` (never retried)."""
        model = UpdateMany(
            filter, update, upsert, array_filters=array_filters, hint=hint, collation=collation
        )
        return self._update(
            model,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def replace_one(
        self,
        filter: Filter,
        replacement: Mapping[str, Any],
        upsert: bool = False,
        *,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
        sort: Optional[Mapping[str, Any]] = None,
    ) -> UpdateResult:
        """Replace the first document matching ``filter`` (a retryable write); with
        ``sort`` (MongoDB 8.0+), the first in that order."""
        model = ReplaceOne(filter, replacement, upsert, hint=hint, collation=collation, sort=sort)
        return self._update(
            model,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def _delete(
        self,
        model: _Delete,
        *,
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        comment: Any,
        let: Optional[Mapping[str, Any]],
    ) -> DeleteResult:
        result, reply = self._bulk(
            [model],
            ordered=True,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
            single=True,
        )
        if not result.acknowledged or reply is None:
            return DeleteResult(None, False)
        return DeleteResult(reply, True)

    def delete_one(
        self,
        filter: Filter,
        *,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
    ) -> DeleteResult:
        """Delete the first document matching ``filter`` (a retryable write)."""
        return self._delete(
            DeleteOne(filter, hint=hint, collation=collation),
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def delete_many(
        self,
        filter: Filter,
        *,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
    ) -> DeleteResult:
        """Delete every document matching ``filter`` (never retried)."""
        return self._delete(
            DeleteMany(filter, hint=hint, collation=collation),
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def bulk_write(
        self,
        requests: Sequence[WriteModel],
        ordered: bool = True,
        *,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
    ) -> BulkWriteResult:
        """Run a list of write requests (InsertOne, UpdateOne, UpdateMany, ReplaceOne,
        DeleteOne, DeleteMany).

        Ordered: requests run in order, consecutive ones of a kind in one command, and
        the first write error stops the rest. Unordered: inserts, then updates, then
        deletes, each statement attempted. Retryable only if no request is an
        UpdateMany or DeleteMany. Write errors and write concern errors raise
        BulkWriteError with the result so far.
        """
        requests = list(requests)
        if not requests:
            raise TypeError("requests must be a non-empty list")
        for request in requests:
            if not isinstance(request, _WriteModel):
                raise TypeError(f"{request!r} is not a write request (InsertOne, UpdateOne, ...)")
        return self._bulk(
            requests,
            ordered=ordered,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )[0]

    def _bulk(
        self,
        requests: Sequence[_WriteModel],
        *,
        ordered: bool,
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        comment: Any,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        single: bool = False,
    ) -> tuple[BulkWriteResult, Optional[Mapping[str, Any]]]:
        """The result, and the last command's reply (a single write's raw result)."""
        write_concern = self._write_concern
        owned = session is None
        use = self._write_session(session, write_concern)
        try:
            bulk = _BulkWrite(
                self,
                requests,
                ordered=ordered,
                session=use,
                timeout_ms=timeout_ms,
                options=_options(
                    bypassDocumentValidation=bypass_document_validation,
                    let=None if let is None else dict(let),
                    comment=comment,
                ),
            )
            return bulk.execute(single=single), bulk.last_reply
        finally:
            if owned:
                use.end_session()

    def _find_and_modify(
        self,
        filter: Filter,
        *,
        projection: Projection,
        sort: SortSpec,
        upsert: Optional[bool],
        return_document: ReturnDocument,
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        remove: bool = False,
        update: Any = None,
        **options: Any,
    ) -> Optional[Document]:
        if not isinstance(return_document, ReturnDocument):
            raise TypeError("return_document must be ReturnDocument.BEFORE or ReturnDocument.AFTER")
        write_concern = self._write_concern
        owned = session is None
        use = self._write_session(session, write_concern)
        fields = _projection(projection)
        sort_doc = _sort_document(sort)
        hint = options.pop("hint", None)

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"findAndModify": self._name, "query": dict(filter)}
            if sort_doc is not None:
                body["sort"] = sort_doc
            if remove:
                body["remove"] = True
            else:
                body["update"] = update
                body["new"] = return_document.value
                if upsert:
                    body["upsert"] = True
            if fields is not None:
                body["fields"] = fields
            if hint is not None:
                body["hint"] = _hint(hint)
            return Command(self._write_command_fields(body, **options))

        try:
            reply = self._write("findAndModify", build, use, retryable=True, timeout_ms=timeout_ms)
        finally:
            if owned:
                use.end_session()
        _raise_write_concern_error(reply)
        value = reply.get("value")
        if not isinstance(value, Mapping) or not write_concern.acknowledged:
            # An unacknowledged (w=0) write's outcome is unknown, as pymongo has it.
            return None
        if self._decoding is None:
            return dict(value)
        return codec.decode_document(value, self._decoding)  # type: ignore[no-any-return]

    def find_one_and_delete(
        self,
        filter: Filter,
        projection: Projection = None,
        sort: SortSpec = None,
        *,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
        max_time_ms: Optional[int] = None,
    ) -> Optional[Document]:
        """Delete the first matching document and return it (a retryable write)."""
        return self._find_and_modify(
            filter,
            projection=projection,
            sort=sort,
            upsert=None,
            return_document=ReturnDocument.BEFORE,
            session=session,
            timeout_ms=timeout_ms,
            remove=True,
            hint=hint,
            collation=collation,
            let=let,
            comment=comment,
            maxTimeMS=max_time_ms,
        )

    def find_one_and_replace(  # noqa: PLR0917 - positional like other drivers
        self,
        filter: Filter,
        replacement: Mapping[str, Any],
        projection: Projection = None,
        sort: SortSpec = None,
        upsert: bool = False,
        return_document: ReturnDocument = ReturnDocument.BEFORE,
        *,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
        max_time_ms: Optional[int] = None,
    ) -> Optional[Document]:
        """Replace the first matching document; return it before or after (retryable)."""
        _check_replacement(replacement)
        return self._find_and_modify(
            filter,
            projection=projection,
            sort=sort,
            upsert=upsert,
            return_document=return_document,
            session=session,
            timeout_ms=timeout_ms,
            update=dict(replacement),
            hint=hint,
            collation=collation,
            bypassDocumentValidation=bypass_document_validation,
            let=let,
            comment=comment,
            maxTimeMS=max_time_ms,
        )

    def find_one_and_update(  # noqa: PLR0917 - positional like other drivers
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        projection: Projection = None,
        sort: SortSpec = None,
        upsert: bool = False,
        return_document: ReturnDocument = ReturnDocument.BEFORE,
        *,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        collation: Optional[Mapping[str, Any]] = None,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
        max_time_ms: Optional[int] = None,
    ) -> Optional[Document]:
        """Update the first matching document; return it before or after (retryable)."""
        _check_update(update)
        return self._find_and_modify(
            filter,
            projection=projection,
            sort=sort,
            upsert=upsert,
            return_document=return_document,
            session=session,
            timeout_ms=timeout_ms,
            update=dict(update) if isinstance(update, Mapping) else list(update),
            arrayFilters=None if array_filters is None else list(array_filters),
            hint=hint,
            collation=collation,
            bypassDocumentValidation=bypass_document_validation,
            let=let,
            comment=comment,
            maxTimeMS=max_time_ms,
        )

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
            self,
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
        if filter is not None and not isinstance(filter, Mapping):
            filter = {"_id": filter}
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
            collection=self,
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
        with self.aggregate(
            pipeline,
            session,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            **options,
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
                )
            )
            return Command(body)

        reply = self._simple_read("count", build, session, read_preference, timeout_ms)
        return int(reply.get("n", 0))

    def list_indexes(
        self,
        session: Optional[ClientSession] = None,
        *,
        batch_size: Optional[int] = None,
        timeout_ms: Optional[float] = None,
        comment: Any = None,
    ) -> CommandCursor:
        """The collection's indexes (listIndexes; a retryable read). A collection that
        does not exist has none.

        A "should-use-primary" helper (server selection, "Use of read preferences with
        commands"): it reads from the primary and takes no read preference."""

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"listIndexes": self._name, "cursor": _cursor_options(batch_size)}
            body.update(_options(comment=comment))
            return Command(body)

        return self._database._cursor_command(
            "listIndexes",
            build,
            session,
            read_preference=ReadPreference(Mode.PRIMARY),
            timeout_ms=timeout_ms,
            batch_size=batch_size,
            read_concern=False,
            empty_on_missing=True,
        )

    def list_index_names(self, session: Optional[ClientSession] = None, **kwargs: Any) -> list[str]:
        with self.list_indexes(session, **kwargs) as cursor:
            return [str(index["name"]) for index in cursor]

    def index_information(
        self, session: Optional[ClientSession] = None, comment: Any = None
    ) -> dict[str, Document]:
        """Index name -> its description (``key`` as a list of (field, direction))."""
        info: dict[str, Document] = {}
        with self.list_indexes(session, comment=comment) as cursor:
            for index in cursor:
                entry = dict(index)
                name = str(entry.pop("name"))
                entry["key"] = list(dict(entry["key"]).items())
                info[name] = entry
        return info

    def create_index(
        self,
        keys: IndexSpec,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> str:
        """Create an index (createIndexes, never retried); returns its name.

        ``kwargs`` are the index's options as the server spells them (``name``,
        ``unique``, ``sparse``, ``expireAfterSeconds``, ``partialFilterExpression``,
        ...), except ``maxTimeMS`` and ``commitQuorum``, which go to the command."""
        command_options: Document = {
            k: kwargs.pop(k) for k in ("maxTimeMS", "commitQuorum") if k in kwargs
        }
        key_doc = _index_keys(keys)
        name = kwargs.pop("name", None) or _index_name(key_doc)
        index: Document = {"key": key_doc, "name": name, **kwargs}
        return self._create_indexes([index], session, comment, command_options)[0]

    def create_indexes(
        self,
        indexes: Sequence[Any],
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> list[str]:
        """Create several indexes in one createIndexes command; returns their names.

        ``indexes`` are IndexModel objects (anything with a ``document`` mapping: the
        index's ``key``, ``name`` and options). ``kwargs`` are command fields
        (``maxTimeMS``, ``commitQuorum``)."""
        documents: list[Document] = []
        for model in indexes:
            document = getattr(model, "document", None)
            if not isinstance(document, Mapping):
                raise TypeError(f"{model!r} is not an IndexModel")
            entry = dict(document)
            entry.setdefault("name", _index_name(dict(entry["key"])))
            documents.append(entry)
        return self._create_indexes(documents, session, comment, kwargs)

    def _create_indexes(
        self,
        documents: list[Document],
        session: Optional[ClientSession],
        comment: Any,
        options: Mapping[str, Any],
    ) -> list[str]:
        body: Document = {"createIndexes": self._name, "indexes": documents, **options}
        self._admin_command(body, session, comment)
        return [str(document["name"]) for document in documents]

    def drop_index(
        self,
        index_or_name: IndexSpec,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> None:
        """Drop one index, by name or by its keys (``"*"`` drops all but ``_id``'s)."""
        if isinstance(index_or_name, str):
            name = index_or_name
        else:
            name = _index_name(_index_keys(index_or_name))
        body: Document = {"dropIndexes": self._name, "index": name, **kwargs}
        self._admin_command(body, session, comment)

    def drop_indexes(
        self, session: Optional[ClientSession] = None, comment: Any = None, **kwargs: Any
    ) -> None:
        """Drop every index but the one on ``_id``."""
        self.drop_index("*", session, comment, **kwargs)

    def rename(
        self,
        new_name: str,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Document:
        """Rename this collection within its database (renameCollection, run on the
        admin database, never retried); ``dropTarget=True`` replaces an existing
        collection of that name. Returns the server's reply."""
        if not isinstance(new_name, str):
            raise TypeError("new_name must be a string")
        if (
            not new_name
            or ".." in new_name
            or "$" in new_name
            or "\x00" in new_name
            or new_name.startswith(".")
            or new_name.endswith(".")
        ):
            raise ValueError(f"invalid collection name {new_name!r}")
        to = f"{self._database.name}.{new_name}"
        body: Document = {"renameCollection": self.full_name, "to": to, **kwargs}
        return self._admin_command(body, session, comment, database="admin")

    def options(self, session: Optional[ClientSession] = None, comment: Any = None) -> Document:
        """The options the collection was created with (listCollections); ``{}`` for
        a collection created implicitly or that does not exist."""
        with self._database.list_collections(
            session, {"name": self._name}, comment=comment
        ) as cursor:
            for info in cursor:
                options = dict(info.get("options") or {})
                options.pop("create", None)
                return options
        return {}

    def _admin_command(
        self,
        body: Document,
        session: Optional[ClientSession],
        comment: Any,
        *,
        database: Optional[str] = None,
    ) -> Document:
        """A catalog command (never retried), with the collection's write concern."""
        if comment is not None:
            body["comment"] = comment
        if not self._write_concern.is_server_default:
            body["writeConcern"] = self._write_concern.document
        reply = self._client.command(database or self._database.name, body, None, session=session)
        _raise_write_concern_error(reply)
        return reply

    def drop(self, session: Optional[ClientSession] = None) -> None:
        """Drop the collection; a missing collection is not an error."""
        self._database.drop_collection(self._name, session=session)

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


# --- bulk writes -----------------------------------------------------------------------


class _Batch(NamedTuple):
    kind: str
    #: (request index, statement) in send order.
    statements: list[tuple[int, Document]]


_SEQUENCE_OF = {"insert": "documents", "update": "updates", "delete": "deletes"}


class _BulkWrite:
    """insert_many and bulk_write (and the single-statement writes): group requests
    into commands, cut each group into batches that fit the server's limits, run one
    command per batch, merge the replies."""

    def __init__(
        self,
        collection: Collection,
        requests: Sequence[_WriteModel],
        *,
        ordered: bool,
        session: ClientSession,
        timeout_ms: Optional[float],
        options: Mapping[str, Any],
    ) -> None:
        self.collection = collection
        self.requests = requests
        self.ordered = ordered
        self.session = session
        self.timeout_ms = timeout_ms
        self.options = dict(options)
        # "bulkWrite() ... may not include UpdateMany or DeleteMany": the whole
        # operation is then unsupported, every command of it without a transaction id.
        self.retryable = not any(r._multi for r in requests)
        self.operation_id = next_operation_id()
        self.inserted_ids: dict[int, Any] = {}
        self.last_reply: Optional[Mapping[str, Any]] = None
        self.result: Document = {
            "writeErrors": [],
            "writeConcernErrors": [],
            "nInserted": 0,
            "nUpserted": 0,
            "nMatched": 0,
            "nModified": 0,
            "nRemoved": 0,
            "upserted": [],
        }

    def _groups(self) -> list[_Batch]:
        groups: list[_Batch] = []
        if self.ordered:
            for index, request in enumerate(self.requests):
                statement = request._statement()
                if groups and groups[-1].kind == request._kind:
                    groups[-1].statements.append((index, statement))
                else:
                    groups.append(_Batch(request._kind, [(index, statement)]))
        else:
            by_kind: dict[str, _Batch] = {}
            for index, request in enumerate(self.requests):
                group = by_kind.setdefault(request._kind, _Batch(request._kind, []))
                group.statements.append((index, request._statement()))
            groups = [by_kind[k] for k in ("insert", "update", "delete") if k in by_kind]
        for group in groups:
            if group.kind == "insert":
                for index, statement in group.statements:
                    self.inserted_ids[index] = statement["_id"]
        return groups

    def execute(self, *, single: bool = False) -> BulkWriteResult:
        collection = self.collection
        acknowledged = collection.write_concern.acknowledged
        try:
            for group in self._groups():
                self._run_group(group)
                if self.ordered and self.result["writeErrors"]:
                    break
        except MongoCoreError as exc:
            if acknowledged and not single:
                # The seed encourages access to the intermediary result of a write
                # whose later command failed: the counts of the commands before it.
                exc.partial_result = copy.deepcopy(self.result)
            raise
        if not acknowledged:
            return BulkWriteResult({}, False, self.inserted_ids)
        result = self.result
        if single:
            # One statement, one command: its own errors, as the server gave them.
            if self.last_reply is not None:
                _raise_single_write_errors(self.last_reply)
        elif result["writeErrors"] or result["writeConcernErrors"]:
            raise BulkWriteError(result)
        return BulkWriteResult(copy.deepcopy(result), True, self.inserted_ids)

    def _run_group(self, group: _Batch) -> None:
        collection = self.collection
        identifier = _SEQUENCE_OF[group.kind]
        encoded = [collection._encode(statement) for _, statement in group.statements]
        batches: list[range] = []
        position = 0
        while True:

            def build(ctx: AttemptContext, position: int = position) -> Command:
                if not batches:
                    # Cut every batch now, with this connection's limits; a batch keeps
                    # its statements (and transaction number) on a retry.
                    body_size = len(collection._encode(self._body(group.kind)))
                    overhead = op_msg_overhead(body_size + _COMMAND_FIELDS_ALLOWANCE, identifier)
                    max_document = None
                    if group.kind != "insert":
                        max_document = ctx.connection.limits.max_bson_object_size + COMMAND_OVERHEAD
                    batches.extend(
                        split_batches(encoded, overhead, ctx.connection.limits, max_document)
                    )
                indexes = batches[position]
                return Command(
                    self._body(group.kind),
                    {identifier: [encoded[i] for i in indexes]},
                    {identifier: [group.statements[i][1] for i in indexes]},
                )

            reply = collection._write(
                group.kind,
                build,
                self.session,
                retryable=self.retryable,
                timeout_ms=self.timeout_ms,
                operation_id=self.operation_id,
            )
            self._merge(group, batches[position], reply)
            position += 1
            if position >= len(batches):
                return
            if self.ordered and self.result["writeErrors"]:
                return

    def _body(self, kind: str) -> Document:
        body: Document = {kind: self.collection.name, "ordered": self.ordered}
        return self.collection._write_command_fields(body, **self.options)

    def _merge(self, group: _Batch, indexes: range, reply: Mapping[str, Any]) -> None:
        self.last_reply = reply
        result = self.result
        n = int(reply.get("n", 0))
        if group.kind == "insert":
            result["nInserted"] += n
        elif group.kind == "delete":
            result["nRemoved"] += n
        else:
            upserted = reply.get("upserted") or []
            for ordinal, upsert in enumerate(upserted):
                # Some compatible servers leave out "index"; a single statement is
                # then index 0, and several are taken in the reply's order.
                index = error_code(upsert.get("index"))
                position = group.statements[indexes[ordinal if index is None else index]][0]
                result["upserted"].append({"index": position, "_id": upsert["_id"]})
            result["nUpserted"] += len(upserted)
            result["nMatched"] += n - len(upserted)
            result["nModified"] += int(reply.get("nModified", 0))
        for error in reply.get("writeErrors") or []:
            entry = dict(error)
            original = group.statements[indexes[error_code(error.get("index")) or 0]]
            entry["index"] = original[0]
            entry["op"] = original[1]
            result["writeErrors"].append(entry)
        wce = reply.get("writeConcernError")
        if isinstance(wce, Mapping):
            entry = dict(wce)
            if reply.get("errorLabels"):
                entry["errorLabels"] = list(reply["errorLabels"])
            result["writeConcernErrors"].append(entry)


# --- cursors ---------------------------------------------------------------------------


def _cursor_options(batch_size: Optional[int]) -> Document:
    return {} if batch_size is None else {"batchSize": int(batch_size)}


def _aggregate(
    target: Database,
    database: str,
    aggregate: Union[str, int],
    pipeline: Sequence[Mapping[str, Any]],
    session: Optional[ClientSession],
    *,
    batch_size: Optional[int],
    read_preference: Optional[ReadPreference],
    timeout_ms: Optional[float],
    options: Mapping[str, Any],
    collection: Optional[Collection] = None,
) -> CommandCursor:
    stages = [dict(stage) for stage in pipeline]
    writes = bool(stages) and any(key in stages[-1] for key in ("$out", "$merge"))
    fields: Document = {}
    for key, value in options.items():
        if value is None:
            continue
        fields[_camel(key)] = value
    scope: _Target = collection if collection is not None else target
    write_concern = scope.write_concern

    def build(ctx: AttemptContext) -> Command:
        body: Document = {"aggregate": aggregate, "pipeline": stages}
        # With $out or $merge the results are written, so no batch is asked for.
        body["cursor"] = {} if writes else _cursor_options(batch_size)
        body.update(fields)
        if writes and not write_concern.is_server_default:
            body["writeConcern"] = write_concern.document
        return Command(body)

    cursor = _run_cursor_command(
        scope,
        database,
        "aggregate",
        build,
        session,
        read_preference=None if writes else read_preference,
        timeout_ms=timeout_ms,
        batch_size=batch_size,
        retryable=not writes,
        read_concern=True,
        write=writes,
    )
    if "comment" in fields:
        # The comment also tags the cursor's getMores (MongoDB 4.4+ accepts it there).
        cursor._get_more_options = {"comment": fields["comment"]}
    return cursor


def _camel(name: str) -> str:
    if "_" not in name:
        return name
    first, *rest = name.split("_")
    text = first + "".join(part[:1].upper() + part[1:] for part in rest)
    return text.replace("Ms", "MS") if text.endswith("TimeMs") else text


def _run_cursor_command(
    target: _Target,
    database: str,
    name: str,
    build: Callable[[AttemptContext], Command],
    session: Optional[ClientSession],
    *,
    read_preference: Optional[ReadPreference],
    timeout_ms: Optional[float],
    batch_size: Optional[int],
    retryable: bool,
    read_concern: bool,
    empty_on_missing: bool = False,
    write: bool = False,
) -> CommandCursor:
    owned = session is None
    use = target._session(session)
    sent: list[Document] = []

    def build_and_keep(ctx: AttemptContext) -> Command:
        command = build(ctx)
        sent[:] = [command.body]
        return command

    try:
        if write:
            op = Operation(
                name=name,
                database=database,
                build=build_and_keep,
                session=use,
                retry=RetryKind.NONE,
                read_concern=target.read_concern.document if read_concern else None,
                timeout_ms=timeout_ms,
            )
            outcome = target._run(op)
        else:
            outcome = target._read(
                database,
                name,
                build_and_keep,
                use,
                read_preference=read_preference,
                timeout_ms=timeout_ms,
                retryable=retryable,
                read_concern=read_concern,
            )
    except OperationFailure as exc:
        if owned:
            use.end_session()
        if empty_on_missing and exc.code == _NAMESPACE_NOT_FOUND:
            return CommandCursor(target._client, None, [], batch_size=batch_size)
        raise
    except BaseException:
        if owned:
            use.end_session()
        raise
    return CommandCursor.from_reply(
        target._client,
        outcome,
        use if owned else None,
        use,
        batch_size,
        codec_options=target._decoding,
        namespace=_command_namespace(database, sent[0] if sent else {}),
    )


def _command_namespace(database: str, body: Mapping[str, Any]) -> tuple[str, str]:
    """The namespace a cursor-returning command names, for a reply without ``ns``:
    ``db.coll``, or ``db.$cmd.<command>`` for database-level commands."""
    for name, value in body.items():
        if isinstance(value, str):
            return database, value
        return database, f"$cmd.{name}"
    return database, ""


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
    pool as soon as it is exhausted or closed.
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self._buffer: list[Document] = []
        self._position = 0
        self._id = 0
        self._address: Optional[Address] = None
        self._namespace: tuple[str, str] = ("", "")
        self._session: Optional[ClientSession] = None
        self._owned_session: Optional[ClientSession] = None
        self._batch_size: Optional[int] = None
        self._limit = 0
        self._retrieved = 0
        self._killed = False
        self._started = False
        self._timeout_ms: Optional[float] = None
        self._operation_id: Optional[int] = None
        #: Fields every getMore carries (cursor_command's comment and maxTimeMS).
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
        return self._position < len(self._buffer) or (self._id != 0 and not self._killed)

    @property
    def retrieved(self) -> int:
        return self._retrieved

    @property
    def session(self) -> Optional[ClientSession]:
        """The explicit session of the cursor, if it was given one."""
        return None if self._session is self._owned_session else self._session

    def __iter__(self) -> Iterator[Document]:
        return self

    def __next__(self) -> Document:
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
        out: list[Document] = []
        while length is None or len(out) < length:
            document = self._next()
            if document is None:
                break
            out.append(document)
        return out

    def close(self) -> None:
        """Kill the server cursor if it is still open (best effort), release its session."""
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
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
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
        self._id = _cursor_id(cursor.get("id", 0))
        ns = cursor.get("ns")
        if isinstance(ns, str) and "." in ns:
            db, _, coll = ns.partition(".")
            self._namespace = (db, coll)
        else:
            self._namespace = namespace
        self._set_batch(list(cursor.get("firstBatch") or []))
        if self._id == 0:
            self._release()

    def _set_batch(self, documents: list[Document]) -> None:
        if self._limit:
            documents = documents[: max(0, self._limit - self._retrieved)]
        if self._decoding is not None:
            documents = codec.decode_documents(documents, self._decoding)
        self._buffer = documents
        self._position = 0
        self._retrieved += len(documents)

    def _next(self) -> Optional[Document]:
        if not self._started:
            self._start()
        while True:
            if self._position < len(self._buffer):
                document = self._buffer[self._position]
                self._position += 1
                return document
            if self._id == 0 or self._killed:
                return None
            if self._limit and self._retrieved >= self._limit:
                self.close()
                return None
            self._get_more()

    def _get_more(self) -> None:
        session = self._session
        assert session is not None and self._address is not None
        db, coll = self._namespace
        batch_size = self._batch_size
        if self._limit:
            remaining = self._limit - self._retrieved
            batch_size = remaining if not batch_size else min(batch_size, remaining)
        cursor_id = self._id

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"getMore": cursor_id, "collection": coll}
            if batch_size:
                body["batchSize"] = int(batch_size)
            body.update(self._get_more_options)
            return Command(body)

        op = Operation(
            name="getMore",
            database=db,
            build=build,
            session=session,
            retry=RetryKind.NONE,
            address=self._address,
            timeout_ms=self._timeout_ms,
            operation_id=self._operation_id,
        )
        try:
            outcome = self._client._executor.run(op)
        except BaseException:
            # The cursor is unusable after a failed getMore (never retried).
            self._killed = True
            self._release()
            raise
        cursor = outcome.reply.get("cursor") or {}
        self._id = _cursor_id(cursor.get("id", 0))
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

        op = Operation(
            name="killCursors",
            database=db,
            build=build,
            session=session,
            retry=RetryKind.NONE,
            address=self._address,
            operation_id=self._operation_id,
        )
        # Best effort: the server times idle cursors out anyway.
        with contextlib.suppress(Exception):
            self._client._executor.run(op)
        self._id = 0

    def _release(self) -> None:
        owned, self._owned_session = self._owned_session, None
        if owned is not None:
            owned.end_session()


class CommandCursor(_CursorBase):
    """The cursor of a command that returns one (aggregate, listCollections, listIndexes,
    and listDatabases, whose results all come at once)."""

    def __init__(
        self,
        client: Client,
        address: Optional[Address],
        first_batch: list[Document],
        *,
        session: Optional[ClientSession] = None,
        owned_session: Optional[ClientSession] = None,
        batch_size: Optional[int] = None,
        codec_options: Optional[AnyCodecOptions] = None,
    ) -> None:
        super().__init__(client)
        if codec_options is not None and not codec.is_default(codec_options):
            self._decoding = codec_options
        self._started = True
        self._address = address
        self._session = session
        self._owned_session = owned_session
        self._batch_size = batch_size
        self._set_batch(first_batch)

    @classmethod
    def from_reply(
        cls,
        client: Client,
        outcome: CommandOutcome,
        owned_session: Optional[ClientSession],
        session: ClientSession,
        batch_size: Optional[int],
        *,
        namespace: tuple[str, str] = ("", ""),
        codec_options: Optional[AnyCodecOptions] = None,
    ) -> CommandCursor:
        cursor = cls(
            client,
            outcome.address,
            [],
            session=session,
            owned_session=owned_session,
            batch_size=batch_size,
            codec_options=codec_options,
        )
        cursor._retrieved = 0
        cursor._adopt(outcome, namespace)
        return cursor

    def batch_size(self, batch_size: int) -> CommandCursor:
        """The number of documents each following getMore asks for (0: the server's)."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 0:
            raise ValueError("batch_size must be a non-negative int")
        self._batch_size = batch_size or None
        return self

    def __enter__(self) -> CommandCursor:
        return self


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
            )
        except BaseException:
            self._killed = True
            self._release()
            raise
        self._adopt(outcome, (collection.database.name, collection.name))
        if self._single_batch and self._id:
            self.close()
