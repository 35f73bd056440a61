"""mongocore: a pure-Python, synchronous MongoDB driver core.

The names here are those ``from pymongo import ...`` gives, for what mongocore
covers: ``MongoClient``, the index directions, ``CursorType``, ``ReturnDocument``,
the write models and ``IndexModel``, ``ReadPreference`` (pymongo's namespace of read
preferences) and ``WriteConcern``; plus mongocore's own ``Client`` (a MongoClient is
a Client) and ``ReadConcern``. As in pymongo, the exceptions live in
:mod:`mongocore.errors` and the read preference classes in
:mod:`mongocore.read_preferences`.

Importing the package loads the client and its dependencies, never the simulator
(:mod:`mongocore.sim`) nor the command line.
"""

from __future__ import annotations

# First: modules imported below read DRIVER_NAME and __version__ from this package.
from mongocore._version import DRIVER_NAME, __version__, version, version_tuple
from mongocore.api.client import Client
from mongocore.api.collection_writes import ReturnDocument
from mongocore.api.cursor_type import CursorType
from mongocore.api.index_model import (
    ASCENDING,
    DESCENDING,
    GEO2D,
    GEOSPHERE,
    HASHED,
    TEXT,
    IndexModel,
)
from mongocore.api.mongo_client import MongoClient
from mongocore.api.operations import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from mongocore.read_concern import ReadConcern
from mongocore.read_preferences import ReadPreference
from mongocore.write_concern import WriteConcern

__all__ = [
    "ASCENDING",
    "DESCENDING",
    "DRIVER_NAME",
    "GEO2D",
    "GEOSPHERE",
    "HASHED",
    "TEXT",
    "Client",
    "CursorType",
    "DeleteMany",
    "DeleteOne",
    "IndexModel",
    "InsertOne",
    "MongoClient",
    "ReadConcern",
    "ReadPreference",
    "ReplaceOne",
    "ReturnDocument",
    "UpdateMany",
    "UpdateOne",
    "WriteConcern",
    "__version__",
    "version",
    "version_tuple",
]
