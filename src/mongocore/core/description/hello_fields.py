"""The types of the hello reply fields a ServerDescription is built from.

Seed: server-discovery-and-monitoring.md, "Parsing a hello or legacy hello response"
and the field list of "ServerDescription". The spec names each field's type; a reply
that breaks them comes from a broken or hostile server, and must give an Unknown
server with an error naming the field, never a description whose values later
break a comparison (an electionId that is not an ObjectId, compared with ``>``
against the stored maximum, would raise on every later check of the set).

Each reader returns the field's value (or its default when the field is absent or
null) and raises ``TypeError`` or ``ValueError`` with the field's name otherwise.
Numbers are accepted as BSON gives them: int32, int64, or a double with an integral
value (some test data and old servers write integers as doubles); booleans are
accepted as booleans or numbers (legacy servers answered ``ismaster: 1``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

from bson import ObjectId

__all__ = [
    "document_field",
    "flag_field",
    "int_field",
    "object_id_field",
    "optional_int_field",
    "string_field",
    "string_list_field",
    "tags_field",
    "topology_version_fields",
]


def _type_name(value: object) -> str:
    return type(value).__name__


def _as_int(value: Any, field: str) -> int:
    if type(value) is int:  # the common case first
        return value
    if isinstance(value, int) and not isinstance(value, bool):  # Int64
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    raise TypeError(f"{field!r} must be an integer, not {_type_name(value)} {value!r:.40}")


def int_field(document: Mapping[str, Any], field: str, default: int) -> int:
    value = document.get(field)
    return default if value is None else _as_int(value, field)


def optional_int_field(document: Mapping[str, Any], field: str) -> Optional[int]:
    value = document.get(field)
    return None if value is None else _as_int(value, field)


def flag_field(document: Mapping[str, Any], field: str) -> bool:
    """A boolean; numbers count by their truth (legacy ``ismaster: 1``)."""
    value = document.get(field)
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return bool(value)
    raise TypeError(f"{field!r} must be a boolean, not {_type_name(value)}")


def string_field(document: Mapping[str, Any], field: str) -> Optional[str]:
    value = document.get(field)
    if value is None or type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"{field!r} must be a string, not {_type_name(value)}")


def object_id_field(document: Mapping[str, Any], field: str) -> Optional[ObjectId]:
    value = document.get(field)
    if value is None or isinstance(value, ObjectId):
        return value
    raise TypeError(f"{field!r} must be an ObjectId, not {_type_name(value)}")


def document_field(document: Mapping[str, Any], field: str) -> Optional[Mapping[str, Any]]:
    value = document.get(field)
    if value is None or isinstance(value, (dict, Mapping)):
        return value
    raise TypeError(f"{field!r} must be a document, not {_type_name(value)}")


def string_list_field(document: Mapping[str, Any], field: str) -> Optional[tuple[str, ...]]:
    """An array of strings (host names), as a tuple; None when absent."""
    value = document.get(field)
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"{field!r} must be an array of host names")
    for item in value:
        if not isinstance(item, str):
            raise TypeError(
                f"{field!r} must be an array of host names, but holds a {_type_name(item)}"
            )
    return tuple(value)


def tags_field(document: Mapping[str, Any], field: str = "tags") -> Optional[dict[str, str]]:
    """A document of strings; None when absent or empty."""
    value = document.get(field)
    if value is None:
        return None
    if not isinstance(value, (dict, Mapping)):
        raise TypeError(f"{field!r} must be a document")
    for name, tag in value.items():
        if not isinstance(tag, str):
            raise TypeError(f"{field!r} must hold strings, but {name!r} is a {_type_name(tag)}")
    return dict(value) if value else None


def topology_version_fields(document: Any) -> Optional[tuple[ObjectId, int]]:
    """``{processId: ObjectId, counter: int64}``; None when absent."""
    if document is None:
        return None
    if not isinstance(document, (dict, Mapping)):
        raise TypeError(f"topologyVersion must be a document, not {_type_name(document)}")
    process_id = document.get("processId")
    if not isinstance(process_id, ObjectId):
        raise TypeError(
            f"topologyVersion.processId must be an ObjectId, not {_type_name(process_id)}"
        )
    counter = document.get("counter")
    if counter is None:
        raise TypeError("topologyVersion.counter is missing")
    return process_id, _as_int(counter, "topologyVersion.counter")
