"""BSON dates as the expression language reads and makes them: milliseconds since the
epoch, decoded as naive UTC datetimes (bson's default), or as ``DatetimeMS`` outside
the years 1 to 9999 that a datetime holds."""

from __future__ import annotations

import datetime
from typing import Any

from bson import ObjectId, Timestamp
from bson.datetime_ms import DatetimeMS

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import millis

__all__ = ["coerce_to_date", "from_millis", "is_date", "to_millis"]

_EPOCH = datetime.datetime(1970, 1, 1)
_MIN_MILLIS = millis(datetime.datetime.min)
_MAX_MILLIS = millis(datetime.datetime.max.replace(microsecond=999000))


def is_date(value: Any) -> bool:
    return isinstance(value, (datetime.datetime, DatetimeMS))


def to_millis(value: Any) -> int:
    """A date's milliseconds since the epoch."""
    if isinstance(value, DatetimeMS):
        return int(value)
    return millis(value)


def from_millis(number: int) -> Any:
    """A date of ``number`` milliseconds since the epoch."""
    if _MIN_MILLIS <= number <= _MAX_MILLIS:
        return _EPOCH + datetime.timedelta(milliseconds=number)
    return DatetimeMS(number)


def coerce_to_date(value: Any) -> int:
    """A date, a timestamp (its seconds) or an ObjectId (its time) as milliseconds
    (``Value::coerceToDate``); anything else is the server's 16006."""
    if isinstance(value, (datetime.datetime, DatetimeMS)):
        return to_millis(value)
    if isinstance(value, Timestamp):
        return int(value.time) * 1000
    if isinstance(value, ObjectId):
        return int(value.generation_time.timestamp()) * 1000
    raise CommandError(16006, f"can't convert from BSON type {type_name(value)} to Date")
