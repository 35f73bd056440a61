"""Properties: no hello field of a wrong type can break or wedge the SDAM state machine.

Seed: server-discovery-and-monitoring.md, "Parsing a hello or legacy hello response"
and "Updating the TopologyDescription". Each hello field has a type; a reply that
breaks one makes the server Unknown, with an error naming the field, and the topology
takes the next good reply as if the bad one had been a failed check. The pure
core must also survive descriptions built by hand with values parsing never gives.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from bson import Binary, ObjectId
from bson.int64 import Int64
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply
from mongocore.core.description.types import ServerType, TopologyType

MEMBERS = [Address(f"h{i}", 27017) for i in range(3)]
SETTINGS = TopologySettings(seeds=tuple(MEMBERS), replica_set="rs")
NEWEST_ELECTION = ObjectId("7fffffffffffffffffffffff")

# Values of every BSON-ish type; each field below excludes the types it accepts.
_any_value = st.one_of(
    st.text(max_size=8),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.binary(max_size=4).map(Binary),
    st.datetimes(min_value=datetime.datetime(1970, 1, 1), max_value=datetime.datetime(2100, 1, 1)),
    st.builds(ObjectId),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "processId", "counter"]), st.integers(), max_size=2),
)


def _not_int(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return False
    return not (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def _not_flag(value: Any) -> bool:
    return not isinstance(value, (bool, int, float))


def _not_str(value: Any) -> bool:
    return not isinstance(value, str)


def _wrong(kind: Any) -> st.SearchStrategy[Any]:
    return _any_value.filter(kind)


# field -> a strategy of values of a wrong type for it
WRONG: dict[str, st.SearchStrategy[Any]] = {
    "electionId": _wrong(lambda v: not isinstance(v, ObjectId)),
    "setVersion": _wrong(_not_int),
    "minWireVersion": _wrong(_not_int),
    "maxWireVersion": _wrong(_not_int),
    "logicalSessionTimeoutMinutes": _wrong(_not_int),
    "setName": _wrong(_not_str),
    "me": _wrong(_not_str),
    "primary": _wrong(_not_str),
    "hosts": st.one_of(
        _wrong(lambda v: not isinstance(v, list)),
        st.lists(_wrong(_not_str), min_size=1, max_size=3),
    ),
    "passives": st.lists(_wrong(_not_str), min_size=1, max_size=2),
    "arbiters": _wrong(lambda v: not isinstance(v, list)),
    "tags": st.one_of(
        _wrong(lambda v: not isinstance(v, dict)),
        st.dictionaries(st.sampled_from(["dc", "rack"]), _wrong(_not_str), min_size=1),
    ),
    "topologyVersion": st.one_of(
        _wrong(lambda v: not isinstance(v, dict)),
        st.fixed_dictionaries({"processId": _wrong(lambda v: not isinstance(v, ObjectId))}),
        st.fixed_dictionaries({"processId": st.builds(ObjectId), "counter": _wrong(_not_int)}),
    ),
    "lastWrite": st.one_of(
        _wrong(lambda v: not isinstance(v, dict)),
        st.fixed_dictionaries(
            {
                "lastWriteDate": _wrong(
                    lambda v: (
                        not isinstance(v, (datetime.datetime, int, float)) or isinstance(v, bool)
                    )
                )
            }
        ),
    ),
    "isWritablePrimary": _wrong(_not_flag),
    "secondary": _wrong(_not_flag),
    "hidden": _wrong(_not_flag),
    "isreplicaset": _wrong(_not_flag),
    "serviceId": _wrong(lambda v: not isinstance(v, ObjectId)),
    "iscryptd": _wrong(_not_flag),
}


def member_hello(i: int, primary: int, election: ObjectId, set_version: int = 1) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "ok": 1,
        "setName": "rs",
        "hosts": [str(a) for a in MEMBERS],
        "me": str(MEMBERS[i]),
        "primary": str(MEMBERS[primary]),
        "isWritablePrimary": i == primary,
        "secondary": i != primary,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "setVersion": set_version,
        "topologyVersion": {"processId": ObjectId(f"{i + 1:024x}"), "counter": Int64(0)},
    }
    if i == primary:
        reply["electionId"] = election
    return reply


@st.composite
def bad_hello(draw: st.DrawFn) -> tuple[int, dict[str, Any], list[str]]:
    """A member's hello with one to three fields given values of a wrong type."""
    i = draw(st.integers(0, 2))
    reply = member_hello(i, draw(st.integers(0, 2)), ObjectId(f"7fffffff{i:016x}"))
    fields = draw(st.lists(st.sampled_from(sorted(WRONG)), min_size=1, max_size=3, unique=True))
    for name in fields:
        reply[name] = draw(WRONG[name])
    if "secondary" in fields and "isWritablePrimary" not in fields:
        reply["isWritablePrimary"] = False  # else a primary's 'secondary' is never read
    return i, reply, fields


