"""Time-series collections as a 7.0 server presents them (MongoDB manual, "Time
Series", "Create and Query a Time Series Collection", "Time Series Collection
Limitations").

``create`` with ``timeseries: {timeField, metaField, granularity}`` (and
``expireAfterSeconds``) makes a collection listed with type ``"timeseries"``; its
options show the granularity (``"seconds"`` unless given) and the bucket span it
implies. Each document must hold a date in its ``timeField`` (BadValue, 2). A 7.0
server stores the measurements in buckets (``system.buckets.<name>``); the simulator
keeps the measurements as they were inserted and does not model the buckets, so the
bucket collection is not listed and commands naming it are refused (238).

What a 7.0 server allows and refuses, as this module's functions decide it:

- deletes with any filter, outside transactions;
- updates only of the ``metaField``: a filter on the ``metaField`` alone, update
  operators that change only the ``metaField``, ``multi: true``, no upsert;
- no write inside a transaction (263);
- no ``_id`` index (listIndexes lists none), and with a ``metaField`` the index a
  server creates on ``{metaField: 1, timeField: 1}``; no unique index.

Custom bucketing (``bucketMaxSpanSeconds`` equal to ``bucketRoundingSeconds``, no
granularity) is listed as given. The server's refusals the simulator does not reproduce
word for word are NotImplemented (238), and so are documents with the same ``_id``,
which a server's buckets hold and the simulator's one document per ``_id`` does not.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Optional

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.values import is_number, numeric_value

__all__ = [
    "GRANULARITIES",
    "TimeseriesOptions",
    "check_measurement",
    "default_index",
    "modified_expiry",
    "timeseries_options",
    "update_allowed",
]

#: Each granularity and the bucket span (seconds) it gives.
GRANULARITIES = {"seconds": 3600, "minutes": 86400, "hours": 2592000}
_FIELDS = ("timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds")


@dataclass(frozen=True)
class TimeseriesOptions:
    """A time-series collection's options."""

    time_field: str
    meta_field: Optional[str] = None
    granularity: Optional[str] = "seconds"
    expire_after_seconds: Optional[int] = None
    #: Custom bucketing (bucketMaxSpanSeconds and bucketRoundingSeconds, equal, without
    #: a granularity), or None.
    bucket_seconds: Optional[int] = None

    def to_document(self) -> dict[str, Any]:
        """The collection's options as listCollections lists them."""
        timeseries: dict[str, Any] = {"timeField": self.time_field}
        if self.meta_field is not None:
            timeseries["metaField"] = self.meta_field
        if self.granularity is not None:
            timeseries["granularity"] = self.granularity
            timeseries["bucketMaxSpanSeconds"] = GRANULARITIES[self.granularity]
        else:
            timeseries["bucketRoundingSeconds"] = self.bucket_seconds
            timeseries["bucketMaxSpanSeconds"] = self.bucket_seconds
        doc: dict[str, Any] = {"timeseries": timeseries}
        if self.expire_after_seconds is not None:
            doc["expireAfterSeconds"] = Int64(self.expire_after_seconds)
        return doc


def _type_name(value: Any) -> str:
    names = {bool: "bool", int: "int", float: "double", str: "string", list: "array"}
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    return names.get(type(value), type(value).__name__)


