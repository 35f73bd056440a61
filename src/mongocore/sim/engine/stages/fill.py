"""``$fill`` (MongoDB manual, "$fill"): null and missing values of output fields filled with
a ``value`` (an expression evaluated on the document) or by a ``method`` (``"locf"``, the
last value seen; ``"linear"``, between the values around it along ``sortBy``), within
the partitions of ``partitionBy`` or ``partitionByFields``, as the server's
desugaring into ``$setWindowFields`` and ``$addFields`` does."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import Node, parse
from mongocore.sim.engine.paths import Document, split
from mongocore.sim.engine.stages.common import check_path, type_name_of
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.fields import get_field, set_field
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.stages.windows import parse_set_window_fields
from mongocore.sim.engine.values import MISSING

__all__ = ["Fill"]


class Fill(Stage):
    blocking = True

    def __init__(
        self,
        windows: Optional[Stage],
        values: list[tuple[tuple[str, ...], Node]],
        context: PipelineContext,
    ) -> None:
        self.windows = windows
        self.values = values
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        stream = self.windows.run(docs) if self.windows is not None else docs
        frame_of = self.context.expressions.frame
        for doc in stream:
            out = doc
            for path, node in self.values:
                current = get_field(out, path)
                if current is MISSING or current is None:
                    out = set_field(out, path, node(frame_of(doc)))
            yield out


@register("$fill")
def parse_fill(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            14, f"the $fill stage specification must be an object, found {type_name_of(spec)}"
        )
    partition: Any = None
    partition_fields: Optional[list[str]] = None
    sort_by: Any = None
    output: Any = None
    for name, value in spec.items():
        if name == "partitionBy":
            partition = value
        elif name == "partitionByFields":
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise CommandError(
                    14,
                    "BSON field '$fill.partitionByFields' is the wrong type, expected type"
                    " 'array' of strings",
                )
            partition_fields = list(value)
        elif name == "sortBy":
            sort_by = value
        elif name == "output":
            if not isinstance(value, Mapping):
                raise CommandError(
                    14,
                    f"BSON field '$fill.output' is the wrong type '{type_name_of(value)}',"
                    " expected type 'object'",
                )
            output = value
        else:
            raise CommandError(40415, f"BSON field '$fill.{name}' is an unknown field.")
    if output is None:
        raise CommandError(40414, "BSON field '$fill.output' is missing but a required field")
    if partition is not None and partition_fields is not None:
        raise CommandError(
            6050204,
            "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'",
        )
    if partition_fields is not None:
        for field in partition_fields:
            check_path(field)
        partition = {field: "$" + field for field in partition_fields}
    window_outputs: dict[str, Any] = {}
    values: list[tuple[tuple[str, ...], Node]] = []
    for field, fill in output.items():
        name = str(field)
        check_path(name)
        if (
            not isinstance(fill, Mapping)
            or len(fill) != 1
            or next(iter(fill)) not in ("value", "method")
        ):
            raise CommandError(
                6050203,
                "Exactly one of 'value' and 'method' must be specified per field in '$fill'",
            )
        ((kind, argument),) = fill.items()
        if kind == "value":
            values.append((split(name), parse(argument, context.scope)))
            continue
        if argument == "locf":
            window_outputs[name] = {"$locf": "$" + name}
        elif argument == "linear":
            if sort_by is None:
                raise CommandError(6050201, "'sortBy' required for $fill with method 'linear'")
            window_outputs[name] = {"$linearFill": "$" + name}
        else:
            raise CommandError(
                6050202, f"Method must be either 'locf' or 'linear', got '{argument}'"
            )
    windows: Optional[Stage] = None
    if window_outputs or sort_by is not None or partition is not None:
        window_spec: dict[str, Any] = {}
        if partition is not None:
            window_spec["partitionBy"] = partition
        if sort_by is not None:
            window_spec["sortBy"] = sort_by
        window_spec["output"] = window_outputs
        windows = parse_set_window_fields(window_spec, context)
    return Fill(windows, values, context)
