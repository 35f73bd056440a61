"""The stages that read other collections: ``$lookup``, ``$graphLookup`` and
``$unionWith`` (MongoDB manual, each stage's page; the server's DocumentSourceLookUp,
DocumentSourceGraphLookUp and DocumentSourceUnionWith). The other collection's
documents come from the command layer's :class:`CollectionResolver` (context.py),
read once per run of the stage.

``$lookup`` by ``localField``/``foreignField`` joins as the server's
``{foreignField: {$eq: v}}`` (or ``$in`` for several values) does: the local values
are every value along the path (arrays opened; none is null), the foreign document
matches when one of the values its path reaches (array elements and the array itself,
missing as null) equals one of them, under the aggregation's collation; matches come
in the foreign collection's order. With ``pipeline`` (and ``let``), the pipeline runs
for each document on the foreign documents (those the equality selects, when both
are given), its ``let`` variables evaluated on the document; ``$$NOW`` and the
command's variables are the command's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import Node, parse, sort_key
from mongocore.sim.engine.expressions.core import validate_variable_name
from mongocore.sim.engine.matcher import Matcher, compile_filter
from mongocore.sim.engine.paths import Document, candidates, split
from mongocore.sim.engine.stages.common import check_path, type_name_of
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.fields import set_field, values_along
from mongocore.sim.engine.stages.pipeline import parse_pipeline
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.values import MISSING, UNDEFINED, is_number, key, numeric_value

__all__ = ["GraphLookup", "Lookup", "UnionWith"]

_NULL_KEY = key(None)
_CACHE = 64  # compiled sub-pipelines kept per $lookup, by their let values


def _foreign(context: PipelineContext, coll: Optional[str]) -> list[Document]:
    if coll is None:
        return []
    if context.resolver is None:
        raise CommandError(238, "reading another collection needs the command layer's resolver")
    return list(context.resolver.documents(context.db, coll))


class _EqualityIndex:
    """The foreign documents by the keys of the values ``path`` reaches in them."""

    def __init__(
        self, docs: list[Document], parts: tuple[str, ...], context: PipelineContext
    ) -> None:
        collation = context.collation
        self.by_key: dict[Any, list[int]] = {}
        for position, doc in enumerate(docs):
            seen = set()
            for value, _ in candidates(doc, parts):
                value_key = (
                    _NULL_KEY if value is MISSING or value is UNDEFINED else key(value, collation)
                )
                if value_key in seen:
                    continue
                seen.add(value_key)
                self.by_key.setdefault(value_key, []).append(position)
        self.docs = docs
        self.collation = collation

    def matching(self, values: list[Any]) -> list[Document]:
        positions: set[int] = set()
        for value in values or [None]:
            value_key = (
                _NULL_KEY if value is None or value is UNDEFINED else key(value, self.collation)
            )
            positions.update(self.by_key.get(value_key, ()))
        return [self.docs[position] for position in sorted(positions)]


class Lookup(Stage):
    def __init__(
        self,
        *,
        coll: Optional[str],
        as_path: tuple[str, ...],
        local: Optional[tuple[str, ...]],
        foreign: Optional[tuple[str, ...]],
        pipeline: Optional[list[Any]],
        let: list[tuple[str, Node]],
        context: PipelineContext,
    ) -> None:
        self.coll = coll
        self.as_path = as_path
        self.local = local
        self.foreign = foreign
        self.pipeline = pipeline
        self.let = let
        self.context = context
        self._compiled: dict[Any, Any] = {}

    def _sub_pipeline(self, values: dict[str, Any]) -> Any:
        cache_key = tuple((name, sort_key(value)) for name, value in values.items())
        compiled = self._compiled.get(cache_key)
        if compiled is None:
            if len(self._compiled) >= _CACHE:
                self._compiled.clear()
            derived = self.context.derived(within="$lookup", variables=values)
            compiled = parse_pipeline(self.pipeline, derived)
            self._compiled[cache_key] = compiled
        return compiled

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        source = _foreign(self.context, self.coll)
        index = (
            _EqualityIndex(source, self.foreign, self.context)
            if self.local is not None and self.foreign is not None
            else None
        )
        frame_of = self.context.expressions.frame
        for doc in docs:
            matched = source
            if index is not None and self.local is not None:
                matched = index.matching(values_along(doc, self.local))
            if self.pipeline is not None:
                values: dict[str, Any] = {}
                if self.let:
                    frame = frame_of(doc)
                    values = {name: node(frame) for name, node in self.let}
                matched = list(self._sub_pipeline(values).run(iter(matched)))
            else:
                matched = list(matched)
            yield set_field(doc, self.as_path, matched)


def _string_argument(stage: str, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise CommandError(
            9, f"{stage} argument '{name}' must be a string, is type {type_name_of(value)}"
        )
    return value


def _field(stage: str, name: str, value: Any) -> tuple[str, ...]:
    path = _string_argument(stage, name, value)
    check_path(path)
    return split(path)


@register("$lookup")
def parse_lookup(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            9, f"the $lookup stage specification must be an object, but found {type_name_of(spec)}"
        )
    coll: Optional[str] = None
    as_path: Optional[tuple[str, ...]] = None
    local = foreign = None
    pipeline: Optional[list[Any]] = None
    let_spec: Optional[Mapping[str, Any]] = None
    for name, value in spec.items():
        if name == "from":
            if isinstance(value, Mapping):
                raise CommandError(
                    238, "$lookup from another database is not implemented by the simulator"
                )
            coll = _string_argument("$lookup", "from", value)
        elif name == "as":
            as_path = _field("$lookup", "as", value)
        elif name == "localField":
            local = _field("$lookup", "localField", value)
        elif name == "foreignField":
            foreign = _field("$lookup", "foreignField", value)
        elif name == "pipeline":
            if not isinstance(value, list):
                raise CommandError(
                    9,
                    "$lookup argument 'pipeline' must be an array, is type " + type_name_of(value),
                )
            pipeline = list(value)
        elif name == "let":
            if not isinstance(value, Mapping):
                raise CommandError(
                    9, "$lookup argument 'let' must be an object, is type " + type_name_of(value)
                )
            let_spec = value
        else:
            raise CommandError(9, f"unknown argument to $lookup: {name}")
    if as_path is None:
        raise CommandError(9, "must specify 'as' field for a $lookup")
    if (local is None) != (foreign is None):
        raise CommandError(
            9, "$lookup requires both or neither of 'localField' and 'foreignField' to be specified"
        )
    if pipeline is None and local is None:
        raise CommandError(
            9,
            "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be"
            " specified",
        )
    if let_spec is not None and pipeline is None:
        raise CommandError(9, "$lookup with a 'let' argument must also specify a 'pipeline'")
    starts_with_documents = (
        pipeline is not None
        and bool(pipeline)
        and isinstance(pipeline[0], Mapping)
        and "$documents" in pipeline[0]
    )
    if coll is None and not starts_with_documents:
        raise CommandError(9, "must specify 'from' field for a $lookup")
    let: list[tuple[str, Node]] = []
    for name, value in (let_spec or {}).items():
        validate_variable_name(str(name))
        let.append((str(name), parse(value, context.scope)))
    if pipeline is not None:
        # Parsed now for its errors (the let variables stand as nulls), run per document.
        parse_pipeline(
            pipeline,
            context.derived(within="$lookup", variables={name: None for name, _ in let}),
        )
    return Lookup(
        coll=coll,
        as_path=as_path,
        local=local,
        foreign=foreign,
        pipeline=pipeline,
        let=let,
        context=context,
    )


# -- $graphLookup ---------------------------------------------------------------------------


class GraphLookup(Stage):
    def __init__(
        self,
        *,
        coll: str,
        start_with: Node,
        connect_from: tuple[str, ...],
        connect_to: tuple[str, ...],
        as_field: str,
        max_depth: Optional[int],
        depth_field: Optional[tuple[str, ...]],
        restrict: Optional[Matcher],
        context: PipelineContext,
    ) -> None:
        self.coll = coll
        self.start_with = start_with
        self.connect_from = connect_from
        self.connect_to = connect_to
        self.as_field = as_field
        self.max_depth = max_depth
        self.depth_field = depth_field
        self.restrict = restrict
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        source = _foreign(self.context, self.coll)
        if self.restrict is not None:
            source = [doc for doc in source if self.restrict.matches(doc)]
        index = _EqualityIndex(source, self.connect_to, self.context)
        collation = self.context.collation
        frame_of = self.context.expressions.frame
        for doc in docs:
            start = self.start_with(frame_of(doc))
            frontier = (
                [] if start is MISSING else (list(start) if isinstance(start, list) else [start])
            )
            found: dict[Any, Document] = {}
            depth = 0
            while frontier and (self.max_depth is None or depth <= self.max_depth):
                next_frontier: list[Any] = []
                for match in index.matching(frontier) if frontier else []:
                    identity = key(match.get("_id", MISSING), collation)
                    if identity in found:
                        continue
                    found[identity] = (
                        match
                        if self.depth_field is None
                        else set_field(match, self.depth_field, Int64(depth))
                    )
                    next_frontier.extend(values_along(match, self.connect_from))
                frontier = next_frontier
                depth += 1
            out = dict(doc)
            out[self.as_field] = list(found.values())
            yield out


@register("$graphLookup")
def parse_graph_lookup(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            40327,
            f"the $graphLookup stage specification must be an object, but found"
            f" {type_name_of(spec)}",
        )
    values: dict[str, Any] = {}
    max_depth: Optional[int] = None
    restrict: Optional[Matcher] = None
    start_with: Optional[Node] = None
    for name, value in spec.items():
        if name in ("from", "as", "connectFromField", "connectToField", "depthField"):
            if not isinstance(value, str):
                raise CommandError(
                    40103, f"expected string as argument for {name}, found: {type_name_of(value)}"
                )
            if name != "from":
                check_path(value)
            values[name] = value
        elif name == "startWith":
            start_with = parse(value, context.scope)
        elif name == "maxDepth":
            if not is_number(value):
                raise CommandError(
                    40100, f"maxDepth must be numeric, found type: {type_name_of(value)}"
                )
            number = numeric_value(value)
            if number < 0:
                raise CommandError(
                    40101, f"maxDepth requires a nonnegative argument, found: {value}"
                )
            if number != int(number):
                raise CommandError(
                    40102, f"maxDepth could not be represented as a long long: {value}"
                )
            max_depth = int(number)
        elif name == "restrictSearchWithMatch":
            if not isinstance(value, Mapping):
                raise CommandError(
                    40185, f"restrictSearchWithMatch must be an object, found {type_name_of(value)}"
                )
            restrict = compile_filter(value, context.match_context())
        else:
            raise CommandError(40104, f"Unknown argument to $graphLookup: {name}")
    required = ("from", "as", "connectFromField", "connectToField")
    if start_with is None or any(name not in values for name in required):
        raise CommandError(
            40105, "from, as, startWith, connectFromField, and connectToField must all be specified"
        )
    if "." in values["as"]:
        raise CommandError(238, "a dotted 'as' of $graphLookup is not implemented by the simulator")
    depth_field = split(values["depthField"]) if "depthField" in values else None
    return GraphLookup(
        coll=values["from"],
        start_with=start_with,
        connect_from=split(values["connectFromField"]),
        connect_to=split(values["connectToField"]),
        as_field=values["as"],
        max_depth=max_depth,
        depth_field=depth_field,
        restrict=restrict,
        context=context,
    )


# -- $unionWith -------------------------------------------------------------------------------


class UnionWith(Stage):
    def __init__(self, coll: Optional[str], pipeline: Any, context: PipelineContext) -> None:
        self.coll = coll
        self.pipeline = pipeline
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        yield from docs
        source = _foreign(self.context, self.coll)
        if self.pipeline is None:
            yield from source
        else:
            yield from self.pipeline.run(iter(source))


@register("$unionWith")
def parse_union_with(spec: Any, context: PipelineContext) -> Stage:
    if isinstance(spec, str):
        return UnionWith(spec, None, context)
    if not isinstance(spec, Mapping):
        raise CommandError(
            9,
            "the $unionWith stage specification must be an object or string, but found "
            + type_name_of(spec),
        )
    coll: Optional[str] = None
    stages: Optional[list[Any]] = None
    for name, value in spec.items():
        if name == "coll":
            if not isinstance(value, str):
                raise CommandError(
                    14,
                    f"BSON field '$unionWith.coll' is the wrong type '{type_name_of(value)}',"
                    " expected type 'string'",
                )
            coll = value
        elif name == "pipeline":
            if not isinstance(value, list):
                raise CommandError(
                    14,
                    f"BSON field '$unionWith.pipeline' is the wrong type"
                    f" '{type_name_of(value)}', expected type 'array'",
                )
            stages = list(value)
        else:
            raise CommandError(40415, f"BSON field '$unionWith.{name}' is an unknown field.")
    starts_with_documents = (
        stages is not None
        and bool(stages)
        and isinstance(stages[0], Mapping)
        and "$documents" in stages[0]
    )
    if coll is None and not starts_with_documents:
        raise CommandError(40414, "BSON field '$unionWith.coll' is missing but a required field")
    pipeline = None
    if stages is not None:
        pipeline = parse_pipeline(stages, context.derived(within="$unionWith"))
    return UnionWith(coll, pipeline, context)
