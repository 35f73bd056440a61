"""The retry executor: the I/O loop that carries out the retry policy.

It selects servers, checks out connections, builds each attempt's command afresh,
runs it with command events, hands errors to SDAM, and asks the policy of
:mod:`mongocore.core.retry_policy` what to do next (seeds: retryable-writes.rst 1.0
"Executing Retryable Write Commands", retryable-reads.rst 1.3.0 "Executing Retryable
Read Commands"). What it runs (the operation, each attempt's command, the outcome) is
:mod:`mongocore.io.operation`; when a connection stays pinned behind a load balancer,
:mod:`mongocore.io.pinning`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.lazy_logger import get_logger
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
from mongocore.core.transaction_rules import (
    TransactionEndPolicy,
    label_transaction_error,
    unpins,
)
from mongocore.core.transaction_state import END_COMMANDS, Transaction
from mongocore.core.write_outcome import attempt_may_have_written
from mongocore.errors import (
    MAX_TIME_MS_EXPIRED,
    ConfigurationError,
    ExecutionTimeout,
    InvalidOperation,
    MongoCoreError,
    NetworkError,
    OperationFailure,
    PoolClearedError,
    ProtocolError,
    ServerSelectionError,
    write_concern_error_from_reply,
)
from mongocore.io import clock as _clock
from mongocore.io.command_monitoring import next_operation_id, run_command
from mongocore.io.connection_io import request_not_sent, unless_sent
from mongocore.io.operation import (
    AttemptContext,
    CommandOutcome,
    Operation,
    apply_read_preference,
    checked_timeout_ms,
)
from mongocore.io.pinning import (
    CURSOR,
    PinnedConnection,
    cursor_id_of,
    pin_cursor,
    pin_transaction,
)
from mongocore.io.sessions import ClusterClock, newer_cluster_time
from mongocore.io.transaction_commands import add_transaction_fields, prepare_operation

if TYPE_CHECKING:
    from types import EllipsisType

    from mongocore.api.client import Client
    from mongocore.api.client_session import ClientSession
    from mongocore.io.connection import Connection
    from mongocore.io.topology import Server


# --- the executor (I/O) ------------------------------------------------------------------


_log = get_logger("mongocore.retry")

# Enum members compared on every operation, bound once: on Python 3.11 an enum
# member read from its class is several times slower (EnumType.__getattr__).
_NONE, _READ, _WRITE = RetryKind.NONE, RetryKind.READ, RetryKind.WRITE
_MONGOS, _LOAD_BALANCER = ServerType.MONGOS, ServerType.LOAD_BALANCER
_SHARDED = TopologyType.SHARDED


#: Commands that take a readConcern (what the read operations send).
_READ_CONCERN_COMMANDS = frozenset({"find", "aggregate", "distinct", "count"})
#: Writes that carry afterClusterTime in a causally consistent session.
_CAUSAL_WRITE_COMMANDS = frozenset(
    {
        "insert",
        "update",
        "delete",
        "findAndModify",
        "bulkWrite",
        "create",
        "createIndexes",
        "drop",
        "dropDatabase",
        "dropIndexes",
    }
)


# The executor's code, from here to the end of the module, is I/O: mutation testing
# covers the pure policy above (docs/spec-compliance.md, "Mutation testing").
# pragma: no mutate block
def _policy_for(
    operation: Operation, retry_reads: bool, retry_writes: bool, socket_timeout_ms_set: bool
) -> RetryPolicy:
    session = operation.session
    in_transaction = session._transaction is not None and session.in_transaction
    if in_transaction and operation.retry is _WRITE and operation.name in END_COMMANDS:
        return TransactionEndPolicy()  # commit and abort: their own single retry
    if operation.address is not None or operation.retry is _NONE:
        return _SINGLE_ATTEMPT
    if operation.retry is _READ:
        # (Positional: a class called with a keyword argument packs it into a dict.)
        return ReadPolicy(retry_reads, socket_timeout_ms_set, in_transaction)
    if not (retry_writes and operation.acknowledged and not in_transaction):
        # A write that is never retried has one attempt and no transaction id: what
        # WritePolicy(False) would decide, without its checks (four calls a write).
        return _SINGLE_ATTEMPT
    return WritePolicy(True)


#: A NamedTuple built from a tuple of all its fields, skipping its __new__ (which is
#: Python code): for the tuples every operation builds.
_new_tuple = tuple.__new__

#: SingleAttemptPolicy keeps no state: one instance serves every operation.
_SINGLE_ATTEMPT = SingleAttemptPolicy()


class Executor:
    """Runs operations for one client: selection, checkout, command, SDAM, retries."""

    def __init__(self, client: Client[Any], cluster_clock: ClusterClock) -> None:
        self._client = client
        self._topology = client.topology
        self._publisher = client._publisher
        options = client.settings
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
        """Run ``op`` to its end: its reply, or the error the retry rules choose.

        The error of a retryable write operation (outside a transaction) says whether
        the write may have been applied (:mod:`mongocore.core.write_outcome`).
        """
        reports_write = (
            op.retry is _WRITE
            and not (op.session._transaction is not None and op.session.in_transaction)
            and op.name not in END_COMMANDS
        )
        try:
            return self._run(op)
        except MongoCoreError as exc:
            if reports_write:
                exc._set_write_outcome(op.may_have_written)
            raise
        finally:
            # A transaction unpinned by this operation (its error, or a command outside
            # it) gives its load-balanced connection back now.
            if op.session._pinned_connection is not None:
                op.session._sync_pinned_connection()

    def _run(self, op: Operation) -> CommandOutcome:
        client = self._client
        if client._closed:
            client._check_open()  # raises
        session = op.session
        if session._ended or session._client is not client:
            session._check_usable(client)  # raises
        transaction = None if session._transaction is None else session._transaction_for(op.name)
        if transaction is not None:
            prepare_operation(op, transaction)
        timeout_ms = op.timeout_ms
        if timeout_ms is None:
            timeout_ms = self._default_timeout_ms
        else:
            timeout_ms = checked_timeout_ms(timeout_ms)
        # (An operation of one attempt, the generic command or a getMore, has the
        # single-attempt policy whatever else holds: no call for it.)
        policy = (
            _SINGLE_ATTEMPT
            if op.retry is _NONE
            else _policy_for(
                op,
                self._retry_reads,
                self._retry_writes,
                self._socket_timeout is not None and timeout_ms is None,
            )
        )
        deadline = _clock.monotonic() + timeout_ms / 1000.0 if timeout_ms else None
        operation_id = op.operation_id if op.operation_id is not None else next_operation_id()
        if op.pinned is not None:
            return self._run_pinned(op, op.pinned, operation_id, deadline, transaction)
        txn_number: Optional[Any] = None
        failed_at: Optional[Address] = None
        retries = 0
        retry_until: Optional[float] = None
        while True:
            # Errors are raised outside the except clauses: the error the policy chooses
            # may be an earlier one, which the later error must not be chained to.
            selection_error: Optional[MongoCoreError] = None
            # Load-balanced mode: the connection of the session's transaction, if any.
            held = None if session._pinned_connection is None else session._sync_pinned_connection()
            try:
                server, sd = self._select(op, failed_at, deadline, operation_id, transaction)
            except MongoCoreError as exc:
                selection_error = exc
            if selection_error is not None:
                if transaction is not None:
                    self._label(op, selection_error, 0, False)
                raise policy.selection_failed(selection_error)
            if transaction is not None and sd.type is _MONGOS:
                transaction.pin(server.address)  # "Mongos Pinning"
            # A single attempt needs no support checks (its policy accepts any server).
            checks = type(policy) is not SingleAttemptPolicy
            described: Optional[bool] = None
            if checks:
                # Whether the description says the server supports retrying: for a
                # write, the seed's isRetryableWritesSupported (a load balancer's
                # connection tells); for a read, only its connection can tell.
                if op.retry is _WRITE and sd.type is not _LOAD_BALANCER:
                    described = supports_retryable_writes(
                        sd.type, sd.max_wire_version, sd.logical_session_timeout_minutes
                    )
                refusal = policy.server_selected(described)
                if refusal is not None:
                    raise refusal
            pool = server.pool
            failure: Optional[MongoCoreError] = None
            expired = False
            try:
                if held is not None:
                    connection: Connection = held.connection
                else:
                    connection = pool.check_out(None if deadline is None else _remaining(deadline))
            except MongoCoreError as exc:
                failure = exc
            if failure is not None:
                # The pool has already handed an establishment error to SDAM (its
                # on_establish_error), before publishing the connection's close.
                self._label(op, failure, sd.max_wire_version, sd.type is _MONGOS)
                op.attempts += 1
                outcome = policy.checkout_failed(failure)
            else:
                pinned: Optional[PinnedConnection] = None
                if held is None and transaction is not None:
                    held = pin_transaction(op, transaction, sd, pool, connection)
                try:
                    refusal = None
                    if checks:
                        # What the description said stands for a connection that
                        # supports sessions (see _connection_supports): one call less
                        # for every write.
                        supported = (
                            described
                            if described is not None and connection.supports_sessions
                            else self._connection_supports(op, sd, connection, described)
                        )
                        refusal = policy.connection_ready(supported)
                    if refusal is None:
                        if transaction is not None:
                            txn_number = op.session._transaction_number()
                        # (policy.retryable: adds_transaction_id without its call.)
                        elif isinstance(policy, WritePolicy) and policy.retryable:
                            if txn_number is None:
                                txn_number = op.session._next_txn_number()
                        else:
                            txn_number = None
                        op.attempts += 1
                        # (Positional: keywords would cost a dict and name matching.)
                        reply = self._attempt(
                            op, sd, connection, operation_id, txn_number, deadline, transaction
                        )
                        if sd.type is _LOAD_BALANCER:
                            pinned = pin_cursor(op, sd, pool, connection, reply, held=held)
                        # CommandOutcome(...) without its generated __new__ (a Python call).
                        return _new_tuple(
                            CommandOutcome, (reply, server.address, sd, operation_id, pinned)
                        )
                except _DeadlineExpired:
                    expired = True
                except MongoCoreError as exc:
                    self._after_failure(op, server, sd, connection, exc)
                    failure = exc
                    op.may_have_written |= attempt_may_have_written(
                        exc, request_sent=not request_not_sent(exc)
                    )
                except BaseException:
                    # Interrupted mid-command: the server may still be running it.
                    if connection.closed:
                        op.session._mark_dirty()
                    raise
                finally:
                    if pinned is None and held is None:
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
                    now = _clock.monotonic()
                    if retry_until is None:
                        retry_until = now + self._server_selection_timeout
                    elif now >= retry_until:
                        raise failure
                if retries >= 2:
                    first, cap = READ_RETRY_BACKOFF
                    if self.closing.wait(min(cap, first * 2 ** (retries - 2))):
                        raise failure

    def _run_pinned(
        self,
        op: Operation,
        pinned: PinnedConnection,
        operation_id: int,
        deadline: Optional[float],
        transaction: Optional[Transaction],
    ) -> CommandOutcome:
        """Run ``op`` once on its pinned connection (Load Balancer spec, "Connection
        Pinning"): no selection, no checkout; errors reach SDAM as on any connection,
        and the holder (the cursor) releases the connection, closed or not."""
        if pinned.checked_in:
            raise InvalidOperation(
                f"{op.name}: the connection pinned to this cursor was returned to the pool"
            )
        connection = pinned.connection
        server = self._topology.get_server(pinned.address)
        sd = self._topology.description.servers.get(pinned.address)
        if server is None or sd is None:
            raise ServerSelectionError(
                f"the server {pinned.address} this operation must run on (where its"
                " cursor lives) is no longer part of the topology"
            )
        op.attempts += 1
        try:
            txn_number = None if transaction is None else op.session._transaction_number()
            reply = self._attempt(
                op, sd, connection, operation_id, txn_number, deadline, transaction
            )
        except MongoCoreError as exc:
            self._after_failure(op, server, sd, connection, exc)
            raise
        except BaseException:
            if connection.closed:
                op.session._mark_dirty()
            raise
        opened = op.opens_cursor and cursor_id_of(reply) != 0
        if opened:
            pinned.hold(CURSOR)  # a cursor opened on a transaction's connection
        return CommandOutcome(reply, pinned.address, sd, operation_id, pinned if opened else None)

    # --- one attempt -------------------------------------------------------------------

    def _attempt(  # noqa: PLR0917 - called positionally: keyword arguments cost more
        self,
        op: Operation,
        sd: ServerDescription,
        connection: Connection,
        operation_id: int,
        txn_number: Optional[Any],
        deadline: Optional[float],
        transaction: Optional[Transaction] = None,
    ) -> dict[str, Any]:
        session = op.session
        topology_type = self._topology._description.type  # the property, without its call
        context = _new_tuple(  # AttemptContext(...), as CommandOutcome above
            AttemptContext,
            (sd, topology_type, connection.max_wire_version, connection, session, op.attempts),
        )
        command = op.build(context)
        body = command.body
        if op.acknowledged and "lsid" not in body:
            if connection.supports_sessions:
                body["lsid"] = session._use_lsid()
                if txn_number is not None:
                    body["txnNumber"] = txn_number
            elif not session.implicit:
                raise ConfigurationError(
                    f"the server {connection.address} does not support sessions"
                    " (no logicalSessionTimeoutMinutes in its hello reply); run the"
                    " operation without session="
                )
        if transaction is not None:
            add_transaction_fields(body, op.name, transaction, session)
        elif op.read_concern is not None and next(iter(body)) in _READ_CONCERN_COMMANDS:
            read_concern = dict(op.read_concern)
            if session._operation_time is not None and session.causal_consistency:
                read_concern["afterClusterTime"] = session.operation_time
            if read_concern and "readConcern" not in body:
                body["readConcern"] = read_concern
        elif (
            session._operation_time is not None  # None in every implicit session
            and session.causal_consistency
            and "readConcern" not in body
            and "lsid" in body
            and next(iter(body)) in _CAUSAL_WRITE_COMMANDS
        ):
            # Causal Consistency (newer spec): a write waits for the session's last
            # operation too, so that it is ordered after what the session saw.
            body["readConcern"] = {"afterClusterTime": session.operation_time}
        if session._options.snapshot:
            session._apply_snapshot(body, connection.max_wire_version)
        if connection.max_wire_version >= RETRYABLE_WIRE_VERSION and "$clusterTime" not in body:
            cluster_time = self._clock._value
            if session._cluster_time is not None:
                cluster_time = newer_cluster_time(cluster_time, session._cluster_time)
            if cluster_time is not None:
                body["$clusterTime"] = cluster_time
        if op.read_preference is not None:
            apply_read_preference(body, op.read_preference, topology_type, sd)
        timeout: Union[float, EllipsisType, None] = ...
        if deadline is not None:
            remaining = deadline - _clock.monotonic()
            # Client Side Operations Timeout, "Command Execution": a command is not sent
            # when no more time is left than the server's minimum round trip time (it
            # would time out on the socket); it carries the rest as maxTimeMS.
            min_rtt = sd.min_round_trip_time or 0.0
            if remaining <= min_rtt:
                if remaining <= 0 and op.attempts > 1:
                    # timeoutMS ran out before this retry was sent: the last error stands
                    # (as pymongo raises it).
                    raise _DeadlineExpired
                message = (
                    f"timeoutMS expired: {max(0.0, remaining) * 1000:.0f} ms left, no more than"
                    f" the round trip time to {connection.address} ({min_rtt * 1000:.0f} ms);"
                    f" {op.name} was not sent"
                )
                details = {"ok": 0, "errmsg": message, "code": MAX_TIME_MS_EXPIRED}
                raise unless_sent(
                    ExecutionTimeout(message, MAX_TIME_MS_EXPIRED, details), sent=False
                )
            if next(iter(body)) not in _NO_MAX_TIME_MS:
                # timeoutMS replaces a maxTimeMS the caller gave (a deprecated option).
                body["maxTimeMS"] = max(1, int((remaining - min_rtt) * 1000))
            concern = body.get("writeConcern")
            if isinstance(concern, Mapping) and "wtimeout" in concern:
                # ...and the write concern's wtimeout (wTimeoutMS, deprecated too), as
                # pymongo drops it: a write concern of nothing else is not sent.
                concern = {k: v for k, v in concern.items() if k != "wtimeout"}
                if concern:
                    body["writeConcern"] = concern
                else:
                    del body["writeConcern"]
            # timeoutMS replaces socketTimeoutMS (a deprecated option) for the operation's
            # reads and writes on the socket: CSOT, "Validation and Overrides".
            timeout = remaining
        if self._publisher.command_listeners:
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
        else:
            # No command events to publish: what run_command does then, one call less.
            reply = connection.command(
                op.database,
                body,
                sequences=command.sequences,
                timeout=timeout,
                deadline=deadline,
            )
        # _gossip without its call (every reply passes here).
        cluster_time = reply.get("$clusterTime")
        if cluster_time is not None:
            self._clock.advance(cluster_time)
        if not session._implicit:
            session._process_reply(reply)
        if transaction is not None:
            transaction.reply(reply)
        # A dict lookup first: most replies have no writeConcernError.
        error = None if "writeConcernError" not in reply else write_concern_error_from_reply(reply)
        if error is not None:
            self._topology.handle_connection_error(connection, error)
            if transaction is not None:
                if op.name in END_COMMANDS:
                    self._label(op, error, connection.max_wire_version, False)
                    if error.has_error_label(RETRYABLE_WRITE_ERROR):
                        raise error  # commit and abort send it again once
            elif txn_number is not None:
                self._label(op, error, connection.max_wire_version, sd.type is _MONGOS)
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
        if isinstance(error, (NetworkError, ProtocolError)):
            # The connection is closed; the server may still be running the command.
            op.session._mark_dirty()
        if isinstance(error, (NetworkError, ProtocolError, OperationFailure)):
            self._topology.handle_connection_error(connection, error)
        self._label(op, error, connection.max_wire_version, sd.type is _MONGOS)

    # --- helpers -------------------------------------------------------------------------

    def _select(
        self,
        op: Operation,
        failed_at: Optional[Address],
        deadline: Optional[float],
        operation_id: int,
        transaction: Optional[Transaction] = None,
    ) -> tuple[Server, ServerDescription]:
        topology = self._topology
        timeout = None
        if deadline is not None:
            limit = topology.settings.server_selection_timeout_ms / 1000.0
            timeout = max(0.0, min(limit, deadline - _clock.monotonic()))
        pinned = transaction.pinned if transaction is not None else None
        if pinned is not None and op.address is None:
            # Every command of a sharded transaction goes to the mongos of its first.
            return topology.select_pinned(pinned, timeout=timeout)
        if op.address is not None:
            server = topology.get_server(op.address)
            sd = topology.description.servers.get(op.address)
            if server is None or sd is None:
                raise ServerSelectionError(
                    f"the server {op.address} this operation must run on (where its cursor"
                    " lives) is no longer part of the topology"
                )
            return server, sd
        if op.continue_on is not None and failed_at is None:
            # A bulk write's next command: where the last one ran, if that server is
            # still writable (no selection, so none logged); else a selection.
            server = topology.get_server(op.continue_on)
            sd = topology.description.servers.get(op.continue_on)
            if server is not None and sd is not None and sd.is_writable:
                return server, sd
        deprioritized: tuple[Address, ...] = ()
        if failed_at is not None and topology.description.type is _SHARDED:
            deprioritized = (failed_at,)
        # The operation's name and id appear in the selection's log messages.
        return topology.select_server(
            op.read_preference,
            deprioritized=deprioritized,
            timeout=timeout,
            operation=op.operation_name or op.name,
            operation_id=operation_id,
        )

    def _connection_supports(
        self,
        op: Operation,
        sd: ServerDescription,
        connection: Connection,
        described: Optional[bool] = None,
    ) -> bool:
        """Whether this attempt's connection supports retrying; ``described``: what
        the description said (see _run), if it was asked."""
        if op.retry is _READ:
            return supports_retryable_reads(connection.max_wire_version)
        if op.retry is _WRITE:
            if not connection.supports_sessions:
                return False
            if sd.type is _LOAD_BALANCER:
                return connection.max_wire_version >= RETRYABLE_WIRE_VERSION
            if described is not None:
                return described
            return supports_retryable_writes(
                sd.type, sd.max_wire_version, sd.logical_session_timeout_minutes
            )
        return False

    def _label(
        self, op: Operation, error: BaseException, max_wire_version: int, is_mongos: bool
    ) -> None:
        """RetryableWriteError belongs to errors of clients with retryWrites on only;
        in a transaction, the labels of :mod:`mongocore.core.transaction_rules`."""
        if not isinstance(error, MongoCoreError):
            return
        transaction = op.session._transaction
        if transaction is not None and transaction.active:
            label_transaction_error(error, op.name, max_wire_version)
            if unpins(error, op.name, max_wire_version):
                transaction.unpin()
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
        cluster_time = reply.get("$clusterTime")
        if cluster_time is not None:
            self._clock.advance(cluster_time)
        # An implicit session is never causally consistent, never a snapshot, never
        # seen by the application: its own cluster time could only repeat the
        # client's, advanced just above.
        if not session._implicit:
            session._process_reply(reply)

    @staticmethod
    def _log_retry(op: Operation, error: BaseException) -> None:
        _log.debug("retrying %s (attempt %d failed: %s)", op.name, op.attempts, error)


#: Commands that never carry a maxTimeMS derived from timeoutMS (CSOT, "Cursors": a
#: getMore's is the cursor's maxAwaitTimeMS, if any).
_NO_MAX_TIME_MS = frozenset({"getMore"})


class _DeadlineExpired(Exception):
    """timeoutMS expired between two attempts, before the next one was sent."""


def _remaining(deadline: Optional[float]) -> Optional[float]:
    if deadline is None:
        return None
    return max(0.0, deadline - _clock.monotonic())


def _expired(deadline: Optional[float]) -> bool:
    return deadline is not None and _clock.monotonic() >= deadline
