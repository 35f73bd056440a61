"""Accumulators (MongoDB manual, "Accumulators ($group, $bucket, $bucketAuto,
$setWindowFields)"; the server's ``AccumulatorState`` subclasses), and the
expressions that apply them to one document's values.

An accumulator is parsed once into an :class:`AccumulatorSpec`: its ``argument``
expression gives the value each document contributes, its ``initializer`` (``n`` of
``$firstN``, ``$topN``, ...; None for the others) is evaluated once per group, and
:meth:`AccumulatorSpec.create` makes a fresh :class:`Accumulator` for a group, whose
``process`` takes the documents' values in order and whose ``result`` is the group's
value. The stages call :func:`parse_accumulator_field` for a field of ``$group`` or
``$bucket`` (with the server's checks of the field) and :func:`parse_accumulator` for
an accumulator they hold otherwise.

Semantics, as 7.0 has them: ``$sum`` and ``$avg`` ignore what is not a number and sum
exactly before rounding (the server's double-double summation), with the widest type
of the inputs (an int sum that overflows is a long, a long sum that overflows a
double); ``$min`` and ``$max`` ignore null, missing and undefined and keep the first of
equal values; ``$first`` and ``$last`` give null for a missing value; ``$push`` and
``$addToSet`` leave missing values out (``$addToSet`` keeps the first of equal values, in
the order they came); ``$stdDevPop``/``$stdDevSamp`` use Welford's algorithm over
doubles; ``$mergeObjects`` merges documents in order, ignoring null and missing ones;
``$top``/``$bottom``/``$topN``/``$bottomN`` order by ``sortBy`` as ``$sort`` orders
(an array field by its smallest or largest element), keeping the first of ties;
``$median`` and ``$percentile`` (method ``approximate``) give the discrete percentile,
the value at rank ``ceil(p * n) - 1`` of the numeric inputs as doubles, which is what
the server's t-digest gives while it holds every input separately (inputs in the
thousands; beyond, a server's answer is an approximation of it).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Callable, Optional

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.comparison import compare_values, sort_key
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    arguments,
    constant,
    constant_value,
    fold,
    is_constant,
    operator,
    parse,
)
from mongocore.sim.engine.expressions.numbers import (
    DECIMAL,
    INT64_MAX,
    INT64_MIN,
    as_long,
    decimal128,
    double_to_decimal,
    int_or_long,
    kind,
    to_decimal,
    to_double,
    widest,
)
from mongocore.sim.engine.render import render, value_string
from mongocore.sim.engine.sort import sort_values
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING

__all__ = [
    "ACCUMULATORS",
    "Accumulator",
    "AccumulatorSpec",
    "Descending",
    "ExactSum",
    "MergeObjects",
    "discrete_percentiles",
    "parse_accumulator",
    "parse_accumulator_field",
    "parse_sort_by",
    "sort_key_of",
    "validate_n",
]


class Accumulator:
    """The state of one accumulator over one group's documents."""

    __slots__ = ()

    def process(self, value: Any) -> None:
        """Take one document's value of the argument expression."""
        raise NotImplementedError

    def result(self) -> Any:
        """The group's value."""
        raise NotImplementedError


class AccumulatorSpec:
    """A parsed accumulator: what to evaluate per document and per group, and how to
    make a group's state."""

    __slots__ = ("_factory", "argument", "initializer", "name")

    def __init__(
        self,
        name: str,
        argument: Node,
        factory: Callable[[Any], Accumulator],
        initializer: Optional[Node] = None,
    ) -> None:
        self.name = name
        #: Evaluated on each document; the value goes to :meth:`Accumulator.process`.
        self.argument = argument
        #: Evaluated once per group (``n``); None when the accumulator has none.
        self.initializer = initializer
        self._factory = factory

    def create(self, initial: Any = MISSING) -> Accumulator:
        """A new group's state; ``initial`` is the initializer's value for the group."""
        return self._factory(initial)


#: The accumulator parsers by name: (argument value, scope) -> AccumulatorSpec.
ACCUMULATORS: dict[str, Callable[[Any, Scope], AccumulatorSpec]] = {}


