"""Properties of the SDAM state machine over random sequences of hello outcomes."""

from __future__ import annotations

from typing import Any, Optional

from bson import ObjectId
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core.address import Address
from mongocore.core.description.errors import ApplicationError, ErrorKind, classify
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.errors import ConfigurationError

ADDRESSES = [Address(f"h{i}", 27017) for i in range(7)]
address = st.sampled_from(ADDRESSES)
election_ids = st.sampled_from([None] + [ObjectId(f"{i:024x}") for i in range(1, 4)])


@st.composite
def hello(draw: st.DrawFn) -> Optional[dict[str, Any]]:
    """A hello reply of any server type, or None for a failed check."""
    kind = draw(
        st.sampled_from(
            ["fail", "standalone", "mongos", "ghost", "arbiter", "other"]
            + ["primary", "secondary"] * 4
        )
    )
    if kind == "fail":
        return None
    # Now and then a server too old (maxWireVersion 5) or too new (minWireVersion 29)
    # for mongocore: the description is then incompatible until it changes.
    min_wire, max_wire = draw(
        st.sampled_from([(0, 9), (0, 17), (0, 21), (0, 21), (0, 5), (29, 30)])
    )
    reply: dict[str, Any] = {"ok": 1, "minWireVersion": min_wire, "maxWireVersion": max_wire}
    if kind == "mongos":
        reply["msg"] = "isdbgrid"
    elif kind == "ghost":
        reply["isreplicaset"] = True
    elif kind != "standalone":
        reply["setName"] = draw(st.sampled_from(["rs"] * 5 + ["other"]))
        # Mostly the same few members, so that discovery converges and races happen.
        members = st.one_of(
            st.just(ADDRESSES[:3]), st.just(ADDRESSES), st.lists(address, max_size=7, unique=True)
        )
        reply["hosts"] = [str(a) for a in draw(members)]
        reply["isWritablePrimary"] = kind == "primary"
        reply["secondary"] = kind == "secondary"
        reply["arbiterOnly"] = kind == "arbiter"
        if draw(st.booleans()):
            reply["primary"] = str(draw(address))
        if draw(st.integers(0, 4)) == 0:
            reply["me"] = str(draw(address))
        if kind == "primary":
            reply["electionId"] = draw(election_ids)
            reply["setVersion"] = draw(st.sampled_from([None, 1, 2, 3]))
    return reply


@st.composite
def settings(draw: st.DrawFn) -> TopologySettings:
    seeds = tuple(
        draw(st.lists(st.sampled_from(ADDRESSES[:4]), min_size=1, max_size=4, unique=True))
    )
    direct = draw(st.sampled_from([None, False, True])) if len(seeds) == 1 else None
    replica_set = draw(st.sampled_from([None, "rs"]))
    return TopologySettings(seeds=seeds, direct_connection=direct, replica_set=replica_set)


step = st.one_of(
    st.tuples(st.just("hello"), address, hello()),
    st.tuples(st.just("error"), address, st.sampled_from(["network", "notwritable", "shutdown"])),
)


def snapshot(td: TopologyDescription) -> tuple[Any, ...]:
    return (
        td.type,
        td.set_name,
        td.max_election_id,
        td.max_set_version,
        tuple((a, sd, sd.round_trip_time) for a, sd in td.servers.items()),
    )


