"""mongocore: a pure-Python, synchronous MongoDB driver core.

The names here are those ``from pymongo import ...`` gives, for what mongocore
covers: ``MongoClient``, the index directions, ``CursorType``, ``ReturnDocument``,
the write models and ``IndexModel``, ``ReadPreference`` (pymongo's namespace of read
preferences) and ``WriteConcern``; plus mongocore's own ``Client`` (a MongoClient is
a Client) and ``ReadConcern``. As in pymongo, the exceptions live in
:mod:`mongocore.errors` and the read preference classes in
:mod:`mongocore.read_preferences`.

Each public module of pymongo's synchronous API has its namesake here
(:mod:`mongocore.collection`, :mod:`mongocore.uri_parser`, :mod:`mongocore.common`,
...; docs/from-pymongo.md, "Module layout"), reachable as an attribute of the package
as pymongo's are, and :func:`install_as_pymongo` makes ``import pymongo`` give them.

Importing the package loads nothing but its version: each name loads its module
on first use (``from mongocore import MongoClient`` loads the client and what
constructing one needs; the CRUD classes load with the first database), and never
the simulator (:mod:`mongocore.sim`) nor the command line.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from mongocore._version import (
    DRIVER_NAME,
    __version__,
    get_version_string,
    version,
    version_tuple,
)

if TYPE_CHECKING:
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
    from mongocore.common import MAX_SUPPORTED_WIRE_VERSION, MIN_SUPPORTED_WIRE_VERSION, has_c
    from mongocore.drop_in import install_as_pymongo
    from mongocore.read_concern import ReadConcern
    from mongocore.read_preferences import ReadPreference
    from mongocore.write_concern import WriteConcern

#: Each public name -> the module that defines it (loaded by __getattr__ on first use).
_LAZY = {
    "Client": "mongocore.api.client",
    "ReturnDocument": "mongocore.api.collection_writes",
    "CursorType": "mongocore.api.cursor_type",
    "ASCENDING": "mongocore.api.index_model",
    "DESCENDING": "mongocore.api.index_model",
    "GEO2D": "mongocore.api.index_model",
    "GEOSPHERE": "mongocore.api.index_model",
    "HASHED": "mongocore.api.index_model",
    "TEXT": "mongocore.api.index_model",
    "IndexModel": "mongocore.api.index_model",
    "MongoClient": "mongocore.api.mongo_client",
    "DeleteMany": "mongocore.api.operations",
    "DeleteOne": "mongocore.api.operations",
    "InsertOne": "mongocore.api.operations",
    "ReplaceOne": "mongocore.api.operations",
    "UpdateMany": "mongocore.api.operations",
    "UpdateOne": "mongocore.api.operations",
    "ReadConcern": "mongocore.read_concern",
    "ReadPreference": "mongocore.read_preferences",
    "WriteConcern": "mongocore.write_concern",
    "MAX_SUPPORTED_WIRE_VERSION": "mongocore.common",
    "MIN_SUPPORTED_WIRE_VERSION": "mongocore.common",
    "has_c": "mongocore.common",
    "install_as_pymongo": "mongocore.drop_in",
}

#: The modules named as pymongo's, which ``mongocore.<name>`` loads on first use (as
#: ``pymongo.<name>`` is there after ``import pymongo``).
_SUBMODULES = frozenset(
    {
        "change_stream",
        "client_options",
        "client_session",
        "collation",
        "collection",
        "command_cursor",
        "common",
        "cursor",
        "database",
        "driver_info",
        "errors",
        "event_loggers",
        "mongo_client",
        "monitoring",
        "operations",
        "pool",
        "read_concern",
        "read_preferences",
        "results",
        "server_api",
        "server_description",
        "topology_description",
        "typings",
        "uri_parser",
        "write_concern",
    }
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if name in _SUBMODULES:
            __import__(f"mongocore.{name}")  # the import sets the package's attribute
            return sys.modules[f"mongocore.{name}"]
        raise AttributeError(f"module 'mongocore' has no attribute {name!r}")
    __import__(module)  # (importlib itself would cost more than the lookup)
    value = getattr(sys.modules[module], name)
    globals()[name] = value  # later lookups do not come here again
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


__all__ = [
    "ASCENDING",
    "DESCENDING",
    "DRIVER_NAME",
    "GEO2D",
    "GEOSPHERE",
    "HASHED",
    "MAX_SUPPORTED_WIRE_VERSION",
    "MIN_SUPPORTED_WIRE_VERSION",
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
    "get_version_string",
    "has_c",
    "install_as_pymongo",
    "version",
    "version_tuple",
]