def parse_accumulator(name: str, value: Any, scope: Scope) -> AccumulatorSpec:
    """Parse ``{name: value}`` as an accumulator (the server's 15952 for a name it does
    not know as one)."""
    parser = ACCUMULATORS.get(name)
    if parser is None:
        if name == "$accumulator":
            raise CommandError(238, "$accumulator is not implemented by the simulator")
        raise CommandError(15952, f"unknown group operator '{name}'")
    return parser(value, scope)


def parse_accumulator_field(field: str, spec: Any, scope: Scope) -> AccumulatorSpec:
    """Parse one accumulated field of ``$group`` or ``$bucket`` (``field: {$op: arg}``)
    with the server's checks of the field (AccumulationStatement)."""
    if not (isinstance(spec, Mapping) and spec and str(next(iter(spec))).startswith("$")):
        raise CommandError(40234, f"The field '{field}' must be an accumulator object")
    if "." in field:
        raise CommandError(40235, f"The field name '{field}' cannot contain '.'")
    if field.startswith("$"):
        raise CommandError(40236, f"The field name '{field}' cannot be an operator name")
    if len(spec) != 1:
        raise CommandError(40238, f"The field '{field}' must specify one accumulator")
    ((name, value),) = spec.items()
    if isinstance(value, list):
        raise CommandError(40237, f"The {name} accumulator is a unary operator")
    return parse_accumulator(str(name), value, scope)


def _simple(name: str, factory: Callable[[], Accumulator]) -> None:
    def parse_simple(value: Any, scope: Scope) -> AccumulatorSpec:
        return AccumulatorSpec(name, parse(value, scope), lambda initial: factory())

    ACCUMULATORS[name] = parse_simple


# -- sums -----------------------------------------------------------------------------------


class ExactSum:
    """A sum of ints, longs and doubles as the server's DoubleDoubleSummation keeps it:
    exact (integers as integers, doubles as Shewchuk partials), rounded once."""

    __slots__ = ("integer", "partials", "special")

    def __init__(self) -> None:
        self.integer = 0
        self.partials: list[float] = []
        #: The sum of the infinities and NaNs added (0.0 when there were none).
        self.special = 0.0

    def add_integer(self, number: int) -> None:
        self.integer += number

    def add_double(self, number: float) -> None:
        if not math.isfinite(number):
            self.special += number
            return
        partials = self.partials
        count = 0
        for partial in partials:
            other = partial
            if abs(number) < abs(other):
                number, other = other, number
            high = number + other
            low = other - (high - number)
            if low:
                partials[count] = low
                count += 1
            number = high
        if not math.isfinite(number):
            # The running sum overflowed: the result is that infinity from now on.
            self.special += number
            self.partials = []
            return
        partials[count:] = [number]

    def _integer_parts(self) -> list[float]:
        high = float(self.integer)
        return [high, float(self.integer - int(high))] if math.isfinite(high) else [high]

    def double(self) -> float:
        if self.special != 0.0 or math.isnan(self.special):
            return self.special
        parts = [*self.partials, *self._integer_parts()]
        try:
            return math.fsum(parts)
        except (OverflowError, ValueError):
            return math.inf if sum(parts) > 0 else -math.inf

    def fits_long(self) -> bool:
        return not self.partials and self.special == 0.0 and INT64_MIN <= self.integer <= INT64_MAX

    def decimal(self) -> Decimal:
        """The sum as a decimal: its high and low doubles at 34 digits, added."""
        if not self.partials and self.special == 0.0:
            return Decimal(self.integer)
        high = self.double()
        if not math.isfinite(high):
            return Decimal(high)
        low = math.fsum([*self.partials, *self._integer_parts(), -high])
        return DECIMAL.add(double_to_decimal(high, 34), double_to_decimal(low, 34))


class _Sum(Accumulator):
    __slots__ = ("decimal_total", "total", "widest")

    def __init__(self) -> None:
        self.total = ExactSum()
        self.decimal_total: Optional[Decimal] = None
        self.widest = "int"

    def process(self, value: Any) -> None:
        number_kind = kind(value)
        if number_kind is None:
            return
        self.widest = widest(self.widest, number_kind)
        if number_kind == "double":
            self.total.add_double(value)
        elif number_kind == "decimal":
            self.decimal_total = DECIMAL.add(self.decimal_total or Decimal(0), to_decimal(value))
        else:
            self.total.add_integer(int(value))

    def result(self) -> Any:
        if self.widest in ("int", "long") and self.total.fits_long():
            if self.widest == "int":
                return int_or_long(self.total.integer)
            return Int64(self.total.integer)
        if self.widest != "decimal":
            return self.total.double()
        return decimal128(DECIMAL.add(self.decimal_total or Decimal(0), self.total.decimal()))


