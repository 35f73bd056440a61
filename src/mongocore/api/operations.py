"""The write models of ``bulk_write`` (pymongo's ``pymongo.operations``).

Spec: CRUD, "Bulk Write Models".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, Optional, Union

from mongocore.api.arguments import (
    _check_filter,
    _check_namespace,
    _check_replacement,
    _check_update,
    _collation_document,
    _hint,
    _sort_document,
    _with_id,
)
from mongocore.api.types import CollationSpec, Document, Filter, Hint, _DocumentType

# --- write models ----------------------------------------------------------------------


class _WriteModel:
    """A request of bulk_write."""

    _kind: str = ""
    _multi = False

    def _statement(self) -> Document:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), repr(self)))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if v is not None)
        return f"{type(self).__name__}({fields})"


class InsertOne(_WriteModel, Generic[_DocumentType]):
    """Insert one document (retryable); an ``_id`` is added when it has none."""

    _kind = "insert"

    def __init__(self, document: Mapping[str, Any], namespace: Optional[str] = None) -> None:
        if not isinstance(document, Mapping):
            raise TypeError(f"document must be a mapping (a dict), not {type(document).__name__}")
        _check_namespace(namespace)
        self.document = document

    def _statement(self) -> Document:
        return _with_id(self.document)


class _Update(_WriteModel):
    _kind = "update"
    _replacement = False

    def __init__(  # noqa: PLR0917 (pymongo's positional parameters)
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: Optional[bool] = None,
        collation: Optional[CollationSpec] = None,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
        sort: Optional[Mapping[str, Any]] = None,
    ) -> None:
        _check_filter(filter)
        if upsert is not None and not isinstance(upsert, bool):
            raise TypeError(f"upsert must be True or False, not {upsert!r}")
        if array_filters is not None and not isinstance(array_filters, (list, tuple)):
            raise TypeError(
                f"array_filters must be a list of documents, not {type(array_filters).__name__}"
            )
        _check_namespace(namespace)
        self.filter = filter
        self.update = update
        self.upsert = upsert
        self.array_filters = array_filters
        self.hint = hint
        self.collation = collation
        self.sort = sort

    def _statement(self) -> Document:
        if self._replacement:
            _check_replacement(self.update)
        else:
            _check_update(self.update)
        statement: Document = {
            "q": dict(self.filter),
            "u": self.update if isinstance(self.update, Mapping) else list(self.update),
            "multi": self._multi,
            "upsert": bool(self.upsert),
        }
        if self.array_filters is not None:
            statement["arrayFilters"] = list(self.array_filters)
        if self.hint is not None:
            statement["hint"] = _hint(self.hint)
        if self.collation is not None:
            statement["collation"] = _collation_document(self.collation)
        if self.sort is not None:
            # Which of several matches an UpdateOne or ReplaceOne changes (MongoDB 8.0).
            statement["sort"] = _sort_document(self.sort)
        return statement


class UpdateOne(_Update):
    """Update the first matching document (retryable).

    ``UpdateOne(filter, update, upsert=None, collation=None, array_filters=None,
    hint=None, namespace=None, sort=None)``, as pymongo's.
    """


class UpdateMany(_Update):
    """Update every matching document (never retryable: it may touch many documents)."""

    _multi = True

    def __init__(  # noqa: PLR0917 (pymongo's positional parameters)
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: Optional[bool] = None,
        collation: Optional[CollationSpec] = None,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
    ) -> None:
        super().__init__(filter, update, upsert, collation, array_filters, hint, namespace)


class ReplaceOne(_Update, Generic[_DocumentType]):
    """Replace the first matching document (retryable)."""

    _replacement = True

    def __init__(  # noqa: PLR0917 (pymongo's positional parameters)
        self,
        filter: Filter,
        replacement: Mapping[str, Any],
        upsert: Optional[bool] = None,
        collation: Optional[CollationSpec] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
        sort: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(
            filter,
            replacement,
            upsert,
            collation=collation,
            hint=hint,
            namespace=namespace,
            sort=sort,
        )


class _Delete(_WriteModel):
    _kind = "delete"

    def __init__(
        self,
        filter: Filter,
        collation: Optional[CollationSpec] = None,
        hint: Hint = None,
        namespace: Optional[str] = None,
    ) -> None:
        _check_filter(filter)
        _check_namespace(namespace)
        self.filter = filter
        self.hint = hint
        self.collation = collation

    def _statement(self) -> Document:
        statement: Document = {"q": dict(self.filter), "limit": 0 if self._multi else 1}
        if self.hint is not None:
            statement["hint"] = _hint(self.hint)
        if self.collation is not None:
            statement["collation"] = _collation_document(self.collation)
        return statement


class DeleteOne(_Delete):
    """Delete the first matching document (retryable)."""


class DeleteMany(_Delete):
    """Delete every matching document (never retryable)."""

    _multi = True


WriteModel = Union[InsertOne, UpdateOne, UpdateMany, ReplaceOne, DeleteOne, DeleteMany]
