"""The simulator's engine (``mongocore.sim.engine``) alone, in one process: CPU time per
operation on a collection of ``--docs`` documents (``time.process_time``, the best of
``--rounds`` rounds).

Operations: ``find_one`` by ``_id``, ``insert_one``, a ``find`` of 100 documents
(``limit 100``, the documents materialized), an ``update_one`` by ``_id`` with ``$inc``,
a ``find`` with a range filter over the whole collection, and a sorted ``find``.
Expressions: the aggregation expressions of ``sim/engine/expressions`` (compiled once,
evaluated per document). Pipelines: the stages of ``sim/engine/stages`` (parsed once
per run, as per command); ``$lookup`` reads a second collection of ``--docs`` documents.

The same work against mongomock, which the simulator ran on before its engine, was timed
by this script up to commit a1a09f7 (``git show a1a09f7:benchmarks/bench_engine.py``,
run with mongomock 4.3.0 installed); docs/simulator.md, "The engine", gives those ratios.

Run: python benchmarks/bench_engine.py [--docs 1000] [--count 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import time
from typing import Any, Callable

from mongocore.sim.engine import crud
from mongocore.sim.engine.expressions import ExpressionContext, compile_expression
from mongocore.sim.engine.stages import PipelineContext, parse_pipeline
from mongocore.sim.engine.store import Collection

#: The expressions timed, with their names.
EXPRESSIONS: list[tuple[str, Any]] = [
    ("field path", "$sub.x"),
    ("$add", {"$add": ["$count", "$n", 1]}),
    (
        "$cond",
        {"$cond": [{"$gt": ["$n", 500]}, {"$multiply": ["$n", 2]}, {"$subtract": ["$n", 1]}]},
    ),
    ("$and of $eq/$lte", {"$and": [{"$eq": ["$name", "n5"]}, {"$lte": ["$n", 10]}]}),
    ("$sum of an array", {"$sum": "$arr"}),
    ("$ifNull", {"$ifNull": ["$missing", "$n"]}),
    ("$concat/$toUpper", {"$concat": [{"$toUpper": "$name"}, "-", "$name"]}),
    ("$dateToString", {"$dateToString": {"format": "%Y-%m-%d %H:%M", "date": "$at"}}),
    ("$year", {"$year": "$at"}),
    ("$map of an array", {"$map": {"input": "$arr", "in": {"$multiply": ["$$this", 2]}}}),
    ("$filter of an array", {"$filter": {"input": "$arr", "cond": {"$gt": ["$$this", 1]}}}),
]

#: The pipelines timed, with their names.
PIPELINES: list[tuple[str, list[Any]]] = [
    ("$match+$group", [{"$match": {"n": {"$gte": 10}}},
                       {"$group": {"_id": "$k", "total": {"$sum": "$n"}, "avg": {"$avg": "$n"}}}]),
    ("$sort+$limit", [{"$sort": {"name": -1}}, {"$limit": 10}]),
    ("$project", [{"$project": {"name": 1, "twice": {"$multiply": ["$n", 2]}}}]),
    ("$addFields", [{"$addFields": {"sub.y": "$n", "flag": True}}]),
    ("$unwind+$group", [{"$unwind": "$arr"}, {"$group": {"_id": "$arr", "n": {"$sum": 1}}}]),
    ("$bucket", [{"$bucket": {"groupBy": "$n", "boundaries": [0, 100, 500, 10**9]}}]),
    ("$lookup equality", [{"$lookup": {"from": "other", "localField": "k",
                                       "foreignField": "k", "as": "o"}}, {"$limit": 50}]),
    ("$facet", [{"$facet": {"a": [{"$count": "n"}],
                            "b": [{"$group": {"_id": "$k", "n": {"$sum": 1}}}]}}]),
]  # fmt: skip


class _Resolver:
    def __init__(self, collections: dict[str, list[dict[str, Any]]]) -> None:
        self.collections = collections

    def documents(self, db: str, coll: str) -> list[dict[str, Any]]:
        return self.collections.get(coll, [])


def best(operation: Callable[[int], object], count: int, rounds: int) -> float:
    """Microseconds of CPU per call, the best round."""
    times = []
    for round_number in range(rounds):
        started = time.process_time()
        for n in range(count):
            operation(n + round_number * count)
        times.append((time.process_time() - started) / count * 1e6)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    docs = args.docs

    engine = Collection("bench.docs")
    stamps = itertools.count(1).__next__
    for n in range(docs):
        engine.insert({"_id": n, "count": 0, "name": f"n{n}"}, stamps())
    engine_inserts = Collection("bench.inserts")

    heavy = max(args.count // 20, 5)
    work: list[tuple[str, int, Callable[[int], Any]]] = [
        (
            "find_one by _id",
            args.count,
            lambda n: crud.find(engine, {"_id": n % docs}, limit=1),
        ),
        (
            "insert_one",
            args.count,
            lambda n: crud.insert(engine_inserts, {"_id": n, "count": 0}, stamps()),
        ),
        (
            "find 100",
            heavy,
            lambda n: crud.find(engine, {}, limit=100),
        ),
        (
            "update_one by _id",
            args.count,
            lambda n: crud.update(engine, {"_id": n % docs}, {"$inc": {"count": 1}}, stamps),
        ),
        (
            "find range (scan)",
            heavy,
            lambda n: crud.find(engine, {"count": {"$gte": 0}, "name": {"$ne": "x"}}),
        ),
        (
            "find sorted",
            heavy,
            lambda n: crud.find(engine, {}, sort={"name": -1}, limit=10),
        ),
    ]
    print(f"{docs} documents; CPU microseconds per operation, best of {args.rounds} rounds")
    print(f"{'operation':20} {'engine':>10}")
    for name, count, with_engine in work:
        print(f"{name:20} {best(with_engine, count, args.rounds):10.1f}")

    rows = [
        {
            "_id": n,
            "count": 0,
            "n": n,
            "name": f"n{n}",
            "arr": [n, 1, 2],
            "sub": {"x": n},
            "at": datetime.datetime(2024, 1, 1) + datetime.timedelta(minutes=n),
        }
        for n in range(docs)
    ]
    print(f"expressions over {docs} documents; CPU microseconds per document")
    for name, spec in EXPRESSIONS:
        compiled = compile_expression(spec, ExpressionContext())

        def with_engine(n: int, compiled: Any = compiled) -> Any:
            return [compiled.evaluate(row) for row in rows]

        print(f"{name:20} {best(with_engine, 1, args.rounds) / docs:10.2f}")

    rows = [
        {"_id": n, "n": n, "k": n % 10, "name": f"n{n}", "arr": [n % 3, n % 5], "sub": {"x": n}}
        for n in range(docs)
    ]
    other = [{"_id": n, "k": n % 10, "v": n} for n in range(docs)]
    engine_rows = Collection("pipelines.rows")
    for row in rows:
        engine_rows.insert(dict(row), stamps())
    resolver = _Resolver({"other": other})
    light = max(args.count // 200, 3)
    print(f"pipelines over {docs} documents; CPU microseconds per run")
    for name, pipeline in PIPELINES:

        def with_engine(n: int, pipeline: Any = pipeline) -> Any:
            context = PipelineContext(db="pipelines", coll="rows", resolver=resolver)
            compiled = parse_pipeline(pipeline, context)
            return list(compiled.run(doc for _, doc in engine_rows.scan()))

        print(f"{name:20} {best(with_engine, light, args.rounds):10.0f}")


if __name__ == "__main__":
    main()
