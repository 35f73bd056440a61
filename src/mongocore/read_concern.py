"""``ReadConcern``, where pymongo users import it from (``pymongo.read_concern``)."""

from __future__ import annotations

from mongocore.collection import ReadConcern

__all__ = ["ReadConcern"]
