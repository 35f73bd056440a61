"""The pure retry policy: which errors and commands retry, and the seeds' pseudocode outcomes.

Seeds: retryable-writes.rst 1.0 (2018-03-14) "executeRetryableWrite", and
retryable-reads.rst 1.3.0 "executeRetryableRead". Each policy is driven step by
step as the executor drives it, and the test checks what it answers: go on (None)
or the error to raise.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.retry_policy import (
    NO_WRITES_PERFORMED,
    RETRYABLE_WRITE_ERROR,
    SEED_RETRYABLE_READ_CODES,
    ReadPolicy,
    SingleAttemptPolicy,
    WritePolicy,
    caller_can_infer_attempt,
    is_retryable_read_command,
    is_retryable_read_error,
    is_retryable_write_command,
    is_retryable_write_error,
    needs_retryable_write_label,
    supports_retryable_reads,
    supports_retryable_writes,
)
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import (
    ConfigurationError,
    DocumentTooLarge,
    ExecutionTimeout,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    PoolClearedError,
    ProtocolError,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
    WriteConcernError,
)
from mongocore.io.operation import apply_read_preference

ADDRESS = Address("db1", 27017)


def server_error(code: Optional[int], message: str = "failed", **reply: Any) -> OperationFailure:
    details = {"ok": 0, "errmsg": message, **({"code": code} if code is not None else {})}
    details.update(reply)
    return OperationFailure(message, code, details)


def wce_error(code: int, labels: tuple[str, ...] = ()) -> WriteConcernError:
    reply: dict[str, Any] = {"ok": 1, "n": 1, "writeConcernError": {"code": code, "errmsg": "wce"}}
    if labels:
        reply["errorLabels"] = list(labels)
    return WriteConcernError("wce", code, reply)


def network() -> NetworkError:
    return NetworkError("connection reset", address=ADDRESS)


def timeout() -> NetworkTimeout:
    return NetworkTimeout("timed out", address=ADDRESS)


def selection_error() -> ServerSelectionTimeoutError:
    return ServerSelectionTimeoutError("no server")


STATE_CHANGE_CODES = (10107, 13435, 10058, 11600, 11602, 13436, 189, 91)


# --- which errors retry --------------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(SEED_RETRYABLE_READ_CODES))
def test_the_seeds_read_codes_are_retryable(code: int) -> None:
    assert is_retryable_read_error(server_error(code))


@pytest.mark.parametrize("code", [262, 134])
def test_the_newer_specs_extra_read_codes_are_not_retried(code: int) -> None:
    # retryable-reads 1.3.0 "MUST only retry" its own list; the newer spec adds these.
    assert code not in SEED_RETRYABLE_READ_CODES
    assert not is_retryable_read_error(server_error(code))
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    read_attempt(policy)
    error = server_error(code)
    assert policy.attempt_failed(error) is error


@pytest.mark.parametrize("code", [2, 11000, 50, 20, 11601, None])
def test_other_read_errors_are_not(code: Optional[int]) -> None:
    assert not is_retryable_read_error(server_error(code))


def test_network_errors_and_pool_cleared_are_retryable_reads() -> None:
    assert is_retryable_read_error(network())
    assert is_retryable_read_error(timeout())
    assert is_retryable_read_error(PoolClearedError("cleared", ADDRESS))


@pytest.mark.parametrize(
    "error",
    [
        WaitQueueTimeoutError("queue"),
        selection_error(),
        DocumentTooLarge("too large"),
        ConfigurationError("bad"),
        ProtocolError("garbage"),
        wce_error(91),
    ],
)
def test_driver_errors_and_write_concern_errors_are_not_retryable_reads(error: Exception) -> None:
    assert not is_retryable_read_error(error)


@pytest.mark.parametrize("code", STATE_CHANGE_CODES)
def test_not_writable_primary_and_recovering_writes_retry_by_code(code: int) -> None:
    # The seed's "Retryable Error": no label needed.
    assert is_retryable_write_error(server_error(code))


@pytest.mark.parametrize("message", ["not master", "node is recovering", "not master or secondary"])
def test_state_change_messages_without_a_code_retry(message: str) -> None:
    assert is_retryable_write_error(server_error(None, message))


@pytest.mark.parametrize("code", [6, 7, 89, 9001, 262, 11000, 112, 64])
def test_other_write_errors_never_retry_even_with_the_label(code: int) -> None:
    # retryable-writes 1.0: "MUST NOT attempt to retry a write command on any other error".
    assert not is_retryable_write_error(server_error(code))
    labeled = server_error(code, errorLabels=[RETRYABLE_WRITE_ERROR])
    assert not is_retryable_write_error(labeled)
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    assert policy.attempt_failed(labeled) is labeled


def test_write_concern_errors_retry_by_their_own_code_only() -> None:
    assert is_retryable_write_error(wce_error(91))  # ShutdownInProgress
    assert is_retryable_write_error(wce_error(189))
    assert not is_retryable_write_error(wce_error(64))  # WriteConcernFailed (wtimeout)
    assert not is_retryable_write_error(wce_error(11601))  # Interrupted
    assert not is_retryable_write_error(wce_error(64, (RETRYABLE_WRITE_ERROR,)))


def test_network_and_pool_cleared_errors_are_retryable_writes() -> None:
    assert is_retryable_write_error(network())
    assert is_retryable_write_error(timeout())
    assert is_retryable_write_error(PoolClearedError("cleared", ADDRESS))
    assert not is_retryable_write_error(WaitQueueTimeoutError("queue"))
    assert not is_retryable_write_error(DocumentTooLarge("big"))


def test_which_errors_let_the_caller_infer_an_attempt() -> None:
    assert caller_can_infer_attempt(network())
    assert caller_can_infer_attempt(server_error(2))
    assert caller_can_infer_attempt(ProtocolError("garbage"))
    assert not caller_can_infer_attempt(PoolClearedError("cleared", ADDRESS))
    assert not caller_can_infer_attempt(WaitQueueTimeoutError("queue"))
    assert not caller_can_infer_attempt(DocumentTooLarge("big"))


def test_the_label_goes_on_network_errors_of_any_server() -> None:
    assert needs_retryable_write_label(network(), max_wire_version=21, is_mongos=False)
    assert needs_retryable_write_label(timeout(), max_wire_version=6, is_mongos=True)


@pytest.mark.parametrize("code", STATE_CHANGE_CODES)
def test_the_label_goes_on_pre_44_server_errors_the_seed_retries(code: int) -> None:
    assert needs_retryable_write_label(server_error(code), max_wire_version=8, is_mongos=False)
    assert needs_retryable_write_label(server_error(code), max_wire_version=8, is_mongos=True)
    # 4.4+ servers label errors themselves: never added by the driver.
    assert not needs_retryable_write_label(server_error(code), max_wire_version=9, is_mongos=False)


def test_the_label_on_write_concern_errors_only_from_a_pre_44_mongod() -> None:
    assert needs_retryable_write_label(wce_error(91), max_wire_version=8, is_mongos=False)
    assert not needs_retryable_write_label(wce_error(91), max_wire_version=8, is_mongos=True)
    assert not needs_retryable_write_label(wce_error(91), max_wire_version=9, is_mongos=False)
    assert not needs_retryable_write_label(wce_error(64), max_wire_version=8, is_mongos=False)
    assert not needs_retryable_write_label(server_error(11000), max_wire_version=8, is_mongos=False)
    # Codes the newer spec labels but the seed never retries get no label from us.
    for code in (6, 7, 89, 9001, 262):
        assert not needs_retryable_write_label(
            server_error(code), max_wire_version=8, is_mongos=False
        )
    assert not needs_retryable_write_label(
        WaitQueueTimeoutError("queue"), max_wire_version=8, is_mongos=False
    )


# --- which commands retry ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "sequences", "expected"),
    [
        ({"insert": "c"}, {"documents": [{"_id": 1}]}, True),
        ({"update": "c"}, {"updates": [{"q": {}, "u": {"$set": {"a": 1}}}]}, True),
        ({"update": "c"}, {"updates": [{"q": {}, "u": {"$set": {"a": 1}}, "multi": False}]}, True),
        (
            {"update": "c"},
            {"updates": [{"q": {}, "u": {}}, {"q": {}, "u": {}, "multi": True}]},
            False,
        ),
        ({"delete": "c"}, {"deletes": [{"q": {}, "limit": 1}]}, True),
        ({"delete": "c"}, {"deletes": [{"q": {}, "limit": 1}, {"q": {}, "limit": 0}]}, False),
        ({"delete": "c", "deletes": [{"q": {}, "limit": 0}]}, None, False),
        ({"findAndModify": "c", "query": {}, "remove": True}, None, True),
        ({"insert": "c", "writeConcern": {"w": 0}}, {"documents": [{}]}, False),
        ({"insert": "c", "writeConcern": {"w": 0, "j": True}}, {"documents": [{}]}, True),
        ({"insert": "c", "writeConcern": {"w": "majority"}}, {"documents": [{}]}, True),
        ({"aggregate": "c", "pipeline": [{"$out": "d"}]}, None, False),
        ({"create": "c"}, None, False),
        ({"renameCollection": "a.b", "to": "a.c"}, None, False),
    ],
)
def test_supported_write_commands(
    command: dict[str, Any], sequences: Optional[dict[str, Any]], expected: bool
) -> None:
    assert is_retryable_write_command(command, sequences) is expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ({"find": "c", "filter": {}}, True),
        ({"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {}}, True),
        ({"aggregate": "c", "pipeline": [{"$match": {}}, {"$out": "d"}]}, False),
        ({"aggregate": "c", "pipeline": [{"$merge": {"into": "d"}}]}, False),
        ({"distinct": "c", "key": "a"}, True),
        ({"count": "c"}, True),
        ({"listDatabases": 1}, True),
        ({"listCollections": 1}, True),
        ({"listIndexes": "c"}, True),
        ({"getMore": 5, "collection": "c"}, False),
        ({"mapReduce": "c"}, False),
        ({"insert": "c"}, False),
    ],
)
def test_supported_read_commands(command: dict[str, Any], expected: bool) -> None:
    assert is_retryable_read_command(command) is expected


@pytest.mark.parametrize(
    ("server_type", "wire", "lstm", "expected"),
    [
        (ServerType.RS_PRIMARY, 6, 30, True),
        (ServerType.RS_PRIMARY, 21, 30, True),
        (ServerType.MONGOS, 6, 30, True),
        (ServerType.RS_PRIMARY, 5, 30, False),
        (ServerType.RS_PRIMARY, 21, None, False),
        (ServerType.STANDALONE, 21, 30, False),
    ],
)
def test_servers_that_support_retryable_writes(
    server_type: ServerType, wire: int, lstm: Optional[int], expected: bool
) -> None:
    assert supports_retryable_writes(server_type, wire, lstm) is expected


def test_retryable_reads_need_wire_version_6() -> None:
    assert not supports_retryable_reads(5)
    assert supports_retryable_reads(6)


# --- executeRetryableWrite -------------------------------------------------------------


def first_attempt(policy: WritePolicy, supported: bool = True) -> None:
    assert policy.server_selected(supported) is None
    assert policy.connection_ready(supported) is None


def test_write_selection_failure_on_the_first_attempt_propagates() -> None:
    policy = WritePolicy(enabled=True)
    error = selection_error()
    assert policy.selection_failed(error) is error


def test_write_without_retry_writes_runs_once() -> None:
    policy = WritePolicy(enabled=False)
    first_attempt(policy)
    assert not policy.adds_transaction_id
    error = network()
    assert policy.attempt_failed(error) is error


def test_write_on_a_server_without_support_runs_once_without_transaction_id() -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy, supported=False)
    assert not policy.adds_transaction_id
    error = server_error(10107)
    assert policy.attempt_failed(error) is error


def test_write_non_retryable_error_propagates() -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    assert policy.adds_transaction_id
    error = server_error(11000)
    assert policy.attempt_failed(error) is error


def test_write_retried_once_and_succeeds() -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    original = network()
    assert policy.attempt_failed(original) is None
    assert policy.previous_error is original
    assert policy.server_selected(True) is None
    assert policy.connection_ready(True) is None
    assert policy.adds_transaction_id  # the same transaction id on the retry


def test_write_reselection_failure_raises_the_original_error() -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    original = server_error(91)
    assert policy.attempt_failed(original) is None
    assert policy.selection_failed(selection_error()) is original


def test_write_retry_server_without_support_raises_the_original_error() -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    original = network()
    assert policy.attempt_failed(original) is None
    assert policy.server_selected(False) is original
    policy2 = WritePolicy(enabled=True)
    first_attempt(policy2)
    assert policy2.attempt_failed(original) is None
    assert policy2.server_selected(True) is None
    assert policy2.connection_ready(False) is original  # e.g. no sessions on the connection


@pytest.mark.parametrize(
    "second", [network(), timeout(), server_error(10107), server_error(11000), wce_error(91)]
)
def test_write_retry_failing_with_a_server_or_network_error_raises_it(second: Exception) -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    assert policy.attempt_failed(network()) is None
    first_attempt(policy)
    assert policy.attempt_failed(second) is second  # retried at most once


@pytest.mark.parametrize(
    "second",
    [PoolClearedError("cleared", ADDRESS), WaitQueueTimeoutError("queue"), DocumentTooLarge("big")],
)
def test_write_retry_failing_in_the_driver_raises_the_original_error(second: Exception) -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    original = server_error(189)
    assert policy.attempt_failed(original) is None
    assert policy.server_selected(True) is None
    assert policy.checkout_failed(second) is original


def test_write_retry_labeled_no_writes_performed_raises_the_original_error() -> None:
    policy = WritePolicy(enabled=True)
    first_attempt(policy)
    original = server_error(91)
    assert policy.attempt_failed(original) is None
    first_attempt(policy)
    second = server_error(64, errorLabels=[NO_WRITES_PERFORMED, RETRYABLE_WRITE_ERROR])
    assert policy.attempt_failed(second) is original


def test_write_checkout_failure_on_the_first_attempt_is_retried() -> None:
    policy = WritePolicy(enabled=True)
    assert policy.server_selected(True) is None
    cleared = PoolClearedError("cleared", ADDRESS)
    assert policy.checkout_failed(cleared) is None
    first_attempt(policy)
    # The retry failing in the driver again: the first error is the one to raise.
    assert policy.checkout_failed(WaitQueueTimeoutError("queue")) is cleared


def test_write_checkout_failure_on_an_unsupported_first_server_is_not_retried() -> None:
    policy = WritePolicy(enabled=True)
    assert policy.server_selected(False) is None
    error = network()
    assert policy.checkout_failed(error) is error


# --- executeRetryableRead --------------------------------------------------------------


def read_attempt(policy: ReadPolicy, supported: bool = True) -> None:
    assert policy.server_selected(None) is None
    assert policy.connection_ready(supported) is None


def test_read_selection_failure_on_the_first_attempt_propagates() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    error = selection_error()
    assert policy.selection_failed(error) is error


def test_read_retried_until_success_not_just_once() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    errors = [network(), server_error(91), server_error(6), network(), server_error(13435)]
    for error in errors:
        read_attempt(policy)
        assert policy.attempt_failed(error) is None
        assert policy.previous_error is error
    read_attempt(policy)  # the next attempt may succeed


def test_read_stops_at_the_second_socket_timeout_and_raises_it() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=True)
    read_attempt(policy)
    assert policy.attempt_failed(timeout()) is None
    read_attempt(policy)
    assert policy.attempt_failed(server_error(91)) is None  # not consecutive: still counts
    read_attempt(policy)
    second = timeout()
    assert policy.attempt_failed(second) is second
    assert policy.socket_timeouts == 2


def test_socket_timeouts_are_not_counted_unless_socket_timeout_ms_derives_them() -> None:
    # The seed's cap applies "if the socketTimeoutMS option is set and is being used to
    # derive socket timeouts for the operation"; otherwise a timeout is a network error.
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    for _ in range(4):
        read_attempt(policy)
        assert policy.attempt_failed(timeout()) is None
    assert policy.socket_timeouts == 0


def test_connect_timeouts_at_checkout_are_retried_and_not_counted() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=True)
    for _ in range(3):
        assert policy.checkout_failed(timeout()) is None
    assert policy.socket_timeouts == 0
    read_attempt(policy)
    assert policy.attempt_failed(timeout()) is None
    assert policy.socket_timeouts == 1


def test_read_pool_cleared_at_checkout_is_retried_and_becomes_the_previous_error() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    assert policy.server_selected(None) is None
    cleared = PoolClearedError("cleared", ADDRESS)
    assert policy.checkout_failed(cleared) is None
    assert policy.selection_failed(selection_error()) is cleared


def test_read_network_error_while_connecting_is_retried() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    assert policy.checkout_failed(network()) is None


def test_read_retry_selection_failure_raises_the_previous_error() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    read_attempt(policy)
    first = network()
    assert policy.attempt_failed(first) is None
    read_attempt(policy)
    second = server_error(11602)
    assert policy.attempt_failed(second) is None
    assert policy.selection_failed(selection_error()) is second


def test_read_on_a_server_too_old_runs_once() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    assert policy.connection_ready(False) is None
    error = network()
    assert policy.attempt_failed(error) is error


def test_read_retry_on_a_server_too_old_raises_the_previous_error() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    read_attempt(policy)
    previous = network()
    assert policy.attempt_failed(previous) is None
    assert policy.connection_ready(False) is previous


def test_read_without_retry_reads_runs_once() -> None:
    policy = ReadPolicy(enabled=False, count_socket_timeouts=False)
    read_attempt(policy)
    error = network()
    assert policy.attempt_failed(error) is error
    cleared = PoolClearedError("cleared", ADDRESS)
    assert (
        ReadPolicy(enabled=False, count_socket_timeouts=False).checkout_failed(cleared) is cleared
    )


def test_read_in_a_transaction_runs_once() -> None:
    policy = ReadPolicy(enabled=True, in_transaction=True, count_socket_timeouts=False)
    read_attempt(policy)
    error = server_error(91)
    assert policy.attempt_failed(error) is error


def test_read_non_retryable_server_error_after_retries_is_raised() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    read_attempt(policy)
    assert policy.attempt_failed(network()) is None
    read_attempt(policy)
    final = server_error(2)
    assert policy.attempt_failed(final) is final


def test_read_driver_error_after_retries_raises_the_previous_error() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    read_attempt(policy)
    previous = server_error(189)
    assert policy.attempt_failed(previous) is None
    assert policy.checkout_failed(WaitQueueTimeoutError("queue")) is previous


def test_read_driver_error_on_the_first_attempt_propagates() -> None:
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    error = WaitQueueTimeoutError("queue")
    assert policy.checkout_failed(error) is error


def test_timeout_ms_expiry_raises_a_timeout_error_for_the_last_error() -> None:
    """CSOT, "Retryability": once timeoutMS expires, a timeout error; the error the
    policy would have raised is its cause, named in its message, its labels kept."""
    policy = ReadPolicy(enabled=True, count_socket_timeouts=False)
    read_attempt(policy)
    last = server_error(6, errorLabels=["SomeLabel"])
    assert policy.attempt_failed(last) is None
    expired = policy.expired(last)
    assert isinstance(expired, ExecutionTimeout) and expired.timeout and expired.code == 50
    assert expired.__cause__ is last and str(last) in str(expired)
    assert expired.has_error_label("SomeLabel")
    write = WritePolicy(enabled=True)
    first_attempt(write)
    original = network()
    assert write.attempt_failed(original) is None
    expired = write.expired(original)
    assert isinstance(expired, ExecutionTimeout) and expired.__cause__ is original
    # An error that is a timeout already is raised as it is.
    read = ReadPolicy(enabled=True, count_socket_timeouts=False)
    read_attempt(read)
    timed_out = timeout()
    assert read.attempt_failed(timed_out) is None
    assert read.expired(timed_out) is timed_out


def test_single_attempt_policy_raises_everything() -> None:
    policy = SingleAttemptPolicy()
    error = network()
    assert policy.attempt_failed(error) is error
    cleared = PoolClearedError("cleared", ADDRESS)
    assert policy.checkout_failed(cleared) is cleared
    selection = selection_error()
    assert policy.selection_failed(selection) is selection


# --- read preference in commands ---------------------------------------------------------


def test_read_preference_is_sent_to_a_secondary_and_to_mongos() -> None:
    secondary = ServerDescription(ADDRESS, ServerType.RS_SECONDARY)
    command: dict[str, Any] = {"find": "c"}
    apply_read_preference(
        command, ReadPreference(Mode.SECONDARY), TopologyType.REPLICA_SET_WITH_PRIMARY, secondary
    )
    assert command["$readPreference"] == {"mode": "secondary"}
    mongos = ServerDescription(ADDRESS, ServerType.MONGOS)
    primary_read: dict[str, Any] = {"find": "c"}
    apply_read_preference(primary_read, ReadPreference(Mode.PRIMARY), TopologyType.SHARDED, mongos)
    assert "$readPreference" not in primary_read
    given: dict[str, Any] = {"find": "c", "$readPreference": {"mode": "nearest"}}
    apply_read_preference(given, ReadPreference(Mode.SECONDARY), TopologyType.SHARDED, mongos)
    assert given["$readPreference"] == {"mode": "nearest"}


def _sent(
    read_preference: ReadPreference, topology_type: TopologyType, server_type: ServerType
) -> Any:
    command: dict[str, Any] = {"find": "c"}
    apply_read_preference(
        command, read_preference, topology_type, ServerDescription(ADDRESS, server_type)
    )
    return command.get("$readPreference")


@pytest.mark.parametrize("mode", list(Mode))
def test_no_read_preference_is_sent_to_a_standalone(mode: Mode) -> None:
    # OP_MSG rule of the newer server selection spec: "Type Standalone: clients MUST NOT
    # send the read preference to the server".
    assert _sent(ReadPreference(mode), TopologyType.SINGLE, ServerType.STANDALONE) is None


def test_a_member_reached_directly_is_told_it_may_serve_any_read() -> None:
    single = TopologyType.SINGLE
    primary = ReadPreference(Mode.PRIMARY)
    assert _sent(primary, single, ServerType.RS_SECONDARY) == {"mode": "primaryPreferred"}
    nearest = ReadPreference(Mode.NEAREST, [{"dc": "ny"}])
    assert _sent(nearest, single, ServerType.RS_SECONDARY) == {
        "mode": "nearest",
        "tags": [{"dc": "ny"}],
    }


def test_a_replica_set_member_gets_the_document_except_for_primary() -> None:
    rs = TopologyType.REPLICA_SET_WITH_PRIMARY
    assert _sent(ReadPreference(Mode.PRIMARY), rs, ServerType.RS_PRIMARY) is None
    assert _sent(ReadPreference(Mode.SECONDARY_PREFERRED), rs, ServerType.RS_PRIMARY) == {
        "mode": "secondaryPreferred"
    }


@pytest.mark.parametrize("server_type", [ServerType.MONGOS, ServerType.LOAD_BALANCER])
def test_secondary_preferred_without_tags_is_sent_to_mongos_over_op_msg(
    server_type: ServerType,
) -> None:
    # The seed's OP_QUERY rule expresses it with the secondaryOk bit alone; OP_MSG has
    # no such bit, so the document is sent (a declared deviation, see spec-compliance).
    topology = (
        TopologyType.SHARDED if server_type is ServerType.MONGOS else (TopologyType.LOAD_BALANCED)
    )
    sent = _sent(ReadPreference(Mode.SECONDARY_PREFERRED), topology, server_type)
    assert sent == {"mode": "secondaryPreferred"}
    assert _sent(ReadPreference(Mode.PRIMARY), topology, server_type) is None
