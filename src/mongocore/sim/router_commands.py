"""What a simulated mongos answers itself, and how it reshapes what its shard answered.

A router answers the commands whose registry entry says ``on_mongos=LOCAL``
(command_table.py): its own diagnostics (serverStatus, getLog, getCmdLineOpts,
listCommands, currentOp and killOp of its own operations), the cluster's users
(createUser and the rest, kept by the routers: a real cluster keeps them on its config
servers), listShards, balancerStatus, the sessions' commands; and reads of the
``config`` database (sharding_catalog.py) and getMore or killCursors of its own
cursors. Everything else is routed to the shard (sharded.py); a routed reply is then
given a router's shape where it has one: explain (a ``SINGLE_SHARD``
plan holding the shard's), ``$collStats`` (each document names its ``shard``),
dbStats (the shard's reply under ``raw``) and collStats (``sharded: false`` and the
shard's statistics under ``shards``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from bson import Int64

from mongocore.sim import sharding_catalog
from mongocore.sim.codes import CommandError
from mongocore.sim.commands import BUILD_VERSION, CommandContext
from mongocore.sim.registry import DATA, LOCAL, MONGOS, Command
from mongocore.sim.scratch import first_stage

if TYPE_CHECKING:
    from mongocore.sim.sharded import Mongos

__all__ = ["routed_reply", "router_reply"]

_CONFIG_READS = frozenset(
    {"find", "aggregate", "count", "distinct", "listCollections", "listIndexes"}
)
_CLUSTER_FIELDS = ("$clusterTime", "operationTime")


def _local_cursor(mongos: Mongos, name: str, cmd: Mapping[str, Any]) -> bool:
    if name == "getMore":
        cursor_id = cmd.get("getMore")
        return isinstance(cursor_id, int) and mongos.cursors.has(cursor_id)
    if name == "killCursors":
        ids = cmd.get("cursors")
        return isinstance(ids, list) and any(
            isinstance(i, int) and mongos.cursors.has(i) for i in ids
        )
    return False


def router_reply(
    mongos: Mongos, command: Optional[Command], name: str, db: str, cmd: dict[str, Any]
) -> Optional[dict[str, Any]]:
    """The reply of a command the router answers itself (a ``LOCAL`` entry, a read of
    ``config``, a cursor of its own); None to route it."""
    if command is None or command.stage != DATA or not command.runs_on(MONGOS):
        return None
    local = command.on_mongos == LOCAL or (
        (db == "config" and name in _CONFIG_READS) or _local_cursor(mongos, name, cmd)
    )
    if not local:
        return None
    if command.admin_only and db != "admin":
        raise CommandError(13, f"{name} may only be run against the admin database.")
    shard = mongos.cluster.shard
    with shard.cond:
        ctx = CommandContext(
            name=name,
            db=db,
            cmd=cmd,
            store=shard.store,
            reader=shard.store.latest,
            cursors=mongos.cursors,
            process=mongos,
        )
        return command.handler_on(MONGOS)(ctx)


def _without_cluster_fields(reply: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in reply.items() if k not in _CLUSTER_FIELDS}


def _shard_entry(mongos: Mongos) -> tuple[str, str]:
    shard = sharding_catalog.shard_documents(mongos.cluster)[0]
    return str(shard["_id"]), str(shard["host"])


def _explained(mongos: Mongos, cmd: Mapping[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    shard_name, connection = _shard_entry(mongos)
    result: dict[str, Any] = {}
    if "stages" in reply:
        result.update(
            mergeType="mongos",
            splitPipeline=None,
            shards={shard_name: {"host": reply["serverInfo"]["host"], "stages": reply["stages"]}},
        )
    if "queryPlanner" in reply:
        planner: dict[str, Any] = {"shardName": shard_name, "connectionString": connection}
        planner["serverInfo"] = reply.get("serverInfo")
        planner.update(reply["queryPlanner"])
        result["queryPlanner"] = {
            "mongosPlannerVersion": 1,
            "winningPlan": {"stage": "SINGLE_SHARD", "shards": [planner]},
        }
    stats = reply.get("executionStats")
    if isinstance(stats, Mapping):
        totals = {
            key: stats.get(key, 0)
            for key in (
                "nReturned",
                "executionTimeMillis",
                "totalKeysExamined",
                "totalDocsExamined",
            )
        }
        shard_stats = {"shardName": shard_name, **stats}
        shard_stats.pop("allPlansExecution", None)
        result["executionStats"] = {
            **totals,
            "executionStages": {
                "stage": "SINGLE_SHARD",
                **totals,
                "totalChildMillis": Int64(0),
                "shards": [shard_stats],
            },
        }
        if "allPlansExecution" in stats:
            result["executionStats"]["allPlansExecution"] = [
                {"shardName": shard_name, "allPlans": stats["allPlansExecution"]}
            ]
    result.update(
        serverInfo=_router_server_info(mongos),
        serverParameters=reply.get("serverParameters", {}),
        command=reply.get("command", cmd.get("explain")),
        ok=1.0,
    )
    return result


def _router_server_info(mongos: Mongos) -> dict[str, Any]:
    host, _, port = mongos.host.rpartition(":")
    return {"host": host, "port": int(port), "version": BUILD_VERSION, "gitVersion": "0" * 40}


def _db_stats(mongos: Mongos, reply: dict[str, Any]) -> dict[str, Any]:
    _, connection = _shard_entry(mongos)
    shard = _without_cluster_fields(reply)
    result: dict[str, Any] = {"raw": {connection: shard}}
    for key in (
        "db",
        "collections",
        "views",
        "objects",
        "avgObjSize",
        "dataSize",
        "storageSize",
        "totalSize",
        "indexes",
        "indexSize",
        "scaleFactor",
    ):
        if key in shard:
            result[key] = shard[key]
    result["ok"] = 1.0
    return result


def _coll_stats(mongos: Mongos, reply: dict[str, Any]) -> dict[str, Any]:
    shard_name, _ = _shard_entry(mongos)
    shard = _without_cluster_fields(reply)
    shard.pop("ok", None)
    sharded = sharding_catalog.is_sharded(mongos.cluster, str(shard.get("ns", "")))
    result: dict[str, Any] = {"sharded": sharded, "primary": shard_name}
    for key in ("capped", "ns", "count", "size", "storageSize", "totalIndexSize", "totalSize"):
        if key in shard:
            result[key] = shard[key]
    result.update(
        indexSizes=shard.get("indexSizes", {}),
        avgObjSize=shard.get("avgObjSize", 0),
        nindexes=shard.get("nindexes", 0),
        nchunks=1,
        shards={shard_name: shard},
        ok=1.0,
    )
    return result


def routed_reply(
    mongos: Mongos, name: str, cmd: Mapping[str, Any], reply: dict[str, Any]
) -> dict[str, Any]:
    """A shard's reply as a router gives it."""
    if not reply.get("ok"):
        return reply
    if name in ("drop", "dropDatabase"):
        # A dropped collection or database is no longer sharded.
        db = str(cmd.get("$db", ""))
        target = cmd.get(name)
        coll = target if name == "drop" and isinstance(target, str) else None
        sharding_catalog.forget(mongos.cluster, db, coll)
    if name == "explain":
        reshaped = _explained(mongos, cmd, reply)
    elif name == "aggregate" and first_stage(cmd) == "$collStats":
        shard_name, _ = _shard_entry(mongos)
        for doc in reply.get("cursor", {}).get("firstBatch", []):
            doc["shard"] = shard_name
        return reply
    elif name.lower() == "dbstats":
        reshaped = _db_stats(mongos, reply)
    elif name == "collStats":
        reshaped = _coll_stats(mongos, reply)
    else:
        return reply
    for key in _CLUSTER_FIELDS:
        if key in reply:
            reshaped[key] = reply[key]
    return reshaped
