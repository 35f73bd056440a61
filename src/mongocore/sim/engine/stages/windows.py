"""``$setWindowFields`` (MongoDB manual, "$setWindowFields" and the window operators of
7.0): each document gets fields computed over a window of the documents of its
partition, in ``sortBy`` order.

The documents are put in the order of the partition key, then ``sortBy`` (the stage
sorts them, as the server's desugaring into ``$sort`` does; ties keep their order).
A window is ``documents: [lower, upper]`` (positions relative to the document:
``"unbounded"``, ``"current"`` or an integer) or ``range: [lower, upper]`` (sortBy
values relative to the document's, with ``unit`` for dates); without one, the whole
partition. Accumulators ($sum, $avg, $min, $max, $push, $addToSet, $first, $last,
$stdDevPop, $stdDevSamp, $count, $firstN, $lastN, $minN, $maxN, $top, $topN, $bottom,
$bottomN, $median, $percentile) are the expression package's, run over each window;
$rank, $denseRank, $documentNumber, $shift, $derivative, $integral, $expMovingAvg,
$covariancePop, $covarianceSamp, $linearFill and $locf are here.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import Node, parse, parse_accumulator, sort_key
from mongocore.sim.engine.expressions.core import constant_value, is_constant
from mongocore.sim.engine.paths import Document, split
from mongocore.sim.engine.stages.common import SortSpec, check_path, parse_sort_spec, type_name_of
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.fields import get_field, set_field
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.values import MISSING, is_number, millis, numeric_value

__all__ = ["UNITS", "SetWindowFields", "add_units"]

_ACCUMULATORS = frozenset(
    {
        "$addToSet", "$avg", "$bottom", "$bottomN", "$count", "$first", "$firstN", "$last",
        "$lastN", "$max", "$maxN", "$median", "$min", "$minN", "$percentile", "$push",
        "$stdDevPop", "$stdDevSamp", "$sum", "$top", "$topN",
    }
)  # fmt: skip
_NEEDS_SORT = frozenset(
    {"$rank", "$denseRank", "$documentNumber", "$shift", "$derivative", "$integral",
     "$expMovingAvg", "$linearFill"}
)  # fmt: skip
_NO_WINDOW = frozenset(
    {"$rank", "$denseRank", "$documentNumber", "$shift", "$expMovingAvg", "$linearFill", "$locf"}
)
UNITS = {
    "millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000,
    "day": 86_400_000, "week": 604_800_000, "month": 0, "quarter": 0, "year": 0,
}  # fmt: skip
_EPOCH = datetime.datetime(1970, 1, 1)


def _failed(message: str) -> CommandError:
    return CommandError(9, message)


def add_units(date: datetime.datetime, amount: Any, unit: str) -> datetime.datetime:
    """``date`` moved by ``amount`` units (months, quarters and years by the calendar)."""
    size = UNITS[unit]
    if size:
        return date + datetime.timedelta(milliseconds=float(amount) * size)
    months = int(amount) * {"month": 1, "quarter": 3, "year": 12}[unit]
    total = date.year * 12 + (date.month - 1) + months
    year, month = divmod(total, 12)
    day = date.day
    while True:
        try:
            return date.replace(year=year, month=month + 1, day=day)
        except ValueError:
            day -= 1


def _as_millis(value: Any) -> Optional[int]:
    if isinstance(value, datetime.datetime):
        return millis(value)
    return None


class _Window:
    """The bounds of a window: ``kind`` "documents", "range" or None (the partition)."""

    def __init__(self, kind: Optional[str], lower: Any, upper: Any, unit: Optional[str]) -> None:
        self.kind = kind
        self.lower = lower
        self.upper = upper
        self.unit = unit


def _parse_bound(value: Any, kind: str) -> Any:
    if value in ("unbounded", "current") and isinstance(value, str):
        return value
    if is_number(value):
        number = numeric_value(value)
        if kind == "documents" and number != int(number):
            raise _failed("Numeric document-based bounds must be an integer, but got " + str(value))
        return int(number) if kind == "documents" else number
    raise _failed(
        f"Window bounds must be 'unbounded', 'current', or a number, but got {type_name_of(value)}"
    )


def _parse_window(spec: Any) -> _Window:
    if not isinstance(spec, Mapping):
        raise _failed("'window' field must be an object")
    kind: Optional[str] = None
    bounds: Any = None
    unit: Optional[str] = None
    for name, value in spec.items():
        if name in ("documents", "range"):
            if kind is not None:
                raise _failed("Window bounds can specify either 'documents' or 'range', not both")
            kind, bounds = str(name), value
        elif name == "unit":
            if not isinstance(value, str) or value not in UNITS:
                raise _failed(f"unknown time unit value: {value}")
            unit = value
        else:
            raise _failed(f"'window' field that specifies an unknown argument: {name}")
    if kind is None:
        raise _failed("'window' field must specify either 'documents' or 'range'")
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise _failed(f"Window bounds must be a 2-element array: {kind}")
    if unit is not None and kind != "range":
        raise _failed("Document-based bounds can't have a unit")
    lower, upper = (_parse_bound(value, kind) for value in bounds)
    if _order(lower, True) > _order(upper, False):
        raise _failed("Lower bound must not exceed upper bound: " + str([lower, upper]))
    return _Window(kind, lower, upper, unit)


def _order(bound: Any, lower: bool) -> float:
    if bound == "unbounded":
        return -math.inf if lower else math.inf
    if bound == "current":
        return 0.0
    return float(bound)


class _Output:
    """One output field: how to compute its values over a partition."""

    def __init__(self, path: tuple[str, ...], name: str, compute: Callable[..., list[Any]]) -> None:
        self.path = path
        self.name = name
        self.compute = compute


class SetWindowFields(Stage):
    blocking = True

    def __init__(
        self,
        partition: Optional[Node],
        sort: Optional[SortSpec],
        outputs: list[_Output],
        context: PipelineContext,
    ) -> None:
        self.partition = partition
        self.sort = sort
        self.outputs = outputs
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        collation = self.context.collation
        frame_of = self.context.expressions.frame
        keyed = []
        for index, doc in enumerate(docs):
            frame = frame_of(doc)
            part: Any = None
            if self.partition is not None:
                part = self.partition(frame)
                if isinstance(part, list):
                    raise CommandError(
                        5722400,
                        "An expression used to partition cannot evaluate to value of type array",
                    )
                if part is MISSING:
                    part = None
            sort = self.sort.key(doc) if self.sort is not None else ()
            keyed.append(((sort_key(part, collation), sort, index), doc, frame))
        if self.partition is not None or self.sort is not None:
            keyed.sort(key=lambda entry: entry[0][:2])
        start = 0
        while start < len(keyed):
            end = start + 1
            while end < len(keyed) and keyed[end][0][0] == keyed[start][0][0]:
                end += 1
            partition = keyed[start:end]
            docs_in = [doc for _, doc, _ in partition]
            frames = [frame for _, _, frame in partition]
            sort_keys = [entry[0][1] for entry in partition]
            columns = [output.compute(docs_in, frames, sort_keys) for output in self.outputs]
            for position, doc in enumerate(docs_in):
                out = doc
                for output, column in zip(self.outputs, columns):
                    value = column[position]
                    out = set_field(out, output.path, value)
                yield out
            start = end


# -- window bounds over a partition ------------------------------------------------------------


def _sort_value(sort: Optional[SortSpec], doc: Document) -> Any:
    if sort is None or len(sort.fields) != 1:
        return MISSING
    return get_field(doc, sort.fields[0][0])


def _bounds(
    window: _Window, docs: list[Document], sort: Optional[SortSpec]
) -> list[tuple[int, int]]:
    """For each document, the [start, end) of its window."""
    n = len(docs)
    if window.kind is None:
        return [(0, n)] * n
    if window.kind == "documents":
        out = []
        for i in range(n):
            lo = (
                0
                if window.lower == "unbounded"
                else i + (0 if window.lower == "current" else window.lower)
            )
            hi = (
                n
                if window.upper == "unbounded"
                else i + 1 + (0 if window.upper == "current" else window.upper)
            )
            lo, hi = max(lo, 0), min(hi, n)
            out.append((lo, max(hi, lo)))
        return out
    values = [_range_value(_sort_value(sort, doc), window.unit) for doc in docs]
    out = []
    for i in range(n):
        current = values[i]
        lo_value = (
            None if window.lower == "unbounded" else _shifted(current, window.lower, window.unit)
        )
        hi_value = (
            None if window.upper == "unbounded" else _shifted(current, window.upper, window.unit)
        )
        members = [
            j
            for j in range(n)
            if (lo_value is None or values[j] >= lo_value)
            and (hi_value is None or values[j] <= hi_value)
        ]
        out.append((members[0], members[-1] + 1) if members else (i, i))
    return out


def _range_value(value: Any, unit: Optional[str]) -> Any:
    if unit is not None:
        if not isinstance(value, datetime.datetime):
            raise CommandError(
                5429513,
                "PlanExecutor error during aggregation :: caused by :: Invalid range: Expected"
                " the sortBy field to be a Date, but it was " + type_name_of(value),
            )
        return value
    if not is_number(value):
        raise CommandError(
            5429414,
            "PlanExecutor error during aggregation :: caused by :: Invalid range: Expected the"
            " sortBy field to be a number, but it was " + type_name_of(value),
        )
    return numeric_value(value)


def _shifted(value: Any, bound: Any, unit: Optional[str]) -> Any:
    if bound == "current":
        return value
    if unit is not None:
        return add_units(value, bound, unit)
    return value + (numeric_value(bound) if not isinstance(value, float) else float(bound))


# -- window functions ---------------------------------------------------------------------------


def _accumulator_output(
    name: str, argument: Any, window: _Window, sort: Optional[SortSpec], context: PipelineContext
) -> Callable[..., list[Any]]:
    spec = parse_accumulator(name, argument, context.scope)

    def compute(docs: list[Document], frames: list[Any], keys: list[Any]) -> list[Any]:
        values = [spec.argument(frame) for frame in frames]
        initial = MISSING
        if spec.initializer is not None:
            initial = spec.initializer(context.expressions.frame({}))
        out = []
        for lo, hi in _bounds(window, docs, sort):
            state = spec.create(initial)
            for value in values[lo:hi]:
                state.process(value)
            result = state.result()
            out.append(None if result is MISSING else result)
        return out

    return compute


def _ranks(dense: bool, number: bool) -> Callable[..., list[Any]]:
    def compute(docs: list[Document], frames: list[Any], keys: list[Any]) -> list[Any]:
        out: list[Any] = []
        rank = 0
        for position, sort in enumerate(keys):
            if number:
                out.append(position + 1)
                continue
            if position == 0 or sort != keys[position - 1]:
                rank = rank + 1 if dense else position + 1
            out.append(rank)
        return out

    return compute


def _shift(argument: Any, context: PipelineContext) -> Callable[..., list[Any]]:
    if not isinstance(argument, Mapping):
        raise _failed("Argument to $shift must be an object")
    output = by = None
    default: Any = None
    for name, value in argument.items():
        if name == "output":
            output = parse(value, context.scope)
        elif name == "by":
            if not is_number(value) or numeric_value(value) != int(numeric_value(value)):
                raise _failed("'$shift:by' field must be an integer, but found " + str(value))
            by = int(numeric_value(value))
        elif name == "default":
            node = parse(value, context.scope)
            if not is_constant(node):
                raise _failed("'$shift:default' expression must yield a constant value.")
            default = constant_value(node)
        else:
            raise _failed(f"Unknown argument in $shift: {name}")
    if output is None or by is None:
        raise _failed("$shift requires 'output' and 'by' fields")
    output_node, shift = output, by

    def compute(docs: list[Document], frames: list[Any], keys: list[Any]) -> list[Any]:
        out = []
        for position in range(len(docs)):
            other = position + shift
            if 0 <= other < len(docs):
                value = output_node(frames[other])
                out.append(None if value is MISSING else value)
            else:
                out.append(default)
        return out

    return compute


def _numbers_arguments(
    name: str, argument: Any, context: PipelineContext
) -> tuple[Node, Optional[str]]:
    if not isinstance(argument, Mapping):
        raise _failed(f"{name} must have exactly one argument")
    node = None
    unit = None
    for key_name, value in argument.items():
        if key_name == "input":
            node = parse(value, context.scope)
        elif key_name == "unit":
            if not isinstance(value, str) or value not in UNITS or UNITS[value] == 0:
                raise _failed(f"unknown time unit value: {value}")
            unit = value
        else:
            raise _failed(f"{name} got unexpected argument: {key_name}")
    if node is None:
        raise _failed(f"{name} requires an 'input' expression")
    return node, unit


def _x_value(value: Any, unit: Optional[str], name: str) -> float:
    if unit is not None:
        ms = _as_millis(value)
        if ms is None:
            raise CommandError(
                5624901 if name == "$derivative" else 5423902,
                f"PlanExecutor error during aggregation :: caused by :: {name} with unit"
                " expects the sortBy field to be a Date",
            )
        return ms / UNITS[unit]
    if isinstance(value, datetime.datetime):
        raise CommandError(
            5624900 if name == "$derivative" else 5423901,
            f"PlanExecutor error during aggregation :: caused by :: {name} where the sortBy is a"
            " Date requires an 'unit'",
        )
    if not is_number(value):
        raise CommandError(
            5624902,
            f"PlanExecutor error during aggregation :: caused by :: {name} requires a numeric"
            " sortBy field",
        )
    return float(numeric_value(value))


def _derivative_or_integral(
    name: str, argument: Any, window: _Window, sort: Optional[SortSpec], context: PipelineContext
) -> Callable[..., list[Any]]:
    node, unit = _numbers_arguments(name, argument, context)

    def compute(docs: list[Document], frames: list[Any], keys: list[Any]) -> list[Any]:
        ys = [node(frame) for frame in frames]
        xs = [_sort_value(sort, doc) for doc in docs]
        out: list[Any] = []
        for lo, hi in _bounds(window, docs, sort):
            if name == "$derivative":
                if hi - lo < 2:
                    out.append(None)
                    continue
                y0, y1 = ys[lo], ys[hi - 1]
                if not (is_number(y0) and is_number(y1)):
                    out.append(None)
                    continue
                dx = _x_value(xs[hi - 1], unit, name) - _x_value(xs[lo], unit, name)
                out.append(
                    None if dx == 0 else (float(numeric_value(y1)) - float(numeric_value(y0))) / dx
                )
                continue
            total = 0.0
            for j in range(lo + 1, hi):
                a, b = ys[j - 1], ys[j]
                if not (is_number(a) and is_number(b)):
                    continue
                dx = _x_value(xs[j], unit, name) - _x_value(xs[j - 1], unit, name)
                total += dx * (float(numeric_value(a)) + float(numeric_value(b))) / 2
            out.append(total)
        return out

    return compute


def _exp_moving_avg(argument: Any, context: PipelineContext) -> Callable[..., list[Any]]:
    if not isinstance(argument, Mapping):
        raise _failed("$expMovingAvg must have exactly one argument that is an object")
    node = None
    alpha: Optional[float] = None
    for name, value in argument.items():
        if name == "input":
            node = parse(value, context.scope)
        elif name == "N":
            if (
                not is_number(value)
                or numeric_value(value) != int(numeric_value(value))
                or numeric_value(value) <= 0
            ):
                raise _failed("'N' field must be an integer, but found type " + type_name_of(value))
            alpha = 2.0 / (int(numeric_value(value)) + 1)
        elif name == "alpha":
            if not is_number(value) or not 0 < float(numeric_value(value)) < 1:
                raise _failed("'alpha' must be between 0 and 1 (exclusive), found " + str(value))
            alpha = float(numeric_value(value))
        else:
            raise _failed(
                "Got unrecognized field in $expMovingAvg, $expMovingAvg sub object must have"
                " exactly two fields: An 'input' field, and either an 'N' field or an 'alpha'"
                " field"
            )
    if node is None or alpha is None:
        raise _failed(
            "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either"
            " an 'N' field or an 'alpha' field"
        )
    input_node, weight = node, alpha

    def compute(docs: list[Document], frames: list[Any], keys: list[Any]) -> list[Any]:
        out: list[Any] = []
        current: Optional[float] = None
        for frame in frames:
            value = input_node(frame)
            if is_number(value):
                number = float(numeric_value(value))
                current = number if current is None else weight * number + (1 - weight) * current
            out.append(current)
        return out

    return compute


def _covariance(
    sample: bool, argument: Any, window: _Window, sort: Optional[SortSpec], context: PipelineContext
) -> Callable[..., list[Any]]:
    if not isinstance(argument, list) or len(argument) != 2:
        raise _failed("$covariance requires an array of two expressions")
    x_node, y_node = (parse(item, context.scope) for item in argument)

    def compute(docs: list[Document], frames: list[Any], keys: list[Any]) -> list[Any]:
        pairs = [(x_node(frame), y_node(frame)) for frame in frames]
        out: list[Any] = []
        for lo, hi in _bounds(window, docs, sort):
            points = [
                (float(numeric_value(x)), float(numeric_value(y)))
                for x, y in pairs[lo:hi]
                if is_number(x) and is_number(y)
            ]
            n = len(points)
            if n == 0 or (sample and n < 2):
                out.append(None)
                continue
            mx = sum(x for x, _ in points) / n
            my = sum(y for _, y in points) / n
            total = sum((x - mx) * (y - my) for x, y in points)
            out.append(total / (n - 1 if sample else n))
        return out

    return compute


def _fill(
    linear: bool, argument: Any, sort: Optional[SortSpec], context: PipelineContext
) -> Callable[..., list[Any]]:
    node = parse(argument, context.scope)

    def compute(docs: list[Document], frames: list[Any], keys: list[Any]) -> list[Any]:
        values = [node(frame) for frame in frames]
        values = [None if value is MISSING else value for value in values]
        if not linear:
            out: list[Any] = []
            last: Any = None
            for value in values:
                if value is not None:
                    last = value
                out.append(last)
            return out
        xs = [_sort_value(sort, doc) for doc in docs]
        out = list(values)
        known = [i for i, value in enumerate(values) if value is not None]
        for index in known:
            if not is_number(values[index]):
                raise CommandError(
                    5877702,
                    "PlanExecutor error during aggregation :: caused by :: Value to be filled"
                    " must be numeric",
                )
        for left, right in zip(known, known[1:]):
            if right - left < 2:
                continue
            x0, x1 = _linear_x(xs[left]), _linear_x(xs[right])
            y0, y1 = float(numeric_value(values[left])), float(numeric_value(values[right]))
            for i in range(left + 1, right):
                xi = _linear_x(xs[i])
                out[i] = y0 + (y1 - y0) * (xi - x0) / (x1 - x0) if x1 != x0 else y0
        return out

    return compute


def _linear_x(value: Any) -> float:
    ms = _as_millis(value)
    if ms is not None:
        return float(ms)
    if not is_number(value):
        raise CommandError(
            5877701,
            "PlanExecutor error during aggregation :: caused by :: The sortBy field for"
            " $linearFill must be numeric or a date",
        )
    return float(numeric_value(value))


def _parse_output(
    field: str, spec: Any, sort: Optional[SortSpec], context: PipelineContext
) -> _Output:
    check_path(field)
    if not isinstance(spec, Mapping):
        raise _failed(f"The field '{field}' must be an object")
    function: Optional[str] = None
    argument: Any = None
    window = _Window(None, None, None, None)
    has_window = False
    for name, value in spec.items():
        text = str(name)
        if text == "window":
            window = _parse_window(value)
            has_window = True
        elif text.startswith("$"):
            if function is not None:
                raise _failed(f"Window function found an unknown argument: {text}")
            function, argument = text, value
        else:
            raise _failed(f"Window function found an unknown argument: {text}")
    if function is None:
        first = next(iter(spec), "")
        raise _failed("Expected a $-prefixed window function" + (f", {first}" if first else ""))
    if function in _NEEDS_SORT and sort is None:
        raise _failed(f"'{function}' requires a sortBy")
    if has_window and function in _NO_WINDOW:
        raise _failed(f"{function} does not accept a 'window' field")
    if window.kind == "range" and (sort is None or len(sort.fields) != 1):
        raise _failed("Range-based window requires sortBy a single field")
    if (
        window.kind == "documents"
        and sort is None
        and not (window.lower == "unbounded" and window.upper == "unbounded")
    ):
        raise _failed("Document-based bounds require a sortBy")
    compute: Callable[..., list[Any]]
    if function in _ACCUMULATORS:
        compute = _accumulator_output(function, argument, window, sort, context)
    elif function in ("$rank", "$denseRank", "$documentNumber"):
        if not (isinstance(argument, Mapping) and not argument):
            raise _failed(f"{function} requires an empty object as its argument")
        if function != "$documentNumber" and len(sort.fields) != 1:  # type: ignore[union-attr]
            raise _failed(
                f"{function} must be specified with a top level sortBy expression with exactly"
                " one element"
            )
        compute = _ranks(function == "$denseRank", function == "$documentNumber")
    elif function == "$shift":
        compute = _shift(argument, context)
    elif function in ("$derivative", "$integral"):
        if function == "$derivative" and not has_window:
            raise _failed("$derivative requires explicit window bounds")
        if len(sort.fields) != 1:  # type: ignore[union-attr]
            raise _failed(f"{function} requires a sortBy that has exactly one field")
        compute = _derivative_or_integral(function, argument, window, sort, context)
    elif function == "$expMovingAvg":
        compute = _exp_moving_avg(argument, context)
    elif function in ("$covariancePop", "$covarianceSamp"):
        compute = _covariance(function == "$covarianceSamp", argument, window, sort, context)
    elif function in ("$linearFill", "$locf"):
        if function == "$linearFill" and len(sort.fields) != 1:  # type: ignore[union-attr]
            raise _failed("$linearFill requires a sortBy that has exactly one field")
        compute = _fill(function == "$linearFill", argument, sort, context)
    else:
        raise _failed(f"Unrecognized window function, {function}")
    return _Output(split(field), field, compute)


@register("$setWindowFields")
def parse_set_window_fields(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            14,
            "the $setWindowFields stage specification must be an object, found "
            + type_name_of(spec),
        )
    partition: Optional[Node] = None
    sort: Optional[SortSpec] = None
    output_spec: Any = None
    for name, value in spec.items():
        if name == "partitionBy":
            partition = parse(value, context.scope)
        elif name == "sortBy":
            sort = parse_sort_spec(value, context.collation, stage="$setWindowFields sortBy")
        elif name == "output":
            if not isinstance(value, Mapping):
                raise CommandError(
                    14,
                    f"BSON field '$setWindowFields.output' is the wrong type"
                    f" '{type_name_of(value)}', expected type 'object'",
                )
            output_spec = value
        else:
            raise CommandError(40415, f"BSON field '$setWindowFields.{name}' is an unknown field.")
    if output_spec is None:
        raise CommandError(
            40414, "BSON field '$setWindowFields.output' is missing but a required field"
        )
    outputs = [
        _parse_output(str(field), value, sort, context) for field, value in output_spec.items()
    ]
    return SetWindowFields(partition, sort, outputs, context)
