"""GridIn: a file being written to GridFS (GridFS spec, "File Upload").

The bytes written are cut into chunks of ``chunkSize`` bytes; the chunks go to the
chunks collection in insert_many calls as they fill (see
:data:`~mongocore.api.gridfs.file_model.UPLOAD_BUFFER_SIZE`), and ``close()`` sends the
last ones, then the files collection document, whose ``length`` is then known
(Int64) and whose ``uploadDate`` is that moment. A file of no bytes has no chunk.
The indexes are ensured just before the first write (:mod:`.indexes`).

A failed insert leaves the chunks already stored as they are (the spec: orphaned
chunks are not cleaned up); ``abort()`` deletes them. A source stream that raises
while ``write()`` reads it aborts the upload, and its error is raised.

As in pymongo, the keyword arguments of GridIn are the files document's fields
(``filename``, ``contentType``/``content_type``, ``chunkSize``/``chunk_size``,
``metadata``, ``encoding``, ``_id`` and any other); an attribute set on the object
that is not one of its own becomes a field too, updated in the files collection when
the file is already closed.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import warnings
from collections.abc import Iterable
from types import TracebackType
from typing import Any, NoReturn, Optional

from bson.int64 import Int64
from bson.objectid import ObjectId

from mongocore.api.client_session import ClientSession
from mongocore.api.collection import Collection
from mongocore.api.gridfs.deadline import Deadline
from mongocore.api.gridfs.errors import FileExists
from mongocore.api.gridfs.file_model import (
    CHUNK_OVERHEAD,
    DEFAULT_CHUNK_SIZE,
    UPLOAD_BUFFER_CHUNKS,
    UPLOAD_BUFFER_SIZE,
    check_acknowledged,
    check_no_transaction,
    id_query,
    without_type_registry,
)
from mongocore.api.gridfs.indexes import ensure_indexes
from mongocore.errors import (
    DUPLICATE_KEY_CODES,
    BulkWriteError,
    DuplicateKeyError,
    write_concern_error_from_reply,
    write_error_from_document,
)
from mongocore.read_preferences import Primary

#: The deprecated fields' properties warn when used (as pymongo's do).
_DEPRECATED = "GridIn property {!r} is deprecated and will be removed in PyMongo 5.0"


def _field(name: str, doc: str, *, read_only: bool = False, closed_only: bool = False) -> Any:
    """A property for one field of the files document."""
    deprecated = doc.startswith("DEPRECATED")

    def get(self: GridIn) -> Any:
        if deprecated:
            warnings.warn(_DEPRECATED.format(name), DeprecationWarning, stacklevel=2)
        if closed_only and not self._closed:
            raise AttributeError(f"can only get {name!r} on a closed file")
        if name == "length":
            return self._file.get("length", 0)
        return self._file.get(name)

    def set_(self: GridIn, value: Any) -> None:
        if deprecated:
            warnings.warn(_DEPRECATED.format(name), DeprecationWarning, stacklevel=2)
        self.set(name, value)

    if read_only or closed_only:
        suffix = "read-only" if read_only else "read-only, once the file is closed"
        return property(get, doc=f"{doc} ({suffix})")
    return property(get, set_, doc=doc)


class GridIn:
    """A file being written to GridFS; nothing is stored until the first chunk fills,
    and the file exists once :meth:`close` has returned. Normally opened by
    :meth:`GridFSBucket.open_upload_stream
    <mongocore.api.gridfs.bucket.GridFSBucket.open_upload_stream>` or
    :meth:`GridFS.new_file <mongocore.api.gridfs.grid_fs.GridFS.new_file>`."""

    def __init__(
        self,
        root_collection: Collection,
        session: Optional[ClientSession] = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(root_collection, Collection):
            raise TypeError(
                f"root_collection must be an instance of Collection, not {type(root_collection)}"
            )
        check_acknowledged(root_collection.write_concern, "root_collection")
        check_no_transaction(session)
        fields = dict(kwargs)
        if "content_type" in fields:
            fields["contentType"] = fields.pop("content_type")
        if "chunk_size" in fields:
            fields["chunkSize"] = fields.pop("chunk_size")
        fields["_id"] = fields.get("_id", ObjectId())
        chunk_size = fields.setdefault("chunkSize", DEFAULT_CHUNK_SIZE)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
            raise ValueError(f"chunk size must be a positive int, not {chunk_size!r}")
        root = without_type_registry(root_collection).with_options(read_preference=Primary())
        state: dict[str, Any] = {
            "_session": session,
            "_root": root,
            "_files": root.files,
            "_chunks": root.chunks,
            "_file": fields,
            # The bytes written that do not fill a chunk yet.
            "_buffer": bytearray(),
            # Chunk documents not sent yet, and their data's size.
            "_pending": [],
            "_pending_size": 0,
            "_position": 0,
            "_chunk_number": 0,
            "_closed": False,
            "_ensured_indexes": False,
            # The stream's lifetime: the client's timeoutMS unless an operation that
            # opens it gives it its own (GridFSBucket.open_upload_stream(timeout_ms=)).
            "_deadline": Deadline.for_operation(root.database.client, None),
        }
        for name, value in state.items():
            object.__setattr__(self, name, value)

    # Typed declarations of the state set above.
    _session: Optional[ClientSession]
    _root: Collection
    _files: Collection
    _chunks: Collection
    _file: dict[str, Any]
    _buffer: bytearray
    _pending: list[dict[str, Any]]
    _pending_size: int
    _position: int
    _chunk_number: int
    _closed: bool
    _ensured_indexes: bool
    _deadline: Deadline

    # --- the files document -----------------------------------------------------------

    _id: Any = _field("_id", "The ``_id`` of this file.", read_only=True)
    filename: Optional[str] = _field("filename", "Name of this file.")
    name: Optional[str] = _field("filename", "Alias for ``filename``.")
    content_type: Optional[str] = _field(
        "contentType", "DEPRECATED, will be removed in PyMongo 5.0. Mime-type for this file."
    )
    length: int = _field("length", "Length (in bytes) of this file.", closed_only=True)
    chunk_size: int = _field("chunkSize", "Chunk size for this file.", read_only=True)
    upload_date: datetime.datetime = _field(
        "uploadDate", "Date that this file was uploaded.", closed_only=True
    )
    md5: Optional[str] = _field(
        "md5",
        "DEPRECATED, will be removed in PyMongo 5.0. MD5 of the contents of this file, "
        "if one was stored (mongocore never computes one).",
        closed_only=True,
    )

    @property
    def closed(self) -> bool:
        """Whether this file is closed (or aborted): it takes no more writes."""
        return self._closed

    def __getattr__(self, name: str) -> Any:
        # Only for names that are not attributes: the files document's other fields.
        if not name.startswith("__"):
            fields = object.__getattribute__(self, "_file")
            if name in fields:
                return fields[name]
        raise AttributeError(f"GridIn object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__ or hasattr(type(self), name):
            # This object's own state, or a property of the class.
            object.__setattr__(self, name, value)
        else:
            self.set(name, value)

    def set(self, name: str, value: Any) -> None:
        """Set a field of the files document; once the file is closed, the stored
        document is updated too."""
        self._file[name] = value
        if self._closed:
            self._files.update_one(
                id_query("_id", self._file["_id"]),
                {"$set": {name: value}},
                session=self._session,
                timeout_ms=self._deadline.remaining_ms("the update of the files document"),
            )

    # --- writing ------------------------------------------------------------------------

    def write(self, data: Any) -> None:
        """Write ``data``: bytes, a ``str`` (with the file's ``encoding``), or a
        file-like object, read to its end. Full chunks are sent as they fill (in
        batches); the rest when the file is closed. Raises ValueError once the file is
        closed."""
        if self._closed:
            raise ValueError("cannot write to a closed file")
        read = getattr(data, "read", None)
        if read is None:
            self._take(self._as_bytes(data))
            return
        while True:
            try:
                piece = read(max(self.chunk_size - len(self._buffer), 1))
            except BaseException:
                # The spec's "Aborting an upload": the source failed, so the chunks of
                # this file are removed, and the source's error is the one raised.
                with contextlib.suppress(Exception):  # the source's error is raised
                    self.abort()
                raise
            if not piece:
                return
            self._take(self._as_bytes(piece))

    def writelines(self, sequence: Iterable[Any]) -> None:
        """Write each item of ``sequence`` (no separators are added)."""
        for line in sequence:
            self.write(line)

    def _as_bytes(self, data: Any) -> bytes:
        if isinstance(data, str):
            encoding = self._file.get("encoding")
            if encoding is None:
                raise TypeError("must specify an encoding for file in order to write str")
            return data.encode(encoding)
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise TypeError("can only write strings or file-like objects")

    def _take(self, data: bytes) -> None:
        """Add bytes to the file: each chunk they complete is queued for sending."""
        buffer = self._buffer
        size = self.chunk_size
        offset = 0
        if buffer:
            needed = size - len(buffer)
            buffer += data[:needed]
            offset = needed
            if len(buffer) < size:
                return
            self._queue_chunk(bytes(buffer))
            buffer.clear()
        while len(data) - offset >= size:
            self._queue_chunk(data[offset : offset + size])
            offset += size
        buffer += data[offset:]

    def _queue_chunk(self, data: bytes) -> None:
        self._pending.append({"files_id": self._file["_id"], "n": self._chunk_number, "data": data})
        self._chunk_number += 1
        self._position += len(data)
        self._pending_size += len(data) + CHUNK_OVERHEAD
        if self._pending_size >= UPLOAD_BUFFER_SIZE or len(self._pending) >= UPLOAD_BUFFER_CHUNKS:
            self._send_chunks()

    def _ensure_indexes(self) -> None:
        if not self._ensured_indexes:
            check_no_transaction(self._session)
            ensure_indexes(self._files, self._chunks, self._session, self._deadline)
            self._ensured_indexes = True

    def _send_chunks(self) -> None:
        self._ensure_indexes()
        if not self._pending:
            return
        try:
            self._chunks.insert_many(
                self._pending,
                session=self._session,
                timeout_ms=self._deadline.remaining_ms("the insert of the file's chunks"),
            )
        except BulkWriteError as exc:
            # As pymongo does: a duplicate chunk means the file exists; another write
            # error (or a write concern error) is raised as an insert_one's would be.
            write_errors = exc.details.get("writeErrors") or []
            if any(error.get("code") in DUPLICATE_KEY_CODES for error in write_errors):
                self._raise_file_exists()
            if write_errors:
                raise write_error_from_document(write_errors[-1]) from exc
            concern_errors = exc.details.get("writeConcernErrors") or []
            if concern_errors:
                error = write_concern_error_from_reply({"writeConcernError": concern_errors[-1]})
                if error is not None:
                    raise error from exc
            raise
        self._pending = []
        self._pending_size = 0

    def _raise_file_exists(self) -> NoReturn:
        raise FileExists(f"file with _id {self._file['_id']!r} already exists")

    # --- closing --------------------------------------------------------------------------

    def close(self) -> None:
        """Send what is left of the file, then its files document: the file is then
        stored. Closing again does nothing."""
        if self._closed:
            return
        if self._buffer:
            self._queue_chunk(bytes(self._buffer))
            self._buffer.clear()
        self._send_chunks()
        self._file["length"] = Int64(self._position)
        self._file["uploadDate"] = datetime.datetime.now(tz=datetime.timezone.utc)
        try:
            self._files.insert_one(
                self._file,
                session=self._session,
                timeout_ms=self._deadline.remaining_ms("the insert of the files document"),
            )
        except DuplicateKeyError:
            self._raise_file_exists()
        self._closed = True

    def abort(self) -> None:
        """Delete the chunks (and files document) stored for this file so far, and
        close it: it takes no more writes."""
        file_id = self._file["_id"]
        self._chunks.delete_many(
            id_query("files_id", file_id),
            session=self._session,
            timeout_ms=self._deadline.remaining_ms("the delete of the file's chunks"),
        )
        self._files.delete_one(
            id_query("_id", file_id),
            session=self._session,
            timeout_ms=self._deadline.remaining_ms("the delete of the files document"),
        )
        self._closed = True

    # --- file-like ------------------------------------------------------------------------

    def read(self, size: int = -1) -> NoReturn:
        raise io.UnsupportedOperation("read")

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def writeable(self) -> bool:
        return True

    def __enter__(self) -> GridIn:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Close the file, unless the block raised: then it only takes no more writes
        (what it sent stays, as pymongo leaves it; :meth:`abort` deletes it)."""
        if exc_type is None:
            self.close()
        else:
            self._closed = True

    def __repr__(self) -> str:
        return f"GridIn({self._root!r}, _id={self._file['_id']!r})"
