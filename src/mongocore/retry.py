"""Retryable reads and writes: the pure retry policy, and the executor that carries it out.

Seeds: retryable-writes.rst 1.0 (2018-03-14): "Retryable Error", "Supported Write
Operations", "Unsupported Write Operations", "Executing Retryable Write Commands"
and its pseudocode; retryable-reads.rst 1.3.0: "Retryable Error", "Supported Read
Operations", "Executing Retryable Read Commands" and its pseudocode.

Added from the newer specs, which only add to the seeds here: the
``RetryableWriteError`` label on the errors the driver retries (network errors when
retryWrites is on; the retryable errors of pre-4.4 servers), as information for the
caller; a retry whose error is labeled ``NoWritesPerformed`` raises the previous
error; a PoolClearedError (CMAP: the error of a paused pool "MUST be considered a
retryable error"; nothing was sent) is retryable for writes as the reads seed says
it is for reads; in a sharded cluster the mongos that failed is deprioritized when
selecting the server for the retry.

Where the newer specs contradict the seeds, the seeds win: a write is retried at most
once, and only after a network error or a "not writable primary" / "node is
recovering" error (by its code or message, as the command's error or its
writeConcernError), whether or not the server labeled it RetryableWriteError, and
never after any other error, labeled or not; a read is retried only after the seed's
errors (not ExceededTimeLimit nor ReadConcernMajorityNotAvailableYet, which the newer
list adds), until it succeeds or fails with a non-retryable error, stopping at its
second socket timeout when socketTimeoutMS derives the operation's timeouts.

One bound the reads seed leaves open: "as many times as necessary" is kept within
serverSelectionTimeoutMS from the first failure (or within timeoutMS when set), and
from the third attempt on, retries back off (5 ms doubling, at most 500 ms), so a
server that keeps answering a retryable error is not hammered in a tight loop.

The policy is pure: :class:`WritePolicy` and :class:`ReadPolicy` are the seeds'
pseudocode as small state machines, told what happened (a selection failed, a
server or connection was found, an attempt failed) and answering what to do (go
on, or raise this error). :class:`Executor` is the I/O loop that selects servers,
checks out connections, builds each attempt's command afresh, runs it with command
events, hands errors to SDAM, and asks the policy.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Union

from mongocore.address import Address
from mongocore.description.errors import is_state_change_error
from mongocore.description.server import ServerDescription
from mongocore.description.types import ServerType, TopologyType
from mongocore.errors import (
    ConfigurationError,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    PoolClearedError,
    ProtocolError,
    ServerSelectionError,
    WriteConcernError,
    write_concern_error_from_reply,
)
from mongocore.monitoring import next_operation_id, run_command
from mongocore.selection.read_preference import Mode, ReadPreference, read_preference_for_server
from mongocore.session import ClientSession, ClusterClock, newer_cluster_time

if TYPE_CHECKING:
    from types import EllipsisType

    from mongocore.client import Client
    from mongocore.io.connection import Connection
    from mongocore.io.topology import Server

__all__ = [
    "NO_WRITES_PERFORMED",
    "READ_RETRY_BACKOFF",
    "RETRYABLE_READ_COMMANDS",
    "RETRYABLE_WRITE_COMMANDS",
    "RETRYABLE_WRITE_ERROR",
    "SEED_RETRYABLE_READ_CODES",
    "AttemptContext",
    "Command",
    "CommandOutcome",
    "Executor",
    "Operation",
    "ReadPolicy",
    "RetryKind",
    "RetryPolicy",
    "SingleAttemptPolicy",
    "WritePolicy",
    "apply_read_preference",
    "caller_can_infer_attempt",
    "is_retryable_read_command",
    "is_retryable_read_error",
    "is_retryable_write_command",
    "is_retryable_write_error",
    "needs_retryable_write_label",
    "supports_retryable_reads",
    "supports_retryable_writes",
]

_log = logging.getLogger("mongocore.retry")

#: MongoDB 3.6: sessions, retryable writes and retryable reads.
RETRYABLE_WIRE_VERSION = 6
#: MongoDB 4.4: servers label retryable write errors themselves.
WIRE_VERSION_4_4 = 9

RETRYABLE_WRITE_ERROR = "RetryableWriteError"
NO_WRITES_PERFORMED = "NoWritesPerformed"

#: The retryable-reads seed's "Retryable Error" codes.
SEED_RETRYABLE_READ_CODES = frozenset(
    {
        11600,  # InterruptedAtShutdown
        11602,  # InterruptedDueToReplStateChange
        10107,  # NotWritablePrimary
        13435,  # NotPrimaryNoSecondaryOk
        13436,  # NotPrimaryOrSecondary
        189,  # PrimarySteppedDown
        91,  # ShutdownInProgress
        7,  # HostNotFound
        6,  # HostUnreachable
        89,  # NetworkTimeout
        9001,  # SocketException
    }
)
#: Backoff between read retries from the third attempt on (seconds): first, cap.
READ_RETRY_BACKOFF = (0.005, 0.5)

#: Commands a supported write operation sends ("Supported Write Operations").
RETRYABLE_WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify"})
#: Commands the supported read operations send ("Supported Read Operations").
RETRYABLE_READ_COMMANDS = frozenset(
    {"find", "aggregate", "distinct", "count", "listDatabases", "listCollections", "listIndexes"}
)
_WRITE_STAGES = ("$out", "$merge")


# --- pure: errors ------------------------------------------------------------------------


def _code_and_message(error: OperationFailure) -> tuple[Optional[int], str]:
    if isinstance(error, WriteConcernError):
        wce = error.details.get("writeConcernError")
        if isinstance(wce, Mapping):
            code = wce.get("code")
            return (code if isinstance(code, int) else None), str(wce.get("errmsg", ""))
    return error.code, error.message


def is_retryable_read_error(error: BaseException) -> bool:
    """The retryable-reads seed's "Retryable Error": a network error, a server error with
    one of :data:`SEED_RETRYABLE_READ_CODES`, or a PoolClearedError; nothing else (the
    seed: drivers "MUST only retry" these). Errors while establishing a connection
    count alike."""
    if isinstance(error, (NetworkError, PoolClearedError)):
        return True
    if isinstance(error, OperationFailure) and not isinstance(error, WriteConcernError):
        return error.code in SEED_RETRYABLE_READ_CODES
    return False


def is_retryable_write_error(error: BaseException) -> bool:
    """The retryable-writes seed's "Retryable Error".

    Retryable: a network error; a PoolClearedError (nothing was sent); a "not writable
    primary" or "node is recovering" error (SDAM's state change errors, by code, or by
    message when there is no code), as the command's error or as its writeConcernError.
    Nothing else, whatever its labels: the seed says drivers "MUST NOT attempt to retry
    a write command on any other error".
    """
    if isinstance(error, (NetworkError, PoolClearedError)):
        return True
    if isinstance(error, OperationFailure):
        code, message = _code_and_message(error)
        return is_state_change_error(message, code)
    return False


def caller_can_infer_attempt(error: BaseException) -> bool:
    """Did this error come from talking to a server? Errors that originate in the
    driver (a pool that is cleared or closed, a wait queue timeout, a document too
    large, a configuration problem) do not let the caller infer that an attempt was
    made: when a retry fails with one of those, the previous error is raised."""
    return isinstance(error, (NetworkError, OperationFailure, ProtocolError))


def needs_retryable_write_label(
    error: BaseException, *, max_wire_version: int, is_mongos: bool
) -> bool:
    """Should the driver add RetryableWriteError to this error (retryWrites being on)?

    Network errors: always. Server errors: only from servers older than 4.4 (newer
    ones label what they consider retryable, and the driver must not add to it), and
    only those the seed retries (:func:`is_retryable_write_error`): as the top-level
    error, or in the writeConcernError of a mongod (never of a mongos).
    """
    if isinstance(error, NetworkError):
        return True
    if not isinstance(error, OperationFailure) or max_wire_version >= WIRE_VERSION_4_4:
        return False
    if isinstance(error, WriteConcernError) and is_mongos:
        return False
    return is_retryable_write_error(error)


# --- pure: commands and servers ----------------------------------------------------------


def _statements(
    command: Mapping[str, Any], sequences: Optional[Mapping[str, Sequence[Any]]], field: str
) -> Sequence[Any]:
    if sequences and field in sequences:
        return sequences[field]
    value = command.get(field)
    return value if isinstance(value, (list, tuple)) else ()


def is_retryable_write_command(
    command: Mapping[str, Any],
    sequences: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None,
) -> bool:
    """May this write command carry a transaction id ("Supported Write Operations")?

    insert, update, delete and findAndModify only; never with an unacknowledged write
    concern (``w: 0``); never an update with a ``multi: true`` statement nor a delete
    with a ``limit: 0`` statement. Statements are read from ``sequences`` (document
    sequences, decoded) or from the command's own array.
    """
    name = next(iter(command), "")
    if name not in RETRYABLE_WRITE_COMMANDS:
        return False
    write_concern = command.get("writeConcern")
    if isinstance(write_concern, Mapping) and not is_acknowledged(write_concern):
        return False
    if name == "update":
        return not any(s.get("multi") for s in _statements(command, sequences, "updates"))
    if name == "delete":
        return all(s.get("limit") == 1 for s in _statements(command, sequences, "deletes"))
    return True


def is_acknowledged(write_concern: Mapping[str, Any]) -> bool:
    """``{w: 0}`` is unacknowledged, unless ``j: true`` asks for an acknowledgement."""
    return not (write_concern.get("w") == 0 and not write_concern.get("j"))


def is_retryable_read_command(command: Mapping[str, Any]) -> bool:
    """Is this the command of a supported read operation ("Supported Read Operations")?

    find, aggregate without a write stage ($out, $merge), distinct, count,
    listDatabases, listCollections and listIndexes. getMore never is; nor is any
    command run through the generic command method (which never consults this).
    """
    name = next(iter(command), "")
    if name not in RETRYABLE_READ_COMMANDS:
        return False
    if name == "aggregate":
        pipeline = command.get("pipeline")
        if isinstance(pipeline, (list, tuple)):
            return not any(
                isinstance(stage, Mapping) and any(key in stage for key in _WRITE_STAGES)
                for stage in pipeline
            )
    return True


def supports_retryable_writes(
    server_type: ServerType, max_wire_version: int, logical_session_timeout_minutes: Optional[int]
) -> bool:
    """isRetryableWritesSupported: wire version 6+, sessions, not a standalone."""
    return (
        max_wire_version >= RETRYABLE_WIRE_VERSION
        and logical_session_timeout_minutes is not None
        and server_type is not ServerType.STANDALONE
    )


def supports_retryable_reads(max_wire_version: int) -> bool:
    """isRetryableReadsSupported: wire version 6+ (the connection's own)."""
    return max_wire_version >= RETRYABLE_WIRE_VERSION


# --- pure: the policies ------------------------------------------------------------------


class RetryKind(str, enum.Enum):
    """Which retry rules an operation follows."""

    NONE = "none"  # one attempt: the generic command method, getMore, killCursors, ...
    READ = "read"
    WRITE = "write"


class RetryPolicy:
    """What to do after each step of an operation; :class:`SingleAttemptPolicy` and its
    subclasses implement the seeds' pseudocode.

    Every method returning ``Optional[BaseException]`` answers None for "go on" (try
    the attempt, or select a server for the next one) or the error to raise now.
    """

    #: The error of the previous attempt (None before any failure).
    previous_error: Optional[BaseException] = None

    @property
    def retrying(self) -> bool:
        return self.previous_error is not None

    def selection_failed(self, error: BaseException) -> BaseException:
        """Server selection failed: on the first attempt the caller learns that nothing
        was attempted; on a retry, the error of the previous attempt is raised."""
        return error if self.previous_error is None else self.previous_error

    def server_selected(self, supported: Optional[bool]) -> Optional[BaseException]:
        """A server was selected; ``supported``: whether its description says it supports
        the retry mechanism (None: only its connection can tell)."""
        return None

    def connection_ready(self, supported: bool) -> Optional[BaseException]:
        """A connection was checked out; ``supported``: whether it supports retrying."""
        return None

    def checkout_failed(self, error: BaseException) -> Optional[BaseException]:
        return self.attempt_failed(error)

    def attempt_failed(self, error: BaseException) -> Optional[BaseException]:
        raise NotImplementedError

    def expired(self, error: Optional[BaseException] = None) -> BaseException:
        """timeoutMS expired before another attempt: raise the last error (``error``,
        the attempt that just failed, or else the previous one)."""
        last = error if error is not None else self.previous_error
        assert last is not None
        return last


class SingleAttemptPolicy(RetryPolicy):
    """Exactly one attempt; every error propagates as it is."""

    def attempt_failed(self, error: BaseException) -> Optional[BaseException]:
        return error


class WritePolicy(RetryPolicy):
    """executeRetryableWrite of the retryable-writes seed.

    ``enabled``: retryWrites is on and the operation is a supported write (the
    command may carry a transaction id). The first selected server decides whether
    the write is retryable at all; if it is not, it runs once without a transaction
    id. A retryable error on the first attempt leads to exactly one retry, with the
    same transaction id; which error the caller then sees follows the seed:

    - no server for the retry, or one that does not support retryable writes: the
      original error;
    - the retry fails with a network or server error: that error (unless it is
      labeled NoWritesPerformed: then the original);
    - the retry fails with an error of the driver (PoolClearedError, a wait queue
      timeout, ...): the original error.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        #: Decided on the first connection: add a transaction id and allow one retry.
        self.retryable: Optional[bool] = None
        self._first_server_supported: Optional[bool] = None
        self._done = False

    @property
    def adds_transaction_id(self) -> bool:
        return bool(self.retryable)

    def server_selected(self, supported: Optional[bool]) -> Optional[BaseException]:
        if self.previous_error is None:
            self._first_server_supported = supported
            return None
        if supported is False:
            return self.previous_error
        return None

    def connection_ready(self, supported: bool) -> Optional[BaseException]:
        if self.previous_error is None:
            if self.retryable is None:
                self.retryable = self.enabled and supported
            return None
        if not supported:
            return self.previous_error
        return None

    def checkout_failed(self, error: BaseException) -> Optional[BaseException]:
        if self.previous_error is None and self.retryable is None:
            # The first checkout failed before the connection could say; the
            # description decides (None: nothing says it is unsupported).
            self.retryable = self.enabled and self._first_server_supported is not False
        return self.attempt_failed(error)

    def attempt_failed(self, error: BaseException) -> Optional[BaseException]:
        if self._done:
            return error
        original = self.previous_error
        if original is None:
            if not self.retryable or not is_retryable_write_error(error):
                self._done = True
                return error
            self.previous_error = error
            return None
        # The one retry failed.
        self._done = True
        if not caller_can_infer_attempt(error):
            return original
        if isinstance(error, MongoCoreError) and error.has_error_label(NO_WRITES_PERFORMED):
            return original
        return error


class ReadPolicy(RetryPolicy):
    """executeRetryableRead of the retryable-reads seed (1.3.0).

    ``enabled``: retryReads is on and the operation is a supported read. The read is
    retried as many times as needed, until it succeeds or fails with a non-retryable
    error. ``count_socket_timeouts``: socketTimeoutMS is set and derives the
    operation's socket timeouts (timeoutMS is not set); then the second socket timeout
    of an attempt (NetworkTimeout while the command was sent or its reply read) ends
    the read and is raised. A timeout while connecting at checkout is not a socket
    timeout of the operation: it is a retryable network error, never counted. A
    PoolClearedError at checkout is retried without consulting SDAM (the clear that
    caused it has done so). When no server can be selected for a retry, or the
    selected one is too old, the previous error is raised. A retry failing with an
    error of the driver raises the previous error; with a server error, that error.
    """

    def __init__(
        self, enabled: bool, in_transaction: bool = False, *, count_socket_timeouts: bool
    ) -> None:
        self.enabled = enabled and not in_transaction
        self.count_socket_timeouts = count_socket_timeouts
        self.socket_timeouts = 0
        self._once = False

    def connection_ready(self, supported: bool) -> Optional[BaseException]:
        if self.enabled and supported:
            return None
        if self.previous_error is None:
            self._once = True  # execute once, let any error propagate
            return None
        return self.previous_error

    def checkout_failed(self, error: BaseException) -> Optional[BaseException]:
        if not self.enabled:
            return error
        if isinstance(error, (PoolClearedError, NetworkError)):
            self.previous_error = error
            return None
        return self.attempt_failed(error)

    def attempt_failed(self, error: BaseException) -> Optional[BaseException]:
        if self._once or not self.enabled:
            return error
        if isinstance(error, NetworkTimeout) and self.count_socket_timeouts:
            self.socket_timeouts += 1
            if self.socket_timeouts >= 2:
                return error
        if is_retryable_read_error(error):
            self.previous_error = error
            return None
        if self.previous_error is not None and not caller_can_infer_attempt(error):
            return self.previous_error
        return error


# --- the executor (I/O) ------------------------------------------------------------------


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
