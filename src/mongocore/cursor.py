"""Query cursors, under pymongo's module name (``pymongo.cursor``).

``Cursor`` lives in :mod:`mongocore.api.cursor`, ``CursorType`` in
:mod:`mongocore.api.cursor_type`. pymongo's ``RawBatchCursor`` (of
``find_raw_batches``) is not provided (docs/from-pymongo.md).
"""

from __future__ import annotations

from mongocore.api.cursor import Cursor
from mongocore.api.cursor_type import CursorType

__all__ = ["Cursor", "CursorType"]
