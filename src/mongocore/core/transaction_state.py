"""The transaction state of a client session: the spec's state machine, as pure data.

Spec: Transactions, "ClientSession changes" (the five states and their diagram, plus
the "committed, empty" state a commit of a transaction that sent nothing leaves),
"startTransaction", "commitTransaction", "abortTransaction", "Mongos Pinning" ("When to
unpin") and "recoveryToken field".

A :class:`Transaction` belongs to one ClientSession and lives as long as it does. It
holds what a transaction needs besides its server session: its state, the settings it
was started with, the mongos it is pinned to and the last recovery token. It does no
I/O and reads no clock: the session asks it what to do (send a command or not, raise
which error) and tells it what happened.

Client-side errors never change the state: every method that raises does so before
changing anything.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Optional

from mongocore._deferred_dataclass import dataclass, field
from mongocore.core.address import Address
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import InvalidOperation


class TransactionState(str, enum.Enum):
    """The states of the spec's diagram (``COMMITTED_EMPTY``: committed, nothing sent)."""

    NONE = "none"
    STARTING = "starting"
    IN_PROGRESS = "in_progress"
    COMMITTED = "committed"
    COMMITTED_EMPTY = "committed_empty"
    ABORTED = "aborted"

    @property
    def active(self) -> bool:
        """Starting or in progress: operations on the session belong to the transaction."""
        return self in (TransactionState.STARTING, TransactionState.IN_PROGRESS)

    @property
    def finished(self) -> bool:
        return self in (
            TransactionState.COMMITTED,
            TransactionState.COMMITTED_EMPTY,
            TransactionState.ABORTED,
        )


#: The two commands that end a transaction; every other command of a session in a
#: finished transaction leaves it (the state goes back to NONE).
COMMIT = "commitTransaction"
ABORT = "abortTransaction"
END_COMMANDS = frozenset({COMMIT, ABORT})


@dataclass(frozen=True)
class TransactionSettings:
    """The resolved options of one transaction (startTransaction's, else the session's
    defaults, else the client's), as what goes on the wire.

    ``read_concern``: the readConcern document of the first command ({} sends none).
    ``write_concern``: the writeConcern document of commit and abort ({}: the server's
    default, sent as nothing). ``read_preference``: the reads' read preference.
    """

    read_concern: Mapping[str, Any] = field(default_factory=dict)
    write_concern: Mapping[str, Any] = field(default_factory=dict)
    read_preference: ReadPreference = field(default_factory=lambda: ReadPreference(Mode.PRIMARY))
    max_commit_time_ms: Optional[int] = None


class CommitPlan(enum.Enum):
    """What commitTransaction must do, decided from the state before it runs."""

    #: Nothing was sent in the transaction: no command, the state is COMMITTED_EMPTY.
    EMPTY = "empty"
    #: Send commitTransaction.
    SEND = "send"
    #: Send it again: the application retries a commit (majority write concern).
    RESEND = "resend"


class Transaction:
    """One session's transaction state machine (see the module docstring)."""

    __slots__ = ("pinned", "recovery_token", "settings", "state")

    def __init__(self) -> None:
        self.state = TransactionState.NONE
        self.settings = TransactionSettings()
        #: The mongos every command of a sharded transaction goes to (None: not pinned).
        self.pinned: Optional[Address] = None
        #: The last recoveryToken of a sharded transaction's replies.
        self.recovery_token: Optional[Mapping[str, Any]] = None

    @property
    def active(self) -> bool:
        return self.state.active

    # --- the application's calls ----------------------------------------------------

    def start(self, settings: TransactionSettings) -> None:
        """startTransaction: the caller has incremented the txnNumber already."""
        if self.state.active:
            raise InvalidOperation("Transaction already in progress")
        self.settings = settings
        self.state = TransactionState.STARTING
        # Rule 4 of "When to unpin", and "MUST clear a session's cached recoveryToken
        # when transitioning to the ... starting transaction state".
        self.pinned = None
        self.recovery_token = None

    def plan_commit(self) -> CommitPlan:
        """commitTransaction, before anything is sent."""
        state = self.state
        if state is TransactionState.NONE:
            raise InvalidOperation("No transaction started")
        if state is TransactionState.ABORTED:
            raise InvalidOperation("Cannot call commitTransaction after calling abortTransaction")
        if state in (TransactionState.STARTING, TransactionState.COMMITTED_EMPTY):
            self.state = TransactionState.COMMITTED_EMPTY
            return CommitPlan.EMPTY
        if state is TransactionState.COMMITTED:
            # Running again: the commands see a transaction in progress meanwhile.
            self.state = TransactionState.IN_PROGRESS
            return CommitPlan.RESEND
        return CommitPlan.SEND

    def commit_done(self) -> None:
        """The commit returned or raised: committed "even on error"."""
        self.state = TransactionState.COMMITTED

    def plan_abort(self) -> bool:
        """abortTransaction, before anything is sent: True if the command must be sent."""
        state = self.state
        if state is TransactionState.NONE:
            raise InvalidOperation("No transaction started")
        if state in (TransactionState.COMMITTED, TransactionState.COMMITTED_EMPTY):
            raise InvalidOperation("Cannot call abortTransaction after calling commitTransaction")
        if state is TransactionState.ABORTED:
            raise InvalidOperation("Cannot call abortTransaction twice")
        return state is TransactionState.IN_PROGRESS

    def abort_done(self) -> None:
        """The abort ran (or needed no command): aborted, and unpinned (rule 1)."""
        self.state = TransactionState.ABORTED
        self.pinned = None

    # --- what the operations of the session tell it -------------------------------------

    def for_operation(self, command: str) -> bool:
        """An operation of the session is about to run ``command``: does it belong to
        the transaction? An operation after a finished transaction (other than commit
        and abort) leaves it, and one outside any transaction unpins (rule 5)."""
        if self.state.finished and command not in END_COMMANDS:
            self.state = TransactionState.NONE
            self.recovery_token = None
        if self.state is TransactionState.NONE:
            self.pinned = None
            return False
        return True

    def first_command(self) -> bool:
        """A command of the transaction is being sent: True for the first one (it starts
        the transaction on the server). In progress from now on, even on error."""
        if self.state is TransactionState.STARTING:
            self.state = TransactionState.IN_PROGRESS
            return True
        return False

    def pin(self, address: Address) -> None:
        if self.pinned is None:
            self.pinned = address

    def unpin(self) -> None:
        self.pinned = None

    def reply(self, reply: Mapping[str, Any]) -> None:
        """Track the newest recoveryToken (sharded transactions; never changed)."""
        token = reply.get("recoveryToken")
        if isinstance(token, Mapping):
            self.recovery_token = token

    def end_session(self) -> bool:
        """The session ends: True if a transaction must be aborted first."""
        return self.state is TransactionState.IN_PROGRESS
