"""Retryable reads and writes: the pure retry policy.

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

The policy is pure: :class:`WritePolicy` and :class:`ReadPolicy` are the seeds'
pseudocode as small state machines, told what happened (a selection failed, a
server or connection was found, an attempt failed) and answering what to do (go
on, or raise this error). The executor of :mod:`mongocore.io.executor` carries it out.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from mongocore.core.description.errors import is_state_change_error
from mongocore.core.description.types import ServerType
from mongocore.errors import (
    MAX_TIME_MS_EXPIRED,
    ExecutionTimeout,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    PoolClearedError,
    ProtocolError,
    WriteConcernError,
)

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

# Enum members compared on every retryable write, bound once: on Python 3.11 an enum
# member read from its class is several times slower (EnumType.__getattr__).
_STANDALONE = ServerType.STANDALONE


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
        and server_type is not _STANDALONE
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
        """timeoutMS expired before another attempt: a timeout error (Client Side
        Operations Timeout, "Retryability": "Once the timeout expires, a timeout error
        MUST be raised"), for the last error (``error``, the attempt that just failed,
        or else the previous one; see :func:`timeout_error_after`)."""
        last = error if error is not None else self.previous_error
        assert last is not None
        return timeout_error_after(last)


def timeout_error_after(error: BaseException) -> BaseException:
    """The error to raise when timeoutMS expired after ``error`` and before another
    attempt: ``error`` itself when it is a timeout (a socket timeout, MaxTimeMSExpired),
    else an ExecutionTimeout (MaxTimeMSExpired, code 50, as pymongo's timeouts before a
    command is sent) whose message names it, with its labels, and whose cause it is
    (CSOT, "Errors": the underlying error is exposed)."""
    if isinstance(error, MongoCoreError) and error.timeout:
        return error
    message = (
        "timeoutMS expired before the operation could be attempted again;"
        f" the last attempt failed with: {error}"
    )
    labels = error.error_labels if isinstance(error, MongoCoreError) else ()
    details = {"ok": 0, "errmsg": message, "code": MAX_TIME_MS_EXPIRED}
    timeout = ExecutionTimeout(message, MAX_TIME_MS_EXPIRED, details, labels)
    timeout.__cause__ = error
    return timeout


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
        self, enabled: bool, count_socket_timeouts: bool, in_transaction: bool = False
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
