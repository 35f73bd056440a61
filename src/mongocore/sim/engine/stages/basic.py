"""The stages that filter, order and count documents without reshaping them: ``$match``,
``$limit``, ``$skip``, ``$sort``, ``$sample`` and ``$count`` (MongoDB manual, each
stage's page; the server's errors for their arguments)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.matcher import Matcher, compile_filter
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.stages.common import (
    MemoryGauge,
    SortSpec,
    integer_argument,
    parse_sort_spec,
)
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.values import is_number, numeric_value

__all__ = ["Count", "Limit", "Match", "Sample", "Skip", "Sort"]


class Match(Stage):
    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        matches = self.matcher.matches
        return (doc for doc in docs if matches(doc))


@register("$match")
def parse_match(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(15959, "the match filter must be an expression in an object")
    return Match(compile_filter(spec, context.match_context()))


class Limit(Stage):
    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        remaining = self.count
        if remaining <= 0:
            return
        for doc in docs:
            yield doc
            remaining -= 1
            if remaining == 0:
                return


@register("$limit")
def parse_limit(spec: Any, context: PipelineContext) -> Stage:
    count = integer_argument("$limit", spec)
    if count == 0:
        raise CommandError(15958, "the limit must be positive")
    return Limit(count)


class Skip(Stage):
    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        skipped = 0
        for doc in docs:
            if skipped < self.count:
                skipped += 1
                continue
            yield doc


@register("$skip")
def parse_skip(spec: Any, context: PipelineContext) -> Stage:
    return Skip(integer_argument("$skip", spec))


def sort_memory_error() -> CommandError:
    return CommandError(
        292,
        "PlanExecutor error during aggregation :: caused by :: Sort exceeded memory limit of"
        " 104857600 bytes, but did not opt in to external sorting. Aborting operation. Pass"
        " allowDiskUse:true to opt in.",
    )


class Sort(Stage):
    blocking = True

    def __init__(self, spec: SortSpec, context: PipelineContext) -> None:
        self.spec = spec
        self.context = context
        #: Set when a $limit follows: only this many documents are kept (top-k).
        self.keep: Optional[int] = None

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        gauge = MemoryGauge(self.context, sort_memory_error)
        if gauge.enabled:
            docs = _gauged(docs, gauge, self.keep)
        yield from self.spec.sort(docs, self.keep)


def _gauged(
    docs: Iterator[Document], gauge: MemoryGauge, keep: Optional[int]
) -> Iterator[Document]:
    # A top-k sort holds only k documents: their size is what counts.
    for index, doc in enumerate(docs):
        if keep is None or index < keep:
            gauge.add(doc)
        yield doc


@register("$sort")
def parse_sort(spec: Any, context: PipelineContext) -> Stage:
    return Sort(parse_sort_spec(spec, context.collation), context)


class Sample(Stage):
    blocking = True

    def __init__(self, size: int, context: PipelineContext) -> None:
        self.size = size
        self.rng = context.rng

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        if self.size == 0:
            for _ in docs:
                pass
            return
        rng = self.rng
        # Each document gets a random key; the smallest keys are the sample, in that
        # order (a random one), as the server's $sample over a collection scan does.
        keyed = ((rng(), index, doc) for index, doc in enumerate(docs))
        for _, _, doc in heapq.nsmallest(self.size, keyed, key=lambda item: item[:2]):
            yield doc


@register("$sample")
def parse_sample(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(28745, "the $sample stage specification must be an object")
    size: Any = None
    for name, value in spec.items():
        if name != "size":
            raise CommandError(28748, f"unrecognized option to $sample: {name}")
        if not is_number(value):
            raise CommandError(28746, "size argument to $sample must be a number")
        number = numeric_value(value)
        if number < 0:
            raise CommandError(28747, "size argument to $sample must not be negative")
        size = int(number)
    if size is None:
        raise CommandError(28749, "$sample stage must specify a size")
    return Sample(size, context)


class Count(Stage):
    blocking = True

    def __init__(self, field: str) -> None:
        self.field = field

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        total = sum(1 for _ in docs)
        if total:
            yield {self.field: total}


@register("$count")
def parse_count(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, str) or not spec:
        raise CommandError(40156, "the count field must be a non-empty string")
    if spec.startswith("$"):
        raise CommandError(40158, "the count field cannot be a $-prefixed path")
    if "." in spec:
        raise CommandError(40160, "the count field cannot contain '.'")
    if "\0" in spec:
        raise CommandError(40159, "the count field cannot contain a null byte")
    return Count(spec)
