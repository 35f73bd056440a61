"""The query plans a simulated mongod explains, shaped as the classic engine's.

The simulator's queries run on its engine, which scans; this module says which plan
a 7.0 server would pick for the same query over the same indexes, and what it would
examine, so that ``explain`` answers in a server's shape: EOF for a collection that does
not exist, IDHACK for an equality on ``_id`` alone, IXSCAN under FETCH for an index
whose leading field the filter constrains (the longest constrained prefix wins; the
other candidates are the rejected plans), IXSCAN providing a sort otherwise, else
COLLSCAN; then SORT (when no index gives the order), SKIP, LIMIT and a projection stage.
A query the index covers (no filter left over, a projection of the index's fields only,
``_id`` excluded unless indexed, an index no document makes multikey) reads no
document: PROJECTION_COVERED over the IXSCAN, without FETCH.
The counts (documents and keys examined, documents returned) are computed from the
data; the timings are zero.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from bson import SON

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.engine.paths import get_path
from mongocore.sim.engine.values import key as bson_key
from mongocore.sim.query import match_context

__all__ = [
    "Plan",
    "QueryShape",
    "choose_plans",
    "covered",
    "execution_stages",
    "mark_multikey",
    "parsed_query",
    "shape_hash",
]

Stage = dict[str, Any]
_RANGE_OPERATORS = ("$gt", "$gte", "$lt", "$lte")
_SARGABLE = frozenset({"$eq", "$in", *_RANGE_OPERATORS})
MAX_BLOCKING_SORT_BYTES = 104_857_600


def _matches(flt: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    return compile_filter(flt, match_context(None)).matches(dict(doc))


@dataclass
class QueryShape:
    """What a plan is chosen for: the filter, sort, projection, skip and limit, the hint."""

    filter: Mapping[str, Any] = field(default_factory=dict)
    sort: Optional[Mapping[str, Any]] = None
    projection: Optional[Mapping[str, Any]] = None
    skip: int = 0
    limit: int = 0
    hint: Any = None


@dataclass
class Plan:
    """One candidate plan: its access path and the stages above it."""

    access: str  # "EOF", "IDHACK", "IXSCAN" or "COLLSCAN"
    index: Optional[str] = None
    key: list[tuple[str, Any]] = field(default_factory=list)
    sorted_by_index: bool = False
    direction: int = 1
    #: The index's paths that hold an array in some document (a multikey index's).
    multikey_paths: dict[str, list[str]] = field(default_factory=dict)

    @property
    def multikey(self) -> bool:
        return any(self.multikey_paths.values())


# -- the filter ------------------------------------------------------------------------


def _is_operator_doc(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(str(k).startswith("$") for k in value)


def _predicates(flt: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level field predicates (those inside a top-level ``$and`` included)."""
    found: dict[str, Any] = {}
    for key, value in flt.items():
        if key == "$and" and isinstance(value, list):
            for part in value:
                if isinstance(part, Mapping):
                    for inner_key, inner in _predicates(part).items():
                        found.setdefault(inner_key, inner)
        elif not str(key).startswith("$"):
            found[key] = value
    return found


def _sargable(value: Any) -> bool:
    if not _is_operator_doc(value):
        return not isinstance(value, Mapping) or not value  # an equality
    return any(op in _SARGABLE for op in value)


def parsed_query(flt: Mapping[str, Any]) -> dict[str, Any]:
    """The filter as the server prints it: each condition an ``{field: {$op: value}}``."""
    parts: list[dict[str, Any]] = []
    for key, value in flt.items():
        if str(key).startswith("$"):
            parts.append({key: value})
        elif _is_operator_doc(value):
            parts.extend({key: {op: operand}} for op, operand in value.items())
        else:
            parts.append({key: {"$eq": value}})
    if not parts:
        return {}
    return parts[0] if len(parts) == 1 else {"$and": parts}


