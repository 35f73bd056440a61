"""The retry executor: the I/O loop that carries out the retry policy.

It selects servers, checks out connections, builds each attempt's command afresh,
runs it with command events, hands errors to SDAM, and asks the policy of
:mod:`mongocore.core.retry_policy` what to do next (seeds: retryable-writes.rst 1.0
"Executing Retryable Write Commands", retryable-reads.rst 1.3.0 "Executing Retryable
Read Commands").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Union

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.retry_policy import (
    READ_RETRY_BACKOFF,
    RETRYABLE_WIRE_VERSION,
    RETRYABLE_WRITE_ERROR,
    ReadPolicy,
    RetryKind,
    RetryPolicy,
    SingleAttemptPolicy,
    WritePolicy,
    is_retryable_write_error,
    needs_retryable_write_label,
    supports_retryable_reads,
    supports_retryable_writes,
)
from mongocore.core.selection.read_preference import (
    Mode,
    ReadPreference,
    read_preference_for_server,
)
from mongocore.errors import (
    ConfigurationError,
    MongoCoreError,
    NetworkError,
    OperationFailure,
    PoolClearedError,
    ServerSelectionError,
    write_concern_error_from_reply,
)
from mongocore.io.command_monitoring import next_operation_id, run_command
from mongocore.io.sessions import ClusterClock, newer_cluster_time

if TYPE_CHECKING:
    from types import EllipsisType

    from mongocore.api.client import Client
    from mongocore.api.client_session import ClientSession
    from mongocore.io.connection import Connection
    from mongocore.io.topology import Server


# --- the executor (I/O) ------------------------------------------------------------------


_log = logging.getLogger("mongocore.retry")


@dataclass(frozen=True)
class AttemptContext:
    """What an operation's command builder may look at for one attempt."""

    server: ServerDescription
    topology_type: TopologyType
    max_wire_version: int
    connection: Connection
    session: ClientSession
    attempt: int


class Command(NamedTuple):
    """One attempt's command: the body, and OP_MSG document sequences.

    ``sequences`` go on the wire (documents, or their BSON bytes); ``event_sequences``
    are the same documents decoded, for command events, when ``sequences`` hold bytes.
    """

    body: dict[str, Any]
    sequences: Optional[Mapping[str, Sequence[Any]]] = None
    event_sequences: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None


CommandBuilder = Callable[[AttemptContext], Command]


@dataclass
class Operation:
    """An operation for the executor: one command, rebuilt for each attempt.

    ``read_preference`` None selects a writable server. ``read_concern`` (a
    readConcern document, possibly empty) is sent by commands that take one, with
    ``afterClusterTime`` added in a causally consistent session. ``address`` pins
    the operation to one server (getMore, killCursors: no selection, one attempt).
    ``timeout_ms`` bounds the whole operation, retries included.
    """

    name: str
    database: str
    build: CommandBuilder
    session: ClientSession
    retry: RetryKind = RetryKind.NONE
    read_preference: Optional[ReadPreference] = None
    read_concern: Optional[Mapping[str, Any]] = None
    acknowledged: bool = True
    timeout_ms: Optional[float] = None
    address: Optional[Address] = None
    operation_id: Optional[int] = None
    #: Filled in by the executor: the attempts made (commands sent or tried).
    attempts: int = field(default=0)


class CommandOutcome(NamedTuple):
    """A successful command: its reply, and where it ran (cursors continue there)."""

    reply: dict[str, Any]
    address: Address
    server: ServerDescription
    operation_id: int


def apply_read_preference(
    command: dict[str, Any],
    read_preference: ReadPreference,
    topology_type: TopologyType,
    server: ServerDescription,
) -> None:
    """Express the read preference in an OP_MSG command (server selection seed, "Use of
    read preferences with commands", "Passing read preference to mongos"), by the
    newer spec's OP_MSG rules where OP_MSG leaves the seed's OP_QUERY rules no way:

    - OP_MSG has no secondaryOk bit. A mongos or load balancer gets ``$readPreference``
      for every mode but primary, secondaryPreferred without tags nor
      maxStalenessSeconds included (the seed's OP_QUERY rule expresses that one with
      the bit alone);
    - a replica set member gets the read preference document for every mode but
      primary, and nothing for primary;
    - a member reached directly (Single topology) gets ``{mode: primaryPreferred}``
      for primary, else the document, so that it serves the read whatever its state;
    - a Standalone gets nothing: it serves every read.
    """
    if "$readPreference" in command:
        return
    needed = read_preference_for_server(read_preference, topology_type, server.type)
    if needed.document is not None:
        command["$readPreference"] = needed.document
    elif needed.secondary_ok:
        if read_preference.mode is Mode.PRIMARY:
            # A direct connection reads from any member (Topology type: Single).
            command["$readPreference"] = {"mode": "primaryPreferred"}
        else:
            command["$readPreference"] = read_preference.document()


