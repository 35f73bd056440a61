"""The latency window, the RTT it is computed from, and which topology types select nothing.

Seed: server-selection.rst 1.5, "Selecting servers within the latency window" (A <=
RTT <= A + localThresholdMS), "Topology type: Unknown" (no server is suitable), and
server-discovery-and-monitoring.md, "Round Trip Time" (the weighted average; the
newer spec's minimum over the last 10 samples).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Optional

import pytest

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.selection.read_preference import NEAREST, SECONDARY, Mode, ReadPreference
from mongocore.core.selection.rtt import RoundTripTime
from mongocore.core.selection.selectors import in_latency_window, select_server, select_servers

S = ServerType
T = TopologyType
#: The random source every selection here is given (the core has none of its own).
RNG = random.Random(0)


def server(name: str, server_type: ServerType, rtt_ms: Optional[float]) -> ServerDescription:
    return ServerDescription(
        Address(name, 27017),
        server_type,
        round_trip_time=None if rtt_ms is None else rtt_ms / 1000,
        last_write_date=0.0,
        max_wire_version=21,
    )


def topology(
    topology_type: TopologyType, servers: Sequence[ServerDescription]
) -> TopologyDescription:
    settings = TopologySettings(seeds=tuple(sd.address for sd in servers))
    return TopologyDescription(topology_type, {sd.address: sd for sd in servers}, settings)


def hosts(servers: Sequence[ServerDescription]) -> list[str]:
    return [sd.address.host for sd in servers]


def test_a_server_without_an_average_rtt_counts_as_zero() -> None:
    # Servers that are never monitored (load balancers, or mongoses described by hand)
    # have no average RTT; the window is measured from zero then.
    unmeasured = [server("m1", S.MONGOS, None), server("m2", S.MONGOS, None)]
    assert hosts(in_latency_window(unmeasured, 0.015)) == ["m1", "m2"]
    mixed = [server("m1", S.MONGOS, None), server("far", S.MONGOS, 500)]
    assert hosts(in_latency_window(mixed, 0.015)) == ["m1"]
    td = topology(T.SHARDED, mixed)
    chosen = select_server(td, None, RNG)
    assert chosen is not None and chosen.address.host == "m1"


def test_window_bounds_are_inclusive() -> None:
    servers = [server("a", S.MONGOS, 5), server("b", S.MONGOS, 20), server("c", S.MONGOS, 21)]
    assert hosts(in_latency_window(servers, 0.015)) == ["a", "b"]
    assert hosts(in_latency_window(servers[:1], 0.0)) == ["a"]
    assert in_latency_window([], 0.015) == []


def test_unknown_topology_selects_nothing_whatever_its_servers_claim() -> None:
    td = topology(
        T.UNKNOWN,
        [server("p", S.RS_PRIMARY, 5), server("s", S.RS_SECONDARY, 5), server("m", S.MONGOS, 5)],
    )
    for read_preference in (None, NEAREST, SECONDARY, ReadPreference(Mode.PRIMARY_PREFERRED)):
        assert select_servers(td, read_preference) == []
        assert select_server(td, read_preference, RNG) is None


def test_minimum_rtt_is_over_the_last_ten_samples() -> None:
    rtt = RoundTripTime()
    samples = [0.001 * n for n in range(1, 16)]  # rising: the oldest kept sample is the minimum
    for count, sample in enumerate(samples, start=1):
        rtt = rtt.add(sample)
        kept = samples[max(0, count - 10) : count]
        assert rtt.samples == tuple(kept)
        assert rtt.minimum == (min(kept) if count >= 2 else 0.0)


def test_rtt_values_compare_by_average_and_samples() -> None:
    one = RoundTripTime(0.01, (0.01,))
    assert one == RoundTripTime(0.01, (0.01,)) and hash(one) == hash(RoundTripTime(0.01, (0.01,)))
    assert one != RoundTripTime(0.01, (0.02, 0.005))
    assert one != RoundTripTime(0.02, (0.01,))
    assert len({hash(RoundTripTime(0.001 * n, ())) for n in range(8)}) > 1


@pytest.mark.parametrize("rtt_ms", [0.0, 14.999])
def test_window_from_zero(rtt_ms: float) -> None:
    servers = [server("lb", S.LOAD_BALANCER, None), server("x", S.MONGOS, rtt_ms)]
    assert hosts(in_latency_window(servers, 0.015)) == ["lb", "x"]
