"""Checks and conversions of the CRUD methods' arguments (filters, updates,
replacements, sort, projection, hint, index keys, collation)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from bson import ObjectId

from mongocore.api.types import Document, Hint, Projection, SortSpec
from mongocore.errors import (
    ConfigurationError,
    write_concern_error_from_reply,
    write_error_from_document,
)


def _check_filter(filter: object) -> None:
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a mapping (a dict), not {type(filter).__name__}")


def _check_namespace(namespace: object) -> None:
    # pymongo's namespace names the collection of a client-level bulk write.
    if namespace is not None:
        raise ConfigurationError(
            f"namespace={namespace!r}: write models with a namespace are for a "
            "client-level bulk write, which mongocore does not provide; use "
            "Collection.bulk_write without namespace"
        )


def _collation_document(collation: object) -> Document:
    """A collation document, or an object with one (pymongo's ``Collation``)."""
    document = getattr(collation, "document", collation)
    if not isinstance(document, Mapping):
        raise TypeError(
            "collation must be a document or a Collation (an object with a `document`), "
            f"not {type(collation).__name__}"
        )
    return dict(document)


def _collation_or_none(collation: object) -> Optional[Document]:
    return None if collation is None else _collation_document(collation)


# --- argument helpers ------------------------------------------------------------------


def _with_id(document: Mapping[str, Any]) -> Document:
    """The document to insert, with an ``_id``. Like other drivers, a missing ``_id`` is
    also set on the caller's document (when it is a mutable mapping), so the caller
    learns it."""
    if "_id" in document:
        # _id first, as the server stores it (a document sent inside the command's
        # body keeps its own order, where bson moves _id first only at the top level).
        # A dict that has it first already (the usual case) is sent as it is: nothing
        # changes it.
        if type(document) is dict and next(iter(document)) == "_id":
            return document
        return {"_id": document["_id"], **document}
    new_id = ObjectId()
    if isinstance(document, dict):
        document["_id"] = new_id
    return {"_id": new_id, **document}


def _check_update(update: Any) -> None:
    if isinstance(update, Mapping):
        if not update or not all(str(key).startswith("$") for key in update):
            raise ValueError("an update must be a non-empty document of $-operators or a pipeline")
    elif isinstance(update, (list, tuple)):
        if not update:
            raise ValueError("an update pipeline must have at least one stage")
    else:
        raise TypeError(f"an update must be a document or a pipeline, not {type(update).__name__}")


def _check_replacement(replacement: Any) -> None:
    if not isinstance(replacement, Mapping):
        raise TypeError(f"a replacement must be a document, not {type(replacement).__name__}")
    if any(str(key).startswith("$") for key in replacement):
        raise ValueError("a replacement document must not contain $-operators")


def _index_list(key_or_list: Any, direction: Any = None) -> list[Any]:
    """(key, direction) pairs from a key and a direction, a key alone (ascending), a
    mapping, or a list whose items are keys or pairs (``["name", ("age", -1)]``), as
    pymongo's sort and hint helpers take them."""
    if direction is not None:
        if not isinstance(key_or_list, str):
            raise TypeError(f"expected a key and a direction, not {type(key_or_list).__name__}")
        return [(key_or_list, direction)]
    if isinstance(key_or_list, str):
        return [(key_or_list, 1)]
    if isinstance(key_or_list, Mapping):
        return list(key_or_list.items())
    if not isinstance(key_or_list, (list, tuple)):
        raise TypeError(
            "without a direction, the keys must be a list of keys or (key, direction) "
            f"pairs, or a mapping, not {type(key_or_list).__name__}"
        )
    return [(item, 1) if isinstance(item, str) else item for item in key_or_list]


def _index_document(keys: Any) -> Document:
    """An ordered ``{key: direction}`` document from a mapping or a list of keys and
    (key, direction) pairs; each key a string, each direction an int, a string
    (``"2dsphere"``, ``"text"``, ...) or a document."""
    if not isinstance(keys, (list, tuple, Mapping)):
        raise TypeError(
            f"keys must be a mapping or a list of keys or (key, direction) pairs, not {keys!r}"
        )
    if not keys:
        raise ValueError("keys must not be empty")
    pairs = keys.items() if isinstance(keys, Mapping) else _index_list(keys)
    document: Document = {}
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(f"each item must be a key or a (key, direction) pair, not {pair!r}")
        key, value = pair
        if not isinstance(key, str):
            raise TypeError(f"a key must be a string, not {type(key).__name__}")
        if isinstance(value, bool) or not isinstance(value, (str, int, Mapping)):
            raise TypeError(
                f"the direction of {key!r} must be 1, -1, a string such as '2dsphere' "
                f"or a document, not {value!r}"
            )
        document[key] = value
    return document


def _sort_document(sort: SortSpec, direction: Any = None) -> Optional[Document]:
    if sort is None:
        return None
    return _index_document(_index_list(sort, direction))


def _projection(projection: Projection) -> Optional[Document]:
    if projection is None:
        return None
    if isinstance(projection, Mapping):
        return dict(projection)
    if isinstance(projection, str):
        raise TypeError("projection must be a document or a list of field names")
    fields = list(projection)
    if not all(isinstance(field, str) for field in fields):
        raise TypeError("projection must be a document or a list of field names (strings)")
    return dict.fromkeys(fields, 1)


def _hint(hint: Hint) -> Any:
    """An index name as it is, or index keys as an ordered document."""
    if isinstance(hint, str):
        return hint
    return _index_document(hint)


def _index_keys(keys: Union[str, Sequence[Any], Mapping[str, Any]]) -> Document:
    return _index_document(_index_list(keys))


def _index_name(keys: Mapping[str, Any]) -> str:
    return "_".join(f"{key}_{value}" for key, value in keys.items())


_SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def _field_name(name: str) -> str:
    """A command option given in snake_case as the server spells it: ``max_time_ms`` is
    ``maxTimeMS``, ``allow_disk_use`` is ``allowDiskUse``; other names as they are."""
    if "_" not in name or not _SNAKE_CASE.fullmatch(name):
        return name
    first, *rest = name.split("_")
    text = first + "".join(part[:1].upper() + part[1:] for part in rest)
    return text[: -len("Ms")] + "MS" if text.endswith("Ms") else text


def _command_fields(options: Mapping[str, Any]) -> Document:
    """The command fields ``**kwargs`` give, as pymongo passes them (``maxTimeMS=100``),
    with mongocore's snake_case spellings (``max_time_ms=100``) too; None is "not
    given"."""
    return {_field_name(key): value for key, value in options.items() if value is not None}


def _options(**options: Any) -> Document:
    """The command options that were given (None means "not given")."""
    return {key: value for key, value in options.items() if value is not None}


def _raise_write_concern_error(reply: Mapping[str, Any]) -> None:
    error = write_concern_error_from_reply(reply)
    if error is not None:
        raise error


def _raise_single_write_errors(reply: Mapping[str, Any]) -> None:
    """A single-statement write: its write error, else its write concern error."""
    errors = reply.get("writeErrors")
    if isinstance(errors, list) and errors:
        raise write_error_from_document(errors[0], reply.get("errorLabels") or ())
    _raise_write_concern_error(reply)
