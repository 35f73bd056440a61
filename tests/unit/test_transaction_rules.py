"""Error labels, the retry of commit and abort, and the write concern of a commit sent
again (Transactions spec): mongocore.core.transaction_rules."""

from __future__ import annotations

from typing import Any, Callable, Optional

import pytest

from mongocore.core.retry_policy import NO_WRITES_PERFORMED, RETRYABLE_WRITE_ERROR
from mongocore.core.transaction_rules import (
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_TRANSACTION_COMMIT_RESULT,
    TransactionEndPolicy,
    commit_retry_write_concern,
    is_max_time_ms_expired,
    is_retryable_end_error,
    is_unknown_commit_result,
    label_transaction_error,
    unpins,
)
from mongocore.core.transaction_state import ABORT, COMMIT
from mongocore.errors import (
    ConfigurationError,
    InvalidOperation,
    MongoCoreError,
    NetworkError,
    NotPrimaryError,
    OperationFailure,
    PoolClearedError,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
    WriteConcernError,
    WTimeoutError,
    write_concern_error_from_reply,
)

WIRE_7_0 = 21
WIRE_4_4 = 9
WIRE_4_2 = 8


def _failure(code: int, labels: Optional[list[str]] = None) -> OperationFailure:
    details: dict[str, Any] = {"ok": 0, "code": code, "errmsg": "failed"}
    if labels is not None:
        details["errorLabels"] = labels
    return OperationFailure("failed", code, details)


def _wce(code: int, labels: Optional[list[str]] = None) -> WriteConcernError:
    reply: dict[str, Any] = {"ok": 1, "writeConcernError": {"code": code, "errmsg": "wce"}}
    if labels is not None:
        reply["errorLabels"] = labels
    return WriteConcernError("wce", code, reply)


def _labels(error: MongoCoreError) -> set[str]:
    return set(error.error_labels)


# --- inside the transaction ------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: NetworkError("reset"),
        lambda: ServerSelectionTimeoutError("no server"),
        lambda: PoolClearedError("cleared"),
    ],
    ids=["network", "selection", "pool cleared"],
)
def test_driver_errors_in_a_transaction_are_transient_and_never_retryable_writes(
    make: Callable[[], MongoCoreError],
) -> None:
    # A new error each run: labeling changes it.
    error = make()
    error.add_error_label(RETRYABLE_WRITE_ERROR)
    label_transaction_error(error, "insert", WIRE_7_0)
    assert _labels(error) == {TRANSIENT_TRANSACTION_ERROR}
    assert unpins(error, "insert", WIRE_7_0)


def test_server_errors_in_a_transaction_keep_the_servers_labels() -> None:
    duplicate = _failure(11000)
    label_transaction_error(duplicate, "insert", WIRE_7_0)
    assert _labels(duplicate) == set()
    assert not unpins(duplicate, "insert", WIRE_7_0)
    conflict = _failure(112, [TRANSIENT_TRANSACTION_ERROR])
    label_transaction_error(conflict, "update", WIRE_7_0)
    assert _labels(conflict) == {TRANSIENT_TRANSACTION_ERROR}
    assert unpins(conflict, "update", WIRE_7_0)
    # A "node is recovering" reply is a server's answer: the server labels it.
    recovering = NotPrimaryError("shutting down", 91, {"ok": 0, "code": 91})
    label_transaction_error(recovering, "find", WIRE_7_0)
    assert _labels(recovering) == set()


# --- commitTransaction -------------------------------------------------------------------


def test_a_network_error_of_the_commit_is_retryable_and_of_unknown_result() -> None:
    error = NetworkError("reset")
    error.add_error_label(TRANSIENT_TRANSACTION_ERROR)
    label_transaction_error(error, COMMIT, WIRE_7_0)
    assert _labels(error) == {RETRYABLE_WRITE_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT}
    assert unpins(error, COMMIT, WIRE_7_0)


def test_a_selection_error_of_the_commit_is_of_unknown_result_only() -> None:
    for error in (ServerSelectionTimeoutError("none"), WaitQueueTimeoutError("busy")):
        label_transaction_error(error, COMMIT, WIRE_7_0)
        assert _labels(error) == {UNKNOWN_TRANSACTION_COMMIT_RESULT}


