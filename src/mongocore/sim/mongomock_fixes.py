"""Corrections to mongomock where its answer differs from a MongoDB 7.0 server's.

Applied once, when the simulator's store is imported:

- a 5.0+ server stores top-level ``$``-prefixed field names (only ``_id`` may not
  hold them, :func:`mongocore.sim.writes.check_storable`); mongomock refuses them as
  servers before 5.0 did;
- an aggregation comparison (``$eq``, ``$lt``, ... in ``$expr`` or a stage) of a missing
  field: a server compares "missing" as lower than every value and equal only to
  missing; mongomock raises a KeyError;
- empty timestamps (``Timestamp(0, 0)``): mongomock replaces every one it meets with
  the current time, at any depth, in ``_id``, and even in query filters (so that a
  filter on an empty timestamp matches nothing). A server leaves them as they are,
  except in a top-level field other than ``_id`` of an inserted document, which the
  store fills itself (:meth:`mongocore.sim.store.DataStore.insert`);
- ``_id`` values Python cannot hash (``Decimal128``, ``Code``): mongomock keeps a
  collection's documents in a dictionary keyed by ``_id`` and failed to store them;
  :func:`store_key` gives each ``_id`` a key equal exactly when the ``_id`` values are
  equal in BSON (numerically for decimals, a NaN equal to every NaN);
- update operators on an array element (``{$unset: {"a.0": ""}}`` sets it to null,
  ``$min``/``$max`` compare it): mongomock changed nothing; and ``$mul``, which
  mongomock lacks (a missing field becomes 0 of the multiplier's type; a non-numeric
  operand fails with TypeMismatch, 14).
"""

from __future__ import annotations

import decimal
import math
from typing import Any, Callable

import mongomock.aggregate
import mongomock.collection
import mongomock.helpers
import mongomock.store
from bson import Code, Decimal128, Int64, Timestamp
from mongomock import filtering

from mongocore.sim.codes import CommandError

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


# -- update operators on array elements --------------------------------------------------

_Updater = Callable[[Any, str, Any], None]
_UPDATERS: dict[str, _Updater] = mongomock.collection._updaters
_NUMBERS = (int, float, Int64, Decimal128)
_order: Any = filtering.BsonComparable  # the BSON order of values


def _index(doc: list[Any], field_name: str) -> int:
    index = int(field_name)
    if index >= len(doc):
        doc.extend([None] * (index + 1 - len(doc)))  # a server pads with nulls
    return index


def _on_elements(original: _Updater, combine: Callable[[Any, Any], Any]) -> _Updater:
    def updater(doc: Any, field_name: str, value: Any) -> None:
        if isinstance(doc, list) and field_name.isdigit():
            index = _index(doc, field_name)
            doc[index] = combine(doc[index], value)
            return
        original(doc, field_name, value)

    return updater


def _unset_element(doc: Any, field_name: str, value: Any) -> None:
    if isinstance(doc, list) and field_name.isdigit():
        if int(field_name) < len(doc):
            doc[int(field_name)] = None  # a server keeps the array's length
        return
    _original_unset(doc, field_name, value)


def _bson_max(current: Any, value: Any) -> Any:
    if current is None:
        return value
    return value if _order(value) > _order(current) else current


def _bson_min(current: Any, value: Any) -> Any:
    if current is None:
        return value
    return value if _order(value) < _order(current) else current


def _multiply(current: Any, value: Any) -> Any:
    if not isinstance(value, _NUMBERS) or isinstance(value, bool):
        raise CommandError(14, f"Cannot multiply with non-numeric argument: {value!r}")
    if current is None:
        return type(value)(0) if not isinstance(value, Decimal128) else Decimal128("0")
    if not isinstance(current, _NUMBERS) or isinstance(current, bool):
        raise CommandError(14, "Cannot apply $mul to a value of non-numeric type")
    if isinstance(current, Decimal128) or isinstance(value, Decimal128):
        return Decimal128(_decimal(current) * _decimal(value))
    return current * value


def _decimal(value: Any) -> decimal.Decimal:
    return value.to_decimal() if isinstance(value, Decimal128) else decimal.Decimal(value)


def _mul(doc: Any, field_name: str, value: Any) -> None:
    if isinstance(doc, list) and field_name.isdigit():
        index = _index(doc, field_name)
        doc[index] = _multiply(doc[index], value)
    elif isinstance(doc, dict):
        doc[field_name] = _multiply(doc.get(field_name), value)


_original_unset = _UPDATERS["$unset"]
_UPDATERS["$unset"] = _unset_element
_UPDATERS["$max"] = _on_elements(_UPDATERS["$max"], _bson_max)
_UPDATERS["$min"] = _on_elements(_UPDATERS["$min"], _bson_min)
_UPDATERS["$mul"] = _mul


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
