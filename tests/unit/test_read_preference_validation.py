"""Read preference validation: the messages a user sees, and the deployment-dependent checks.

Seed: server-selection.rst 1.5, "Components of a read preference" (mode, tag_sets,
maxStalenessSeconds and the combinations a driver MUST refuse) and
"maxStalenessSeconds" (it must be at least heartbeatFrequencyMS +
idleWritePeriodMS, at least smallestMaxStalenessSeconds, and every server must be
MongoDB 3.4, wire version 5, or newer).
"""

from __future__ import annotations

from typing import Any

import pytest

from mongocore.core.address import Address
from mongocore.core.description import topology as topology_module
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.core.selection.selectors import select_servers
from mongocore.errors import InvalidReadPreference


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((3,), "read preference mode must be a string, not int"),
        (
            ("closest",),
            "unknown read preference mode 'closest': expected one of primary, "
            "primaryPreferred, secondary, secondaryPreferred, nearest",
        ),
        (
            ("primary", [{"dc": "ny"}]),
            "read preference mode primary cannot be combined with tag sets (got [{'dc': 'ny'}]):"
            " tags select secondaries; use primaryPreferred, secondary, secondaryPreferred or "
            "nearest",
        ),
        (
            ("primary", None, 100),
            "read preference mode primary cannot be combined with maxStalenessSeconds=100: the "
            "primary is never stale; use another mode, or drop maxStalenessSeconds",
        ),
        (
            ("nearest", {"dc": "ny"}),
            "tag_sets must be a list of tag sets (documents), for example [{'dc': 'ny'}, {}], "
            "not a single dict",
        ),
        (("nearest", ["dc:ny"]), "each tag set must be a document, not str ('dc:ny')"),
    ],
)
def test_invalid_read_preferences_say_what_is_wrong(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(InvalidReadPreference) as raised:
        ReadPreference(*args)
    assert str(raised.value) == message


def test_a_read_preference_equals_itself() -> None:
    rp = ReadPreference(Mode.NEAREST, [{"dc": "ny"}])
    same = rp
    assert rp == same
    assert rp == ReadPreference("nearest", [{"dc": "ny"}])


def replica_set(*, heartbeat_ms: int = 10_000, max_wire_version: int = 21) -> TopologyDescription:
    servers = {
        Address(name, 27017): ServerDescription(
            Address(name, 27017),
            server_type,
            round_trip_time=0.005,
            last_write_date=0.0,
            max_wire_version=max_wire_version,
        )
        for name, server_type in (("p", ServerType.RS_PRIMARY), ("s", ServerType.RS_SECONDARY))
    }
    settings = TopologySettings(seeds=tuple(servers), heartbeat_frequency_ms=heartbeat_ms)
    return TopologyDescription(TopologyType.REPLICA_SET_WITH_PRIMARY, servers, settings)


def test_max_staleness_floor_is_compared_in_milliseconds() -> None:
    # heartbeatFrequencyMS 90050 + idleWritePeriodMS 10000 = 100.05 s: 100 s is too small.
    td = replica_set(heartbeat_ms=90_050)
    with pytest.raises(InvalidReadPreference, match=r"= 100.05 seconds"):
        select_servers(td, ReadPreference(Mode.NEAREST, max_staleness_seconds=100))
    assert len(select_servers(td, ReadPreference(Mode.NEAREST, max_staleness_seconds=101))) == 2


def test_max_staleness_accepts_wire_version_5(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend the client spoke old wire versions, so the description is compatible.
    monkeypatch.setattr(topology_module, "CLIENT_MIN_WIRE_VERSION", 0)
    rp = ReadPreference(Mode.NEAREST, max_staleness_seconds=120)
    assert len(select_servers(replica_set(max_wire_version=5), rp)) == 2
    with pytest.raises(InvalidReadPreference, match="reports wire version 4"):
        select_servers(replica_set(max_wire_version=4), rp)