def shape_hash(*parts: Any) -> str:
    """queryHash and planCacheKey: a stable digest of the query's shape."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:8].upper()


# -- choosing ----------------------------------------------------------------------------


def _index_keys(info: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(str(k), v) for k, v in info["key"]]


def _ordinary(key: Sequence[tuple[str, Any]]) -> bool:
    return all(isinstance(direction, (int, float)) for _, direction in key)


def _sort_direction(key: Sequence[tuple[str, Any]], sort: Mapping[str, Any]) -> int:
    """1 or -1 if walking the index gives ``sort``'s order, else 0."""
    wanted = list(sort.items())
    if not wanted or len(wanted) > len(key):
        return 0
    prefix = [(name, 1 if d > 0 else -1) for name, d in key[: len(wanted)]]
    normalized = [(name, 1 if float(d) > 0 else -1) for name, d in wanted]
    if prefix == normalized:
        return 1
    if prefix == [(name, -d) for name, d in normalized]:
        return -1
    return 0


def _id_equality(flt: Mapping[str, Any]) -> bool:
    if list(flt) != ["_id"]:
        return False
    value = flt["_id"]
    return not isinstance(value, Mapping) or (list(value) == ["$eq"])


def _hinted(indexes: Mapping[str, Any], hint: Any) -> Plan:
    if isinstance(hint, Mapping) and list(hint) == ["$natural"]:
        return Plan("COLLSCAN", direction=1 if float(hint["$natural"]) >= 0 else -1)
    for name, info in indexes.items():
        key = _index_keys(info)
        if hint == name or (isinstance(hint, Mapping) and list(hint.items()) == key):
            return Plan("IXSCAN", name, key)
    raise CommandError(
        2, "error processing query: hint provided does not correspond to an existing index"
    )


def choose_plans(
    exists: bool, indexes: Mapping[str, Any], shape: QueryShape, *, allow_idhack: bool = True
) -> tuple[Plan, list[Plan]]:
    """The winning plan and the rejected ones."""
    if not exists:
        return Plan("EOF"), []
    if shape.hint is not None and shape.hint not in ({}, ""):
        return _hinted(indexes, shape.hint), []
    if allow_idhack and _id_equality(shape.filter) and "_id_" in indexes:
        return Plan("IDHACK"), []
    predicates = _predicates(shape.filter)
    has_or = "$or" in shape.filter or "$nor" in shape.filter
    candidates: list[tuple[int, Plan]] = []
    for name, info in indexes.items():
        key = _index_keys(info)
        if not _ordinary(key) or has_or:
            continue
        prefix = 0
        for field_name, _ in key:
            if field_name in predicates and _sargable(predicates[field_name]):
                prefix += 1
            else:
                break
        if prefix:
            candidates.append((prefix, Plan("IXSCAN", name, key)))
    if candidates:
        candidates.sort(key=lambda c: (-c[0], len(c[1].key), c[1].index or ""))
        plans = [plan for _, plan in candidates]
        for plan in plans:
            if shape.sort:
                plan.direction = _sort_direction(plan.key, shape.sort) or 1
                plan.sorted_by_index = bool(_sort_direction(plan.key, shape.sort))
        return plans[0], plans[1:]
    if shape.sort:
        for name, info in indexes.items():
            key = _index_keys(info)
            direction = _sort_direction(key, shape.sort) if _ordinary(key) else 0
            if direction:
                return Plan("IXSCAN", name, key, sorted_by_index=True, direction=direction), []
    return Plan("COLLSCAN"), []


# -- index bounds ------------------------------------------------------------------------


