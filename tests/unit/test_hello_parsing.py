"""Parsing a hello reply into a ServerDescription, field by field, and the Unknown outcomes.

Seed: server-discovery-and-monitoring.md, "ServerDescription" (its fields and
defaults), "Parsing a hello or legacy hello response" and "Server Description
Equality". A reply that is not ``ok: 1``, or whose fields have the wrong types,
gives an Unknown description whose error says why.
"""

from __future__ import annotations

import datetime
from types import MappingProxyType
from typing import Any, Optional

import pytest
from bson import DatetimeMS, ObjectId
from bson.son import SON

from mongocore.core.address import Address
from mongocore.core.description import hello_fields
from mongocore.core.description import server as server_module
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology_version import TopologyVersion
from mongocore.core.description.types import ServerType

A = Address("a", 27017)
B = Address("b", 27017)


def parse(reply: Any, **kwargs: Any) -> ServerDescription:
    return ServerDescription.from_hello(A, reply, 0.01, **kwargs)


@pytest.fixture
def no_parsed_hosts() -> None:
    """Forget the host strings and lists already parsed, as in a new process: a test
    that checks how a host is parsed must not find it parsed by an earlier test."""
    server_module._KNOWN_ADDRESSES.clear()
    server_module._VALIDATED_ADDRESS_SETS.clear()


def test_defaults_of_a_minimal_reply() -> None:
    sd = parse({"ok": 1})
    assert sd.type is ServerType.STANDALONE
    assert sd.min_wire_version == 0 and sd.max_wire_version == 0
    assert sd.last_write_date is None and sd.op_time is None
    assert sd.me is None and sd.primary is None and sd.set_name is None
    assert sd.hosts == sd.passives == sd.arbiters == frozenset()
    assert sd.tags == {} and sd.election_id is None and sd.set_version is None
    assert sd.logical_session_timeout_minutes is None and sd.topology_version is None
    assert sd.iscryptd is False and sd.service_id is None and sd.error is None


def test_optional_fields_are_read() -> None:
    service_id = ObjectId()
    sd = parse(
        {
            "ok": 1,
            "minWireVersion": 6,
            "maxWireVersion": 21,
            "iscryptd": True,
            "serviceId": service_id,
            "setName": "rs",
            "secondary": True,
            "passives": ["P:1"],
            "arbiters": ["Q:2"],
            "primary": "B:27017",
            "setVersion": 4.0,
            "electionId": service_id,
            "logicalSessionTimeoutMinutes": 30.0,
        },
        min_round_trip_time=0.005,
        last_update_time=7.0,
    )
    assert (sd.min_wire_version, sd.max_wire_version) == (6, 21)
    assert sd.iscryptd is True and sd.service_id == service_id
    assert sd.passives == {Address("p", 1)} and sd.arbiters == {Address("q", 2)}
    assert sd.primary == B and sd.set_version == 4 and sd.election_id == service_id
    assert sd.logical_session_timeout_minutes == 30
    assert sd.round_trip_time == 0.01 and sd.min_round_trip_time == 0.005
    assert sd.last_update_time == 7.0
    assert sd.all_hosts == {Address("p", 1), Address("q", 2)}


