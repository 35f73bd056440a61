"""Type expressions (MongoDB manual, "Type Expression Operators"): ``$convert``,
``$toBool``, ``$toDate``, ``$toDecimal``, ``$toDouble``, ``$toInt``, ``$toLong``,
``$toObjectId``, ``$toString``, ``$type`` and ``$isNumber``.

The conversions are the server's table (its ``ConversionTable``): what it has no entry
for is ConversionFailure (241) "Unsupported conversion from <type> to <type> in
$convert with no onError value", which ``onError`` catches, as it catches a string that
does not parse and a number that does not fit; an error in the ``input`` expression
itself is not caught. A double becomes a string in its shortest exact form ("1.9",
"1e+20"), a date its ISO form in UTC, a decimal its IEEE text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Optional

from bson import Decimal128, Int64, ObjectId, Timestamp

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    arguments,
    constant,
    constant_value,
    fixed_arguments,
    fold,
    is_constant,
    operator,
    parse,
)
from mongocore.sim.engine.expressions.dates import date_from_string, utc
from mongocore.sim.engine.expressions.datetimes import from_millis, is_date, to_millis
from mongocore.sim.engine.expressions.logic import truthy
from mongocore.sim.engine.expressions.numbers import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    decimal128,
    double_to_decimal,
    format_double,
    is_integral,
    kind,
    to_decimal,
)
from mongocore.sim.engine.expressions.strings import format_iso_date, is_string
from mongocore.sim.engine.types import ALIASES, type_name

__all__ = ["convert", "format_double_string"]

_NUMBERS_TO_NAMES = {number: name for name, number in ALIASES.items()}


def _failure(message: str) -> CommandError:
    return CommandError(241, message)


def _unsupported(source: str, target: str) -> CommandError:
    return _failure(
        f"Unsupported conversion from {source} to {target} in $convert with no onError value"
    )


def format_double_string(number: float) -> str:
    """A double as ``$toString`` writes it: its shortest exact form."""
    if math.isinf(number):
        return "-Infinity" if number < 0 else "Infinity"
    if math.isnan(number):
        return "NaN"
    if number == 0 and math.copysign(1.0, number) < 0:
        return "-0"
    text = repr(number)
    return text[:-2] if text.endswith(".0") else text


def _overflow(shown: str) -> CommandError:
    return _failure(
        f"Conversion would overflow target type in $convert with no onError value: {shown}"
    )


def _finite_double(number: float) -> None:
    if math.isnan(number):
        raise _failure(
            "Attempt to convert NaN value to integer type in $convert with no onError value"
        )
    if math.isinf(number):
        raise _failure(
            "Attempt to convert infinity value to integer type in $convert with no onError value"
        )


def _double_to_int(number: float, low: int, high: int) -> int:
    _finite_double(number)
    upper_ok = number <= high if high == INT32_MAX else number < 2.0**63
    if not (number >= low and upper_ok):
        raise _overflow(format_double(number))
    return int(number)


def _decimal_to_int(value: Decimal128, low: int, high: int) -> int:
    number = value.to_decimal()
    if number.is_nan():
        raise _failure(
            "Attempt to convert NaN value to integer type in $convert with no onError value"
        )
    if number.is_infinite():
        raise _failure(
            "Attempt to convert infinity value to integer type in $convert with no onError value"
        )
    truncated = int(number)
    if not low <= truncated <= high:
        raise _overflow(str(value))
    return truncated


def _decimal_to_double(value: Decimal128) -> float:
    number = value.to_decimal()
    result = float(number)
    if number.is_finite() and (math.isinf(result) or (result == 0 and not number.is_zero())):
        raise _overflow(str(value))
    return result


_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_DOUBLE = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_SPECIAL = re.compile(r"^[+-]?(?:inf|infinity|nan)$", re.IGNORECASE)
_DECIMAL_SPECIAL = re.compile(r"^[+-]?(?:inf|infinity|nan)$", re.IGNORECASE)


def _parse_number(text: str, target: str) -> Any:
    if text.startswith("0x"):
        raise _failure(f"Illegal hexadecimal input in $convert with no onError value: {text}")

    def bad(reason: str) -> CommandError:
        return _failure(
            f"Failed to parse number '{text}' in $convert with no onError value: {reason}"
        )

    if not text:
        raise bad("No digits")
    if target in ("int", "long"):
        if not _INTEGER.match(text):
            raise bad("Did not consume whole string." if text[:1].isdigit() else "No digits")
        number = int(text)
        low, high = (INT32_MIN, INT32_MAX) if target == "int" else (INT64_MIN, INT64_MAX)
        if not low <= number <= high:
            raise bad("Out of range")
        return number if target == "int" else Int64(number)
    if target == "double":
        if _SPECIAL.match(text):
            return float(text)
        if not _DOUBLE.match(text):
            raise bad("Did not consume whole string." if text[:1].isdigit() else "No digits")
        result = float(text)
        if math.isinf(result):
            raise bad("Out of range")
        return result
    # decimal
    if not (_DOUBLE.match(text) or _DECIMAL_SPECIAL.match(text)):
        raise bad("Failed to parse string to decimal")
    try:
        return decimal128(Decimal(text))
    except InvalidOperation as exc:
        raise bad("Failed to parse string to decimal") from exc


def _to_object_id(text: str) -> Any:
    if len(text) != 24:
        raise _failure(
            f"Failed to parse objectId '{text}' in $convert with no onError value: Invalid string"
            f" length for parsing to OID, expected 24 but found {len(text)}"
        )
    try:
        return ObjectId(text)
    except Exception as exc:
        raise _failure(
            f"Failed to parse objectId '{text}' in $convert with no onError value: Invalid"
            " character found in hex string"
        ) from exc


def convert(value: Any, target: str) -> Any:
    """``value`` (not nullish) as BSON type ``target`` (a type alias), or ConversionFailure."""
    source = type_name(value)
    if target == "bool":
        # Numbers by their truth, booleans as they are, every other type true.
        return truthy(value)
    number_kind = kind(value)
    if target == "double":
        if number_kind == "decimal":
            return _decimal_to_double(value)
        if number_kind is not None:
            return float(value) if number_kind != "double" else value
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if is_string(value):
            return _parse_number(value, "double")
        if is_date(value):
            return float(to_millis(value))
    elif target in ("int", "long"):
        low, high = (INT32_MIN, INT32_MAX) if target == "int" else (INT64_MIN, INT64_MAX)
        wrap: Callable[[int], Any] = (lambda n: n) if target == "int" else Int64
        if number_kind == "double":
            return wrap(_double_to_int(value, low, high))
        if number_kind == "decimal":
            return wrap(_decimal_to_int(value, low, high))
        if number_kind in ("int", "long"):
            number = int(value)
            if not low <= number <= high:
                raise _overflow("")
            return wrap(number)
        if isinstance(value, bool):
            return wrap(1 if value else 0)
        if is_string(value):
            return _parse_number(value, target)
        if is_date(value) and target == "long":
            return Int64(to_millis(value))
    elif target == "decimal":
        if number_kind == "decimal":
            return value
        if number_kind == "double":
            return decimal128(double_to_decimal(value))
        if number_kind is not None:
            return decimal128(to_decimal(value))
        if isinstance(value, bool):
            return Decimal128("1" if value else "0")
        if is_string(value):
            return _parse_number(value, "decimal")
        if is_date(value):
            return Decimal128(Decimal(to_millis(value)))
    elif target == "string":
        if is_string(value):
            return value
        if number_kind == "double":
            return format_double_string(value)
        if number_kind in ("int", "long"):
            return str(int(value))
        if number_kind == "decimal":
            return str(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, ObjectId):
            return str(value)
        if is_date(value):
            return format_iso_date(to_millis(value))
    elif target == "objectId":
        if isinstance(value, ObjectId):
            return value
        if is_string(value):
            return _to_object_id(value)
    elif target == "date":
        if is_date(value):
            return value
        if number_kind == "long":
            return from_millis(int(value))
        if number_kind == "double":
            return from_millis(_double_to_int(value, INT64_MIN, INT64_MAX))
        if number_kind == "decimal":
            return from_millis(_decimal_to_int(value, INT64_MIN, INT64_MAX))
        if is_string(value):
            return from_millis(date_from_string(value, utc()))
        if isinstance(value, ObjectId):
            return from_millis(int(value.generation_time.timestamp()) * 1000)
        if isinstance(value, Timestamp):
            return from_millis(int(value.time) * 1000)
    raise _unsupported(source, target)


def _target_type(value: Any) -> str:
    # ExpressionConvert::computeTargetType.
    if is_string(value):
        if value == "missing":
            return "missing"
        if value not in ALIASES:
            raise CommandError(2, f"Unknown type name: {value}")
        return str(value)
    if kind(value) is not None:
        if not is_integral(value):
            raise CommandError(9, "In $convert, numeric 'to' argument is not an integer")
        code = int(value) if kind(value) != "decimal" else int(value.to_decimal())
        name = _NUMBERS_TO_NAMES.get(code)
        if name is None:
            raise CommandError(
                9, f"In $convert, numeric value for 'to' does not correspond to a BSON type: {code}"
            )
        return name
    raise CommandError(
        9, f"$convert's 'to' argument must be a string or number, but is {type_name(value)}"
    )


def _convert_node(
    input_node: Node, to_node: Node, on_error: Optional[Node], on_null: Optional[Node]
) -> Node:
    fixed_target = (
        _target_type(constant_value(to_node))
        if is_constant(to_node) and not nullish(constant_value(to_node))
        else None
    )

    def node(frame: Frame) -> Any:
        target = fixed_target
        if target is None:
            to_value = to_node(frame)
            if not nullish(to_value):
                target = _target_type(to_value)
        value = input_node(frame)
        if nullish(value):
            return on_null(frame) if on_null is not None else None
        if target is None:
            return None
        try:
            return convert(value, target)
        except CommandError as exc:
            if exc.code == 241 and on_error is not None:
                return on_error(frame)
            raise

    return fold(node, [input_node, to_node, on_error, on_null])


@operator("$convert")
def _parse_convert(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(
            9, f"$convert expects an object of named arguments but found: {type_name(value)}"
        )
    parts: dict[str, Node] = {}
    for name, item in value.items():
        if name not in ("input", "to", "onError", "onNull"):
            raise CommandError(9, f"$convert found an unknown argument: {name}")
        parts[str(name)] = parse(item, scope)
    if "input" not in parts:
        raise CommandError(9, "Missing 'input' parameter to $convert")
    if "to" not in parts:
        raise CommandError(9, "Missing 'to' parameter to $convert")
    return _convert_node(parts["input"], parts["to"], parts.get("onError"), parts.get("onNull"))


def _alias(name: str, target: str) -> None:
    def parse_alias(value: Any, scope: Scope) -> Node:
        nodes = arguments(value, scope)
        if len(nodes) != 1:
            raise CommandError(50723, f"{name} requires a single argument, got {len(nodes)}")
        return _convert_node(nodes[0], constant(target), None, None)

    operator(name)(parse_alias)


_alias("$toBool", "bool")
_alias("$toDate", "date")
_alias("$toDecimal", "decimal")
_alias("$toDouble", "double")
_alias("$toInt", "int")
_alias("$toLong", "long")
_alias("$toObjectId", "objectId")
_alias("$toString", "string")


@operator("$type")
def _parse_type(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$type", 1, value, scope)

    def node(frame: Frame) -> Any:
        return type_name(child(frame))

    return fold(node, [child])


@operator("$isNumber")
def _parse_is_number(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$isNumber", 1, value, scope)

    def node(frame: Frame) -> Any:
        return kind(child(frame)) is not None

    return fold(node, [child])
