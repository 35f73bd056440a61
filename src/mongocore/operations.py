"""Write models and index models, under pymongo's module name (``pymongo.operations``).

The write models live in :mod:`mongocore.api.operations`, ``IndexModel`` in
:mod:`mongocore.api.index_model`, ``SearchIndexModel`` (Atlas Search) in
:mod:`mongocore.api.collection_search_indexes`.
"""

from __future__ import annotations

from mongocore.api.collection_search_indexes import SearchIndexModel
from mongocore.api.index_model import IndexModel
from mongocore.api.operations import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)

__all__ = [
    "DeleteMany",
    "DeleteOne",
    "IndexModel",
    "InsertOne",
    "ReplaceOne",
    "SearchIndexModel",
    "UpdateMany",
    "UpdateOne",
]
