"""The client, under pymongo's module name (``pymongo.mongo_client``).

``MongoClient`` lives in :mod:`mongocore.api.mongo_client` (it is a
:class:`mongocore.api.client.Client` with pymongo's constructor).
"""

from __future__ import annotations

from mongocore.api.mongo_client import MongoClient

__all__ = ["MongoClient"]
