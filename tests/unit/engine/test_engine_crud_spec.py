"""The engine against a MongoDB server's answers: the official CRUD spec files
(``crud/tests/unified``) record, for each test, the documents a server held before, the
operations, what the server returned and what it held after. Each test whose
operations the engine's first phase covers is replayed on an engine collection and
must give the same results and the same collection contents (document order and field
order included).

Selection, by what a test does (never by name): every operation is a collection's
``find``, ``countDocuments``, ``insertOne``, ``insertMany``, ``updateOne``,
``updateMany``, ``replaceOne``, ``deleteOne``, ``deleteMany``, ``findOneAndUpdate``,
``findOneAndReplace``, ``findOneAndDelete`` or ``bulkWrite`` of those, or an
``aggregate`` (its pipeline run by the engine's stages, ``$out`` and ``$merge`` through
a writer over the engine's collections, with ``collation``, ``let`` and
``allowDiskUse``) whose pipeline and ``let`` use only stages the engine runs and
expression operators the expression package evaluates; no operation expects an error,
passes ``hint`` or a pipeline update, and no expected value uses a unified-format
operator other than ``$$unsetOrMatches`` and ``$$type``. Needs MONGOCORE_SPEC_TESTS
(like every spec runner).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from bson import json_util

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, parse_collation
from mongocore.sim.engine import crud
from mongocore.sim.engine.expressions import OPERATORS, ExpressionContext, Scope, bind_let
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.stages import ENGINE, STAGES, PipelineContext, parse_pipeline
from mongocore.sim.engine.store import Collection
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import key

pytestmark = pytest.mark.spec

_SIMPLE = {
    "find", "countDocuments", "insertOne", "insertMany", "updateOne", "updateMany",
    "replaceOne", "deleteOne", "deleteMany", "findOneAndUpdate", "findOneAndReplace",
    "findOneAndDelete",
}  # fmt: skip
_ARGUMENTS = {
    "filter", "update", "replacement", "sort", "projection", "skip", "limit", "upsert",
    "arrayFilters", "returnDocument", "document", "documents", "batchSize", "comment",
    "requests", "ordered", "session",
}  # fmt: skip
_AGGREGATE_ARGUMENTS = {
    "pipeline", "batchSize", "comment", "collation", "let", "allowDiskUse", "session",
}  # fmt: skip
_BULK_MODELS = {"insertOne", "updateOne", "updateMany", "replaceOne", "deleteOne", "deleteMany"}


def _spec_dir() -> Path | None:
    root = os.environ.get("MONGOCORE_SPEC_TESTS")
    if not root:
        return None
    path = Path(root) / "crud" / "tests" / "unified"
    return path if path.is_dir() else None


_CHECKED_OPERATORS = ("$$unsetOrMatches", "$$type")


def _uses_special(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(
            (str(k).startswith("$$") and k not in _CHECKED_OPERATORS) or _uses_special(v)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_uses_special(v) for v in value)
    return False


def _operators_used(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if str(k).startswith("$"):
                out.add(str(k))
            _operators_used(v, out)
    elif isinstance(value, list):
        for v in value:
            _operators_used(v, out)
    return out


def _aggregate_covered(arguments: Mapping[str, Any]) -> bool:
    if not set(arguments) <= _AGGREGATE_ARGUMENTS:
        return False
    pipeline = arguments.get("pipeline")
    if not isinstance(pipeline, list):
        return False
    for stage in pipeline:
        ((name, _),) = stage.items()
        if name not in STAGES or STAGES[name].owner != ENGINE:
            return False
    # Query operators (in $match) are the matcher's; expression operators must be ones
    # the expression package evaluates.
    used = _operators_used([[s for s in stage.values()] for stage in pipeline], set())
    used |= _operators_used(arguments.get("let", {}), set())
    query = {"$eq", "$gt", "$gte", "$lt", "$lte", "$ne", "$in", "$nin", "$and", "$or", "$not",
             "$nor", "$exists", "$type", "$expr", "$regex", "$options", "$all", "$size",
             "$elemMatch", "$mod"}  # fmt: skip
    return all(op in OPERATORS or op in query or op in STAGES for op in used)


def _operation_covered(operation: Mapping[str, Any]) -> bool:
    name = operation["name"]
    arguments = operation.get("arguments", {})
    if "expectError" in operation or _uses_special(operation.get("expectResult")):
        return False
    if name == "aggregate":
        return _aggregate_covered(arguments)
    if not set(arguments) <= _ARGUMENTS or isinstance(arguments.get("update"), list):
        return False
    if name == "bulkWrite":
        for request in arguments.get("requests", []):
            ((model, spec),) = request.items()
            if model not in _BULK_MODELS or not set(spec) <= _ARGUMENTS:
                return False
            if isinstance(spec.get("update"), list):
                return False
        return True
    return name in _SIMPLE


def _cases() -> Iterator[Any]:
    directory = _spec_dir()
    if directory is None:
        return
    for path in sorted(directory.glob("*.json")):
        data = json_util.loads(path.read_text())
        collections = {
            e["collection"]["id"]: e["collection"]["collectionName"]
            for e in data.get("createEntities", [])
            if "collection" in e
        }
        for test in data["tests"]:
            operations = test["operations"]
            if all(o.get("object") in collections and _operation_covered(o) for o in operations):
                yield pytest.param(
                    data, test, collections, id=f"{path.stem}: {test['description']}"
                )


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping) and set(expected) == {"$$unsetOrMatches"}:
        return actual is None or _same(actual, expected["$$unsetOrMatches"])
    if isinstance(expected, Mapping) and set(expected) == {"$$type"}:
        wanted = expected["$$type"]
        names = wanted if isinstance(wanted, list) else [wanted]
        return type_name(actual) in names
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and list(actual) == list(expected)
            and all(_same(actual[k], v) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_same(a, e) for a, e in zip(actual, expected))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    return bool(actual == expected)


def _root_matches(actual: Any, expected: Mapping[str, Any]) -> bool:
    # A root-level document of a result may carry fields the test does not name.
    return isinstance(actual, Mapping) and all(_same(actual.get(k), v) for k, v in expected.items())


class _EngineAccess:
    """The command layer's part for the stages, over the runner's engine collections:
    the collection resolver of $lookup/$unionWith and the writer of $out/$merge."""

    def __init__(self, runner: _Runner) -> None:
        self.runner = runner

    def documents(self, db: str, coll: str) -> list[Document]:
        return [doc for _, doc in self.runner.collection(coll).scan()]

    def unique_key_fields(self, db: str, coll: str) -> list[tuple[str, ...]]:
        return [
            tuple(name for name, _ in index.spec.key)
            for index in self.runner.collection(coll).indexes.values()
            if index.spec.unique and index.spec.partial_filter is None
        ]

    def find_one(
        self, db: str, coll: str, query: Mapping[str, Any], collation: Collation | None
    ) -> Document | None:
        found = crud.find(self.runner.collection(coll), dict(query), limit=1)
        return found[0] if found else None

    def insert(self, db: str, coll: str, doc: Document) -> None:
        crud.insert(self.runner.collection(coll), doc, self.runner.stamps())

    def replace(self, db: str, coll: str, old: Document, new: Document) -> None:
        target = self.runner.collection(coll)
        hit = target.get(old["_id"])
        assert hit is not None
        target.replace(hit[0], new, self.runner.stamps())

    def replace_collection(self, db: str, coll: str, docs: list[Document]) -> None:
        target = self.runner.collection(coll)
        for rid, _ in list(target.scan()):
            target.delete(rid, self.runner.stamps())
        for doc in docs:
            crud.insert(target, doc, self.runner.stamps())


class _Runner:
    def __init__(self) -> None:
        self.collections: dict[str, Collection] = {}
        self.stamps = itertools.count(1).__next__

    def collection(self, name: str) -> Collection:
        if name not in self.collections:
            self.collections[name] = Collection(f"db.{name}")
        return self.collections[name]

    def write(self, coll: Collection, model: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        if model == "insertOne":
            stored = crud.insert(coll, spec["document"], self.stamps())
            return {"insertedCount": 1, "insertedId": stored["_id"]}
        if model in ("deleteOne", "deleteMany"):
            n = crud.delete(
                coll, spec["filter"], self.stamps, limit=1 if model == "deleteOne" else 0
            )
            return {"deletedCount": n}
        u = spec.get("update", spec.get("replacement"))
        result = crud.update(
            coll,
            spec["filter"],
            u,
            self.stamps,
            multi=model == "updateMany",
            upsert=bool(spec.get("upsert", False)),
            array_filters=spec.get("arrayFilters"),
            sort=spec.get("sort"),
        )
        out: dict[str, Any] = {
            "matchedCount": result.matched,
            "modifiedCount": result.modified,
            "upsertedCount": 1 if result.upserted else 0,
        }
        if result.upserted:
            out["upsertedId"] = result.upserted_id
        return out

    def aggregate(self, coll: Collection, arguments: Mapping[str, Any]) -> list[Document]:
        collation = parse_collation(arguments["collation"]) if "collation" in arguments else None
        variables: dict[str, Any] = {}
        if "let" in arguments:
            variables = bind_let(arguments["let"], Scope(ExpressionContext(collation)))
        access = _EngineAccess(self)
        context = PipelineContext(
            db="crud-tests",
            coll=coll.namespace.partition(".")[2],
            collation=collation,
            variables=variables,
            allow_disk_use=arguments.get("allowDiskUse"),
            resolver=access,
            writer=access,
        )
        pipeline = parse_pipeline(arguments["pipeline"], context)
        return list(pipeline.run(doc for _, doc in coll.scan()))

    def run(self, coll: Collection, name: str, arguments: Mapping[str, Any]) -> Any:
        if name == "aggregate":
            return self.aggregate(coll, arguments)
        if name == "find":
            return crud.find(
                coll,
                arguments.get("filter", {}),
                sort=arguments.get("sort"),
                projection=arguments.get("projection"),
                skip=arguments.get("skip", 0),
                limit=arguments.get("limit", 0),
            )
        if name == "countDocuments":
            return crud.count(
                coll,
                arguments["filter"],
                skip=arguments.get("skip", 0),
                limit=arguments.get("limit", 0),
            )
        if name == "insertMany":
            ids = {
                str(i): crud.insert(coll, d, self.stamps())["_id"]
                for i, d in enumerate(arguments["documents"])
            }
            return {"insertedIds": ids}
        if name.startswith("findOneAnd"):
            value, _ = crud.find_and_modify(
                coll,
                arguments["filter"],
                self.stamps,
                update=arguments.get("update", arguments.get("replacement")),
                remove=name == "findOneAndDelete",
                new=arguments.get("returnDocument") == "After",
                upsert=bool(arguments.get("upsert", False)),
                sort=arguments.get("sort"),
                fields=arguments.get("projection"),
                array_filters=arguments.get("arrayFilters"),
            )
            return value
        if name == "bulkWrite":
            totals: dict[str, Any] = {
                "deletedCount": 0, "insertedCount": 0, "matchedCount": 0, "modifiedCount": 0,
                "upsertedCount": 0, "insertedIds": {}, "upsertedIds": {},
            }  # fmt: skip
            for index, request in enumerate(arguments["requests"]):
                ((model, spec),) = request.items()
                result = self.write(coll, model, spec)
                for field in (
                    "deletedCount",
                    "insertedCount",
                    "matchedCount",
                    "modifiedCount",
                    "upsertedCount",
                ):
                    totals[field] += result.get(field, 0)
                if "insertedId" in result:
                    totals["insertedIds"][str(index)] = result["insertedId"]
                if "upsertedId" in result:
                    totals["upsertedIds"][str(index)] = result["upsertedId"]
            return totals
        return self.write(coll, name, arguments)


@pytest.mark.parametrize(("data", "test", "collections"), list(_cases()))
def test_engine_answers_as_the_server(
    data: Mapping[str, Any], test: Mapping[str, Any], collections: Mapping[str, str]
) -> None:
    runner = _Runner()
    for initial in data.get("initialData", []):
        coll = runner.collection(initial["collectionName"])
        for doc in initial["documents"]:
            crud.insert(coll, doc, runner.stamps())
    for operation in test["operations"]:
        coll = runner.collection(collections[operation["object"]])
        try:
            actual = runner.run(coll, operation["name"], operation.get("arguments", {}))
        except CommandError as exc:  # pragma: no cover - reported as the failure it is
            pytest.fail(f"{operation['name']} raised {exc.code}: {exc}")
        if "expectResult" not in operation:
            continue
        expected = operation["expectResult"]
        if isinstance(expected, Mapping) and set(expected) == {"$$unsetOrMatches"}:
            expected = expected["$$unsetOrMatches"]
        name = operation["name"]
        if isinstance(expected, Mapping) and name != "find" and not name.startswith("findOneAnd"):
            assert _root_matches(actual, expected), (actual, expected)
        else:
            assert _same(actual, expected), (actual, expected)
    for outcome in test.get("outcome", []):
        coll = runner.collection(outcome["collectionName"])
        held = sorted((doc for _, doc in coll.scan()), key=lambda d: crud_key(d["_id"]))
        assert _same(held, outcome["documents"]), (held, outcome["documents"])


def crud_key(value: Any) -> Any:
    return key(value)


def test_the_selection_covers_the_suite() -> None:
    if _spec_dir() is None:
        pytest.skip("MONGOCORE_SPEC_TESTS is not set")
    # A selection rule that stopped matching would leave this runner checking nothing.
    assert len(list(_cases())) >= 100
