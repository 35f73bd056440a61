"""The sharding metadata a simulated mongos shows: the ``config`` database, listShards and
balancerStatus.

The simulated cluster has one replica-set shard, no config servers and no chunk
migrations. ``enableSharding`` records a database and ``shardCollection`` a sharded
collection (in one chunk, on the one shard; its shard key's index created when the
collection is new or empty). Its ``config`` database says exactly that, in a 7.0
cluster's shapes: ``config.version`` (the cluster id), ``config.shards`` (the
one shard, ``name/host1,host2,...``), ``config.databases`` (each user database, its
primary the shard), ``config.collections`` and ``config.chunks`` (the one collection a
fresh cluster shards itself, ``config.system.sessions``, and the collections
``shardCollection`` sharded, each in a single chunk),
``config.mongos`` (the routers that are up, pinged now). Other ``config`` collections
(settings, locks, changelog, actionlog, tags, ...) are empty. This is what ``sh.status()``
reads; writes to ``config`` are not intercepted.
"""

from __future__ import annotations

import datetime
import time
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, cast

from bson import Binary, Int64, MaxKey, MinKey, ObjectId, Timestamp

from mongocore.sim.change_log import collection_uuid
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
    "cmd_enable_sharding",
    "cmd_list_shards",
    "cmd_shard_collection",
    "config_collection",
    "forget",
    "is_sharded",
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
    stored = set(cluster.shard.store.database_names())
    names = sorted((stored | _sharded(cluster).databases) - _SYSTEM_DATABASES)
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
    sharded = [dict(entry) for _, entry in sorted(_sharded(cluster).collections.items())]
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
        },
        *sharded,
    ]


def _chunk(entry: dict[str, Any], chunk_id: ObjectId, shard: str) -> dict[str, Any]:
    """The one chunk of a collection sharded on the one shard: MinKey to MaxKey."""
    created = entry["timestamp"]
    return {
        "_id": chunk_id,
        "uuid": entry["uuid"],
        "min": {field_name: MinKey() for field_name in entry["key"]},
        "max": {field_name: MaxKey() for field_name in entry["key"]},
        "shard": shard,
        "lastmod": Timestamp(1, 0),
        "onCurrentShardSince": created,
        "history": [{"validAfter": created, "shard": shard}],
    }


def _chunks(cluster: ShardedCluster) -> list[dict[str, Any]]:
    identity = _identity(cluster)
    shard = cluster.shard.name
    state = _sharded(cluster)
    sharded = [
        _chunk(entry, state.chunk_ids[namespace], shard)
        for namespace, entry in sorted(state.collections.items())
    ]
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
        },
        *sharded,
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


# -- enableSharding and shardCollection ------------------------------------------------------


@dataclass
class _Sharded:
    """What a cluster's enableSharding and shardCollection recorded."""

    databases: set[str] = field(default_factory=set)
    #: config.collections entries of the sharded user collections, by namespace.
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The _id of each sharded collection's one chunk.
    chunk_ids: dict[str, ObjectId] = field(default_factory=dict)


_SHARDED: weakref.WeakKeyDictionary[Any, _Sharded] = weakref.WeakKeyDictionary()


def _sharded(cluster: ShardedCluster) -> _Sharded:
    return _SHARDED.setdefault(cluster, _Sharded())


def is_sharded(cluster: ShardedCluster, namespace: str) -> bool:
    return namespace in _sharded(cluster).collections


def forget(cluster: ShardedCluster, db: str, coll: Optional[str] = None) -> None:
    """A dropped collection (or database) is no longer sharded."""
    sharded = _sharded(cluster)
    for namespace in list(sharded.collections):
        owner, _, name = namespace.partition(".")
        if owner == db and coll in (None, name):
            del sharded.collections[namespace]
    if coll is None:
        sharded.databases.discard(db)


def _check_database_name(name: Any, field_name: str) -> str:
    if not isinstance(name, str):
        raise CommandError(
            14,
            f"BSON field '{field_name}' is the wrong type '{type(name).__name__}',"
            " expected type 'string'",
        )
    if not name or any(c in name for c in '/\\. "$') or len(name) >= 64:
        raise CommandError(73, f"invalid db name specified: {name}")
    return name


