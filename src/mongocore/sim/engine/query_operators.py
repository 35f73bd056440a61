"""The query operators that test one value (MongoDB manual, "Query and Projection
Operators": comparison, element, evaluation and bitwise operators; the server's
``ComparisonMatchExpression``, ``RegexMatchExpression``, ``TypeMatchExpression``,
``ModMatchExpression`` and ``BitTestMatchExpression``).

Each ``parse_*`` function checks an operator's argument as the server does when it
parses a query (same codes, same messages) and returns a test of one candidate value
(paths.py). Comparisons are type-bracketed: ``{$gt: 5}`` matches numbers only, except
that null and undefined (and a missing field) compare alike and MinKey and MaxKey bound
every type; NaN equals NaN and is neither less nor greater than anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Callable, Optional

from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, Regex

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.context import MatchContext, ValueTest
from mongocore.sim.engine.types import ALIASES, NUMBERS, type_name
from mongocore.sim.engine.values import (
    MISSING,
    UNDEFINED,
    TypeRank,
    is_nan,
    is_number,
    key,
    numeric_value,
    regex_flags,
    type_rank,
)

__all__ = [
    "bad_value",
    "compile_regex",
    "equality_test",
    "parse_bits",
    "parse_comparison",
    "parse_in",
    "parse_mod",
    "parse_size",
    "parse_type",
    "regex_test",
]

EQ, LT, LTE, GT, GTE = "$eq", "$lt", "$lte", "$gt", "$gte"
_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}


def bad_value(message: str) -> CommandError:
    """BadValue (2), the server's error for most malformed queries."""
    return CommandError(2, message)


def _rank(value: Any) -> int:
    # A missing field is EOO, canonically the same type as undefined.
    if value is MISSING:
        return TypeRank.UNDEFINED
    return type_rank(value)


def _is_regex(value: Any) -> bool:
    return isinstance(value, (Regex, re.Pattern))


def is_operator_document(value: Any) -> bool:
    """True for ``{$op: ...}``: a document whose first field starts with ``$`` (and
    that is not a DBRef, whose ``$ref``/``$id``/``$db`` fields are data)."""
    if not isinstance(value, Mapping) or not value:
        return False
    first = next(iter(value))
    return isinstance(first, str) and first.startswith("$") and first not in ("$ref", "$id", "$db")


def parse_comparison(op: str, rhs: Any, context: MatchContext) -> ValueTest:
    """The test of ``$eq``, ``$lt``, ``$lte``, ``$gt`` or ``$gte`` against ``rhs``."""
    inclusive = op in (EQ, LTE, GTE)
    if is_nan(rhs):
        return lambda value: inclusive and is_nan(value)
    rank = _rank(rhs)
    if op == EQ:
        return equality_test(rhs, context)
    rhs_key = key(rhs, context.collation)
    collation = context.collation
    bound_min, bound_max = isinstance(rhs, MinKey), isinstance(rhs, MaxKey)

    def test(value: Any) -> bool:
        value_rank = _rank(value)
        if value_rank != rank:
            if value_rank + rank == TypeRank.NULL:  # null against undefined or missing
                return inclusive
            if bound_max:
                return op in (LT, LTE)
            if bound_min:
                return op in (GT, GTE)
            return False
        if value_rank == TypeRank.NUMBER and is_nan(value):
            return False
        value_key = key(value, collation)
        if op == LT:
            return value_key < rhs_key
        if op == LTE:
            return value_key <= rhs_key
        if op == GT:
            return value_key > rhs_key
        return value_key >= rhs_key

    return test


def equality_test(rhs: Any, context: MatchContext) -> ValueTest:
    """The test of ``{$eq: rhs}`` (a regular expression is compared as a value here)."""
    if is_nan(rhs):
        return is_nan
    if rhs is None:
        return lambda value: value is None or value is MISSING or value is UNDEFINED
    collation = context.collation
    if type(rhs) is str and collation is None:
        return lambda value: type(value) is str and value == rhs
    if type(rhs) in (int, float, Int64):
        plain = (int, float, Int64)
        rhs_key = key(rhs)

        def number(value: Any) -> bool:
            if type(value) in plain:
                return bool(value == rhs)
            return isinstance(value, (Decimal128, Decimal)) and key(value) == rhs_key

        return number
    rhs_key = key(rhs, collation)
    rank = rhs_key[0]

    def test(value: Any) -> bool:
        if value is MISSING:
            return False
        return _rank(value) == rank and key(value, collation) == rhs_key

    return test


