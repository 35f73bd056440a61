"""Read-only views (MongoDB manual, "Views"): ``create`` with ``viewOn`` and ``pipeline``.

A view is an empty collection of the store whose options (sim/catalog.py, shared by
every member) hold its ``viewOn`` and ``pipeline``: its creation and drop are logged
and replicated like a collection's, and it goes with its database. (A server keeps
its definition in ``<db>.system.views`` instead; the simulator lists no ``system.views``.)

- **Reads**: find, count, distinct and aggregate on a view run the view's pipeline
  (a view on a view, the chain of them) on the collection it is defined on, followed
  by what the command asks (find's filter, sort, skip, limit and projection become
  stages); cursors carry the view's namespace. listCollections lists a view as
  ``{type: "view", options: {viewOn, pipeline}, info: {readOnly: true}}``.
- **Writes** (insert, update, delete, findAndModify, createIndexes, dropIndexes) and
  listIndexes fail with CommandNotSupportedOnView (166); ``drop`` removes the view;
  a view or collection that already has the name fails with NamespaceExists (48).
- **Refused** (NotImplemented, 238): a view's own ``collation``, collMod and
  renameCollection of a view.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Callable, Optional

from mongocore.sim.catalog import CollectionOptions
from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.crud_commands import distinct_values, run_aggregate
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.query import batch_size
from mongocore.sim.store import DataStore, translate_store_errors

__all__ = ["on_view", "resolve"]

Handler = Callable[[CommandContext], Reply]

_MAX_DEPTH = 20
_WRITES = ("insert", "update", "delete", "findAndModify", "createIndexes", "dropIndexes")
_WRITE_STAGES = ("$out", "$merge")
_VIEW_OPTIONS = frozenset(
    {
        "create", "viewOn", "pipeline", "$db", "lsid", "txnNumber", "writeConcern", "comment",
        "$clusterTime", "$readPreference", "apiVersion", "apiStrict", "apiDeprecationErrors",
        "maxTimeMS", "autocommit", "startTransaction",
    }
)  # fmt: skip


def _definition(store: DataStore, db: str, name: str) -> Optional[Mapping[str, Any]]:
    """A view's ``{viewOn, pipeline}``, None for anything else."""
    extra = store.options(db, name).extra
    return extra if "viewOn" in extra else None


def resolve(store: DataStore, db: str, name: str) -> Optional[tuple[str, list[Any]]]:
    """The collection a view reads and the whole pipeline it runs (None: not a view)."""
    pipeline: list[Any] = []
    definition = _definition(store, db, name)
    if definition is None:
        return None
    for _ in range(_MAX_DEPTH):
        pipeline = [*definition.get("pipeline", []), *pipeline]
        name = str(definition["viewOn"])
        definition = _definition(store, db, name)
        if definition is None:
            return name, pipeline
    raise CommandError(
        149, f"View depth too deep or view cycle detected; maximum depth is {_MAX_DEPTH}"
    )


def _not_on_view(ctx: CommandContext) -> CommandError:
    return CommandError(166, f"Namespace {ctx.namespace()} is a view, not a collection")


# -- create and drop -------------------------------------------------------------------


