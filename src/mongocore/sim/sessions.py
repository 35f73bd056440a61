"""At-most-once execution of retryable writes: the server's session transaction records.

A retryable write carries ``lsid`` and ``txnNumber``. The server remembers, per
session, the highest txnNumber it has started and, for it, each statement that wrote
(a statement's id is its index in the command's batch; findAndModify has one
statement, 0), with its result. A retry with the same pair does not apply an
executed statement again: it answers with the recorded result, as a server rebuilds
it from the statement's oplog entry (insert: n 1; update: n 1 and nModified 1, or n 1
with the upserted _id; delete: n 1; findAndModify: the same lastErrorObject and image).
A 7.0 server also lists such statements in ``retriedStmtIds`` (``retriedStmtId`` for
findAndModify); the simulator does not, so a retry's reply equals the first one.
The other statements run: one that failed, or that changed nothing, was not recorded.
A lower txnNumber fails with TransactionTooOld (225). The records belong to the
replica set's data, so they survive a step-down and an election.

A session's txnNumber is either a retryable write's or a multi-document
transaction's (:mod:`mongocore.sim.transactions` starts those with
:meth:`SessionRecords.begin_transaction`): a retryable write with a transaction's
number fails with IncompleteTransactionHistory (217), and a newer number of either
kind supersedes the older one.

:class:`RetryableWrite` runs the statements of one such command: it checks the
records, evaluates the ``onPrimaryTransactionalWrite`` fail point once per statement
that writes, and records the statement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, TypeVar

import bson

from mongocore.sim.codes import CloseConnection, CommandError

if TYPE_CHECKING:
    from mongocore.sim.failpoints import FailPoints
    from mongocore.sim.store import DataStore

__all__ = ["RetryableWrite", "SessionRecords"]

T = TypeVar("T")


@dataclass
class _Record:
    txn_number: int
    reply: Optional[dict[str, Any]] = None  # None while not (successfully) completed
    statements: dict[int, dict[str, Any]] = field(default_factory=dict)
    transaction: bool = False  # the number belongs to a multi-document transaction


def _session_key(lsid: Mapping[str, Any]) -> bytes:
    # The whole lsid document ({id: UUID} plus uid when authenticated) names the session.
    return bytes(bson.encode(lsid))


class SessionRecords:
    """Records of retryable writes, keyed by session. The owner serializes access."""

    def __init__(self) -> None:
        self._records: dict[bytes, _Record] = {}

    def __len__(self) -> int:
        return len(self._records)

    def begin(self, lsid: Mapping[str, Any], txn_number: int) -> Optional[dict[str, Any]]:
        """Start (or retry) a write: the reply of its completed attempt (for inspection:
        a retry runs its statements again, see :class:`RetryableWrite`), else None.

        Raises TransactionTooOld when a newer txnNumber already started on the session.
        """
        key = _session_key(lsid)
        record = self._records.get(key)
        if record is None or txn_number > record.txn_number:
            self._records[key] = _Record(txn_number)
            return None
        if txn_number < record.txn_number:
            raise CommandError(
                225,
                f"Retryable write with txnNumber {txn_number} is prohibited on session"
                f" {_describe(lsid)} because a newer retryable write with txnNumber"
                f" {record.txn_number} has already started on this session.",
            )
        if record.transaction:
            # A session's txnNumber is a retryable write's or a transaction's, never both.
            raise CommandError(
                217,
                f"Cannot run a retryable write with txnNumber {txn_number} on session"
                f" {_describe(lsid)}: a multi-document transaction already uses it.",
            )
        return None if record.reply is None else dict(record.reply)

    def begin_transaction(self, lsid: Mapping[str, Any], txn_number: int) -> None:
        """Start a multi-document transaction: ``txn_number`` becomes the session's and
        can no longer be a retryable write's.

        Raises TransactionTooOld for a number below the session's, and
        ConflictingOperationInProgress for the session's own number (only a shard may
        restart a transaction at the number it has).
        """
        key = _session_key(lsid)
        record = self._records.get(key)
        if record is not None and txn_number < record.txn_number:
            raise CommandError(
                225,
                f"Cannot start transaction {txn_number} on session {_describe(lsid)} because"
                f" a newer transaction {record.txn_number} has already started.",
            )
        if record is not None and txn_number == record.txn_number:
            raise CommandError(
                117,
                f"Cannot start a transaction with txnNumber {txn_number} on session"
                f" {_describe(lsid)}: the session already used that number.",
            )
        self._records[key] = _Record(txn_number, transaction=True)

    def active(self, lsid: Mapping[str, Any]) -> Optional[tuple[int, bool]]:
        """The session's highest txnNumber and whether a transaction uses it, else None."""
        record = self._records.get(_session_key(lsid))
        return None if record is None else (record.txn_number, record.transaction)

    def complete(self, lsid: Mapping[str, Any], txn_number: int, reply: Mapping[str, Any]) -> None:
        """Remember the reply of an executed write."""
        key = _session_key(lsid)
        record = self._records.get(key)
        if record is not None and record.txn_number == txn_number:
            record.reply = dict(reply)

    def executed(
        self, lsid: Mapping[str, Any], txn_number: int, stmt_id: int
    ) -> Optional[dict[str, Any]]:
        """The recorded result of an executed statement of (lsid, txnNumber), else None."""
        record = self._records.get(_session_key(lsid))
        if record is None or record.txn_number != txn_number:
            return None
        result = record.statements.get(stmt_id)
        return None if result is None else dict(result)

    def record_statement(
        self, lsid: Mapping[str, Any], txn_number: int, stmt_id: int, result: Mapping[str, Any]
    ) -> None:
        """Remember that a statement of (lsid, txnNumber) wrote, with its result."""
        key = _session_key(lsid)
        record = self._records.get(key)
        if record is None or txn_number > record.txn_number:
            record = self._records[key] = _Record(txn_number)
        if record.txn_number == txn_number:
            record.statements[stmt_id] = dict(result)

    def recorded(self, lsid: Mapping[str, Any]) -> Optional[tuple[int, Optional[dict[str, Any]]]]:
        """The session's highest txnNumber and its reply, for inspection."""
        record = self._records.get(_session_key(lsid))
        return None if record is None else (record.txn_number, record.reply)

    def clear(self) -> None:
        self._records.clear()


