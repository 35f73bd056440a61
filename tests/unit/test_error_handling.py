"""SDAM application error handling: what classify() decides for each kind of error.

Seed: server-discovery-and-monitoring.md, "Error handling" (handleError,
isStateChangeError, "Network error when reading or writing", '"not writable primary"
and "node is recovering"', "MongoDB Handshake errors") and, from the newer spec, the
LoadBalanced rules (clear the connections of one serviceId, never mark the load
balancer Unknown).
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from bson import Int64, ObjectId

from mongocore.core.address import Address
from mongocore.core.description.errors import (
    ApplicationError,
    ErrorDecision,
    ErrorKind,
    classify,
    is_not_writable_primary,
    is_recovering,
    is_state_change_error,
    state_change_of,
)
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply
from mongocore.core.description.types import ServerType, TopologyType

A = Address("a", 27017)
SERVICE = ObjectId("0123456789ab0123456789ab")


def replica_set(topology_version: Optional[dict[str, Any]] = None) -> TopologyDescription:
    td = TopologyDescription.initial(TopologySettings(seeds=(A,), replica_set="rs"))
    hello: dict[str, Any] = {
        "ok": 1,
        "isWritablePrimary": True,
        "setName": "rs",
        "hosts": ["a:27017"],
        "maxWireVersion": 21,
    }
    if topology_version is not None:
        hello["topologyVersion"] = topology_version
    return apply(td, ServerDescription.from_hello(A, hello, 0.01)).description


def load_balanced() -> TopologyDescription:
    td = TopologyDescription.initial(TopologySettings(seeds=(A,), load_balanced=True))
    return apply(td, ServerDescription.load_balancer(A)).description


def command_error(reply: dict[str, Any], **fields: Any) -> ApplicationError:
    fields.setdefault("max_wire_version", 21)
    return ApplicationError(A, ErrorKind.COMMAND, 0, reply=reply, **fields)


# --- which errors are state change errors ---


@pytest.mark.parametrize(
    ("message", "recovering", "not_writable_primary"),
    [
        ("not master or secondary; cannot currently read", True, False),
        ("node is recovering", True, False),
        ("not master", False, True),
        ("not primary", False, False),
        ("interrupted", False, False),
    ],
)
def test_messages_decide_only_without_a_code(
    message: str, recovering: bool, not_writable_primary: bool
) -> None:
    assert is_recovering(message, None) is recovering
    assert is_not_writable_primary(message, None) is not_writable_primary
    assert is_state_change_error(message, None) is (recovering or not_writable_primary)
    # With a code, the code alone decides (1 is InternalError, neither kind).
    assert not is_state_change_error(message, 1)


def test_a_successful_reply_is_not_a_state_change_error() -> None:
    # Only a failed reply's own fields (or its writeConcernError) can be one.
    assert state_change_of({"ok": 1, "code": 10107, "errmsg": "not master"}) is None
    assert state_change_of({"ok": 0, "code": 10107, "errmsg": "not master"}) == (
        "not master",
        10107,
    )
    assert state_change_of({"ok": 1, "writeConcernError": {"code": 91}}) == ("", 91)


@pytest.mark.parametrize("code", [True, "10107", 10107.0])
def test_a_code_that_is_not_an_integer_is_ignored(code: Any) -> None:
    # The message decides, as if there were no code.
    reply = {"ok": 0, "code": code, "errmsg": "node is recovering"}
    assert state_change_of(reply) == ("node is recovering", None)
    assert state_change_of({"ok": 0, "code": code, "errmsg": "other"}) is None


# --- command errors ---


def test_state_change_error_marks_unknown_with_its_message_and_code() -> None:
    decision = classify(replica_set(), command_error({"ok": 0, "code": 91, "errmsg": "bye"}), 0)
    assert decision.mark_unknown is not None
    assert decision.mark_unknown.address == A
    assert decision.mark_unknown.type is ServerType.UNKNOWN
    assert decision.mark_unknown.error == "bye (code 91)"
    assert decision.request_check and decision.clear_pool and not decision.cancel_check


def test_state_change_error_without_code_is_named_by_its_message() -> None:
    reply = {"ok": 0, "errmsg": "node is recovering"}
    decision = classify(replica_set(), command_error(reply), 0)
    assert decision.mark_unknown is not None
    assert decision.mark_unknown.error == "node is recovering"
    # A 4.2+ server that is recovering (not shutting down) keeps its pool.
    assert not decision.clear_pool


def test_state_change_error_without_message() -> None:
    decision = classify(replica_set(), command_error({"ok": 0, "code": 10107}), 0)
    assert decision.mark_unknown is not None
    assert decision.mark_unknown.error is not None
    assert decision.mark_unknown.error.strip() == "(code 10107)"


def test_malformed_error_topology_version_cannot_make_the_error_stale() -> None:
    td = replica_set({"processId": ObjectId(), "counter": Int64(3)})
    reply = {"ok": 0, "code": 10107, "errmsg": "x", "topologyVersion": "not a document"}
    decision = classify(td, command_error(reply), 0)
    assert not decision.stale
    assert decision.mark_unknown is not None and decision.mark_unknown.topology_version is None


def test_error_topology_version_is_kept_on_the_unknown_description() -> None:
    pid = ObjectId()
    td = replica_set({"processId": pid, "counter": Int64(3)})
    reply = {
        "ok": 0,
        "code": 10107,
        "errmsg": "x",
        "topologyVersion": {"processId": pid, "counter": 4},
    }
    decision = classify(td, command_error(reply), 0)
    assert decision.mark_unknown is not None
    assert decision.mark_unknown.topology_version == (pid, 4)
    same = dict(reply, topologyVersion={"processId": pid, "counter": 3})
    assert classify(td, command_error(same), 0).stale


def test_command_error_of_an_older_server_clears_the_pool() -> None:
    reply = {"ok": 0, "code": 10107, "errmsg": "x"}
    assert classify(replica_set(), command_error(reply, max_wire_version=7), 0).clear_pool
    assert not classify(replica_set(), command_error(reply, max_wire_version=8), 0).clear_pool


def test_other_command_errors_after_the_handshake_change_nothing() -> None:
    decision = classify(replica_set(), command_error({"ok": 0, "code": 11000, "errmsg": "dup"}), 0)
    assert decision == classify(replica_set(), command_error({"ok": 1}), 0)
    assert decision.mark_unknown is None and not decision.clear_pool
    assert not decision.request_check and not decision.cancel_check and not decision.stale


def test_command_error_during_the_handshake_marks_unknown_and_clears() -> None:
    # "MongoDB Handshake errors": an authentication failure is like a network error.
    error = command_error(
        {"ok": 0, "code": 18, "errmsg": "Authentication failed."},
        completed_handshake=False,
        in_authentication=True,
        message="Authentication failed.",
    )
    decision = classify(replica_set(), error, 0)
    assert decision.mark_unknown is not None
    assert decision.mark_unknown.error == "Authentication failed."
    assert decision.clear_pool and decision.cancel_check and not decision.request_check


# --- network errors and timeouts ---


def test_network_error_after_the_handshake_marks_unknown_without_a_check() -> None:
    # The seed: clear the pool, mark Unknown, and MUST NOT request an immediate check.
    error = ApplicationError(A, ErrorKind.NETWORK, 0, message="connection reset")
    decision = classify(replica_set(), error, 0)
    assert decision.mark_unknown is not None
    assert decision.mark_unknown.error == "connection reset"
    assert decision.clear_pool and decision.cancel_check
    assert not decision.request_check


def test_network_error_without_message_is_named_by_its_kind() -> None:
    decision = classify(replica_set(), ApplicationError(A, ErrorKind.NETWORK, 0), 0)
    assert decision.mark_unknown is not None and decision.mark_unknown.error == "network"


def test_network_error_is_not_read_as_a_command_error() -> None:
    # A reply the shell passed along does not turn a network error into a state change.
    error = ApplicationError(
        A, ErrorKind.NETWORK, 0, max_wire_version=21, reply={"ok": 0, "code": 10107}
    )
    decision = classify(replica_set(), error, 0)
    assert decision.clear_pool and decision.cancel_check and not decision.request_check


def test_timeouts_matter_only_during_authentication() -> None:
    after = ApplicationError(A, ErrorKind.TIMEOUT, 0)
    assert classify(replica_set(), after, 0).mark_unknown is None
    during = ApplicationError(
        A, ErrorKind.TIMEOUT, 0, completed_handshake=False, in_authentication=True
    )
    decision = classify(replica_set(), during, 0)
    assert decision.mark_unknown is not None and decision.mark_unknown.error == "timeout"


def test_errors_from_an_older_pool_generation_are_stale() -> None:
    error = ApplicationError(A, ErrorKind.NETWORK, 2)
    assert classify(replica_set(), error, 3).stale
    assert not classify(replica_set(), error, 2).stale


def test_errors_of_a_removed_server_are_ignored() -> None:
    error = ApplicationError(Address("gone", 1), ErrorKind.NETWORK, 0)
    decision = classify(replica_set(), error, 0)
    assert decision.mark_unknown is None and not decision.stale and not decision.clear_pool


# --- LoadBalanced: one serviceId's connections, the balancer never Unknown ---


def test_load_balanced_network_error_clears_its_service_only() -> None:
    error = ApplicationError(A, ErrorKind.NETWORK, 0, service_id=SERVICE)
    decision = classify(load_balanced(), error, 0)
    assert decision.mark_unknown is None
    assert decision.clear_pool is True and decision.service_id == SERVICE
    assert decision.cancel_check is True and not decision.request_check


def test_load_balanced_error_before_the_service_is_known_changes_nothing() -> None:
    # No serviceId yet (the handshake failed): there is no pool generation to clear.
    error = ApplicationError(A, ErrorKind.NETWORK, 0, completed_handshake=False)
    decision = classify(load_balanced(), error, 0)
    assert decision.mark_unknown is None and not decision.clear_pool
    assert decision.service_id is None and not decision.cancel_check


def test_load_balanced_failed_hello_is_ignored_even_with_a_shutdown_code() -> None:
    # "Errors during the MongoDB Handshake MUST also be ignored": a hello refused with
    # InterruptedAtShutdown (a code that clears a pool otherwise) changes nothing.
    error = command_error({"ok": 0, "code": 11600, "errmsg": "x"}, completed_handshake=False)
    assert classify(load_balanced(), error, 0) == ErrorDecision()


def test_load_balanced_authentication_error_clears_the_service_from_the_hello() -> None:
    # After the hello the serviceId is known: an error while authenticating clears it.
    error = ApplicationError(
        A,
        ErrorKind.NETWORK,
        0,
        completed_handshake=False,
        in_authentication=True,
        service_id=SERVICE,
    )
    decision = classify(load_balanced(), error, 0)
    assert decision.clear_pool is True and decision.service_id == SERVICE
    assert decision.mark_unknown is None


@pytest.mark.parametrize(("code", "clear"), [(91, True), (10107, False)])
def test_load_balanced_state_change_error_never_marks_unknown(code: int, clear: bool) -> None:
    error = command_error({"ok": 0, "code": code, "errmsg": "x"}, service_id=SERVICE)
    decision = classify(load_balanced(), error, 0)
    assert decision.mark_unknown is None and not decision.request_check
    assert decision.clear_pool is clear and decision.service_id == SERVICE
    assert load_balanced().type is TopologyType.LOAD_BALANCED
