"""What a client knows about the deployment, as pymongo's MongoClient shows it:
``address``, ``primary``, ``secondaries``, ``arbiters``, ``nodes``, ``is_primary``,
and ``is_mongos``.

``primary``, ``secondaries``, ``arbiters`` and ``nodes`` read the current topology
description (SDAM) and never wait. ``address``, ``is_primary`` and ``is_mongos`` are
about the server a write would use now, so they run server selection for a writable
server (server selection, "Writable server"): they wait for one, up to
serverSelectionTimeoutMS, and raise ServerSelectionTimeoutError if none comes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.errors import InvalidOperation

if TYPE_CHECKING:
    from mongocore.io.topology import Topology

__all__ = ["DeploymentInfo"]

_REPLICA_SET_TYPES = (TopologyType.REPLICA_SET_WITH_PRIMARY, TopologyType.REPLICA_SET_NO_PRIMARY)
_WRITABLE_TYPES = (
    ServerType.RS_PRIMARY,
    ServerType.STANDALONE,
    ServerType.MONGOS,
    ServerType.LOAD_BALANCER,
)


def _members(description: TopologyDescription, server_type: ServerType) -> set[Address]:
    if description.type not in _REPLICA_SET_TYPES:
        return set()
    return {sd.address for sd in description.servers.values() if sd.type is server_type}


class DeploymentInfo:
    """The Client's views of the deployment (a mixin: the Client provides
    ``_topology`` and ``_check_open``)."""

    _topology: Topology

    def _check_open(self) -> None:
        raise NotImplementedError

    def _writable_server(self, operation: str) -> ServerDescription:
        self._check_open()
        return self._topology.select_server(None, operation=operation)[1]

    @property
    def address(self) -> Optional[Address]:
        """(host, port) of the standalone, primary or mongos a write would use now.

        Waits for such a server (ServerSelectionTimeoutError if none comes); raises
        InvalidOperation when the client knows several mongoses: there is no single
        address then (see :attr:`nodes`).
        """
        self._check_open()
        description = self._topology.description
        if description.type is TopologyType.SHARDED and len(description.servers) > 1:
            raise InvalidOperation(
                'Cannot use "address" property when load balancing among mongoses,'
                ' use "nodes" instead.'
            )
        return self._writable_server("address").address

    @property
    def primary(self) -> Optional[Address]:
        """(host, port) of the replica set's primary, or None (no replica set, or no
        primary known now)."""
        description = self._topology.description
        if description.type is not TopologyType.REPLICA_SET_WITH_PRIMARY:
            return None
        primary = description.primary
        return None if primary is None else primary.address

    @property
    def secondaries(self) -> set[Address]:
        """The replica set's secondaries known now (empty without a replica set)."""
        return _members(self._topology.description, ServerType.RS_SECONDARY)

    @property
    def arbiters(self) -> set[Address]:
        """The replica set's arbiters known now (empty without a replica set)."""
        return _members(self._topology.description, ServerType.RS_ARBITER)

    @property
    def nodes(self) -> frozenset[Address]:
        """Every server the client has reached (of a known type) now."""
        servers = self._topology.description.servers.values()
        return frozenset(sd.address for sd in servers if sd.type is not ServerType.UNKNOWN)

    @property
    def is_primary(self) -> bool:
        """Whether the server a write would use accepts writes (a standalone, a
        primary, a mongos); waits for one like :attr:`address`."""
        return self._writable_server("is_primary").type in _WRITABLE_TYPES

    @property
    def is_mongos(self) -> bool:
        """Whether the server a write would use is a mongos; waits like :attr:`address`."""
        return self._writable_server("is_mongos").type is ServerType.MONGOS
