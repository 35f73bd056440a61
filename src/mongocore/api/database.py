"""Database: collections by name, commands, and the enumeration commands.

Spec: CRUD and "Enumerating Collections".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from mongocore.api.arguments import _options
from mongocore.api.client_session import ClientSession
from mongocore.api.collection import Collection
from mongocore.api.command_cursor import (
    CommandCursor,
    _aggregate,
    _command_namespace,
    _cursor_options,
    _run_cursor_command,
)
from mongocore.api.cursor_base import _NAMESPACE_NOT_FOUND
from mongocore.api.target import _Target
from mongocore.api.types import Document, Filter
from mongocore.api.watch import DatabaseWatch
from mongocore.core import codec
from mongocore.core.codec import AnyCodecOptions
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import (
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


class Database(_Target, DatabaseWatch):
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

    def __getitem__(self, name: str) -> Collection:
        return Collection(self, name)

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(
                f"Database has no attribute {name!r}. To reach the collection {name!r},"
                f" use database[{name!r}]."
            )
        collection = Collection(self, name)
        # The next ``database.name`` finds it without this call (a Collection is
        # immutable; the names written as attributes are the program's own, a bounded set).
        self.__dict__[name] = collection
        return collection

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
            operation_name="runCommand",
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
        self._client.command(
            self._name, body, None, session=session, operation_name="createCollection"
        )
        return self[name]

    def drop_collection(
        self, name: str, session: Optional[ClientSession] = None, **options: Any
    ) -> None:
        """Drop a collection; a missing collection is not an error."""
        body: Document = {"drop": name, **options}
        if not self._write_concern.is_server_default:
            body["writeConcern"] = self._write_concern.document
        try:
            self._client.command(
                self._name, body, None, session=session, operation_name="dropCollection"
            )
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