class RetryableWrite:
    """The statements of one retryable write command on a primary (the owner holds the lock)."""

    def __init__(
        self,
        store: DataStore,
        failpoints: FailPoints,
        lsid: Mapping[str, Any],
        txn_number: int,
    ) -> None:
        self._store = store
        self._failpoints = failpoints
        self.lsid = lsid
        self.txn_number = txn_number

    def executed(self, stmt_id: int) -> Optional[dict[str, Any]]:
        """The result of the statement if an earlier attempt already applied it."""
        return self._store.sessions.executed(self.lsid, self.txn_number, stmt_id)

    def write(
        self,
        stmt_id: int,
        db: str,
        coll: str,
        apply: Callable[[], T],
        result: Callable[[T], Mapping[str, Any]],
    ) -> T:
        """Apply one statement (which changes at most ``db.coll``) and record it if it wrote.

        ``onPrimaryTransactionalWrite`` is reached only by a statement that wrote, as on
        a server, where it sits where the statement is recorded for the session.
        """
        store = self._store
        data = self._failpoints.transactional_write_armed()
        checkpoint = (
            store.checkpoint(db, coll)
            if data is not None and data.get("failBeforeCommitExceptionCode") is not None
            else None
        )
        start = store.oplog_end
        value = apply()
        if store.oplog_end == start:
            return value  # nothing written: nothing to record, nor to retry
        action = self._failpoints.on_primary_transactional_write() if data is not None else None
        if action is not None and action.error_code is not None:
            # The statement fails before it commits: it leaves no trace.
            if checkpoint is not None:
                store.rollback(checkpoint)
            if action.close_connection:
                raise CloseConnection
            raise CommandError(
                action.error_code,
                f"Failing write for {_describe(self.lsid)}:{self.txn_number} due to failpoint."
                " The write must not be reflected.",
            )
        store.sessions.record_statement(self.lsid, self.txn_number, stmt_id, result(value))
        if action is not None and action.close_connection:
            # Committed and recorded; the reply is lost, and the command stops here.
            raise CloseConnection
        return value


def _describe(lsid: Mapping[str, Any]) -> str:
    value = lsid.get("id")
    try:
        text = str(value.as_uuid()) if isinstance(value, bson.Binary) else str(value)
    except ValueError:
        text = repr(value)
    return f"{text} - "
