"""GridOut: a stored file being read (GridFS spec, "File Download" and "Partial File
Retrieval").

The files document is read first (by ``_id``, with ``$eq``), unless the caller
already has it; the chunks are then read with one cursor, sorted by ``n``, from the
chunk holding the current position (a seek starts a new cursor). A file of length 0
reads no chunk. Each chunk is checked as it arrives ("File Download": the next
expected ``n``, the expected length) and a missing, misplaced or wrongly sized chunk
raises :class:`~mongocore.api.gridfs.errors.CorruptGridFile`; once the whole file has
been read, a further chunk with data is an error too, an empty one is ignored (the
spec: drivers MAY ignore extra chunks). What lies beyond the point a reader stops at
is not checked.
"""

from __future__ import annotations

import datetime
import io
import math
import os
import warnings
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, NoReturn, Optional

from mongocore.api.client_session import ClientSession
from mongocore.api.collection import Collection
from mongocore.api.cursor import Cursor
from mongocore.api.gridfs.deadline import Deadline
from mongocore.api.gridfs.errors import CorruptGridFile, NoFile
from mongocore.api.gridfs.file_model import check_no_transaction, id_query, without_type_registry
from mongocore.errors import CursorNotFound

_DEPRECATED = "GridOut property {!r} is deprecated and will be removed in PyMongo 5.0"


def _field(name: str, doc: str) -> Any:
    """A read-only property for one field of the files document (read on first use)."""
    deprecated = doc.startswith("DEPRECATED")

    def get(self: GridOut) -> Any:
        if deprecated:
            warnings.warn(_DEPRECATED.format(name), DeprecationWarning, stacklevel=2)
        document = self._document()
        if name == "length":
            return document.get("length", 0)
        return document.get(name)

    return property(get, doc=f"{doc} (read-only)")


