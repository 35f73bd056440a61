"""The transaction state machine of a session (Transactions spec, "ClientSession
changes", "When to unpin", "recoveryToken field"): mongocore.core.transaction_state."""

from __future__ import annotations

from typing import Callable

import pytest

from mongocore.core.address import Address
from mongocore.core.transaction_state import (
    ABORT,
    COMMIT,
    CommitPlan,
    Transaction,
    TransactionSettings,
    TransactionState,
)
from mongocore.errors import InvalidOperation

MONGOS = Address("a", 27017)


def _in_progress() -> Transaction:
    txn = Transaction()
    txn.start(TransactionSettings())
    assert txn.first_command()
    return txn


def test_a_session_starts_with_no_transaction_and_refuses_commit_and_abort() -> None:
    txn = Transaction()
    assert txn.state is TransactionState.NONE
    with pytest.raises(InvalidOperation, match="No transaction started"):
        txn.plan_commit()
    with pytest.raises(InvalidOperation, match="No transaction started"):
        txn.plan_abort()
    assert txn.state is TransactionState.NONE


def test_only_the_first_command_starts_the_transaction() -> None:
    txn = Transaction()
    txn.start(TransactionSettings(read_concern={"level": "snapshot"}))
    assert txn.state is TransactionState.STARTING and txn.active
    assert txn.first_command()
    assert txn.state is TransactionState.IN_PROGRESS
    assert not txn.first_command()
    assert txn.settings.read_concern == {"level": "snapshot"}


@pytest.mark.parametrize("sent", [False, True])
def test_starting_twice_is_refused_without_changing_anything(sent: bool) -> None:
    txn = Transaction()
    first = TransactionSettings(max_commit_time_ms=5)
    txn.start(first)
    if sent:
        txn.first_command()
    state = txn.state
    with pytest.raises(InvalidOperation, match="Transaction already in progress"):
        txn.start(TransactionSettings())
    assert txn.state is state
    assert txn.settings is first


def test_a_commit_with_nothing_sent_sends_nothing_and_can_be_repeated() -> None:
    txn = Transaction()
    txn.start(TransactionSettings())
    assert txn.plan_commit() is CommitPlan.EMPTY
    assert txn.state is TransactionState.COMMITTED_EMPTY
    assert txn.plan_commit() is CommitPlan.EMPTY
    with pytest.raises(InvalidOperation, match="after calling commitTransaction"):
        txn.plan_abort()


def test_a_commit_sent_again_runs_inside_the_transaction_then_commits() -> None:
    txn = _in_progress()
    assert txn.plan_commit() is CommitPlan.SEND
    txn.commit_done()
    assert txn.state is TransactionState.COMMITTED and not txn.active
    assert txn.plan_commit() is CommitPlan.RESEND
    assert txn.active  # its command belongs to the transaction while it runs
    txn.commit_done()
    assert txn.state is TransactionState.COMMITTED


def test_abort_rules() -> None:
    starting = Transaction()
    starting.start(TransactionSettings())
    assert starting.plan_abort() is False  # nothing was sent: nothing to abort
    starting.abort_done()
    assert starting.state is TransactionState.ABORTED
    with pytest.raises(InvalidOperation, match="Cannot call abortTransaction twice"):
        starting.plan_abort()
    with pytest.raises(InvalidOperation, match="after calling abortTransaction"):
        starting.plan_commit()
    assert starting.state is TransactionState.ABORTED
    assert _in_progress().plan_abort() is True


def test_an_operation_after_the_end_leaves_the_transaction_but_commit_and_abort_do_not() -> None:
    txn = _in_progress()
    txn.reply({"ok": 1, "recoveryToken": {"recoveryShardId": "s"}})
    txn.pin(MONGOS)
    txn.plan_commit()
    txn.commit_done()
    assert txn.for_operation(COMMIT) is True  # a commit again is the transaction's
    assert txn.pinned == MONGOS  # committing never unpins
    assert txn.for_operation("find") is False
    assert txn.state is TransactionState.NONE
    assert txn.pinned is None and txn.recovery_token is None
    with pytest.raises(InvalidOperation):
        txn.plan_abort()
    assert txn.for_operation(ABORT) is False


def test_pinning_unpinning_and_the_recovery_token() -> None:
    txn = _in_progress()
    txn.pin(MONGOS)
    txn.pin(Address("b", 27017))  # the first mongos stays
    assert txn.pinned == MONGOS
    txn.reply({"ok": 1})
    assert txn.recovery_token is None
    txn.reply({"ok": 1, "recoveryToken": {"recoveryShardId": "s1"}})
    txn.reply({"ok": 1, "recoveryToken": {"recoveryShardId": "s2"}})
    assert txn.recovery_token == {"recoveryShardId": "s2"}
    txn.unpin()
    assert txn.pinned is None
    txn.pin(MONGOS)
    txn.plan_abort()
    txn.abort_done()
    assert txn.pinned is None  # aborted: unpinned
    txn.pin(MONGOS)
    txn.start(TransactionSettings())  # a new transaction: unpinned, no token
    assert txn.pinned is None and txn.recovery_token is None


def test_ending_the_session_aborts_only_a_transaction_that_sent_something() -> None:
    starting = Transaction()
    starting.start(TransactionSettings())
    assert starting.end_session() is False
    assert _in_progress().end_session() is True
    assert Transaction().end_session() is False


def test_a_new_session_has_default_settings_no_mongos_and_no_recovery_token() -> None:
    txn = Transaction()
    assert txn.settings == TransactionSettings()
    assert txn.pinned is None and txn.recovery_token is None
    txn.pin(MONGOS)  # nothing pinned yet: the first mongos is taken
    assert txn.pinned == MONGOS


def _refusal(call: Callable[[], object]) -> str:
    with pytest.raises(InvalidOperation) as info:
        call()
    return str(info.value)


def test_the_refusals_are_worded_as_pymongo_words_them() -> None:
    """Word for word pymongo's messages (the spec's tests look for them, ignoring
    case; an application written for pymongo may compare them exactly)."""
    txn = Transaction()
    assert _refusal(txn.plan_commit) == "No transaction started"
    assert _refusal(txn.plan_abort) == "No transaction started"
    txn.start(TransactionSettings())
    assert _refusal(lambda: txn.start(TransactionSettings())) == "Transaction already in progress"
    txn.abort_done()
    assert _refusal(txn.plan_abort) == "Cannot call abortTransaction twice"
    assert (
        _refusal(txn.plan_commit) == "Cannot call commitTransaction after calling abortTransaction"
    )
    txn.start(TransactionSettings())
    txn.plan_commit()
    assert (
        _refusal(txn.plan_abort) == "Cannot call abortTransaction after calling commitTransaction"
    )
