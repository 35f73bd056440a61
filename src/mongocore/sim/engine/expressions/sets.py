"""Set expressions (MongoDB manual, "Set Expression Operators"): ``$setEquals``,
``$setIntersection``, ``$setUnion``, ``$setDifference``, ``$setIsSubset``,
``$allElementsTrue`` and ``$anyElementTrue``.

Arrays are sets of BSON values (equal under BSON comparison and the collation:
``1`` and ``1.0`` are one element). ``$setUnion`` and ``$setIntersection`` return their
elements in BSON order, as the server's ordered sets hold them (of equal elements,
the first seen); ``$setDifference`` keeps the first array's order.
"""

from __future__ import annotations

from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.comparison import sort_key
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    arguments,
    constant_value,
    fixed_arguments,
    fold,
    is_constant,
    operator,
)
from mongocore.sim.engine.expressions.logic import truthy
from mongocore.sim.engine.types import type_name

__all__: list[str] = []


def _ordered_set(values: list[Any], collation: Optional[Collation]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for value in values:
        out.setdefault(sort_key(value, collation), value)
    return out


def _sorted(entries: dict[Any, Any]) -> list[Any]:
    return [entries[k] for k in sorted(entries)]


@operator("$setEquals")
def _parse_set_equals(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)
    if len(nodes) < 2:
        raise CommandError(17045, f"$setEquals needs at least two arguments had: {len(nodes)}")
    collation = scope.collation

    def node(frame: Frame) -> Any:
        first: Optional[set[Any]] = None
        for child in nodes:
            entry = child(frame)
            if not isinstance(entry, list):
                raise CommandError(
                    17044,
                    "All operands of $setEquals must be arrays. One argument is of type: "
                    + type_name(entry),
                )
            keys = {sort_key(item, collation) for item in entry}
            if first is None:
                first = keys
            elif keys != first:
                return False
        return True

    return fold(node, nodes)


@operator("$setIntersection")
def _parse_set_intersection(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)
    collation = scope.collation

    def node(frame: Frame) -> Any:
        current: Optional[dict[Any, Any]] = None
        for child in nodes:
            entry = child(frame)
            if nullish(entry):
                return None
            if not isinstance(entry, list):
                raise CommandError(
                    17047,
                    "All operands of $setIntersection must be arrays. One argument is of type: "
                    + type_name(entry),
                )
            entries = _ordered_set(entry, collation)
            if current is None:
                current = entries
            else:
                current = {k: v for k, v in current.items() if k in entries}
        return _sorted(current or {})

    return fold(node, nodes)


@operator("$setUnion")
def _parse_set_union(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)
    collation = scope.collation

    def node(frame: Frame) -> Any:
        union: dict[Any, Any] = {}
        for child in nodes:
            entry = child(frame)
            if nullish(entry):
                return None
            if not isinstance(entry, list):
                raise CommandError(
                    17043,
                    "All operands of $setUnion must be arrays. One argument is of type: "
                    + type_name(entry),
                )
            for item in entry:
                union.setdefault(sort_key(item, collation), item)
        return _sorted(union)

    return fold(node, nodes)


@operator("$setDifference")
def _parse_set_difference(value: Any, scope: Scope) -> Node:
    left_node, right_node = fixed_arguments("$setDifference", 2, value, scope)
    collation = scope.collation

    def node(frame: Frame) -> Any:
        left, right = left_node(frame), right_node(frame)
        if nullish(left) or nullish(right):
            return None
        if not isinstance(left, list):
            raise CommandError(
                17048,
                "both operands of $setDifference must be arrays. First argument is of type: "
                + type_name(left),
            )
        if not isinstance(right, list):
            raise CommandError(
                17049,
                "both operands of $setDifference must be arrays. Second argument is of type: "
                + type_name(right),
            )
        seen = {sort_key(item, collation) for item in right}
        out = []
        for item in left:
            item_key = sort_key(item, collation)
            if item_key not in seen:
                seen.add(item_key)
                out.append(item)
        return out

    return fold(node, [left_node, right_node])


@operator("$setIsSubset")
def _parse_set_is_subset(value: Any, scope: Scope) -> Node:
    left_node, right_node = fixed_arguments("$setIsSubset", 2, value, scope)
    collation = scope.collation
    constant_keys: Optional[set[Any]] = None
    if is_constant(right_node) and not is_constant(left_node):
        # The server's optimize() builds the set of a constant right operand once.
        right = constant_value(right_node)
        if not isinstance(right, list):
            raise CommandError(
                17311,
                "both operands of $setIsSubset must be arrays. Second argument is of type: "
                + type_name(right),
            )
        constant_keys = {sort_key(item, collation) for item in right}

    def node(frame: Frame) -> Any:
        left = left_node(frame)
        if not isinstance(left, list):
            raise CommandError(
                17310 if constant_keys is not None else 17046,
                "both operands of $setIsSubset must be arrays. First argument is of type: "
                + type_name(left),
            )
        keys = constant_keys
        if keys is None:
            right = right_node(frame)
            if not isinstance(right, list):
                raise CommandError(
                    17042,
                    "both operands of $setIsSubset must be arrays. Second argument is of type: "
                    + type_name(right),
                )
            keys = {sort_key(item, collation) for item in right}
        return all(sort_key(item, collation) in keys for item in left)

    return fold(node, [left_node, right_node])


def _element_test(name: str, code: int, want_all: bool) -> None:
    def parse_element_test(value: Any, scope: Scope) -> Node:
        (child,) = fixed_arguments(name, 1, value, scope)

        def node(frame: Frame) -> Any:
            array = child(frame)
            if not isinstance(array, list):
                raise CommandError(
                    code, f"{name}'s argument must be an array, but is {type_name(array)}"
                )
            if want_all:
                return all(truthy(item) for item in array)
            return any(truthy(item) for item in array)

        return fold(node, [child])

    operator(name)(parse_element_test)


_element_test("$allElementsTrue", 17040, True)
_element_test("$anyElementTrue", 17041, False)
