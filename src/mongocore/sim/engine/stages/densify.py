"""``$densify`` (MongoDB manual, "$densify"): documents added where a sequence of values of
a field has gaps, by ``step`` (and ``unit`` for dates), within ``bounds``: ``"full"``
(from the smallest to the largest value of all documents), ``"partition"`` (of each
partition of ``partitionByFields``) or ``[lower, upper)``. A generated document holds
the field and the partition's fields only; the grid of values starts at the lower
bound, and a value a document already has is not generated again. Documents come out
sorted by the partition fields, then the field (documents without the field first,
passed through), as the server's desugaring sorts them.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import sort_key
from mongocore.sim.engine.paths import Document, split
from mongocore.sim.engine.stages.common import check_path, type_name_of
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.fields import get_field, set_field
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.stages.windows import UNITS, add_units
from mongocore.sim.engine.values import MISSING, is_number, numeric_value

__all__ = ["Densify"]


def _failed(code: int, message: str) -> CommandError:
    return CommandError(code, message)


class Densify(Stage):
    blocking = True

    def __init__(
        self,
        *,
        field: tuple[str, ...],
        partitions: list[tuple[str, ...]],
        step: Any,
        unit: Optional[str],
        bounds: Any,
        context: PipelineContext,
    ) -> None:
        self.field = field
        self.partitions = partitions
        self.step = step
        self.unit = unit
        self.bounds = bounds
        self.context = context

    def _next(self, value: Any) -> Any:
        if self.unit is not None:
            return add_units(value, self.step, self.unit)
        return value + self.step

    def _check(self, value: Any) -> Any:
        if self.unit is not None:
            if not isinstance(value, datetime.datetime):
                raise CommandError(
                    5733501,
                    "PlanExecutor error during aggregation :: caused by :: Densify field type"
                    " must be a date when unit is specified",
                )
            return value
        if not is_number(value):
            raise CommandError(
                5733201,
                "PlanExecutor error during aggregation :: caused by :: Densify field type"
                " must be numeric",
            )
        return numeric_value(value)

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        collation = self.context.collation
        passed: list[Document] = []
        parts: dict[Any, tuple[list[Any], list[tuple[Any, Document]]]] = {}
        for doc in docs:
            value = get_field(doc, self.field)
            if value is MISSING or value is None:
                passed.append(doc)
                continue
            number = self._check(value)
            values = [get_field(doc, path) for path in self.partitions]
            group = tuple(sort_key(v, collation) for v in values)
            entry = parts.setdefault(group, (values, []))
            entry[1].append((number, doc))
        for entry in parts.values():
            entry[1].sort(key=lambda item: sort_key(item[0]))
        yield from passed
        full = None
        if self.bounds == "full":
            everything = [number for _, items in parts.values() for number, _ in items]
            if everything:
                full = (min(everything), max(everything))
        for group in sorted(parts):
            values, items = parts[group]
            if self.bounds == "full":
                assert full is not None
                low, high, inclusive = full[0], full[1], True
            elif self.bounds == "partition":
                low, high, inclusive = items[0][0], items[-1][0], True
            else:
                low, high, inclusive = self.bounds[0], self.bounds[1], False
            yield from self._densified(values, items, low, high, inclusive)

    def _densified(
        self,
        values: list[Any],
        items: list[tuple[Any, Document]],
        low: Any,
        high: Any,
        inclusive: bool,
    ) -> Iterator[Document]:
        current = low

        def generated(value: Any) -> Document:
            doc: Document = {}
            for path, part_value in zip(self.partitions, values):
                if part_value is not MISSING:
                    doc = set_field(doc, path, part_value)
            return set_field(doc, self.field, value)

        def in_range(value: Any) -> bool:
            return bool(value <= high if inclusive else value < high)

        for number, doc in items:
            while current < number and in_range(current):
                yield generated(current)
                current = self._next(current)
            if current == number:
                current = self._next(current)
            yield doc
        while in_range(current):
            yield generated(current)
            current = self._next(current)


@register("$densify")
def parse_densify(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            14, f"the $densify stage specification must be an object, found {type_name_of(spec)}"
        )
    field: Optional[str] = None
    partitions: list[tuple[str, ...]] = []
    range_spec: Any = None
    for name, value in spec.items():
        if name == "field":
            if not isinstance(value, str):
                raise CommandError(
                    14,
                    f"BSON field '$densify.field' is the wrong type '{type_name_of(value)}',"
                    " expected type 'string'",
                )
            if value.startswith("$"):
                raise CommandError(5733600, "Cannot densify field starting with '$'")
            check_path(value)
            field = value
        elif name == "partitionByFields":
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise CommandError(
                    14,
                    "BSON field '$densify.partitionByFields' is the wrong type, expected type"
                    " 'array' of strings",
                )
            for item in value:
                check_path(item)
            partitions = [split(item) for item in value]
        elif name == "range":
            if not isinstance(value, Mapping):
                raise CommandError(
                    14,
                    f"BSON field '$densify.range' is the wrong type '{type_name_of(value)}',"
                    " expected type 'object'",
                )
            range_spec = value
        else:
            raise CommandError(40415, f"BSON field '$densify.{name}' is an unknown field.")
    if field is None:
        raise CommandError(40414, "BSON field '$densify.field' is missing but a required field")
    if range_spec is None:
        raise CommandError(40414, "BSON field '$densify.range' is missing but a required field")
    step: Any = None
    unit: Optional[str] = None
    bounds: Any = None
    for name, value in range_spec.items():
        if name == "step":
            if not is_number(value):
                raise CommandError(
                    14, "BSON field 'range.step' is the wrong type, expected type 'number'"
                )
            step = numeric_value(value)
        elif name == "unit":
            if not isinstance(value, str) or value not in UNITS:
                raise CommandError(9, f"unknown time unit value: {value}")
            unit = value
        elif name == "bounds":
            bounds = value
        else:
            raise CommandError(40415, f"BSON field 'range.{name}' is an unknown field.")
    if step is None:
        raise CommandError(40414, "BSON field 'range.step' is missing but a required field")
    if bounds is None:
        raise CommandError(40414, "BSON field 'range.bounds' is missing but a required field")
    if step <= 0:
        raise CommandError(
            5733401,
            "the step parameter in a range statement must be a strictly positive numeric value",
        )
    if unit is not None and step != int(step):
        raise CommandError(
            5733410,
            "The step parameter in a range satement must be a whole number when densifying a"
            " date range",
        )
    if isinstance(bounds, str):
        if bounds not in ("full", "partition"):
            raise CommandError(
                5946802, f"Bounds string must either be 'full' or 'partition': {bounds}"
            )
        if bounds == "partition" and not partitions:
            raise CommandError(
                5733408,
                'one may only specify the "partition" bound for range if partitionByFields is not'
                " empty",
            )
    elif isinstance(bounds, list) and len(bounds) == 2:
        low, high = bounds
        if unit is not None:
            if not (isinstance(low, datetime.datetime) and isinstance(high, datetime.datetime)):
                raise CommandError(
                    5733402, "a bounding array must contain either both dates or both numeric types"
                )
        elif not (is_number(low) and is_number(high)):
            raise CommandError(
                5733403, "a bounding array must contain either both dates or both numeric types"
            )
        if unit is None:
            low, high = numeric_value(low), numeric_value(high)
        if high < low:
            raise CommandError(
                5733404, "the lower bound must be less than or equal to the upper bound"
            )
        bounds = (low, high)
    else:
        raise CommandError(
            5946801,
            "the bounds in a range statement must be the string 'full', 'partition', or an"
            " ascending array of two numbers or two dates",
        )
    return Densify(
        field=split(field),
        partitions=partitions,
        step=step,
        unit=unit,
        bounds=bounds,
        context=context,
    )
