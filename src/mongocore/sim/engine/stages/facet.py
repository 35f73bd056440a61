"""``$facet`` (MongoDB manual, "$facet"): several pipelines over the same input
documents, one output document holding each pipeline's results under its name; and
``$documents``, the first stage that makes its own documents."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import Node, parse
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.pipeline import parse_pipeline
from mongocore.sim.engine.stages.registry import Stage, register

__all__ = ["Documents", "Facet"]


class Facet(Stage):
    blocking = True

    def __init__(self, facets: list[tuple[str, Any]]) -> None:
        self.facets = facets

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        held = list(docs)
        yield {name: list(pipeline.run(iter(held))) for name, pipeline in self.facets}


@register("$facet")
def parse_facet(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping) or not spec:
        raise CommandError(40169, "the $facet specification must be a non-empty object")
    facets = []
    for name, value in spec.items():
        field = str(name)
        if not field:
            raise CommandError(40352, "FieldPath cannot be constructed with empty string")
        if field.startswith("$"):
            raise CommandError(16410, "FieldPath field names may not start with '$'.")
        if "." in field:
            raise CommandError(16412, "FieldPath field names may not contain '.'.")
        if not isinstance(value, list):
            raise CommandError(
                40170, f"arguments to $facet must be arrays, {field} is type {type(value).__name__}"
            )
        if not value:
            raise CommandError(40169, "sub-pipeline in $facet stage cannot be empty")
        facets.append((field, parse_pipeline(value, context.derived(within="$facet"))))
    return Facet(facets)


class Documents(Stage):
    def __init__(self, node: Node, context: PipelineContext) -> None:
        self.node = node
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        for _ in docs:  # a first stage: what comes in (nothing, normally) is not used
            pass
        value = self.node(self.context.expressions.frame({}))
        if not isinstance(value, list) or not all(isinstance(doc, Mapping) for doc in value):
            raise CommandError(
                5858203,
                "error during $documents: the expression must evaluate to an array of objects",
            )
        for doc in value:
            yield dict(doc)


@register("$documents")
def parse_documents(spec: Any, context: PipelineContext) -> Stage:
    return Documents(parse(spec, context.scope), context)
