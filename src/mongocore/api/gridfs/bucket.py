"""GridFSBucket: the GridFS spec's API ("Basic API" and "Advanced API"), with pymongo's
names and parameters.

A bucket is a prefix in one database: its files are ``<bucket_name>.files`` and
``<bucket_name>.chunks``. Its write concern, read preference and read concern (the
database's unless given) apply to every command it sends, downloads and uploads
included; the write concern must be acknowledged. No operation runs in a
multi-document transaction.

Every method also takes a keyword-only ``timeout_ms``: one timeoutMS for the whole
operation, all its commands together (the CSOT spec, "GridFS API"); without it the
client's timeoutMS applies the same way. For the methods that open a stream it bounds
the stream's whole life, its reads or writes and its ``close()`` included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from bson.objectid import ObjectId

from mongocore.api.client_session import ClientSession
from mongocore.api.database import Database
from mongocore.api.gridfs.deadline import Deadline
from mongocore.api.gridfs.errors import NoFile
from mongocore.api.gridfs.file_model import (
    DEFAULT_CHUNK_SIZE,
    check_acknowledged,
    check_filename,
    check_no_transaction,
    id_query,
    without_type_registry,
)
from mongocore.api.gridfs.grid_in import GridIn
from mongocore.api.gridfs.grid_out import GridOut
from mongocore.api.gridfs.grid_out_cursor import GridOutCursor
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import OperationFailure, write_concern_error_from_reply
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern


class GridFSBucket:
    """A GridFS bucket of a database: ``GridFSBucket(db)`` for the bucket ``fs``."""

    def __init__(
        self,
        db: Database,
        bucket_name: str = "fs",
        chunk_size_bytes: int = DEFAULT_CHUNK_SIZE,
        write_concern: Optional[WriteConcern] = None,
        read_preference: Optional[ReadPreference] = None,
        *,
        read_concern: Optional[ReadConcern] = None,
    ) -> None:
        """``chunk_size_bytes`` is the chunk size of the files this bucket uploads (a
        positive int; files already stored keep theirs). ``write_concern``,
        ``read_preference`` and ``read_concern`` default to the database's.

        Raises TypeError if ``db`` is not a Database, ConfigurationError if the write
        concern is not acknowledged."""
        if not isinstance(db, Database):
            raise TypeError(f"database must be an instance of Database, not {type(db)}")
        check_filename(bucket_name, "bucket_name")
        if (
            isinstance(chunk_size_bytes, bool)
            or not isinstance(chunk_size_bytes, int)
            or chunk_size_bytes <= 0
        ):
            raise ValueError(f"chunk_size_bytes must be a positive int, not {chunk_size_bytes!r}")
        db = without_type_registry(db)
        check_acknowledged(
            write_concern if write_concern is not None else db.write_concern, "the bucket"
        )
        self._bucket_name = bucket_name
        self._chunk_size_bytes = chunk_size_bytes
        #: ``<bucket_name>``, with the bucket's options: uploads and downloads read
        #: their ``.files`` and ``.chunks`` from it.
        self._collection = db[bucket_name].with_options(
            write_concern=write_concern,
            read_preference=read_preference,
            read_concern=read_concern,
        )
        self._files = self._collection.files
        self._chunks = self._collection.chunks
        self._client = db.client

    def __repr__(self) -> str:
        return f"GridFSBucket({self._collection.database!r}, {self._bucket_name!r})"

    def _deadline(self, timeout_ms: Optional[float]) -> Deadline:
        return Deadline.for_operation(self._client, timeout_ms)

    # --- File Upload ----------------------------------------------------------------------

    def _grid_in(
        self,
        fields: dict[str, Any],
        chunk_size_bytes: Optional[int],
        metadata: Optional[Mapping[str, Any]],
        session: Optional[ClientSession],
        deadline: Deadline,
    ) -> GridIn:
        fields["chunk_size"] = (
            chunk_size_bytes if chunk_size_bytes is not None else self._chunk_size_bytes
        )
        if metadata is not None:
            fields["metadata"] = metadata
        grid_in = GridIn(self._collection, session=session, **fields)
        grid_in._deadline = deadline
        return grid_in

    def open_upload_stream(
        self,
        filename: str,
        chunk_size_bytes: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> GridIn:
        """A GridIn to write a new file named ``filename`` to (its ``_id`` a new
        ObjectId): the file is stored when it is closed. ``chunk_size_bytes`` defaults
        to the bucket's; ``metadata`` becomes the files document's ``metadata``."""
        check_filename(filename)
        return self._grid_in(
            {"filename": filename},
            chunk_size_bytes,
            metadata,
            session,
            self._deadline(timeout_ms),
        )

    def open_upload_stream_with_id(
        self,
        file_id: Any,
        filename: str,
        chunk_size_bytes: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> GridIn:
        """As :meth:`open_upload_stream`, for a file whose ``_id`` is ``file_id`` (one no
        stored file has: FileExists otherwise, when the file is written)."""
        check_filename(filename)
        return self._grid_in(
            {"_id": file_id, "filename": filename},
            chunk_size_bytes,
            metadata,
            session,
            self._deadline(timeout_ms),
        )

    def upload_from_stream(
        self,
        filename: str,
        source: Any,
        chunk_size_bytes: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> ObjectId:
        """Store the contents of ``source`` (bytes, or a file-like object read to its
        end and not closed) as a new file named ``filename``; returns its ``_id``. If
        ``source`` raises, the chunks stored so far are deleted and its error is
        raised."""
        check_filename(filename)
        deadline = self._deadline(timeout_ms)
        with self._grid_in(
            {"filename": filename}, chunk_size_bytes, metadata, session, deadline
        ) as grid_in:
            grid_in.write(source)
        file_id: ObjectId = grid_in._id
        return file_id

    def upload_from_stream_with_id(  # noqa: PLR0917 - positional as pymongo's
        self,
        file_id: Any,
        filename: str,
        source: Any,
        chunk_size_bytes: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        """As :meth:`upload_from_stream`, for a file whose ``_id`` is ``file_id``."""
        check_filename(filename)
        deadline = self._deadline(timeout_ms)
        with self._grid_in(
            {"_id": file_id, "filename": filename}, chunk_size_bytes, metadata, session, deadline
        ) as grid_in:
            grid_in.write(source)

    # --- File Download --------------------------------------------------------------------

    def open_download_stream(
        self,
        file_id: Any,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> GridOut:
        """A GridOut reading the stored file whose ``_id`` is ``file_id``; its files
        document is read now (NoFile if there is none)."""
        grid_out = GridOut(self._collection, file_id, session=session)
        grid_out._deadline = self._deadline(timeout_ms)
        grid_out.open()
        return grid_out

    def download_to_stream(
        self,
        file_id: Any,
        destination: Any,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        """Write the contents of the file whose ``_id`` is ``file_id`` to
        ``destination`` (anything with ``write``; not closed)."""
        with self.open_download_stream(file_id, session, timeout_ms=timeout_ms) as grid_out:
            _copy(grid_out, destination)

    def open_download_stream_by_name(
        self,
        filename: str,
        revision: int = -1,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> GridOut:
        """A GridOut reading one revision of the files named ``filename``, in the order
        of their ``uploadDate``: 0 the first stored, 1 the next, ...; -1 the latest
        (the default), -2 the one before, ... NoFile if there is no file of that name,
        or no such revision (with different messages)."""
        check_filename(filename)
        if isinstance(revision, bool) or not isinstance(revision, int):
            raise TypeError(f"revision must be an int, not {type(revision)}")
        check_no_transaction(session)
        deadline = self._deadline(timeout_ms)
        cursor = self._files.find(
            {"filename": filename},
            session=session,
            timeout_ms=deadline.remaining_ms("the find of the files document"),
        )
        if revision < 0:
            cursor.sort("uploadDate", -1).skip(-revision - 1)
        else:
            cursor.sort("uploadDate", 1).skip(revision)
        with cursor.limit(-1):
            document = cursor.try_next()
        if document is None:
            exists = self._files.find_one(
                {"filename": filename},
                {"_id": 1},
                session=session,
                timeout_ms=deadline.remaining_ms("the find of the files document"),
            )
            if exists is None:
                raise NoFile(f"no file named {filename!r} in {self._files!r}")
            raise NoFile(f"no version {revision} for filename {filename!r}")
        grid_out = GridOut(self._collection, file_document=document, session=session)
        grid_out._deadline = deadline
        return grid_out

    def download_to_stream_by_name(
        self,
        filename: str,
        destination: Any,
        revision: int = -1,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        """Write the contents of that revision of ``filename`` to ``destination``."""
        with self.open_download_stream_by_name(
            filename, revision, session, timeout_ms=timeout_ms
        ) as grid_out:
            _copy(grid_out, destination)

    # --- File Deletion ---------------------------------------------------------------------

    def delete(
        self,
        file_id: Any,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        """Delete the stored file whose ``_id`` is ``file_id``: its files document
        first, then its chunks. NoFile if there was no files document (its orphaned
        chunks, if any, are deleted all the same)."""
        check_no_transaction(session)
        deadline = self._deadline(timeout_ms)
        result = self._files.delete_one(
            id_query("_id", file_id),
            session=session,
            timeout_ms=deadline.remaining_ms("the delete of the files document"),
        )
        self._chunks.delete_many(
            id_query("files_id", file_id),
            session=session,
            timeout_ms=deadline.remaining_ms("the delete of the chunks"),
        )
        if not result.deleted_count:
            raise NoFile(f"no file could be deleted because none matched {file_id}")

    def delete_by_name(
        self,
        filename: str,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        """Delete every revision of the files named ``filename`` (their files
        documents, then their chunks); NoFile if there is none."""
        check_filename(filename)
        check_no_transaction(session)
        deadline = self._deadline(timeout_ms)
        with self._files.find(
            {"filename": filename},
            {"_id": 1},
            session=session,
            timeout_ms=deadline.remaining_ms("the find of the files documents"),
        ) as cursor:
            file_ids = [document["_id"] for document in cursor]
        if not file_ids:
            raise NoFile(f"no file could be deleted because none matched filename {filename!r}")
        result = self._files.delete_many(
            {"_id": {"$in": file_ids}},
            session=session,
            timeout_ms=deadline.remaining_ms("the delete of the files documents"),
        )
        self._chunks.delete_many(
            {"files_id": {"$in": file_ids}},
            session=session,
            timeout_ms=deadline.remaining_ms("the delete of the chunks"),
        )
        if not result.deleted_count:
            raise NoFile(f"no file could be deleted because none matched filename {filename!r}")

    # --- Generic Find on Files Collection -----------------------------------------------

    def find(self, *args: Any, **kwargs: Any) -> GridOutCursor:
        """A cursor over the stored files matching a filter on their files documents
        (``{"metadata.owner": "ann"}``, ``{"filename": "a.txt"}``), as GridOut objects.
        The arguments are GridOutCursor's: ``filter``, ``skip``, ``limit``,
        ``no_cursor_timeout``, ``sort``, ``batch_size``, ``session`` and
        ``timeout_ms`` (which bounds the cursor's whole life)."""
        timeout_ms = kwargs.pop("timeout_ms", None)
        deadline = self._deadline(timeout_ms)
        return GridOutCursor(
            self._collection,
            *args,
            timeout_ms=deadline.remaining_ms("the find of the files documents"),
            **kwargs,
        )

    # --- Renaming stored files ----------------------------------------------------------

    def rename(
        self,
        file_id: Any,
        new_filename: str,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        """Rename the stored file whose ``_id`` is ``file_id``; NoFile if there is none."""
        check_no_transaction(session)
        result = self._files.update_one(
            id_query("_id", file_id),
            {"$set": {"filename": new_filename}},
            session=session,
            timeout_ms=self._deadline(timeout_ms).remaining_ms("the update of the files document"),
        )
        if not result.matched_count:
            raise NoFile(
                f"no files could be renamed {new_filename!r} because none matched file_id {file_id}"
            )

    def rename_by_name(
        self,
        filename: str,
        new_filename: str,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        """Rename every revision of the files named ``filename``; NoFile if there is none."""
        check_no_transaction(session)
        result = self._files.update_many(
            {"filename": filename},
            {"$set": {"filename": new_filename}},
            session=session,
            timeout_ms=self._deadline(timeout_ms).remaining_ms("the update of the files documents"),
        )
        if not result.matched_count:
            raise NoFile(
                f"no files could be renamed {new_filename!r} because none matched filename "
                f"{filename!r}"
            )

    # --- Dropping an entire GridFS bucket ------------------------------------------------

    def drop(
        self, session: Optional[ClientSession] = None, *, timeout_ms: Optional[float] = None
    ) -> None:
        """Drop the bucket's files collection, then its chunks collection (a collection
        that does not exist is no error)."""
        check_no_transaction(session)
        deadline = self._deadline(timeout_ms)
        for collection in (self._files, self._chunks):
            _drop(collection, session, deadline)


def _copy(grid_out: GridOut, destination: Any) -> None:
    while True:
        chunk = grid_out.readchunk()
        if not chunk:
            return
        destination.write(chunk)


#: The server's code for a collection that does not exist.
_NAMESPACE_NOT_FOUND = 26


def _drop(collection: Any, session: Optional[ClientSession], deadline: Deadline) -> None:
    # The drop command through Database.command, the one public way to give it the
    # time left; with the collection's write concern, as drop_collection sends it.
    command: dict[str, Any] = {"drop": collection.name}
    if not collection.write_concern.is_server_default:
        command["writeConcern"] = collection.write_concern.document
    try:
        reply = collection.database.command(
            command,
            session=session,
            timeout_ms=deadline.remaining_ms(f"the drop of {collection.name}"),
        )
    except OperationFailure as exc:
        if exc.code != _NAMESPACE_NOT_FOUND:
            raise
        return
    error = write_concern_error_from_reply(reply)
    if error is not None:
        raise error
