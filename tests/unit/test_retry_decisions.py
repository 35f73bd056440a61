"""Retry decisions of the pure policy: which errors retry, which commands may, when to stop.

Seeds: retryable-writes.rst 1.0, "Retryable Error" (network errors, and the "not
writable primary" and "node is recovering" errors of SDAM, as the command's error or
as its writeConcernError), "Supported Write Operations" and the pseudocode of
executeRetryableWrite (one retry, then the outcome is final); retryable-reads.rst
1.3.0, "Retryable Error" and "Supported Read Operations"; server-selection.rst 1.5,
"Passing read preference to mongos".
"""

from __future__ import annotations

from typing import Any

import pytest

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.retry_policy import (
    WritePolicy,
    is_retryable_read_command,
    is_retryable_read_error,
    is_retryable_write_command,
    is_retryable_write_error,
)
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import (
    ExecutionTimeout,
    NetworkError,
    OperationFailure,
    PoolClearedError,
    WriteConcernError,
)
from mongocore.io.operation import apply_read_preference

ADDRESS = Address("db", 27017)


def concern_error(write_concern_error: Any, code: Any = 64) -> WriteConcernError:
    # The error's own code and message are those of the reply's top level; the
    # writeConcernError document is what decides.
    reply = {"ok": 1, "n": 1, "writeConcernError": write_concern_error}
    return WriteConcernError("write concern failed", code, reply)


@pytest.mark.parametrize(
    ("write_concern_error", "retryable"),
    [
        ({"code": 91, "errmsg": "shutting down"}, True),
        ({"code": 10107, "errmsg": "x"}, True),
        ({"code": 64, "errmsg": "waiting for replication timed out"}, False),
        # Without a code the message decides; a code that is not an integer is no code.
        ({"errmsg": "node is recovering"}, True),
        ({"code": "91", "errmsg": "not master"}, True),
        ({"code": "91", "errmsg": "other"}, False),
        ({"code": 64}, False),
    ],
)
def test_write_concern_error_document_decides(
    write_concern_error: dict[str, Any], retryable: bool
) -> None:
    assert is_retryable_write_error(concern_error(write_concern_error)) is retryable
    # Never a retryable read error: a read has no write concern.
    assert not is_retryable_read_error(concern_error(write_concern_error))


def test_write_concern_error_without_its_document_uses_the_error_itself() -> None:
    assert is_retryable_write_error(WriteConcernError("not master", 10107, {"ok": 1}))
    assert not is_retryable_write_error(WriteConcernError("other", 64, {"ok": 1}))
    broken = WriteConcernError("node is recovering", None, {"writeConcernError": "oops"})
    assert is_retryable_write_error(broken)


@pytest.mark.parametrize(
    ("code", "retryable"), [(91, True), (89, True), (11000, False), (None, False)]
)
def test_read_errors_by_code(code: Any, retryable: bool) -> None:
    error = OperationFailure("failed", code, {"ok": 0, "code": code})
    assert is_retryable_read_error(error) is retryable
    assert not is_retryable_read_error(ValueError("not a server error"))


# --- which commands may retry ---------------------------------------------------------


def test_an_empty_command_is_neither_a_retryable_read_nor_write() -> None:
    assert not is_retryable_write_command({})
    assert not is_retryable_read_command({})


def test_update_statements_in_the_command_body_decide() -> None:
    multi = {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "multi": True}]}
    assert not is_retryable_write_command(multi)
    single = {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]}
    assert is_retryable_write_command(single)
    # A malformed statement list is no statement (the server will refuse the command).
    assert is_retryable_write_command({"update": "c", "updates": 5})
    assert is_retryable_write_command({"update": "c", "updates": "bogus"})


# --- the policies: terminal answers and timeouts --------------------------------------


def network(n: int) -> NetworkError:
    return NetworkError(f"reset {n}", address=ADDRESS)


def retryable_write_policy() -> WritePolicy:
    policy = WritePolicy(True)
    policy.server_selected(True)
    policy.connection_ready(True)
    return policy


def test_a_write_policy_that_said_raise_keeps_saying_it() -> None:
    # A non-retryable first error is final: a later error is not retried either.
    policy = retryable_write_policy()
    duplicate = OperationFailure("duplicate key", 11000, {"ok": 0, "code": 11000})
    assert policy.attempt_failed(duplicate) is duplicate
    later = network(2)
    assert policy.attempt_failed(later) is later and policy.previous_error is None
    # A retryable first error: one retry, then the outcome is final, and a later error
    # (even one of the driver) is answered as it is.
    policy = retryable_write_policy()
    assert policy.attempt_failed(network(1)) is None
    policy.server_selected(True)
    policy.connection_ready(True)
    retry_error = network(2)
    assert policy.attempt_failed(retry_error) is retry_error
    cleared = PoolClearedError("pool cleared", address=ADDRESS)
    assert policy.attempt_failed(cleared) is cleared


def test_expiry_raises_a_timeout_error_for_the_latest_error() -> None:
    # CSOT, "Retryability": a timeout error, the latest error its cause.
    policy = retryable_write_policy()
    first = network(1)
    assert policy.attempt_failed(first) is None
    expired = policy.expired()
    assert isinstance(expired, ExecutionTimeout) and expired.__cause__ is first
    latest = network(2)
    expired = policy.expired(latest)
    assert isinstance(expired, ExecutionTimeout) and expired.__cause__ is latest


def test_mongos_is_sent_the_read_preference_document() -> None:
    mongos = ServerDescription(ADDRESS, ServerType.MONGOS)
    command: dict[str, Any] = {"find": "c"}
    tagged = ReadPreference(Mode.SECONDARY, [{"dc": "ny"}])
    apply_read_preference(command, tagged, TopologyType.SHARDED, mongos)
    assert command == {
        "find": "c",
        "$readPreference": {"mode": "secondary", "tags": [{"dc": "ny"}]},
    }
