"""Database: collections by name, commands, and the enumeration commands.

Spec: CRUD and "Enumerating Collections".
"""

from __future__ import annotations

import time
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Generic, NoReturn, Optional, Union

from bson.dbref import DBRef

from mongocore.api.arguments import _command_fields, _options, _raise_write_concern_error
from mongocore.api.client_session import ClientSession
from mongocore.api.collection import Collection
from mongocore.api.collection_base import _check_collection_name
from mongocore.api.command_cursor import (
    CommandCursor,
    _aggregate,
    _command_namespace,
    _cursor_options,
    _run_cursor_command,
)
from mongocore.api.cursor_base import _NAMESPACE_NOT_FOUND
from mongocore.api.target import _check_timeout_ms, _Target
from mongocore.api.types import Document, Filter, _DocumentType
from mongocore.api.watch import DatabaseWatch
from mongocore.core import codec
from mongocore.core.codec import AnyCodecOptions
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import (
    CollectionInvalid,
    ConfigurationError,
    InvalidName,
    InvalidOperation,
    OperationFailure,
)
from mongocore.io.operation import AttemptContext, Command
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongocore.api.client import Client


#: Characters a database name cannot contain.
_INVALID_NAME_CHARACTERS = (" ", ".", "$", "/", "\\", "\x00", '"')


def _check_name(name: str) -> None:
    """Raise InvalidName for a database name the server would refuse (pymongo's
    ``database._check_name``, which libraries such as MongoEngine call)."""
    if not name:
        raise InvalidName("database name cannot be the empty string")
    for character in _INVALID_NAME_CHARACTERS:
        if character in name:
            raise InvalidName(f"database names cannot contain the character {character!r}")