class _Avg(Accumulator):
    __slots__ = ("count", "decimal_total", "total")

    def __init__(self) -> None:
        self.total = ExactSum()
        self.decimal_total: Optional[Decimal] = None
        self.count = 0

    def process(self, value: Any) -> None:
        number_kind = kind(value)
        if number_kind is None:
            return
        if number_kind == "double":
            self.total.add_double(value)
        elif number_kind == "decimal":
            self.decimal_total = DECIMAL.add(self.decimal_total or Decimal(0), to_decimal(value))
        else:
            self.total.add_integer(int(value))
        self.count += 1

    def result(self) -> Any:
        if self.count == 0:
            return None
        if self.decimal_total is not None:
            total = DECIMAL.add(self.decimal_total, self.total.decimal())
            return decimal128(DECIMAL.divide(total, Decimal(self.count)))
        return self.total.double() / self.count


class _StdDev(Accumulator):
    __slots__ = ("count", "m2", "mean", "sample")

    def __init__(self, sample: bool) -> None:
        self.sample = sample
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def process(self, value: Any) -> None:
        if kind(value) is None:
            return
        number = to_double(value)
        self.count += 1
        delta = number - self.mean
        if delta != 0.0:
            self.mean += delta / self.count
            self.m2 += delta * (number - self.mean)

    def result(self) -> Any:
        count = self.count - 1 if self.sample else self.count
        if count <= 0:
            return None
        return math.sqrt(self.m2 / count)


_simple("$sum", _Sum)
_simple("$avg", _Avg)
_simple("$stdDevPop", lambda: _StdDev(False))
_simple("$stdDevSamp", lambda: _StdDev(True))


def _parse_count(value: Any, scope: Scope) -> AccumulatorSpec:
    if not (isinstance(value, Mapping) and not value):
        raise CommandError(14, "$count takes no arguments, i.e. $count:{}")
    return AccumulatorSpec("$count", constant(1), lambda initial: _Sum())


ACCUMULATORS["$count"] = _parse_count


# -- first, last, min, max ----------------------------------------------------------------------


class _First(Accumulator):
    __slots__ = ("seen", "value")

    def __init__(self) -> None:
        self.seen = False
        self.value: Any = None

    def process(self, value: Any) -> None:
        if not self.seen:
            self.seen = True
            self.value = None if value is MISSING else value

    def result(self) -> Any:
        return self.value


class _Last(Accumulator):
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: Any = None

    def process(self, value: Any) -> None:
        self.value = None if value is MISSING else value

    def result(self) -> Any:
        return self.value


class _MinMax(Accumulator):
    __slots__ = ("collation", "sense", "value")

    def __init__(self, sense: int, collation: Optional[Collation]) -> None:
        self.sense = sense  # 1 keeps the smallest, -1 the largest
        self.collation = collation
        self.value: Any = MISSING

    def process(self, value: Any) -> None:
        if nullish(value):
            return
        current = self.value
        if current is MISSING or compare_values(current, value, self.collation) * self.sense > 0:
            self.value = value

    def result(self) -> Any:
        return None if self.value is MISSING else self.value


def _parse_with_collation(
    name: str, make: Callable[[Optional[Collation]], Accumulator]
) -> Callable[[Any, Scope], AccumulatorSpec]:
    def parse_accumulator_value(value: Any, scope: Scope) -> AccumulatorSpec:
        collation = scope.collation
        return AccumulatorSpec(name, parse(value, scope), lambda initial: make(collation))

    return parse_accumulator_value


_simple("$first", _First)
_simple("$last", _Last)
ACCUMULATORS["$min"] = _parse_with_collation("$min", lambda c: _MinMax(1, c))
ACCUMULATORS["$max"] = _parse_with_collation("$max", lambda c: _MinMax(-1, c))


# -- push, addToSet, mergeObjects ---------------------------------------------------------------


class _Push(Accumulator):
    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: list[Any] = []

    def process(self, value: Any) -> None:
        if value is not MISSING:
            self.values.append(value)

    def result(self) -> Any:
        return list(self.values)


