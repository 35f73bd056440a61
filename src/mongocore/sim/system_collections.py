"""Collections a server builds from its own state, readable like any other.

On a replica-set member: ``local.oplog.rs``, the set's oplog as this member has applied
it (entries shaped as a 7.0 server writes them: ``op``, ``ns``, ``ui``, ``o``, ``o2``,
``ts``, ``t``, ``v``, ``wall``; a capped collection without ``_id``), and
``local.system.replset``, the replica set config document. On any mongod: each
database's ``system.profile``, its profiler's (profiler.py). On a mongos: the ``config``
database (sharding_catalog.py). find, count, distinct, aggregate, listIndexes and
listCollections read them (``$natural`` order is the oplog's order); reads of ``local``
are allowed on a secondary without secondaryOk, as on a server. The oplog keeps the
newest entries (see ``OPLOG_HISTORY`` in store.py), each document write one entry: an
insert as ``i``, an update or replacement as ``u`` with the document's full post-image
(a server logs a ``$v: 2`` diff for an update), a deletion as ``d``, a catalog change as
``c``, a new primary's first entry as ``n``.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Optional, cast

from bson import Binary, Int64

from mongocore.sim.change_log import collection_uuid
from mongocore.sim.commands import CommandContext, Handler, Reply
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.profiler import PROFILE_COLLECTION, Profiler
from mongocore.sim.replset_commands import replica_set_config
from mongocore.sim.scratch import SystemCollection, batch_size, scratch_view
from mongocore.sim.sharding_catalog import CONFIG_COLLECTIONS, config_collection
from mongocore.sim.store import OPLOG_HISTORY, OplogEntry

if TYPE_CHECKING:
    from mongocore.sim.member import Member, Process
    from mongocore.sim.replset import ReplicaSet

__all__ = [
    "OPLOG_MAX_SIZE",
    "local_read_kind",
    "oplog_documents",
    "system_collection",
    "system_collection_names",
    "wrap_list_collections",
    "wrap_list_indexes",
    "wrap_read",
]

#: The oplog's configured size in bytes, as collStats reports it (it is capped by count,
#: OPLOG_HISTORY entries, in the simulator).
OPLOG_MAX_SIZE = 1024 * 1024 * 1024
_OPLOG_OPTIONS = {"capped": True, "size": OPLOG_MAX_SIZE, "max": OPLOG_HISTORY}
_ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}


def replica_set_of(process: Optional[Process]) -> Optional[ReplicaSet]:
    """The replica set of a member process, None for a standalone or a mongos."""
    if process is None or process.kind != "mongod":
        return None
    deployment = process.deployment
    if not getattr(deployment, "is_replica_set", False):
        return None
    return cast("ReplicaSet", deployment)


def local_read_kind(kind: str) -> Callable[[Mapping[str, Any]], str]:
    """Reads of ``local`` need no secondaryOk: a member answers them in any state."""

    def kind_for(cmd: Mapping[str, Any]) -> str:
        return "any" if cmd.get("$db") == "local" else kind

    return kind_for


# -- the oplog ---------------------------------------------------------------------------


def _rendered_command(entry: OplogEntry) -> dict[str, Any]:
    command = dict(entry.command or {})
    if "create" in command:
        return {"create": command["create"], "idIndex": dict(_ID_INDEX)}
    if "createIndexes" in command:
        indexes = [dict(index) for index in command.get("indexes", [])]
        if len(indexes) == 1:
            return {"createIndexes": command["createIndexes"], "v": 2, **indexes[0]}
        build = uuid.uuid5(uuid.NAMESPACE_URL, f"{entry.db}.{entry.coll}@{entry.optime.ts}")
        return {
            "commitIndexBuild": command["createIndexes"],
            "indexBuildUUID": Binary(build.bytes, 4),
            "indexes": [{"v": 2, **index} for index in indexes],
        }
    if "renameCollection" in command:
        return {**command, "stayTemp": False}
    return command


def _oplog_document(entry: OplogEntry) -> dict[str, Any]:
    doc: dict[str, Any] = {"op": entry.op}
    if entry.op == "n":
        doc.update(ns="", o=dict(entry.command or {}))
    elif entry.op == "c":
        doc["ns"] = f"{entry.db}.$cmd"
        if entry.coll and "dropDatabase" not in (entry.command or {}):
            doc["ui"] = collection_uuid(entry.db, entry.coll)
        doc["o"] = _rendered_command(entry)
    else:
        doc.update(ns=f"{entry.db}.{entry.coll}", ui=collection_uuid(entry.db, entry.coll))
        if entry.op == "d":
            doc["o"] = {"_id": entry.doc_id}
        else:
            doc["o"] = dict(entry.doc or {})
            if entry.op == "u":
                doc["o2"] = {"_id": entry.doc_id}
    doc.update(
        ts=entry.optime.ts,
        t=Int64(entry.optime.term),
        v=Int64(2),
        wall=datetime.datetime.fromtimestamp(entry.optime.wall, datetime.timezone.utc),
    )
    return doc


def oplog_documents(member: Member, replica_set: ReplicaSet) -> list[dict[str, Any]]:
    """``local.oplog.rs`` as ``member`` has it: the entries it has applied, oldest first."""
    if member.arbiter:
        return []  # an arbiter holds no data, so it applies no oplog
    applied = member.applied_optime().ts
    return [
        _oplog_document(entry) for entry in replica_set.store.history if entry.optime.ts <= applied
    ]


# -- which collections -------------------------------------------------------------------


def _replica_set_config(replica_set: ReplicaSet, member: Member) -> list[dict[str, Any]]:
    if not replica_set.initiated:
        return []  # no config document yet
    return [dict(replica_set_config(replica_set, member)["config"])]


def system_collection(ctx: CommandContext, db: str, coll: str) -> Optional[SystemCollection]:
    """The system collection ``db.coll`` of the process running ``ctx``, if it is one."""
    process = ctx.process
    if process is None:
        return None
    if process.kind == "mongos":
        return config_collection(process, coll) if db == "config" else None
    if coll == PROFILE_COLLECTION:
        return _profile_collection(process, db)
    replica_set = replica_set_of(process)
    if replica_set is None or db != "local":
        return None
    member = cast("Member", process)
    if coll == "oplog.rs" and replica_set.initiated:
        return SystemCollection(
            oplog_documents(member, replica_set), has_ids=False, options=dict(_OPLOG_OPTIONS)
        )
    if coll == "system.replset":
        return SystemCollection(_replica_set_config(replica_set, member))
    return None


def _profile_collection(process: Process, db: str) -> Optional[SystemCollection]:
    """``<db>.system.profile``, the mongod's profiler's (profiler.py), if it exists."""
    profiler = getattr(process, "profiler", None)
    docs = profiler.collection(db) if isinstance(profiler, Profiler) else None
    if profiler is None or docs is None:
        return None
    return SystemCollection(docs, has_ids=False, options=profiler.options)


def system_collection_names(ctx: CommandContext, db: str) -> list[str]:
    process = ctx.process
    if process is not None and process.kind == "mongos":
        return list(CONFIG_COLLECTIONS) if db == "config" else []
    names = []
    if process is not None and _profile_collection(process, db) is not None:
        names.append(PROFILE_COLLECTION)
    replica_set = replica_set_of(process)
    if replica_set is None or db != "local" or not replica_set.initiated:
        return names
    return [*names, "oplog.rs", "system.replset"]


# -- reading them ------------------------------------------------------------------------


def _hide_synthetic_ids(projection: Any) -> dict[str, Any]:
    spec = dict(projection) if isinstance(projection, Mapping) else {}
    spec.setdefault("_id", 0)
    return spec


def wrap_read(name: str, base: Handler) -> Handler:
    """``base`` (find, count, distinct or aggregate), also over system collections."""

    def handler(ctx: CommandContext) -> Reply:
        coll = ctx.cmd.get(name)
        system = system_collection(ctx, ctx.db, coll) if isinstance(coll, str) else None
        if system is None:
            return base(ctx)
        assert isinstance(coll, str)
        docs = system.docs
        cmd = dict(ctx.cmd)
        if not system.has_ids:
            # Scratch documents get an _id; a reader of the real collection sees none.
            docs = [{**doc, "_id": n} for n, doc in enumerate(docs)]
            if name == "find":
                cmd["projection"] = _hide_synthetic_ids(cmd.get("projection"))
            elif name == "aggregate" and isinstance(cmd.get("pipeline"), list):
                cmd["pipeline"] = [{"$project": {"_id": 0}}, *cmd["pipeline"]]
        reader = scratch_view(ctx.db, coll, docs)
        return base(dataclasses.replace(ctx, cmd=cmd, reader=reader))

    return handler


def wrap_list_indexes(base: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        coll = ctx.cmd.get("listIndexes")
        system = system_collection(ctx, ctx.db, coll) if isinstance(coll, str) else None
        if system is None:
            return base(ctx)
        indexes = [dict(_ID_INDEX)] if system.has_ids else []
        options = ctx.cmd.get("cursor") or {}
        batch = ctx.cursors.open(f"{ctx.db}.{coll}", indexes, batch_size(options.get("batchSize")))
        return {"cursor": batch, "ok": 1.0}

    return handler


def wrap_list_collections(base: Handler) -> Handler:
    """listCollections, with the system collections of the database listed too."""

    def handler(ctx: CommandContext) -> Reply:
        names = system_collection_names(ctx, ctx.db)
        if not names:
            return base(ctx)
        listed: dict[str, dict[str, Any]] = {
            name: _collection_entry(ctx.db, name, {}, id_index=True)
            for name in ctx.reader.collection_names(ctx.db)
        }
        for name in names:
            system = system_collection(ctx, ctx.db, name)
            if system is not None:
                listed[name] = _collection_entry(
                    ctx.db, name, system.options, id_index=system.has_ids
                )
        name_only = bool(ctx.cmd.get("nameOnly", False))
        flt = ctx.cmd.get("filter") or {}
        entries = []
        for name in sorted(listed):
            entry = listed[name]
            if name_only:
                entry = {"name": name, "type": "collection"}
            if compile_filter(flt).matches(entry):
                entries.append(entry)
        options = ctx.cmd.get("cursor") or {}
        batch = ctx.cursors.open(
            f"{ctx.db}.$cmd.listCollections", entries, batch_size(options.get("batchSize"))
        )
        return {"cursor": batch, "ok": 1.0}

    return handler


def _collection_entry(
    db: str, name: str, options: Mapping[str, Any], *, id_index: bool
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "type": "collection",
        "options": dict(options),
        "info": {"readOnly": False, "uuid": collection_uuid(db, name)},
    }
    if id_index:
        entry["idIndex"] = dict(_ID_INDEX)
    return entry