@pytest.mark.parametrize(
    ("make", "unknown"),
    [
        (lambda: _failure(10107, [RETRYABLE_WRITE_ERROR]), True),  # labeled by the server
        (lambda: _failure(11600, []), False),  # 4.4+: no label, not retryable
        (lambda: _failure(11601), False),  # Interrupted
        (lambda: _failure(50), True),  # MaxTimeMSExpired
        (lambda: _wce(50), True),
        (lambda: _wce(64), True),  # WriteConcernTimeout
        (lambda: WTimeoutError("timeout", 64, {"writeConcernError": {"code": 64}}), True),
        (lambda: _wce(91), True),
        (lambda: _wce(100), False),  # UnsatisfiableWriteConcern: the concern is invalid
        (lambda: _wce(79), False),  # UnknownReplWriteConcern
        (lambda: _failure(251, [TRANSIENT_TRANSACTION_ERROR]), False),  # NoSuchTransaction
    ],
    ids=[
        "labeled",
        "unlabeled",
        "interrupted",
        "max time",
        "wce max time",
        "wce timeout",
        "wtimeout",
        "wce shutdown",
        "wce unsatisfiable",
        "wce unknown repl",
        "no such transaction",
    ],
)
def test_which_commit_errors_leave_the_result_unknown(
    make: Callable[[], OperationFailure], unknown: bool
) -> None:
    # A new error each run: labeling changes it, and a label left by an earlier run
    # would hide a missing one.
    error = make()
    label_transaction_error(error, COMMIT, WIRE_7_0)
    assert (UNKNOWN_TRANSACTION_COMMIT_RESULT in _labels(error)) is unknown
    assert unpins(error, COMMIT, WIRE_7_0) is (
        unknown or TRANSIENT_TRANSACTION_ERROR in _labels(error)
    )


def test_servers_older_than_4_4_have_their_retryable_codes_labeled_by_the_driver() -> None:
    old = _failure(11600)
    label_transaction_error(old, COMMIT, WIRE_4_2)
    assert _labels(old) == {RETRYABLE_WRITE_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT}
    new = _failure(11600)
    label_transaction_error(new, COMMIT, WIRE_7_0)
    assert RETRYABLE_WRITE_ERROR not in _labels(new)


def test_from_4_4_the_servers_label_alone_makes_commit_and_abort_retryable() -> None:
    """A 4.4 server labels the errors it wants retried: an unlabeled error with a code
    of the older list is not retried, from wire version 9 itself."""
    assert is_retryable_end_error(_failure(91, [RETRYABLE_WRITE_ERROR]), WIRE_4_4)
    assert is_retryable_end_error(_failure(2, [RETRYABLE_WRITE_ERROR]), WIRE_7_0)
    assert not is_retryable_end_error(_failure(91), WIRE_4_4)
    assert not is_retryable_end_error(_failure(262), WIRE_4_4)


def test_before_4_4_the_codes_decide_whether_commit_and_abort_are_retried() -> None:
    assert is_retryable_end_error(_failure(11602), WIRE_4_2)  # a state change error
    assert is_retryable_end_error(_failure(262), WIRE_4_2)  # ExceededTimeLimit
    assert is_retryable_end_error(_wce(9001), WIRE_4_2)  # SocketException
    assert not is_retryable_end_error(_failure(2), WIRE_4_2)
    assert not is_retryable_end_error(_failure(11601, [RETRYABLE_WRITE_ERROR]), WIRE_4_2)


def test_a_write_concern_error_without_a_code_leaves_the_commit_result_unknown() -> None:
    """A writeConcernError with no code is no invalid write concern: the commit's
    result is unknown, and reading the missing code is no error."""
    error = write_concern_error_from_reply({"ok": 1, "writeConcernError": {"errmsg": "wce"}})
    assert error is not None and error.code is None
    assert is_unknown_commit_result(error, WIRE_7_0)
    assert not is_max_time_ms_expired(error)