class _AddToSet(Accumulator):
    __slots__ = ("collation", "keys", "values")

    def __init__(self, collation: Optional[Collation]) -> None:
        self.collation = collation
        self.keys: set[Any] = set()
        self.values: list[Any] = []

    def process(self, value: Any) -> None:
        if value is MISSING:
            return
        value_key = sort_key(value, self.collation)
        if value_key not in self.keys:
            self.keys.add(value_key)
            self.values.append(value)

    def result(self) -> Any:
        return list(self.values)


class MergeObjects(Accumulator):
    """``$mergeObjects``: the fields of the documents in order, later values replacing
    earlier ones in place (null and missing inputs ignored; missing fields too)."""

    __slots__ = ("merged",)

    def __init__(self) -> None:
        self.merged: dict[str, Any] = {}

    def process(self, value: Any) -> None:
        if nullish(value):
            return
        if not isinstance(value, Mapping):
            raise CommandError(
                40400,
                f"$mergeObjects requires object inputs, but input {value_string(value)} is of"
                f" type {type_name(value)}",
            )
        for name, item in value.items():
            if item is not MISSING:
                self.merged[name] = item

    def result(self) -> Any:
        return dict(self.merged)


_simple("$push", _Push)
ACCUMULATORS["$addToSet"] = _parse_with_collation("$addToSet", _AddToSet)
_simple("$mergeObjects", MergeObjects)


# -- the 'n' accumulators -----------------------------------------------------------------------


def validate_n(value: Any) -> int:
    """The ``n`` of an accumulator: a positive integral number (AccumulatorN::validateN)."""
    if kind(value) is None:
        raise CommandError(
            5787902, f"Value for 'n' must be of integral type, but found {value_string(value)}"
        )
    number = as_long(value)
    if number != to_double(value):
        raise CommandError(
            5787903, f"Value for 'n' must be of integral type, but found {value_string(value)}"
        )
    if number <= 0:
        raise CommandError(5787908, f"'n' must be greater than 0, found {number}")
    return number


class _FirstLastN(Accumulator):
    __slots__ = ("first", "n", "values")

    def __init__(self, n: int, first: bool) -> None:
        self.n = n
        self.first = first
        self.values: deque[Any] = deque()

    def process(self, value: Any) -> None:
        value = None if value is MISSING else value
        if len(self.values) == self.n:
            if self.first:
                return
            self.values.popleft()
        self.values.append(value)

    def result(self) -> Any:
        return list(self.values)


class _MinMaxN(Accumulator):
    __slots__ = ("collation", "keys", "n", "sense", "values")

    def __init__(self, n: int, sense: int, collation: Optional[Collation]) -> None:
        self.n = n
        self.sense = sense  # 1: the n smallest, -1: the n largest
        self.collation = collation
        self.keys: list[Any] = []
        self.values: list[Any] = []

    def process(self, value: Any) -> None:
        if nullish(value):
            return
        value_key = sort_key(value, self.collation)
        keys = self.keys
        if len(keys) == self.n:
            # Kept in ascending order; the one to compare with is the largest for $minN,
            # the smallest for $maxN.
            index = len(keys) - 1 if self.sense > 0 else 0
            boundary = keys[index]
            replaces = value_key < boundary if self.sense > 0 else value_key > boundary
            if not replaces:
                return
            del keys[index]
            del self.values[index]
        position = bisect.bisect_right(keys, value_key)
        keys.insert(position, value_key)
        self.values.insert(position, value)

    def result(self) -> Any:
        return list(self.values) if self.sense > 0 else list(reversed(self.values))


def _parse_n_args(name: str, code: int, value: Any, scope: Scope) -> tuple[Node, Node]:
    if not isinstance(value, Mapping):
        raise CommandError(code, f"specification must be an object; found {name}: {render(value)}")
    n: Optional[Node] = None
    input_node: Optional[Node] = None
    for field, item in value.items():
        if field == "input":
            input_node = parse(item, scope)
        elif field == "n":
            n = parse(item, scope)
        else:
            raise CommandError(5787901, f"Unknown argument for 'n' operator: {field}")
    if n is None:
        raise CommandError(5787906, "Missing value for 'n'")
    if input_node is None:
        raise CommandError(5787907, "Missing value for 'input'")
    return n, input_node


