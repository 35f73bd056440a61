"""Storage statistics of a simulated mongod: dbStats, collStats and the ``$collStats`` stage.

The simulated storage engine keeps documents in memory, uncompressed: a collection's
``size`` and ``storageSize`` are the BSON size of its documents, and an index's size is
estimated as the BSON size of each entry's key plus an 8-byte record id. Counts are
exact. ``$collStats`` answers ``count`` and ``storageStats`` (and an empty spec);
``latencyStats`` and ``queryExecStats`` are refused (NotImplemented, 238): the
simulator does not measure operation latencies. The oplog (``local.oplog.rs``) reports
itself capped, with the configured size of OPLOG_MAX_SIZE bytes.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Optional

import bson

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.scratch import open_cursor, run_pipeline
from mongocore.sim.system_collections import (
    system_collection,
    system_collection_names,
)

__all__ = ["cmd_coll_stats", "cmd_db_stats", "coll_stats_stage", "collection_stats"]

_RECORD_ID_BYTES = 8
_COLL_STATS_OPTIONS = ("latencyStats", "storageStats", "count", "queryExecStats")


def _bson_size(doc: Mapping[str, Any]) -> int:
    return len(bson.encode(doc))


def _key_value(doc: Mapping[str, Any], path: str) -> Any:
    value: Any = doc
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _index_size(docs: list[Any], key: list[tuple[str, Any]]) -> int:
    return sum(
        _bson_size({str(n): _key_value(doc, name) for n, (name, _) in enumerate(key)})
        + _RECORD_ID_BYTES
        for doc in docs
    )


def _scale(cmd: Mapping[str, Any], command: str, value: Any = None) -> int:
    scale = cmd.get("scale", 1) if value is None else value
    if scale is None:
        return 1
    if not isinstance(scale, (int, float)) or isinstance(scale, bool):
        raise CommandError(
            14,
            f"BSON field '{command}.scale' is the wrong type '{type(scale).__name__}',"
            " expected types '[long, int, decimal, double']",
        )
    if scale < 1:
        if command == "dbStats":
            raise CommandError(2, "Scale factor must be greater than zero")
        raise CommandError(51024, f"BSON field 'scale' value must be >= 1, actual value '{scale}'")
    return int(scale)


def collection_stats(ctx: CommandContext, db: str, coll: str, scale: int) -> Optional[Reply]:
    """storageStats of ``db.coll`` (None if it does not exist)."""
    system = system_collection(ctx, db, coll)
    capped: dict[str, Any] = {}
    if system is not None:
        docs = system.docs
        indexes: dict[str, Any] = {"_id_": {"key": [("_id", 1)]}} if system.has_ids else {}
        if system.options.get("capped"):
            capped = {"max": system.options.get("max", 0), "maxSize": system.options["size"]}
    else:
        if not ctx.reader.exists(db, coll):
            return None
        docs = ctx.reader.documents(db, coll)
        indexes = {
            str(spec["name"]): {"key": list(spec["key"].items())}
            for spec in ctx.reader.index_documents(db, coll)
        }
    size = sum(_bson_size(doc) for doc in docs)
    index_sizes = {
        name: _index_size(docs, [(str(k), v) for k, v in info["key"]])
        for name, info in indexes.items()
    }
    total_index = sum(index_sizes.values())
    stats: Reply = {
        "size": size // scale,
        "count": len(docs),
        "avgObjSize": size // len(docs) if docs else 0,
        "numOrphanDocs": 0,
        "storageSize": size // scale,
        "freeStorageSize": 0,
        "capped": bool(capped),
    }
    if capped:
        stats["max"] = capped["max"]
        stats["maxSize"] = capped["maxSize"] // scale
    stats.update(
        {
            "nindexes": len(indexes),
            "indexDetails": {name: {} for name in indexes},
            "indexBuilds": [],
            "totalIndexSize": total_index // scale,
            "totalSize": (size + total_index) // scale,
            "indexSizes": {name: value // scale for name, value in index_sizes.items()},
            "scaleFactor": scale,
        }
    )
    return stats


def cmd_coll_stats(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    scale = _scale(ctx.cmd, "collStats")
    stats = collection_stats(ctx, ctx.db, coll, scale)
    if stats is None:
        # Since 6.2 a collection that does not exist has empty statistics.
        stats = {
            "size": 0,
            "count": 0,
            "numOrphanDocs": 0,
            "storageSize": 0,
            "totalSize": 0,
            "nindexes": 0,
            "totalIndexSize": 0,
            "indexDetails": {},
            "indexSizes": {},
            "scaleFactor": scale,
        }
    return {"ns": ctx.namespace(coll), **stats, "ok": 1.0}


def cmd_db_stats(ctx: CommandContext) -> Reply:
    scale = _scale(ctx.cmd, "dbStats")
    names = set(ctx.reader.collection_names(ctx.db))
    names.update(system_collection_names(ctx, ctx.db))
    objects = data = indexes = index_size = 0
    for name in sorted(names):
        stats = collection_stats(ctx, ctx.db, name, 1)
        if stats is None:
            continue
        objects += stats["count"]
        data += stats["size"]
        indexes += stats["nindexes"]
        index_size += stats["totalIndexSize"]
    reply: Reply = {
        "db": ctx.db,
        "collections": bson.Int64(len(names)),
        "views": bson.Int64(0),
        "objects": bson.Int64(objects),
        "avgObjSize": float(data / objects) if objects else 0.0,
        "dataSize": float(data // scale),
        "storageSize": float(data // scale),
        "indexes": bson.Int64(indexes),
        "indexSize": float(index_size // scale),
        "totalSize": float((data + index_size) // scale),
        "scaleFactor": bson.Int64(scale),
    }
    if ctx.cmd.get("freeStorage"):
        reply.update(freeStorageSize=0.0, indexFreeStorageSize=0.0, totalFreeStorageSize=0.0)
    reply["ok"] = 1.0
    return reply


def coll_stats_stage(ctx: CommandContext) -> Reply:
    """An aggregate whose pipeline starts with ``$collStats``."""
    coll = ctx.collection_name()
    pipeline = ctx.cmd["pipeline"]
    spec = pipeline[0]["$collStats"]
    if not isinstance(spec, Mapping):
        raise CommandError(
            5447000, f"$collStats must take a nested object but found: $collStats: {spec!r}"
        )
    for key in spec:
        if key not in _COLL_STATS_OPTIONS:
            raise CommandError(40415, f"BSON field '$collStats.{key}' is an unknown field.")
        if key in ("latencyStats", "queryExecStats"):
            raise CommandError(238, f"$collStats {key} is not supported by the simulator")
    for stage in pipeline[1:]:
        if isinstance(stage, Mapping) and "$collStats" in stage:
            raise CommandError(40602, "$collStats is only valid as the first stage in a pipeline")
    namespace = ctx.namespace(coll)
    host = ctx.process.host if ctx.process is not None else ""
    doc: Reply = {
        "ns": namespace,
        "host": host,
        "localTime": datetime.datetime.now(datetime.timezone.utc),
    }
    if "storageStats" in spec or "count" in spec:
        options = spec.get("storageStats")
        scale = (
            _scale(options or {}, "$collStats.storageStats") if isinstance(options, Mapping) else 1
        )
        stats = collection_stats(ctx, ctx.db, coll, scale)
        if stats is None:
            what = "storageStats" if "storageStats" in spec else "count"
            raise CommandError(
                26,
                "PlanExecutor error during aggregation :: caused by :: Unable to retrieve"
                f" {what} in $collStats stage :: caused by :: Collection [{namespace}] not found.",
            )
        if "storageStats" in spec:
            doc["storageStats"] = stats
        if "count" in spec:
            doc["count"] = stats["count"]
    docs = run_pipeline([doc], pipeline[1:], namespace)
    return open_cursor(ctx, namespace, docs)