class GridOut(io.IOBase):
    """A stored file, read as a binary file object: ``read``, ``readline``,
    ``readchunk``, ``seek``, ``tell``, iteration by lines. Normally opened by
    :meth:`GridFSBucket.open_download_stream
    <mongocore.api.gridfs.bucket.GridFSBucket.open_download_stream>` or
    :meth:`GridFS.get <mongocore.api.gridfs.grid_fs.GridFS.get>`.

    Either ``file_id`` or ``file_document`` names the file (the document wins); with
    only an id, the files document is read when first needed (``NoFile`` then if there
    is none)."""

    def __init__(
        self,
        root_collection: Collection,
        file_id: Any = None,
        file_document: Optional[Mapping[str, Any]] = None,
        session: Optional[ClientSession] = None,
    ) -> None:
        if not isinstance(root_collection, Collection):
            raise TypeError(
                f"root_collection must be an instance of Collection, not {type(root_collection)}"
            )
        check_no_transaction(session)
        super().__init__()
        root = without_type_registry(root_collection)
        self._files = root.files
        self._chunks = root.chunks
        self._file_id = file_id
        self._file: Optional[Mapping[str, Any]] = file_document
        self._session = session
        #: The position in the file, and the rest of the chunk read last (from
        #: ``_buffer_start`` on) that has not been returned yet.
        self._position = 0
        self._buffer = b""
        self._buffer_start = 0
        self._chunk_iter: Optional[GridOutChunkIterator] = None
        #: The stream's lifetime: the client's timeoutMS unless the operation that
        #: opened it gave its own (GridFSBucket.open_download_stream(timeout_ms=)).
        self._deadline = Deadline.for_operation(root.database.client, None)

    # --- the files document -----------------------------------------------------------

    def open(self) -> None:
        """Read the files document now, if it has not been (NoFile if there is none)."""
        self._document()

    def _document(self) -> Mapping[str, Any]:
        if not self._file:
            check_no_transaction(self._session)
            found = self._files.find_one(
                id_query("_id", self._file_id),
                session=self._session,
                timeout_ms=self._deadline.remaining_ms("the find of the files document"),
            )
            if not found:
                raise NoFile(
                    f"no file in gridfs collection {self._files!r} with _id {self._file_id!r}"
                )
            self._file = found
        return self._file

    _id: Any = _field("_id", "The ``_id`` of this file.")
    filename: Optional[str] = _field("filename", "Name of this file.")
    name: Optional[str] = _field("filename", "Alias for ``filename``.")
    content_type: Optional[str] = _field(
        "contentType", "DEPRECATED, will be removed in PyMongo 5.0. Mime-type for this file."
    )
    length: int = _field("length", "Length (in bytes) of this file.")
    chunk_size: int = _field("chunkSize", "Chunk size for this file.")
    upload_date: datetime.datetime = _field("uploadDate", "Date that this file was first uploaded.")
    aliases: Optional[list[str]] = _field(
        "aliases", "DEPRECATED, will be removed in PyMongo 5.0. List of aliases for this file."
    )
    metadata: Optional[Mapping[str, Any]] = _field("metadata", "Metadata attached to this file.")
    md5: Optional[str] = _field(
        "md5",
        "DEPRECATED, will be removed in PyMongo 5.0. MD5 of the contents of this file, "
        "if one was stored.",
    )

    def __getattr__(self, name: str) -> Any:
        # Only for names that are not attributes: the files document's other fields.
        # Never for dunder names: io.IOBase looks up its own private state that way,
        # and that must not read the files document.
        # Nor before __init__ has set the object's state (its last attribute is the
        # deadline).
        if not name.startswith("__") and "_deadline" in self.__dict__:
            document = self._document()
            if name in document:
                return document[name]
        raise AttributeError(f"GridOut object has no attribute {name!r}")

    def _length(self) -> int:
        return int(self._document().get("length", 0))

    # --- reading --------------------------------------------------------------------------

    def readable(self) -> bool:
        return True

    def readchunk(self) -> bytes:
        """The rest of the current chunk (a whole chunk when the position is at a chunk
        boundary); ``b""`` at the end of the file."""
        document = self._document()
        if self._buffer_start < len(self._buffer):
            data = self._buffer[self._buffer_start :]
        elif self._position < self._length():
            chunk_size = int(document["chunkSize"])
            if self._chunk_iter is None:
                self._chunk_iter = GridOutChunkIterator(
                    self, self._chunks, self._session, self._position // chunk_size
                )
            chunk = self._chunk_iter.next()
            data = bytes(chunk["data"][self._position % chunk_size :])
            if not data:
                raise CorruptGridFile("truncated chunk")
        else:
            data = b""
        self._position += len(data)
        self._buffer = b""
        self._buffer_start = 0
        return data

    def _read(self, size: int, line: bool) -> bytes:
        """read() and readline(): at most ``size`` bytes (all with a negative size),
        ending after the first newline for a line."""
        remainder = self._length() - self._position
        if size < 0 or size > remainder:
            size = remainder
        if size <= 0:
            return b""
        parts: list[bytes] = []
        received = 0
        while received < size:
            if self._buffer_start < len(self._buffer):
                chunk, start = self._buffer, self._buffer_start
                self._position += len(chunk) - start
            else:
                chunk, start = self.readchunk(), 0
                if not chunk:
                    break
            wanted = size - received
            end = start + wanted
            if line:
                newline = chunk.find(b"\n", start, start + wanted)
                if newline >= 0:
                    end = newline + 1
            if end < len(chunk):
                # Keep the rest of the chunk for the next read.
                self._buffer, self._buffer_start = chunk, end
                self._position -= len(chunk) - end
            else:
                self._buffer, self._buffer_start = b"", 0
                end = len(chunk)
            parts.append(chunk[start:end])
            received += end - start
            if line and chunk[end - 1 : end] == b"\n":
                break
        if received == remainder and self._chunk_iter is not None:
            # The whole file has been read: one more chunk with data is an error.
            self._chunk_iter.check_no_more()
        return b"".join(parts)

    def read(self, size: Optional[int] = -1) -> bytes:
        """At most ``size`` bytes (all the rest with a negative or no size)."""
        return self._read(-1 if size is None else size, line=False)

    def readline(self, size: Optional[int] = -1) -> bytes:
        """One line, its newline included (at most ``size`` bytes)."""
        return self._read(-1 if size is None else size, line=True)

    def tell(self) -> int:
        return self._position

    def seek(self, pos: int, whence: int = os.SEEK_SET) -> int:
        """Move to ``pos`` (from the start, the current position or the end, as
        ``whence`` says); returns the new position. The next read starts a new chunk
        cursor at the chunk holding it."""
        if whence == os.SEEK_SET:
            new = pos
        elif whence == os.SEEK_CUR:
            new = self._position + pos
        elif whence == os.SEEK_END:
            new = self._length() + pos
        else:
            raise OSError(22, "Invalid value for `whence`")
        if new < 0:
            raise OSError(22, "Invalid value for `pos` - must be positive")
        if new != self._position:
            self._position = new
            self._buffer, self._buffer_start = b"", 0
            if self._chunk_iter is not None:
                self._chunk_iter.close()
                self._chunk_iter = None
        return new

    def seekable(self) -> bool:
        return True

    def __iter__(self) -> GridOut:
        """The file's lines (``readline`` until ``b""``)."""
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        """Close the chunk cursor; the file object is closed."""
        if self._chunk_iter is not None:
            self._chunk_iter.close()
            self._chunk_iter = None
        super().close()

    # --- not a writable file ----------------------------------------------------------

    def write(self, value: Any) -> NoReturn:
        raise io.UnsupportedOperation("write")

    def writelines(self, lines: Any) -> NoReturn:
        raise io.UnsupportedOperation("writelines")

    def writable(self) -> bool:
        return False

    def fileno(self) -> NoReturn:
        raise io.UnsupportedOperation("fileno")

    def flush(self) -> None:
        pass  # nothing is ever written

    def isatty(self) -> bool:
        return False

    def truncate(self, size: Optional[int] = None) -> NoReturn:
        raise io.UnsupportedOperation("truncate")

    def __enter__(self) -> GridOut:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # io.IOBase's finalizer would close(), which may look attributes up: no I/O
        # from a finalizer (the chunk cursor's session goes back on its own).
        pass

    def __repr__(self) -> str:
        file_id = self._file.get("_id") if self._file else self._file_id
        return f"GridOut({self._files.database.name!r}, {self._files.name!r}, _id={file_id!r})"