@pytest.mark.usefixtures("no_parsed_hosts")
def test_unix_socket_me_and_primary_are_kept_as_paths() -> None:
    path = "/tmp/mongodb-27017.sock"
    sd = parse({"ok": 1, "setName": "rs", "me": path, "primary": path})
    assert sd.me == Address(path, None) and sd.primary == Address(path, None)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (datetime.datetime(1970, 1, 1, 0, 0, 2), 2.0),
        (datetime.datetime(1970, 1, 1, 0, 0, 3, tzinfo=datetime.timezone.utc), 3.0),
        (1500, 1.5),  # test data gives milliseconds
        (2500.0, 2.5),
        (DatetimeMS(2**62), 2**62 / 1000.0),  # beyond datetime's range
    ],
)
def test_last_write_date_in_seconds_since_the_epoch(value: Any, seconds: float) -> None:
    sd = parse({"ok": 1, "lastWrite": {"lastWriteDate": value, "opTime": {"ts": 1}}})
    assert sd.type is ServerType.STANDALONE
    assert sd.last_write_date == seconds and sd.op_time == {"ts": 1}


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        (["ok", 1], "the reply is not a document"),
        ({"ok": 1, "setName": 5}, "'setName' must be a string, not int"),
        ({"ok": 1, "lastWrite": []}, "'lastWrite' must be a document"),
        ({"ok": 1, "lastWrite": {"lastWriteDate": "x"}}, "lastWriteDate must be a date, not str"),
        ({"ok": 1, "lastWrite": {"lastWriteDate": True}}, "lastWriteDate must be a date, not bool"),
        ({"ok": 1, "tags": ["dc"]}, "'tags' must be a document"),
        ({"ok": 1, "hosts": "a"}, "'hosts' must be an array of host names"),
        ({"ok": 1, "passives": "a"}, "'passives' must be an array of host names"),
        ({"ok": 1, "arbiters": "a"}, "'arbiters' must be an array of host names"),
        ({"ok": 1, "topologyVersion": 3}, "topologyVersion must be a document, not int"),
        (
            {"ok": 1, "topologyVersion": {"processId": "p", "counter": 1}},
            "topologyVersion.processId must be an ObjectId, not str",
        ),
        (
            {"ok": 1, "topologyVersion": {"processId": ObjectId(), "counter": "1"}},
            "'topologyVersion.counter' must be an integer, not str '1'",
        ),
        (
            {"ok": 1, "topologyVersion": {"processId": ObjectId()}},
            "topologyVersion.counter is missing",
        ),
        (
            {"ok": 1, "setName": "rs", "electionId": "7fffffff0000000000000001"},
            "'electionId' must be an ObjectId, not str",
        ),
        (
            {"ok": 1, "setName": "rs", "setVersion": "2"},
            "'setVersion' must be an integer, not str '2'",
        ),
        ({"ok": 1, "setVersion": 1.5}, "'setVersion' must be an integer, not float 1.5"),
        ({"ok": 1, "setVersion": True}, "'setVersion' must be an integer, not bool True"),
        ({"ok": 1, "maxWireVersion": "21"}, "'maxWireVersion' must be an integer, not str '21'"),
        ({"ok": 1, "minWireVersion": [0]}, "'minWireVersion' must be an integer, not list [0]"),
        (
            {"ok": 1, "logicalSessionTimeoutMinutes": {}},
            "'logicalSessionTimeoutMinutes' must be an integer, not dict {}",
        ),
        ({"ok": 1, "hosts": ["a:1", 2]}, "'hosts' must be an array of host names, but holds a int"),
        (
            {"ok": 1, "hosts": [{"h": 1}]},
            "'hosts' must be an array of host names, but holds a dict",
        ),
        ({"ok": 1, "hosts": ["a:x"]}, "'hosts' holds an invalid host: port must be an integer"),
        ({"ok": 1, "me": 5}, "'me' must be a string, not int"),
        ({"ok": 1, "primary": ["a"]}, "'primary' must be a string, not list"),
        ({"ok": 1, "primary": "a:0"}, "'primary' is not a host name: port must be between"),
        ({"ok": 1, "tags": {"dc": 1}}, "'tags' must hold strings, but 'dc' is a int"),
        ({"ok": 1, "lastWrite": {"opTime": 5}}, "'opTime' must be a document, not int"),
        ({"ok": 1, "setName": "rs", "secondary": "no"}, "'secondary' must be a boolean, not str"),
        ({"ok": 1, "isWritablePrimary": {}}, None),  # no setName: the flag is not read
        ({"ok": 1, "setName": "rs", "ismaster": []}, "'ismaster' must be a boolean, not list"),
        ({"ok": 1, "serviceId": "x"}, "'serviceId' must be an ObjectId, not str"),
        ({"ok": 1, "iscryptd": "yes"}, "'iscryptd' must be a boolean, not str"),
    ],
)
def test_hostile_fields_are_named_in_the_error(reply: Any, fragment: Optional[str]) -> None:
    sd = parse(reply, last_update_time=4.0)
    if fragment is None:
        assert sd.error is None and sd.type is ServerType.STANDALONE
        return
    assert sd.type is ServerType.UNKNOWN and sd.address == A
    assert sd.error is not None
    assert sd.error.startswith(f"invalid hello reply from a:27017: {fragment}")
    assert sd.last_update_time == 4.0


