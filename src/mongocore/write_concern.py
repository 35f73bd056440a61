"""``WriteConcern``, where pymongo users import it from (``pymongo.write_concern``)."""

from __future__ import annotations

from mongocore.collection import WriteConcern

__all__ = ["WriteConcern"]