class Database(_Target, DatabaseWatch, Generic[_DocumentType]):
    """A database of the deployment: ``client["name"]`` or ``client.name``;
    ``db["coll"]`` and ``db.coll`` are Collections (names starting with ``_`` only
    through ``db["_coll"]``)."""

    def __init__(  # noqa: PLR0917 - positional as pymongo's
        self,
        client: Client[Any],
        name: str,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        if name != "$external":  # the database of external credentials, as in pymongo
            _check_name(name)
        self._client = client
        self._name = name
        self._set_codec_options(codec_options or client.codec_options)
        self._read_preference = read_preference or client.read_preference
        self._write_concern = write_concern or client.write_concern
        self._read_concern = read_concern or client.read_concern

    @property
    def name(self) -> str:
        return self._name

    def __getitem__(self, name: str) -> Collection[_DocumentType]:
        return Collection(self, name)

    def __getattr__(self, name: str) -> Collection[_DocumentType]:
        """``database.name`` is ``database["name"]``, through ``__getitem__`` each
        time (as in pymongo: a subclass's ``__getitem__`` decides what it returns)."""
        if name.startswith("_"):
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}. To reach the"
                f" collection {name!r}, use database[{name!r}]."
            )
        return self.__getitem__(name)

    # Iterating a database is a mistake (pymongo's PYTHON-3084): without these, Python
    # would iterate it through __getitem__ with 0, 1, 2, ...
    __iter__ = None

    def __next__(self) -> NoReturn:
        raise TypeError(f"'{type(self).__name__}' object is not iterable")

    next = __next__

    def __bool__(self) -> NoReturn:
        raise NotImplementedError(
            f"{type(self).__name__} objects do not implement truth value testing or"
            " bool(). Please compare with None instead: database is not None"
        )

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
        *,
        timeout_ms: Optional[float] = None,
    ) -> Collection:
        """The collection ``name``; each option not given is this database's.
        ``timeout_ms``: its operations' timeoutMS (0: no limit)."""
        collection = Collection(
            self,
            name,
            codec_options=codec_options,
            read_preference=read_preference,
            write_concern=write_concern,
            read_concern=read_concern,
        )
        collection._timeout_ms = _check_timeout_ms(timeout_ms, self._timeout_ms)
        return collection

    def _cursor_collection(self) -> Collection:
        return self.get_collection("$cmd")

    def with_options(
        self,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> Database:
        """This database with some options changed (the others are this one's).
        ``timeout_ms``: its operations' timeoutMS (0: no limit)."""
        database = Database(
            self._client,
            self._name,
            codec_options=codec_options or self._codec_options,
            read_preference=read_preference or self._read_preference,
            write_concern=write_concern or self._write_concern,
            read_concern=read_concern or self._read_concern,
        )
        database._timeout_ms = _check_timeout_ms(timeout_ms, self._timeout_ms)
        return database

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Database):
            return NotImplemented
        return other._client == self._client and other._name == self._name

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._client, self._name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._client!r}, {self._name!r})"

    # --- commands ------------------------------------------------------------------------

    def command(  # noqa: PLR0917 - positional as pymongo's
        self,
        command: Union[str, Mapping[str, Any]],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Optional[Container[Union[str, int]]] = None,
        read_preference: Optional[ReadPreference] = None,
        codec_options: Optional[AnyCodecOptions] = None,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> Any:
        """Run any command as it is: the generic command method, never retried.

        ``command`` is a document, or a command name (``value`` is then its value and
        ``kwargs`` its other fields, in order). It runs with read preference primary
        unless one is given; the database's read preference is not consulted.

        An ``ok: 0`` reply raises OperationFailure, unless ``check`` is False or its
        code (or, without a code, its message) is among ``allowable_errors``: the reply
        is then returned. ``check`` and ``allowable_errors`` are the driver's, never
        sent.

        As in pymongo, the command is encoded and its reply decoded with
        ``codec_options`` if given, else with the default options (not the database's).
        """
        if isinstance(command, str):
            document: Document = {command: value, **kwargs}
        else:
            document = {**command, **kwargs}
        if comment is not None:
            document["comment"] = comment
        options = codec_options
        if options is not None and codec.is_default(options):
            options = None
        if options is not None:
            document = codec.to_wire(document, options)
        try:
            reply = self._client.command(
                self._name,
                document,
                read_preference,
                session=session,
                timeout_ms=self._timeout_ms if timeout_ms is None else timeout_ms,
                operation_name="runCommand",
            )
        except OperationFailure as exc:
            if not _allowed(exc, check, allowable_errors):
                raise
            reply = dict(exc.details)
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
        use = self._session(session)
        owned = use.implicit
        started = time.monotonic()
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
                opens_cursor=True,
                operation_name="runCommand",
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
        cursor._scope = self
        cursor._get_more_options = _options(comment=comment, maxTimeMS=max_await_time_ms)
        if not document.get("tailable"):
            # A tailable cursor's timeoutMS is for each iteration (CSOT, "Tailable
            # Cursors"); the others' is their lifetime.
            cursor._begin_lifetime(self._timeout_ms if timeout_ms is None else timeout_ms, started)
        return cursor

    def list_collections(
        self,
        session: Optional[ClientSession] = None,
        filter: Optional[Filter] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """The collections of this database (listCollections; a retryable read).

        ``kwargs`` are the command's fields, as pymongo takes them (``nameOnly=True``,
        ``authorizedCollections=True``, ``batchSize=10`` for the cursor) or in
        snake_case. A "should-use-primary" helper (server selection, "Use of read
        preferences with commands"): it reads from the primary and takes no read
        preference."""
        fields = _command_fields(kwargs)
        batch_size = fields.pop("batchSize", None)
        if filter is not None:
            fields["filter"] = dict(filter)
        if comment is not None:
            fields["comment"] = comment
        cursor_document = _cursor_options(batch_size)

        def build(ctx: AttemptContext) -> Command:
            return Command({"listCollections": 1, "cursor": dict(cursor_document), **fields})

        cursor = self._cursor_command(
            "listCollections",
            build,
            session,
            read_preference=ReadPreference(Mode.PRIMARY),
            timeout_ms=timeout_ms,
            batch_size=batch_size,
            read_concern=False,
        )
        if comment is not None:
            cursor._get_more_options = {"comment": comment}
        return cursor

    def list_collection_names(
        self,
        session: Optional[ClientSession] = None,
        filter: Optional[Filter] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> list[str]:
        """The names of this database's collections. ``nameOnly`` is asked for unless
        ``filter`` names more than ``name`` (Enumerating Collections: "MUST NOT set
        nameOnly if a filter specifies any keys other than name")."""
        if filter is None or not filter or (len(filter) == 1 and "name" in filter):
            kwargs["nameOnly"] = True
        with self.list_collections(session, filter, comment, **kwargs) as cursor:
            return [str(c["name"]) for c in cursor]

    def aggregate(
        self,
        pipeline: Sequence[Mapping[str, Any]],
        session: Optional[ClientSession] = None,
        *,
        read_preference: Optional[ReadPreference] = None,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """A database-level aggregation (``aggregate: 1``, e.g. $currentOp).

        ``kwargs`` are the command's options as for
        :meth:`Collection.aggregate <mongocore.api.collection.Collection.aggregate>`
        (``batchSize`` for the cursor, ``let``, ``comment``, ...)."""
        return _aggregate(
            self,
            self._name,
            1,
            pipeline,
            session,
            read_preference=read_preference,
            timeout_ms=timeout_ms,
            options=_command_fields(kwargs),
        )

    def create_collection(  # noqa: PLR0917 - positional as pymongo's
        self,
        name: str,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
        session: Optional[ClientSession] = None,
        check_exists: Optional[bool] = True,
        **kwargs: Any,
    ) -> Collection:
        """Create a collection (the create command, never retried) and return it.

        ``codec_options``, ``read_preference``, ``write_concern`` and ``read_concern``
        are the returned Collection's options (never sent). With ``check_exists`` (the
        default) a collection of that name that exists already raises
        CollectionInvalid, checked with listCollections outside a transaction, as
        pymongo does. ``kwargs`` are the create command's options (``capped=True``,
        ``size=...``, ``validator={...}``, ``collation=...``, ``timeseries={...}``,
        ...). Queryable encryption's ``encryptedFields`` is not supported.
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        _check_collection_name(name)
        if kwargs.get("encryptedFields") or kwargs.get("encrypted_fields"):
            raise ConfigurationError(
                "encryptedFields (queryable encryption) is not supported by mongocore"
            )
        collection = Collection(
            self, name, False, codec_options, read_preference, write_concern, read_concern
        )
        in_transaction = session is not None and session.in_transaction
        # listCollections cannot run in a transaction: the check is skipped there.
        if (
            check_exists
            and not in_transaction
            and name in self.list_collection_names(session, {"name": name})
        ):
            raise CollectionInvalid(f"collection {name} already exists")
        collection._create(kwargs, session)
        return collection

    def drop_collection(
        self,
        name_or_collection: Union[str, Collection],
        session: Optional[ClientSession] = None,
        comment: Any = None,
        encrypted_fields: Optional[Mapping[str, Any]] = None,
    ) -> Document:
        """Drop a collection, given by name or as a Collection, and return the server's
        reply; a missing collection is not an error (its reply is returned as well).
        ``encrypted_fields`` (queryable encryption) is not supported."""
        name = (
            name_or_collection.name
            if isinstance(name_or_collection, Collection)
            else (name_or_collection)
        )
        if not isinstance(name, str):
            raise TypeError(
                f"name_or_collection must be a string or a Collection, not {type(name).__name__}"
            )
        if encrypted_fields is not None:
            raise ConfigurationError(
                "encrypted_fields (queryable encryption) is not supported by mongocore"
            )
        body: Document = {"drop": name}
        if comment is not None:
            body["comment"] = comment
        write_concern = self._write_concern
        if not write_concern.is_server_default and not (session and session.in_transaction):
            body["writeConcern"] = write_concern.document
        try:
            reply: Document = self._client.command(
                self._name,
                body,
                None,
                session=session,
                timeout_ms=self._timeout_ms,
                operation_name="dropCollection",
            )
        except OperationFailure as exc:
            if exc.code != _NAMESPACE_NOT_FOUND and exc.details.get("errmsg") != "ns not found":
                raise
            return dict(exc.details)
        _raise_write_concern_error(reply)
        return reply

    def validate_collection(  # noqa: PLR0917 - positional as pymongo's
        self,
        name_or_collection: Union[str, Collection],
        scandata: bool = False,
        full: bool = False,
        session: Optional[ClientSession] = None,
        background: Optional[bool] = None,
        comment: Any = None,
    ) -> Document:
        """Validate a collection (the validate command); CollectionInvalid if the server
        finds it invalid, else its reply."""
        name = (
            name_or_collection.name
            if isinstance(name_or_collection, Collection)
            else (name_or_collection)
        )
        if not isinstance(name, str):
            raise TypeError(
                f"name_or_collection must be a string or a Collection, not {type(name).__name__}"
            )
        body: Document = {"validate": name, "scandata": scandata, "full": full}
        if comment is not None:
            body["comment"] = comment
        if background is not None:
            body["background"] = background
        reply: Document = self.command(body, session=session)
        if not _validation_passed(reply, name):
            raise CollectionInvalid(f"{name} invalid: {reply!r}")
        return reply

    def dereference(
        self,
        dbref: DBRef,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Optional[Document]:
        """The document a :class:`~bson.dbref.DBRef` points to (a find_one in its
        collection), or None. ValueError if it names another database; ``kwargs``
        are find_one's."""
        if not isinstance(dbref, DBRef):
            raise TypeError(f"cannot dereference a {type(dbref).__name__}")
        if dbref.database is not None and dbref.database != self._name:
            raise ValueError(
                "trying to dereference a DBRef that points to another database"
                f" ({dbref.database!r} not {self._name!r})"
            )
        return self[dbref.collection].find_one(
            {"_id": dbref.id}, session=session, comment=comment, **kwargs
        )

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


def _allowed(
    error: OperationFailure, check: bool, allowable_errors: Optional[Container[Union[str, int]]]
) -> bool:
    """Whether ``command(check, allowable_errors)`` returns the reply of this error: with
    ``check`` off, any command error; else one whose code (or, when the reply has no
    code, its message) is allowed. Only a reply's own error counts, never an error
    mongocore raised without one."""
    if not error.details or "ok" not in error.details:
        return False
    if not check:
        return True
    if not allowable_errors:
        return False
    if error.code is not None:
        return error.code in allowable_errors
    return error.details.get("errmsg") in allowable_errors


def _validation_passed(reply: Mapping[str, Any], name: str) -> bool:
    """What validate's reply says, in any of its shapes: an old server's ``result``
    text, a sharded cluster's ``raw`` per shard, or ``valid``."""
    if "result" in reply:
        info = str(reply["result"])
        if "exception" in info or "corrupt" in info:
            raise CollectionInvalid(f"{name} invalid: {info}")
        return True
    raw = reply.get("raw")
    if isinstance(raw, Mapping):
        for shard in raw.values():
            if "result" in shard:
                info = str(shard["result"])
                if "exception" in info or "corrupt" in info:
                    raise CollectionInvalid(f"{name} invalid: {info}")
            elif not shard.get("valid", False):
                return False
        return True
    return bool(reply.get("valid", False))
