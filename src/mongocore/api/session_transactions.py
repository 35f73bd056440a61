"""The transaction methods of a ClientSession: start, commit, abort, with_transaction.

Spec: Transactions ("Transaction API", "startTransaction", "commitTransaction" and
"writeConcern for commitTransaction attempts", "abortTransaction", "endSession
changes", "Sharded Transactions"); the convenient API in
:mod:`mongocore.api.with_transaction`.

The state machine is :class:`mongocore.core.transaction_state.Transaction`; the
retry executor adds the transaction's fields to each command of the session
(:mod:`mongocore.io.transaction_commands`). This module runs commitTransaction and
abortTransaction, and decides what the application sees of their errors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from bson import Int64

from mongocore.api.transaction_options import TransactionOptions, resolve_settings
from mongocore.api.with_transaction import run_with_transaction
from mongocore.core.retry_policy import RetryKind
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.core.transaction_rules import (
    commit_retry_write_concern,
    label_transaction_error,
    unpins,
)
from mongocore.core.transaction_state import (
    ABORT,
    COMMIT,
    CommitPlan,
    Transaction,
    TransactionState,
)
from mongocore.errors import InvalidOperation, MongoCoreError, write_concern_error_from_reply
from mongocore.io.operation import AttemptContext, Command, new_operation
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongocore.api.client import Client
    from mongocore.api.client_session import ClientSession, SessionOptions
    from mongocore.core.address import Address
    from mongocore.io.pinning import PinnedConnection
    from mongocore.io.sessions import ServerSession

_T = TypeVar("_T")


class TransactionContext:
    """What ``start_transaction()`` returns, for a ``with`` block: leaving the block
    normally commits the transaction if it is still running; leaving it with an
    exception aborts it (and never commits)."""

    __slots__ = ("_session",)

    def __init__(self, session: TransactionMixin) -> None:
        self._session = session

    def __enter__(self) -> TransactionContext:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        session = self._session
        if session.in_transaction:
            if exc is None:
                session.commit_transaction()
            else:
                session.abort_transaction()


class TransactionMixin:
    """The transaction half of :class:`mongocore.api.client_session.ClientSession`."""

    _client: Client
    _options: SessionOptions
    _ended: bool
    #: Created by the first start_transaction (implicit sessions never have one).
    _transaction: Optional[Transaction] = None

    if TYPE_CHECKING:

        def _server_session_for_use(self) -> ServerSession: ...

        def _sync_pinned_connection(self) -> Optional[PinnedConnection]: ...

    # --- the spec's members ----------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        """True from ``start_transaction()`` until the commit or abort."""
        return self._transaction is not None and self._transaction.active

    @property
    def transaction_state(self) -> TransactionState:
        """The transaction state (none, starting, in progress, committed, aborted)."""
        return TransactionState.NONE if self._transaction is None else self._transaction.state

    @property
    def pinned_address(self) -> Optional[Address]:
        """The mongos a sharded transaction is pinned to (None when not pinned)."""
        return None if self._transaction is None else self._transaction.pinned

    def start_transaction(
        self,
        read_concern: Optional[ReadConcern] = None,
        write_concern: Optional[WriteConcern] = None,
        read_preference: Optional[ReadPreference] = None,
        max_commit_time_ms: Optional[int] = None,
    ) -> TransactionContext:
        """Start a multi-document transaction; options not given come from the
        session's ``default_transaction_options``, else from the client.

        Nothing is sent: the transaction starts on the server with its first command.
        Usable as ``with session.start_transaction():`` (committed when the block ends
        normally, aborted when it raises).
        """
        if self._ended:
            raise InvalidOperation("cannot use a session that has ended")
        if getattr(self._options, "snapshot", False):
            raise InvalidOperation("Transactions are not supported in snapshot sessions")
        transaction = self._transaction
        if transaction is not None and transaction.active:
            raise InvalidOperation("Transaction already in progress")
        given = TransactionOptions(read_concern, write_concern, read_preference, max_commit_time_ms)
        settings = resolve_settings(
            given, getattr(self._options, "default_transaction_options", None), self._client
        )
        if transaction is None:
            transaction = self._transaction = Transaction()
        # "Drivers MUST increment the txnNumber for the corresponding server session."
        self._server_session_for_use().next_txn_number()
        transaction.start(settings)
        self._sync_pinned_connection()  # a new transaction unpins the last one's
        return TransactionContext(self)

    def commit_transaction(self) -> None:
        """Commit the transaction. A commit called again (after an error labeled
        UnknownTransactionCommitResult, or after a success) runs again, with a majority
        write concern. The transaction is committed afterwards, even on error."""
        transaction = self._live_transaction()
        plan = transaction.plan_commit()
        if plan is CommitPlan.EMPTY:
            return  # nothing was sent: nothing to commit on the server
        try:
            self._end_transaction(COMMIT, transaction, again=plan is CommitPlan.RESEND)
        finally:
            transaction.commit_done()

    def abort_transaction(self) -> None:
        """Abort the transaction. Errors of the abortTransaction command are ignored:
        the server aborts the transaction in any case, eventually."""
        transaction = self._live_transaction()
        send = transaction.plan_abort()
        try:
            if send:
                self._end_transaction(ABORT, transaction, again=False)
        except MongoCoreError:
            pass  # "Drivers MUST NOT propagate errors from the abortTransaction command"
        finally:
            transaction.abort_done()
            self._sync_pinned_connection()  # aborted: unpinned

    def with_transaction(
        self,
        callback: Callable[[ClientSession], _T],
        read_concern: Optional[ReadConcern] = None,
        write_concern: Optional[WriteConcern] = None,
        read_preference: Optional[ReadPreference] = None,
        max_commit_time_ms: Optional[int] = None,
    ) -> _T:
        """Run ``callback(session)`` in a transaction and commit it, retrying as the
        convenient transactions API says (see :mod:`mongocore.api.with_transaction`):
        the callback may run more than once, so it must be safe to repeat, and it must
        let the errors of its operations propagate. Returns the callback's result."""
        options = TransactionOptions(
            read_concern, write_concern, read_preference, max_commit_time_ms
        )
        return run_with_transaction(self, callback, options)  # type: ignore[arg-type]

    # --- helpers ---------------------------------------------------------------------

    def _live_transaction(self) -> Transaction:
        if self._ended:
            raise InvalidOperation("cannot use a session that has ended")
        if self._transaction is None:
            raise InvalidOperation("No transaction started")
        return self._transaction

    def _end_transaction(self, command: str, transaction: Transaction, *, again: bool) -> None:
        """Run commitTransaction or abortTransaction through the executor (one retry
        after a retryable error, see TransactionEndPolicy). A commit's write concern
        error is raised here, labeled like the executor labels errors."""
        settings = transaction.settings

        def build(ctx: AttemptContext) -> Command:
            body: dict[str, Any] = {command: 1}
            write_concern: Mapping[str, Any] = settings.write_concern
            if command == COMMIT:
                if again or ctx.attempt > 1:
                    write_concern = commit_retry_write_concern(write_concern)
                if settings.max_commit_time_ms is not None:
                    body["maxTimeMS"] = settings.max_commit_time_ms
            if write_concern:
                body["writeConcern"] = dict(write_concern)
            if transaction.recovery_token is not None:
                body["recoveryToken"] = transaction.recovery_token
            return Command(body)

        op = new_operation(
            name=command,
            database="admin",
            build=build,
            session=self,  # type: ignore[arg-type]
            retry=RetryKind.WRITE,
        )
        outcome = self._client._executor.run(op)
        error = write_concern_error_from_reply(outcome.reply)
        if error is not None and command == COMMIT:
            label_transaction_error(error, command, outcome.server.max_wire_version)
            if unpins(error, command, outcome.server.max_wire_version):
                transaction.unpin()
            raise error

    # --- used by the retry executor --------------------------------------------------

    def _transaction_for(self, command: str) -> Optional[Transaction]:
        """The transaction ``command`` belongs to, if any (a finished transaction is
        left by any command but commit and abort)."""
        transaction = self._transaction
        if transaction is None or not transaction.for_operation(command):
            return None
        return transaction

    def _transaction_number(self) -> Int64:
        """The transaction's txnNumber: the server session's current one."""
        return Int64(self._server_session_for_use().txn_number)

    def _end_transaction_for_session_end(self) -> None:
        """endSession: abort a transaction in progress, ignoring every error."""
        transaction = self._transaction
        if transaction is None:
            return
        if transaction.end_session():
            with contextlib.suppress(MongoCoreError):
                self.abort_transaction()
        transaction.unpin()
