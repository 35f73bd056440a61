"""CommandCursor: a cursor over a command's reply (aggregate, listCollections, ...)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Generic, Optional, Union

from mongocore.api.arguments import _collation_document, _command_fields, _options
from mongocore.api.client_session import ClientSession
from mongocore.api.cursor_base import _NAMESPACE_NOT_FOUND, _CursorBase
from mongocore.api.target import _Target
from mongocore.api.types import Document, _DocumentType
from mongocore.core import codec
from mongocore.core.address import Address
from mongocore.core.codec import AnyCodecOptions
from mongocore.core.description.types import NO_WIRE_VERSIONS
from mongocore.core.retry_policy import RetryKind
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import ConfigurationError, OperationFailure
from mongocore.io.operation import AttemptContext, Command, CommandOutcome, new_operation

if TYPE_CHECKING:
    from mongocore.api.client import Client
    from mongocore.api.collection import Collection
    from mongocore.api.database import Database


def _cursor_options(batch_size: Optional[int]) -> Document:
    return {} if batch_size is None else {"batchSize": int(batch_size)}


def _aggregate_options(
    kwargs: Mapping[str, Any], let: Optional[Mapping[str, Any]], comment: Any
) -> Document:
    """The fields of an aggregate that ``aggregate(pipeline, session, let, comment,
    **kwargs)`` gives (kwargs in pymongo's spelling or snake_case)."""
    fields = _command_fields(kwargs)
    if let is not None:
        if not isinstance(let, Mapping):
            raise TypeError(f"let must be a mapping (a dict), not {type(let).__name__}")
        fields["let"] = dict(let)
    if comment is not None:
        fields["comment"] = comment
    return fields


def _aggregate(
    target: Database[Any],
    database: str,
    aggregate: Union[str, int],
    pipeline: Sequence[Mapping[str, Any]],
    session: Optional[ClientSession],
    *,
    read_preference: Optional[ReadPreference],
    timeout_ms: Optional[float],
    options: Mapping[str, Any],
    collection: Optional[Collection] = None,
    operation_name: Optional[str] = None,
) -> CommandCursor:
    """Run an aggregate. ``options`` are its command fields (as _aggregate_options gives
    them), but for what pymongo takes apart as it does: ``batchSize`` is the cursor's
    (``cursor.batchSize`` and the getMores'), ``maxAwaitTimeMS`` the getMores'
    ``maxTimeMS``, and ``collation`` a document or a Collation."""
    if not isinstance(pipeline, (list, tuple)):
        raise TypeError(f"pipeline must be a list, not {type(pipeline).__name__}")
    fields = dict(options)
    if "explain" in fields:
        raise ConfigurationError(
            "The explain option is not supported. Use Database.command instead."
        )
    for reserved in ("aggregate", "pipeline"):
        if reserved in fields:
            raise ConfigurationError(
                f"The {reserved} option cannot be specified as a keyword argument."
            )
    batch_size = fields.pop("batchSize", None)
    if batch_size is not None and (
        not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 0
    ):
        raise ValueError(f"batchSize must be a non-negative int, not {batch_size!r}")
    max_await_time_ms = fields.pop("maxAwaitTimeMS", None)
    if "collation" in fields:
        fields["collation"] = _collation_document(fields["collation"])
    cursor_given = fields.pop("cursor", None)
    stages = [dict(stage) for stage in pipeline]
    writes = bool(stages) and any(key in stages[-1] for key in ("$out", "$merge"))
    scope: _Target = collection if collection is not None else target
    write_concern = scope.write_concern
    # A write stage runs on the primary, unless a non-primary read preference was asked
    # for and every known server is 5.0+ (wire version 13), which can run it elsewhere
    # (CRUD spec, "Aggregation pipelines with write stages").
    write_preference = _write_stage_read_preference(scope, read_preference) if writes else None
    if cursor_given is not None:
        cursor_document: Document = dict(cursor_given)
    else:
        # With $out or $merge the results are written, so no batch is asked for.
        cursor_document = {} if writes else _cursor_options(batch_size)

    def build(ctx: AttemptContext) -> Command:
        body: Document = {"aggregate": aggregate, "pipeline": stages}
        body["cursor"] = dict(cursor_document)
        body.update(fields)
        if writes and "writeConcern" not in body and not write_concern.is_server_default:
            body["writeConcern"] = write_concern.document
        return Command(body)

    cursor = _run_cursor_command(
        scope,
        database,
        "aggregate",
        build,
        session,
        read_preference=write_preference if writes else read_preference,
        timeout_ms=timeout_ms,
        batch_size=batch_size or None,
        retryable=not writes,
        read_concern=True,
        write=writes and write_preference is None,
        operation_name=operation_name,
    )
    # The comment also tags the cursor's getMores (MongoDB 4.4+ accepts it there), and
    # maxAwaitTimeMS is their maxTimeMS, as pymongo sends them.
    cursor._get_more_options = _options(comment=fields.get("comment"), maxTimeMS=max_await_time_ms)
    return cursor


#: The first wire version (MongoDB 5.0) whose secondaries run $out and $merge.
WRITE_STAGE_ON_SECONDARY_WIRE_VERSION = 13


def _write_stage_read_preference(
    scope: _Target, read_preference: Optional[ReadPreference]
) -> Optional[ReadPreference]:
    """The read preference an aggregate with $out or $merge is sent with: the one asked
    for when it is not primary and every known server is 5.0 or newer; otherwise None
    (the primary, as a write)."""
    preference = read_preference or scope.read_preference
    if preference.mode is Mode.PRIMARY:
        return None
    known = [
        server
        for server in scope._client.topology.description.servers.values()
        # Unknown, PossiblePrimary and load balancer descriptions carry no wire version.
        if server.type not in NO_WIRE_VERSIONS
    ]
    # Nothing known yet counts as new enough (as pymongo does): an older server found
    # later refuses the command rather than the driver guessing.
    if all(s.max_wire_version >= WRITE_STAGE_ON_SECONDARY_WIRE_VERSION for s in known):
        return preference
    return None


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
    operation_name: Optional[str] = None,
) -> CommandCursor:
    use = target._session(session)
    owned = use.implicit
    sent: list[Document] = []
    started = time.monotonic()

    def build_and_keep(ctx: AttemptContext) -> Command:
        command = build(ctx)
        sent[:] = [command.body]
        return command

    try:
        if write:
            op = new_operation(
                name=name,
                database=database,
                build=build_and_keep,
                session=use,
                retry=RetryKind.NONE,
                read_concern=target.read_concern.document if read_concern else None,
                timeout_ms=timeout_ms,
                opens_cursor=True,
                operation_name=operation_name,
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
                opens_cursor=True,
                operation_name=operation_name,
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
    body = sent[0] if sent else {}
    cursor = CommandCursor.from_reply(
        target._client,
        outcome,
        use if owned else None,
        use,
        batch_size,
        codec_options=target._decoding,
        namespace=_command_namespace(database, body),
    )
    cursor._scope = target
    comment = body.get("comment")
    if comment is not None:
        # The command's comment tags its cursor's getMores too, as pymongo's do.
        cursor._get_more_options = {"comment": comment}
    cursor._begin_lifetime(target._timeout_ms if timeout_ms is None else timeout_ms, started)
    return cursor


def _command_namespace(database: str, body: Mapping[str, Any]) -> tuple[str, str]:
    """The namespace a cursor-returning command names, for a reply without ``ns``:
    ``db.coll``, or ``db.$cmd.<command>`` for database-level commands."""
    for name, value in body.items():
        if isinstance(value, str):
            return database, value
        return database, f"$cmd.{name}"
    return database, ""


class CommandCursor(_CursorBase, Generic[_DocumentType]):
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
        #: The collection or database the command ran on (_run_cursor_command's target).
        self._scope: Optional[_Target] = None
        self._set_batch(first_batch)

    @property
    def _collection(self) -> Optional[Collection]:
        """The collection the cursor reads, as pymongo keeps it (libraries read its
        ``read_preference``): the aggregate's collection, or the database's ``$cmd``
        for a database-level command; None for a cursor of no command."""
        return None if self._scope is None else self._scope._cursor_collection()

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
    ) -> CommandCursor[Any]:
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

    def batch_size(self, batch_size: int) -> CommandCursor[_DocumentType]:
        """The number of documents each following getMore asks for (0: the server's)."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 0:
            raise ValueError("batch_size must be a non-negative int")
        self._batch_size = batch_size or None
        return self

    def __enter__(self) -> CommandCursor[_DocumentType]:
        return self