def compile_regex(pattern: Any, options: Any) -> re.Pattern[str]:
    """A query regular expression as Python's ``re`` runs it, with the server's errors."""
    if not isinstance(options, str):
        raise bad_value("$options has to be a string")
    flags = 0
    for letter in options:
        if letter not in _REGEX_FLAGS:
            raise CommandError(51108, f"invalid flag in regex options: {letter}")
        flags |= _REGEX_FLAGS[letter]
    try:
        return re.compile(str(pattern), flags)
    except re.error as exc:
        raise CommandError(51091, f"Regular expression is invalid: {exc}") from exc


def regex_test(pattern: str, options: str) -> ValueTest:
    """Match strings (and symbols) by the pattern, and stored regular expressions that
    are the same pattern with the same flags."""
    compiled = compile_regex(pattern, options)
    same = (pattern, "".join(sorted(options)))  # a stored regex equal to this one

    def test(value: Any) -> bool:
        if isinstance(value, str) and not isinstance(value, Code):
            return compiled.search(value) is not None
        if isinstance(value, (Regex, re.Pattern)):
            return (str(value.pattern), regex_flags(value)) == same
        return False

    return test


def regex_value_test(value: Any) -> ValueTest:
    """The test of a regular expression given as a query value (``{a: /x/}``)."""
    return regex_test(str(value.pattern), regex_flags(value))


def parse_in(op: str, values: Any, context: MatchContext) -> ValueTest:
    """The test of ``$in`` (``$nin`` is its negation, built by the matcher)."""
    if not isinstance(values, list):
        raise bad_value(f"{op} needs an array")
    keys: set[Any] = set()
    regexes: list[ValueTest] = []
    others: list[ValueTest] = []
    for value in values:
        if is_operator_document(value):
            raise bad_value("cannot nest $ under $in")
        if _is_regex(value):
            regexes.append(regex_value_test(value))
        elif value is None:
            keys.add(key(None))
            keys.add(key(UNDEFINED))
        elif is_nan(value):
            others.append(is_nan)
        else:
            keys.add(key(value, context.collation))
    collation = context.collation

    def test(value: Any) -> bool:
        if value is MISSING:
            return key(None) in keys
        if (not is_nan(value)) and key(value, collation) in keys:
            return True
        return any(check(value) for check in regexes) or any(check(value) for check in others)

    return test


def parse_size(size: Any) -> ValueTest:
    """The test of ``$size`` (on the array itself: the matcher does not open it)."""
    if not is_number(size):
        raise bad_value("$size needs a number")
    number = numeric_value(size)
    if is_nan(number) or number != int(number):
        raise bad_value(f"$size must be a whole number, but got: {size}")
    if number < 0:
        raise bad_value(f"$size may not be negative, but got: {size}")
    length = int(number)
    return lambda value: isinstance(value, list) and len(value) == length


def _type_names(spec: Any) -> set[str]:
    items = spec if isinstance(spec, list) else [spec]
    if isinstance(spec, list) and not spec:
        raise bad_value("$type must match at least one type")
    names: set[str] = set()
    codes = {code: name for name, code in ALIASES.items()}
    for item in items:
        if isinstance(item, str):
            if item == "number":
                names.update(NUMBERS)
            elif item in ALIASES:
                names.add(item)
            else:
                raise bad_value(f"Unknown type name alias: {item}")
        elif is_number(item):
            number = numeric_value(item)
            if number != int(number) or int(number) not in codes:
                raise bad_value(f"Invalid numerical type code: {item}")
            names.add(codes[int(number)])
        else:
            raise CommandError(14, "type must be represented as a number or a string")
    return names


