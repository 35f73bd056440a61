"""Arithmetic expressions (MongoDB manual, "Arithmetic Expression Operators"):
``$add``, ``$subtract``, ``$multiply``, ``$divide``, ``$mod``, ``$abs``, ``$ceil``,
``$floor``, ``$exp``, ``$ln``, ``$log``, ``$log10``, ``$pow``, ``$sqrt``, ``$round``
and ``$trunc``.

Each follows its 7.0 server implementation: a null or missing operand makes the
result null (``$add`` and ``$multiply`` stop at the first one, as they evaluate left to
right), the result has the widest operand type (numbers.py), an int result that
overflows is a long and a long that overflows is a double, and a date takes part in
``$add`` and ``$subtract`` as its milliseconds. The errors are the server's: TypeMismatch
(14) for a non-numeric operand of ``$add``, ``$subtract``, ``$multiply`` and ``$divide``,
BadValue (2) for a division by zero, the operators' own location codes elsewhere.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any, Callable

from bson import Decimal128, Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    arguments,
    fixed_arguments,
    fold,
    operator,
    ranged_arguments,
)
from mongocore.sim.engine.expressions.datetimes import from_millis, is_date, to_millis
from mongocore.sim.engine.expressions.numbers import (
    DECIMAL,
    INT64_MAX,
    INT64_MIN,
    as_long,
    decimal128,
    double_to_decimal,
    format_double,
    int_or_long,
    is_integral,
    kind,
    to_decimal,
    to_double,
    widest,
)
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING, UNDEFINED

__all__ = ["nullish", "numeric_result"]


def nullish(value: Any) -> bool:
    """Null, missing or undefined (``Value::nullish``)."""
    return value is None or value is MISSING or value is UNDEFINED


def _fits_long(number: int) -> bool:
    return INT64_MIN <= number <= INT64_MAX


def numeric_result(number_kind: str, value: Any) -> Any:
    """``value`` (an int, a float or a Decimal) as a BSON number of ``number_kind``."""
    if number_kind == "int":
        return int_or_long(value)
    if number_kind == "long":
        return Int64(value)
    if number_kind == "double":
        return float(value)
    return decimal128(value)


# -- $add ---------------------------------------------------------------------------------------


def _date_overflow() -> CommandError:
    return CommandError(15, "date overflow")


class _Sum:
    """The server's AddState: a long total (a double once it overflows), a double and a
    decimal total, the widest type so far, and whether a date took part."""

    __slots__ = ("decimal_total", "double_total", "is_date", "long_total", "widest")

    def __init__(self) -> None:
        self.long_total = 0
        self.double_total = 0.0
        self.decimal_total = Decimal(0)
        self.widest = "int"
        self.is_date = False

    def add(self, operand: Any) -> None:
        old = self.widest
        if is_date(operand):
            if self.is_date:
                raise CommandError(16612, "only one date allowed in an $add expression")
            previous = self.value()
            self.long_total = 0
            self._add_to_date(previous)
            self.is_date = True
            self._add_to_date(to_millis(operand))
            return
        number_kind = kind(operand)
        assert number_kind is not None
        if self.is_date:
            self._add_to_date(operand)
            return
        self.widest = widest(old, number_kind)
        if old != self.widest:
            if self.widest == "double":
                if old in ("int", "long"):
                    self.double_total = float(self.long_total)
            elif self.widest == "decimal":
                if old in ("int", "long"):
                    self.decimal_total = Decimal(self.long_total)
                else:
                    self.decimal_total = double_to_decimal(self.double_total)
        if self.widest in ("int", "long"):
            total = self.long_total + int(operand)
            if _fits_long(total):
                self.long_total = total
            else:
                self.widest = "double"
                self.double_total = float(self.long_total) + to_double(operand)
        elif self.widest == "double":
            self.double_total += to_double(operand)
        else:
            self.decimal_total = DECIMAL.add(self.decimal_total, to_decimal(operand))

    def _add_to_date(self, operand: Any) -> None:
        number_kind = kind(operand)
        if number_kind in ("int", "long"):
            total = self.long_total + int(operand)
        elif number_kind == "double":
            if not (-(2.0**63) <= operand < 2.0**63):
                raise _date_overflow()
            total = self.long_total + _round_half_away(operand)
        else:
            number = to_decimal(operand)
            if not number.is_finite():
                raise _date_overflow()
            rounded = int(number.to_integral_value(ROUND_HALF_EVEN))
            if not _fits_long(rounded):
                raise _date_overflow()
            total = self.long_total + rounded
        if not _fits_long(total):
            raise _date_overflow()
        self.long_total = total

    def value(self) -> Any:
        if self.is_date:
            return from_millis(self.long_total)
        if self.widest == "int":
            return int_or_long(self.long_total)
        if self.widest == "long":
            return Int64(self.long_total)
        if self.widest == "double":
            return self.double_total
        return decimal128(self.decimal_total)


def _round_half_away(number: float) -> int:
    # C's llround.
    return math.floor(number + 0.5) if number >= 0 else -math.floor(-number + 0.5)


@operator("$add")
def _parse_add(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)

    def add(frame: Frame) -> Any:
        total = _Sum()
        for child in nodes:
            operand = child(frame)
            if nullish(operand):
                return None
            if kind(operand) is None and not is_date(operand):
                raise CommandError(
                    14, f"$add only supports numeric or date types, not {type_name(operand)}"
                )
            total.add(operand)
        return total.value()

    def add_plain(frame: Frame) -> Any:
        # The common case, ints (32 bits) and doubles, without the general state: the
        # same left-to-right result (ints summed exactly until the first double).
        long_total = 0
        double_total = 0.0
        is_double = False
        for child in nodes:
            operand = child(frame)
            operand_type = type(operand)
            if operand_type is int and -2147483648 <= operand <= 2147483647:
                if is_double:
                    double_total += operand
                else:
                    long_total += operand
            elif operand_type is float:
                if not is_double:
                    double_total = float(long_total)
                    is_double = True
                double_total += operand
            else:
                return add(frame)
        return double_total if is_double else int_or_long(long_total)

    return fold(add_plain, nodes)


# -- $subtract ----------------------------------------------------------------------------------


def subtract(left: Any, right: Any) -> Any:
    """``left - right`` as ``$subtract`` computes it."""
    left_type, right_type = type(left), type(right)
    if left_type is float and (right_type is float or right_type is int):
        return left - float(right)
    if (
        left_type is int
        and right_type is int
        and -2147483648 <= left <= 2147483647
        and -2147483648 <= right <= 2147483647
    ):
        return int_or_long(left - right)
    left_kind, right_kind = kind(left), kind(right)
    if left_kind is not None and right_kind is not None:
        result_kind = widest(left_kind, right_kind)
        if result_kind == "decimal":
            return decimal128(DECIMAL.subtract(to_decimal(left), to_decimal(right)))
        if result_kind == "double":
            return to_double(left) - to_double(right)
        difference = int(left) - int(right)
        if result_kind == "long":
            if _fits_long(difference):
                return Int64(difference)
            return to_double(left) - to_double(right)
        return int_or_long(difference)
    if nullish(left) or nullish(right):
        return None
    if is_date(left):
        start = to_millis(left)
        if is_date(right):
            return Int64(start - to_millis(right))
        if right_kind in ("int", "long"):
            difference = start - int(right)
        elif right_kind == "double":
            if not (-(2.0**63) <= right < 2.0**63):
                raise _date_overflow()
            difference = start - _round_half_away(right)
        elif right_kind == "decimal":
            number = to_decimal(right)
            if not number.is_finite():
                raise _date_overflow()
            rounded = int(number.to_integral_value(ROUND_HALF_EVEN))
            if not _fits_long(rounded):
                raise _date_overflow()
            difference = start - rounded
        else:
            raise CommandError(14, f"can't $subtract {type_name(right)} from Date")
        if not _fits_long(difference):
            raise _date_overflow()
        return from_millis(difference)
    raise CommandError(14, f"can't $subtract {type_name(right)} from {type_name(left)}")


@operator("$subtract")
def _parse_subtract(value: Any, scope: Scope) -> Node:
    left, right = fixed_arguments("$subtract", 2, value, scope)

    def node(frame: Frame) -> Any:
        return subtract(left(frame), right(frame))

    return fold(node, [left, right])


# -- $multiply ----------------------------------------------------------------------------------


class _Product:
    """The server's MultiplyState."""

    __slots__ = ("decimal_product", "double_product", "long_product", "widest")

    def __init__(self) -> None:
        self.double_product = 1.0
        self.long_product = 1
        self.decimal_product = Decimal(1)
        self.widest = "int"

    def multiply(self, operand: Any) -> None:
        old = self.widest
        number_kind = kind(operand)
        assert number_kind is not None
        self.widest = widest(old, number_kind)
        if self.widest == "decimal":
            if old != "decimal":
                self.decimal_product = (
                    double_to_decimal(self.double_product)
                    if old == "double"
                    else Decimal(self.long_product)
                )
            self.decimal_product = DECIMAL.multiply(self.decimal_product, to_decimal(operand))
            return
        factor = to_double(operand)
        self.double_product *= factor
        if self.widest != "double":
            if not math.isfinite(factor):
                self.widest = "double"
                return
            product = self.long_product * int(operand)
            if _fits_long(product):
                self.long_product = product
            else:
                self.widest = "double"

    def value(self) -> Any:
        if self.widest == "double":
            return self.double_product
        if self.widest == "long":
            return Int64(self.long_product)
        if self.widest == "int":
            return int_or_long(self.long_product)
        return decimal128(self.decimal_product)


