"""Corrections to mongomock's aggregation where its answer differs from a MongoDB 7.0
server's. mongomock serves only as the aggregation helper of sim/aggregation.py (until
the engine has aggregation stages and expressions): it runs pipelines over plain lists
of the engine's documents, or over a throwaway client holding the collections a
``$lookup``, ``$graphLookup`` or ``$unionWith`` reads. These corrections are applied
when sim/aggregation.py is imported, and only that path reaches mongomock:

- a 5.0+ server stores top-level ``$``-prefixed field names (only ``_id`` may not
  hold them, :func:`mongocore.sim.writes.check_storable`); mongomock refuses them as
  servers before 5.0 did;
- an aggregation comparison (``$eq``, ``$lt``, ... in ``$expr`` or a stage) of a missing
  field: a server compares "missing" as lower than every value and equal only to
  missing; mongomock raises a KeyError;
- empty timestamps (``Timestamp(0, 0)``): mongomock replaces every one it meets with
  the current time, at any depth (a ``$match`` stage normalizes every document it
  tests). A server leaves them as they are;
- ``_id`` values Python cannot hash (``Decimal128``, ``Code``): mongomock keeps a
  collection's documents in a dictionary keyed by ``_id`` and failed to store them in
  the throwaway client; :func:`store_key` gives each ``_id`` a key equal exactly when
  the ``_id`` values are equal in BSON (numerically for decimals, a NaN equal to every
  NaN).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import mongomock.aggregate
import mongomock.collection
import mongomock.helpers
import mongomock.store
from bson import Code, Decimal128, Timestamp
from mongomock import filtering

__all__ = ["MISSING", "is_nan", "store_key"]

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


# -- empty timestamps ------------------------------------------------------------------

_original_normalize = mongomock.helpers.patch_datetime_awareness_in_document


def _normalize_keeping_timestamps(value: Any) -> Any:
    """mongomock's normalization of stored and queried values (datetimes to naive UTC
    milliseconds, nested documents and arrays rebuilt), minus its timestamp filling.
    Its recursion calls this function again (through the module attribute)."""
    if isinstance(value, Timestamp):
        return value
    return _original_normalize(value)  # type: ignore[no-untyped-call]


mongomock.helpers.patch_datetime_awareness_in_document = _normalize_keeping_timestamps


# -- the keys of a collection's documents --------------------------------------------

_hashdict: Any = mongomock.helpers.hashdict
_NAN_KEY = ("NaN",)


def is_nan(value: Any) -> bool:
    """A NaN double or decimal: BSON holds every NaN equal to every other, Python to none."""
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, Decimal128):
        return bool(value.to_decimal().is_nan())
    return False


def store_key(doc_id: Any) -> Any:
    """The key of the document with this ``_id`` in mongomock's dictionary: equal for
    two ``_id`` values exactly when a server's ``_id`` index holds them as one."""
    if isinstance(doc_id, dict):
        return doc_id if isinstance(doc_id, _hashdict) else _hashdict(doc_id)
    if is_nan(doc_id):
        return _NAN_KEY
    if isinstance(doc_id, Decimal128):
        # decimal.Decimal hashes and compares like the int or float of equal value.
        return doc_id.to_decimal()
    if isinstance(doc_id, Code):
        scope = None if doc_id.scope is None else store_key(dict(doc_id.scope))
        return ("Code", str(doc_id), scope)
    return doc_id


def _keyed(method: Callable[..., Any]) -> Callable[..., Any]:
    def keyed(store: Any, key: Any, *args: Any) -> Any:
        return method(store, store_key(key), *args)

    return keyed


for _name in ("__contains__", "__getitem__", "__setitem__", "__delitem__"):
    setattr(
        mongomock.store.CollectionStore,
        _name,
        _keyed(getattr(mongomock.store.CollectionStore, _name)),
    )