def _field_name(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise CommandError(
            14,
            f"BSON field 'create.timeseries.{name}' is the wrong type '{_type_name(value)}', "
            "expected type 'string'",
        )
    if "." in value:
        raise CommandError(72, f"The '{name}' field cannot contain embedded fields")
    return value


def _expire_after(value: Any) -> int:
    if isinstance(value, bool) or not is_number(value):
        raise CommandError(
            14,
            f"BSON field 'create.expireAfterSeconds' is the wrong type '{_type_name(value)}', "
            "expected types '[long, int, decimal, double]'",
        )
    number = numeric_value(value)
    if math.isnan(float(number)) or number < 0:
        raise CommandError(
            2, "TTL index 'expireAfterSeconds' option must be within an acceptable range"
        )
    return int(number)


def timeseries_options(cmd: Mapping[str, Any]) -> Optional[TimeseriesOptions]:
    """The options of a ``create`` command that makes a time-series collection, or
    None if it makes another kind."""
    spec = cmd.get("timeseries")
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise CommandError(
            14,
            f"BSON field 'create.timeseries' is the wrong type '{_type_name(spec)}', "
            "expected type 'object'",
        )
    for name in spec:
        if name not in _FIELDS:
            raise CommandError(40415, f"BSON field 'create.timeseries.{name}' is an unknown field.")
    if "timeField" not in spec:
        raise CommandError(
            40414, "BSON field 'create.timeseries.timeField' is missing but a required field"
        )
    time_field = _field_name("timeField", spec["timeField"])
    meta_field = None
    if spec.get("metaField") is not None:
        meta_field = _field_name("metaField", spec["metaField"])
        if meta_field == "_id":
            raise CommandError(72, "The 'metaField' field cannot be \"_id\"")
        if meta_field == time_field:
            raise CommandError(
                72, "The 'metaField' field cannot be the same as the 'timeField' field"
            )
    granularity = spec.get("granularity", "seconds")
    if granularity not in GRANULARITIES:
        raise CommandError(
            2,
            f"Enumeration value '{granularity}' for field 'create.timeseries.granularity' is "
            "not a valid value.",
        )
    bucket_seconds = _bucketing(spec)
    if bucket_seconds is not None:
        granularity = None
    for name in ("capped", "validator", "viewOn", "clusteredIndex"):
        if cmd.get(name):
            raise CommandError(
                238,
                f"a time-series collection with '{name}' is refused by a server; the "
                "simulator does not reproduce its error",
            )
    expire = None
    if cmd.get("expireAfterSeconds") is not None:
        expire = _expire_after(cmd["expireAfterSeconds"])
    return TimeseriesOptions(
        time_field=time_field,
        meta_field=meta_field,
        granularity=None if granularity is None else str(granularity),
        expire_after_seconds=expire,
        bucket_seconds=bucket_seconds,
    )


#: The largest custom bucket span a server takes (a year).
_MAX_BUCKET_SECONDS = 31536000


def _bucketing(spec: Mapping[str, Any]) -> Optional[int]:
    """Custom bucketing (6.3+): both parameters, equal, between 1 s and a year, and no
    granularity; a server refuses the other combinations, which the simulator refuses
    with NotImplemented (238) as it does not reproduce their errors."""
    span, rounding = spec.get("bucketMaxSpanSeconds"), spec.get("bucketRoundingSeconds")
    if span is None and rounding is None:
        return None
    if not (
        isinstance(span, int)
        and not isinstance(span, bool)
        and span == rounding
        and 1 <= span <= _MAX_BUCKET_SECONDS
        and spec.get("granularity") is None
    ):
        raise CommandError(
            238,
            "bucketMaxSpanSeconds and bucketRoundingSeconds are taken by the simulator only "
            "together, equal, between 1 and 31536000, and without a granularity",
        )
    return int(span)


def modified_expiry(options: TimeseriesOptions, value: Any) -> TimeseriesOptions:
    """A collMod's ``expireAfterSeconds``: a number of seconds, or ``"off"``."""
    if value == "off":
        return replace(options, expire_after_seconds=None)
    if isinstance(value, str):
        raise CommandError(
            238,
            "expireAfterSeconds is a number or 'off'; the simulator does not reproduce the "
            "server's error for another string",
        )
    return replace(options, expire_after_seconds=_expire_after(value))


def check_measurement(options: TimeseriesOptions, doc: Mapping[str, Any]) -> None:
    """Refuse a document without a date in the time field, as a server's insert does."""
    if not isinstance(doc.get(options.time_field), datetime.datetime):
        raise CommandError(
            2,
            f"'{options.time_field}' must be present and contain a valid BSON UTC datetime value",
        )


def default_index(options: TimeseriesOptions) -> Optional[dict[str, Any]]:
    """The index a server creates with the collection: ``{metaField: 1, timeField: 1}``
    when there is a metaField (since 6.3)."""
    if options.meta_field is None:
        return None
    key = {options.meta_field: 1, options.time_field: 1}
    return {"key": key, "name": f"{options.meta_field}_1_{options.time_field}_1"}


def _on_meta(path: str, meta_field: Optional[str]) -> bool:
    return meta_field is not None and (path == meta_field or path.startswith(meta_field + "."))


def _filter_on_meta(flt: Any, meta_field: Optional[str]) -> bool:
    if not isinstance(flt, Mapping):
        return False
    for name, value in flt.items():
        if name in ("$and", "$or", "$nor"):
            if not isinstance(value, list) or not all(
                _filter_on_meta(c, meta_field) for c in value
            ):
                return False
        elif name.startswith("$") or not _on_meta(name, meta_field):
            return False
    return True


def update_allowed(options: TimeseriesOptions, statement: Mapping[str, Any]) -> bool:
    """Whether a 7.0 server runs this update statement on the collection: a filter
    on the metaField alone, update operators that change only the metaField, many
    documents, no upsert."""
    update = statement.get("u")
    if not isinstance(update, Mapping) or not update:
        return False
    if not all(isinstance(op, str) and op.startswith("$") for op in update):
        return False  # a replacement, or a pipeline
    for fields in update.values():
        if not isinstance(fields, Mapping):
            return False
        for path in fields:
            if not _on_meta(str(path), options.meta_field):
                return False
    if not statement.get("multi") or statement.get("upsert"):
        return False
    return _filter_on_meta(statement.get("q", {}), options.meta_field)


def update_refused(namespace: str) -> CommandError:
    """The simulator's refusal of an update a 7.0 server refuses on the collection."""
    return CommandError(
        238,
        f"{namespace} is a time-series collection: a 7.0 server updates only its metaField "
        "(a filter on the metaField alone, multi: true, no upsert); the simulator refuses "
        "other updates",
    )


def transaction_refused(namespace: str) -> CommandError:
    """The error of a write to a time-series collection inside a transaction."""
    return CommandError(
        263, f"Cannot write to time-series collection {namespace} in a multi-document transaction"
    )