@operator("$multiply")
def _parse_multiply(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)

    def multiply(frame: Frame) -> Any:
        product = _Product()
        for child in nodes:
            operand = child(frame)
            if nullish(operand):
                return None
            if kind(operand) is None:
                raise CommandError(
                    14, f"$multiply only supports numeric types, not {type_name(operand)}"
                )
            product.multiply(operand)
        return product.value()

    def multiply_plain(frame: Frame) -> Any:
        # ints (32 bits) and finite doubles, as _Product computes them.
        long_product = 1
        double_product = 1.0
        is_double = False
        for child in nodes:
            operand = child(frame)
            operand_type = type(operand)
            if operand_type is int and -2147483648 <= operand <= 2147483647:
                long_product *= operand
                double_product *= operand
                if not _fits_long(long_product):  # a double from here on, as _Product
                    return multiply(frame)
            elif operand_type is float and math.isfinite(operand):
                double_product *= operand
                is_double = True
            else:
                return multiply(frame)
        return double_product if is_double else int_or_long(long_product)

    return fold(multiply_plain, nodes)


# -- $divide and $mod ---------------------------------------------------------------------------


def divide(left: Any, right: Any) -> Any:
    """``left / right`` as ``$divide`` computes it."""
    left_kind, right_kind = kind(left), kind(right)
    if left_kind is not None and right_kind is not None:
        if left_kind == "decimal" or right_kind == "decimal":
            denominator = to_decimal(right)
            if denominator.is_zero():
                raise CommandError(2, "can't $divide by zero")
            return decimal128(DECIMAL.divide(to_decimal(left), denominator))
        denominator_double = to_double(right)
        if denominator_double == 0.0:
            raise CommandError(2, "can't $divide by zero")
        return to_double(left) / denominator_double
    if nullish(left) or nullish(right):
        return None
    raise CommandError(
        14, f"$divide only supports numeric types, not {type_name(left)} and {type_name(right)}"
    )


