"""Bitwise expressions (MongoDB manual, "Bitwise Operators", 6.3+): ``$bitAnd``,
``$bitOr``, ``$bitXor`` and ``$bitNot``, on ints and longs only (TypeMismatch for
anything else); the result is a long when an operand is one, else an int."""

from __future__ import annotations

from typing import Any, Callable

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    arguments,
    fixed_arguments,
    fold,
    operator,
)
from mongocore.sim.engine.expressions.numbers import kind
from mongocore.sim.engine.types import type_name

__all__: list[str] = []


def _wrap64(number: int) -> int:
    number &= (1 << 64) - 1
    return number - (1 << 64) if number >= 1 << 63 else number


def _bitwise(name: str, identity: int, combine: Callable[[int, int], int]) -> None:
    def parse_bitwise(value: Any, scope: Scope) -> Node:
        nodes = arguments(value, scope)

        def node(frame: Frame) -> Any:
            result = identity
            is_long = False
            for child in nodes:
                operand = child(frame)
                if nullish(operand):
                    return None
                number_kind = kind(operand)
                if number_kind not in ("int", "long"):
                    raise CommandError(14, f"{name} only supports int and long operands.")
                is_long = is_long or number_kind == "long"
                result = combine(result, int(operand))
            return Int64(_wrap64(result)) if is_long else result

        return fold(node, nodes)

    operator(name)(parse_bitwise)


_bitwise("$bitAnd", -1, lambda a, b: a & b)
_bitwise("$bitOr", 0, lambda a, b: a | b)
_bitwise("$bitXor", 0, lambda a, b: a ^ b)


@operator("$bitNot")
def _parse_bit_not(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$bitNot", 1, value, scope)

    def node(frame: Frame) -> Any:
        operand = child(frame)
        if nullish(operand):
            return None
        number_kind = kind(operand)
        if number_kind is None:
            raise CommandError(
                28765, f"$bitNot only supports numeric types, not {type_name(operand)}"
            )
        if number_kind == "int":
            return ~int(operand)
        if number_kind == "long":
            return Int64(~int(operand))
        raise CommandError(14, f"$bitNot only supports int and long, not: {number_kind}.")

    return fold(node, [child])
