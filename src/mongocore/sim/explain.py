"""The explain command (and aggregate's ``explain: true``) of a simulated mongod.

Explains find, aggregate, count, distinct, update, delete and findAndModify with the
plan query_planner.py chooses, in a 7.0 server's shape: ``queryPlanner`` (namespace,
parsedQuery, winningPlan, rejectedPlans), with ``executionStats`` for the
executionStats and allPlansExecution verbosities (the default is allPlansExecution, as
on a server), then ``command``, ``serverInfo`` and ``serverParameters``. Explaining a
write never changes data: the counts (nMatched, nWouldModify, nWouldDelete) come from
running it on a copy. An aggregate whose pipeline does more than ``$match``, ``$sort``,
``$skip`` and ``$limit`` is explained as ``stages``: the ``$cursor`` the query layer
runs, then each remaining stage.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import BUILD_VERSION, CommandContext, Reply
from mongocore.sim.engine import crud
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.engine.store import Collection
from mongocore.sim.query import match_context, update_for_engine
from mongocore.sim.query_planner import (
    MAX_BLOCKING_SORT_BYTES,
    Plan,
    QueryShape,
    choose_plans,
    execution_stages,
    mark_multikey,
    parsed_query,
    plan_stages,
    shape_hash,
)
from mongocore.sim.scratch import run_pipeline
from mongocore.sim.store import translate_store_errors

__all__ = ["EXPLAINABLE", "cmd_explain", "explain_aggregate", "explain_kind"]

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")
#: The commands explain accepts, and the kind each runs as.
EXPLAINABLE = {
    "find": "read",
    "aggregate": "read",
    "count": "read",
    "distinct": "read",
    "update": "write",
    "delete": "write",
    "findAndModify": "write",
}
_PUSHED_DOWN = ("$match", "$sort", "$skip", "$limit")
_SERVER_PARAMETERS = {
    "internalQueryFacetBufferSizeBytes": 104_857_600,
    "internalQueryFacetMaxOutputDocSizeBytes": 104_857_600,
    "internalLookupStageIntermediateDocumentMaxSizeBytes": 104_857_600,
    "internalDocumentSourceGroupMaxMemoryBytes": 104_857_600,
    "internalQueryMaxBlockingSortMemoryUsageBytes": MAX_BLOCKING_SORT_BYTES,
    "internalQueryProhibitBlockingMergeOnMongoS": 0,
    "internalQueryMaxAddToSetBytes": 104_857_600,
    "internalDocumentSourceSetWindowFieldsMaxMemoryBytes": 104_857_600,
    "internalQueryFrameworkControl": "trySbeRestricted",
}


def explain_kind(cmd: Mapping[str, Any]) -> str:
    """An explain runs where the command it explains would run."""
    inner = cmd.get("explain")
    if isinstance(inner, Mapping) and inner:
        return EXPLAINABLE.get(str(next(iter(inner))), "read")
    return "read"


def _verbosity(value: Any) -> str:
    if value not in VERBOSITIES:
        raise CommandError(
            9,
            "verbosity string must be one of {'queryPlanner', 'executionStats',"
            " 'allPlansExecution'}",
        )
    return str(value)


def cmd_explain(ctx: CommandContext) -> Reply:
    inner = ctx.cmd.get("explain")
    if not isinstance(inner, Mapping) or not inner:
        raise CommandError(14, "BSON field 'explain.explain' is the wrong type, expected object")
    verbosity = _verbosity(ctx.cmd.get("verbosity", "allPlansExecution"))
    name = str(next(iter(inner)))
    if name not in EXPLAINABLE:
        raise CommandError(59, f"Explain failed due to unknown command: {name}")
    return _explain(ctx, name, inner, verbosity)


def explain_aggregate(ctx: CommandContext) -> Reply:
    """``aggregate`` with ``explain: true``: the queryPlanner explain of its pipeline."""
    inner = {k: v for k, v in ctx.cmd.items() if k not in ("explain", "cursor")}
    return _explain(ctx, "aggregate", inner, "queryPlanner")


def _number(value: Any, field_name: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise CommandError(14, f"'{field_name}' must be a number")
    return int(value)


def _limit(value: Any) -> int:
    return abs(_number(value, "limit"))


def _split_pipeline(pipeline: list[Any]) -> tuple[QueryShape, list[Any]]:
    """The leading stages the query layer runs (as a find would), and the rest."""
    shape = QueryShape()
    rest = list(pipeline)
    while rest and isinstance(rest[0], Mapping) and next(iter(rest[0]), None) in _PUSHED_DOWN:
        stage = rest[0]
        name, spec = next(iter(stage.items()))
        if name == "$match" and not shape.filter and not shape.sort and isinstance(spec, Mapping):
            shape.filter = dict(spec)
        elif name == "$sort" and not shape.sort and not shape.skip and not shape.limit:
            shape.sort = dict(spec)
        elif name == "$skip" and not shape.limit:
            shape.skip += _number(spec, "$skip")
        elif name == "$limit" and not shape.limit:
            shape.limit = _number(spec, "$limit")
        else:
            break
        rest.pop(0)
    return shape, rest


def _shape(name: str, inner: Mapping[str, Any]) -> tuple[QueryShape, list[Any]]:
    if name == "find":
        return QueryShape(
            filter=inner.get("filter") or {},
            sort=inner.get("sort") or None,
            projection=inner.get("projection") or None,
            skip=_number(inner.get("skip"), "skip"),
            limit=_limit(inner.get("limit")),
            hint=inner.get("hint"),
        ), []
    if name == "aggregate":
        pipeline = inner.get("pipeline")
        if not isinstance(pipeline, list):
            raise CommandError(14, "'pipeline' option must be specified as an array")
        return _split_pipeline(pipeline)
    if name in ("count", "distinct"):
        return QueryShape(filter=inner.get("query") or {}, hint=inner.get("hint")), []
    if name == "findAndModify":
        return QueryShape(filter=inner.get("query") or {}, sort=inner.get("sort") or None), []
    field_name = "updates" if name == "update" else "deletes"
    statements = inner.get(field_name)
    if not isinstance(statements, list) or len(statements) != 1:
        raise CommandError(16, "explained write batches must be of size 1")
    statement = statements[0]
    if not isinstance(statement, Mapping):
        raise CommandError(14, f"BSON field '{name}.{field_name}' must contain objects")
    return QueryShape(filter=statement.get("q") or {}, hint=statement.get("hint")), []


class _Collection:
    """The explained collection: does it exist, its indexes, its documents."""

    def __init__(self, ctx: CommandContext, coll: str, *, with_docs: bool) -> None:
        self.namespace = f"{ctx.db}.{coll}"
        self.exists = ctx.reader.exists(ctx.db, coll)
        self.indexes = {
            str(spec["name"]): {**spec, "key": list(spec["key"].items())}
            for spec in ctx.reader.index_documents(ctx.db, coll)
        }
        self.docs = ctx.reader.documents(ctx.db, coll) if self.exists and with_docs else []


def _server_info(ctx: CommandContext) -> dict[str, Any]:
    host, port = "127.0.0.1", 0
    if ctx.process is not None:
        host, _, port_text = ctx.process.host.rpartition(":")
        port = int(port_text) if port_text.isdigit() else 0
    return {"host": host, "port": port, "version": BUILD_VERSION, "gitVersion": "0" * 40}


def _write_counts(
    name: str, inner: Mapping[str, Any], shape: QueryShape, coll: _Collection
) -> dict[str, Any]:
    """nMatched/nWouldModify/nWouldUpsert or nWouldDelete, from running the write on a copy."""
    matched = [d for d in coll.docs if _applies(shape.filter, d)]
    if name == "update":
        statement = inner["updates"][0]
        multi, upsert, update = (
            bool(statement.get("multi")),
            bool(statement.get("upsert")),
            statement.get("u"),
        )
    elif name == "findAndModify":
        multi, upsert, update = False, bool(inner.get("upsert")), inner.get("update")
        if inner.get("remove"):
            return {"nWouldDelete": min(len(matched), 1)}
    else:
        limit = inner["deletes"][0].get("limit", 0)
        return {"nWouldDelete": min(len(matched), 1) if limit else len(matched)}
    targets = matched if multi else matched[:1]
    modified = 0
    if targets and update is not None:
        scratch = Collection(coll.namespace)
        for doc in targets:
            scratch.insert(doc, 0)
        try:
            modified = crud.update(
                scratch,
                {},
                update_for_engine(update, None),
                itertools.repeat(1).__next__,
                multi=multi,
                context=match_context(None),
            ).modified
        except Exception as exc:
            raise translate_store_errors(exc, coll.namespace) from exc
    return {
        "nMatched": len(targets),
        "nWouldModify": int(modified),
        "nWouldUpsert": int(upsert and not matched),
    }


def _applies(flt: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    return compile_filter(flt, match_context(None)).matches(dict(doc))


def _wrap(
    name: str, inner: Mapping[str, Any], tree: dict[str, Any], coll: _Collection
) -> dict[str, Any]:
    """The stage a command puts on top of its query plan."""
    if name == "count":
        if not inner.get("query") and not inner.get("skip") and not inner.get("limit"):
            return {"stage": "RECORD_STORE_FAST_COUNT"}
        return {"stage": "COUNT", "inputStage": tree}
    if name in ("update", "delete"):
        return {"stage": name.upper(), "inputStage": tree}
    if name == "findAndModify":
        return {"stage": "DELETE" if inner.get("remove") else "UPDATE", "inputStage": tree}
    return tree


def _explain(ctx: CommandContext, name: str, inner: Mapping[str, Any], verbosity: str) -> Reply:
    coll_name = inner.get(name)
    if not isinstance(coll_name, str) or not coll_name:
        raise CommandError(238, f"explain of {name} without a collection is not supported")
    executed = verbosity != "queryPlanner"
    coll = _Collection(ctx, coll_name, with_docs=executed or EXPLAINABLE[name] == "write")
    shape, rest = _shape(name, inner)
    for option, value in (("filter", shape.filter), ("sort", shape.sort)):
        if value is not None and not isinstance(value, Mapping):
            raise CommandError(14, f"BSON field '{name}.{option}' must be an object")
    if shape.projection is not None and not isinstance(shape.projection, Mapping):
        raise CommandError(14, f"BSON field '{name}.projection' must be an object")
    if any(
        isinstance(s, Mapping)
        and next(iter(s), "") in ("$collStats", "$currentOp", "$out", "$merge")
        for s in rest
    ):
        raise CommandError(238, "explain of this pipeline is not supported by the simulator")
    if name == "findAndModify":
        shape.limit = 1
    plan, rejected = choose_plans(coll.exists, coll.indexes, shape, allow_idhack=name != "distinct")
    for candidate in (plan, *rejected):
        mark_multikey(candidate, coll.docs)
    winning = _wrap(name, inner, plan_stages(plan, shape, coll.indexes), coll)
    planner: dict[str, Any] = {
        "namespace": coll.namespace,
        "indexFilterSet": False,
        "parsedQuery": parsed_query(shape.filter),
        "queryHash": shape_hash(name, sorted(shape.filter), shape.sort, shape.projection),
        "planCacheKey": shape_hash(coll.namespace, name, sorted(shape.filter), shape.sort),
        "maxIndexedOrSolutionsReached": False,
        "maxIndexedAndSolutionsReached": False,
        "maxScansToExplodeReached": False,
        "winningPlan": winning,
        "rejectedPlans": [plan_stages(p, shape, coll.indexes) for p in rejected],
    }
    stats = (
        _execution_stats(
            name, inner, shape, plan, rejected=rejected, coll=coll, verbosity=verbosity
        )
        if executed
        else None
    )
    command = {**dict(inner), "$db": ctx.db}
    reply: Reply = {"explainVersion": "1"}
    if rest:
        cursor: dict[str, Any] = {"queryPlanner": planner}
        if stats is not None:
            cursor["executionStats"] = stats
        reply["stages"] = [{"$cursor": cursor}, *_later_stages(shape, rest, coll, executed)]
    else:
        reply["queryPlanner"] = planner
        if stats is not None:
            reply["executionStats"] = stats
    reply.update(
        command=command,
        serverInfo=_server_info(ctx),
        serverParameters=dict(_SERVER_PARAMETERS),
        ok=1.0,
    )
    return reply


def _execution_stats(
    name: str,
    inner: Mapping[str, Any],
    shape: QueryShape,
    plan: Plan,
    *,
    rejected: list[Plan],
    coll: _Collection,
    verbosity: str,
) -> dict[str, Any]:
    stages, totals = execution_stages(plan, shape, coll.indexes, coll.docs)
    top = _wrap(name, inner, stages, coll)
    returned = totals["nReturned"]
    if top is not stages:
        counts: dict[str, Any] = {}
        if name == "count":
            matched = returned
            skip, limit = _number(inner.get("skip"), "skip"), _limit(inner.get("limit"))
            counted = max(0, matched - skip)
            counts = {
                "nCounted": min(counted, limit) if limit else counted,
                "nSkipped": min(skip, matched),
            }
            if top["stage"] == "RECORD_STORE_FAST_COUNT":
                counts = {"nCounted": len(coll.docs), "nSkipped": 0}
        else:
            counts = _write_counts(name, inner, shape, coll)
        top.update(
            {
                "nReturned": 0,
                "executionTimeMillisEstimate": 0,
                "works": returned + 1,
                "advanced": 0,
                "needTime": returned,
                "needYield": 0,
                "saveState": 0,
                "restoreState": 0,
                "isEOF": 1,
                **counts,
            }
        )
        if "inputStage" in top:
            top["inputStage"] = top.pop("inputStage")
        returned = 0
    result: dict[str, Any] = {
        "executionSuccess": True,
        "nReturned": returned,
        "executionTimeMillis": 0,
        "totalKeysExamined": totals["totalKeysExamined"],
        "totalDocsExamined": totals["totalDocsExamined"],
        "executionStages": top,
    }
    if verbosity == "allPlansExecution":
        result["allPlansExecution"] = [
            _plan_execution(p, shape, coll) for p in ([plan, *rejected] if rejected else [])
        ]
    return result


def _plan_execution(plan: Plan, shape: QueryShape, coll: _Collection) -> dict[str, Any]:
    stages, totals = execution_stages(plan, shape, coll.indexes, coll.docs)
    return {
        "nReturned": totals["nReturned"],
        "executionTimeMillisEstimate": 0,
        "totalKeysExamined": totals["totalKeysExamined"],
        "totalDocsExamined": totals["totalDocsExamined"],
        "executionStages": stages,
    }


def _later_stages(
    shape: QueryShape, rest: list[Any], coll: _Collection, executed: bool
) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [dict(stage) for stage in rest]
    if not executed:
        return entries
    docs = [d for d in coll.docs if _applies(shape.filter, d)]
    pushed: list[Any] = []
    if shape.sort:
        pushed.append({"$sort": dict(shape.sort)})
    if shape.skip:
        pushed.append({"$skip": shape.skip})
    if shape.limit:
        pushed.append({"$limit": shape.limit})
    docs = run_pipeline(docs, pushed, coll.namespace)
    for count, entry in enumerate(entries, 1):
        entry["nReturned"] = len(run_pipeline(docs, rest[:count], coll.namespace))
        entry["executionTimeMillisEstimate"] = 0
    return entries
