"""mongocore.sim: a simulated MongoDB 7.0 deployment on loopback, for tests.

Standalone, replica set (with elections, step-downs, kills, partitions, lag and
reconfigs), sharded cluster (mongos in front of a replica-set shard) and
load-balanced mongos. Every process listens on its own 127.0.0.1 port and speaks
the real wire protocol, so any driver can connect to ``deployment.uri``; each can
require TLS and authentication and speak compressed (``tls=``, ``users=``,
``compressors=``). Documents
live in the simulator's own engine (mongocore.sim.engine). See docs/simulator.md.
"""

from __future__ import annotations

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import BUILD_VERSION, MAX_WIRE_VERSION
from mongocore.sim.failpoints import FailPoint, FailPoints
from mongocore.sim.member import (
    ARBITER,
    DOWN,
    PRIMARY,
    REMOVED,
    SECONDARY,
    STARTUP,
    Member,
    MemberConfig,
    Process,
)
from mongocore.sim.replset import ReplicaSet, election_id
from mongocore.sim.security import Security, User, rfc2253_subject, server_tls_context
from mongocore.sim.server import Connection, WireServer
from mongocore.sim.sessions import SessionRecords
from mongocore.sim.sharded import LoadBalanced, Mongos, ShardedCluster
from mongocore.sim.standalone import Standalone

__all__ = [
    "ARBITER",
    "BUILD_VERSION",
    "DOWN",
    "MAX_WIRE_VERSION",
    "PRIMARY",
    "REMOVED",
    "SECONDARY",
    "STARTUP",
    "CommandError",
    "Connection",
    "FailPoint",
    "FailPoints",
    "LoadBalanced",
    "Member",
    "MemberConfig",
    "Mongos",
    "Process",
    "ReplicaSet",
    "Security",
    "SessionRecords",
    "ShardedCluster",
    "Standalone",
    "User",
    "WireServer",
    "election_id",
    "rfc2253_subject",
    "server_tls_context",
]