class GridOutChunkIterator:
    """A file's chunks from number ``next_chunk`` on, read with one cursor and checked
    as they come (raises CorruptGridFile for a missing, misplaced, wrongly sized or
    extra chunk)."""

    def __init__(
        self,
        grid_out: GridOut,
        chunks: Collection,
        session: Optional[ClientSession],
        next_chunk: int,
    ) -> None:
        self._grid_out = grid_out
        self._id = grid_out._id
        self._chunk_size = int(grid_out.chunk_size)
        self._length = int(grid_out.length)
        self._chunks = chunks
        self._session = session
        self._next_chunk = next_chunk
        self._num_chunks = math.ceil(self._length / self._chunk_size) if self._length else 0
        self._cursor: Optional[Cursor] = None

    def expected_chunk_length(self, n: int) -> int:
        """How many bytes chunk ``n`` must hold."""
        if n < self._num_chunks - 1:
            return self._chunk_size
        return self._length - self._chunk_size * (self._num_chunks - 1)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return self

    def _open_cursor(self) -> Cursor:
        query: dict[str, Any] = id_query("files_id", self._id)
        if self._next_chunk > 0:
            query["n"] = {"$gte": self._next_chunk}
        check_no_transaction(self._session)
        self._cursor = self._chunks.find(
            query,
            sort=[("n", 1)],
            session=self._session,
            timeout_ms=self._grid_out._deadline.remaining_ms("the find of the file's chunks"),
        )
        return self._cursor

    def _next_document(self) -> Mapping[str, Any]:
        """The cursor's next chunk; a cursor the server no longer has (reads minutes
        apart) is opened again once, from the next chunk."""
        cursor = self._cursor or self._open_cursor()
        try:
            return cursor.next()
        except CursorNotFound:
            cursor.close()
            return self._open_cursor().next()

    def next(self) -> Mapping[str, Any]:
        """The next chunk, checked; StopIteration after the last one."""
        while True:
            try:
                chunk = self._next_document()
            except StopIteration:
                if self._next_chunk >= self._num_chunks:
                    raise
                raise CorruptGridFile(f"no chunk #{self._next_chunk}") from None
            n = chunk.get("n")
            if n != self._next_chunk:
                self.close()
                raise CorruptGridFile(
                    f"Missing chunk: expected chunk #{self._next_chunk} but found chunk with n={n}"
                )
            data = chunk.get("data")
            if not isinstance(data, bytes):
                self.close()
                raise CorruptGridFile(f"chunk #{n} holds no binary data: {data!r}")
            if n >= self._num_chunks:
                if len(data):
                    self.close()
                    raise CorruptGridFile(
                        f"Extra chunk found: expected {self._num_chunks} chunks but found "
                        f"chunk with n={n}"
                    )
                self._next_chunk += 1
                continue  # an empty extra chunk: ignored
            expected = self.expected_chunk_length(n)
            if len(data) != expected:
                self.close()
                raise CorruptGridFile(
                    f"truncated chunk #{n}: expected chunk length to be {expected} but "
                    f"found chunk with length {len(data)}"
                )
            self._next_chunk += 1
            return chunk

    __next__ = next

    def check_no_more(self) -> None:
        """After the last chunk: raise CorruptGridFile if a chunk with data follows."""
        try:
            self.next()
        except StopIteration:
            return
        # next() returned a chunk within the file: the position was not at the end.
        raise CorruptGridFile(f"chunk #{self._next_chunk - 1} read after the end of the file")

    def close(self) -> None:
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None


class GridOutIterator:
    """A stored file's chunks' data, one ``bytes`` per chunk, checked as
    :class:`GridOutChunkIterator` checks them."""

    def __init__(
        self, grid_out: GridOut, chunks: Collection, session: Optional[ClientSession]
    ) -> None:
        self._chunk_iter = GridOutChunkIterator(grid_out, chunks, session, 0)

    def __iter__(self) -> GridOutIterator:
        return self

    def next(self) -> bytes:
        return bytes(self._chunk_iter.next()["data"])

    __next__ = next