def _create(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        name = ctx.collection_name()
        cmd = ctx.cmd
        if "viewOn" not in cmd:
            return inner(ctx)
        view_on, pipeline = cmd.get("viewOn"), cmd.get("pipeline", [])
        if not isinstance(view_on, str):
            raise CommandError(14, "'viewOn' option must be specified as a string")
        if not view_on:
            raise CommandError(73, "'viewOn' cannot be empty")
        if not isinstance(pipeline, list) or not all(isinstance(s, Mapping) for s in pipeline):
            raise CommandError(14, "'pipeline' option must be specified as an array")
        if cmd.get("collation") is not None:
            raise CommandError(238, "a view's collation is not supported by the simulator")
        for option in cmd:
            if option not in _VIEW_OPTIONS:
                raise CommandError(72, f"option not supported on a view: {option}")
        for index, stage in enumerate(pipeline):
            stage_name = next(iter(stage), "")
            if stage_name in _WRITE_STAGES:
                raise CommandError(
                    167,
                    f"The aggregation stage {stage_name} in location {index} of the pipeline"
                    f" cannot be used in the view definition of {ctx.namespace(name)} because"
                    " it writes to disk",
                )
            if stage_name == "$changeStream":
                raise CommandError(167, "$changeStream cannot be used in a view definition")
        definition = {"viewOn": view_on, "pipeline": list(pipeline)}
        ctx.store.create_collection(ctx.db, name, CollectionOptions(extra=definition))
        try:
            resolve(ctx.store, ctx.db, name)
        except CommandError:
            ctx.store.drop_collection(ctx.db, name)  # too deep a chain is refused
            raise
        return {"ok": 1.0}

    return handler


def _drop(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        name = ctx.collection_name()
        if _definition(ctx.store, ctx.db, name) is None:
            return inner(ctx)
        reply = inner(ctx)
        reply.pop("nIndexesWas", None)  # a view has no indexes
        return reply

    return handler


# -- reads -----------------------------------------------------------------------------


def _view_of(ctx: CommandContext) -> Optional[tuple[str, list[Any]]]:
    target = ctx.target
    if not isinstance(target, str) or not target:
        return None
    return resolve(ctx.store, ctx.db, target)


def _documents(ctx: CommandContext, source: str, pipeline: list[Any]) -> list[dict[str, Any]]:
    collation = ctx.store.collation_for(ctx.db, source, ctx.cmd.get("collation"))
    try:
        return run_aggregate(ctx.reader, ctx.db, source, pipeline, collation)
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace()) from exc


def _find(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        view = _view_of(ctx)
        if view is None:
            return inner(ctx)
        source, pipeline = view
        cmd = ctx.cmd
        stages = list(pipeline)
        if cmd.get("filter"):
            stages.append({"$match": dict(cmd["filter"])})
        if cmd.get("sort"):
            stages.append({"$sort": dict(cmd["sort"])})
        if cmd.get("skip"):
            stages.append({"$skip": int(cmd["skip"])})
        if cmd.get("limit"):
            stages.append({"$limit": abs(int(cmd["limit"]))})
        if cmd.get("projection"):
            stages.append({"$project": dict(cmd["projection"])})
        docs = _documents(ctx, source, stages)
        batch = ctx.cursors.open(
            ctx.namespace(), docs, batch_size(cmd.get("batchSize")), bool(cmd.get("singleBatch"))
        )
        return {"cursor": batch, "ok": 1.0}

    return handler


def _count(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        view = _view_of(ctx)
        if view is None:
            return inner(ctx)
        source, pipeline = view
        cmd = ctx.cmd
        stages = list(pipeline)
        if cmd.get("query"):
            stages.append({"$match": dict(cmd["query"])})
        if cmd.get("skip"):
            stages.append({"$skip": int(cmd["skip"])})
        if cmd.get("limit"):
            stages.append({"$limit": abs(int(cmd["limit"]))})
        return {"n": len(_documents(ctx, source, stages)), "ok": 1.0}

    return handler


def _distinct(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        view = _view_of(ctx)
        if view is None:
            return inner(ctx)
        source, pipeline = view
        key = ctx.cmd.get("key")
        if not isinstance(key, str):
            raise CommandError(14, "BSON field 'distinct.key' is missing but a required field")
        docs = _documents(ctx, source, [*pipeline, {"$match": dict(ctx.cmd.get("query") or {})}])
        collation = ctx.store.collation_for(ctx.db, source, ctx.cmd.get("collation"))
        return {"values": distinct_values(docs, key, collation), "ok": 1.0}

    return handler


def _aggregate(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        view = _view_of(ctx)
        if view is None or not isinstance(ctx.cmd.get("pipeline"), list):
            return inner(ctx)
        source, pipeline = view
        cmd = {**ctx.cmd, "aggregate": source, "pipeline": [*pipeline, *ctx.cmd["pipeline"]]}
        reply = inner(dataclasses.replace(ctx, cmd=cmd))
        cursor = reply.get("cursor")
        if isinstance(cursor, dict):
            # The cursor is the view's, as on a server.
            cursor["ns"] = ctx.namespace()
            open_cursor = ctx.cursors.find(int(cursor.get("id", 0)))
            if open_cursor is not None:
                open_cursor.ns = ctx.namespace()
        return reply

    return handler


def _list_collections(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        if not any(_definition(ctx.store, db, coll) for db, coll in ctx.store.catalog):
            return inner(ctx)
        options = ctx.cmd.get("cursor") or {}
        everything = {**ctx.cmd, "cursor": {"batchSize": 2**31 - 1}, "filter": {}}
        reply = inner(dataclasses.replace(ctx, cmd=everything))
        flt = ctx.cmd.get("filter") or {}
        entries = []
        for listed in reply["cursor"]["firstBatch"]:
            entry: Reply = listed
            definition = _definition(ctx.store, ctx.db, str(listed.get("name")))
            if definition is not None:
                entry = {"name": listed["name"], "type": "view"}
                if not ctx.cmd.get("nameOnly"):
                    entry["options"] = dict(definition)
                    entry["info"] = {"readOnly": True}
            if compile_filter(flt).matches(entry):
                entries.append(entry)
        batch = ctx.cursors.open(
            f"{ctx.db}.$cmd.listCollections", entries, batch_size(options.get("batchSize"))
        )
        return {"cursor": batch, "ok": 1.0}

    return handler


def _refused(inner: Handler, code: int) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        if _view_of(ctx) is None:
            return inner(ctx)
        if code == 238:
            raise CommandError(238, "collMod of a view is not supported by the simulator")
        raise _not_on_view(ctx)

    return handler


def _rename(inner: Handler) -> Handler:
    def handler(ctx: CommandContext) -> Reply:
        for namespace in (ctx.cmd.get("renameCollection"), ctx.cmd.get("to")):
            db, _, name = str(namespace).partition(".")
            if _definition(ctx.store, db, name) is not None:
                raise CommandError(238, "renaming a view is not supported by the simulator")
        return inner(ctx)

    return handler


def on_view(name: str, inner: Handler) -> Handler:
    """``inner``, the handler of command ``name``, with what views change for it (the
    command itself where views change nothing)."""
    wrappers: dict[str, Callable[[Handler], Handler]] = {
        "create": _create,
        "drop": _drop,
        "find": _find,
        "count": _count,
        "distinct": _distinct,
        "aggregate": _aggregate,
        "listCollections": _list_collections,
        "listIndexes": lambda inner: _refused(inner, 166),
        "collMod": lambda inner: _refused(inner, 238),
        "renameCollection": _rename,
    }
    for write in _WRITES:
        wrappers[write] = lambda inner: _refused(inner, 166)
    wrap = wrappers.get(name)
    return inner if wrap is None else wrap(inner)
