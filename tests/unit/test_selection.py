"""Unit tests of the server-selection core: read preferences, RTTs, selectors."""

from __future__ import annotations

import pickle
import random
from collections.abc import Sequence
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core.address import Address
from mongocore.core.description import topology as topology_module
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.selection.read_preference import (
    NEAREST,
    PRIMARY,
    PRIMARY_PREFERRED,
    SECONDARY,
    SECONDARY_PREFERRED,
    Mode,
    ReadPreference,
    ReadPreferenceForServer,
    read_preference_for_server,
)
from mongocore.core.selection.rtt import RoundTripTime
from mongocore.core.selection.selectors import (
    SelectionFacts,
    choose,
    in_latency_window,
    latency_window,
    select_server,
    select_servers,
    staleness,
)
from mongocore.errors import ConfigurationError, IncompatibleServerError, InvalidReadPreference

S = ServerType
T = TopologyType


def addr(name: str) -> Address:
    return Address(name, 27017)


def server(
    name: str,
    server_type: ServerType,
    rtt_ms: float = 5,
    *,
    tags: Optional[dict[str, str]] = None,
    last_write: Optional[float] = 0.0,
    last_update: float = 0.0,
    max_wire_version: int = 21,
) -> ServerDescription:
    return ServerDescription(
        addr(name),
        server_type,
        round_trip_time=rtt_ms / 1000,
        tags=tags,
        last_write_date=last_write,
        last_update_time=last_update,
        max_wire_version=max_wire_version,
    )


def topology(
    topology_type: TopologyType,
    servers: Sequence[ServerDescription],
    *,
    heartbeat_ms: int = 10_000,
    local_threshold_ms: int = 15,
) -> TopologyDescription:
    settings = TopologySettings(
        seeds=tuple(sd.address for sd in servers) or (addr("seed"),),
        heartbeat_frequency_ms=heartbeat_ms,
        local_threshold_ms=local_threshold_ms,
    )
    return TopologyDescription(topology_type, {sd.address: sd for sd in servers}, settings)


def names(servers: Sequence[ServerDescription]) -> set[str]:
    return {sd.address.host for sd in servers}


#: The random source the selections here are given (the core has none of its own).
RNG = random.Random(0)


