"""Corrections to mongomock where its answer differs from a MongoDB 7.0 server's.

Applied once, when the simulator's store is imported:

- a 5.0+ server stores top-level ``$``-prefixed field names (only ``_id`` may not
  hold them, :func:`mongocore.sim.writes.check_storable`); mongomock refuses them as
  servers before 5.0 did;
- an aggregation comparison (``$eq``, ``$lt``, ... in ``$expr`` or a stage) of a missing
  field: a server compares "missing" as lower than every value and equal only to
  missing; mongomock raises a KeyError.
"""

from __future__ import annotations

from typing import Any

import mongomock.aggregate
import mongomock.collection
from mongomock import filtering

__all__ = ["MISSING"]

#: mongomock's marker for a missing field.
MISSING: Any = filtering.NOTHING  # type: ignore[attr-defined]
_MISSING = MISSING


def _allow_dollar_fields(data: Any) -> None:
    mongomock.collection._recursive_key_check_null_character(data)  # type: ignore[no-untyped-call]


def _compare(parser: Any, operator: str, values: Any) -> Any:
    if not isinstance(values, list) or len(values) != 2:
        return _original_compare(parser, operator, values)  # type: ignore[no-untyped-call]
    a = parser._parse_or_nothing(values[0])
    b = parser._parse_or_nothing(values[1])
    if a is not _MISSING and b is not _MISSING:
        literals = [{"$literal": a}, {"$literal": b}]
        return _original_compare(parser, operator, literals)  # type: ignore[no-untyped-call]
    order = (a is not _MISSING) - (b is not _MISSING)  # missing sorts first
    outcomes = {
        "$eq": order == 0,
        "$ne": order != 0,
        "$lt": order < 0,
        "$lte": order <= 0,
        "$gt": order > 0,
        "$gte": order >= 0,
        "$cmp": order,
    }
    if operator not in outcomes:
        return _original_compare(parser, operator, values)  # type: ignore[no-untyped-call]
    return outcomes[operator]


_original_compare = mongomock.aggregate._Parser._handle_comparison_operator
mongomock.collection._validate_data_fields = _allow_dollar_fields
mongomock.aggregate._Parser._handle_comparison_operator = _compare  # type: ignore[method-assign]
