"""Document-level write rules of a simulated mongod: what a stored document may contain
(MongoDB manual, "Field Names") and the checks of an update statement made before any
document is read. The update operators themselves are the engine's
(sim/engine/update.py); pipeline updates are sim/update_pipeline.py's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import bson

from mongocore.sim.codes import CommandError
from mongocore.sim.update_pipeline import check_pipeline

__all__ = [
    "check_storable",
    "check_update",
    "has_positional",
    "is_replacement",
]

Document = dict[str, Any]

_POSITIONAL = re.compile(r"(^|\.)\$(\.|$)")


def is_replacement(update: Any) -> bool:
    return isinstance(update, Mapping) and not any(str(k).startswith("$") for k in update)


def has_positional(update: Any) -> bool:
    """Does an operator update name a path with the positional ``$`` (set by the query)?"""
    if not isinstance(update, Mapping) or is_replacement(update):
        return False
    return any(
        isinstance(fields, Mapping) and any(_POSITIONAL.search(str(path)) for path in fields)
        for fields in update.values()
    )


def check_update(update: Any, array_filters: Any) -> None:
    """Refuse, before any document is read, what a server refuses when it parses an
    update statement's pipeline (the engine parses operator updates and arrayFilters)."""
    if isinstance(update, list):
        if array_filters is not None:
            raise CommandError(9, "arrayFilters may not be specified for pipeline-style updates")
        check_pipeline(update)


def check_storable(doc: Mapping[str, Any]) -> None:
    """Refuse an ``_id`` a server cannot store."""
    if "_id" not in doc:
        return
    value = doc["_id"]
    if isinstance(value, list):
        raise CommandError(53, "The '_id' value cannot be of type array")
    if isinstance(value, (re.Pattern, bson.Regex)):
        raise CommandError(53, "The '_id' value cannot be of type regex")
    if isinstance(value, Mapping):
        _check_no_dollar_keys(value)


def _check_no_dollar_keys(value: Mapping[str, Any]) -> None:
    for key, item in value.items():
        if str(key).startswith("$"):
            raise CommandError(
                52,
                f"_id fields may not contain '$'-prefixed fields: {key} is not valid for storage.",
            )
        if isinstance(item, Mapping):
            _check_no_dollar_keys(item)
