"""Applying a new SRV host list to a topology description (SRV polling).

Spec: polling-srv-records-for-mongos-discovery, "Polling": hosts that appear are
added as Unknown and monitored, hosts that disappear are removed; only a Sharded or
Unknown topology follows the SRV records.
"""

from __future__ import annotations

import pytest

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply, apply_srv_hosts
from mongocore.core.description.types import ServerType, TopologyType

A = Address("a.example.com", 27017)
B = Address("b.example.com", 27017)
C = Address("c.example.com", 27017)
D = Address("d.example.com", 27017)


def sharded(*seeds: Address) -> TopologyDescription:
    td = TopologyDescription.initial(TopologySettings(seeds=seeds, srv=True))
    for address in seeds:
        mongos = ServerDescription.from_hello(address, {"ok": 1, "msg": "isdbgrid"}, 0.01)
        td = apply(td, mongos).description
    return td


def test_new_hosts_are_added_unknown_in_order_and_missing_ones_removed() -> None:
    td = sharded(A, B)
    transition = apply_srv_hosts(td, [D, B, C])
    new = transition.description
    assert transition.previous is td and transition.applied is None
    assert transition.added == (C, D) and transition.removed == (A,)
    assert list(new.servers) == [B, C, D]
    assert new.servers[B] is td.servers[B]  # a known mongos keeps its description
    assert new.servers[C] == ServerDescription(C) and new.servers[D].type is ServerType.UNKNOWN
    assert new.type is TopologyType.SHARDED and new.settings is td.settings
    assert td.servers.keys() == {A, B}  # the old description is unchanged


def test_only_additions_or_only_removals() -> None:
    td = sharded(A, B)
    grown = apply_srv_hosts(td, [A, B, C])
    assert grown.added == (C,) and grown.removed == ()
    assert set(grown.description.servers) == {A, B, C}
    shrunk = apply_srv_hosts(td, [B])
    assert shrunk.added == () and shrunk.removed == (A,)
    assert set(shrunk.description.servers) == {B}


def test_the_same_hosts_change_nothing() -> None:
    td = sharded(A, B)
    transition = apply_srv_hosts(td, iter([B, A]))
    assert transition.description is td and transition.previous is td
    assert transition.added == () and transition.removed == ()


def test_an_unknown_topology_follows_the_records_too() -> None:
    td = TopologyDescription.initial(TopologySettings(seeds=(A,), srv=True))
    transition = apply_srv_hosts(td, [B])
    assert transition.added == (B,) and transition.removed == (A,)
    assert transition.description.type is TopologyType.UNKNOWN
    assert transition.description.set_name is None


@pytest.mark.parametrize("direct", [False, True])
def test_other_topology_types_ignore_the_records(direct: bool) -> None:
    if direct:
        td = TopologyDescription.initial(TopologySettings(seeds=(A,), direct_connection=True))
    else:
        td = TopologyDescription.initial(TopologySettings(seeds=(A,), replica_set="rs"))
    transition = apply_srv_hosts(td, [B, C])
    assert transition.description is td and transition.previous is td
    assert transition.added == () and transition.removed == ()


def test_the_other_fields_of_the_description_are_kept() -> None:
    settings = TopologySettings(seeds=(A,), srv=True)
    td = TopologyDescription(
        TopologyType.UNKNOWN, {A: ServerDescription(A)}, settings, set_name="rs"
    )
    new = apply_srv_hosts(td, [A, B]).description
    assert new.set_name == "rs" and new.type is TopologyType.UNKNOWN and new.settings is settings