def check_invariants(
    td: TopologyDescription, initial_type: TopologyType, early_ghosts: set[Address]
) -> None:
    types = [sd.type for sd in td.servers.values()]
    assert types.count(ServerType.RS_PRIMARY) <= 1
    if initial_type is TopologyType.SINGLE:
        assert td.type is TopologyType.SINGLE
        assert len(td.servers) == 1
    if td.type is TopologyType.SHARDED:
        # The seed's Unknown+Mongos cell only sets the type: an RSGhost found while the
        # topology was Unknown stays until its own next outcome removes it.
        for addr, sd in td.servers.items():
            assert sd.type in (ServerType.MONGOS, ServerType.UNKNOWN) or (
                sd.type is ServerType.RS_GHOST and addr in early_ghosts
            )
    if td.type is TopologyType.REPLICA_SET_WITH_PRIMARY:
        assert ServerType.RS_PRIMARY in types
    if td.type is TopologyType.REPLICA_SET_NO_PRIMARY:
        assert ServerType.RS_PRIMARY not in types
    if td.type in (TopologyType.REPLICA_SET_NO_PRIMARY, TopologyType.REPLICA_SET_WITH_PRIMARY):
        assert ServerType.STANDALONE not in types and ServerType.MONGOS not in types
    if initial_type is TopologyType.REPLICA_SET_NO_PRIMARY:
        assert td.type in (
            TopologyType.REPLICA_SET_NO_PRIMARY,
            TopologyType.REPLICA_SET_WITH_PRIMARY,
        )
    for addr, sd in td.servers.items():
        assert sd.address == addr


def compatibility_from_scratch(td: TopologyDescription) -> Optional[str]:
    """The compatibility of a new description of the same servers (nothing carried)."""
    fresh = TopologyDescription(
        td.type,
        td.servers,
        td.settings,
        set_name=td.set_name,
        max_election_id=td.max_election_id,
        max_set_version=td.max_set_version,
    )
    return fresh.compatibility_error


@given(settings(), st.lists(step, min_size=8, max_size=60))
def test_random_outcomes_keep_the_invariants(
    config: TopologySettings, steps: list[tuple[str, Address, Any]]
) -> None:
    td = TopologyDescription.initial(config)
    initial_type = td.type
    generations = dict.fromkeys(ADDRESSES, 0)
    early_ghosts: set[Address] = set()  # RSGhosts reported while the topology was Unknown
    for kind, addr, payload in steps:
        before = snapshot(td)
        early_ghosts.discard(addr)
        if kind == "hello":
            if td.type is TopologyType.UNKNOWN and payload and payload.get("isreplicaset"):
                early_ghosts.add(addr)
            if payload is None:
                sd = ServerDescription.from_error(addr, "connection refused")
            else:
                sd = ServerDescription.from_hello(addr, payload, 0.005)
            sd_before = (sd, sd.hosts, sd.round_trip_time)
            transition = apply(td, sd)
            assert (sd, sd.hosts, sd.round_trip_time) == sd_before, "apply mutated its input"
        else:
            reply = None
            if payload != "network":
                code = 10107 if payload == "notwritable" else 91
                reply = {"ok": 0, "code": code, "errmsg": payload}
            error = ApplicationError(
                addr,
                ErrorKind.NETWORK if reply is None else ErrorKind.COMMAND,
                generations[addr],
                max_wire_version=21,
                reply=reply,
            )
            decision = classify(td, error, generations[addr])
            if decision.clear_pool:
                generations[addr] += 1
            if decision.mark_unknown is None:
                assert snapshot(td) == before
                continue
            transition = apply(td, decision.mark_unknown)
        assert snapshot(td) == before, "apply mutated the previous description"
        assert snapshot(transition.previous) == before
        td = transition.description
        check_invariants(td, initial_type, early_ghosts)
        # Computed on every description, as selection does: apply() then carries a
        # compatible verdict over when the checked server is compatible too. It must be
        # what a pass over the servers finds.
        assert td.compatibility_error == compatibility_from_scratch(td)
        assert not set(transition.added) & set(transition.removed)
        assert set(transition.added) <= set(td.servers)
        assert not set(transition.removed) & set(td.servers)


@given(st.lists(address, min_size=2, max_size=5, unique=True))
def test_direct_connection_with_several_seeds_is_refused(seeds: list[Address]) -> None:
    try:
        TopologySettings(seeds=tuple(seeds), direct_connection=True)
    except ConfigurationError as exc:
        assert "directConnection=true" in str(exc)
    else:
        raise AssertionError("directConnection=true with several seeds was accepted")
