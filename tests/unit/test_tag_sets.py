"""Tag sets and maxStalenessSeconds as filters of the eligible servers.

Seed: server-selection.rst 1.5, "tag_sets" (tried in order; the first tag set that
matches some server wins; an empty tag set matches every server) and
"maxStalenessSeconds" (secondaries staler than the maximum, or whose staleness is
unknown, are not eligible; the primary always is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import pytest

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.core.selection.selectors import select_servers, staleness

S = ServerType


def member(
    name: str,
    server_type: ServerType = S.RS_SECONDARY,
    *,
    tags: Optional[dict[str, Any]] = None,
    last_write: Optional[float] = 100.0,
) -> ServerDescription:
    return ServerDescription(
        Address(name, 27017),
        server_type,
        round_trip_time=0.005,
        tags=tags,
        last_write_date=last_write,
        last_update_time=100.0,
        max_wire_version=21,
    )


def replica_set(
    servers: Sequence[ServerDescription],
    topology_type: TopologyType = TopologyType.REPLICA_SET_NO_PRIMARY,
) -> TopologyDescription:
    settings = TopologySettings(seeds=tuple(sd.address for sd in servers))
    return TopologyDescription(topology_type, {sd.address: sd for sd in servers}, settings)


def chosen(td: TopologyDescription, rp: ReadPreference) -> list[str]:
    return [sd.address.host for sd in select_servers(td, rp)]


NY = member("ny1", tags={"dc": "ny", "rack": "1"})
NY2 = member("ny2", tags={"dc": "ny", "rack": "2"})
SF = member("sf", tags={"dc": "sf"})
UNTAGGED = member("none")
MEMBERS = replica_set([NY, NY2, SF, UNTAGGED])


@pytest.mark.parametrize(
    ("tag_sets", "expected"),
    [
        # Two tag sets that both match: the first one decides, in the order given.
        ([{"dc": "sf"}, {"dc": "ny"}], ["sf"]),
        ([{"dc": "ny"}, {"dc": "sf"}], ["ny1", "ny2"]),
        ([{"dc": "ny", "rack": "2"}, {"dc": "sf"}], ["ny2"]),
        # A tag set that matches nothing is skipped; the next one is tried.
        ([{"dc": "la"}, {"dc": "sf"}], ["sf"]),
        ([{"dc": "la"}, {"dc": "sf", "rack": "1"}, {}], ["ny1", "ny2", "sf", "none"]),
        # A server must have every tag of the set, with the same value.
        ([{"dc": "ny", "rack": "3"}], []),
        ([{"dc": "la"}], []),
    ],
)
def test_first_matching_tag_set_wins(tag_sets: list[dict[str, Any]], expected: list[str]) -> None:
    for mode in (Mode.SECONDARY, Mode.NEAREST):
        assert chosen(MEMBERS, ReadPreference(mode, tag_sets)) == expected


def test_a_missing_tag_never_matches_even_a_null_value() -> None:
    assert chosen(MEMBERS, ReadPreference(Mode.SECONDARY, [{"dc": None}])) == []
    assert chosen(MEMBERS, ReadPreference(Mode.SECONDARY, [{"rack": None, "dc": "sf"}])) == []


def test_secondary_preferred_falls_back_to_the_primary_when_no_tag_matches() -> None:
    td = replica_set(
        [member("p", S.RS_PRIMARY, tags={"dc": "ny"}), SF],
        TopologyType.REPLICA_SET_WITH_PRIMARY,
    )
    assert chosen(td, ReadPreference(Mode.SECONDARY_PREFERRED, [{"dc": "ny"}])) == ["p"]
    assert chosen(td, ReadPreference(Mode.SECONDARY_PREFERRED, [{"dc": "sf"}])) == ["sf"]
    assert chosen(td, ReadPreference(Mode.SECONDARY, [{"dc": "ny"}])) == []


# --- maxStalenessSeconds ---


def test_a_stale_secondary_does_not_hide_the_fresh_ones_after_it() -> None:
    td = replica_set(
        [
            member("newest", last_write=1000.0),
            member("stale", last_write=100.0),
            member("blind", last_write=None),
            member("fresh", last_write=990.0),
        ]
    )
    rp = ReadPreference(Mode.SECONDARY, max_staleness_seconds=90)
    assert chosen(td, rp) == ["newest", "fresh"]


def test_staleness_is_unknown_when_no_secondary_reports_a_write_date() -> None:
    td = replica_set([member("a", last_write=None), member("b", last_write=None)])
    assert staleness(td, td.servers[Address("a", 27017)]) is None
    assert chosen(td, ReadPreference(Mode.SECONDARY, max_staleness_seconds=120)) == []
    assert chosen(td, ReadPreference(Mode.SECONDARY)) == ["a", "b"]


def test_staleness_and_tags_combine() -> None:
    td = replica_set(
        [
            member("ny-stale", tags={"dc": "ny"}, last_write=100.0),
            member("sf-fresh", tags={"dc": "sf"}, last_write=1000.0),
        ]
    )
    # The stale server is filtered out first, so the second tag set is the one that matches.
    rp = ReadPreference(Mode.NEAREST, [{"dc": "ny"}, {"dc": "sf"}], max_staleness_seconds=90)
    assert chosen(td, rp) == ["sf-fresh"]
