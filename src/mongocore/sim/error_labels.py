"""The error labels a MongoDB 7.0 server attaches to a failed command (retryable writes
spec, "RetryableWriteError"; transactions spec, "TransientTransactionError").

A server labels a reply from the command's session fields, its name, the error code
and the write concern error's code:

- ``TransientTransactionError``: a command of a transaction (``autocommit`` present)
  failed in a way that leaves nothing behind, so the whole transaction may be run
  again: WriteConflict, LockTimeout, PreparedTransactionInProgress, the snapshot and
  stale-routing errors, any retryable error, and NoSuchTransaction (on commit and
  abort only when there is no write concern error: a commit whose write concern
  failed may still be rolled back);
- ``RetryableWriteError``, otherwise: a retryable write (a ``txnNumber`` without
  ``autocommit``), or a transaction's commit or abort, failed with a retryable code,
  as its error or as its write concern error.

Outside transactions and retryable writes, the change stream labels apply
(sim/change_streams.py): ``ResumableChangeStreamError`` and
``NonResumableChangeStreamError``.

``UnknownTransactionCommitResult`` is never a server's: drivers add it (transactions
spec, "UnknownTransactionCommitResult"). A ``failCommand`` fail point with
``errorLabels`` replaces all of this with its own list. A real mongos never attaches
``RetryableWriteError`` (shards' errors carry their own labels); the simulated mongos
labels as a mongod does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim.change_streams import change_stream_labels
from mongocore.sim.codes import RETRYABLE_WRITE_CODES

__all__ = [
    "COMMIT_OR_ABORT",
    "TRANSIENT_TRANSACTION_ERROR",
    "error_labels",
    "is_transient_transaction_error",
]

TRANSIENT_TRANSACTION_ERROR = "TransientTransactionError"
RETRYABLE_WRITE_ERROR = "RetryableWriteError"

#: The commands that end a transaction (the server's commit-or-abort list).
COMMIT_OR_ABORT = frozenset(
    {"commitTransaction", "abortTransaction", "coordinateCommitTransaction"}
)

# WriteConflict, LockTimeout, PreparedTransactionInProgress, ShardCannotRefreshDueToLocksHeld,
# StaleDbVersion: transient wherever they happen.
_ALWAYS_TRANSIENT = frozenset({112, 24, 267, 343, 249})
# The "SnapshotError" category (SnapshotTooOld, SnapshotUnavailable, StaleChunkHistory,
# MigrationConflict) and "NeedRetargettingError" (StaleEpoch, StaleConfig).
_SNAPSHOT_OR_RETARGETING = frozenset({239, 246, 250, 272, 150, 13388})
_NO_SUCH_TRANSACTION = 251


def is_transient_transaction_error(
    code: int, *, has_write_concern_error: bool, commit_or_abort: bool
) -> bool:
    """May a transaction that failed with ``code`` be run again from its start?"""
    if code in _ALWAYS_TRANSIENT or code in _SNAPSHOT_OR_RETARGETING:
        return True
    if commit_or_abort:
        return code == _NO_SUCH_TRANSACTION and not has_write_concern_error
    return code in RETRYABLE_WRITE_CODES or code == _NO_SUCH_TRANSACTION


def error_labels(
    name: str,
    cmd: Mapping[str, Any],
    code: Optional[int],
    write_concern_code: Optional[int] = None,
) -> list[str]:
    """The labels a server puts on the reply of command ``name`` (``cmd`` its document)
    that failed with ``code`` and/or a write concern error ``write_concern_code``."""
    if "txnNumber" not in cmd:
        return change_stream_labels(name, cmd, code)
    in_transaction = "autocommit" in cmd
    commit_or_abort = name in COMMIT_OR_ABORT
    if (
        in_transaction
        and code is not None
        and is_transient_transaction_error(
            code,
            has_write_concern_error=write_concern_code is not None,
            commit_or_abort=commit_or_abort,
        )
    ):
        return [TRANSIENT_TRANSACTION_ERROR]
    retryable = code in RETRYABLE_WRITE_CODES or write_concern_code in RETRYABLE_WRITE_CODES
    if retryable and (not in_transaction or commit_or_abort):
        return [RETRYABLE_WRITE_ERROR]
    return []