@operator("$divide")
def _parse_divide(value: Any, scope: Scope) -> Node:
    left, right = fixed_arguments("$divide", 2, value, scope)

    def node(frame: Frame) -> Any:
        return divide(left(frame), right(frame))

    return fold(node, [left, right])


def _truncated_remainder(left: int, right: int) -> int:
    # C's %: the sign of the dividend (and INT_MIN % -1 is 0, as overflow::safeMod has it).
    remainder = abs(left) % abs(right)
    return -remainder if left < 0 else remainder


def modulo(left: Any, right: Any) -> Any:
    """``left`` modulo ``right`` as ``$mod`` computes it."""
    left_kind, right_kind = kind(left), kind(right)
    if left_kind is not None and right_kind is not None:
        if left_kind == "decimal" or right_kind == "decimal":
            divisor = to_decimal(right)
            if divisor.is_zero():
                raise CommandError(5733415, "can't $mod by zero")
            return decimal128(DECIMAL.remainder(to_decimal(left), divisor))
        divisor_double = to_double(right)
        if divisor_double == 0:
            raise CommandError(16610, "can't $mod by zero")
        if left_kind == "double" or right_kind == "double":
            return math.fmod(to_double(left), divisor_double)
        remainder = _truncated_remainder(int(left), int(right))
        if left_kind == "long" or right_kind == "long":
            return Int64(remainder)
        return remainder
    if nullish(left) or nullish(right):
        return None
    raise CommandError(
        16611, f"$mod only supports numeric types, not {type_name(left)} and {type_name(right)}"
    )


