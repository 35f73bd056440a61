"""Type aliases of the CRUD API's arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Union

Document = dict[str, Any]

if TYPE_CHECKING:
    # A default (PEP 696) for type checkers: a bare ``Collection`` is
    # ``Collection[dict[str, Any]]``, as pymongo's are. At run time a plain TypeVar.
    from typing_extensions import TypeVar as _TypeVarWithDefault

    _DocumentType = _TypeVarWithDefault(
        "_DocumentType", bound=Mapping[str, Any], default=dict[str, Any]
    )
else:
    #: The document class of a client, database, collection or cursor (pymongo's
    #: classes are generic in it: ``MongoClient[dict[str, Any]]``).
    _DocumentType = TypeVar("_DocumentType", bound=Mapping[str, Any])
Filter = Mapping[str, Any]
SortSpec = Union[str, Sequence[tuple[str, Any]], Mapping[str, Any], None]
Projection = Union[Mapping[str, Any], Sequence[str], None]
Hint = Union[str, Sequence[tuple[str, Any]], Mapping[str, Any], None]


class _WithDocument(Protocol):
    """An object carrying a command document, such as pymongo's ``Collation``."""

    @property
    def document(self) -> Mapping[str, Any]: ...


#: A collation: a document (``{"locale": "fr"}``) or a ``Collation`` object.
CollationSpec = Union[Mapping[str, Any], _WithDocument]