def _bound(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isinf(value):
        return "inf.0" if value > 0 else "-inf.0"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    return str(value)


def _intervals(predicate: Any) -> list[str]:
    if not _is_operator_doc(predicate):
        return [f"[{_bound(predicate)}, {_bound(predicate)}]"]
    if "$eq" in predicate:
        return _intervals(predicate["$eq"])
    if "$in" in predicate and isinstance(predicate["$in"], list):
        values = sorted(predicate["$in"], key=bson_key)
        return [f"[{_bound(v)}, {_bound(v)}]" for v in values]
    low, high = "[MinKey", "MaxKey]"
    numeric = any(isinstance(predicate.get(op), (int, float)) for op in _RANGE_OPERATORS)
    if numeric:
        low, high = "[-inf.0", "inf.0]"
    if "$gt" in predicate:
        low = f"({_bound(predicate['$gt'])}"
    if "$gte" in predicate:
        low = f"[{_bound(predicate['$gte'])}"
    if "$lt" in predicate:
        high = f"{_bound(predicate['$lt'])})"
    if "$lte" in predicate:
        high = f"{_bound(predicate['$lte'])}]"
    return [f"{low}, {high}"]


def index_bounds(plan: Plan, flt: Mapping[str, Any]) -> dict[str, list[str]]:
    predicates = _predicates(flt)
    bounds: dict[str, list[str]] = {}
    constrained = True
    for field_name, _ in plan.key:
        if constrained and field_name in predicates and _sargable(predicates[field_name]):
            bounds[field_name] = _intervals(predicates[field_name])
        else:
            constrained = False
            bounds[field_name] = ["[MinKey, MaxKey]"]
    return bounds


# -- stages ------------------------------------------------------------------------------


def _residual(plan: Plan, flt: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the filter the index bounds do not already enforce."""
    if plan.access != "IXSCAN":
        return dict(flt)
    bounded = {name for name, _ in plan.key}
    return {k: v for k, v in flt.items() if k not in bounded or not _sargable(v)}


def mark_multikey(plan: Plan, docs: Sequence[Mapping[str, Any]]) -> None:
    """Record which of the plan's index paths hold arrays in ``docs`` (a server marks
    an index multikey once a document gives it more than one key)."""
    if plan.access != "IXSCAN":
        return
    for name, _ in plan.key:
        parts = name.split(".")
        arrays = [
            ".".join(parts[: depth + 1])
            for depth in range(len(parts))
            if any(isinstance(get_path(doc, tuple(parts[: depth + 1])), list) for doc in docs)
        ]
        plan.multikey_paths[name] = arrays


def covered(plan: Plan, shape: QueryShape) -> bool:
    """Does the index alone answer the query (module doc)?"""
    projection = shape.projection
    if plan.access != "IXSCAN" or not projection or plan.multikey:
        return False
    if _residual(plan, shape.filter):
        return False
    indexed = {name for name, _ in plan.key}
    included = set()
    for name, value in projection.items():
        if isinstance(value, (bool, int, float)):
            if not value:
                if name != "_id":
                    return False  # an exclusion projection needs the document
                continue
            included.add(str(name))
        else:
            return False  # an expression, $slice, $elemMatch, ...
    if "_id" not in projection or projection["_id"]:
        included.add("_id")
    if shape.sort and not set(shape.sort) <= indexed:
        return False
    return bool(included) and included <= indexed


def _projection_stage(projection: Mapping[str, Any]) -> str:
    simple = all(
        not str(k).startswith("$") and "." not in str(k) and isinstance(v, (int, float, bool))
        for k, v in projection.items()
    )
    return "PROJECTION_SIMPLE" if simple else "PROJECTION_DEFAULT"


def plan_stages(plan: Plan, shape: QueryShape, indexes: Mapping[str, Any]) -> Stage:
    """The plan as explain's ``winningPlan`` tree."""
    stage: Stage
    if plan.access in ("EOF", "IDHACK"):
        stage = {"stage": plan.access}
    elif plan.access == "COLLSCAN":
        stage = {"stage": "COLLSCAN"}
        if shape.filter:
            stage["filter"] = parsed_query(shape.filter)
        stage["direction"] = "forward" if plan.direction > 0 else "backward"
    else:
        info = indexes.get(plan.index or "", {})
        scan: Stage = {
            "stage": "IXSCAN",
            "keyPattern": SON(plan.key),
            "indexName": plan.index,
            "isMultiKey": plan.multikey,
            "multiKeyPaths": {name: plan.multikey_paths.get(name, []) for name, _ in plan.key},
            "isUnique": bool(info.get("unique", False)),
            "isSparse": bool(info.get("sparse", False)),
            "isPartial": "partialFilterExpression" in info,
            "indexVersion": 2,
            "direction": "forward" if plan.direction > 0 else "backward",
            "indexBounds": index_bounds(plan, shape.filter),
        }
        if covered(plan, shape):
            stage = scan
        else:
            stage = {"stage": "FETCH"}
            residual = _residual(plan, shape.filter)
            if residual:
                stage["filter"] = parsed_query(residual)
            stage["inputStage"] = scan
    if shape.sort and not plan.sorted_by_index and plan.access != "EOF":
        sort: Stage = {
            "stage": "SORT",
            "sortPattern": dict(shape.sort),
            "memLimit": MAX_BLOCKING_SORT_BYTES,
        }
        if shape.limit:
            sort["limitAmount"] = shape.limit + shape.skip
        sort["type"] = "simple"
        sort["inputStage"] = stage
        stage = sort
    if shape.skip:
        stage = {"stage": "SKIP", "skipAmount": shape.skip, "inputStage": stage}
    if shape.limit and not (shape.sort and not plan.sorted_by_index):
        stage = {"stage": "LIMIT", "limitAmount": shape.limit, "inputStage": stage}
    if shape.projection:
        name = "PROJECTION_COVERED" if covered(plan, shape) else _projection_stage(shape.projection)
        stage = {"stage": name, "transformBy": dict(shape.projection), "inputStage": stage}
    return stage


def execution_stages(
    plan: Plan, shape: QueryShape, indexes: Mapping[str, Any], docs: list[Any]
) -> tuple[Stage, dict[str, int]]:
    """The plan's executionStages over ``docs`` (the collection, in natural order), and the
    totals: nReturned, totalKeysExamined, totalDocsExamined."""
    tree = plan_stages(plan, shape, indexes)
    matched = sum(1 for d in docs if _matches(shape.filter, d))
    # Without a blocking sort a scan stops once skip + limit documents came out.
    wanted = shape.skip + shape.limit if shape.limit else None
    stops_early = wanted is not None and (not shape.sort or plan.sorted_by_index)
    keys = examined = out = 0
    if plan.access == "IDHACK":
        keys = examined = out = matched
    elif plan.access == "COLLSCAN":
        ordered = docs if plan.direction > 0 else list(reversed(docs))
        for doc in ordered:
            if stops_early and wanted is not None and out >= wanted:
                break
            examined += 1
            out += _matches(shape.filter, doc)
    elif plan.access == "IXSCAN":
        bounds = index_bounds(plan, shape.filter)
        predicates = _predicates(shape.filter)
        bounded = [name for name, b in bounds.items() if b != ["[MinKey, MaxKey]"]]
        residual = _residual(plan, shape.filter)
        reads_documents = not covered(plan, shape)
        for doc in docs:
            if stops_early and wanted is not None and out >= wanted:
                break
            if all(_matches({name: predicates[name]}, doc) for name in bounded):
                keys += 1
                examined += reads_documents
                out += _matches(residual, doc)
    counts = {"IXSCAN": keys, "COLLSCAN": out, "IDHACK": out, "FETCH": out, "EOF": 0}
    chain: list[Stage] = []
    stage: Any = tree
    while isinstance(stage, dict):
        chain.append(stage)
        stage = stage.get("inputStage")
    returned = 0
    for stage in reversed(chain):
        name = stage["stage"]
        if name in counts:
            returned = counts[name]
        elif name == "SORT" and shape.limit:
            returned = min(returned, shape.skip + shape.limit)
        elif name == "SKIP":
            returned = max(0, returned - shape.skip)
        elif name == "LIMIT":
            returned = min(returned, shape.limit)
        _annotate(stage, returned, keys, examined)
    return tree, {
        "nReturned": returned,
        "totalKeysExamined": keys,
        "totalDocsExamined": examined,
    }


def _annotate(stage: Stage, returned: int, keys: int, examined: int) -> None:
    """A stage's counters, after its plan fields (as explain prints them)."""
    name = stage["stage"]
    work = examined if name in ("COLLSCAN", "FETCH", "IDHACK") else returned
    if name == "IXSCAN":
        work = keys
    stats: dict[str, Any] = {
        "nReturned": returned,
        "executionTimeMillisEstimate": 0,
        "works": work + 1,
        "advanced": returned,
        "needTime": max(0, work - returned),
        "needYield": 0,
        "saveState": 0,
        "restoreState": 0,
        "isEOF": 1,
    }
    if name in ("COLLSCAN", "IDHACK", "FETCH"):
        stats["docsExamined"] = examined
    if name in ("IXSCAN", "IDHACK"):
        stats["keysExamined"] = keys
    if name == "IXSCAN":
        stats.update(seeks=1, dupsTested=0, dupsDropped=0)
    child = stage.pop("inputStage", None)
    for key, value in stats.items():
        stage.setdefault(key, value)
    if child is not None:
        stage["inputStage"] = child