@pytest.mark.parametrize("wire_version", [WIRE_4_2, WIRE_7_0])
def test_an_error_of_the_driver_itself_at_commit_gets_no_label(wire_version: int) -> None:
    """An error raised before anything was sent (a configuration or usage error) is
    neither retryable nor of unknown result: the commit did not run."""
    for error in (ConfigurationError("no"), InvalidOperation("closed")):
        assert not is_unknown_commit_result(error, wire_version)
        label_transaction_error(error, COMMIT, wire_version)
        assert _labels(error) == set()


def test_a_commit_that_ran_out_of_time_is_of_unknown_result_from_any_server() -> None:
    """MaxTimeMSExpired (maxCommitTimeMS) is not retryable, yet leaves the result
    unknown."""
    error = _failure(50)
    assert not is_retryable_end_error(error, WIRE_7_0)
    assert is_unknown_commit_result(error, WIRE_7_0)
    assert is_unknown_commit_result(_failure(50), WIRE_4_2)


def test_abort_errors_all_unpin_and_never_get_commit_labels() -> None:
    error = NetworkError("reset")
    label_transaction_error(error, ABORT, WIRE_7_0)
    assert _labels(error) == {RETRYABLE_WRITE_ERROR}
    assert unpins(_failure(11601), ABORT, WIRE_7_0)


def test_max_time_ms_expired_as_the_error_or_the_write_concern_error() -> None:
    assert is_max_time_ms_expired(_failure(50))
    assert is_max_time_ms_expired(_wce(50))
    assert not is_max_time_ms_expired(_failure(64))
    assert not is_max_time_ms_expired(NetworkError("x"))


def test_the_write_concern_of_a_commit_sent_again() -> None:
    assert commit_retry_write_concern({}) == {"w": "majority", "wtimeout": 10000}
    assert commit_retry_write_concern({"w": 2, "j": True, "wtimeout": 5000}) == {
        "w": "majority",
        "j": True,
        "wtimeout": 5000,
    }
    original = {"w": 1}
    commit_retry_write_concern(original)
    assert original == {"w": 1}


# --- TransactionEndPolicy ------------------------------------------------------------------


def test_commit_and_abort_are_sent_again_once_after_a_retryable_error() -> None:
    policy = TransactionEndPolicy()
    first = NetworkError("reset")
    assert policy.attempt_failed(first) is None
    second = _failure(10107, [RETRYABLE_WRITE_ERROR])
    assert policy.attempt_failed(second) is second
    again = NetworkError("again")
    assert policy.attempt_failed(again) is again


def test_once_the_retry_failed_every_later_error_is_final_as_it_is() -> None:
    """After its one retry the policy is done: it neither retries nor swaps a later
    error (even one from the driver) for the first."""
    policy = TransactionEndPolicy()
    first = NetworkError("reset")
    assert policy.attempt_failed(first) is None
    assert policy.attempt_failed(NetworkError("again")) is not None
    busy = WaitQueueTimeoutError("busy")
    assert policy.attempt_failed(busy) is busy


def test_an_error_that_ended_the_commit_is_never_followed_by_a_retry() -> None:
    """A first error that is not retryable ends it: a later retryable one is final too."""
    policy = TransactionEndPolicy()
    refused = _failure(11601)
    assert policy.attempt_failed(refused) is refused
    reset = NetworkError("reset")
    assert policy.attempt_failed(reset) is reset
    assert policy.previous_error is None


@pytest.mark.parametrize(
    "error",
    [_failure(11601), _failure(11600, []), _wce(64)],
    ids=["interrupted", "unlabeled", "write concern timeout"],
)
def test_errors_without_the_retryable_label_are_final(error: OperationFailure) -> None:
    assert TransactionEndPolicy().attempt_failed(error) is error


def test_a_pool_cleared_at_checkout_is_retried() -> None:
    policy = TransactionEndPolicy()
    assert policy.checkout_failed(PoolClearedError("cleared")) is None


def test_after_the_retry_the_first_error_stands_if_the_retry_tells_nothing() -> None:
    policy = TransactionEndPolicy()
    first = _failure(91, [RETRYABLE_WRITE_ERROR])
    assert policy.attempt_failed(first) is None
    assert policy.attempt_failed(WaitQueueTimeoutError("busy")) is first
    policy = TransactionEndPolicy()
    assert policy.attempt_failed(first) is None
    assert policy.attempt_failed(_failure(91, [NO_WRITES_PERFORMED])) is first
