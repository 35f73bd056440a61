"""GridFS, as pymongo's ``gridfs`` package: ``from mongocore.gridfs import GridFSBucket``
where pymongo code says ``from gridfs import GridFSBucket``.

The classes live in :mod:`mongocore.api.gridfs` (the API layer: GridFS is built on
Database, Collection, Cursor and ClientSession); this package and its modules
:mod:`mongocore.gridfs.errors` and :mod:`mongocore.gridfs.grid_file` re-export them
under pymongo's module names. The asynchronous classes (``AsyncGridFSBucket``, ...)
are not provided: mongocore is synchronous.
"""

from __future__ import annotations

from mongocore.api.gridfs.bucket import GridFSBucket
from mongocore.api.gridfs.errors import NoFile
from mongocore.api.gridfs.file_model import DEFAULT_CHUNK_SIZE
from mongocore.api.gridfs.grid_fs import GridFS
from mongocore.api.gridfs.grid_in import GridIn
from mongocore.api.gridfs.grid_out import GridOut
from mongocore.api.gridfs.grid_out_cursor import GridOutCursor

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "GridFS",
    "GridFSBucket",
    "GridIn",
    "GridOut",
    "GridOutCursor",
    "NoFile",
]
