"""ServerDescription parsing, equality, immutability; TopologyDescription facts; classify()."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Int64, ObjectId

from mongocore.core.address import Address
from mongocore.core.description.errors import ApplicationError, ErrorKind, classify
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply, remove_all
from mongocore.core.description.topology_version import (
    TopologyVersion,
    compare_topology_version,
)
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.events import events_for_closing
from mongocore.errors import ConfigurationError

A = Address("a", 27017)
B = Address("b", 27017)


def primary_hello(**extra: Any) -> dict[str, Any]:
    reply = {
        "ok": 1,
        "isWritablePrimary": True,
        "setName": "rs",
        "hosts": ["A:27017", "b:27017"],
        "me": "a:27017",
        "maxWireVersion": 21,
        "lastWrite": {"lastWriteDate": datetime.datetime(2024, 1, 1), "opTime": {"ts": 1}},
        "logicalSessionTimeoutMinutes": 30,
        "tags": {"dc": "ny"},
        "topologyVersion": {"processId": ObjectId(), "counter": Int64(3)},
    }
    reply.update(extra)
    return reply


def test_hello_fields_are_parsed_and_hosts_lower_cased() -> None:
    sd = ServerDescription.from_hello(A, primary_hello(), 0.01, last_update_time=5.0)
    assert sd.type is ServerType.RS_PRIMARY
    assert sd.hosts == {A, B}
    assert sd.me == A
    assert sd.tags == {"dc": "ny"}
    assert sd.logical_session_timeout_minutes == 30
    assert (
        sd.last_write_date
        == datetime.datetime(2024, 1, 1).replace(tzinfo=datetime.timezone.utc).timestamp()
    )
    assert sd.op_time == {"ts": 1}
    assert sd.topology_version is not None and sd.topology_version.counter == 3
    assert sd.round_trip_time == 0.01 and sd.last_update_time == 5.0


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"ok": 1}, ServerType.STANDALONE),
        ({"ok": 1, "msg": "isdbgrid"}, ServerType.MONGOS),
        ({"ok": 1, "isreplicaset": True, "setName": "rs"}, ServerType.RS_GHOST),
        ({"ok": 1, "setName": "rs", "ismaster": True}, ServerType.RS_PRIMARY),
        # isWritablePrimary wins over the legacy field when both are present.
        (
            {"ok": 1, "setName": "rs", "isWritablePrimary": False, "ismaster": True},
            ServerType.RS_OTHER,
        ),
        ({"ok": 1, "setName": "rs", "secondary": True}, ServerType.RS_SECONDARY),
        ({"ok": 1, "setName": "rs", "secondary": True, "hidden": True}, ServerType.RS_OTHER),
        ({"ok": 1, "setName": "rs", "arbiterOnly": True}, ServerType.RS_ARBITER),
        ({"ok": 1, "setName": "rs"}, ServerType.RS_OTHER),
        ({"ok": 0, "errmsg": "boom"}, ServerType.UNKNOWN),
        ({"ok": 1.0, "msg": "isdbgrid"}, ServerType.MONGOS),
    ],
)
def test_server_type_table(reply: dict[str, Any], expected: ServerType) -> None:
    assert ServerDescription.from_hello(A, reply, 0.001).type is expected


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": 1, "setName": "rs", "hosts": "a:27017"},
        {"ok": 1, "setName": "rs", "hosts": [1, 2]},
        {"ok": 1, "setName": 5},
        {"ok": 1, "maxWireVersion": "nine"},
        {"ok": 1, "lastWrite": []},
        {"ok": 1, "lastWrite": {"lastWriteDate": "yesterday"}},
        {"ok": 1, "topologyVersion": {"counter": 1}},
        {"ok": 1, "tags": ["dc"]},
        {"ok": 1, "setName": "rs", "me": "[::1"},
        {"ok": 1, "setName": "rs", "primary": "a:99999999"},
    ],
)
def test_hostile_hello_gives_unknown_with_a_readable_error(reply: dict[str, Any]) -> None:
    sd = ServerDescription.from_hello(A, reply, 0.001)
    assert sd.type is ServerType.UNKNOWN
    assert sd.error is not None and "invalid hello reply from a:27017" in sd.error


def test_equality_uses_only_the_marked_fields_and_descriptions_are_frozen() -> None:
    one = ServerDescription.from_hello(A, primary_hello(), 0.01, last_update_time=1.0)
    two = ServerDescription.from_hello(A, primary_hello(), 0.5, last_update_time=9.0)
    assert one is not two
    assert one.topology_version != two.topology_version  # fresh processIds
    same_tv = primary_hello(topologyVersion={"processId": ObjectId("0" * 24), "counter": 1})
    three = ServerDescription.from_hello(A, same_tv, 0.01)
    four = ServerDescription.from_hello(A, same_tv, 0.9, last_update_time=7.0)
    assert three == four and hash(three) == hash(four)  # RTT and update time are not (=)
    assert three != four.replace(tags={"dc": "sf"})
    with pytest.raises(AttributeError):
        three.type = ServerType.UNKNOWN  # type: ignore[misc]


def test_unknown_has_no_rtt() -> None:
    sd = ServerDescription(A, ServerType.UNKNOWN, round_trip_time=0.2, min_round_trip_time=0.1)
    assert sd.round_trip_time is None and sd.min_round_trip_time is None


def test_topology_version_comparison() -> None:
    pid = ObjectId()
    old, new = TopologyVersion(pid, 1), TopologyVersion(pid, 2)
    assert compare_topology_version(old, new) == -1
    assert compare_topology_version(new, old) == 1
    assert compare_topology_version(new, new) == 0
    assert compare_topology_version(None, new) == -1
    assert compare_topology_version(new, TopologyVersion(ObjectId(), 0)) == -1


def test_apply_ignores_older_topology_version_and_removed_servers() -> None:
    settings = TopologySettings(seeds=(A,), replica_set="rs")
    td = TopologyDescription.initial(settings)
    pid = ObjectId()
    newer = primary_hello(topologyVersion={"processId": pid, "counter": 5})
    td = apply(td, ServerDescription.from_hello(A, newer, 0.01)).description
    older = ServerDescription.from_error(A, "late", topology_version=TopologyVersion(pid, 4))
    transition = apply(td, older)
    assert transition.ignored and transition.description is td
    gone = apply(td, ServerDescription.from_error(Address("zzz", 1), "x"))
    assert gone.ignored


def test_transition_says_which_monitors_and_pools_to_touch() -> None:
    td = TopologyDescription.initial(TopologySettings(seeds=(A,)))
    t = apply(td, ServerDescription.from_hello(A, primary_hello(), 0.01))
    assert t.added == (B,) and t.removed == () and t.ready_pools == (A,)
    assert t.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    # B wins an election (older server, 4.0): A is invalidated, checked, and its pool cleared.
    old_a = primary_hello(maxWireVersion=7, electionId=ObjectId("0" * 23 + "1"), setVersion=1)
    td = apply(td, ServerDescription.from_hello(A, old_a, 0.01)).description
    b_hello = primary_hello(me="b:27017", electionId=ObjectId("0" * 23 + "2"), setVersion=1)
    t = apply(td, ServerDescription.from_hello(B, b_hello, 0.01))
    assert t.request_check == (A,) and t.clear_pools == (A,)
    a = t.description.servers[A]
    assert a.type is ServerType.UNKNOWN
    assert a.error == "primary marked stale due to discovery of newer primary"
    closing = remove_all(t.description)
    assert set(closing.removed) == {A, B} and closing.description.type is TopologyType.UNKNOWN
    names = [type(e).__name__ for e in events_for_closing(1, closing)]
    assert names[-2:] == ["TopologyDescriptionChangedEvent", "TopologyClosedEvent"]


def test_stale_primary_error_names_both_tuples() -> None:
    td = TopologyDescription.initial(TopologySettings(seeds=(A, B)))
    new = primary_hello(me="b:27017", electionId=ObjectId("0" * 23 + "2"), setVersion=2)
    td = apply(td, ServerDescription.from_hello(B, new, 0.01)).description
    stale = primary_hello(electionId=ObjectId("0" * 23 + "1"), setVersion=3)
    sd = apply(td, ServerDescription.from_hello(A, stale, 0.01)).description.servers[A]
    assert sd.type is ServerType.UNKNOWN and sd.error is not None
    assert "primary marked stale due to electionId/setVersion mismatch" in sd.error
    assert "000000000000000000000001, 3) is stale compared to (" in sd.error


def test_logical_session_timeout_is_the_minimum_or_none() -> None:
    td = TopologyDescription.initial(TopologySettings(seeds=(A, B)))
    td = apply(td, ServerDescription.from_hello(A, primary_hello(), 0.01)).description
    assert td.logical_session_timeout_minutes == 30
    b = primary_hello(isWritablePrimary=False, secondary=True, me="b:27017")
    b["logicalSessionTimeoutMinutes"] = 10
    td = apply(td, ServerDescription.from_hello(B, b, 0.01)).description
    assert td.logical_session_timeout_minutes == 10
    del b["logicalSessionTimeoutMinutes"]
    td = apply(td, ServerDescription.from_hello(B, b, 0.01)).description
    assert td.logical_session_timeout_minutes is None


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"seeds": (A, B), "direct_connection": True}, "directConnection=true"),
        ({"seeds": (A,), "load_balanced": True, "direct_connection": True}, "loadBalanced"),
        ({"seeds": (A,), "load_balanced": True, "replica_set": "rs"}, "loadBalanced"),
        ({"seeds": (A,), "heartbeat_frequency_ms": 100}, "heartbeatFrequencyMS"),
    ],
)
def test_forbidden_configurations(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        TopologySettings(**kwargs)


def test_empty_seed_list_warns(caplog: pytest.LogCaptureFixture) -> None:
    TopologySettings(seeds=())
    assert "empty seed list" in caplog.text


def _td_with_primary(max_wire_version: int = 21) -> TopologyDescription:
    td = TopologyDescription.initial(TopologySettings(seeds=(A,), replica_set="rs"))
    hello = primary_hello(maxWireVersion=max_wire_version)
    del hello["topologyVersion"]
    return apply(td, ServerDescription.from_hello(A, hello, 0.01)).description


@pytest.mark.parametrize(
    ("reply", "unknown", "clear"),
    [
        ({"ok": 0, "code": 10107, "errmsg": "x"}, True, False),
        ({"ok": 0, "code": 91, "errmsg": "x"}, True, True),
        ({"ok": 0, "errmsg": "not master"}, True, False),
        # The code decides when there is one: this message is not enough.
        ({"ok": 0, "code": 1, "errmsg": "not master"}, False, False),
        ({"ok": 1, "writeConcernError": {"code": 11600, "errmsg": "x"}}, True, True),
        ({"ok": 1, "writeErrors": [{"code": 10107, "errmsg": "not master"}]}, False, False),
    ],
)
def test_classify_command_errors(reply: dict[str, Any], unknown: bool, clear: bool) -> None:
    td = _td_with_primary()
    error = ApplicationError(A, ErrorKind.COMMAND, 0, max_wire_version=21, reply=reply)
    decision = classify(td, error, 0)
    assert (decision.mark_unknown is not None) is unknown
    assert decision.clear_pool is clear
    assert decision.request_check is unknown


def test_classify_network_timeout_overload_and_stale() -> None:
    td = _td_with_primary()
    network = classify(td, ApplicationError(A, ErrorKind.NETWORK, 0), 0)
    assert network.mark_unknown is not None and network.clear_pool and network.cancel_check
    assert not classify(td, ApplicationError(A, ErrorKind.TIMEOUT, 0), 0).clear_pool
    auth = ApplicationError(
        A, ErrorKind.TIMEOUT, 0, completed_handshake=False, in_authentication=True
    )
    assert classify(td, auth, 0).mark_unknown is not None
    overloaded = ApplicationError(
        A, ErrorKind.NETWORK, 0, error_labels=frozenset({"SystemOverloadedError"})
    )
    assert classify(td, overloaded, 0).mark_unknown is None
    assert classify(td, ApplicationError(A, ErrorKind.NETWORK, 0), 1).stale


def test_an_unlabelled_establishment_error_marks_the_server_unknown() -> None:
    """SDAM seed, "MongoDB Handshake errors": an error without the backpressure label
    while establishing an application connection (a DNS failure is one: no server was
    reached, so the connection code does not label it) marks the server Unknown,
    clears its pool and cancels the monitor's check; a labelled one changes nothing."""
    td = _td_with_primary()
    dns = ApplicationError(A, ErrorKind.NETWORK, 0, completed_handshake=False)
    decision = classify(td, dns, 0)
    assert decision.mark_unknown is not None
    assert decision.mark_unknown.type is ServerType.UNKNOWN
    assert decision.clear_pool and decision.cancel_check
    labelled = ApplicationError(
        A,
        ErrorKind.NETWORK,
        0,
        completed_handshake=False,
        error_labels=frozenset({"SystemOverloadedError", "RetryableError"}),
    )
    assert classify(td, labelled, 0).mark_unknown is None
    assert not classify(td, labelled, 0).clear_pool


def test_topology_versions_whose_counters_cannot_be_ordered_count_the_new_one_as_newer() -> None:
    # Built by hand (parsing always gives an integer): like an unknown processId.
    pid = ObjectId()
    missing: Any = None
    text: Any = "3"
    assert compare_topology_version(TopologyVersion(pid, missing), TopologyVersion(pid, 3)) == -1
    assert compare_topology_version(TopologyVersion(pid, 3), TopologyVersion(pid, text)) == -1
