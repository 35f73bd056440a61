"""The sharding metadata a simulated mongos shows: the ``config`` database, listShards and
balancerStatus.

The simulated cluster has one replica-set shard, no config servers and no chunk
migrations, and shards no user collection. Its ``config`` database says exactly that,
in a 7.0 cluster's shapes: ``config.version`` (the cluster id), ``config.shards`` (the
one shard, ``name/host1,host2,...``), ``config.databases`` (each user database, its
primary the shard), ``config.collections`` and ``config.chunks`` (the one collection a
fresh cluster shards itself, ``config.system.sessions``, in a single chunk),
``config.mongos`` (the routers that are up, pinged now). Other ``config`` collections
(settings, locks, changelog, actionlog, tags, ...) are empty. This is what ``sh.status()``
reads; writes to ``config`` are not intercepted.
"""

from __future__ import annotations

import datetime
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, cast

from bson import Binary, Int64, MaxKey, MinKey, ObjectId, Timestamp

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import BUILD_VERSION, CommandContext, Reply
from mongocore.sim.scratch import SystemCollection

if TYPE_CHECKING:
    from mongocore.sim.member import Process
    from mongocore.sim.sharded import ShardedCluster

__all__ = [
    "CONFIG_COLLECTIONS",
    "cmd_balancer_status",
    "cmd_check_metadata_consistency",
    "cmd_list_shards",
    "config_collection",
    "shard_documents",
]

#: The config collections that have documents (listCollections shows these).
CONFIG_COLLECTIONS = ("chunks", "collections", "databases", "mongos", "shards", "version")
SESSIONS_NAMESPACE = "config.system.sessions"
_SYSTEM_DATABASES = frozenset({"admin", "config", "local"})


@dataclass(frozen=True)
class _Identity:
    """What a real cluster generates once and keeps: its id, epochs and creation time."""

    cluster_id: ObjectId
    sessions_uuid: Binary
    sessions_epoch: ObjectId
    created: Timestamp
    created_at: datetime.datetime


_IDENTITIES: weakref.WeakKeyDictionary[Any, _Identity] = weakref.WeakKeyDictionary()


def _identity(cluster: ShardedCluster) -> _Identity:
    identity = _IDENTITIES.get(cluster)
    if identity is None:
        now = time.time()
        identity = _Identity(
            ObjectId(),
            Binary(uuid.uuid4().bytes, 4),
            ObjectId(),
            Timestamp(int(now), 1),
            datetime.datetime.fromtimestamp(int(now), datetime.timezone.utc),
        )
        _IDENTITIES[cluster] = identity
    return identity


def cluster_of(process: Process) -> ShardedCluster:
    return cast("ShardedCluster", process.deployment)


def shard_documents(cluster: ShardedCluster) -> list[dict[str, Any]]:
    shard = cluster.shard
    hosts = ",".join(m.host for m in shard.members if not m.arbiter and not m.hidden)
    return [
        {
            "_id": shard.name,
            "host": f"{shard.name}/{hosts}",
            "state": 1,
            "topologyTime": _identity(cluster).created,
        }
    ]


def _databases(cluster: ShardedCluster) -> list[dict[str, Any]]:
    identity = _identity(cluster)
    names = sorted(set(cluster.shard.store.client.list_database_names()) - _SYSTEM_DATABASES)
    return [
        {
            "_id": name,
            "primary": cluster.shard.name,
            "version": {
                "uuid": Binary(uuid.uuid5(uuid.NAMESPACE_URL, f"db:{name}").bytes, 4),
                "timestamp": identity.created,
                "lastMod": 1,
            },
        }
        for name in names
    ]


def _collections(cluster: ShardedCluster) -> list[dict[str, Any]]:
    identity = _identity(cluster)
    return [
        {
            "_id": SESSIONS_NAMESPACE,
            "lastmodEpoch": identity.sessions_epoch,
            "lastmod": identity.created_at,
            "timestamp": identity.created,
            "uuid": identity.sessions_uuid,
            "key": {"_id": 1},
            "unique": False,
            "noBalance": False,
            "maxChunkSizeBytes": Int64(200_000),
            "noAutoSplit": True,
        }
    ]


def _chunks(cluster: ShardedCluster) -> list[dict[str, Any]]:
    identity = _identity(cluster)
    shard = cluster.shard.name
    return [
        {
            "_id": ObjectId.from_datetime(identity.created_at),
            "uuid": identity.sessions_uuid,
            "min": {"_id": MinKey()},
            "max": {"_id": MaxKey()},
            "shard": shard,
            "lastmod": Timestamp(1, 0),
            "onCurrentShardSince": identity.created,
            "history": [{"validAfter": identity.created, "shard": shard}],
        }
    ]


def _mongoses(cluster: ShardedCluster) -> list[dict[str, Any]]:
    now = datetime.datetime.now(datetime.timezone.utc)
    docs = []
    for mongos in cluster.mongoses:
        if not mongos.alive:
            continue
        up = max(0.0, time.monotonic() - mongos.started_at)
        docs.append(
            {
                "_id": mongos.host,
                "advisoryHostFQDNs": [],
                "created": now - datetime.timedelta(seconds=up),
                "mongoVersion": BUILD_VERSION,
                "ping": now,
                "up": Int64(int(up)),
                "waiting": True,
            }
        )
    return docs


def _version(cluster: ShardedCluster) -> list[dict[str, Any]]:
    return [{"_id": 1, "clusterId": _identity(cluster).cluster_id}]


def config_collection(process: Process, coll: str) -> SystemCollection:
    """``config.<coll>`` as the mongos ``process`` shows it (empty if it keeps nothing)."""
    cluster = cluster_of(process)
    builders: dict[str, Callable[[ShardedCluster], list[dict[str, Any]]]] = {
        "chunks": _chunks,
        "collections": _collections,
        "databases": _databases,
        "mongos": _mongoses,
        "shards": shard_documents,
        "version": _version,
    }
    builder = builders.get(coll)
    return SystemCollection(builder(cluster) if builder is not None else [])


def _router(ctx: CommandContext) -> Optional[Process]:
    process = ctx.process
    return process if process is not None and process.kind == "mongos" else None


def cmd_list_shards(ctx: CommandContext) -> Reply:
    process = _router(ctx)
    if process is None:
        raise CommandError(59, "no such command: 'listShards'")
    return {"shards": shard_documents(cluster_of(process)), "ok": 1.0}


def cmd_balancer_status(ctx: CommandContext) -> Reply:
    # The simulated cluster never migrates chunks: the balancer is on and idle.
    return {
        "mode": "full",
        "inBalancerRound": False,
        "numBalancerRounds": Int64(0),
        "term": Int64(1),
        "ok": 1.0,
    }


def cmd_check_metadata_consistency(ctx: CommandContext) -> Reply:
    """checkMetadataConsistency (a router's command, 7.0): the simulator keeps no
    sharding metadata that could disagree, so there is never an inconsistency to report:
    an empty, exhausted cursor."""
    cursor = {"id": Int64(0), "ns": f"{ctx.db}.$cmd.{ctx.name}", "firstBatch": []}
    return {"cursor": cursor, "ok": 1.0}