def test_reply_without_ok_1_is_unknown_with_its_errmsg() -> None:
    tv = {"processId": ObjectId(), "counter": 2}
    sd = parse({"ok": 0, "errmsg": "not ready", "topologyVersion": tv}, last_update_time=3.0)
    assert sd.type is ServerType.UNKNOWN and sd.address == A
    assert sd.error == "not ready (ok=0)"
    assert sd.topology_version == TopologyVersion(tv["processId"], 2)
    assert sd.last_update_time == 3.0
    bare = parse({"ok": 0.0})
    assert bare.error == "the hello reply does not have ok: 1 (ok=0.0)"


def test_error_descriptions_keep_their_time_and_nothing_else() -> None:
    sd = ServerDescription.from_error(A, "refused", last_update_time=2.0)
    assert sd.error == "refused" and sd.last_update_time == 2.0 and sd.type is ServerType.UNKNOWN
    assert ServerDescription.from_error(A, None).error is None
    assert ServerDescription.from_error(A, ValueError("bad")).error == "bad"


def test_constructor_defaults_and_member_lists() -> None:
    sd = ServerDescription(A)
    assert sd.type is ServerType.UNKNOWN and sd.iscryptd is False and sd.tags == {}
    known = ServerDescription(
        A, ServerType.RS_SECONDARY, round_trip_time=0.2, min_round_trip_time=0.1, hosts=[A, B]
    )
    assert known.round_trip_time == 0.2 and known.min_round_trip_time == 0.1
    # Any iterable of addresses is stored as a frozenset, so descriptions stay hashable.
    members = ServerDescription(A, hosts=[A, B], passives=(B,), arbiters=iter([A]))
    assert members.hosts == frozenset({A, B}) and isinstance(members.hosts, frozenset)
    assert isinstance(members.passives, frozenset) and members.passives == {B}
    assert isinstance(members.arbiters, frozenset) and members.arbiters == {A}
    hash(members)


def test_replace_keeps_every_other_field() -> None:
    sd = parse({"ok": 1, "setName": "rs", "secondary": True, "hosts": ["a:27017"]})
    changed = sd.replace(tags={"dc": "sf"})
    assert changed.tags == {"dc": "sf"}
    assert changed.type is ServerType.RS_SECONDARY and changed.address == A
    assert changed.set_name == "rs" and changed.hosts == {A} and changed.round_trip_time == 0.01
    moved = sd.replace(address=B, type=ServerType.RS_ARBITER)
    assert moved.address == B and moved.type is ServerType.RS_ARBITER and moved.set_name == "rs"


def test_different_descriptions_hash_differently() -> None:
    hashes = {hash(parse({"ok": 1, "maxWireVersion": version})) for version in range(8)}
    assert len(hashes) > 1


def test_repr_names_address_type_rtt_set_name_and_error() -> None:
    sd = parse({"ok": 1, "setName": "rs", "secondary": True})
    assert repr(sd) == "<ServerDescription a:27017 RSSecondary rtt=10.0ms setName='rs'>"
    assert repr(parse({"ok": 1})) == "<ServerDescription a:27017 Standalone rtt=10.0ms>"
    slow = ServerDescription.from_hello(A, {"ok": 1}, 0.5)
    assert repr(slow) == "<ServerDescription a:27017 Standalone rtt=500.0ms>"
    failed = ServerDescription.from_error(A, "boom")
    assert repr(failed) == "<ServerDescription a:27017 Unknown error='boom'>"


