"""The errors GridFS raises, in the hierarchy of pymongo's ``gridfs.errors``: every one
is a :class:`GridFSError`, which is a :class:`~mongocore.errors.MongoCoreError`
(pymongo's ``PyMongoError``). Errors of the commands GridFS sends (a server's refusal,
a network error, a timeout) are raised as they are."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from mongocore.errors import MongoCoreError


class GridFSError(MongoCoreError):
    """Base class of the GridFS errors."""

    def __init__(self, message: str = "", error_labels: Optional[Iterable[str]] = None) -> None:
        super().__init__(message, error_labels)


class CorruptGridFile(GridFSError):
    """A stored file is malformed: a chunk is missing, out of order, of the wrong length,
    or one too many (the spec's checks while downloading)."""


class NoFile(GridFSError):
    """No stored file matches: by id, by filename, or that revision of the filename."""


class FileExists(GridFSError):
    """A file with this ``_id`` already exists (its files document or one of its chunks
    is already stored)."""