@operator("$mod")
def _parse_mod(value: Any, scope: Scope) -> Node:
    left, right = fixed_arguments("$mod", 2, value, scope)

    def node(frame: Frame) -> Any:
        return modulo(left(frame), right(frame))

    return fold(node, [left, right])


# -- one numeric operand ------------------------------------------------------------------------


def unary_numeric(name: str, compute: Callable[[Any], Any]) -> Callable[[Any, Scope], Node]:
    """The parser of an operator of one numeric operand (null for null, 28765 for a
    value that is not a number), ``compute`` applied to the number."""

    def parse_unary(value: Any, scope: Scope) -> Node:
        (child,) = fixed_arguments(name, 1, value, scope)

        def node(frame: Frame) -> Any:
            operand = child(frame)
            if nullish(operand):
                return None
            if kind(operand) is None:
                raise CommandError(
                    28765, f"{name} only supports numeric types, not {type_name(operand)}"
                )
            return compute(operand)

        return fold(node, [child])

    return parse_unary


def _abs(number: Any) -> Any:
    number_kind = kind(number)
    if number_kind == "double":
        return abs(number)
    if number_kind == "decimal":
        return Decimal128(abs(number.to_decimal()))
    if int(number) == INT64_MIN:
        raise CommandError(28680, "can't take $abs of long long min")
    if number_kind == "long":
        return Int64(abs(int(number)))
    return int_or_long(abs(int(number)))


def _round_decimal_to_integer(rounding: str) -> Callable[[Any], Any]:
    def compute(number: Any) -> Any:
        number_kind = kind(number)
        if number_kind == "double":
            if not math.isfinite(number):
                return number
            result = float(math.ceil(number) if rounding == ROUND_CEILING else math.floor(number))
            return math.copysign(result, number) if result == 0 else result
        if number_kind == "decimal":
            return decimal128(number.to_decimal().quantize(Decimal(1), rounding, DECIMAL))
        return number

    return compute


def _exp(number: Any) -> Any:
    if kind(number) == "decimal":
        return decimal128(DECIMAL.exp(number.to_decimal()))
    try:
        return math.exp(to_double(number))
    except OverflowError:
        return math.inf


def _ln(number: Any) -> Any:
    if kind(number) == "decimal":
        decimal_number = number.to_decimal()
        if decimal_number > 0:
            return decimal128(DECIMAL.ln(decimal_number))
    double = to_double(number)
    if not (double > 0 or math.isnan(double)):
        raise CommandError(
            28766, f"$ln's argument must be a positive number, but is {format_double(double)}"
        )
    return math.log(double) if not math.isnan(double) else double


