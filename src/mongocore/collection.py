"""Collections, under pymongo's module name (``pymongo.collection``).

``from pymongo.collection import Collection, ReturnDocument`` becomes
``from mongocore.collection import Collection, ReturnDocument``. The classes live in
:mod:`mongocore.api.collection` and :mod:`mongocore.api.collection_writes`.
"""

from __future__ import annotations

from mongocore.api.collection import Collection
from mongocore.api.collection_writes import ReturnDocument

__all__ = ["Collection", "ReturnDocument"]
