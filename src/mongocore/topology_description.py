"""Topology descriptions, under pymongo's module name (``pymongo.topology_description``).

``TopologyDescription`` lives in :mod:`mongocore.core.description.topology`.
``TOPOLOGY_TYPE`` (like :data:`mongocore.server_description.SERVER_TYPE`) holds
mongocore's :class:`TopologyType` members under pymongo's names.
:func:`updated_topology_description` is pymongo's pure function over the SDAM state
machine of :mod:`mongocore.core.description.topology_updates`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply
from mongocore.core.description.types import TopologyType
from mongocore.server_description import SERVER_TYPE

if TYPE_CHECKING:
    from mongocore.io.srv_polling import SRV_POLLING_TOPOLOGY_TYPES as SRV_POLLING_TOPOLOGIES

__all__ = [
    "SERVER_TYPE",
    "SRV_POLLING_TOPOLOGIES",
    "TOPOLOGY_TYPE",
    "TopologyDescription",
    "updated_topology_description",
]


class _TopologyTypes(NamedTuple):
    Single: TopologyType
    ReplicaSetNoPrimary: TopologyType
    ReplicaSetWithPrimary: TopologyType
    Sharded: TopologyType
    Unknown: TopologyType
    LoadBalanced: TopologyType


#: The topology types by the SDAM specification's names, as pymongo's ``TOPOLOGY_TYPE``.
TOPOLOGY_TYPE = _TopologyTypes(
    TopologyType.SINGLE,
    TopologyType.REPLICA_SET_NO_PRIMARY,
    TopologyType.REPLICA_SET_WITH_PRIMARY,
    TopologyType.SHARDED,
    TopologyType.UNKNOWN,
    TopologyType.LOAD_BALANCED,
)


def updated_topology_description(
    topology_description: TopologyDescription, server_description: ServerDescription
) -> TopologyDescription:
    """The TopologyDescription that follows from applying a server's new description
    (SDAM's state machine; the description given is not changed)."""
    return apply(topology_description, server_description).description


def __getattr__(name: str) -> Any:
    # The home of the SRV polling topology types is the SRV poller (I/O shell), which
    # loads only when this name is asked for.
    if name == "SRV_POLLING_TOPOLOGIES":
        from mongocore.io.srv_polling import SRV_POLLING_TOPOLOGY_TYPES  # noqa: PLC0415

        return SRV_POLLING_TOPOLOGY_TYPES
    raise AttributeError(f"module 'mongocore.topology_description' has no attribute {name!r}")
