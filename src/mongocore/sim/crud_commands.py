"""The CRUD commands of a simulated mongod: insert, update, delete, findAndModify, find,
aggregate, count and distinct (each command's reference in the MongoDB manual).

Replies have a 7.0 server's shape (``n``, ``nModified``, ``upserted``, ``writeErrors``
with ``index``/``code``/``errmsg`` and the error's own fields, ``cursor`` with
``id``/``ns``/``firstBatch``). Each command honours its ``collation`` (or the
collection's default, :mod:`mongocore.sim.collation`), its ``let`` variables
(:mod:`mongocore.sim.variables`) and ``bypassDocumentValidation``
(:mod:`mongocore.sim.catalog`), or refuses what the simulator cannot honour. An
aggregation runs on the engine's pipeline (:mod:`mongocore.sim.aggregation`); its
``$out`` and ``$merge`` write through the store.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from bson import Int64

from mongocore.sim import aggregation, change_streams
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine import crud
from mongocore.sim.engine.paths import candidates, split
from mongocore.sim.engine.stages import Pipeline
from mongocore.sim.engine.store import Collection
from mongocore.sim.engine.values import MISSING, key
from mongocore.sim.query import batch_size, match_context
from mongocore.sim.store import DataStore, DataView, translate_store_errors
from mongocore.sim.variables import parse_let
from mongocore.sim.write_statements import (
    delete_limit,
    fails_the_command,
    parse_deletes,
    parse_inserts,
    parse_updates,
)

if TYPE_CHECKING:
    # commands.py registers these handlers; the context type is its own.
    from mongocore.sim.commands import CommandContext

__all__ = [
    "aggregate_writes",
    "cmd_aggregate",
    "cmd_count",
    "cmd_delete",
    "cmd_distinct",
    "cmd_find",
    "cmd_find_and_modify",
    "cmd_insert",
    "cmd_update",
    "distinct_values",
    "run_aggregate",
]

Reply = dict[str, Any]


def _write_error(index: int, error: CommandError) -> Reply:
    entry: Reply = {"index": index, "code": error.code, "errmsg": error.errmsg}
    entry.update(error.extra)
    return entry


def _write_reply(n: int, errors: list[Reply], **extra: Any) -> Reply:
    reply: Reply = {"n": n}
    reply.update(extra)
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return reply


def _bypass(ctx: CommandContext) -> bool:
    return bool(ctx.cmd.get("bypassDocumentValidation", False))


def _collation(ctx: CommandContext, coll: str, spec: Any) -> Optional[Collation]:
    return ctx.store.collation_for(ctx.db, coll, spec)


# -- writes ----------------------------------------------------------------------------


def cmd_insert(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    documents = parse_inserts(ctx.cmd)
    ordered = bool(ctx.cmd.get("ordered", True))
    bypass = _bypass(ctx)
    n = 0
    errors: list[Reply] = []
    for index, doc in enumerate(documents):
        prior = ctx.executed(index)
        if prior is not None:
            n += int(prior["n"])
            continue
        try:
            apply = functools.partial(ctx.store.insert, ctx.db, coll, doc, bypass_validation=bypass)
            ctx.write(index, coll, apply, _inserted)
            n += 1
        except CommandError as exc:
            if fails_the_command(exc):
                raise
            errors.append(_write_error(index, exc))
            if ordered:
                break
    return _write_reply(n, errors)


def _inserted(_: None) -> Reply:
    return {"n": 1}


def _updated(outcome: tuple[int, int, Optional[tuple[Any]]]) -> Reply:
    matched, changed, upserted = outcome
    if upserted is not None:
        return {"n": 1, "nModified": 0, "upserted": upserted[0]}
    return {"n": matched, "nModified": changed}


def cmd_update(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    # Parsed whole first: a statement the parser refuses (an 8.0 sort, a pipeline of
    # non-documents, ...) fails the command before any is applied.
    statements = parse_updates(ctx.cmd)
    ordered = bool(ctx.cmd.get("ordered", True))
    variables = parse_let(ctx.cmd, "update")
    bypass = _bypass(ctx)
    n = modified = 0
    upserted: list[Reply] = []
    errors: list[Reply] = []
    for index, statement in enumerate(statements):
        result = ctx.executed(index)
        if result is None:
            try:
                apply = functools.partial(
                    ctx.store.update,
                    ctx.db,
                    coll,
                    statement.get("q", {}),
                    statement.get("u", {}),
                    multi=bool(statement.get("multi", False)),
                    upsert=bool(statement.get("upsert", False)),
                    array_filters=statement.get("arrayFilters"),
                    collation=_collation(ctx, coll, statement.get("collation")),
                    variables=variables,
                    bypass_validation=bypass,
                )
                outcome = ctx.write(index, coll, apply, _updated)
                result = _updated(outcome)
                if outcome[2] is not None:
                    upserted.append({"index": index, "_id": outcome[2][0]})
            except CommandError as exc:
                if fails_the_command(exc):
                    raise
                errors.append(_write_error(index, exc))
                if ordered:
                    break
                continue
        elif "upserted" in result:
            upserted.append({"index": index, "_id": result["upserted"]})
        n += int(result["n"])
        modified += int(result["nModified"])
    extra: dict[str, Any] = {}
    if upserted:
        extra["upserted"] = upserted
    extra["nModified"] = modified
    return _write_reply(n, errors, **extra)


def _deleted(count: int) -> Reply:
    return {"n": count}


def cmd_delete(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    statements = parse_deletes(ctx.cmd)
    ordered = bool(ctx.cmd.get("ordered", True))
    variables = parse_let(ctx.cmd, "delete")
    n = 0
    errors: list[Reply] = []
    for index, statement in enumerate(statements):
        prior = ctx.executed(index)
        if prior is not None:
            n += int(prior["n"])
            continue
        try:
            apply = functools.partial(
                ctx.store.delete,
                ctx.db,
                coll,
                statement.get("q", {}),
                delete_limit(statement),
                collation=_collation(ctx, coll, statement.get("collation")),
                variables=variables,
            )
            n += ctx.write(index, coll, apply, _deleted)
        except CommandError as exc:
            if fails_the_command(exc):
                raise
            errors.append(_write_error(index, exc))
            if ordered:
                break
    return _write_reply(n, errors)


def cmd_find_and_modify(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    cmd = ctx.cmd
    remove = bool(cmd.get("remove", False))
    if remove == ("update" in cmd):
        raise CommandError(9, "Either an update or remove=true must be specified")
    if remove and (cmd.get("new") or cmd.get("upsert")):
        raise CommandError(9, "Cannot specify both new=true and remove=true or upsert=true")
    prior = ctx.executed(0)
    if prior is not None:
        # A retried findAndModify is answered from the recorded images.
        return {**prior, "ok": 1.0}
    apply = functools.partial(
        ctx.store.find_and_modify,
        ctx.db,
        coll,
        query=cmd.get("query") or {},
        sort=cmd.get("sort"),
        remove=remove,
        update=cmd.get("update"),
        new=bool(cmd.get("new", False)),
        fields=cmd.get("fields"),
        upsert=bool(cmd.get("upsert", False)),
        array_filters=cmd.get("arrayFilters"),
        collation=_collation(ctx, coll, cmd.get("collation")),
        variables=parse_let(cmd, "findAndModify"),
        bypass_validation=_bypass(ctx),
    )
    value, last_error = ctx.write(0, coll, apply, _found_and_modified)
    return {"lastErrorObject": last_error, "value": value, "ok": 1.0}


def _found_and_modified(outcome: tuple[Optional[Reply], Reply]) -> Reply:
    value, last_error = outcome
    return {"lastErrorObject": dict(last_error), "value": value}


# -- reads -----------------------------------------------------------------------------


def _index_keys(cmd: Mapping[str, Any], docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """returnKey: each document becomes the key of the index the query used. The
    simulator plans with the _id index only, when the sort or the hint is on _id;
    otherwise the query is a collection scan and the keys are empty (as a server's)."""
    used = [cmd.get(option) for option in ("hint", "sort")]
    if cmd.get("hint") == "_id_" or any(
        isinstance(spec, Mapping) and list(spec) == ["_id"] for spec in used
    ):
        return [{"_id": doc["_id"]} for doc in docs if "_id" in doc]
    return [{} for _ in docs]


def _count_option(cmd: Mapping[str, Any], name: str) -> int:
    value = cmd.get(name, 0) or 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CommandError(14, f"BSON field '{name}' is the wrong type, expected a number")
    return int(value)


def check_hint(ctx: CommandContext, coll: str, hint: Any) -> None:
    """Refuse a hint that names no index of the collection (by name, by key pattern,
    or as ``{$hint: name}``), as a server's planner does; ``{$natural: ±1}`` is a
    collection scan, and a collection that does not exist plans EOF whatever the
    hint."""
    if hint is None or hint in ({}, ""):
        return
    if not ctx.reader.exists(ctx.db, coll):
        return
    if isinstance(hint, Mapping) and list(hint) == ["$natural"]:
        return
    if isinstance(hint, Mapping) and list(hint) == ["$hint"]:
        hint = hint["$hint"]
    for index in ctx.reader.index_documents(ctx.db, coll):
        if hint == index["name"]:
            return
        if isinstance(hint, Mapping) and list(hint.items()) == list(index["key"].items()):
            return
    raise CommandError(
        2, "error processing query: hint provided does not correspond to an existing index"
    )


def cmd_find(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    cmd = ctx.cmd
    check_hint(ctx, coll, cmd.get("hint"))
    if cmd.get("tailable") or cmd.get("awaitData"):
        raise CommandError(238, "tailable cursors are not supported by the simulator")
    limit = _count_option(cmd, "limit")
    if limit < 0:
        raise CommandError(51024, f"BSON field 'limit' value must be >= 0, actual value '{limit}'")
    skip = _count_option(cmd, "skip")
    if skip < 0:
        raise CommandError(51024, f"BSON field 'skip' value must be >= 0, actual value '{skip}'")
    variables = parse_let(cmd, "find")
    collation = _collation(ctx, coll, cmd.get("collation"))
    try:
        docs = ctx.reader.find(
            ctx.db,
            coll,
            variables.in_query(cmd.get("filter") or {}),
            sort=cmd.get("sort") or None,
            projection=cmd.get("projection") or None,
            skip=skip,
            limit=limit,
            context=match_context(collation, variables),
        )
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    if cmd.get("returnKey"):
        docs = _index_keys(cmd, docs)
    elif cmd.get("showRecordId"):
        docs = [{**doc, "$recordId": Int64(n)} for n, doc in enumerate(docs, 1)]
    batch = ctx.cursors.open(
        ctx.namespace(coll), docs, batch_size(cmd.get("batchSize")), bool(cmd.get("singleBatch"))
    )
    return {"cursor": batch, "ok": 1.0}


_WRITE_STAGES = ("$out", "$merge")


def aggregate_writes(cmd: Mapping[str, Any]) -> bool:
    """Does the pipeline end in $out or $merge (a write that needs the primary)?"""
    pipeline = cmd.get("pipeline")
    return bool(
        isinstance(pipeline, list)
        and pipeline
        and isinstance(pipeline[-1], Mapping)
        and any(stage in pipeline[-1] for stage in _WRITE_STAGES)
    )


def cmd_aggregate(ctx: CommandContext) -> Reply:
    cmd = ctx.cmd
    if not isinstance(cmd.get("pipeline"), list):
        raise CommandError(14, "'pipeline' option must be specified as an array")
    if change_streams.is_change_stream(cmd):
        return change_streams.aggregate(ctx)
    if cmd.get("explain"):
        raise CommandError(238, "explain is not supported by the simulator")
    if "cursor" not in cmd:
        raise CommandError(
            9, "The 'cursor' option is required, except for aggregate with the explain argument"
        )
    if ctx.target == 1:
        raise CommandError(
            238, "database-level aggregation (aggregate: 1) is not supported by the simulator"
        )
    coll = ctx.collection_name()
    check_hint(ctx, coll, cmd.get("hint"))
    variables = parse_let(cmd, "aggregate")
    writes = aggregate_writes(cmd)
    read_concern = cmd.get("readConcern")
    if writes and isinstance(read_concern, Mapping) and read_concern.get("level") == "linearizable":
        raise CommandError(
            72, "readConcern level 'linearizable' is not supported with an $out or $merge stage"
        )
    collation = _collation(ctx, coll, cmd.get("collation"))
    source = ctx.store.latest if writes else ctx.reader
    try:
        docs = run_aggregate(
            source,
            ctx.db,
            coll,
            list(cmd["pipeline"]),
            collation,
            variables=variables.values,
            store=ctx.store if writes else None,
            bypass_validation=_bypass(ctx),
            allow_disk_use=_allow_disk_use(cmd),
        )
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    options = cmd.get("cursor") or {}
    batch = ctx.cursors.open(ctx.namespace(coll), docs, batch_size(options.get("batchSize")))
    return {"cursor": batch, "ok": 1.0}


def _allow_disk_use(cmd: Mapping[str, Any]) -> Optional[bool]:
    value = cmd.get("allowDiskUse")
    return None if value is None else bool(value)


def run_aggregate(
    view: DataView,
    db: str,
    coll: str,
    pipeline: list[Any],
    collation: Optional[Collation],
    *,
    variables: Optional[Mapping[str, Any]] = None,
    store: Optional[DataStore] = None,
    bypass_validation: bool = False,
    allow_disk_use: Optional[bool] = None,
) -> list[dict[str, Any]]:
    """A pipeline over a collection's documents as ``view`` holds them, parsed whole
    first; its ``$out`` or ``$merge`` writes into ``store``. A leading ``$match`` is the
    engine's query (its index lookups, ``$text`` and the geo operators over the
    collection's indexes); the rest of the pipeline parses as the engine's stages."""
    first = pipeline[0] if pipeline else None
    leading = isinstance(first, Mapping) and list(first) == ["$match"]
    if leading:
        assert isinstance(first, Mapping)
        _check_leading_match(first["$match"], pipeline[1:])
    parsed = aggregation.parse(
        [{"$match": {}}, *pipeline[1:]] if leading else pipeline,
        view=view,
        store=store,
        db=db,
        coll=coll,
        collation=collation,
        variables=variables,
        bypass_validation=bypass_validation,
        allow_disk_use=allow_disk_use,
    )
    stages = parsed.stages
    if leading and isinstance(first, Mapping):
        context = match_context(collation)
        if variables:
            context = dataclasses.replace(context, variables=dict(variables))
        docs = view.find(db, coll, first["$match"], context=context)
        stages = stages[1:]
    else:
        docs = view.documents(db, coll)
    return list(Pipeline(stages, parsed.context).run(dict(doc) for doc in docs))


def _check_leading_match(query: Any, rest: Sequence[Any]) -> None:
    """Refuse what a leading ``$match`` cannot do in a pipeline: ``$near`` and
    ``$nearSphere`` sort, which a pipeline's ``$match`` may not (the server's 5626500),
    and a ``$text`` score read by a later stage, which the simulator does not carry from
    the query into the pipeline (238)."""
    if _mentions(query, lambda key, value: key in ("$near", "$nearSphere")):
        raise CommandError(
            5626500,
            "$geoNear, $near, and $nearSphere are not allowed in this context, as these "
            "operators require sorting geospatial data. If you do not need sort, consider "
            "using $geoWithin instead.",
        )
    scored = isinstance(query, Mapping) and "$text" in query
    if scored and _mentions(list(rest), lambda key, value: key == "$meta" and value == "textScore"):
        raise CommandError(238, "the text score in a pipeline is not implemented by the simulator")


def _mentions(value: Any, wanted: Callable[[str, Any], bool]) -> bool:
    """Whether a key of a document anywhere in ``value`` is ``wanted`` with its value."""
    if isinstance(value, Mapping):
        return any(wanted(str(key), item) or _mentions(item, wanted) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_mentions(item, wanted) for item in value)
    return False


def cmd_count(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    cmd = ctx.cmd
    check_hint(ctx, coll, cmd.get("hint"))
    skip = _count_option(cmd, "skip")
    limit = abs(_count_option(cmd, "limit"))
    collation = _collation(ctx, coll, cmd.get("collation"))
    collection = ctx.reader.collection(ctx.db, coll) or Collection(ctx.namespace(coll))
    try:
        n = crud.count(
            collection,
            cmd.get("query") or {},
            skip=max(skip, 0),
            limit=limit,
            context=match_context(collation),
            as_of=ctx.reader.as_of,
        )
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    return {"n": n, "ok": 1.0}


def distinct_values(
    docs: list[dict[str, Any]], field: str, collation: Optional[Collation]
) -> list[Any]:
    """The distinct values of ``field`` over ``docs`` (an array's elements each count),
    one per class of equal values, in BSON order, as a server returns them."""
    kept: dict[Any, Any] = {}
    parts = split(field)
    for doc in docs:
        for value, _ in candidates(doc, parts, expand_leaf=False):
            if value is MISSING:
                continue
            for item in value if isinstance(value, list) else [value]:
                kept.setdefault(key(item, collation), item)
    return [kept[k] for k in sorted(kept)]


def cmd_distinct(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    field = ctx.cmd.get("key")
    if not isinstance(field, str):
        raise CommandError(14, "BSON field 'distinct.key' is missing but a required field")
    collation = _collation(ctx, coll, ctx.cmd.get("collation"))
    try:
        docs = ctx.reader.find(
            ctx.db, coll, ctx.cmd.get("query") or {}, context=match_context(collation)
        )
        values = distinct_values(docs, field, collation)
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    return {"values": values, "ok": 1.0}