# --- legacy numeric flags: a number counts by its truth, on every flag ---


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"ok": 1, "isreplicaset": 1}, ServerType.RS_GHOST),
        ({"ok": 1, "isreplicaset": 0}, ServerType.STANDALONE),
        ({"ok": 1, "isreplicaset": 0, "setName": "rs", "secondary": True}, ServerType.RS_SECONDARY),
        ({"ok": 1, "setName": "rs", "secondary": True, "hidden": 1}, ServerType.RS_OTHER),
        ({"ok": 1, "setName": "rs", "secondary": True, "hidden": 0}, ServerType.RS_SECONDARY),
        ({"ok": 1, "setName": "rs", "secondary": True, "hidden": 0.0}, ServerType.RS_SECONDARY),
        ({"ok": 1, "setName": "rs", "isWritablePrimary": 1, "hidden": 1}, ServerType.RS_OTHER),
        ({"ok": 1, "setName": "rs", "arbiterOnly": 1}, ServerType.RS_ARBITER),
        ({"ok": 1, "setName": "rs", "arbiterOnly": 0}, ServerType.RS_OTHER),
        # false, not just absent: a member that says it is no arbiter is RSOther.
        ({"ok": 1, "setName": "rs", "arbiterOnly": False}, ServerType.RS_OTHER),
    ],
)
def test_numeric_flags_count_by_their_truth(reply: dict[str, Any], expected: ServerType) -> None:
    sd = parse(reply)
    assert sd.error is None
    assert sd.type is expected


@pytest.mark.parametrize("field", ["isreplicaset", "hidden", "arbiterOnly"])
def test_a_flag_that_is_neither_boolean_nor_number_gives_an_unknown_with_an_error(
    field: str,
) -> None:
    sd = parse({"ok": 1, "setName": "rs", field: "yes"})
    assert sd.type is ServerType.UNKNOWN
    assert sd.error == f"invalid hello reply from a:27017: {field!r} must be a boolean, not str"


def test_iscryptd_false_is_kept_false() -> None:
    assert parse({"ok": 1, "iscryptd": False}).iscryptd is False
    assert parse({"ok": 1, "iscryptd": 1}).iscryptd is True


# --- replies (and their documents) as other mappings than dict ---


class _Str(str):
    """A str subclass, as a caller's own document type could hold."""


class _Datetime(datetime.datetime):
    """A datetime subclass, as a caller's own document type could hold."""


def test_a_reply_that_is_a_mapping_but_not_a_dict_is_parsed_like_one() -> None:
    reply = MappingProxyType(
        {"ok": 1, "setName": "rs", "secondary": True, "hosts": ["a:27017"], "tags": {"dc": "ny"}}
    )
    sd = parse(reply)
    assert sd.error is None and sd.type is ServerType.RS_SECONDARY
    assert sd.hosts == {A} and sd.tags == {"dc": "ny"}


def test_last_write_as_a_mapping_that_is_not_a_dict_is_read() -> None:
    last_write = SON([("lastWriteDate", datetime.datetime(1970, 1, 1, 0, 0, 4))])
    sd = parse({"ok": 1, "lastWrite": last_write})
    assert sd.error is None and sd.last_write_date == 4.0


def test_a_naive_datetime_subclass_is_read_as_utc() -> None:
    sd = parse({"ok": 1, "lastWrite": {"lastWriteDate": _Datetime(1970, 1, 1, 0, 0, 5)}})
    assert sd.error is None and sd.last_write_date == 5.0


def test_tags_in_a_mapping_that_is_not_a_dict_are_kept() -> None:
    sd = parse({"ok": 1, "tags": SON([("dc", "ny"), ("rack", "1")])})
    assert sd.error is None
    assert sd.tags == {"dc": "ny", "rack": "1"}


def test_tags_holding_a_str_subclass_are_kept() -> None:
    sd = parse({"ok": 1, "maxWireVersion": 21, "tags": {"dc": _Str("ny")}})
    assert sd.error is None and sd.max_wire_version == 21
    assert sd.tags == {"dc": "ny"}


