"""The GridFS data model and the rules every GridFS operation shares (GridFS spec,
"Terms", "Indexes" and "TFileId Queries").

A stored file is one files collection document (``<bucket>.files``: ``_id``,
``length``, ``chunkSize``, ``uploadDate``, ``filename``, ``metadata``, ...) and
``ceil(length / chunkSize)`` chunk documents (``<bucket>.chunks``: ``files_id``, ``n``
from 0, ``data``); every chunk but the last is ``chunkSize`` bytes long.
"""

from __future__ import annotations

from typing import Any, Optional, TypeVar

from mongocore.api.client_session import ClientSession
from mongocore.errors import ConfigurationError, InvalidOperation
from mongocore.write_concern import WriteConcern

#: "chunkSizeBytes ... Defaults to 255 KiB": a little under a power of two, so that a
#: chunk document (its data and a few fields) fits a power-of-two allocation.
DEFAULT_CHUNK_SIZE = 255 * 1024

#: "Indexes": the files collection's index, and the chunks collection's unique one.
FILES_INDEX: tuple[tuple[str, int], ...] = (("filename", 1), ("uploadDate", 1))
CHUNKS_INDEX: tuple[tuple[str, int], ...] = (("files_id", 1), ("n", 1))

#: What a read at the end of a file returns, and where readline() stops (the names
#: pymongo's ``gridfs.grid_file`` gives them).
EMPTY = b""
NEWLN = b"\n"

#: An upload sends its chunks in insert_many calls of at most this many bytes of chunk
#: data (the largest message a server takes, 48 MB) or this many chunks, as pymongo
#: does; each call is split into commands by the server's limits.
UPLOAD_BUFFER_SIZE = 48 * 1000 * 1000
UPLOAD_BUFFER_CHUNKS = 100_000
#: About what a chunk document holds besides its data (its _id, files_id and n).
CHUNK_OVERHEAD = 60

_Target = TypeVar("_Target")


def id_query(field: str, file_id: Any) -> dict[str, Any]:
    """The spec's "TFileId Queries": a user's file id is always compared with ``$eq``, so that an
    id that is a document of operators or a regular expression matches only itself."""
    return {field: {"$eq": file_id}}


def check_no_transaction(session: Optional[ClientSession]) -> None:
    """GridFS operations span two collections and many commands: they refuse to run
    in a multi-document transaction (as pymongo's do)."""
    if session is not None and session.in_transaction:
        raise InvalidOperation("GridFS does not support multi-document transactions")


def check_acknowledged(write_concern: WriteConcern, what: str) -> None:
    """A stored file is only known to be complete from acknowledged writes."""
    if not write_concern.acknowledged:
        raise ConfigurationError(f"{what} must use an acknowledged write concern")


def check_filename(filename: Any, name: str = "filename") -> str:
    if not isinstance(filename, str):
        raise TypeError(
            f"Wrong type for {name}, value must be an instance of str, not {type(filename)}"
        )
    return filename


def without_type_registry(target: _Target) -> _Target:
    """The Database or Collection with its codec options' type registry cleared: the
    files and chunks documents GridFS reads and writes are its own, never the
    application's custom types."""
    options = target.codec_options  # type: ignore[attr-defined]
    if options.type_registry == type(options.type_registry)():
        return target
    cleared = options.with_options(type_registry=None)
    return target.with_options(codec_options=cleared)  # type: ignore[attr-defined, no-any-return]