def _n_accumulator(
    name: str, code: int, make: Callable[[int, Optional[Collation]], Accumulator]
) -> None:
    def parse_n_accumulator(value: Any, scope: Scope) -> AccumulatorSpec:
        n, input_node = _parse_n_args(name, code, value, scope)
        collation = scope.collation
        return AccumulatorSpec(
            name, input_node, lambda initial: make(validate_n(initial), collation), n
        )

    ACCUMULATORS[name] = parse_n_accumulator

    def parse_n_expression(value: Any, scope: Scope) -> Node:
        n, input_node = _parse_n_args(name, code, value, scope)
        collation = scope.collation

        def node(frame: Frame) -> Any:
            accumulator = make(validate_n(n(frame)), collation)
            values = input_node(frame)
            if not isinstance(values, list):
                raise CommandError(5788200, "Input must be an array")
            for item in values:
                accumulator.process(item)
            return accumulator.result()

        return fold(node, [n, input_node])

    operator(name)(parse_n_expression)


_n_accumulator("$firstN", 5787801, lambda n, c: _FirstLastN(n, True))
_n_accumulator("$lastN", 5787801, lambda n, c: _FirstLastN(n, False))
_n_accumulator("$minN", 5787900, lambda n, c: _MinMaxN(n, 1, c))
_n_accumulator("$maxN", 5787900, lambda n, c: _MinMaxN(n, -1, c))


# -- top and bottom -----------------------------------------------------------------------------


class Descending:
    """A sort key component that orders in reverse."""

    __slots__ = ("key",)

    def __init__(self, value_key: Any) -> None:
        self.key = value_key

    def __lt__(self, other: Descending) -> bool:
        return bool(self.key > other.key)

    def __gt__(self, other: Descending) -> bool:
        return bool(self.key < other.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descending) and bool(self.key == other.key)

    def __hash__(self) -> int:
        return hash(self.key)


def parse_sort_by(name: str, spec: Any) -> list[tuple[tuple[str, ...], int]]:
    """A ``sortBy`` document: each field path and its direction (a SortPattern)."""
    if not isinstance(spec, Mapping):
        raise CommandError(10065, "invalid parameter: expected an object (sortBy)")
    fields: list[tuple[tuple[str, ...], int]] = []
    for field, direction in spec.items():
        path = str(field)
        if isinstance(direction, Mapping):
            raise CommandError(
                238, f"$meta sort keys in {name} are not implemented by the simulator"
            )
        if kind(direction) is None:
            raise CommandError(
                15974,
                "Illegal key in $sort specification: " + f"{path}: {render(direction)}",
            )
        number = to_double(direction)
        if number not in (1, -1):
            raise CommandError(
                15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"
            )
        if not path:
            raise CommandError(40352, "FieldPath cannot be constructed with empty string")
        if path.startswith("$"):
            raise CommandError(16410, "FieldPath field names may not start with '$'.")
        fields.append((tuple(path.split(".")), int(number)))
    if not fields:
        raise CommandError(15976, f"{name} sortBy must have at least one sort key")
    return fields


def sort_key_of(
    values: list[Any], fields: list[tuple[tuple[str, ...], int]], collation: Optional[Collation]
) -> tuple[Any, ...]:
    """The composite key of the sortBy fields' values, as ``$sort`` orders them."""
    out: list[Any] = []
    for value, (_, direction) in zip(values, fields):
        keys = [sort_key(v, collation) for v in sort_values({"v": value}, ("v",))]
        if direction > 0:
            out.append(min(keys))
        else:
            out.append(Descending(max(keys)))
    return tuple(out)


