"""What a Database and a Collection share: the client, codec options, read
preference and concerns, and how they run an operation through the executor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Optional

import bson

from mongocore.api.client_session import ClientSession, bound_session
from mongocore.core import codec
from mongocore.core.codec import AnyCodecOptions
from mongocore.core.retry_policy import RetryKind
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import (
    ConfigurationError,
)
from mongocore.io.operation import (
    AttemptContext,
    Command,
    CommandOutcome,
    Operation,
    checked_timeout_ms,
    new_operation,
)
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongocore.api.client import Client
    from mongocore.api.collection import Collection

_dict_to_bson = bson._dict_to_bson

# Bound once: an enum member read from its class costs more (EnumType.__getattr__).
_READ, _NONE = RetryKind.READ, RetryKind.NONE

# --- the shared machinery --------------------------------------------------------------


def _check_timeout_ms(given: Optional[float], inherited: Optional[float]) -> Optional[float]:
    """The timeoutMS of a database or collection made with ``timeout_ms=given``: that
    value, checked, or the level above's when None (an unset one cannot unset it)."""
    return inherited if given is None else checked_timeout_ms(given)


class _Target:
    """What Database and Collection share: the client, options, running operations."""

    _client: Client
    _read_preference: ReadPreference
    _write_concern: WriteConcern
    _read_concern: ReadConcern
    _codec_options: AnyCodecOptions
    #: The codec options when they differ from the defaults, else None: documents are
    #: then re-encoded and re-decoded (mongocore.core.codec); None keeps the plain path.
    _decoding: Optional[AnyCodecOptions]
    #: timeoutMS of this database or collection (Client Side Operations Timeout,
    #: "timeoutMS": configurable at every level): an operation's own wins; None: the
    #: level above's, down to the client's.
    _timeout_ms: Optional[float] = None

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

    def _cursor_collection(self) -> Collection:
        """The collection a command cursor of this target reads, as pymongo keeps it
        (``CommandCursor._collection``): a Collection itself; a Database's ``$cmd``."""
        raise NotImplementedError

    def _encode(self, document: Mapping[str, Any]) -> bytes:
        """A document as BSON, with this target's codec options."""
        # bson.encode() minus its check that these are CodecOptions (they always are):
        # every insert encodes its documents here.
        return _dict_to_bson(document, False, self._codec_options)

    def _session(self, session: Optional[ClientSession]) -> ClientSession:
        if session is None:
            # The session bound by ClientSession.bind() is passed as if given.
            session = bound_session(self._client)
            if session is None:
                return ClientSession(self._client, None, True)  # implicit
        session._check_usable(self._client)
        return session

    def _write_session(
        self, session: Optional[ClientSession], write_concern: WriteConcern
    ) -> ClientSession:
        if session is None:  # what _session does, one call less for every write
            session = bound_session(self._client)
            if session is None:
                return ClientSession(self._client, None, True)  # implicit
        # In a transaction the commit's write concern applies, never the target's.
        if not write_concern.acknowledged and not session.in_transaction:
            raise ConfigurationError(
                "explicit sessions are incompatible with an unacknowledged write concern"
                " (w=0): an unacknowledged write never carries a session id"
            )
        return self._session(session)

    def _run(self, op: Operation) -> CommandOutcome:
        if op.timeout_ms is None:
            op.timeout_ms = self._timeout_ms
        options = self._decoding
        if options is not None:
            op.build = _encoding_with(op.build, options)
        client = self._client
        # The client's executor, without its property's call once it exists.
        executor = client._executor_instance
        if executor is None:
            executor = client._executor
        return executor.run(op)

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
        opens_cursor: bool = False,
        operation_name: Optional[str] = None,
    ) -> CommandOutcome:
        op = new_operation(
            name=name,
            database=database,
            build=build,
            session=session,
            retry=_READ if retryable else _NONE,
            read_preference=read_preference or self._read_preference,
            read_concern=self._read_concern.document if read_concern else None,
            timeout_ms=timeout_ms,
            explicit_read_preference=read_preference is not None,
            opens_cursor=opens_cursor,
            operation_name=operation_name,
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