def _log10(number: Any) -> Any:
    if kind(number) == "decimal":
        decimal_number = number.to_decimal()
        if decimal_number > 0:
            return decimal128(DECIMAL.log10(decimal_number))
    double = to_double(number)
    if not (double > 0 or math.isnan(double)):
        raise CommandError(
            28761, f"$log10's argument must be a positive number, but is {format_double(double)}"
        )
    return math.log10(double) if not math.isnan(double) else double


def _sqrt(number: Any) -> Any:
    if kind(number) == "decimal":
        decimal_number = number.to_decimal()
        if decimal_number < 0:
            raise CommandError(28714, "$sqrt's argument must be greater than or equal to 0")
        return decimal128(DECIMAL.sqrt(decimal_number))
    double = to_double(number)
    if double < 0:
        raise CommandError(28714, "$sqrt's argument must be greater than or equal to 0")
    return math.sqrt(double) if not math.isnan(double) else double


operator("$abs")(unary_numeric("$abs", _abs))
operator("$ceil")(unary_numeric("$ceil", _round_decimal_to_integer(ROUND_CEILING)))
operator("$floor")(unary_numeric("$floor", _round_decimal_to_integer(ROUND_FLOOR)))
operator("$exp")(unary_numeric("$exp", _exp))
operator("$ln")(unary_numeric("$ln", _ln))
operator("$log10")(unary_numeric("$log10", _log10))
operator("$sqrt")(unary_numeric("$sqrt", _sqrt))


# -- $log and $pow ------------------------------------------------------------------------------


def _log(number: Any, base: Any) -> Any:
    if kind(number) == "decimal" or kind(base) == "decimal":
        decimal_number, decimal_base = to_decimal(number), to_decimal(base)
        if decimal_number > 0 and decimal_base != 1 and decimal_base > 0:
            if decimal_base == 10:
                return decimal128(DECIMAL.log10(decimal_number))
            return decimal128(DECIMAL.divide(DECIMAL.ln(decimal_number), DECIMAL.ln(decimal_base)))
    double, double_base = to_double(number), to_double(base)
    if not (double > 0 or math.isnan(double)):
        raise CommandError(
            28758, f"$log's argument must be a positive number, but is {format_double(double)}"
        )
    if not ((double_base > 0 and double_base != 1) or math.isnan(double_base)):
        raise CommandError(
            28759,
            "$log's base must be a positive number not equal to 1, but is "
            + format_double(double_base),
        )
    if math.isnan(double) or math.isnan(double_base):
        return math.nan
    return math.log(double) / math.log(double_base)


@operator("$log")
def _parse_log(value: Any, scope: Scope) -> Node:
    number_node, base_node = fixed_arguments("$log", 2, value, scope)

    def node(frame: Frame) -> Any:
        number, base = number_node(frame), base_node(frame)
        if nullish(number) or nullish(base):
            return None
        if kind(number) is None:
            raise CommandError(28756, f"$log's argument must be numeric, not {type_name(number)}")
        if kind(base) is None:
            raise CommandError(28757, f"$log's base must be numeric, not {type_name(base)}")
        return _log(number, base)

    return fold(node, [number_node, base_node])


# The largest base each exponent 0..63 takes without overflowing a long, and the
# smallest (negative) one: the server's representableAsLong table, computed.
def _long_power_fits(base: int, exponent: int) -> bool:
    return _fits_long(base**exponent)


def c_pow(base: float, exponent: float) -> float:
    """C's pow: NaN for a negative base and a fractional exponent, infinity on overflow."""
    try:
        return math.pow(base, exponent)
    except ValueError:
        return math.nan
    except OverflowError:
        odd = exponent == math.floor(exponent) and math.fmod(exponent, 2) != 0
        return -math.inf if base < 0 and odd else math.inf


