"""SDAM enums: TopologyType and ServerType, valued by the spec's own names."""

from __future__ import annotations

from enum import Enum


class TopologyType(str, Enum):
    SINGLE = "Single"
    REPLICA_SET_NO_PRIMARY = "ReplicaSetNoPrimary"
    REPLICA_SET_WITH_PRIMARY = "ReplicaSetWithPrimary"
    SHARDED = "Sharded"
    LOAD_BALANCED = "LoadBalanced"
    UNKNOWN = "Unknown"

    def __str__(self) -> str:
        return self.value


class ServerType(str, Enum):
    STANDALONE = "Standalone"
    MONGOS = "Mongos"
    POSSIBLE_PRIMARY = "PossiblePrimary"
    RS_PRIMARY = "RSPrimary"
    RS_SECONDARY = "RSSecondary"
    RS_ARBITER = "RSArbiter"
    RS_OTHER = "RSOther"
    RS_GHOST = "RSGhost"
    LOAD_BALANCER = "LoadBalancer"
    UNKNOWN = "Unknown"

    def __str__(self) -> str:
        return self.value


#: "Data-Bearing Server Type": servers a client can receive application data from.
DATA_BEARING: frozenset[ServerType] = frozenset(
    {
        ServerType.MONGOS,
        ServerType.RS_PRIMARY,
        ServerType.RS_SECONDARY,
        ServerType.STANDALONE,
        ServerType.LOAD_BALANCER,
    }
)

#: Types whose descriptions carry no wire versions: nothing has checked them yet
#: (Unknown, and PossiblePrimary, named by another member's hello), or nothing
#: monitors them (a load balancer's versions come from each connection's handshake).
NO_WIRE_VERSIONS: frozenset[ServerType] = frozenset(
    {ServerType.UNKNOWN, ServerType.POSSIBLE_PRIMARY, ServerType.LOAD_BALANCER}
)

#: Replica-set member types whose hello carries a hosts list and a setName.
RS_MEMBER: frozenset[ServerType] = frozenset(
    {ServerType.RS_PRIMARY, ServerType.RS_SECONDARY, ServerType.RS_ARBITER, ServerType.RS_OTHER}
)
