"""The results of writes, in pymongo's shape (``pymongo.results``).

Spec: CRUD, "Write Results".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.api.types import Document
from mongocore.errors import (
    InvalidOperation,
)

# --- results ---------------------------------------------------------------------------


#: Tells "no such field" from a field whose value is None.
_MISSING: Any = object()


class _Result:
    # Each result sets _acknowledged itself: super().__init__() would be two calls more
    # on every write.
    __slots__ = ("_acknowledged",)
    _acknowledged: bool

    @property
    def acknowledged(self) -> bool:
        """False for a write with ``w: 0``: the counts are then unknown."""
        return self._acknowledged

    def _check(self, what: str) -> None:
        if not self._acknowledged:
            raise InvalidOperation(
                f"{what} is unknown for an unacknowledged write (write concern w=0)"
            )


class InsertOneResult(_Result):
    __slots__ = ("_inserted_id",)

    def __init__(self, inserted_id: Any, acknowledged: bool) -> None:
        self._acknowledged = acknowledged
        self._inserted_id = inserted_id

    @property
    def inserted_id(self) -> Any:
        return self._inserted_id

    def __repr__(self) -> str:
        return f"InsertOneResult({self._inserted_id!r}, acknowledged={self._acknowledged})"


class InsertManyResult(_Result):
    __slots__ = ("_inserted_ids",)

    def __init__(self, inserted_ids: list[Any], acknowledged: bool) -> None:
        self._acknowledged = acknowledged
        self._inserted_ids = inserted_ids

    @property
    def inserted_ids(self) -> list[Any]:
        """The ``_id`` of every document, in order."""
        return self._inserted_ids

    def __repr__(self) -> str:
        return f"InsertManyResult({self._inserted_ids!r}, acknowledged={self._acknowledged})"


class UpdateResult(_Result):
    """The result of update_one, update_many, replace_one. ``raw_result`` is the
    server's reply, with ``updatedExisting`` added and ``upserted`` as the upserted
    document's ``_id`` (the shape other drivers give); None when unacknowledged."""

    __slots__ = ("_raw",)

    def __init__(self, raw_result: Optional[Mapping[str, Any]], acknowledged: bool) -> None:
        self._acknowledged = acknowledged
        self._raw = None if raw_result is None else dict(raw_result)

    @property
    def raw_result(self) -> Optional[Document]:
        return self._raw

    def _reply(self, what: str) -> Document:
        self._check(what)
        return self._raw or {}

    @property
    def matched_count(self) -> int:
        raw = self._reply("matched_count")
        if self.did_upsert:
            return 0
        return int(raw.get("n", 0))

    @property
    def modified_count(self) -> int:
        return int(self._reply("modified_count").get("nModified", 0))

    @property
    def upserted_id(self) -> Any:
        upserted = self._reply("upserted_id").get("upserted")
        # The command's own shape, a list of {index, _id}, is read too.
        if isinstance(upserted, list):
            return upserted[0].get("_id") if upserted else None
        return upserted

    @property
    def did_upsert(self) -> bool:
        """True when the update inserted a document (even one whose ``_id`` is None)."""
        upserted = self._reply("did_upsert").get("upserted", _MISSING)
        return upserted is not _MISSING and upserted != []

    def __repr__(self) -> str:
        return f"UpdateResult({self._raw!r}, acknowledged={self._acknowledged})"


class DeleteResult(_Result):
    """The result of delete_one, delete_many. ``raw_result`` is the server's reply;
    None when unacknowledged."""

    __slots__ = ("_raw",)

    def __init__(self, raw_result: Optional[Mapping[str, Any]], acknowledged: bool) -> None:
        self._acknowledged = acknowledged
        self._raw = None if raw_result is None else dict(raw_result)

    @property
    def raw_result(self) -> Optional[Document]:
        return self._raw

    @property
    def deleted_count(self) -> int:
        self._check("deleted_count")
        return int((self._raw or {}).get("n", 0))

    def __repr__(self) -> str:
        return f"DeleteResult({self._raw!r}, acknowledged={self._acknowledged})"


class BulkWriteResult(_Result):
    """The counts of a bulk write; ``bulk_api_result`` is the raw shape (``nInserted``,
    ``nMatched``, ``nModified``, ``nRemoved``, ``nUpserted``, ``upserted``, ...)."""

    __slots__ = ("_inserted_ids", "_raw")

    def __init__(
        self,
        bulk_api_result: Mapping[str, Any],
        acknowledged: bool,
        inserted_ids: Optional[Mapping[int, Any]] = None,
    ) -> None:
        self._acknowledged = acknowledged
        self._raw = dict(bulk_api_result)
        self._inserted_ids = dict(inserted_ids or {})

    @property
    def bulk_api_result(self) -> Document:
        return self._raw

    @property
    def inserted_count(self) -> int:
        self._check("inserted_count")
        return int(self._raw.get("nInserted", 0))

    @property
    def matched_count(self) -> int:
        self._check("matched_count")
        return int(self._raw.get("nMatched", 0))

    @property
    def modified_count(self) -> int:
        self._check("modified_count")
        return int(self._raw.get("nModified", 0))

    @property
    def deleted_count(self) -> int:
        self._check("deleted_count")
        return int(self._raw.get("nRemoved", 0))

    @property
    def upserted_count(self) -> int:
        self._check("upserted_count")
        return int(self._raw.get("nUpserted", 0))

    @property
    def upserted_ids(self) -> Optional[dict[int, Any]]:
        """Request index -> ``_id`` of each upserted document (None for an empty
        ``bulk_api_result``, as other drivers give)."""
        self._check("upserted_ids")
        if not self._raw:
            return None
        return {int(u["index"]): u["_id"] for u in self._raw.get("upserted", [])}

    @property
    def inserted_ids(self) -> dict[int, Any]:
        """Request index -> ``_id`` of each InsertOne that was sent."""
        return dict(self._inserted_ids)

    def __repr__(self) -> str:
        return f"BulkWriteResult({self._raw!r}, acknowledged={self._acknowledged})"
