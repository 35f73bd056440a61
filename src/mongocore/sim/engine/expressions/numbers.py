"""Numbers as aggregation expressions compute with them (the server's ``Value``
numeric coercions and ``Decimal128``).

BSON has four numeric types, ordered by width: int (32 bits), long (64 bits), double
and decimal (IEEE 754 decimal128). Decoded, an int is a Python ``int`` that fits in 32
bits, a long an ``Int64`` (or a larger ``int``), a double a ``float``, a decimal a
``Decimal128``. An operation's result takes the widest type of its operands; an int
result that does not fit in 32 bits becomes a long (``createIntOrLong``), and the
operators that overflow a long move to a double, as each server operator does.

Decimal arithmetic runs in the decimal128 context (34 digits, exponents -6176 to
6111, ties to even), which is the arithmetic of the server's Intel decimal library. A
double becomes a decimal rounded to 15 significant digits, as the server's default
``Decimal128(double)`` conversion rounds it (``0.1`` is ``0.100000000000000``).
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from typing import Any, Optional

from bson import Decimal128, Int64
from bson.decimal128 import create_decimal128_context

__all__ = [
    "DECIMAL",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "as_int",
    "as_long",
    "decimal128",
    "double_to_decimal",
    "format_double",
    "int_or_long",
    "is_integral",
    "is_integral64",
    "kind",
    "to_decimal",
    "to_double",
    "widest",
]

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: The decimal128 arithmetic context.
DECIMAL = create_decimal128_context()

_WIDTH = {"int": 0, "long": 1, "double": 2, "decimal": 3}
_NAMES = ("int", "long", "double", "decimal")


def kind(value: Any) -> Optional[str]:
    """ "int", "long", "double" or "decimal" for a number, None for anything else."""
    cls = type(value)
    if cls is int:
        return "int" if INT32_MIN <= value <= INT32_MAX else "long"
    if cls is float:
        return "double"
    if cls is Int64:
        return "long"
    if cls is Decimal128:
        return "decimal"
    if cls is bool:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return "long" if isinstance(value, Int64) or not INT32_MIN <= value <= INT32_MAX else "int"
    if isinstance(value, float):
        return "double"
    return None


def widest(a: str, b: str) -> str:
    """The wider of two numeric kinds (``Value::getWidestNumeric``)."""
    return a if _WIDTH[a] >= _WIDTH[b] else b


def int_or_long(number: int) -> Any:
    """An int if ``number`` fits in 32 bits, else a long."""
    if INT32_MIN <= number <= INT32_MAX:
        return number
    return Int64(number)


def decimal128(number: Decimal) -> Decimal128:
    """A decimal result, rounded into decimal128."""
    return Decimal128(DECIMAL.plus(number) if number.is_finite() else number)


def double_to_decimal(number: float, digits: int = 15) -> Decimal:
    """A double as a decimal of ``digits`` significant digits (15: the server's default
    conversion; 34: ``kRoundTo34Digits``), ties to even."""
    exact = Decimal(number)
    if number == 0 or not math.isfinite(number):
        return exact
    rounded = DECIMAL.plus(exact)
    if digits >= 34:
        return rounded
    exponent = rounded.adjusted() - (digits - 1)
    quantized = rounded.quantize(Decimal(1).scaleb(exponent), decimal.ROUND_HALF_EVEN, DECIMAL)
    if len(quantized.as_tuple().digits) > digits:
        quantized = rounded.quantize(
            Decimal(1).scaleb(exponent + 1), decimal.ROUND_HALF_EVEN, DECIMAL
        )
    return quantized


def to_decimal(value: Any) -> Decimal:
    """A number as a decimal (``coerceToDecimal``)."""
    if isinstance(value, Decimal128):
        return value.to_decimal()
    if isinstance(value, float):
        return double_to_decimal(value)
    return Decimal(int(value))


def to_double(value: Any) -> float:
    """A number as a double (``coerceToDouble``)."""
    if isinstance(value, float):
        return value
    if isinstance(value, Decimal128):
        return float(value.to_decimal())
    return float(int(value))


def is_integral(value: Any) -> bool:
    """True for a number an int (32 bits) represents exactly (``Value::integral``)."""
    return _integral_in(value, INT32_MIN, INT32_MAX)


def is_integral64(value: Any) -> bool:
    """True for a number a long represents exactly (``Value::integral64Bit``)."""
    return _integral_in(value, INT64_MIN, INT64_MAX)


def _integral_in(value: Any, low: int, high: int) -> bool:
    number_kind = kind(value)
    if number_kind in ("int", "long"):
        return bool(low <= int(value) <= high)
    if number_kind == "double":
        return math.isfinite(value) and value == math.floor(value) and low <= value <= high
    if number_kind == "decimal":
        number = value.to_decimal()
        return bool(
            number.is_finite() and number == number.to_integral_value() and low <= number <= high
        )
    return False


def as_long(value: Any) -> int:
    """A number truncated to an integer (``coerceToLong``)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return 0 if math.isnan(value) else (INT64_MAX if value > 0 else INT64_MIN)
        return int(value)
    if isinstance(value, Decimal128):
        number = value.to_decimal()
        if not number.is_finite():
            return 0 if number.is_nan() else (INT64_MAX if number > 0 else INT64_MIN)
        return int(number)
    return int(value)


def as_int(value: Any) -> int:
    """A number truncated to an integer (``coerceToInt``)."""
    return as_long(value)


def format_double(number: float) -> str:
    """A double as the server's messages print one (six significant digits)."""
    return format(number, "g")