class _TopBottomN(Accumulator):
    __slots__ = ("bottom", "collation", "fields", "keys", "n", "outputs", "single")

    def __init__(
        self,
        n: int,
        bottom: bool,
        single: bool,
        fields: list[tuple[tuple[str, ...], int]],
        collation: Optional[Collation],
    ) -> None:
        self.n = n
        self.bottom = bottom
        self.single = single
        self.fields = fields
        self.collation = collation
        self.keys: list[Any] = []
        self.outputs: list[Any] = []

    def process(self, value: Any) -> None:
        output, sort_values_ = value
        output = None if output is MISSING else output
        value_key = sort_key_of(sort_values_, self.fields, self.collation)
        keys = self.keys
        if len(keys) == self.n:
            index = 0 if self.bottom else len(keys) - 1
            boundary = keys[index]
            replaces = value_key > boundary if self.bottom else value_key < boundary
            if not replaces:
                return
            del keys[index]
            del self.outputs[index]
        position = bisect.bisect_right(keys, value_key)
        keys.insert(position, value_key)
        self.outputs.insert(position, output)

    def result(self) -> Any:
        if self.single:
            return self.outputs[0] if self.outputs else None
        return list(self.outputs)


def _top_bottom(name: str, bottom: bool, single: bool) -> None:
    def parse_top_bottom(value: Any, scope: Scope) -> AccumulatorSpec:
        if not isinstance(value, Mapping):
            raise CommandError(
                5788001, f"specification must be an object; found {name}: {render(value)}"
            )
        n: Optional[Node] = None
        output: Any = MISSING
        sort_by: Any = MISSING
        for field, item in value.items():
            if field == "n" and not single:
                n = parse(item, scope)
            elif field == "output":
                output = item
            elif field == "sortBy":
                sort_by = item
            else:
                raise CommandError(5788002, f"Unknown argument to {name} '{field}'")
        if single:
            n = constant(1)
        elif n is None:
            raise CommandError(5788003, "Missing value for 'n'")
        if output is MISSING:
            raise CommandError(5788004, "Missing value for 'output'")
        if sort_by is MISSING:
            raise CommandError(5788005, "Missing value for 'sortBy'")
        fields = parse_sort_by(name, sort_by)
        output_node = parse(output, scope)
        sort_nodes = [parse("$" + ".".join(parts), scope) for parts, _ in fields]

        def argument(frame: Frame) -> Any:
            return (output_node(frame), [child(frame) for child in sort_nodes])

        collation = scope.collation
        return AccumulatorSpec(
            name,
            argument,
            lambda initial: _TopBottomN(validate_n(initial), bottom, single, fields, collation),
            n,
        )

    ACCUMULATORS[name] = parse_top_bottom


_top_bottom("$top", False, True)
_top_bottom("$bottom", True, True)
_top_bottom("$topN", False, False)
_top_bottom("$bottomN", True, False)


# -- median and percentile ----------------------------------------------------------------------


def discrete_percentiles(samples: list[float], ps: list[float]) -> list[Any]:
    """The discrete percentiles of ``samples``: for each p, the sample of rank
    ``ceil(p * n) - 1`` (the smallest at p = 0); nulls when there is no sample."""
    if not samples:
        return [None] * len(ps)
    ordered = sorted(samples, key=lambda x: (not math.isnan(x), x))
    count = len(ordered)
    out: list[Any] = []
    for p in ps:
        rank = max(0, math.ceil(p * count) - 1)
        out.append(ordered[min(rank, count - 1)])
    return out


class _Percentile(Accumulator):
    __slots__ = ("median", "ps", "samples")

    def __init__(self, ps: list[float], median: bool) -> None:
        self.ps = ps
        self.median = median
        self.samples: list[float] = []

    def process(self, value: Any) -> None:
        if kind(value) is not None:
            self.samples.append(to_double(value))

    def result(self) -> Any:
        values = discrete_percentiles(self.samples, self.ps)
        return values[0] if self.median else values


def _parse_quantile_spec(name: str, value: Any, scope: Scope) -> tuple[Node, list[float]]:
    # The IDL of AccumulatorPercentileSpec / AccumulatorMedianSpec: input, p (not for
    # $median) and method, all required.
    wanted = ("input", "method") if name == "$median" else ("input", "p", "method")
    seen: dict[str, Any] = {}
    for field, item in value.items():
        if field not in wanted:
            raise CommandError(40415, f"BSON field '{name}.{field}' is an unknown field.")
        if field in seen:
            raise CommandError(40413, f"BSON field '{name}.{field}' is a duplicate field")
        seen[str(field)] = item
    for field in wanted:
        if field not in seen:
            raise CommandError(
                40414, f"BSON field '{name}.{field}' is missing but a required field"
            )
    method = seen["method"]
    if not isinstance(method, str):
        raise CommandError(
            14,
            f"BSON field '{name}.method' is the wrong type '{type_name(method)}', expected type"
            " 'string'",
        )
    if method != "approximate":
        raise CommandError(2, "Currently only 'approximate' can be used as percentile 'method'.")
    input_node = parse(seen["input"], scope)
    if name == "$median":
        return input_node, [0.5]
    return input_node, _parse_p(seen["p"], scope)


