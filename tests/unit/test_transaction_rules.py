"""Error labels, the retry of commit and abort, and the write concern of a commit sent
again (Transactions spec): mongocore.core.transaction_rules."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from mongocore.core.retry_policy import NO_WRITES_PERFORMED, RETRYABLE_WRITE_ERROR
from mongocore.core.transaction_rules import (
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_TRANSACTION_COMMIT_RESULT,
    TransactionEndPolicy,
    commit_retry_write_concern,
    is_max_time_ms_expired,
    label_transaction_error,
    unpins,
)
from mongocore.core.transaction_state import ABORT, COMMIT
from mongocore.errors import (
    MongoCoreError,
    NetworkError,
    NotPrimaryError,
    OperationFailure,
    PoolClearedError,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
    WriteConcernError,
    WTimeoutError,
)

WIRE_7_0 = 21
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
    "error",
    [
        NetworkError("reset"),
        ServerSelectionTimeoutError("no server"),
        PoolClearedError("cleared"),
    ],
    ids=["network", "selection", "pool cleared"],
)
def test_driver_errors_in_a_transaction_are_transient_and_never_retryable_writes(
    error: MongoCoreError,
) -> None:
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
    ("error", "unknown"),
    [
        (_failure(10107, [RETRYABLE_WRITE_ERROR]), True),  # labeled by the server
        (_failure(11600, []), False),  # 4.4+: no label, not retryable
        (_failure(11601), False),  # Interrupted
        (_failure(50), True),  # MaxTimeMSExpired
        (_wce(50), True),
        (_wce(64), True),  # WriteConcernTimeout
        (WTimeoutError("timeout", 64, {"writeConcernError": {"code": 64}}), True),
        (_wce(91), True),
        (_wce(100), False),  # UnsatisfiableWriteConcern: the concern is invalid
        (_wce(79), False),  # UnknownReplWriteConcern
        (_failure(251, [TRANSIENT_TRANSACTION_ERROR]), False),  # NoSuchTransaction
    ],
)
def test_which_commit_errors_leave_the_result_unknown(
    error: OperationFailure, unknown: bool
) -> None:
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
    assert policy.attempt_failed(NetworkError("again")) is not None


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
