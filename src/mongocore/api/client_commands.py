"""The client's commands: the generic command method and the database helpers.

Seeds: server-selection.rst, "Use of read preferences with commands": the generic
command method (:meth:`ClientCommands.command`) takes its read preference as an
argument and otherwise reads from the primary, ignoring the client's default; the
"should-use-primary" helpers (listDatabases) read from the primary. Retryable reads
(retryable-reads.rst 1.3.0, "Supported Read Operations": listDatabases is one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from mongocore.core.retry_policy import RetryKind, is_acknowledged
from mongocore.core.selection.read_preference import PRIMARY, Mode, ReadPreference
from mongocore.errors import write_concern_error_from_reply

if TYPE_CHECKING:
    from mongocore.api.client import Client
    from mongocore.api.client_session import ClientSession
    from mongocore.api.command_cursor import CommandCursor
    from mongocore.api.database import Database
    from mongocore.core.codec import AnyCodecOptions
    from mongocore.io.executor import Executor
    from mongocore.io.operation import AttemptContext, Command
    from mongocore.write_concern import WriteConcern

__all__ = ["ClientCommands"]

_new_tuple = tuple.__new__
# Bound once: an enum member read from its class goes through EnumType.__getattr__.
_NONE = RetryKind.NONE

#: ClientSession, Command, new_operation, bound_session: sessions and operations load with the first
#: operation, not with the client (nor on every command: an import statement costs).
_OPERATION_TYPES: list[Any] = []


def _operation_types() -> list[Any]:
    from mongocore.api.client_session import (  # noqa: PLC0415 - see above
        ClientSession,
        bound_session,
    )
    from mongocore.io.operation import Command, new_operation  # noqa: PLC0415 - see above

    if not _OPERATION_TYPES:
        _OPERATION_TYPES.extend((ClientSession, Command, new_operation, bound_session))
    return _OPERATION_TYPES


class ClientCommands:
    """The commands of :class:`~mongocore.api.client.Client` (a mixin: the Client
    provides what is declared here)."""

    _codec_options: AnyCodecOptions
    _write_concern: WriteConcern
    _closed: bool
    _executor_instance: Optional[Executor]

    @property
    def _executor(self) -> Executor:
        raise NotImplementedError

    def _check_open(self) -> None:
        raise NotImplementedError

    def __getitem__(self, name: str) -> Database[Any]:
        raise NotImplementedError

    def list_databases(
        self,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """The databases of the deployment (listDatabases; a retryable read).

        ``kwargs`` are the command's fields as pymongo takes them (``filter={...}``,
        ``nameOnly=True``, ``authorizedDatabases=True``) or in snake_case. A
        "should-use-primary" helper (server selection, "Use of read preferences with
        commands"): it reads from the primary and takes no read preference."""
        self._check_open()
        # Sessions and operations load with the first operation, not with the client.
        from mongocore.api.arguments import _command_fields  # noqa: PLC0415 - see above
        from mongocore.api.client_session import ClientSession, bound_session  # noqa: PLC0415 - see above
        from mongocore.io.operation import Command, new_operation  # noqa: PLC0415 - see above

        fields = _command_fields(kwargs)
        if "filter" in fields:
            fields["filter"] = dict(fields["filter"])
        if comment is not None:
            fields["comment"] = comment
        if session is None:
            session = bound_session(cast("Client", self))
        owned = session is None
        # An implicit session (ClientSession's third argument) unless one is given.
        use = ClientSession(cast("Client", self), None, True) if session is None else session

        def build(ctx: AttemptContext) -> Command:
            return Command({"listDatabases": 1, **fields})

        op = new_operation(
            name="listDatabases",
            database="admin",
            build=build,
            session=use,
            retry=RetryKind.READ,
            read_preference=ReadPreference(Mode.PRIMARY),
            timeout_ms=timeout_ms,
        )
        try:
            outcome = self._executor.run(op)
        finally:
            if owned:
                use.end_session()
        databases = [dict(d) for d in outcome.reply.get("databases", [])]
        from mongocore.api.command_cursor import CommandCursor  # noqa: PLC0415

        return CommandCursor(
            cast("Client", self), outcome.address, databases, codec_options=self._codec_options
        )

    def list_database_names(
        self, session: Optional[ClientSession] = None, comment: Any = None
    ) -> list[str]:
        """The names of the deployment's databases (listDatabases with nameOnly)."""
        with self.list_databases(session, comment, nameOnly=True) as cursor:
            return [str(d["name"]) for d in cursor]

    def drop_database(
        self,
        name_or_database: Union[str, Database],
        session: Optional[ClientSession] = None,
        comment: Any = None,
    ) -> None:
        """Drop a database, given by name or as a Database (dropDatabase, never
        retried)."""
        from mongocore.api.database import Database, _check_name  # noqa: PLC0415

        name = (
            name_or_database.name if isinstance(name_or_database, Database) else (name_or_database)
        )
        if not isinstance(name, str):
            raise TypeError(
                f"name_or_database must be a string or a Database, not {type(name).__name__}"
            )
        if name != "$external":
            _check_name(name)
        command: dict[str, Any] = {"dropDatabase": 1}
        if comment is not None:
            command["comment"] = comment
        if not self._write_concern.is_server_default and not (
            session is not None and session.in_transaction
        ):
            command["writeConcern"] = self._write_concern.document
        reply = self.command(name, command, session=session)
        error = write_concern_error_from_reply(reply)
        if error is not None:
            raise error

    def server_info(self, session: Optional[ClientSession] = None) -> dict[str, Any]:
        """The server's buildInfo (version, versionArray, gitVersion, ...), from the
        primary, as pymongo's ``server_info()``."""
        return self.command(
            "admin", {"buildinfo": 1}, ReadPreference(Mode.PRIMARY), session=session
        )

    def command(
        self,
        database: str,
        document: Mapping[str, Any],
        read_preference: Optional[ReadPreference] = None,
        *,
        session: Optional[ClientSession] = None,
        timeout_ms: Optional[float] = None,
        operation_name: Optional[str] = None,
    ) -> dict[str, Any]:
        """Run one command, as the generic command method: never retried.

        Server selection treats it as a read with read preference primary unless one
        is given here; the client's default read preference is ignored, as the seed
        requires. The document is sent as it is, plus the session id and cluster
        time (the caller's document is not changed); no transaction number is ever
        added. An ``ok: 0`` reply raises OperationFailure; a reply carrying a
        writeConcernError is returned as it is, after SDAM has looked at it.

        ``operation_name`` is what server selection's log messages call the operation
        (by default the command's name): :meth:`Database.command
        <mongocore.api.database.Database.command>` gives ``runCommand``, the
        collection helpers their own names (``createCollection``, ...).
        """
        if self._closed:
            self._check_open()  # raises
        # One immutable instance for every command (selection caches per description).
        rp = read_preference if read_preference is not None else PRIMARY
        session_class, command_class, make_operation, bound_session = (
            _OPERATION_TYPES or _operation_types()
        )

        if session is None:
            session = bound_session(self)
        owned = session is None
        # An implicit session (ClientSession's third argument) unless one is given. (self
        # is the Client this mixin is part of.)
        use: ClientSession = session_class(self, None, True) if session is None else session

        def build(ctx: AttemptContext) -> Command:
            # Command(body) without the NamedTuple's generated __new__ (a Python call).
            return _new_tuple(command_class, (dict(document), None, None))  # type: ignore[no-any-return]

        name = next(iter(document), "command")
        write_concern = document.get("writeConcern")
        op = make_operation(
            name=str(name),
            database=database,
            build=build,
            session=use,
            retry=_NONE,
            read_preference=rp,
            # An unacknowledged command never carries a session id.
            acknowledged=write_concern is None
            or not isinstance(write_concern, Mapping)
            or is_acknowledged(write_concern),
            timeout_ms=timeout_ms,
            # Given here, it stands in a transaction (else the transaction's applies).
            explicit_read_preference=read_preference is not None,
            operation_name=operation_name,
        )
        # The client's executor, without its property's call once it exists.
        executor = self._executor_instance
        if executor is None:
            executor = self._executor
        try:
            return executor.run(op).reply
        finally:
            if owned:
                use.end_session()
