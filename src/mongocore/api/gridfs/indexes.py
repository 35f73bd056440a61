"""GridFS spec, "Indexes": before the first write of an upload, if the files collection
is empty (a find of one ``_id`` on the primary), each of the two indexes is created
unless it exists: ``{filename: 1, uploadDate: 1}`` on the files collection and the
unique ``{files_id: 1, n: 1}`` on the chunks collection.

An index exists when its key has the same fields in the same order with the same
numbers, compared by value (an index made by the shell has ``1.0``). They are
checked with listIndexes first, so that an application with read-only rights on an
existing bucket never needs createIndexes; a collection whose indexes cannot be
listed counts as having none (and createIndexes then says why it cannot either).
Indexes are built in the foreground (no ``background`` option).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from mongocore.api.client_session import ClientSession
from mongocore.api.collection import Collection
from mongocore.api.gridfs.deadline import Deadline
from mongocore.api.gridfs.file_model import CHUNKS_INDEX, FILES_INDEX
from mongocore.api.index_model import IndexModel
from mongocore.errors import OperationFailure, write_concern_error_from_reply
from mongocore.read_preferences import Primary


def ensure_indexes(
    files: Collection,
    chunks: Collection,
    session: Optional[ClientSession],
    deadline: Deadline,
) -> None:
    """Create the bucket's indexes if its files collection is empty and they are missing."""
    on_primary = files.with_options(read_preference=Primary())
    empty = (
        on_primary.find_one(
            {},
            {"_id": 1},
            session=session,
            timeout_ms=deadline.remaining_ms("the find of the files collection"),
        )
        is None
    )
    if not empty:
        return
    _create_if_missing(files, FILES_INDEX, False, session, deadline)
    _create_if_missing(chunks, CHUNKS_INDEX, True, session, deadline)


def same_key(key: Any, wanted: Sequence[tuple[str, int]]) -> bool:
    """Is an index's ``key`` document the key ``wanted``: the same fields in the same
    order, each number equal by value whatever its BSON type?"""
    if not isinstance(key, Mapping) or len(key) != len(wanted):
        return False
    for (field, value), (want_field, want_value) in zip(key.items(), wanted):
        if field != want_field or isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if value != want_value:
            return False
    return True


def _create_if_missing(
    collection: Collection,
    key: Sequence[tuple[str, int]],
    unique: bool,
    session: Optional[ClientSession],
    deadline: Deadline,
) -> None:
    try:
        with collection.list_indexes(
            session, timeout_ms=deadline.remaining_ms(f"the listIndexes of {collection.name}")
        ) as cursor:
            keys = [index.get("key") for index in cursor]
    except OperationFailure:
        keys = []
    if any(same_key(existing, key) for existing in keys):
        return
    # unique is sent either way, as pymongo's gridfs sends it: a server lists an index
    # with the options it was created with, so both drivers' buckets get the same ones.
    index = IndexModel(list(key), unique=unique)
    # createIndexes through Database.command: the one public way to give it the time
    # left of the upload. It carries the collection's write concern, as create_index
    # would.
    command: dict[str, Any] = {"createIndexes": collection.name, "indexes": [index.document]}
    if not collection.write_concern.is_server_default:
        command["writeConcern"] = collection.write_concern.document
    reply = collection.database.command(
        command,
        session=session,
        timeout_ms=deadline.remaining_ms(f"the createIndexes of {collection.name}"),
    )
    error = write_concern_error_from_reply(reply)
    if error is not None:
        raise error