class FixedRandom:
    """A RandomSource that returns the given values in turn."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


# --- ReadPreference: validation --------------------------------------------------


def test_defaults() -> None:
    rp = ReadPreference()
    assert rp.mode is Mode.PRIMARY
    assert rp.tag_sets == ({},)
    assert rp.max_staleness_seconds is None
    assert rp == PRIMARY
    assert not rp.secondary_ok


def test_primary_refuses_non_empty_tag_sets() -> None:
    with pytest.raises(InvalidReadPreference, match="primary cannot be combined with tag sets"):
        ReadPreference(Mode.PRIMARY, [{"dc": "ny"}])
    # The empty tag set (and an empty list) are fine: they match everything.
    assert ReadPreference(Mode.PRIMARY, [{}]) == PRIMARY
    assert ReadPreference(Mode.PRIMARY, []) == PRIMARY


def test_primary_refuses_max_staleness() -> None:
    with pytest.raises(InvalidReadPreference, match="primary cannot be combined with maxStale"):
        ReadPreference(Mode.PRIMARY, max_staleness_seconds=120)
    assert ReadPreference(Mode.PRIMARY, max_staleness_seconds=-1) == PRIMARY


@pytest.mark.parametrize("value", [0, -2, -90])
def test_max_staleness_must_be_positive_or_minus_one(value: int) -> None:
    with pytest.raises(InvalidReadPreference, match="positive number of seconds, or -1"):
        ReadPreference(Mode.NEAREST, max_staleness_seconds=value)


@pytest.mark.parametrize("value", [1.5, "120", True, float("nan"), [120]])
def test_max_staleness_must_be_a_whole_number(value: Any) -> None:
    with pytest.raises(InvalidReadPreference, match="maxStalenessSeconds must be"):
        ReadPreference(Mode.NEAREST, max_staleness_seconds=value)


def test_max_staleness_accepts_integral_floats_and_minus_one() -> None:
    whole: Any = 120.0
    assert ReadPreference(Mode.NEAREST, max_staleness_seconds=whole).max_staleness_seconds == 120
    assert ReadPreference(Mode.NEAREST, max_staleness_seconds=-1).max_staleness_seconds is None


def test_bad_modes_and_tag_sets() -> None:
    with pytest.raises(InvalidReadPreference, match="unknown read preference mode 'closest'"):
        ReadPreference("closest")
    with pytest.raises(InvalidReadPreference, match="mode must be a string"):
        ReadPreference(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidReadPreference, match="list of tag sets"):
        single_tag_set: Any = {"dc": "ny"}
        ReadPreference(Mode.NEAREST, single_tag_set)
    with pytest.raises(InvalidReadPreference, match="each tag set must be a document"):
        ReadPreference(Mode.NEAREST, ["dc:ny"])  # type: ignore[list-item]
    with pytest.raises(InvalidReadPreference, match="tag names must be strings"):
        ReadPreference(Mode.NEAREST, [{1: "ny"}])  # type: ignore[dict-item]
    with pytest.raises(InvalidReadPreference, match="unusable value"):
        ReadPreference(Mode.NEAREST, [{"dc": ["ny"]}])


def test_invalid_read_preference_is_a_configuration_error() -> None:
    assert issubclass(InvalidReadPreference, ConfigurationError)


def test_from_options_is_case_insensitive() -> None:
    assert ReadPreference.from_options("SecondaryPreferred") == SECONDARY_PREFERRED
    assert ReadPreference.from_options("NEAREST") == NEAREST
    assert ReadPreference.from_options("primarypreferred") == PRIMARY_PREFERRED
    assert ReadPreference.from_options(None) == PRIMARY
    rp = ReadPreference.from_options("secondary", [{"dc": "ny"}, {}], "120")
    assert rp.mode is Mode.SECONDARY
    assert rp.tag_sets == ({"dc": "ny"}, {})
    assert rp.max_staleness_seconds == 120
    assert ReadPreference.from_options("nearest", [], "-1") == NEAREST
    with pytest.raises(InvalidReadPreference, match="must be an integer"):
        ReadPreference.from_options("nearest", None, "soon")
    with pytest.raises(InvalidReadPreference, match="primary cannot be combined with tag"):
        ReadPreference.from_options(None, [{"dc": "ny"}])


def test_read_preference_is_an_immutable_value() -> None:
    tags = [{"dc": "ny"}]
    rp = ReadPreference(Mode.NEAREST, tags, 120)
    tags[0]["dc"] = "sf"  # the caller's list is copied
    assert rp.tag_sets == ({"dc": "ny"},)
    with pytest.raises(AttributeError, match="immutable"):
        rp.mode = Mode.PRIMARY
    same = ReadPreference("nearest", [{"dc": "ny"}], 120)
    assert rp == same and hash(rp) == hash(same)
    assert rp != ReadPreference("nearest", [{"dc": "ny"}], 90)
    assert rp != NEAREST
    assert pickle.loads(pickle.dumps(rp)) == rp
    assert repr(rp) == (
        "ReadPreference(mode='nearest', tag_sets=[{'dc': 'ny'}], max_staleness_seconds=120)"
    )
    assert repr(PRIMARY) == "ReadPreference(mode='primary')"
    assert str(rp) == "nearest, tag sets [{'dc': 'ny'}], maxStalenessSeconds 120"


# --- ReadPreference: what is sent ------------------------------------------------


def test_document() -> None:
    assert PRIMARY.document() == {"mode": "primary"}
    assert SECONDARY_PREFERRED.document() == {"mode": "secondaryPreferred"}
    rp = ReadPreference(Mode.NEAREST, [{"dc": "ny"}, {}], 120)
    doc = rp.document()
    assert doc == {"mode": "nearest", "tags": [{"dc": "ny"}, {}], "maxStalenessSeconds": 120}
    doc["tags"][0]["dc"] = "changed"  # a fresh document each time
    assert rp.document()["tags"] == [{"dc": "ny"}, {}]
    # Only empty tag sets: no "tags" field.
    assert ReadPreference(Mode.SECONDARY, [{}, {}]).document() == {"mode": "secondary"}


@pytest.mark.parametrize(
    ("rp", "document", "secondary_ok"),
    [
        (PRIMARY, None, False),
        (SECONDARY, {"mode": "secondary"}, True),
        (PRIMARY_PREFERRED, {"mode": "primaryPreferred"}, True),
        (NEAREST, {"mode": "nearest"}, True),
        (SECONDARY_PREFERRED, None, True),
        (
            ReadPreference(Mode.SECONDARY_PREFERRED, [{"dc": "ny"}]),
            {"mode": "secondaryPreferred", "tags": [{"dc": "ny"}]},
            True,
        ),
        (
            ReadPreference(Mode.SECONDARY_PREFERRED, max_staleness_seconds=120),
            {"mode": "secondaryPreferred", "maxStalenessSeconds": 120},
            True,
        ),
        (ReadPreference(Mode.SECONDARY_PREFERRED, [{}]), None, True),
    ],
)
def test_passing_read_preference_to_mongos(
    rp: ReadPreference, document: Optional[dict[str, Any]], secondary_ok: bool
) -> None:
    expected = ReadPreferenceForServer(document, secondary_ok)
    assert rp.for_mongos() == expected
    assert read_preference_for_server(rp, T.SHARDED, S.MONGOS) == expected
    # A mongos reached by a direct connection follows the same rules.
    assert read_preference_for_server(rp, T.SINGLE, S.MONGOS) == expected
    assert read_preference_for_server(rp, T.LOAD_BALANCED, S.LOAD_BALANCER) == expected


@pytest.mark.parametrize("server_type", [S.RS_PRIMARY, S.RS_SECONDARY, S.RS_ARBITER])
@pytest.mark.parametrize("rp", [None, PRIMARY, SECONDARY, NEAREST])
def test_single_topology_member_always_sets_secondary_ok(
    server_type: ServerType, rp: Optional[ReadPreference]
) -> None:
    assert read_preference_for_server(rp, T.SINGLE, server_type) == (None, True)


@pytest.mark.parametrize("rp", [None, PRIMARY, SECONDARY, NEAREST])
def test_a_standalone_is_sent_no_read_preference(rp: Optional[ReadPreference]) -> None:
    assert read_preference_for_server(rp, T.SINGLE, S.STANDALONE) == (None, False)


def test_replica_set_members_get_secondary_ok_for_every_mode_but_primary() -> None:
    for topology_type in (T.REPLICA_SET_WITH_PRIMARY, T.REPLICA_SET_NO_PRIMARY):
        assert read_preference_for_server(None, topology_type, S.RS_PRIMARY) == (None, False)
        assert read_preference_for_server(PRIMARY, topology_type, S.RS_PRIMARY) == (None, False)
        for rp in (SECONDARY, PRIMARY_PREFERRED, SECONDARY_PREFERRED, NEAREST):
            assert read_preference_for_server(rp, topology_type, S.RS_SECONDARY) == (None, True)


# --- RTT ------------------------------------------------------------------------


def test_rtt_average_and_minimum() -> None:
    rtt = RoundTripTime()
    assert rtt.average is None and rtt.minimum == 0.0
    rtt = rtt.add(0.010)
    assert rtt.average == 0.010  # the first sample is taken as is
    assert rtt.minimum == 0.0  # fewer than 2 samples
    rtt = rtt.add(0.020)
    assert rtt.average == pytest.approx(0.2 * 0.020 + 0.8 * 0.010)
    assert rtt.minimum == 0.010
    for _ in range(10):
        rtt = rtt.add(0.030)
    # The 10 and 20 ms samples are older than the last 10.
    assert rtt.minimum == 0.030
    assert len(rtt.samples) == 10
    assert rtt.reset() == RoundTripTime()


@pytest.mark.parametrize("bad", [-0.001, float("inf"), float("nan")])
def test_rtt_refuses_bad_samples(bad: float) -> None:
    with pytest.raises(ValueError, match="RTT sample"):
        RoundTripTime().add(bad)


# --- selection ------------------------------------------------------------------


def replica_set() -> TopologyDescription:
    return topology(
        T.REPLICA_SET_WITH_PRIMARY,
        [
            server("p", S.RS_PRIMARY, 20, tags={"dc": "ny"}),
            server("s1", S.RS_SECONDARY, 5, tags={"dc": "ny", "rack": "1"}),
            server("s2", S.RS_SECONDARY, 10, tags={"dc": "sf"}),
            server("arb", S.RS_ARBITER, 1),
            server("u", S.UNKNOWN),
        ],
    )


def test_modes_on_a_replica_set() -> None:
    td = replica_set()
    assert names(select_servers(td, PRIMARY)) == {"p"}
    assert names(select_servers(td, None)) == {"p"}  # a write
    assert names(select_servers(td, PRIMARY_PREFERRED)) == {"p"}
    assert names(select_servers(td, SECONDARY)) == {"s1", "s2"}
    assert names(select_servers(td, SECONDARY_PREFERRED)) == {"s1", "s2"}
    assert names(select_servers(td, NEAREST)) == {"p", "s1", "s2"}
    sf_then_ny = ReadPreference(Mode.NEAREST, [{"dc": "tokyo"}, {"dc": "ny"}])
    assert names(select_servers(td, sf_then_ny)) == {"p", "s1"}
    tokyo = [{"dc": "tokyo"}]
    assert select_servers(td, ReadPreference(Mode.SECONDARY, tokyo)) == []
    assert names(select_servers(td, ReadPreference(Mode.SECONDARY_PREFERRED, tokyo))) == {"p"}
    # The window: s1 at 5 ms anchors it, p at 20 ms is exactly at its edge.
    assert names(in_latency_window(select_servers(td, NEAREST), 0.015)) == {"p", "s1", "s2"}
    assert names(in_latency_window(select_servers(td, NEAREST), 0.014)) == {"s1", "s2"}
    assert names(in_latency_window(select_servers(td, NEAREST), 0.0)) == {"s1"}


def test_replica_set_without_primary() -> None:
    td = topology(
        T.REPLICA_SET_NO_PRIMARY,
        [server("s1", S.RS_SECONDARY), server("pp", S.POSSIBLE_PRIMARY, max_wire_version=0)],
    )
    assert select_server(td, None, RNG) is None
    assert select_server(td, PRIMARY, RNG) is None
    chosen = select_server(td, PRIMARY_PREFERRED, RNG)
    assert chosen is not None and chosen.address == addr("s1")


def test_other_topology_types() -> None:
    single = topology(T.SINGLE, [server("s", S.RS_SECONDARY)])
    for rp in (None, PRIMARY, SECONDARY):
        chosen = select_server(single, rp, RNG)
        assert chosen is not None and chosen.address == addr("s")
    assert select_server(topology(T.SINGLE, [server("s", S.UNKNOWN)]), None, RNG) is None

    sharded = topology(
        T.SHARDED, [server("m1", S.MONGOS, 5), server("m2", S.MONGOS, 50), server("u", S.UNKNOWN)]
    )
    for rp in (None, PRIMARY, ReadPreference(Mode.SECONDARY, [{"dc": "nowhere"}])):
        assert names(select_servers(sharded, rp)) == {"m1", "m2"}
        assert select_server(sharded, rp, RNG) == sharded.servers[addr("m1")]

    balancer = ServerDescription.load_balancer(addr("lb"))
    load_balanced = topology(T.LOAD_BALANCED, [balancer])
    assert select_server(load_balanced, None, RNG) is balancer
    assert select_server(load_balanced, NEAREST, RNG) is balancer

    unknown = topology(T.UNKNOWN, [server("g", S.RS_GHOST), server("u", S.UNKNOWN)])
    assert select_server(unknown, None, RNG) is None
    assert select_server(unknown, NEAREST, RNG) is None


def test_incompatible_description_raises_first() -> None:
    td = topology(
        T.REPLICA_SET_WITH_PRIMARY,
        [server("p", S.RS_PRIMARY, max_wire_version=2), server("s", S.RS_SECONDARY)],
    )
    with pytest.raises(IncompatibleServerError, match="reports wire version 2"):
        select_server(td, NEAREST, RNG)
    with pytest.raises(IncompatibleServerError):
        select_server(td, None, RNG)
    # Before the maxStalenessSeconds checks, too.
    with pytest.raises(IncompatibleServerError):
        select_servers(td, ReadPreference(Mode.NEAREST, max_staleness_seconds=1))


def test_max_staleness_against_heartbeat_and_smallest_value() -> None:
    td = topology(
        T.REPLICA_SET_WITH_PRIMARY,
        [server("p", S.RS_PRIMARY), server("s", S.RS_SECONDARY)],
        heartbeat_ms=120_000,
    )
    with pytest.raises(InvalidReadPreference, match=r"at least .* = 130 seconds"):
        select_server(td, ReadPreference(Mode.NEAREST, max_staleness_seconds=129), RNG)
    assert (
        select_server(td, ReadPreference(Mode.NEAREST, max_staleness_seconds=130), RNG) is not None
    )
    td = topology(T.REPLICA_SET_NO_PRIMARY, [server("s", S.RS_SECONDARY)], heartbeat_ms=500)
    with pytest.raises(InvalidReadPreference, match="smallestMaxStalenessSeconds"):
        select_server(td, ReadPreference(Mode.SECONDARY, max_staleness_seconds=89), RNG)
    # Not checked for other topology types, where the value is passed to mongos.
    sharded = topology(T.SHARDED, [server("m", S.MONGOS)])
    assert select_server(sharded, ReadPreference(Mode.NEAREST, max_staleness_seconds=1), RNG)


def test_max_staleness_needs_wire_version_5(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend the client spoke old wire versions, so the description is compatible.
    monkeypatch.setattr(topology_module, "CLIENT_MIN_WIRE_VERSION", 0)
    td = topology(T.SHARDED, [server("m", S.MONGOS, max_wire_version=4)])
    assert select_server(td, NEAREST, RNG) is not None
    with pytest.raises(InvalidReadPreference, match="m:27017 reports wire version 4"):
        select_server(td, ReadPreference(Mode.NEAREST, max_staleness_seconds=120), RNG)


def test_staleness_estimates() -> None:
    # ReplicaSetWithPrimary: (S.lut - S.lwd) - (P.lut - P.lwd) + heartbeat.
    td = topology(
        T.REPLICA_SET_WITH_PRIMARY,
        [
            server("p", S.RS_PRIMARY, last_write=100.0, last_update=100.0),
            server("fresh", S.RS_SECONDARY, last_write=95.0, last_update=100.0),
            server("stale", S.RS_SECONDARY, last_write=0.0, last_update=100.0),
            server("blind", S.RS_SECONDARY, last_write=None),
        ],
    )
    servers = td.servers
    assert staleness(td, servers[addr("p")]) == 0.0
    assert staleness(td, servers[addr("fresh")]) == pytest.approx(15.0)
    assert staleness(td, servers[addr("stale")]) == pytest.approx(110.0)
    assert staleness(td, servers[addr("blind")]) is None
    rp = ReadPreference(Mode.NEAREST, max_staleness_seconds=100)
    # Unknown staleness is never eligible; the primary always is.
    assert names(select_servers(td, rp)) == {"p", "fresh"}
    # ReplicaSetNoPrimary: SMax.lwd - S.lwd + heartbeat.
    no_primary = topology(
        T.REPLICA_SET_NO_PRIMARY,
        [
            server("a", S.RS_SECONDARY, last_write=200.0),
            server("b", S.RS_SECONDARY, last_write=100.0),
        ],
    )
    assert staleness(no_primary, no_primary.servers[addr("a")]) == pytest.approx(10.0)
    assert staleness(no_primary, no_primary.servers[addr("b")]) == pytest.approx(110.0)
    assert names(select_servers(no_primary, ReadPreference(Mode.SECONDARY, None, 100))) == {"a"}


def test_deprioritized_servers() -> None:
    sharded = topology(T.SHARDED, [server("m1", S.MONGOS, 5), server("m2", S.MONGOS, 50)])
    m1 = sharded.servers[addr("m1")]
    assert names(select_servers(sharded, None, deprioritized=[m1])) == {"m2"}
    assert names(select_servers(sharded, None, deprioritized=[addr("m1")])) == {"m2"}
    chosen = select_server(sharded, None, RNG, deprioritized=[addr("m1")])
    assert chosen is not None and chosen.address == addr("m2")
    # All deprioritized: selection goes on as if none were.
    everything = [addr("m1"), addr("m2")]
    assert names(select_servers(sharded, None, deprioritized=everything)) == {"m1", "m2"}
    # Replica sets: a deprioritized primary makes primaryPreferred read a secondary.
    td = replica_set()
    assert names(select_servers(td, PRIMARY_PREFERRED, deprioritized=[addr("p")])) == {
        "s1",
        "s2",
    }
    # An address the topology does not have changes nothing.
    assert names(select_servers(td, PRIMARY, deprioritized=[addr("gone")])) == {"p"}


def test_uniform_choice_uses_the_random_source() -> None:
    td = topology(T.SHARDED, [server(f"m{i}", S.MONGOS) for i in range(4)])
    picks = [select_server(td, None, FixedRandom(v)) for v in (0.0, 0.25, 0.5, 0.999999)]
    assert [sd.address.host for sd in picks if sd is not None] == ["m0", "m1", "m2", "m3"]
    window = latency_window(SelectionFacts(td), None)
    assert [choose(window, FixedRandom(v)) for v in (0.0, 0.999999)] == [window[0], window[3]]
    assert choose((), FixedRandom()) is None  # no draw for an empty window
    assert choose(window[:1], FixedRandom()) is window[0]  # nor for one server


def test_the_core_keeps_nothing_on_a_description() -> None:
    """Selection writes nothing onto the immutable description: the facts are a value
    of their own, immutable too, and selecting twice computes the same window."""
    td = replica_set()
    before = dict(vars(td))
    facts = SelectionFacts(td)
    assert latency_window(facts, NEAREST) == latency_window(SelectionFacts(td), NEAREST)
    select_server(td, NEAREST, random.Random(1))
    assert vars(td).keys() == before.keys()
    with pytest.raises(AttributeError, match="immutable"):
        facts.primary = None  # type: ignore[misc]


# --- property: the choice is suitable and in the window -----------------------------

TAGS = st.dictionaries(st.sampled_from(["dc", "rack"]), st.sampled_from(["a", "b"]), max_size=2)
RS_MEMBER = st.sampled_from([S.RS_SECONDARY, S.RS_SECONDARY, S.RS_ARBITER, S.RS_OTHER, S.UNKNOWN])


@st.composite
def descriptions(draw: st.DrawFn) -> TopologyDescription:
    topology_type = draw(st.sampled_from(list(TopologyType)))
    if topology_type is T.SINGLE:
        types = [draw(st.sampled_from([S.STANDALONE, S.RS_SECONDARY, S.MONGOS, S.UNKNOWN]))]
    elif topology_type is T.LOAD_BALANCED:
        types = [S.LOAD_BALANCER]
    elif topology_type is T.SHARDED:
        types = draw(st.lists(st.sampled_from([S.MONGOS, S.UNKNOWN]), min_size=1, max_size=6))
    elif topology_type is T.UNKNOWN:
        types = draw(st.lists(st.sampled_from([S.UNKNOWN, S.RS_GHOST]), max_size=3))
    else:
        types = draw(st.lists(RS_MEMBER, min_size=1, max_size=7))
        if topology_type is T.REPLICA_SET_WITH_PRIMARY:
            types.insert(draw(st.integers(0, len(types))), S.RS_PRIMARY)
        elif draw(st.booleans()):
            types.append(S.POSSIBLE_PRIMARY)
    servers = [
        server(
            f"h{i}",
            server_type,
            draw(st.floats(0, 100)),
            tags=draw(TAGS),
            last_write=draw(st.one_of(st.none(), st.floats(0, 1000))),
            last_update=draw(st.floats(0, 1000)),
        )
        for i, server_type in enumerate(types)
    ]
    return topology(
        topology_type,
        servers,
        heartbeat_ms=draw(st.integers(500, 200_000)),
        local_threshold_ms=draw(st.integers(0, 50)),
    )


@st.composite
def read_preferences(draw: st.DrawFn) -> Optional[ReadPreference]:
    mode = draw(st.sampled_from([None, *Mode]))
    if mode is None:
        return None  # a write
    if mode is Mode.PRIMARY:
        return PRIMARY
    tag_sets = draw(st.one_of(st.none(), st.lists(TAGS, min_size=1, max_size=3)))
    max_staleness = draw(st.one_of(st.none(), st.integers(1, 400)))
    return ReadPreference(mode, tag_sets, max_staleness)


@given(descriptions(), read_preferences(), st.lists(st.integers(0, 7), max_size=3), st.randoms())
def test_selected_server_is_suitable_and_in_the_window(
    td: TopologyDescription,
    rp: Optional[ReadPreference],
    deprioritized_indexes: list[int],
    rng: random.Random,
) -> None:
    deprioritized = [addr(f"h{i}") for i in deprioritized_indexes]
    try:
        suitable = select_servers(td, rp, deprioritized=deprioritized)
    except InvalidReadPreference:
        # Refused for this topology: select_server refuses it too, cached or not.
        with pytest.raises(InvalidReadPreference):
            select_server(td, rp, rng, deprioritized=deprioritized)
        with pytest.raises(InvalidReadPreference):
            select_server(td, rp, rng)
        return
    threshold = td.settings.local_threshold
    window = in_latency_window(suitable, threshold)
    for deprioritized_now in (deprioritized, ()):
        chosen = select_server(td, rp, rng, deprioritized=deprioritized_now)
        if deprioritized_now == ():
            suitable = select_servers(td, rp)
            window = in_latency_window(suitable, threshold)
        if not suitable:
            assert chosen is None
            continue
        assert chosen is not None
        assert chosen in suitable
        assert chosen in window
        fastest = min(sd.round_trip_time or 0.0 for sd in suitable)
        assert (chosen.round_trip_time or 0.0) <= fastest + threshold + 1e-9
    for sd in suitable:
        assert sd.type not in (S.UNKNOWN, S.POSSIBLE_PRIMARY, S.RS_ARBITER, S.RS_OTHER)
        if td.type in (T.REPLICA_SET_WITH_PRIMARY, T.REPLICA_SET_NO_PRIMARY):
            if rp is None or rp.mode is Mode.PRIMARY:
                assert sd.type is S.RS_PRIMARY
            if rp is not None and rp.mode is Mode.SECONDARY:
                assert sd.type is S.RS_SECONDARY
        elif td.type is T.SHARDED:
            assert sd.type is S.MONGOS
