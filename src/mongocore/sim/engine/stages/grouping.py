"""The stages that group documents: ``$group``, ``$bucket``, ``$bucketAuto`` and
``$sortByCount`` (MongoDB manual, each stage's page; the server's DocumentSourceGroup
and DocumentSourceBucketAuto, and the desugaring of ``$bucket`` and ``$sortByCount``
into ``$group`` and ``$sort``).

Every output document has ``_id`` first, then the accumulated fields in the order the
specification gives them (an accumulator's missing result is null). Group keys are
compared as the server's Value comparison does: numbers by value, strings under the
collation, a missing value with undefined (below null) inside a compound ``_id``,
while a missing ``_id`` as a whole is null. Groups come out in the order their first
document came in.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import (
    AccumulatorSpec,
    Node,
    compare_values,
    parse,
    parse_accumulator,
    parse_accumulator_field,
    sort_key,
)
from mongocore.sim.engine.expressions.core import constant, constant_value, is_constant
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.render import render, value_string
from mongocore.sim.engine.stages.common import MemoryGauge, type_name_of
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.granularity import parse_granularity
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.values import MISSING, is_nan, is_number, numeric_value, type_rank

__all__ = ["Bucket", "BucketAuto", "Group"]

Accumulated = list[tuple[str, AccumulatorSpec]]


def group_memory_error() -> CommandError:
    return CommandError(
        292,
        "PlanExecutor error during aggregation :: caused by :: Exceeded memory limit for"
        " $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.",
    )


class _GroupId:
    """The ``_id`` of ``$group``: one expression, or an expression object whose fields
    are evaluated separately (a missing one is left out of the ``_id``)."""

    def __init__(self, spec: Any, context: PipelineContext) -> None:
        scope = context.scope
        self.fields: Optional[list[tuple[str, Node]]] = None
        self.node: Node = constant(None)
        if isinstance(spec, Mapping) and spec and not str(next(iter(spec))).startswith("$"):
            self.fields = [(str(name), parse(value, scope)) for name, value in spec.items()]
        else:
            self.node = parse(spec, scope)
        self.collation = context.collation

    def evaluate(self, frame: list[Any]) -> tuple[Any, Any]:
        """The group key and the ``_id`` value of a document's frame."""
        collation = self.collation
        if self.fields is None:
            value = self.node(frame)
            if value is MISSING:
                value = None
            return sort_key(value, collation), value
        values = [(name, node(frame)) for name, node in self.fields]
        group = tuple(sort_key(value, collation) for _, value in values)
        return group, {name: value for name, value in values if value is not MISSING}


def _accumulate(
    docs: Iterator[Document],
    group_id: _GroupId,
    accumulated: Accumulated,
    context: PipelineContext,
) -> dict[Any, tuple[Any, list[Any]]]:
    """The groups (by key, in the order of their first document): ``_id`` and states."""
    groups: dict[Any, tuple[Any, list[Any]]] = {}
    frame_of = context.expressions.frame
    for doc in docs:
        frame = frame_of(doc)
        group, id_value = group_id.evaluate(frame)
        entry = groups.get(group)
        if entry is None:
            entry = (id_value, _start(accumulated, {"_id": id_value}, context))
            groups[group] = entry
        for (_, spec), state in zip(accumulated, entry[1]):
            state.process(spec.argument(frame))
    return groups


def _start(accumulated: Accumulated, seed: Document, context: PipelineContext) -> list[Any]:
    states = []
    frame = None
    for _, spec in accumulated:
        if spec.initializer is None:
            states.append(spec.create())
            continue
        if frame is None:
            frame = context.expressions.frame(seed)
        states.append(spec.create(spec.initializer(frame)))
    return states


def _output(id_value: Any, accumulated: Accumulated, states: list[Any]) -> Document:
    out: Document = {"_id": id_value}
    for (name, _), state in zip(accumulated, states):
        value = state.result()
        out[name] = None if value is MISSING else value
    return out


