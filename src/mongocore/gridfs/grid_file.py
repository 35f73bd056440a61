"""The GridFS classes, as pymongo's ``gridfs.grid_file``: the bucket and legacy APIs,
the file objects and their cursors, and the chunk iterators (defined in
:mod:`mongocore.api.gridfs`), with the constants pymongo's module holds too."""

from __future__ import annotations

from mongocore.api.gridfs.bucket import GridFSBucket
from mongocore.api.gridfs.errors import CorruptGridFile, FileExists, NoFile
from mongocore.api.gridfs.file_model import DEFAULT_CHUNK_SIZE, EMPTY, NEWLN
from mongocore.api.gridfs.grid_fs import GridFS
from mongocore.api.gridfs.grid_in import GridIn
from mongocore.api.gridfs.grid_out import GridOut, GridOutChunkIterator, GridOutIterator
from mongocore.api.gridfs.grid_out_cursor import GridOutCursor
from mongocore.api.index_model import ASCENDING, DESCENDING

__all__ = [
    "ASCENDING",
    "DEFAULT_CHUNK_SIZE",
    "DESCENDING",
    "EMPTY",
    "NEWLN",
    "CorruptGridFile",
    "FileExists",
    "GridFS",
    "GridFSBucket",
    "GridIn",
    "GridOut",
    "GridOutChunkIterator",
    "GridOutCursor",
    "GridOutIterator",
    "NoFile",
]
