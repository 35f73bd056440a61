"""The results of writes, under pymongo's module name (``pymongo.results``).

The classes live in :mod:`mongocore.api.results`. pymongo's ``ClientBulkWriteResult``
(of the client-level ``bulk_write``) is not provided (docs/from-pymongo.md).
"""

from __future__ import annotations

from mongocore.api.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)

__all__ = [
    "BulkWriteResult",
    "DeleteResult",
    "InsertManyResult",
    "InsertOneResult",
    "UpdateResult",
]
