"""What apply() tells the I/O shell, and the replica set rules the spec suites leave uncovered.

Seed: server-discovery-and-monitoring.md, "Updating the TopologyDescription"
(updateRSFromPrimary with the electionId/setVersion rules of servers before and after
MongoDB 6.0, updateRSWithPrimaryFromMember, "Verifying setName with TopologyType
Single", remove), "Connection Pool Management" (which pools are marked ready, which
are cleared) and "TopologyDescription".
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from bson import Int64, ObjectId

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import (
    CLIENT_MAX_WIRE_VERSION,
    CLIENT_MIN_WIRE_VERSION,
    TopologyDescription,
)
from mongocore.core.description.topology_updates import apply, remove_all
from mongocore.core.description.topology_version import TopologyVersion
from mongocore.core.description.types import ServerType, TopologyType

A = Address("a", 27017)
B = Address("b", 27017)
C = Address("c", 27017)


def oid(n: int) -> ObjectId:
    return ObjectId(f"{n:024x}")


def hello(address: Address, **fields: Any) -> ServerDescription:
    reply: dict[str, Any] = {"ok": 1, "setName": "rs", "hosts": ["a:27017", "b:27017"]}
    reply["me"] = str(address)
    reply.update(fields)
    return ServerDescription.from_hello(address, reply, 0.01)


def primary(address: Address, **fields: Any) -> ServerDescription:
    return hello(address, isWritablePrimary=True, **fields)


def secondary(address: Address, **fields: Any) -> ServerDescription:
    return hello(address, secondary=True, **fields)


def replica_set(*seeds: Address) -> TopologyDescription:
    return TopologyDescription.initial(TopologySettings(seeds=seeds or (A, B), replica_set="rs"))


def single(**settings: Any) -> TopologyDescription:
    return TopologyDescription.initial(
        TopologySettings(seeds=(A,), direct_connection=True, **settings)
    )


# --- which pools become ready ---


@pytest.mark.parametrize(
    ("topology", "outcome", "ready"),
    [
        ("rs", "arbiter", False),
        ("rs", "secondary", True),
        ("single", "arbiter", True),  # a direct connection uses any known server
        ("single", "unknown", False),
        ("rs", "unknown", False),
    ],
)
def test_which_pools_are_marked_ready(topology: str, outcome: str, ready: bool) -> None:
    td = replica_set() if topology == "rs" else single()
    sd = {
        "arbiter": hello(A, arbiterOnly=True),
        "secondary": secondary(A),
        "unknown": ServerDescription.from_error(A, "refused"),
    }[outcome]
    assert apply(td, sd).ready_pools == ((A,) if ready else ())


# --- what the transition reports as applied ---


def test_a_stale_primary_is_applied_as_unknown() -> None:
    td = apply(replica_set(), primary(B, maxWireVersion=21, electionId=oid(2))).description
    stale = primary(A, maxWireVersion=21, electionId=oid(1))
    transition = apply(td, stale)
    assert not transition.ignored
    assert transition.applied is transition.description.servers[A]
    assert transition.applied.type is ServerType.UNKNOWN and transition.applied.address == A
    assert transition.applied.error is not None
    assert transition.applied.error.startswith(
        "primary marked stale due to electionId/setVersion mismatch, ("
    )


def test_a_removed_server_is_still_the_applied_outcome() -> None:
    # A standalone among replica set seeds is removed; the outcome was processed.
    outcome = ServerDescription.from_hello(A, {"ok": 1}, 0.01)
    transition = apply(replica_set(), outcome)
    assert transition.removed == (A,) and A not in transition.description.servers
    assert transition.applied is outcome and not transition.ignored


# --- updateRSFromPrimary ---


@pytest.mark.parametrize(("old_wire_version", "cleared"), [(7, True), (8, False)])
def test_pool_of_an_invalidated_primary_is_cleared_only_before_4_2(
    old_wire_version: int, cleared: bool
) -> None:
    td = replica_set()
    old = primary(A, maxWireVersion=old_wire_version, electionId=oid(1), setVersion=1)
    td = apply(td, old).description
    transition = apply(td, primary(B, maxWireVersion=21, electionId=oid(2), setVersion=1))
    assert transition.request_check == (A,)
    assert transition.clear_pools == ((A,) if cleared else ())


@pytest.mark.parametrize(
    ("first", "second", "accepted"),
    [
        # Before 6.0 setVersion decides first, then electionId.
        ((1, 1), (1, 2), True),
        ((1, 1), (1, 1), True),  # the same primary again
        ((2, 1), (3, 0), True),  # a newer config wins whatever its electionId
        ((2, 1), (1, 5), False),
        ((1, 2), (1, 1), False),
    ],
)
def test_primary_election_order_before_6_0(
    first: tuple[int, int], second: tuple[int, int], accepted: bool
) -> None:
    td = replica_set(A, B)
    version, election = first
    td = apply(td, primary(A, maxWireVersion=7, setVersion=version, electionId=oid(election)))
    td = td.description
    version, election = second
    transition = apply(
        td, primary(B, maxWireVersion=7, setVersion=version, electionId=oid(election))
    )
    servers = transition.description.servers
    assert (servers[B].type is ServerType.RS_PRIMARY) is accepted
    assert (servers[A].type is ServerType.RS_PRIMARY) is not accepted
    assert transition.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY


def test_primary_stepping_down_leaves_no_primary_and_names_the_next() -> None:
    td = apply(replica_set(), primary(A, maxWireVersion=21)).description
    # A reports itself secondary, and that B is the primary now.
    transition = apply(td, secondary(A, primary="b:27017"))
    assert transition.description.type is TopologyType.REPLICA_SET_NO_PRIMARY
    assert transition.description.servers[B].type is ServerType.POSSIBLE_PRIMARY
    assert transition.description.servers[A].type is ServerType.RS_SECONDARY


def test_members_are_added_in_address_order() -> None:
    hosts = [f"a:{port}" for port in (27022, 27019, 27021, 27018, 27020, 27017)]
    transition = apply(replica_set(A), secondary(A, hosts=hosts))
    assert transition.added == tuple(Address("a", port) for port in range(27018, 27023))


# --- remove ---


def test_removing_the_last_server_warns(caplog: pytest.LogCaptureFixture) -> None:
    td = TopologyDescription.initial(TopologySettings(seeds=(A, B)))
    with caplog.at_level(logging.WARNING, logger="mongocore.topology"):
        td = apply(td, ServerDescription.from_hello(A, {"ok": 1}, 0.01)).description
        assert caplog.messages == []
        transition = apply(td, ServerDescription.from_hello(B, {"ok": 1}, 0.01))
    assert transition.description.servers == {}
    assert caplog.messages == [
        "removed b:27017, the last server of the topology: no server is left to monitor"
    ]


# --- TopologyType Single: the replica set name must match ---


@pytest.mark.parametrize(
    ("fields", "found"),
    [({}, "no setName"), ({"setName": "other"}, "setName 'other'")],
)
def test_single_with_wrong_set_name_is_unknown_with_an_explanation(
    fields: dict[str, Any], found: str
) -> None:
    td = single(replica_set="rs")
    outcome = ServerDescription.from_hello(A, {"ok": 1, **fields}, 0.01, last_update_time=6.0)
    stored = apply(td, outcome).description.servers[A]
    assert stored.type is ServerType.UNKNOWN and stored.last_update_time == 6.0
    assert stored.error == (
        f"replica set name mismatch: expected 'rs', but a:27017 reports {found}"
    )


def test_single_with_a_failed_check_keeps_the_check_error() -> None:
    td = single(replica_set="rs")
    stored = apply(td, ServerDescription.from_error(A, "refused")).description.servers[A]
    assert stored.error == "refused"


# --- the description itself ---


def test_description_does_not_share_the_callers_mapping() -> None:
    settings = TopologySettings(seeds=(A,))
    servers = {A: ServerDescription(A)}
    td = TopologyDescription(TopologyType.UNKNOWN, servers, settings)
    servers[B] = ServerDescription(B)
    assert list(td.servers) == [A]


def test_repr_names_type_set_name_and_servers() -> None:
    td = apply(replica_set(A), secondary(A, hosts=["a:27017"])).description
    assert repr(td) == (
        "<TopologyDescription ReplicaSetNoPrimary setName='rs' "
        "servers=[<ServerDescription a:27017 RSSecondary rtt=10.0ms setName='rs'>]>"
    )
    empty = TopologyDescription.initial(TopologySettings(seeds=(A, B)))
    assert repr(empty) == (
        "<TopologyDescription Unknown servers=[<ServerDescription a:27017 Unknown>, "
        "<ServerDescription b:27017 Unknown>]>"
    )


def test_closing_keeps_the_settings_and_the_previous_description() -> None:
    td = replica_set()
    closing = remove_all(td)
    assert closing.previous is td and closing.description.settings is td.settings
    assert closing.description.servers == {} and set(closing.removed) == {A, B}


# --- a description that cannot be applied ---


def test_a_description_whose_handling_raises_becomes_unknown_with_the_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Parsing never gives a wire version that is not a number; a description built by
    # hand can, and comparing it in updateRSFromPrimary raises. The topology must not
    # be wedged by it: the server becomes Unknown, and the error says why.
    td = replica_set()
    wire_version: Any = "21"
    bad = ServerDescription(
        A, ServerType.RS_PRIMARY, set_name="rs", max_wire_version=wire_version, last_update_time=8.0
    )
    with caplog.at_level(logging.ERROR, logger="mongocore.topology"):
        transition = apply(td, bad)
    stored = transition.description.servers[A]
    assert transition.applied is stored and not transition.ignored
    assert stored.type is ServerType.UNKNOWN and stored.address == A
    assert stored.error == (
        "invalid server description: TypeError: "
        "'>=' not supported between instances of 'str' and 'int'"
    )
    assert stored.last_update_time == 8.0
    assert transition.description.type is TopologyType.REPLICA_SET_NO_PRIMARY
    assert set(transition.description.servers) == {A, B}
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == f"cannot apply {bad!r}"
    assert record.exc_info is not None and record.exc_info[0] is TypeError


# --- topologyVersion: only an older one is ignored ---


def test_an_equal_topology_version_with_an_int64_counter_is_applied() -> None:
    # Counters of another integer type than int (a description built by hand) are
    # compared in full: equal is not older, so the new description is applied.
    pid = oid(9)
    td = apply(replica_set(), secondary(A, maxWireVersion=21)).description
    known = td.servers[A].replace(topology_version=TopologyVersion(pid, Int64(4)))
    td = TopologyDescription(td.type, {**td.servers, A: known}, td.settings, set_name="rs")
    newer = secondary(A, maxWireVersion=21, tags={"dc": "ny"}).replace(
        topology_version=TopologyVersion(pid, Int64(4))
    )
    transition = apply(td, newer)
    assert not transition.ignored
    assert transition.description.servers[A].tags == {"dc": "ny"}


# --- updateRSWithoutPrimary: possible primaries ---


def test_a_known_secondary_named_as_primary_stays_a_secondary() -> None:
    # Only an Unknown server becomes PossiblePrimary: B answered already.
    td = apply(replica_set(), secondary(B)).description
    transition = apply(td, secondary(A, primary="b:27017"))
    assert transition.description.servers[B].type is ServerType.RS_SECONDARY
    assert transition.description.servers[A].type is ServerType.RS_SECONDARY


def test_a_primary_outside_the_topology_is_not_added_as_possible_primary() -> None:
    # The reported primary is in no host list: nothing is marked, nothing added.
    transition = apply(replica_set(), secondary(A, primary="c:27017"))
    assert transition.description.servers[A].type is ServerType.RS_SECONDARY
    assert C not in transition.description.servers and transition.added == ()


# --- updateRSFromPrimary before 6.0: a maximum without its pair ---


def no_primary(**maxima: Any) -> TopologyDescription:
    """The set "rs" with no primary, built with the given election maxima."""
    base = replica_set()
    return TopologyDescription(
        TopologyType.REPLICA_SET_NO_PRIMARY, base.servers, base.settings, set_name="rs", **maxima
    )


def test_a_set_version_without_an_election_id_does_not_make_a_primary_stale() -> None:
    # Before 6.0 the stale check needs both maxSetVersion and maxElectionId; with only
    # a maxSetVersion, a primary with a lower setVersion (and an electionId) is taken.
    td = no_primary(max_set_version=2)
    assert td.max_set_version == 2 and td.max_election_id is None
    transition = apply(td, primary(A, maxWireVersion=7, setVersion=1, electionId=oid(1)))
    assert transition.description.servers[A].type is ServerType.RS_PRIMARY
    assert transition.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY
    assert transition.description.max_election_id == oid(1)
    assert transition.description.max_set_version == 2


def test_the_constructor_keeps_the_election_maxima() -> None:
    td = no_primary(max_election_id=oid(3), max_set_version=5)
    assert td.max_election_id == oid(3) and td.max_set_version == 5


@pytest.mark.parametrize(("known", "reported"), [("5", 3), (3, "5")])
def test_topology_version_counters_that_cannot_be_ordered_apply_the_new_description(
    known: Any, reported: Any
) -> None:
    # Built by hand: a counter that is not a number cannot be compared with one that
    # is. Like an unknown processId, the new description counts as more recent.
    pid = oid(9)
    td = apply(replica_set(), secondary(A)).description
    current = td.servers[A].replace(topology_version=TopologyVersion(pid, known))
    td = TopologyDescription(td.type, {**td.servers, A: current}, td.settings, set_name="rs")
    new = secondary(A, tags={"dc": "ny"}).replace(topology_version=TopologyVersion(pid, reported))
    transition = apply(td, new)
    assert not transition.ignored
    assert transition.description.servers[A].tags == {"dc": "ny"}


def test_a_set_version_that_cannot_be_ordered_does_not_replace_the_maximum() -> None:
    # Built by hand (parsing takes only integers): NaN is not greater than 2, so the
    # stored maxSetVersion stays, as the spec's "greater than" comparison says.
    td = no_primary(max_set_version=2)
    nan: Any = float("nan")
    sd = primary(A, maxWireVersion=7, electionId=oid(1)).replace(set_version=nan)
    transition = apply(td, sd)
    assert transition.description.servers[A].type is ServerType.RS_PRIMARY
    assert transition.description.max_set_version == 2


# --- wire compatibility, carried from one description to the next ---
#
# "Checking wire protocol compatibility" is a pass over every server; apply() spares
# it when the previous description was found compatible and the checked server is
# compatible too (the only server an update can give wire versions to).

WIRE = {"minWireVersion": 0, "maxWireVersion": 21}


def compatible_set() -> TopologyDescription:
    """A primary and a secondary, compatible, with the verdict computed (as selection does)."""
    td = apply(replica_set(), primary(A, **WIRE)).description
    td = apply(td, secondary(B, **WIRE)).description
    assert td.compatibility_error is None
    return td


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ({"minWireVersion": 0, "maxWireVersion": 5}, "reports wire version 5"),
        ({"minWireVersion": 29, "maxWireVersion": 30}, "requires wire version 29"),
    ],
)
def test_a_server_turning_incompatible_makes_the_description_incompatible(
    wire: dict[str, int], message: str
) -> None:
    td = apply(compatible_set(), secondary(B, **wire)).description
    assert not td.compatible
    assert td.compatibility_error is not None and message in td.compatibility_error


def test_a_compatible_verdict_is_carried_to_the_next_description() -> None:
    # White-box on purpose: the verdict is set before anyone asks (the pass is spared).
    td = apply(compatible_set(), secondary(B, tags={"dc": "ny"}, **WIRE)).description
    assert td.__dict__["_compatibility_error"] is None
    assert td.compatible


def test_nothing_is_carried_from_a_description_never_checked() -> None:
    td = apply(replica_set(), primary(A, **WIRE)).description  # compatibility not asked
    after = apply(td, secondary(B, **WIRE)).description
    assert after.__dict__["_compatibility_error"] is not None  # still to be computed
    assert after.compatible


def test_an_incompatible_description_is_checked_again_when_its_server_changes() -> None:
    td = apply(compatible_set(), secondary(B, maxWireVersion=5)).description
    assert not td.compatible
    fixed = apply(td, secondary(B, **WIRE)).description
    assert fixed.compatibility_error is None


def test_a_checked_server_that_is_removed_keeps_the_description_compatible() -> None:
    # B reports another set's name: it is removed, and what is left was compatible.
    td = apply(compatible_set(), secondary(B, setName="other", **WIRE)).description
    assert B not in td.servers
    assert td.__dict__["_compatibility_error"] is None
    assert td.compatible


@pytest.mark.parametrize(
    ("min_wire", "max_wire", "compatible"),
    [
        (CLIENT_MAX_WIRE_VERSION, CLIENT_MAX_WIRE_VERSION, True),  # the newest it speaks
        (0, CLIENT_MIN_WIRE_VERSION, True),  # the oldest
        (CLIENT_MAX_WIRE_VERSION + 1, CLIENT_MAX_WIRE_VERSION + 2, False),
        (0, CLIENT_MIN_WIRE_VERSION - 1, False),
    ],
)
def test_the_wire_version_range_bounds(min_wire: int, max_wire: int, compatible: bool) -> None:
    wire = {"minWireVersion": min_wire, "maxWireVersion": max_wire}
    fresh = apply(replica_set(), secondary(B, **wire)).description  # a pass over the servers
    carried = apply(compatible_set(), secondary(B, **wire)).description  # the checked server
    assert fresh.compatible is compatible
    assert carried.compatible is compatible