#: Commands that take a readConcern (what the read operations send).
_READ_CONCERN_COMMANDS = frozenset({"find", "aggregate", "distinct", "count"})


# The executor's code, from here to the end of the module, is I/O: mutation testing
# covers the pure policy above (docs/spec-compliance.md, "Mutation testing").
# pragma: no mutate block
def _policy_for(
    operation: Operation, retry_reads: bool, retry_writes: bool, socket_timeout_ms_set: bool
) -> RetryPolicy:
    in_transaction = operation.session.in_transaction
    if operation.address is not None or operation.retry is RetryKind.NONE:
        return SingleAttemptPolicy()
    if operation.retry is RetryKind.READ:
        return ReadPolicy(
            retry_reads,
            in_transaction,
            count_socket_timeouts=socket_timeout_ms_set,
        )
    return WritePolicy(retry_writes and operation.acknowledged and not in_transaction)


class Executor:
    """Runs operations for one client: selection, checkout, command, SDAM, retries."""

    def __init__(self, client: Client, cluster_clock: ClusterClock) -> None:
        self._client = client
        self._topology = client.topology
        self._publisher = client._publisher
        options = client.options
        self._retry_reads = options.retry_reads
        self._retry_writes = options.retry_writes
        self._socket_timeout = (
            options.socket_timeout_ms / 1000.0 if options.socket_timeout_ms else None
        )
        self._default_timeout_ms = options.timeout_ms
        self._server_selection_timeout = options.server_selection_timeout_ms / 1000.0
        self._clock = cluster_clock
        #: Set by Client.close(): a read backing off between retries stops waiting.
        self.closing = threading.Event()

    # --- the loop ----------------------------------------------------------------------

    def run(self, op: Operation) -> CommandOutcome:
        """Run ``op`` to its end: its reply, or the error the retry rules choose."""
        self._client._check_open()
        op.session._check_usable(self._client)
        timeout_ms = op.timeout_ms if op.timeout_ms is not None else self._default_timeout_ms
        policy = _policy_for(
            op,
            self._retry_reads,
            self._retry_writes,
            self._socket_timeout is not None and timeout_ms is None,
        )
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms else None
        operation_id = op.operation_id if op.operation_id is not None else next_operation_id()
        txn_number: Optional[Any] = None
        failed_at: Optional[Address] = None
        retries = 0
        retry_until: Optional[float] = None
        while True:
            # Errors are raised outside the except clauses: the error the policy chooses
            # may be an earlier one, which the later error must not be chained to.
            selection_error: Optional[MongoCoreError] = None
            try:
                server, sd = self._select(op, failed_at, deadline, operation_id)
            except MongoCoreError as exc:
                selection_error = exc
            if selection_error is not None:
                raise policy.selection_failed(selection_error)
            refusal = policy.server_selected(self._description_supports(op, sd))
            if refusal is not None:
                raise refusal
            pool = server.pool
            failure: Optional[MongoCoreError] = None
            expired = False
            try:
                connection: Connection = pool.check_out(_remaining(deadline))
            except MongoCoreError as exc:
                failure = exc
            if failure is not None:
                # The pool has already handed an establishment error to SDAM (its
                # on_establish_error), before publishing the connection's close.
                self._label(op, failure, sd.max_wire_version, sd.type is ServerType.MONGOS)
                op.attempts += 1
                outcome = policy.checkout_failed(failure)
            else:
                try:
                    refusal = policy.connection_ready(self._connection_supports(op, sd, connection))
                    if refusal is None:
                        if isinstance(policy, WritePolicy) and policy.adds_transaction_id:
                            if txn_number is None:
                                txn_number = op.session._next_txn_number()
                        else:
                            txn_number = None
                        op.attempts += 1
                        reply = self._attempt(
                            op,
                            sd=sd,
                            connection=connection,
                            operation_id=operation_id,
                            txn_number=txn_number,
                            deadline=deadline,
                        )
                        return CommandOutcome(reply, server.address, sd, operation_id)
                except _DeadlineExpired:
                    expired = True
                except MongoCoreError as exc:
                    self._after_failure(op, server, sd, connection, exc)
                    failure = exc
                except BaseException:
                    # Interrupted mid-command: the server may still be running it.
                    if connection.closed:
                        op.session._mark_dirty()
                    raise
                finally:
                    pool.check_in(connection)
                if expired:
                    raise policy.expired()
                if failure is None:
                    assert refusal is not None
                    raise refusal
                outcome = policy.attempt_failed(failure)
            if outcome is not None:
                raise outcome
            failed_at = server.address
            self._log_retry(op, failure)
            if _expired(deadline):
                raise policy.expired(failure)
            retries += 1
            if isinstance(policy, ReadPolicy):
                # The reads seed's "as many times as necessary", within a bound.
                if deadline is None:
                    now = time.monotonic()
                    if retry_until is None:
                        retry_until = now + self._server_selection_timeout
                    elif now >= retry_until:
                        raise failure
                if retries >= 2:
                    first, cap = READ_RETRY_BACKOFF
                    if self.closing.wait(min(cap, first * 2 ** (retries - 2))):
                        raise failure

    # --- one attempt -------------------------------------------------------------------

    def _attempt(
        self,
        op: Operation,
        *,
        sd: ServerDescription,
        connection: Connection,
        operation_id: int,
        txn_number: Optional[Any],
        deadline: Optional[float],
    ) -> dict[str, Any]:
        session = op.session
        topology_type = self._topology.description.type
        context = AttemptContext(
            sd, topology_type, connection.max_wire_version, connection, session, op.attempts
        )
        command = op.build(context)
        body = command.body
        if op.acknowledged and "lsid" not in body:
            if _connection_supports_sessions(connection):
                body["lsid"] = session._use_lsid()
                if txn_number is not None:
                    body["txnNumber"] = txn_number
            elif not session.implicit:
                raise ConfigurationError(
                    f"the server {connection.address} does not support sessions"
                    " (no logicalSessionTimeoutMinutes in its hello reply); run the"
                    " operation without session="
                )
        if op.read_concern is not None and next(iter(body)) in _READ_CONCERN_COMMANDS:
            read_concern = dict(op.read_concern)
            if session.causal_consistency and session.operation_time is not None:
                read_concern["afterClusterTime"] = session.operation_time
            if read_concern and "readConcern" not in body:
                body["readConcern"] = read_concern
        if connection.max_wire_version >= RETRYABLE_WIRE_VERSION and "$clusterTime" not in body:
            cluster_time = newer_cluster_time(self._clock.value, session.cluster_time)
            if cluster_time is not None:
                body["$clusterTime"] = cluster_time
        if op.read_preference is not None:
            apply_read_preference(body, op.read_preference, topology_type, sd)
        timeout: Union[float, EllipsisType, None] = ...
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 and op.attempts > 1:
                # timeoutMS ran out before this retry was sent: the last error stands.
                raise _DeadlineExpired
            remaining = max(0.0, remaining)
            timeout = (
                remaining if self._socket_timeout is None else min(remaining, self._socket_timeout)
            )
        reply = run_command(
            connection,
            op.database,
            body,
            self._publisher,
            operation_id=operation_id,
            sequences=command.sequences,
            event_sequences=command.event_sequences,
            timeout=timeout,
            # timeoutMS ends the reading of the reply too, not only the wait for a byte.
            deadline=deadline,
        )
        self._gossip(session, reply)
        error = write_concern_error_from_reply(reply)
        if error is not None:
            self._topology.handle_connection_error(connection, error)
            if txn_number is not None:
                self._label(op, error, connection.max_wire_version, sd.type is ServerType.MONGOS)
                if is_retryable_write_error(error):
                    # Retry it like any retryable error; if retrying is not possible the
                    # caller sees this error rather than a reply.
                    raise error
        return reply

    def _after_failure(
        self,
        op: Operation,
        server: Server,
        sd: ServerDescription,
        connection: Connection,
        error: MongoCoreError,
    ) -> None:
        """SDAM, the session, cluster time and labels, after an attempt failed."""
        if isinstance(error, OperationFailure):
            self._gossip(op.session, error.details)
        if isinstance(error, NetworkError):
            op.session._mark_dirty()
        if isinstance(error, (NetworkError, OperationFailure)):
            self._topology.handle_connection_error(connection, error)
        self._label(op, error, connection.max_wire_version, sd.type is ServerType.MONGOS)

    # --- helpers -------------------------------------------------------------------------

    def _select(
        self,
        op: Operation,
        failed_at: Optional[Address],
        deadline: Optional[float],
        operation_id: int,
    ) -> tuple[Server, ServerDescription]:
        topology = self._topology
        if op.address is not None:
            server = topology.get_server(op.address)
            sd = topology.description.servers.get(op.address)
            if server is None or sd is None:
                raise ServerSelectionError(
                    f"the server {op.address} this operation must run on (where its cursor"
                    " lives) is no longer part of the topology"
                )
            return server, sd
        deprioritized: tuple[Address, ...] = ()
        if failed_at is not None and topology.description.type is TopologyType.SHARDED:
            deprioritized = (failed_at,)
        timeout = None
        if deadline is not None:
            limit = topology.settings.server_selection_timeout_ms / 1000.0
            timeout = max(0.0, min(limit, deadline - time.monotonic()))
        # The operation's name and id appear in the selection's log messages.
        return topology.select_server(
            op.read_preference,
            deprioritized=deprioritized,
            timeout=timeout,
            operation=op.name,
            operation_id=operation_id,
        )

    def _description_supports(self, op: Operation, sd: ServerDescription) -> Optional[bool]:
        if op.retry is RetryKind.WRITE and sd.type is not ServerType.LOAD_BALANCER:
            return supports_retryable_writes(
                sd.type, sd.max_wire_version, sd.logical_session_timeout_minutes
            )
        return None

    def _connection_supports(
        self, op: Operation, sd: ServerDescription, connection: Connection
    ) -> bool:
        if op.retry is RetryKind.READ:
            return supports_retryable_reads(connection.max_wire_version)
        if op.retry is RetryKind.WRITE:
            if not _connection_supports_sessions(connection):
                return False
            if sd.type is ServerType.LOAD_BALANCER:
                return connection.max_wire_version >= RETRYABLE_WIRE_VERSION
            return supports_retryable_writes(
                sd.type, sd.max_wire_version, sd.logical_session_timeout_minutes
            )
        return False

    def _label(
        self, op: Operation, error: BaseException, max_wire_version: int, is_mongos: bool
    ) -> None:
        """RetryableWriteError belongs to errors of clients with retryWrites on only."""
        if not isinstance(error, MongoCoreError) or op.session.in_transaction:
            return
        if not self._retry_writes:
            if isinstance(error, PoolClearedError):
                error.remove_error_label(RETRYABLE_WRITE_ERROR)
            return
        if needs_retryable_write_label(
            error, max_wire_version=max_wire_version, is_mongos=is_mongos
        ):
            error.add_error_label(RETRYABLE_WRITE_ERROR)

    def _gossip(self, session: ClientSession, reply: Mapping[str, Any]) -> None:
        self._clock.advance(reply.get("$clusterTime"))
        session._process_reply(reply)

    @staticmethod
    def _log_retry(op: Operation, error: BaseException) -> None:
        _log.debug("retrying %s (attempt %d failed: %s)", op.name, op.attempts, error)


class _DeadlineExpired(Exception):
    """timeoutMS expired between two attempts, before the next one was sent."""


def _connection_supports_sessions(connection: Connection) -> bool:
    """ "How to Tell Whether a Connection Supports Sessions": its handshake reply has a
    logicalSessionTimeoutMinutes."""
    return (
        connection.max_wire_version >= RETRYABLE_WIRE_VERSION
        and connection.hello.get("logicalSessionTimeoutMinutes") is not None
    )


def _remaining(deadline: Optional[float]) -> Optional[float]:
    if deadline is None:
        return None
    return max(0.0, deadline - time.monotonic())


def _expired(deadline: Optional[float]) -> bool:
    return deadline is not None and time.monotonic() >= deadline
