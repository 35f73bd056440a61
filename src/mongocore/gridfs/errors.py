"""The GridFS errors, as pymongo's ``gridfs.errors``: GridFSError (a
:class:`~mongocore.errors.MongoCoreError`, pymongo's ``PyMongoError``) and its
subclasses CorruptGridFile, NoFile and FileExists, defined in
:mod:`mongocore.api.gridfs.errors`."""

from __future__ import annotations

from mongocore.api.gridfs.errors import CorruptGridFile, FileExists, GridFSError, NoFile

__all__ = ["CorruptGridFile", "FileExists", "GridFSError", "NoFile"]