def parse(i: int, reply: dict[str, Any]) -> ServerDescription:
    return ServerDescription.from_hello(MEMBERS[i], reply, 0.01)


def discovered(primary: int = 0) -> TopologyDescription:
    td = TopologyDescription.initial(SETTINGS)
    for i in range(3):
        td = apply(
            td, parse(i, member_hello(i, primary, ObjectId(f"7fffffff{1:016x}")))
        ).description
    assert td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    return td


@given(bad=bad_hello())
def test_a_wrong_type_gives_unknown_with_the_field_named(
    bad: tuple[int, dict[str, Any], list[str]],
) -> None:
    i, reply, fields = bad
    sd = parse(i, reply)
    assert sd.type is ServerType.UNKNOWN
    assert sd.error is not None and sd.error.startswith(f"invalid hello reply from {MEMBERS[i]}")
    assert any(name in sd.error for name in fields), sd.error


@given(bads=st.lists(bad_hello(), min_size=1, max_size=6), start_empty=st.booleans())
def test_wrong_types_never_raise_and_a_good_hello_recovers_the_set(
    bads: list[tuple[int, dict[str, Any], list[str]]], start_empty: bool
) -> None:
    td = TopologyDescription.initial(SETTINGS) if start_empty else discovered()
    for i, reply, _ in bads:
        td = apply(td, parse(i, reply)).description  # never raises
        assert set(td.servers) == set(MEMBERS)  # an Unknown is never removed
    # An election: member 2 is the new primary with the newest electionId.
    for i in range(3):
        td = apply(td, parse(i, member_hello(i, 2, NEWEST_ELECTION, set_version=2))).description
    assert td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    assert td.primary is not None and td.primary.address == MEMBERS[2]
    assert td.max_election_id == NEWEST_ELECTION and td.max_set_version == 2


# Values no parsed hello holds, for descriptions built by hand.
_junk = st.one_of(
    st.text(max_size=4),
    st.binary(max_size=4),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.just(object()),
)


@given(
    election_id=st.one_of(st.none(), _junk),
    set_version=st.one_of(st.none(), _junk, st.integers(0, 1)),
    max_wire_version=st.one_of(st.sampled_from([9, 21]), _junk),
    start_empty=st.booleans(),
)
def test_hand_built_descriptions_never_raise_and_never_wedge(
    election_id: Any, set_version: Any, max_wire_version: Any, start_empty: bool
) -> None:
    td = TopologyDescription.initial(SETTINGS) if start_empty else discovered()
    odd = ServerDescription(
        MEMBERS[1],
        ServerType.RS_PRIMARY,
        set_name="rs",
        hosts=MEMBERS,
        election_id=election_id,
        set_version=set_version,
        max_wire_version=max_wire_version,
    )
    td = apply(td, odd).description  # never raises
    for wire in (21, 9):
        # A good primary is taken whatever maximum the odd one left, on either path
        # of the electionId/setVersion comparison (before and after MongoDB 6.0).
        good = member_hello(2, 2, NEWEST_ELECTION, set_version=2)
        good["maxWireVersion"] = wire
        after = apply(td, parse(2, good)).description
        assert after.primary is not None and after.primary.address == MEMBERS[2], after