def power(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` as ``$pow`` computes it."""
    base_kind, exponent_kind = kind(base), kind(exponent)
    if base_kind == "decimal" or exponent_kind == "decimal":
        decimal_base, decimal_exponent = to_decimal(base), to_decimal(exponent)
        if decimal_base.is_zero() and decimal_exponent < 0:
            raise CommandError(28764, "$pow cannot take a base of 0 and a negative exponent")
        return decimal128(DECIMAL.power(decimal_base, decimal_exponent))
    double_base, double_exponent = to_double(base), to_double(exponent)
    if double_base == 0 and double_exponent < 0:
        raise CommandError(28764, "$pow cannot take a base of 0 and a negative exponent")
    if base_kind == "double" or exponent_kind == "double":
        return c_pow(double_base, double_exponent)
    result_kind = "long" if "long" in (base_kind, exponent_kind) else "int"
    integer_base, integer_exponent = int(base), int(exponent)
    if integer_base == 0:
        return numeric_result(result_kind, 0 if integer_exponent > 0 else 1)
    if integer_base == 1:
        return numeric_result(result_kind, 1)
    if integer_base == -1:
        return numeric_result(result_kind, 1 if integer_exponent % 2 == 0 else -1)
    if integer_exponent > 63 or integer_exponent < 0:
        return c_pow(float(integer_base), float(integer_exponent))
    if not _long_power_fits(integer_base, integer_exponent):
        return c_pow(float(integer_base), float(integer_exponent))
    return numeric_result(result_kind, integer_base**integer_exponent)


@operator("$pow")
def _parse_pow(value: Any, scope: Scope) -> Node:
    base_node, exponent_node = fixed_arguments("$pow", 2, value, scope)

    def node(frame: Frame) -> Any:
        base, exponent = base_node(frame), exponent_node(frame)
        if nullish(base) or nullish(exponent):
            return None
        if kind(base) is None:
            raise CommandError(28762, f"$pow's base must be numeric, not {type_name(base)}")
        if kind(exponent) is None:
            raise CommandError(28763, f"$pow's exponent must be numeric, not {type_name(exponent)}")
        return power(base, exponent)

    return fold(node, [base_node, exponent_node])


# -- $round and $trunc --------------------------------------------------------------------------


def _round_or_trunc(name: str, rounding: str) -> Callable[[Any, Scope], Node]:
    def parse_rounding(value: Any, scope: Scope) -> Node:
        nodes = ranged_arguments(name, 1, 2, value, scope)

        def node(frame: Frame) -> Any:
            number = nodes[0](frame)
            if nullish(number):
                return None
            number_kind = kind(number)
            if number_kind is None:
                raise CommandError(
                    51081, f"{name} only supports numeric types, not {type_name(number)}"
                )
            precision = 0
            if len(nodes) > 1:
                precision_value = nodes[1](frame)
                if nullish(precision_value):
                    return None
                if not is_integral(precision_value):
                    raise CommandError(
                        51082, f"precision argument to  {name} must be a integral value"
                    )
                precision = as_long(precision_value)
                if not -20 <= precision <= 100:
                    raise CommandError(
                        51083,
                        f"cannot apply {name} with precision value {precision} value must be"
                        " in [-20, 100]",
                    )
            quantum = Decimal(1).scaleb(-precision)
            if number_kind == "decimal":
                decimal_number = number.to_decimal()
                if decimal_number.is_infinite():
                    return number
                return decimal128(decimal_number.quantize(quantum, rounding, DECIMAL))
            if number_kind == "double":
                decimal_number = double_to_decimal(number, 34)
                if decimal_number.is_infinite():
                    return number
                return float(decimal_number.quantize(quantum, rounding, DECIMAL))
            if precision >= 0:
                return number
            rounded = Decimal(int(number)).quantize(quantum, rounding, DECIMAL)
            result = int(rounded) if rounded.is_finite() else None
            if result is None or not _fits_long(result):
                raise CommandError(
                    51080,
                    f"invalid conversion from Decimal128 result in {name} resulting from"
                    f" arguments: [{int(number)}, {precision}]",
                )
            if number_kind == "long" or result > 2147483647:
                return Int64(result)
            return result

        return fold(node, nodes)

    return parse_rounding


operator("$round")(_round_or_trunc("$round", ROUND_HALF_EVEN))
operator("$trunc")(_round_or_trunc("$trunc", ROUND_DOWN))
