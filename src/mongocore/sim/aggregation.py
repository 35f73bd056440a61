"""Aggregation in the command layer: the engine's pipeline (sim/engine/stages/) over the
store's documents, with the interfaces the engine asks of the command layer.

- :class:`StoreResolver` is the engine's CollectionResolver: the documents of another
  collection as the command's reader sees them (``$lookup``, ``$graphLookup``,
  ``$unionWith``), a view's through its pipeline;
- :class:`StoreWriter` is the engine's Writer: ``$out`` and ``$merge`` write through
  the store (sim/store.py), so each write is logged, replicated, seen by change
  streams and checked against the target's validator (unless the command bypasses it)
  and unique indexes;
- :func:`run` parses a pipeline whole, with the server's parse-time errors, and runs it
  over the documents it is given; :func:`evaluate` is one expression's value for one
  document; :data:`EXPRESSIONS` is the ExpressionLanguage of ``$expr`` in queries.

What the engine does not evaluate it refuses with the server's error for an unsupported
request (NotImplemented, 238), never with a wrong answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.expressions import (
    AggregationExpressions,
    ExpressionContext,
    Scope,
    compile_expression,
)
from mongocore.sim.engine.stages import Pipeline, PipelineContext, Stage, parse_pipeline
from mongocore.sim.engine.stages.registry import StageProvider
from mongocore.sim.engine.values import MISSING

if TYPE_CHECKING:
    from mongocore.sim.store import DataStore, DataView

__all__ = [
    "EXPRESSIONS",
    "MISSING",
    "StoreResolver",
    "StoreWriter",
    "evaluate",
    "parse",
    "run",
]

Document = dict[str, Any]

#: ``$expr`` and the expressions of queries.
EXPRESSIONS = AggregationExpressions()
_MAX_VIEW_DEPTH = 20


class StoreResolver:
    """The collections a pipeline's ``$lookup``, ``$graphLookup`` and ``$unionWith``
    read, as of the command's reader (None: a pipeline over made-up documents, which
    sees no collection)."""

    def __init__(self, view: Optional[DataView]) -> None:
        self.view = view

    def documents(self, db: str, coll: str) -> Iterable[Document]:
        view = self.view
        if view is None:
            return []
        pipeline: list[Any] = []
        source = coll
        for _ in range(_MAX_VIEW_DEPTH):
            definition = view.store.options(db, source).extra
            if "viewOn" not in definition:
                break
            pipeline = [*definition.get("pipeline", []), *pipeline]
            source = str(definition["viewOn"])
        docs = view.documents(db, source)
        if not pipeline:
            return docs
        return run(docs, pipeline, view=view, db=db, coll=source, within="view")


class StoreWriter:
    """The writes of ``$out`` and ``$merge``, through the store."""

    def __init__(self, store: DataStore, *, bypass_validation: bool = False) -> None:
        self.store = store
        self.bypass = bypass_validation

    def unique_key_fields(self, db: str, coll: str) -> list[tuple[str, ...]]:
        return [
            tuple(str(key) for key in info.get("key", {}))
            for info in self.store.indexes(db, coll)
            if info.get("unique") and not info.get("partialFilterExpression")
        ]

    def find_one(
        self, db: str, coll: str, query: Mapping[str, Any], collation: Optional[Collation]
    ) -> Optional[Document]:
        context = MatchContext(collation=collation, expressions=EXPRESSIONS)
        found = self.store.latest.find(db, coll, dict(query), limit=1, context=context)
        return found[0] if found else None

    def insert(self, db: str, coll: str, doc: Document) -> None:
        self.store.insert(db, coll, doc, bypass_validation=self.bypass)

    def replace(self, db: str, coll: str, old: Document, new: Document) -> None:
        # A replacement of the one document with old's _id (new keeps it: the engine
        # refuses a $merge that changes it, 66).
        self.store.update(
            db, coll, {"_id": {"$eq": old["_id"]}}, new, bypass_validation=self.bypass
        )

    def replace_collection(self, db: str, coll: str, docs: list[Document]) -> None:
        options = self.store.options(db, coll)
        for doc in docs:
            options.check_document(doc, bypass=self.bypass)
        self.store.replace_collection(db, coll, docs)


def parse(
    pipeline: Sequence[Any],
    *,
    view: Optional[DataView] = None,
    store: Optional[DataStore] = None,
    db: str = "test",
    coll: Optional[str] = None,
    collation: Optional[Collation] = None,
    variables: Optional[Mapping[str, Any]] = None,
    within: str = "",
    bypass_validation: bool = False,
    allow_disk_use: Optional[bool] = None,
) -> Pipeline:
    """``pipeline`` parsed whole in a command's context: its documents come from ``view``
    (other collections through a :class:`StoreResolver`), its ``$out`` and ``$merge``
    write into ``store`` (without one they are refused). A pipeline over a collection
    has its ``$geoNear`` stage, over the collection's indexes as ``view`` holds them."""
    providers: dict[str, StageProvider] = {}
    if view is not None and coll is not None:
        providers = {
            name: _top_level_only(name, provider)
            for name, provider in view.pipeline_providers(db, coll).items()
        }
    context = PipelineContext(
        db=db,
        coll=coll,
        collation=collation,
        variables=dict(variables or {}),
        allow_disk_use=allow_disk_use,
        resolver=StoreResolver(view),
        writer=None if store is None else StoreWriter(store, bypass_validation=bypass_validation),
        within=within,
        providers=providers,
    )
    return parse_pipeline(list(pipeline), context)


def _top_level_only(name: str, provider: StageProvider) -> StageProvider:
    """``provider`` for the command's own pipeline: a sub-pipeline reads another
    collection (or a view), whose indexes the provider does not search."""

    def parse(argument: Any, context: PipelineContext) -> Stage:
        if context.within or context.depth:
            raise CommandError(238, f"{name} in a sub-pipeline is not implemented by the simulator")
        return provider(argument, context)

    return parse


def run(
    docs: Iterable[Mapping[str, Any]],
    pipeline: Sequence[Any],
    *,
    view: Optional[DataView] = None,
    db: str = "test",
    coll: Optional[str] = None,
    collation: Optional[Collation] = None,
    variables: Optional[Mapping[str, Any]] = None,
    within: str = "",
) -> list[Document]:
    """The output of ``pipeline`` (which may not write) over ``docs`` (not changed)."""
    parsed = parse(
        pipeline,
        view=view,
        db=db,
        coll=coll,
        collation=collation,
        variables=variables,
        within=within,
    )
    return list(parsed.run(dict(doc) for doc in docs))


def evaluate(expression: Any, doc: Mapping[str, Any]) -> Any:
    """An aggregation expression's value for ``doc`` (MISSING for a missing field)."""
    context = ExpressionContext(None)
    node = compile_expression(expression, context, Scope(context)).node
    return node(context.frame(dict(doc)))
