"""Type aliases, under pymongo's module name (``pymongo.typings``).

Libraries annotate with these names (``_DocumentType`` for a collection's document
class, ``_Pipeline`` for an aggregation pipeline); mongocore's own annotations use
:mod:`mongocore.api.types`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from bson.typings import _DocumentOut, _DocumentType, _DocumentTypeArg

if TYPE_CHECKING:
    from mongocore.api.mongo_client import MongoClient
    from mongocore.collation import Collation

__all__ = [
    "_Address",
    "_CollationIn",
    "_DocumentOut",
    "_DocumentType",
    "_DocumentTypeArg",
    "_Pipeline",
    "strip_optional",
]

_Address = tuple[str, Optional[int]]
_CollationIn = Union[Mapping[str, Any], "Collation"]
_Pipeline = Sequence[Mapping[str, Any]]
#: pymongo 4.18's name for "a client, synchronous or not" (only synchronous here).
_AgnosticMongoClient = Union["MongoClient", "MongoClient"]

_T = TypeVar("_T")


def strip_optional(elem: Optional[_T]) -> _T:
    """``elem``, which must not be None (a cast from Optional, for comprehensions)."""
    assert elem is not None
    return elem