class Group(Stage):
    blocking = True

    def __init__(
        self, group_id: _GroupId, accumulated: Accumulated, context: PipelineContext
    ) -> None:
        self.group_id = group_id
        self.accumulated = accumulated
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        groups = _accumulate(docs, self.group_id, self.accumulated, self.context)
        gauge = MemoryGauge(self.context, group_memory_error)
        outputs = [
            _output(id_value, self.accumulated, states) for id_value, states in groups.values()
        ]
        for out in outputs:
            gauge.add(out)
        yield from outputs


def _accumulated_fields(
    spec: Mapping[str, Any], context: PipelineContext, skip: str = "_id"
) -> Accumulated:
    out: Accumulated = []
    for name, value in spec.items():
        field = str(name)
        if field == skip:
            continue
        out.append((field, parse_accumulator_field(field, value, context.scope)))
    return out


@register("$group")
def parse_group(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(15947, "a group's fields must be specified in an object")
    if "_id" not in spec:
        raise CommandError(15955, "a group specification must include an _id")
    group_id = _GroupId(spec["_id"], context)
    return Group(group_id, _accumulated_fields(spec, context), context)


# -- $sortByCount -------------------------------------------------------------------------


class SortByCount(Stage):
    blocking = True

    def __init__(self, node: Node, context: PipelineContext) -> None:
        self.node = node
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        counts: dict[Any, list[Any]] = {}
        frame_of = self.context.expressions.frame
        collation = self.context.collation
        for doc in docs:
            value = self.node(frame_of(doc))
            if value is MISSING:
                value = None
            group = sort_key(value, collation)
            entry = counts.get(group)
            if entry is None:
                counts[group] = [value, 1]
            else:
                entry[1] += 1
        ordered = sorted(counts.values(), key=lambda entry: -entry[1])
        for value, count in ordered:
            yield {"_id": value, "count": count}


@register("$sortByCount")
def parse_sort_by_count(spec: Any, context: PipelineContext) -> Stage:
    is_path = isinstance(spec, str) and spec.startswith("$")
    is_operator = (
        isinstance(spec, Mapping) and len(spec) == 1 and str(next(iter(spec))).startswith("$")
    )
    if not (is_path or is_operator):
        raise CommandError(
            40147, "the sortByCount field must be defined as a $-prefixed path or an expression"
        )
    if isinstance(spec, Mapping) and not is_operator:
        raise CommandError(
            40148,
            "the sortByCount field must be defined as a $-prefixed path or an expression",
        )
    return SortByCount(parse(spec, context.scope), context)


# -- $bucket ------------------------------------------------------------------------------


class Bucket(Stage):
    blocking = True

    def __init__(
        self,
        group_by: Node,
        boundaries: list[Any],
        default: Any,
        accumulated: Accumulated,
        context: PipelineContext,
    ) -> None:
        self.group_by = group_by
        self.boundaries = boundaries
        self.default = default
        self.accumulated = accumulated
        self.context = context

    def _bucket(self, value: Any) -> tuple[int, Any]:
        collation = self.context.collation
        bounds = self.boundaries
        if (
            compare_values(value, bounds[0], collation) >= 0
            and compare_values(value, bounds[-1], collation) < 0
        ):
            low, high = 0, len(bounds) - 1
            while high - low > 1:
                middle = (low + high) // 2
                if compare_values(value, bounds[middle], collation) >= 0:
                    low = middle
                else:
                    high = middle
            return low, bounds[low]
        if self.default is MISSING:
            raise CommandError(
                40066,
                "PlanExecutor error during aggregation :: caused by :: $switch could not find"
                " a matching branch for an input, and no default was specified.",
            )
        return -1, self.default

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        buckets: dict[int, tuple[Any, list[Any]]] = {}
        frame_of = self.context.expressions.frame
        for doc in docs:
            frame = frame_of(doc)
            index, id_value = self._bucket(self.group_by(frame))
            entry = buckets.get(index)
            if entry is None:
                entry = (id_value, _start(self.accumulated, {"_id": id_value}, self.context))
                buckets[index] = entry
            for (_, spec), state in zip(self.accumulated, entry[1]):
                state.process(spec.argument(frame))
        collation = self.context.collation
        ordered = sorted(buckets.values(), key=lambda entry: sort_key(entry[0], collation))
        gauge = MemoryGauge(self.context, group_memory_error)
        for id_value, states in ordered:
            out = _output(id_value, self.accumulated, states)
            gauge.add(out)
            yield out


def _group_by(stage: str, code: int, spec: Any, context: PipelineContext, what: str) -> Node:
    is_path = isinstance(spec, str) and spec.startswith("$")
    is_object = isinstance(spec, Mapping)
    if not (is_path or is_object):
        raise CommandError(
            code,
            f"The {stage} 'groupBy' field must be defined as a $-prefixed path or an"
            f" {what}, but found: {render(spec)}",
        )
    return parse(spec, context.scope)


def _count_output(context: PipelineContext) -> Accumulated:
    return [("count", parse_accumulator("$sum", 1, context.scope))]


@register("$bucket")
def parse_bucket(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            40201,
            f"Argument to $bucket stage must be an object, but found type: {type_name_of(spec)}.",
        )
    group_by: Optional[Node] = None
    boundaries: Optional[list[Any]] = None
    default: Any = MISSING
    output: Optional[Accumulated] = None
    for name, value in spec.items():
        if name == "groupBy":
            group_by = _group_by("$bucket", 40202, value, context, "expression")
        elif name == "boundaries":
            if not isinstance(value, list):
                raise CommandError(
                    40200,
                    "The $bucket 'boundaries' field must be an array, but found type:"
                    f" {type_name_of(value)}.",
                )
            boundaries = []
            for item in value:
                node = parse(item, context.scope)
                if not is_constant(node):
                    raise CommandError(
                        40191,
                        "The $bucket 'boundaries' field must be an array of constant values, but"
                        f" found value: {render(item)}.",
                    )
                boundaries.append(constant_value(node))
        elif name == "default":
            node = parse(value, context.scope)
            if not is_constant(node):
                raise CommandError(
                    40195,
                    "The $bucket 'default' field must be a constant expression, but found:"
                    f" {render(value)}.",
                )
            default = constant_value(node)
        elif name == "output":
            if not isinstance(value, Mapping):
                raise CommandError(
                    40196,
                    "The $bucket 'output' field must be an object, but found type:"
                    f" {type_name_of(value)}.",
                )
            output = _accumulated_fields(value, context, skip="")
        else:
            raise CommandError(40197, f"Unrecognized option to $bucket: {name}.")
    if group_by is None or boundaries is None:
        raise CommandError(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
    if len(boundaries) < 2:
        raise CommandError(
            40192,
            "The $bucket 'boundaries' field must have at least 2 values, but found"
            f" {len(boundaries)} value(s).",
        )
    collation = context.collation
    for index in range(1, len(boundaries)):
        lower, upper = boundaries[index - 1], boundaries[index]
        if type_rank(lower) != type_rank(upper):
            raise CommandError(
                40193,
                "All values in the the 'boundaries' option to $bucket must have the same type."
                f" Found conflicting types {type_name_of(lower)} and {type_name_of(upper)}.",
            )
        if compare_values(lower, upper, collation) >= 0:
            raise CommandError(
                40194,
                "The 'boundaries' option to $bucket must be sorted, but elements"
                f" {index - 1} and {index} are not in ascending order ({value_string(lower)} is"
                f" not less than {value_string(upper)}).",
            )
    if default is not MISSING and not (
        compare_values(default, boundaries[0], collation) < 0
        or compare_values(default, boundaries[-1], collation) >= 0
    ):
        raise CommandError(
            40199,
            "The $bucket 'default' field must be less than the lowest boundary or greater than"
            " or equal to the highest boundary.",
        )
    accumulated = output if output is not None else _count_output(context)
    return Bucket(group_by, boundaries, default, accumulated, context)


# -- $bucketAuto ----------------------------------------------------------------------------


class BucketAuto(Stage):
    blocking = True

    def __init__(
        self,
        group_by: Node,
        buckets: int,
        accumulated: Accumulated,
        granularity: Any,
        context: PipelineContext,
    ) -> None:
        self.group_by = group_by
        self.buckets = buckets
        self.accumulated = accumulated
        self.granularity = granularity
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        collation = self.context.collation
        frame_of = self.context.expressions.frame
        rounder = self.granularity
        entries = []
        for doc in docs:
            frame = frame_of(doc)
            value = self.group_by(frame)
            if rounder is not None:
                rounder.check(value)
            if value is MISSING:
                value = None
            entries.append((sort_key(value, collation), value, frame))
        entries.sort(key=lambda entry: entry[0])
        total = len(entries)
        if not total:
            return
        size = max(int(_round_half_even_away(total / self.buckets)), 1)
        position = 0
        number = 0
        previous_max: Any = MISSING
        gauge = MemoryGauge(self.context, group_memory_error)
        while position < total:
            number += 1
            first = entries[position]
            low: Any = first[1]
            if rounder is not None:
                low = previous_max if previous_max is not MISSING else rounder.round_down(first[1])
            states = _start(self.accumulated, {}, self.context)
            last_bucket = number == self.buckets
            end = total if last_bucket else min(position + size, total)
            high_key, high = entries[end - 1][0], entries[end - 1][1]
            if rounder is not None:
                boundary = rounder.round_up(high)
                while end < total and (
                    compare_values(boundary, entries[end][1], collation) > 0
                    or entries[end][0] == high_key
                ):
                    high_key, high = entries[end][0], entries[end][1]
                    end += 1
                if _as_double(boundary) == 0.0 and end < total:
                    high = rounder.round_down(entries[end][1])
                else:
                    high = boundary
            else:
                while end < total and entries[end][0] == high_key:
                    end += 1
                if end < total:
                    high = entries[end][1]
            for _, _, frame in entries[position:end]:
                for (_, spec), state in zip(self.accumulated, states):
                    state.process(spec.argument(frame))
            out: Document = {"_id": {"min": low, "max": high}}
            for (name, _), state in zip(self.accumulated, states):
                value = state.result()
                out[name] = None if value is MISSING else value
            gauge.add(out)
            yield out
            previous_max = high
            position = end


def _round_half_even_away(value: float) -> float:
    # std::round: halves away from zero.
    return float(int(value + 0.5)) if value >= 0 else -float(int(-value + 0.5))


def _as_double(value: Any) -> float:
    return float(numeric_value(value)) if is_number(value) else float("nan")


@register("$bucketAuto")
def parse_bucket_auto(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            40240,
            f"The argument to $bucketAuto must be an object, but found type: {type_name_of(spec)}.",
        )
    group_by: Optional[Node] = None
    buckets: Optional[int] = None
    output: Optional[Accumulated] = None
    granularity: Any = None
    for name, value in spec.items():
        if name == "groupBy":
            group_by = _group_by("$bucketAuto", 40239, value, context, "expression object")
        elif name == "buckets":
            node = parse(value, context.scope)
            number = constant_value(node) if is_constant(node) else value
            if not is_number(number):
                raise CommandError(
                    40241,
                    "The $bucketAuto 'buckets' field must be a numeric value, but found type:"
                    f" {type_name_of(number)}.",
                )
            numeric = numeric_value(number)
            if is_nan(numeric) or numeric != int(numeric) or not -(2**31) <= numeric < 2**31:
                raise CommandError(
                    40242,
                    "The $bucketAuto 'buckets' field must be representable as a 32-bit integer,"
                    f" but found {value_string(number)}",
                )
            buckets = int(numeric)
        elif name == "output":
            if not isinstance(value, Mapping):
                raise CommandError(
                    40244,
                    "The $bucketAuto 'output' field must be an object, but found type:"
                    f" {type_name_of(value)}.",
                )
            output = _accumulated_fields(value, context, skip="")
        elif name == "granularity":
            if not isinstance(value, str):
                raise CommandError(
                    40261,
                    "The $bucketAuto 'granularity' field must be a string, but found type:"
                    f" {type_name_of(value)}.",
                )
            granularity = parse_granularity(value)
        else:
            raise CommandError(40245, f"Unrecognized option to $bucketAuto: {name}.")
    if group_by is None or buckets is None:
        raise CommandError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
    if buckets <= 0:
        raise CommandError(
            40243, f"The $bucketAuto 'buckets' field must be greater than 0, but found: {buckets}"
        )
    accumulated = output if output is not None and output else _count_output(context)
    return BucketAuto(group_by, buckets, accumulated, granularity, context)
