"""Type aliases of the CRUD API's arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Union

Document = dict[str, Any]
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
