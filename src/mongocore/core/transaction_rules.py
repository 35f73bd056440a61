"""Transactions: the error labels the driver adds, the one retry of commit and abort,
and the write concern of a commit sent again. Pure decisions.

Spec: Transactions, "Error Reporting and Retrying Transactions" ("Transient
Transaction Error", "UnknownTransactionCommitResult"), "Interaction with Retryable
Writes", "commitTransaction" ("writeConcern for commitTransaction attempts") and
"abortTransaction".

The retryable-writes seed governs the supported write operations (insert, update,
delete, findAndModify outside transactions). commitTransaction and abortTransaction
are not among them: the transactions spec makes them retryable writes of their own,
retried once after a retryable error whatever retryWrites says, where a server of
4.4 or newer says what is retryable with its RetryableWriteError label (the driver
adds it to network errors, and to older servers' retryable codes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.core.retry_policy import (
    NO_WRITES_PERFORMED,
    RETRYABLE_WRITE_ERROR,
    WIRE_VERSION_4_4,
    RetryPolicy,
    caller_can_infer_attempt,
    is_retryable_write_error,
)
from mongocore.core.transaction_state import ABORT, COMMIT
from mongocore.errors import (
    ConnectionFailure,
    MongoCoreError,
    NetworkError,
    OperationFailure,
    PoolClearedError,
    WriteConcernError,
)

TRANSIENT_TRANSACTION_ERROR = "TransientTransactionError"
UNKNOWN_TRANSACTION_COMMIT_RESULT = "UnknownTransactionCommitResult"

#: MaxTimeMSExpired: the commit's maxTimeMS (maxCommitTimeMS) ran out.
MAX_TIME_MS_EXPIRED = 50
#: Write concern errors saying the write concern itself cannot be satisfied
#: (CannotSatisfyWriteConcern / UnsatisfiableWriteConcern, UnknownReplWriteConcern):
#: a retry would fail the same way, so the commit's result is not "unknown".
INVALID_WRITE_CONCERN_CODES = frozenset({100, 79})
#: The wtimeout a commit sent again gets when its write concern has none.
COMMIT_RETRY_WTIMEOUT_MS = 10_000

#: Codes older servers (no RetryableWriteError label) fail a retryable write with,
#: beyond the seed's state change errors: the newer retryable-writes list.
_PRE_4_4_RETRYABLE_CODES = frozenset({6, 7, 89, 9001, 262})


def _client_side_connection_error(error: BaseException) -> bool:
    """A network, server selection or pool error: no server reply says what happened.
    (NotPrimaryError is a ConnectionFailure too, but a server's answer.)"""
    return isinstance(error, ConnectionFailure) and not isinstance(error, OperationFailure)


def is_max_time_ms_expired(error: BaseException) -> bool:
    """MaxTimeMSExpired, as the command's error or as its writeConcernError (a
    WriteConcernError's code is its writeConcernError's)."""
    return isinstance(error, OperationFailure) and error.code == MAX_TIME_MS_EXPIRED


def is_retryable_end_error(error: BaseException, max_wire_version: int) -> bool:
    """May commitTransaction or abortTransaction be sent again after this error?

    A network error (the handshake's included) or a PoolClearedError: yes. A server
    error: by its RetryableWriteError label from 4.4 on; from older servers, by its
    code (the seed's state change errors and the newer list's network codes).
    """
    if isinstance(error, (NetworkError, PoolClearedError)):
        return True
    if not isinstance(error, OperationFailure):
        return False
    if max_wire_version >= WIRE_VERSION_4_4:
        return error.has_error_label(RETRYABLE_WRITE_ERROR)
    return is_retryable_write_error(error) or error.code in _PRE_4_4_RETRYABLE_CODES


def is_unknown_commit_result(error: BaseException, max_wire_version: int) -> bool:
    """Did this commit error leave the transaction's outcome unknown?

    Server selection, network and pool errors; retryable errors; MaxTimeMSExpired; and
    every write concern error but those saying the write concern is invalid.
    """
    if _client_side_connection_error(error):
        return True
    if not isinstance(error, OperationFailure):
        return False
    if is_retryable_end_error(error, max_wire_version) or is_max_time_ms_expired(error):
        return True
    return isinstance(error, WriteConcernError) and (error.code not in INVALID_WRITE_CONCERN_CODES)


def label_transaction_error(error: MongoCoreError, command: str, max_wire_version: int) -> None:
    """Add the labels the driver owes an error of a command in a transaction.

    Inside the transaction: TransientTransactionError on network, server selection
    and pool errors, and never RetryableWriteError (writes in a transaction are not
    retryable writes). commitTransaction: RetryableWriteError on the errors it retries
    (the server's label stands for server errors), UnknownTransactionCommitResult when
    the outcome is unknown, and never TransientTransactionError for an error of the
    driver (the commit may have happened). abortTransaction: RetryableWriteError on
    the errors it retries; its errors never reach the application anyway.
    """
    if command in (COMMIT, ABORT):
        if _client_side_connection_error(error):
            error.remove_error_label(TRANSIENT_TRANSACTION_ERROR)
            if is_retryable_end_error(error, max_wire_version):
                error.add_error_label(RETRYABLE_WRITE_ERROR)
        elif (
            max_wire_version < WIRE_VERSION_4_4
            and isinstance(error, OperationFailure)
            and is_retryable_end_error(error, max_wire_version)
        ):
            error.add_error_label(RETRYABLE_WRITE_ERROR)
        if command == COMMIT and is_unknown_commit_result(error, max_wire_version):
            error.add_error_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
        return
    if _client_side_connection_error(error):
        error.add_error_label(TRANSIENT_TRANSACTION_ERROR)
        error.remove_error_label(RETRYABLE_WRITE_ERROR)


def unpins(error: BaseException, command: str, max_wire_version: int) -> bool:
    """Must the session leave its mongos after this error ("When to unpin")?

    A TransientTransactionError, of any command (rule 2); a commit whose result is
    unknown (rule 3); any error of abortTransaction (rule 1).
    """
    if command == ABORT:
        return True
    if isinstance(error, MongoCoreError) and error.has_error_label(TRANSIENT_TRANSACTION_ERROR):
        return True
    return (
        command == COMMIT
        and isinstance(error, MongoCoreError)
        and (error.has_error_label(UNKNOWN_TRANSACTION_COMMIT_RESULT))
    )


def commit_retry_write_concern(write_concern: Mapping[str, Any]) -> dict[str, Any]:
    """The writeConcern of a commit sent again: ``w: majority``, the transaction's other
    options kept, and ``wtimeout: 10000`` unless it has a wtimeout."""
    document = dict(write_concern)
    document["w"] = "majority"
    document.setdefault("wtimeout", COMMIT_RETRY_WTIMEOUT_MS)
    return document


class TransactionEndPolicy(RetryPolicy):
    """commitTransaction and abortTransaction: sent again once after a retryable error
    (labeled RetryableWriteError by the server or by :func:`label_transaction_error`;
    network and pool errors always), whatever the client's retryWrites says.

    After the retry fails, the caller sees the retry's error, unless it came from the
    driver (nothing was sent) or is labeled NoWritesPerformed: then the first error.
    """

    def __init__(self) -> None:
        self._done = False

    def attempt_failed(self, error: BaseException) -> Optional[BaseException]:
        if self._done:
            return error
        original = self.previous_error
        if original is None:
            retryable = isinstance(error, (NetworkError, PoolClearedError)) or (
                isinstance(error, MongoCoreError) and error.has_error_label(RETRYABLE_WRITE_ERROR)
            )
            if not retryable:
                self._done = True
                return error
            self.previous_error = error
            return None
        self._done = True
        if not caller_can_infer_attempt(error):
            return original
        if isinstance(error, MongoCoreError) and error.has_error_label(NO_WRITES_PERFORMED):
            return original
        return error