def _parse_p(value: Any, scope: Scope) -> list[float]:
    node = parse(value, scope)
    if not is_constant(node):
        raise CommandError(
            7750300,
            "The $percentile 'p' field must be an array of constant values, but found value: "
            + f"{render(value)}.",
        )
    p_values = constant_value(node)
    message = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: "
    if not isinstance(p_values, list) or not p_values:
        raise CommandError(7750301, message + value_string(p_values))
    ps: list[float] = []
    for item in p_values:
        if kind(item) is None:
            raise CommandError(7750302, message + value_string(item))
        p = to_double(item)
        if p < 0 or p > 1:
            raise CommandError(7750303, message + format(p, "g"))
        ps.append(p)
    return ps


def _quantile(name: str, accumulator_code: int, expression_code: int) -> None:
    median = name == "$median"

    def parse_quantile_accumulator(value: Any, scope: Scope) -> AccumulatorSpec:
        if not isinstance(value, Mapping):
            raise CommandError(
                accumulator_code, f"specification must be an object; found {name}: {render(value)}"
            )
        input_node, ps = _parse_quantile_spec(name, value, scope)
        return AccumulatorSpec(name, input_node, lambda initial: _Percentile(ps, median))

    ACCUMULATORS[name] = parse_quantile_accumulator

    def parse_quantile_expression(value: Any, scope: Scope) -> Node:
        if not isinstance(value, Mapping):
            raise CommandError(
                expression_code, f"specification must be an object; found {name}: {render(value)}"
            )
        input_node, ps = _parse_quantile_spec(name, value, scope)

        def node(frame: Frame) -> Any:
            values = input_node(frame)
            if kind(values) is not None:
                results: list[Any] = [to_double(values)] * len(ps)
            elif isinstance(values, list) and values:
                samples = [to_double(v) for v in values if kind(v) is not None]
                results = discrete_percentiles(samples, ps)
            else:
                results = [None] * len(ps)
            return results[0] if median else results

        return fold(node, [input_node])

    operator(name)(parse_quantile_expression)


_quantile("$percentile", 7429703, 7436200)
_quantile("$median", 7436100, 7436201)


# -- accumulators as expressions ------------------------------------------------------------------


def _plain_int_sum(items: list[Any]) -> Any:
    # The sum of ints (32 bits) only, or MISSING when there is anything else.
    total = 0
    for item in items:
        if type(item) is not int or not -2147483648 <= item <= 2147483647:
            return MISSING
        total += item
    return int_or_long(total)


def _expression_form(name: str, make: Callable[[Optional[Collation]], Accumulator]) -> None:
    """An accumulator applied to one document's values (ExpressionFromAccumulator): one
    operand that is an array contributes its elements, otherwise each operand its value."""

    def parse_expression_form(value: Any, scope: Scope) -> Node:
        nodes = arguments(value, scope)
        collation = scope.collation
        is_sum = name == "$sum"

        def node(frame: Frame) -> Any:
            if len(nodes) == 1:
                single = nodes[0](frame)
                if is_sum and type(single) is list:
                    total = _plain_int_sum(single)
                    if total is not MISSING:
                        return total
                accumulator = make(collation)
                if isinstance(single, list):
                    for item in single:
                        accumulator.process(item)
                else:
                    accumulator.process(single)
                return accumulator.result()
            accumulator = make(collation)
            for child in nodes:
                accumulator.process(child(frame))
            return accumulator.result()

        return fold(node, nodes)

    operator(name)(parse_expression_form)


_expression_form("$sum", lambda c: _Sum())
_expression_form("$avg", lambda c: _Avg())
_expression_form("$min", lambda c: _MinMax(1, c))
_expression_form("$max", lambda c: _MinMax(-1, c))
_expression_form("$stdDevPop", lambda c: _StdDev(False))
_expression_form("$stdDevSamp", lambda c: _StdDev(True))
_expression_form("$mergeObjects", lambda c: MergeObjects())