def parse_type(spec: Any) -> ValueTest:
    """The test of ``$type`` (names, numbers, ``"number"``, or an array of them)."""
    names = _type_names(spec)
    return lambda value: value is not MISSING and type_name(value) in names


def _integer(value: Any) -> Optional[int]:
    number = numeric_value(value)
    if isinstance(number, bool):
        return None
    if isinstance(number, int):
        return number
    if isinstance(number, (float, Decimal)):
        if is_nan(number) or number in (float("inf"), float("-inf")):
            return None
        return int(number)
    return None


def _truncated_mod(value: int, divisor: int) -> int:
    # C's remainder: the sign of the dividend.
    remainder = abs(value) % abs(divisor)
    return remainder if value >= 0 else -remainder


def parse_mod(spec: Any) -> ValueTest:
    """The test of ``$mod: [divisor, remainder]`` (operands truncated toward zero)."""
    if not isinstance(spec, list):
        raise bad_value("malformed mod, needs to be an array")
    if len(spec) < 2:
        raise bad_value("malformed mod, not enough elements")
    if len(spec) > 2:
        raise bad_value("malformed mod, too many elements")
    if not is_number(spec[0]):
        raise bad_value("malformed mod, divisor not a number")
    if not is_number(spec[1]):
        raise bad_value("malformed mod, remainder not a number")
    divisor, remainder = _integer(spec[0]), _integer(spec[1])
    if divisor is None or remainder is None:
        raise bad_value("malformed mod, divisor value is invalid")
    if divisor == 0:
        raise bad_value("divisor cannot be 0")

    def test(value: Any) -> bool:
        if not is_number(value):
            return False
        number = _integer(value)
        return number is not None and _truncated_mod(number, divisor) == remainder

    return test


def _bit_mask(op: str, spec: Any) -> int:
    if isinstance(spec, (Binary, bytes)):
        return int.from_bytes(bytes(spec), "little")
    if is_number(spec):
        number = numeric_value(spec)
        if is_nan(number) or number != int(number):
            raise bad_value(f"{op} cannot take a fractional bitmask: {spec}")
        if number < 0:
            raise bad_value(f"{op} cannot take a negative bitmask: {spec}")
        return int(number)
    if isinstance(spec, list):
        mask = 0
        for position in spec:
            if not is_number(position):
                raise bad_value(f"bit positions must be an integer but got: {position!r}")
            number = numeric_value(position)
            if is_nan(number) or number != int(number):
                raise bad_value(f"bit positions must be an integer but got: {position}")
            if number < 0:
                raise bad_value(f"bit positions must be >= 0 but got: {position}")
            mask |= 1 << int(number)
        return mask
    raise bad_value(f"{op} takes an Array, a number, or a BinData but received: {spec!r}")


def parse_bits(op: str, spec: Any) -> ValueTest:
    """The test of ``$bitsAllSet``, ``$bitsAnySet``, ``$bitsAllClear``, ``$bitsAnyClear``:
    integral numbers (negative ones in two's complement) and BinData."""
    mask = _bit_mask(op, spec)
    check: Callable[[int], bool]
    if op == "$bitsAllSet":
        check = lambda bits: bits & mask == mask  # noqa: E731
    elif op == "$bitsAnySet":
        check = lambda bits: bits & mask != 0  # noqa: E731
    elif op == "$bitsAllClear":
        check = lambda bits: bits & mask == 0  # noqa: E731
    else:
        check = lambda bits: bits & mask != mask  # noqa: E731

    def test(value: Any) -> bool:
        if isinstance(value, (Binary, bytes)):
            return check(int.from_bytes(bytes(value), "little"))
        if not is_number(value):
            return False
        number = numeric_value(value)
        if isinstance(number, (float, Decimal)) and (
            is_nan(number) or number != int(number) or not -(2**63) <= number < 2**63
        ):
            return False
        bits = int(number)
        if bits < 0:  # two's complement over 64 bits, as the server stores a long
            bits &= (1 << 64) - 1
            bits |= ~((1 << 64) - 1) & (mask & ~((1 << 64) - 1))
        return check(bits)

    return test
