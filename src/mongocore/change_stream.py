"""Change streams, under pymongo's module name (``pymongo.change_stream``).

The classes live in :mod:`mongocore.api.change_stream`.
"""

from __future__ import annotations

from mongocore.api.change_stream import (
    ChangeStream,
    ClusterChangeStream,
    CollectionChangeStream,
    DatabaseChangeStream,
)

__all__ = [
    "ChangeStream",
    "ClusterChangeStream",
    "CollectionChangeStream",
    "DatabaseChangeStream",
]
