"""Command cursors, under pymongo's module name (``pymongo.command_cursor``).

``CommandCursor`` lives in :mod:`mongocore.api.command_cursor`. pymongo's
``RawBatchCommandCursor`` (of ``aggregate_raw_batches``) is not provided
(docs/from-pymongo.md).
"""

from __future__ import annotations

from mongocore.api.command_cursor import CommandCursor

__all__ = ["CommandCursor"]
