"""The engine's aggregation stages against the MongoDB manual's examples and a 7.0
server's parse-time errors: each case is a pipeline, its input documents and the
output the manual shows (field order included: ``_id`` first out of ``$group``,
``$bucket`` and ``$bucketAuto``, computed fields after the kept ones in ``$project``,
existing fields in place in ``$addFields``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any, Optional

import pytest
from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, parse_collation
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.stages import (
    STAGES,
    PipelineContext,
    Stage,
    parse_pipeline,
)


class _Collections:
    """A resolver and writer over plain lists, as the command layer provides them."""

    def __init__(self, collections: Optional[dict[str, list[Document]]] = None) -> None:
        self.collections = collections or {}
        self.unique: dict[str, list[tuple[str, ...]]] = {}

    def documents(self, db: str, coll: str) -> Iterable[Document]:
        return list(self.collections.get(coll, []))

    def unique_key_fields(self, db: str, coll: str) -> list[tuple[str, ...]]:
        return self.unique.get(coll, [])

    def find_one(
        self, db: str, coll: str, query: Mapping[str, Any], collation: Optional[Collation]
    ) -> Optional[Document]:
        for doc in self.collections.get(coll, []):
            if all(doc.get(k) == v["$eq"] for k, v in query.items()):
                return doc
        return None

    def insert(self, db: str, coll: str, doc: Document) -> None:
        target = self.collections.setdefault(coll, [])
        if any(d["_id"] == doc["_id"] for d in target):
            raise CommandError(11000, "E11000 duplicate key error")
        target.append(doc)

    def replace(self, db: str, coll: str, old: Document, new: Document) -> None:
        target = self.collections[coll]
        target[target.index(old)] = new

    def replace_collection(self, db: str, coll: str, docs: list[Document]) -> None:
        self.collections[coll] = list(docs)


def run(
    pipeline: list[Any],
    docs: list[Document],
    collections: Optional[_Collections] = None,
    **options: Any,
) -> list[Document]:
    access = collections or _Collections()
    context = PipelineContext(db="test", coll="c", resolver=access, writer=access, **options)
    return parse_pipeline(pipeline, context)(docs)


def same(actual: Any, expected: Any) -> None:
    """Equal, with the same field order at every level and the same types."""
    assert _ordered(actual) == _ordered(expected), (actual, expected)


def _ordered(value: Any) -> Any:
    if isinstance(value, Mapping):
        return [(k, _ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return (type(value).__name__, value)


# -- the manual's examples --------------------------------------------------------------------

SALES = [
    {"_id": 1, "item": "abc", "price": 10, "quantity": 2, "date": datetime.datetime(2014, 3, 1)},
    {"_id": 2, "item": "jkl", "price": 20, "quantity": 1, "date": datetime.datetime(2014, 3, 1)},
    {"_id": 3, "item": "xyz", "price": 5, "quantity": 10, "date": datetime.datetime(2014, 3, 15)},
    {"_id": 4, "item": "xyz", "price": 5, "quantity": 20, "date": datetime.datetime(2014, 4, 4)},
    {"_id": 5, "item": "abc", "price": 10, "quantity": 10, "date": datetime.datetime(2014, 4, 4)},
]

CASES: list[tuple[str, list[Any], list[Document], list[Document]]] = [
    (
        "$group by item, _id first then the accumulators in order",
        [
            {"$group": {"_id": "$item", "total": {"$sum": {"$multiply": ["$price", "$quantity"]}},
                        "count": {"$sum": 1}}},
            {"$sort": {"_id": 1}},
        ],
        SALES,
        [
            {"_id": "abc", "total": 120, "count": 2},
            {"_id": "jkl", "total": 20, "count": 1},
            {"_id": "xyz", "total": 150, "count": 2},
        ],
    ),
    (
        "$group _id null counts everything",
        [{"$group": {"_id": None, "count": {"$count": {}}, "avg": {"$avg": "$quantity"}}}],
        SALES,
        [{"_id": None, "count": 5, "avg": 8.6}],
    ),
    (
        "$group with a compound _id leaves a missing field out",
        [{"$group": {"_id": {"i": "$item", "m": "$missing"}, "n": {"$sum": 1}}},
         {"$sort": {"_id.i": 1}}, {"$limit": 1}],
        SALES,
        [{"_id": {"i": "abc"}, "n": 2}],
    ),
    (
        "$project keeps the document's order, computed fields last",
        [{"$project": {"total": {"$multiply": ["$price", "$quantity"]}, "item": 1}},
         {"$limit": 1}],
        SALES,
        [{"_id": 1, "item": "abc", "total": 20}],
    ),
    (
        "$project exclusion",
        [{"$project": {"date": 0, "_id": 0}}, {"$limit": 1}],
        SALES,
        [{"item": "abc", "price": 10, "quantity": 2}],
    ),
    (
        "$project of embedded fields and an array of documents",
        [{"$project": {"a.b": 1, "c": "$$REMOVE"}}],
        [{"_id": 1, "a": [{"b": 1, "x": 2}, 5, {"y": 3}], "c": 1}],
        [{"_id": 1, "a": [{"b": 1}, {}]}],
    ),
    (
        "$addFields keeps fields in place and appends new ones",
        [{"$addFields": {"price": {"$add": ["$price", 1]}, "extra": True}}, {"$limit": 1}],
        SALES,
        [{"_id": 1, "item": "abc", "price": 11, "quantity": 2,
          "date": datetime.datetime(2014, 3, 1), "extra": True}],
    ),
    (
        "$set through an array of documents",
        [{"$set": {"specs.fuel": "unleaded"}}],
        [{"_id": 1, "specs": [{"doors": 4}, {"wheels": 4}]}],
        [{"_id": 1, "specs": [{"doors": 4, "fuel": "unleaded"},
                              {"wheels": 4, "fuel": "unleaded"}]}],
    ),
    (
        "$unset a list of fields",
        [{"$unset": ["price", "date"]}, {"$limit": 1}],
        SALES,
        [{"_id": 1, "item": "abc", "quantity": 2}],
    ),
    (
        "$replaceRoot and $replaceWith",
        [{"$replaceWith": "$in"}],
        [{"_id": 1, "in": {"n": 1, "m": 2}}],
        [{"n": 1, "m": 2}],
    ),
    (
        "$unwind with includeArrayIndex and preserveNullAndEmptyArrays",
        [{"$unwind": {"path": "$sizes", "includeArrayIndex": "i",
                      "preserveNullAndEmptyArrays": True}}],
        [{"_id": 1, "sizes": ["S", "M"]}, {"_id": 2, "sizes": []}, {"_id": 3, "sizes": None},
         {"_id": 4}, {"_id": 5, "sizes": "L"}],
        [{"_id": 1, "sizes": "S", "i": Int64(0)}, {"_id": 1, "sizes": "M", "i": Int64(1)},
         {"_id": 2, "i": None}, {"_id": 3, "sizes": None, "i": None}, {"_id": 4, "i": None},
         {"_id": 5, "sizes": "L", "i": None}],
    ),
    (
        "$unwind drops missing, null and empty arrays",
        [{"$unwind": "$sizes"}],
        [{"_id": 1, "sizes": ["S"]}, {"_id": 2, "sizes": []}, {"_id": 3, "sizes": None},
         {"_id": 4}],
        [{"_id": 1, "sizes": "S"}],
    ),
    (
        "$sort then $limit (top-k), ties in input order",
        [{"$sort": {"price": -1, "quantity": 1}}, {"$limit": 3}, {"$project": {"_id": 1}}],
        SALES,
        [{"_id": 2}, {"_id": 1}, {"_id": 5}],
    ),
    (
        "$skip and $count",
        [{"$skip": 2}, {"$count": "n"}],
        SALES,
        [{"n": 3}],
    ),
    (
        "$count of nothing outputs nothing",
        [{"$match": {"item": "none"}}, {"$count": "n"}],
        SALES,
        [],
    ),
    (
        "$sortByCount",
        [{"$sortByCount": "$item"}],
        SALES,
        [{"_id": "abc", "count": 2}, {"_id": "xyz", "count": 2}, {"_id": "jkl", "count": 1}],
    ),
    (
        "$bucket with default and output",
        [{"$bucket": {"groupBy": "$price", "boundaries": [0, 10, 20], "default": "Other",
                      "output": {"n": {"$sum": 1}, "items": {"$push": "$item"}}}}],
        SALES,
        [{"_id": 0, "n": 2, "items": ["xyz", "xyz"]},
         {"_id": 10, "n": 2, "items": ["abc", "abc"]},
         {"_id": "Other", "n": 1, "items": ["jkl"]}],
    ),
    (
        "$bucketAuto",
        [{"$bucketAuto": {"groupBy": "$quantity", "buckets": 2}}],
        SALES,
        # 5 documents in 2 buckets: 3 each (round(2.5)), the equal 10s kept together.
        [{"_id": {"min": 1, "max": 20}, "count": 4}, {"_id": {"min": 20, "max": 20}, "count": 1}],
    ),
    (
        "$bucketAuto with granularity R5",
        [{"$bucketAuto": {"groupBy": "$price", "buckets": 2, "granularity": "R5"}}],
        [{"price": p} for p in (1, 2, 3, 4)],
        [{"_id": {"min": 0.63, "max": 2.5}, "count": 2},
         {"_id": {"min": 2.5, "max": 6.300000000000001}, "count": 2}],
    ),
    (
        "$facet",
        [{"$facet": {"byItem": [{"$sortByCount": "$item"}, {"$limit": 1}],
                     "n": [{"$count": "n"}]}}],
        SALES,
        [{"byItem": [{"_id": "abc", "count": 2}], "n": [{"n": 5}]}],
    ),
    (
        "$redact",
        [{"$redact": {"$cond": {"if": {"$eq": ["$level", 5]}, "then": "$$PRUNE",
                                "else": "$$DESCEND"}}}],
        [{"_id": 1, "level": 1, "sub": {"level": 5, "x": 1},
          "list": [{"level": 5}, {"level": 2}, 3]}],
        [{"_id": 1, "level": 1, "list": [{"level": 2}, 3]}],
    ),
    (
        "$setWindowFields: a running total and rank per partition",
        [{"$setWindowFields": {"partitionBy": "$item", "sortBy": {"_id": 1},
                               "output": {"running": {
                                   "$sum": "$quantity",
                                   "window": {"documents": ["unbounded", "current"]}},
                                          "rank": {"$rank": {}}}}},
         {"$project": {"item": 1, "running": 1, "rank": 1}}],
        SALES,
        [{"_id": 1, "item": "abc", "running": 2, "rank": 1},
         {"_id": 5, "item": "abc", "running": 12, "rank": 2},
         {"_id": 2, "item": "jkl", "running": 1, "rank": 1},
         {"_id": 3, "item": "xyz", "running": 10, "rank": 1},
         {"_id": 4, "item": "xyz", "running": 30, "rank": 2}],
    ),
    (
        "$setWindowFields: a range window and $shift",
        [{"$setWindowFields": {"sortBy": {"t": 1},
                               "output": {"near": {"$push": "$t", "window": {"range": [-1, 1]}},
                                          "next": {"$shift": {"output": "$t", "by": 1,
                                                              "default": "none"}}}}}],
        [{"t": 1}, {"t": 2}, {"t": 4}],
        [{"t": 1, "near": [1, 2], "next": 2}, {"t": 2, "near": [1, 2], "next": 4},
         {"t": 4, "near": [4], "next": "none"}],
    ),
    (
        "$fill by value and by linear interpolation",
        [{"$fill": {"sortBy": {"t": 1}, "output": {"v": {"method": "linear"},
                                                   "w": {"value": 0}}}}],
        [{"t": 1, "v": 10, "w": 1}, {"t": 2, "v": None}, {"t": 3, "v": 30, "w": None}],
        [{"t": 1, "v": 10, "w": 1}, {"t": 2, "v": 20.0, "w": 0}, {"t": 3, "v": 30, "w": 0}],
    ),
    (
        "$densify with bounds",
        [{"$densify": {"field": "t", "range": {"step": 2, "bounds": [0, 7]}}}],
        [{"t": 2, "x": 1}, {"t": 3}],
        [{"t": 0}, {"t": 2, "x": 1}, {"t": 3}, {"t": 4}, {"t": 6}],
    ),
    (
        "$documents",
        [{"$documents": [{"a": 1}, {"a": {"$add": [1, 1]}}]}],
        [],
        [{"a": 1}, {"a": 2}],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("pipeline", "docs", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_manual_examples(pipeline: list[Any], docs: list[Document], expected: list[Any]) -> None:
    same(run(pipeline, docs), expected)


def test_stages_never_change_their_input() -> None:
    docs = [{"_id": 1, "a": {"b": [1, 2]}, "c": 1}]
    pipelines: list[list[Any]] = [
        [{"$set": {"a.x": 1}}], [{"$unwind": "$a.b"}], [{"$project": {"a.b": 1}}],
        [{"$unset": "a.b"}], [{"$setWindowFields": {"output": {"a.n": {"$sum": 1}}}}],
    ]  # fmt: skip
    for pipeline in pipelines:
        run(pipeline, docs)
    same(docs, [{"_id": 1, "a": {"b": [1, 2]}, "c": 1}])


def test_lookup_equality_and_pipeline_forms() -> None:
    collections = _Collections({
        "inventory": [{"_id": 1, "sku": "almonds", "n": 120}, {"_id": 2, "sku": "bread"},
                      {"_id": 3, "sku": None}, {"_id": 4}],
    })  # fmt: skip
    orders = [{"_id": 1, "item": "almonds"}, {"_id": 2, "item": ["bread", "almonds"]}, {"_id": 3}]
    out = run(
        [{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku",
                      "as": "stock"}},
         {"$project": {"ids": "$stock._id"}}],
        orders, collections,
    )  # fmt: skip
    same(out, [{"_id": 1, "ids": [1]}, {"_id": 2, "ids": [1, 2]}, {"_id": 3, "ids": [3, 4]}])
    out = run(
        [{"$lookup": {"from": "inventory", "let": {"want": "$item"}, "as": "stock",
                      "pipeline": [{"$match": {"$expr": {"$eq": ["$sku", "$$want"]}}},
                                   {"$project": {"_id": 0, "n": 1}}]}}],
        orders[:1], collections,
    )  # fmt: skip
    same(out, [{"_id": 1, "item": "almonds", "stock": [{"n": 120}]}])


def test_lookup_under_a_collation() -> None:
    collections = _Collections({"other": [{"_id": 1, "k": "ABC"}]})
    out = run(
        [{"$lookup": {"from": "other", "localField": "k", "foreignField": "k", "as": "m"}}],
        [{"_id": 1, "k": "abc"}], collections,
        collation=parse_collation({"locale": "en", "strength": 2}),
    )  # fmt: skip
    same(out, [{"_id": 1, "k": "abc", "m": [{"_id": 1, "k": "ABC"}]}])


def test_graph_lookup_follows_the_chain_with_depths() -> None:
    collections = _Collections({"employees": [
        {"_id": 1, "name": "Dev"}, {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
        {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
        {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
    ]})  # fmt: skip
    out = run(
        [{"$graphLookup": {"from": "employees", "startWith": "$reportsTo",
                           "connectFromField": "reportsTo", "connectToField": "name",
                           "as": "chain", "depthField": "d"}},
         {"$project": {"names": "$chain.name", "depths": "$chain.d"}}],
        [{"_id": 3, "name": "Ron", "reportsTo": "Eliot"}], collections,
    )  # fmt: skip
    same(out, [{"_id": 3, "names": ["Eliot", "Dev"], "depths": [Int64(0), Int64(1)]}])


def test_union_with() -> None:
    collections = _Collections({"other": [{"_id": 9, "x": 1}]})
    out = run([{"$unionWith": {"coll": "other", "pipeline": [{"$project": {"x": 0}}]}}],
              [{"_id": 1}], collections)  # fmt: skip
    same(out, [{"_id": 1}, {"_id": 9}])


def test_out_replaces_the_target() -> None:
    collections = _Collections({"target": [{"_id": 5}]})
    out = run([{"$match": {"a": 1}}, {"$out": "target"}], [{"_id": 1, "a": 1}, {"a": 1}],
              collections)  # fmt: skip
    assert out == []
    target = collections.collections["target"]
    assert target[0]["_id"] == 1 and len(target) == 2
    assert list(target[1]) == ["_id", "a"]  # an _id added first


def test_merge_modes() -> None:
    collections = _Collections({"t": [{"_id": 1, "a": 1, "b": 1}]})
    run([{"$merge": {"into": "t"}}], [{"_id": 1, "b": 2, "c": 3}, {"_id": 2}], collections)
    same(collections.collections["t"], [{"_id": 1, "a": 1, "b": 2, "c": 3}, {"_id": 2}])
    run([{"$merge": {"into": "t", "whenMatched": "replace"}}], [{"_id": 1, "z": 0}], collections)
    same(collections.collections["t"][0], {"_id": 1, "z": 0})
    run([{"$merge": {"into": "t", "whenMatched": [{"$set": {"z": {"$add": ["$z", "$$new.by"]}}}],
                     "whenNotMatched": "discard"}}],
        [{"_id": 1, "by": 5}, {"_id": 7, "by": 1}], collections)  # fmt: skip
    same(collections.collections["t"], [{"_id": 1, "z": 5}, {"_id": 2}])
    with pytest.raises(CommandError) as failed:
        run([{"$merge": {"into": "t", "whenMatched": "fail"}}], [{"_id": 2}], collections)
    assert failed.value.code == 11000
    with pytest.raises(CommandError) as failed:
        run([{"$merge": {"into": "t", "whenNotMatched": "fail"}}], [{"_id": 3}], collections)
    assert failed.value.code == 13113
    with pytest.raises(CommandError) as failed:
        run([{"$merge": {"into": "t", "on": "k"}}], [{"_id": 3}], collections)
    assert failed.value.code == 51183


def test_memory_limit_without_allow_disk_use() -> None:
    docs = [{"_id": n, "pad": "x" * 1000} for n in range(50)]
    with pytest.raises(CommandError) as failed:
        run([{"$sort": {"pad": 1}}], docs, allow_disk_use=False, memory_limit=10_000)
    assert failed.value.code == 292
    with pytest.raises(CommandError) as failed:
        run([{"$group": {"_id": "$_id", "p": {"$push": "$pad"}}}], docs,
            allow_disk_use=False, memory_limit=10_000)  # fmt: skip
    assert failed.value.code == 292
    # 7.0 spills by default (allowDiskUseByDefault), and a top-k sort holds only k.
    assert len(run([{"$sort": {"pad": 1}}], docs, memory_limit=10_000)) == 50
    assert len(run([{"$sort": {"pad": 1}}, {"$limit": 2}], docs, allow_disk_use=False,
                   memory_limit=10_000)) == 2  # fmt: skip


def test_sample_takes_distinct_documents() -> None:
    docs = [{"_id": n} for n in range(20)]
    out = run([{"$sample": {"size": 5}}], docs)
    assert len({doc["_id"] for doc in out}) == 5
    assert len(run([{"$sample": {"size": 50}}], docs)) == 20


def test_command_layer_providers() -> None:
    class Sessions(Stage):
        def run(self, docs: Any) -> Any:
            yield {"_id": {"id": 1}, "lastUse": 0}

    out = parse_pipeline(
        [{"$listLocalSessions": {}}, {"$project": {"_id": 0, "lastUse": 1}}],
        PipelineContext(providers={"$listLocalSessions": lambda spec, context: Sessions()}),
    )([])
    same(out, [{"lastUse": 0}])


# -- parse-time errors ------------------------------------------------------------------------

ERRORS: list[tuple[list[Any], int, str]] = [
    ([{"$foo": 1}], 40324, "Unrecognized pipeline stage name: '$foo'"),
    ([{"$match": {}, "$limit": 1}], 40323,
     "A pipeline stage specification object must contain exactly one field."),
    ([1], 14, "Each element of the 'pipeline' array must be an object"),
    ([{"$out": "x"}, {"$match": {}}], 40601, "$out can only be the final stage in the pipeline"),
    ([{"$match": {}}, {"$merge": "x"}, {"$limit": 1}], 40601,
     "$merge can only be the final stage in the pipeline"),
    ([{"$match": {}}, {"$documents": []}], 40602,
     "$documents is only valid as the first stage in a pipeline."),
    ([{"$facet": {"a": [{"$out": "x"}]}}], 40600,
     "$out is not allowed to be used within a $facet stage"),
    ([{"$lookup": {"from": "x", "pipeline": [{"$out": "y"}], "as": "a"}}], 51047,
     "$out is not allowed to be used within a $lookup stage"),
    ([{"$search": {}}], 6047401, "$search stage is only allowed on MongoDB Atlas"),
    ([{"$collStats": {}}], 238, "$collStats is not implemented by the simulator's engine"),
    ([{"$geoNear": {}}], 238, "$geoNear is not implemented by the simulator's engine"),
    ([{"$limit": 0}], 15958, "the limit must be positive"),
    ([{"$limit": -1}], 5107201,
     "invalid argument to $limit stage: Expected a non-negative number in: $limit: -1"),
    ([{"$limit": 1.5}], 5107201,
     "invalid argument to $limit stage: Expected an integer: $limit: 1.5"),
    ([{"$skip": "a"}], 5107200,
     'invalid argument to $skip stage: Expected a number in: $skip: "a"'),
    ([{"$sort": {}}], 15976, "$sort stage must have at least one sort key"),
    ([{"$sort": {"a": 2}}], 15975,
     "$sort key ordering must be 1 (for ascending) or -1 (for descending)"),
    ([{"$match": 1}], 15959, "the match filter must be an expression in an object"),
    ([{"$group": {"n": {"$sum": 1}}}], 15955, "a group specification must include an _id"),
    ([{"$group": {"_id": 1, "n": 1}}], 40234, "The field 'n' must be an accumulator object"),
    ([{"$group": {"_id": 1, "n": {"$foo": 1}}}], 15952, "unknown group operator '$foo'"),
    ([{"$project": {}}], 51272,
     "Invalid $project :: caused by :: projection specification must have at least one field"),
    ([{"$project": {"a": 1, "b": 0}}], 31254,
     "Invalid $project :: caused by :: Cannot do exclusion on field b in inclusion projection"),
    ([{"$project": {"a": 0, "b": 1}}], 31253,
     "Invalid $project :: caused by :: Cannot do inclusion on field b in exclusion projection"),
    ([{"$project": {"a": 0, "b": "$x"}}], 31252,
     "Invalid $project :: caused by :: Cannot use expression other than $meta in exclusion"
     " projection"),
    ([{"$project": {"a": 1, "a.b": 1}}], 31250,
     "Invalid $project :: caused by :: Path collision at a.b remaining portion b"),
    ([{"$unwind": "a"}], 28818, "path option to $unwind stage should be prefixed with a '$': a"),
    ([{"$unwind": {"path": "$a", "x": 1}}], 28811, "unrecognized option to $unwind stage: x"),
    ([{"$count": "$a"}], 40158, "the count field cannot be a $-prefixed path"),
    ([{"$bucket": {"groupBy": "$a", "boundaries": [1]}}], 40192,
     "The $bucket 'boundaries' field must have at least 2 values, but found 1 value(s)."),
    ([{"$bucket": {"groupBy": "$a", "boundaries": [2, 1]}}], 40194,
     "The 'boundaries' option to $bucket must be sorted, but elements 0 and 1 are not in"
     " ascending order (2 is not less than 1)."),
    ([{"$bucketAuto": {"groupBy": "$a", "buckets": 0}}], 40243,
     "The $bucketAuto 'buckets' field must be greater than 0, but found: 0"),
    ([{"$bucketAuto": {"groupBy": "$a", "buckets": 1, "granularity": "R3"}}], 40257,
     "Rounding granularity not recognized: R3"),
    ([{"$sample": {"size": -1}}], 28747, "size argument to $sample must not be negative"),
    ([{"$replaceRoot": {}}], 40414,
     "BSON field '$replaceRoot.newRoot' is missing but a required field"),
    ([{"$merge": {"into": "t", "whenMatched": "keepExisting", "whenNotMatched": "fail"}}], 51181,
     "Combination of $merge modes 'whenMatched: keepExisting' and 'whenNotMatched: fail' is not"
     " supported"),
    ([{"$out": "system.x"}], 17385, "Can't $out to special collection: system.x"),
    ([{"$setWindowFields": {"output": {"r": {"$rank": {}}}}}], 9, "'$rank' requires a sortBy"),
    ([{"$setWindowFields": {"output": {"r": {"$mergeObjects": "$a"}}}}], 9,
     "Unrecognized window function, $mergeObjects"),
]  # fmt: skip


@pytest.mark.parametrize(("pipeline", "code", "message"), ERRORS,
                         ids=[f"{e[1]}-{i}" for i, e in enumerate(ERRORS)])  # fmt: skip
def test_parse_errors(pipeline: list[Any], code: int, message: str) -> None:
    with pytest.raises(CommandError) as failed:
        parse_pipeline(pipeline, PipelineContext())
    assert (failed.value.code, failed.value.errmsg) == (code, message)


def test_update_pipelines_allow_only_their_stages() -> None:
    context = PipelineContext(within="update")
    parse_pipeline([{"$set": {"a": 1}}, {"$unset": "b"}, {"$replaceWith": "$$ROOT"}], context)
    with pytest.raises(CommandError) as failed:
        parse_pipeline([{"$match": {}}], context)
    assert (failed.value.code, failed.value.errmsg) == (
        72,
        "$match is not allowed to be used within an update",
    )


def test_run_time_errors() -> None:
    with pytest.raises(CommandError) as failed:
        run([{"$replaceWith": "$a"}], [{"_id": 1, "a": 1}])
    assert failed.value.code == 40228
    with pytest.raises(CommandError) as failed:
        run([{"$bucket": {"groupBy": "$a", "boundaries": [0, 1]}}], [{"a": 5}])
    assert failed.value.code == 40066


def test_every_7_0_stage_is_registered() -> None:
    # Names a 7.0 server's REGISTER_DOCUMENT_SOURCE table has for users.
    public = {
        "$addFields", "$bucket", "$bucketAuto", "$changeStream", "$collStats", "$count",
        "$currentOp", "$densify", "$documents", "$facet", "$fill", "$geoNear", "$graphLookup",
        "$group", "$indexStats", "$limit", "$listLocalSessions", "$listSessions", "$lookup",
        "$match", "$merge", "$out", "$planCacheStats", "$project", "$redact", "$replaceRoot",
        "$replaceWith", "$sample", "$search", "$searchMeta", "$set", "$setWindowFields",
        "$skip", "$sort", "$sortByCount", "$unionWith", "$unset", "$unwind",
    }  # fmt: skip
    assert public <= set(STAGES)
    engine = {name for name, info in STAGES.items() if info.owner == "engine"}
    assert all(STAGES[name].parser is not None for name in engine)
