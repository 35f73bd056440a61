"""Checks and conversions of the CRUD methods' arguments (filters, updates,
replacements, sort, projection, hint, index keys, collation)."""

from __future__ import annotations

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
        raise TypeError(f"collation must be a document, not {type(collation).__name__}")
    return dict(document)


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


def _sort_document(sort: SortSpec, direction: Any = None) -> Optional[Document]:
    if sort is None:
        return None
    if isinstance(sort, str):
        return {sort: 1 if direction is None else direction}
    if isinstance(sort, Mapping):
        return dict(sort)
    return {key: value for key, value in sort}


def _projection(projection: Projection) -> Optional[Document]:
    if projection is None:
        return None
    if isinstance(projection, Mapping):
        return dict(projection)
    if isinstance(projection, str):
        raise TypeError("projection must be a document or a list of field names")
    return {name: 1 for name in projection}


def _hint(hint: Hint) -> Any:
    if isinstance(hint, (str, Mapping)):
        return hint if isinstance(hint, str) else dict(hint)
    return {key: value for key, value in (hint or ())}


def _index_keys(keys: Union[str, Sequence[tuple[str, Any]], Mapping[str, Any]]) -> Document:
    if isinstance(keys, str):
        return {keys: 1}
    if isinstance(keys, Mapping):
        return dict(keys)
    return {key: value for key, value in keys}


def _index_name(keys: Mapping[str, Any]) -> str:
    return "_".join(f"{key}_{value}" for key, value in keys.items())


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
