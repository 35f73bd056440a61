"""Comparison expressions (MongoDB manual, "Comparison Expression Operators"): ``$cmp``,
``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt`` and ``$lte``, and the comparison every
other expression uses.

Expressions compare values in BSON's canonical order without the query language's
type bracketing (``{$gt: ["a", 1]}`` is true: strings sort after numbers), strings
under the command's collation. A missing value is not null here: it ranks with
undefined, above MinKey and below null (the server compares them as ``EOO`` and
``undefined``, whose canonical types are the same), so ``{$eq: ["$absent", null]}`` is
false.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from mongocore.sim.collation import Collation
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    fixed_arguments,
    fold,
    operator,
)
from mongocore.sim.engine.values import MISSING, UNDEFINED, key

__all__ = ["compare_values", "sort_key", "values_equal"]


def sort_key(value: Any, collation: Optional[Collation] = None) -> tuple[Any, ...]:
    """The key of a value in the expression language's order (missing as undefined)."""
    if value is MISSING:
        return key(UNDEFINED)
    return key(value, collation)


def compare_values(a: Any, b: Any, collation: Optional[Collation] = None) -> int:
    """-1, 0 or 1: how ``a`` compares with ``b``."""
    kind_a, kind_b = type(a), type(b)
    if kind_a is kind_b:
        if kind_a is int or (kind_a is str and collation is None):
            return int(a > b) - int(a < b)
        if kind_a is float and not (math.isnan(a) or math.isnan(b)):
            return int(a > b) - int(a < b)
    key_a, key_b = sort_key(a, collation), sort_key(b, collation)
    return (key_a > key_b) - (key_a < key_b)


def values_equal(a: Any, b: Any, collation: Optional[Collation] = None) -> bool:
    return compare_values(a, b, collation) == 0


def _comparison(name: str, test: Callable[[int], bool]) -> None:
    def parse_comparison(value: Any, scope: Scope) -> Node:
        left, right = fixed_arguments(name, 2, value, scope)
        collation = scope.collation

        def node(frame: Frame) -> Any:
            return test(compare_values(left(frame), right(frame), collation))

        return fold(node, [left, right])

    operator(name)(parse_comparison)


_comparison("$eq", lambda c: c == 0)
_comparison("$ne", lambda c: c != 0)
_comparison("$gt", lambda c: c > 0)
_comparison("$gte", lambda c: c >= 0)
_comparison("$lt", lambda c: c < 0)
_comparison("$lte", lambda c: c <= 0)


@operator("$cmp")
def _parse_cmp(value: Any, scope: Scope) -> Node:
    left, right = fixed_arguments("$cmp", 2, value, scope)
    collation = scope.collation

    def node(frame: Frame) -> Any:
        return compare_values(left(frame), right(frame), collation)

    return fold(node, [left, right])