def cmd_enable_sharding(ctx: CommandContext) -> Reply:
    """enableSharding: since 6.0 every database is shardable; the database is created
    with the shard as its primary (config.databases lists it from then on)."""
    process = _router(ctx)
    if process is None:
        raise CommandError(59, "no such command: 'enableSharding'")
    cluster = cluster_of(process)
    name = _check_database_name(ctx.target, "enableSharding.enableSharding")
    if name in ("admin", "local"):
        raise CommandError(72, f"Enabling sharding on the {name} database is not allowed")
    primary = ctx.cmd.get("primaryShard")
    if primary is not None and primary != cluster.shard.name:
        raise CommandError(70, f"Shard {primary} not found")
    if name != "config":
        _sharded(cluster).databases.add(name)
    return {"ok": 1.0}


def _shard_key(key: Any) -> dict[str, Any]:
    if not isinstance(key, Mapping):
        raise CommandError(
            40414, "BSON field 'shardCollection.key' is missing but a required field"
        )
    pattern = dict(key)
    hashed = [field_name for field_name, value in pattern.items() if value == "hashed"]
    ascending = all(
        (value == 1 and not isinstance(value, bool)) or value == "hashed"
        for value in pattern.values()
    )
    if not pattern or not ascending or len(hashed) > 1:
        raise CommandError(
            2,
            f"Unsupported shard key pattern {pattern}. Pattern must either be a single hashed"
            " field, or a list of ascending fields",
        )
    return pattern


def _index_name(pattern: Mapping[str, Any]) -> str:
    return "_".join(f"{field_name}_{value}" for field_name, value in pattern.items())


def cmd_shard_collection(ctx: CommandContext) -> Reply:
    """shardCollection: the collection (created, with its shard key's index, if it does
    not exist or is empty) is sharded on ``key``, in one chunk on the one shard."""
    process = _router(ctx)
    if process is None:
        raise CommandError(59, "no such command: 'shardCollection'")
    cluster = cluster_of(process)
    namespace = ctx.target
    if not isinstance(namespace, str):
        raise CommandError(
            14,
            "BSON field 'shardCollection.shardCollection' is the wrong type,"
            " expected type 'string'",
        )
    db, dot, coll = namespace.partition(".")
    _check_database_name(db, "shardCollection.shardCollection")
    if not dot or not coll:
        raise CommandError(73, f"Invalid namespace specified '{namespace}'")
    if db in ("admin", "local", "config") or coll.startswith("system."):
        raise CommandError(20, f"can't shard {namespace}")
    pattern = _shard_key(ctx.cmd.get("key"))
    unique = bool(ctx.cmd.get("unique", False))
    if unique and "hashed" in pattern.values():
        raise CommandError(2, "Hashed shard keys cannot be declared unique.")
    sharded = _sharded(cluster)
    existing = sharded.collections.get(namespace)
    if existing is not None:
        if existing["key"] != pattern or existing["unique"] != unique:
            raise CommandError(
                23,
                f"sharding already enabled for collection {namespace} with options"
                f" {{ key: {existing['key']}, unique: {existing['unique']} }}",
            )
        return {"collectionsharded": namespace, "ok": 1.0}
    store = ctx.store
    if "viewOn" in store.options(db, coll).extra:
        raise CommandError(166, "Namespace " + namespace + " is a view, not a collection")
    exists = store.collection_exists(db, coll)
    indexes = store.indexes(db, coll)
    key_items = list(pattern.items())
    has_index = any(list(info["key"].items())[: len(key_items)] == key_items for info in indexes)
    if not has_index:
        if exists and store.latest.count(db, coll):
            raise CommandError(
                72,
                "Please create an index that starts with the proposed shard key before"
                " sharding the collection",
            )
        spec: dict[str, Any] = {"key": pattern, "name": _index_name(pattern)}
        if unique:
            spec["unique"] = True
        store.create_indexes(db, coll, [spec])
    now = time.time()
    sharded.databases.add(db)
    sharded.chunk_ids[namespace] = ObjectId()
    sharded.collections[namespace] = {
        "_id": namespace,
        "lastmodEpoch": ObjectId(),
        "lastmod": datetime.datetime.fromtimestamp(int(now), datetime.timezone.utc),
        "timestamp": Timestamp(int(now), 1),
        "uuid": collection_uuid(db, coll),
        "key": pattern,
        "unique": unique,
        "noBalance": False,
    }
    return {"collectionsharded": namespace, "ok": 1.0}
