"""Boolean and conditional expressions (MongoDB manual, "Boolean Expression Operators",
"Conditional Expression Operators"): ``$and``, ``$or``, ``$not``, ``$cond``,
``$ifNull`` and ``$switch``.

Truth is aggregation truthiness (false, null, undefined, missing and zeros are false;
everything else, empty strings and arrays too, is true). ``$and`` and ``$or`` stop at
the first operand that decides them; ``$cond`` and ``$switch`` evaluate only the branch
they take; ``$ifNull`` returns its first operand that is not null, missing or undefined,
or else its last, whatever that is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

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
from mongocore.sim.engine.matcher import truthy
from mongocore.sim.engine.types import type_name

__all__ = ["truthy"]


def _decided_by_constant(nodes: list[Node], decisive: bool) -> bool:
    # The server's optimize() gathers an $and's (an $or's) constant operands and folds
    # them: one false (true) constant decides the whole expression, unevaluated.
    return any(is_constant(n) and truthy(constant_value(n)) is decisive for n in nodes)


@operator("$and")
def _parse_and(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)
    if _decided_by_constant(nodes, False):
        return constant(False)

    def node(frame: Frame) -> Any:
        return all(truthy(child(frame)) for child in nodes)

    return fold(node, nodes)


@operator("$or")
def _parse_or(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)
    if _decided_by_constant(nodes, True):
        return constant(True)

    def node(frame: Frame) -> Any:
        return any(truthy(child(frame)) for child in nodes)

    return fold(node, nodes)


@operator("$not")
def _parse_not(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$not", 1, value, scope)

    def node(frame: Frame) -> Any:
        return not truthy(child(frame))

    return fold(node, [child])


@operator("$cond")
def _parse_cond(value: Any, scope: Scope) -> Node:
    if isinstance(value, Mapping):
        parts: dict[str, Node] = {}
        for name, item in value.items():
            if name not in ("if", "then", "else"):
                raise CommandError(17083, f"Unrecognized parameter to $cond: {name}")
            parts[str(name)] = parse(item, scope)
        if "if" not in parts:
            raise CommandError(17080, "Missing 'if' parameter to $cond")
        if "then" not in parts:
            raise CommandError(17081, "Missing 'then' parameter to $cond")
        if "else" not in parts:
            raise CommandError(17082, "Missing 'else' parameter to $cond")
        condition, then, otherwise = parts["if"], parts["then"], parts["else"]
    else:
        condition, then, otherwise = fixed_arguments("$cond", 3, value, scope)
    if is_constant(condition):
        return then if truthy(constant_value(condition)) else otherwise

    def node(frame: Frame) -> Any:
        return then(frame) if truthy(condition(frame)) else otherwise(frame)

    return node


@operator("$ifNull")
def _parse_if_null(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)
    if len(nodes) < 2:
        raise CommandError(1257300, f"$ifNull needs at least two arguments, had: {len(nodes)}")
    head, last = nodes[:-1], nodes[-1]
    if is_constant(nodes[0]) and not nullish(constant_value(nodes[0])):
        return nodes[0]

    def node(frame: Frame) -> Any:
        for child in head:
            result = child(frame)
            if not nullish(result):
                return result
        return last(frame)

    return fold(node, nodes)


@operator("$switch")
def _parse_switch(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(
            40060, f"$switch requires an object as an argument, found: {type_name(value)}"
        )
    branches: list[tuple[Node, Node]] = []
    default: Optional[Node] = None
    for name, item in value.items():
        if name == "branches":
            if not isinstance(item, list):
                raise CommandError(
                    40061, f"$switch expected an array for 'branches', found: {type_name(item)}"
                )
            for branch in item:
                if not isinstance(branch, Mapping):
                    raise CommandError(
                        40062,
                        f"$switch expected each branch to be an object, found: {type_name(branch)}",
                    )
                case: Optional[Node] = None
                then: Optional[Node] = None
                for part, expression in branch.items():
                    if part == "case":
                        case = parse(expression, scope)
                    elif part == "then":
                        then = parse(expression, scope)
                    else:
                        raise CommandError(
                            40063, f"$switch found an unknown argument to a branch: {part}"
                        )
                if case is None:
                    raise CommandError(
                        40064, "$switch requires each branch have a 'case' expression"
                    )
                if then is None:
                    raise CommandError(
                        40065, "$switch requires each branch have a 'then' expression."
                    )
                branches.append((case, then))
        elif name == "default":
            default = parse(item, scope)
        else:
            raise CommandError(40067, f"$switch found an unknown argument: {name}")
    if not branches:
        raise CommandError(40068, "$switch requires at least one branch.")

    def node(frame: Frame) -> Any:
        for case, then in branches:
            if truthy(case(frame)):
                return then(frame)
        if default is None:
            raise CommandError(
                40066,
                "$switch could not find a matching branch for an input, and no default was"
                " specified.",
            )
        return default(frame)

    return node
