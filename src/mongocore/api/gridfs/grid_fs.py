"""GridFS: the legacy GridFS API of pymongo (``put``, ``get``, ``get_version``,
``find``, ``exists``, ...), over the same data model as GridFSBucket.

Versions are the GridFS spec's revisions ("File Download by Filename"): -1 the latest
by ``uploadDate``, 0 the first. Unlike GridFSBucket's, ``delete`` of a file that does
not exist is no error, and files are looked up by any files document fields
(``get_version(filename, author="ann")``). Keyword arguments of ``new_file`` and
``put`` are the new file's fields (see :class:`~mongocore.api.gridfs.grid_in.GridIn`);
the client's timeoutMS bounds each operation, all its commands together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.api.client_session import ClientSession
from mongocore.api.database import Database
from mongocore.api.gridfs.deadline import Deadline
from mongocore.api.gridfs.errors import NoFile
from mongocore.api.gridfs.file_model import (
    check_acknowledged,
    check_filename,
    check_no_transaction,
    id_query,
    without_type_registry,
)
from mongocore.api.gridfs.grid_in import GridIn
from mongocore.api.gridfs.grid_out import GridOut
from mongocore.api.gridfs.grid_out_cursor import GridOutCursor


class GridFS:
    """GridFS on one database, under the root collection ``collection`` (``fs``)."""

    def __init__(self, database: Database, collection: str = "fs") -> None:
        """Raises TypeError if ``database`` is not a Database, ConfigurationError if its
        write concern is not acknowledged."""
        if not isinstance(database, Database):
            raise TypeError(f"database must be an instance of Database, not {type(database)}")
        check_filename(collection, "collection")
        database = without_type_registry(database)
        check_acknowledged(database.write_concern, "database")
        self._collection = database[collection]
        self._files = self._collection.files
        self._chunks = self._collection.chunks

    def __repr__(self) -> str:
        return f"GridFS({self._collection.database!r}, {self._collection.name!r})"

    def _deadline(self) -> Deadline:
        return Deadline.for_operation(self._collection.database.client, None)

    def new_file(self, **kwargs: Any) -> GridIn:
        """A new GridIn to write a file to; ``kwargs`` are its fields (an ``_id`` given
        must not be a stored file's: FileExists when the file is written)."""
        return GridIn(self._collection, **kwargs)

    def put(self, data: Any, **kwargs: Any) -> Any:
        """Store ``data`` (bytes, a ``str`` with an ``encoding`` keyword, or a file-like
        object) as a new file with the fields ``kwargs``; returns its ``_id``."""
        with GridIn(self._collection, **kwargs) as grid_file:
            grid_file.write(data)
            return grid_file._id

    def get(self, file_id: Any, session: Optional[ClientSession] = None) -> GridOut:
        """The stored file whose ``_id`` is ``file_id`` (NoFile if there is none)."""
        grid_out = GridOut(self._collection, file_id, session=session)
        grid_out.open()
        return grid_out

    def get_version(
        self,
        filename: Optional[str] = None,
        version: Optional[int] = -1,
        session: Optional[ClientSession] = None,
        **kwargs: Any,
    ) -> GridOut:
        """One version of the files named ``filename`` (and matching the fields
        ``kwargs``), in the order of their ``uploadDate``: -1 (the default, or None)
        the latest, -2 the one before, 0 the first, 1 the next, ... NoFile if there is
        no such version."""
        query = dict(kwargs)
        if filename is not None:
            query["filename"] = filename
        check_no_transaction(session)
        if version is None:
            version = -1
        deadline = self._deadline()
        cursor = self._files.find(
            query,
            session=session,
            timeout_ms=deadline.remaining_ms("the find of the files document"),
        )
        if version < 0:
            cursor.sort("uploadDate", -1).skip(-version - 1)
        else:
            cursor.sort("uploadDate", 1).skip(version)
        with cursor.limit(-1):
            document = cursor.try_next()
        if document is None:
            raise NoFile(f"no version {version} for filename {filename!r}")
        grid_out = GridOut(self._collection, file_document=document, session=session)
        grid_out._deadline = deadline
        return grid_out

    def get_last_version(
        self,
        filename: Optional[str] = None,
        session: Optional[ClientSession] = None,
        **kwargs: Any,
    ) -> GridOut:
        """The latest version of the files named ``filename`` (matching ``kwargs``)."""
        return self.get_version(filename=filename, session=session, **kwargs)

    def delete(self, file_id: Any, session: Optional[ClientSession] = None) -> None:
        """Delete the file whose ``_id`` is ``file_id``: its files document, then its
        chunks. A file that does not exist is no error."""
        check_no_transaction(session)
        deadline = self._deadline()
        self._files.delete_one(
            id_query("_id", file_id),
            session=session,
            timeout_ms=deadline.remaining_ms("the delete of the files document"),
        )
        self._chunks.delete_many(
            id_query("files_id", file_id),
            session=session,
            timeout_ms=deadline.remaining_ms("the delete of the chunks"),
        )

    def list(self, session: Optional[ClientSession] = None) -> list[str]:
        """The names of the stored files (each once; files without a name left out)."""
        check_no_transaction(session)
        return [
            name for name in self._files.distinct("filename", session=session) if name is not None
        ]

    def find_one(
        self,
        filter: Optional[Any] = None,
        session: Optional[ClientSession] = None,
        *args: Any,
        **kwargs: Any,
    ) -> Optional[GridOut]:
        """The first stored file matching ``filter`` (a filter on the files documents,
        or an ``_id``), or None. The other arguments are :meth:`find`'s."""
        if filter is not None and not isinstance(filter, Mapping):
            filter = id_query("_id", filter)
        check_no_transaction(session)
        with self.find(filter, *args, session=session, **kwargs) as cursor:
            # One file is returned, whatever limit was given.
            cursor.limit(-1)
            return cursor.try_next()

    def find(self, *args: Any, **kwargs: Any) -> GridOutCursor:
        """A cursor over the stored files matching a filter on the files documents (as
        GridOut objects); the arguments are GridOutCursor's (``filter``, ``skip``,
        ``limit``, ``no_cursor_timeout``, ``sort``, ``batch_size``, ``session``)."""
        return GridOutCursor(self._collection, *args, **kwargs)

    def exists(
        self,
        document_or_id: Optional[Any] = None,
        session: Optional[ClientSession] = None,
        **kwargs: Any,
    ) -> bool:
        """Whether a stored file matches: by ``_id`` (``exists(file_id)``), a filter on
        the files documents (``exists({"filename": "a"})``), or the fields ``kwargs``
        (``exists(filename="a")``)."""
        check_no_transaction(session)
        if kwargs:
            query: Any = kwargs
        elif document_or_id is not None and not isinstance(document_or_id, Mapping):
            query = id_query("_id", document_or_id)
        else:
            query = document_or_id
        return self._files.find_one(query, {"_id": 1}, session=session) is not None
