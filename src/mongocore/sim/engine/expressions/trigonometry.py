"""Trigonometry expressions (MongoDB manual, "Trigonometry Expression Operators"):
``$sin``, ``$cos``, ``$tan``, ``$asin``, ``$acos``, ``$atan``, ``$atan2``, ``$sinh``,
``$cosh``, ``$tanh``, ``$asinh``, ``$acosh``, ``$atanh``, ``$degreesToRadians`` and
``$radiansToDegrees``.

A number that is not a decimal is computed as a double (C's functions, through
``math``), a decimal in decimal (series at 50 digits, rounded into decimal128: the
server's Intel library may differ from it in the last of 34 digits). NaN passes
through; an argument outside an operator's domain is the server's 50989.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from functools import lru_cache
from typing import Any, Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    fixed_arguments,
    fold,
    operator,
)
from mongocore.sim.engine.expressions.numbers import (
    DECIMAL,
    decimal128,
    format_double,
    kind,
    to_decimal,
    to_double,
)
from mongocore.sim.engine.types import type_name

__all__: list[str] = []

_WORK = decimal.Context(prec=50, rounding=decimal.ROUND_HALF_EVEN, Emax=999999, Emin=-999999)
_PI_OVER_180 = Decimal("0.01745329251994329576923690768488613")
_180_OVER_PI = Decimal("57.29577951308232087679815481410517")


def _pi() -> Decimal:
    # Machin: pi = 16 atan(1/5) - 4 atan(1/239).
    return 16 * _atan_small(Decimal(1) / 5) - 4 * _atan_small(Decimal(1) / 239)


def _atan_small(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        total, power, n = Decimal(0), x, 0
        square = x * x
        while True:
            term = power / (2 * n + 1)
            if n % 2:
                term = -term
            if term == 0 or abs(term) < Decimal("1e-60"):
                return total + term
            total += term
            power *= square
            n += 1


@lru_cache(maxsize=1)
def pi() -> Decimal:
    """Pi at 50 digits."""
    with decimal.localcontext(_WORK):
        return _pi()


def _series(x: Decimal, start: int) -> Decimal:
    # sin (start 1) and cos (start 0) by their Taylor series.
    with decimal.localcontext(_WORK):
        term = Decimal(1) if start == 0 else x
        total, n, square = term, start, x * x
        while True:
            term = -term * square / ((n + 1) * (n + 2))
            n += 2
            if abs(term) < Decimal("1e-60"):
                return total
            total += term


def _reduce(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        two_pi = 2 * pi()
        return x - two_pi * (x / two_pi).to_integral_value(decimal.ROUND_HALF_EVEN)


def _dsin(x: Decimal) -> Decimal:
    return _series(_reduce(x), 1)


def _dcos(x: Decimal) -> Decimal:
    return _series(_reduce(x), 0)


def _dtan(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        return _dsin(x) / _dcos(x)


def _datan(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        if x.is_infinite():
            return pi() / 2 if x > 0 else -pi() / 2
        if abs(x) > 1:
            result = pi() / 2 - _datan(1 / abs(x))
            return result if x > 0 else -result
        halvings = 0
        while abs(x) > Decimal("0.1"):
            x = x / (1 + (1 + x * x).sqrt())
            halvings += 1
        return _atan_small(x) * Decimal(2**halvings)


def _dasin(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        if abs(x) == 1:
            return pi() / 2 if x > 0 else -pi() / 2
        return _datan(x / (1 - x * x).sqrt())


def _dacos(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        return pi() / 2 - _dasin(x)


def _datan2(y: Decimal, x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        if x > 0:
            return _datan(y / x)
        if x < 0:
            return _datan(y / x) + (pi() if y >= 0 else -pi())
        if y > 0:
            return pi() / 2
        if y < 0:
            return -pi() / 2
        return Decimal(0)


def _dsinh(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        return (x.exp() - (-x).exp()) / 2


def _dcosh(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        return (x.exp() + (-x).exp()) / 2


def _dtanh(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        if abs(x) > 100:
            return Decimal(1) if x > 0 else Decimal(-1)
        return _dsinh(x) / _dcosh(x)


def _dasinh(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        if x < 0:
            return -_dasinh(-x)
        return (x + (x * x + 1).sqrt()).ln()


def _dacosh(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        return (x + (x * x - 1).sqrt()).ln()


def _datanh(x: Decimal) -> Decimal:
    with decimal.localcontext(_WORK):
        if abs(x) == 1:
            return Decimal("Infinity") if x > 0 else Decimal("-Infinity")
        return ((1 + x) / (1 - x)).ln() / 2


def _bound(number: float) -> str:
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return format_double(number)


def _trig(
    name: str,
    double_function: Callable[[float], float],
    decimal_function: Callable[[Decimal], Decimal],
    bounds: Optional[tuple[float, float, str, str]] = None,
) -> None:
    def parse_trig(value: Any, scope: Scope) -> Node:
        (child,) = fixed_arguments(name, 1, value, scope)

        def node(frame: Frame) -> Any:
            number = child(frame)
            if nullish(number):
                return None
            number_kind = kind(number)
            if number_kind is None:
                raise CommandError(
                    28765, f"{name} only supports numeric types, not {type_name(number)}"
                )
            if number_kind == "decimal":
                argument = number.to_decimal()
                if argument.is_nan():
                    return number
                _check_bounds(name, bounds, float(argument), str(number))
                result = decimal_function(argument)
                return decimal128(DECIMAL.plus(result) if result.is_finite() else result)
            double = to_double(number)
            if math.isnan(double):
                return double
            _check_bounds(name, bounds, double, format_double(double))
            return double_function(double)

        return fold(node, [child])

    operator(name)(parse_trig)


def _check_bounds(
    name: str, bounds: Optional[tuple[float, float, str, str]], number: float, shown: str
) -> None:
    if bounds is None:
        return
    low, high, left, right = bounds
    inside_low = number >= low if left == "[" else number > low
    inside_high = number <= high if right == "]" else number < high
    if not (inside_low and inside_high):
        raise CommandError(
            50989,
            f"cannot apply {name} to {shown}, value must be in"
            f" {left}{_bound(low)},{_bound(high)}{right}",
        )


_OPEN = (-math.inf, math.inf, "(", ")")
_UNIT = (-1.0, 1.0, "[", "]")

_trig("$sin", math.sin, _dsin, _OPEN)
_trig("$cos", math.cos, _dcos, _OPEN)
_trig("$tan", math.tan, _dtan, _OPEN)
_trig("$asin", math.asin, _dasin, _UNIT)
_trig("$acos", math.acos, _dacos, _UNIT)
_trig("$atan", math.atan, _datan)
_trig("$sinh", lambda x: _c_overflow(math.sinh, x), _dsinh)
_trig("$cosh", lambda x: _c_overflow(math.cosh, x), _dcosh)
_trig("$tanh", math.tanh, _dtanh)
_trig("$asinh", math.asinh, _dasinh)
_trig("$acosh", math.acosh, _dacosh, (1.0, math.inf, "[", ")"))
_trig(
    "$atanh", lambda x: math.copysign(math.inf, x) if abs(x) == 1 else math.atanh(x), _datanh, _UNIT
)


def _c_overflow(function: Callable[[float], float], x: float) -> float:
    try:
        return function(x)
    except OverflowError:
        return math.copysign(math.inf, x) if function is math.sinh else math.inf


@operator("$atan2")
def _parse_atan2(value: Any, scope: Scope) -> Node:
    y_node, x_node = fixed_arguments("$atan2", 2, value, scope)

    def node(frame: Frame) -> Any:
        y = y_node(frame)
        if nullish(y):
            return None
        if kind(y) is None:
            raise CommandError(51044, f"$atan2 only supports numeric types, not {type_name(y)}")
        x = x_node(frame)
        if nullish(x):
            return None
        if kind(x) is None:
            raise CommandError(51045, f"$atan2 only supports numeric types, not {type_name(x)}")
        if kind(y) == "decimal" or kind(x) == "decimal":
            dy, dx = to_decimal(y), to_decimal(x)
            if dy.is_nan() or dx.is_nan():
                return decimal128(Decimal("NaN"))
            return decimal128(_datan2(dy, dx))
        return math.atan2(to_double(y), to_double(x))

    return fold(node, [y_node, x_node])


def _angle(name: str, decimal_factor: Decimal, double_factor: float) -> None:
    def parse_angle(value: Any, scope: Scope) -> Node:
        (child,) = fixed_arguments(name, 1, value, scope)

        def node(frame: Frame) -> Any:
            number = child(frame)
            if nullish(number):
                return None
            if kind(number) is None:
                raise CommandError(
                    28765, f"{name} only supports numeric types, not {type_name(number)}"
                )
            if kind(number) == "decimal":
                return decimal128(DECIMAL.multiply(number.to_decimal(), decimal_factor))
            return to_double(number) * double_factor

        return fold(node, [child])

    operator(name)(parse_angle)


_angle("$degreesToRadians", _PI_OVER_180, math.pi / 180.0)
_angle("$radiansToDegrees", _180_OVER_PI, 180.0 / math.pi)