def test_me_and_primary_as_str_subclasses_are_host_names() -> None:
    sd = parse({"ok": 1, "setName": "rs", "me": _Str("Subclass-Me:1"), "primary": _Str("b:2")})
    assert sd.error is None
    assert sd.me == Address("subclass-me", 1) and sd.primary == Address("b", 2)


@pytest.mark.usefixtures("no_parsed_hosts")
def test_me_and_primary_are_lower_cased_socket_paths_included() -> None:
    reply = {"ok": 1, "setName": "rs", "me": "/tmp/Mixed-Case.sock", "primary": "Mixed-Case:4"}
    sd = parse(reply)
    assert sd.me == Address("/tmp/mixed-case.sock", None)
    assert sd.primary == Address("mixed-case", 4)


def test_me_that_is_a_list_gives_an_unknown_with_an_error() -> None:
    sd = parse({"ok": 1, "setName": "rs", "me": ["a:27017"]})
    assert sd.type is ServerType.UNKNOWN
    assert sd.error == "invalid hello reply from a:27017: 'me' must be a string, not list"


# --- the host lists already parsed ---


@pytest.mark.usefixtures("no_parsed_hosts")
def test_the_same_host_list_gives_the_same_members_on_every_reply() -> None:
    # The first reply parses the lists, the next ones find them parsed.
    reply = {
        "ok": 1,
        "setName": "rs",
        "hosts": ["same-list-1:1", "same-list-2:2"],
        "passives": ["same-list-3:3"],
    }
    for _ in range(3):
        sd = parse(reply)
        assert sd.hosts == {Address("same-list-1", 1), Address("same-list-2", 2)}
        assert sd.passives == {Address("same-list-3", 3)}


@pytest.mark.parametrize("field", ["hosts", "passives"])
@pytest.mark.usefixtures("no_parsed_hosts")
def test_a_host_list_spelled_as_a_string_is_an_error_even_after_the_list_was_seen(
    field: str,
) -> None:
    # ["x"] and the string "x" give the same tuple of characters; only a list is valid.
    assert parse({"ok": 1, "setName": "rs", field: ["x"]}).error is None
    sd = parse({"ok": 1, "setName": "rs", field: "x"})
    assert sd.type is ServerType.UNKNOWN
    assert sd.error == f"invalid hello reply from a:27017: {field!r} must be an array of host names"


def test_the_parsed_host_caches_stay_bounded() -> None:
    # A server reporting a new host on every heartbeat must not grow memory without end.
    for n in range(1100):
        parse({"ok": 1, "setName": "rs", "me": f"bounded-{n}:1", "hosts": [f"bounded-{n}:1"]})
        assert len(server_module._KNOWN_ADDRESSES) <= 1024
        assert len(server_module._VALIDATED_ADDRESS_SETS) <= 256


# --- the field readers, on their own ---


def test_readers_give_the_default_for_an_absent_field() -> None:
    assert hello_fields.flag_field({}, "f") is False
    assert hello_fields.string_field({}, "f") is None
    assert hello_fields.object_id_field({}, "f") is None
    assert hello_fields.document_field({}, "f") is None
    assert hello_fields.optional_int_field({}, "f") is None
    assert hello_fields.int_field({}, "f", 7) == 7
    assert hello_fields.tags_field({}) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), (False, False), (True, True), (1, True), (0, False), (2.0, True), (0.0, False)],
)
def test_flag_reader(value: Any, expected: bool) -> None:
    assert hello_fields.flag_field({"f": value}, "f") is expected


def test_string_reader_gives_a_plain_str_of_a_subclass() -> None:
    value = hello_fields.string_field({"f": _Str("host")}, "f")
    assert value == "host" and type(value) is str


def test_tags_reader_gives_none_for_empty_tags() -> None:
    assert hello_fields.tags_field({"tags": {}}) is None
    assert hello_fields.tags_field({"tags": {"dc": "ny"}}) == {"dc": "ny"}
