"""Unified test format: the GridFS bucket entity ("entity_bucket") and its "Bucket
Operations", on :class:`mongocore.gridfs.GridFSBucket`.

Operations (arguments by the GridFS spec's names; ``session`` and ``timeoutMS``
accepted by every one):

- ``upload`` / ``uploadWithId`` (``uploadFromStream`` / ``uploadFromStreamWithId``
  are the same methods): ``filename``, ``source`` (``{$$hexBytes: "..."}``, turned into
  a readable stream; a malformed one fails the test), ``id``, and the
  GridFSUploadOptions ``chunkSizeBytes``, ``metadata``, and the deprecated
  ``contentType`` and ``aliases`` (set on the upload stream's files document). upload
  returns the new file's id.
- ``download`` / ``downloadByName`` (``id``; ``filename``, ``revision``): the stream read
  to its end, as bytes.
- ``delete`` (``id``), ``deleteByName`` (``filename``), ``rename`` (``id``,
  ``newFilename``), ``renameByName`` (``filename``, ``newFilename``), ``drop``.
- ``find`` (``filter`` and the GridFSFindOptions ``allowDiskUse``, ``batchSize``,
  ``limit``, ``maxTimeMS``, ``noCursorTimeout``, ``skip``, ``sort``): the files
  documents, read to the end.

The operations the format says test files should not use because they take or return
a stream it cannot express (``openUploadStream``, ``openUploadStreamWithId``,
``openDownloadStream``, ``openDownloadStreamByName``, ``downloadToStream``,
``downloadToStreamByName``) fail with UnsupportedFeature naming them.

Bucket options (``bucketOptions``): ``bucketName``, ``chunkSizeBytes``,
``writeConcern``, ``readConcern``, ``readPreference``, and ``disableMD5``, which
changes nothing: mongocore never computes an MD5 (the spec: once a driver has no MD5
support, the option "MUST be removed or otherwise made into a no-op").

It also tells the seed transformations (:mod:`tests.spec.unified.seed`) which
commands these operations send (:func:`commands_of`) and what a download sends once
its files document was read (:func:`events_after_read`), and holds the
``gridfs-file-id-eq`` transformation of expected commands (:func:`expect_file_id_eq`).
"""

from __future__ import annotations

import io
import string
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Optional

from mongocore.api.database import Database
from mongocore.gridfs import GridFSBucket
from tests.spec.unified.entities import (
    UnsupportedFeature,
    read_concern,
    read_preference,
    write_concern,
)

#: The operations of this module, by the format's names.
OPERATIONS = frozenset(
    {
        "upload",
        "uploadWithId",
        "uploadFromStream",
        "uploadFromStreamWithId",
        "download",
        "downloadByName",
        "delete",
        "deleteByName",
        "rename",
        "renameByName",
        "find",
        "drop",
    }
)

#: What the format describes but cannot express: a stream given or returned.
STREAM_OPERATIONS = frozenset(
    {
        "openUploadStream",
        "openUploadStreamWithId",
        "openDownloadStream",
        "openDownloadStreamByName",
        "downloadToStream",
        "downloadToStreamByName",
    }
)

_FIND_OPTIONS = {
    "batchSize": "batch_size",
    "limit": "limit",
    "noCursorTimeout": "no_cursor_timeout",
    "skip": "skip",
    "sort": "sort",
}


def handles(target: Any, name: str) -> bool:
    """Is this operation one of this module's?"""
    return isinstance(target, GridFSBucket) and (name in OPERATIONS or name in STREAM_OPERATIONS)


# --- the bucket entity ---------------------------------------------------------------------


def bucket(database: Database, options: Optional[Mapping[str, Any]]) -> GridFSBucket:
    """A bucket entity of ``database``, with its ``bucketOptions``."""
    left = dict(options or {})
    left.pop("disableMD5", None)  # a no-op: no MD5 is ever computed
    keywords: dict[str, Any] = {}
    if "bucketName" in left:
        keywords["bucket_name"] = left.pop("bucketName")
    if "chunkSizeBytes" in left:
        keywords["chunk_size_bytes"] = int(left.pop("chunkSizeBytes"))
    if "writeConcern" in left:
        keywords["write_concern"] = write_concern(left.pop("writeConcern"))
    if "readPreference" in left:
        keywords["read_preference"] = read_preference(left.pop("readPreference"))
    if "readConcern" in left:
        keywords["read_concern"] = read_concern(left.pop("readConcern"))
    if left:
        raise UnsupportedFeature(f"bucketOptions {sorted(left)}")
    return GridFSBucket(database, **keywords)


# --- operations --------------------------------------------------------------------------


def hex_source(source: Any) -> io.BytesIO:
    """``source``: ``{$$hexBytes: <even number of hex digits>}`` as a readable stream.
    A malformed one fails the test (it is the file's error, not the operation's)."""
    if not isinstance(source, Mapping) or set(source) != {"$$hexBytes"}:
        raise AssertionError(f"malformed source {source!r}: expected {{$$hexBytes: <string>}}")
    text = source["$$hexBytes"]
    if (
        not isinstance(text, str)
        or len(text) % 2
        or any(char not in string.hexdigits for char in text)
    ):
        raise AssertionError(f"malformed $$hexBytes {text!r}: an even number of hex digits")
    return io.BytesIO(bytes.fromhex(text))


def run(bucket: GridFSBucket, name: str, args: Any) -> Any:
    """Run the operation (``args`` is an ``operations.Arguments``)."""
    if name in STREAM_OPERATIONS:
        raise UnsupportedFeature(
            f"bucket operation {name!r}: it takes or returns a stream, which the unified "
            "format cannot express (its files are to use upload and download)"
        )
    session = args.session()
    timeout = args.keywords({"timeoutMS": "timeout_ms"})
    if name in ("upload", "uploadWithId", "uploadFromStream", "uploadFromStreamWithId"):
        return _upload(bucket, name.endswith("WithId"), args, session, timeout)
    if name == "download":
        file_id = args.require("id")
        args.done()
        with bucket.open_download_stream(file_id, session, **timeout) as grid_out:
            return grid_out.read()
    if name == "downloadByName":
        filename = args.require("filename")
        revision = args.take("revision", -1)
        args.done()
        with bucket.open_download_stream_by_name(
            filename, int(revision), session, **timeout
        ) as grid_out:
            return grid_out.read()
    if name == "delete":
        file_id = args.require("id")
        args.done()
        bucket.delete(file_id, session, **timeout)
        return None
    if name == "deleteByName":
        filename = args.require("filename")
        args.done()
        bucket.delete_by_name(filename, session, **timeout)
        return None
    if name == "rename":
        file_id = args.require("id")
        new_filename = args.require("newFilename")
        args.done()
        bucket.rename(file_id, new_filename, session, **timeout)
        return None
    if name == "renameByName":
        filename = args.require("filename")
        new_filename = args.require("newFilename")
        args.done()
        bucket.rename_by_name(filename, new_filename, session, **timeout)
        return None
    if name == "drop":
        args.done()
        bucket.drop(session, **timeout)
        return None
    return _find(bucket, args, session, timeout)


def _upload(
    bucket: GridFSBucket, with_id: bool, args: Any, session: Any, timeout: dict[str, Any]
) -> Any:
    file_id = args.require("id") if with_id else None
    filename = args.require("filename")
    source = hex_source(args.require("source"))
    chunk_size = args.take("chunkSizeBytes")
    metadata = args.take("metadata")
    # The deprecated GridFSUploadOptions: fields of the files document, set on the
    # upload stream before it is written.
    deprecated = args.keywords({"contentType": "contentType", "aliases": "aliases"})
    args.done()
    chunk_size = None if chunk_size is None else int(chunk_size)
    if with_id:
        stream = bucket.open_upload_stream_with_id(
            file_id, filename, chunk_size, metadata, session, **timeout
        )
    else:
        stream = bucket.open_upload_stream(filename, chunk_size, metadata, session, **timeout)
    with stream:
        for field, value in deprecated.items():
            stream.set(field, value)
        stream.write(source)
    return None if with_id else stream._id


def _find(bucket: GridFSBucket, args: Any, session: Any, timeout: dict[str, Any]) -> Any:
    # (operations imports this module: its Documents is looked up when needed.)
    from tests.spec.unified.operations import Documents  # noqa: PLC0415

    filter_ = args.take("filter", {})
    keywords = args.keywords(_FIND_OPTIONS)
    max_time_ms = args.take("maxTimeMS")
    allow_disk_use = args.take("allowDiskUse")
    args.done()
    cursor = bucket.find(filter_, session=session, **keywords, **timeout)
    if max_time_ms is not None:
        cursor.max_time_ms(int(max_time_ms))
    if allow_disk_use is not None:
        cursor.allow_disk_use(bool(allow_disk_use))
    with cursor:
        # Each GridOut's files document, as the files collection holds it.
        return Documents(dict(grid_out._file) for grid_out in cursor)


# --- for the seed transformations ------------------------------------------------------------

#: The commands each bucket operation may send, in order.
_COMMANDS: dict[str, list[str]] = {
    "upload": ["find", "listIndexes", "createIndexes", "insert"],
    "download": ["find"],
    "downloadByName": ["find"],
    "delete": ["delete"],
    "deleteByName": ["find", "delete"],
    "rename": ["update"],
    "renameByName": ["update"],
    "drop": ["drop"],
}
_COMMANDS["uploadWithId"] = _COMMANDS["upload"]
_COMMANDS["uploadFromStream"] = _COMMANDS["upload"]
_COMMANDS["uploadFromStreamWithId"] = _COMMANDS["upload"]


def commands_of(operation: Mapping[str, Any]) -> Optional[list[str]]:
    """The commands a bucket operation may send, or None for an operation of another
    entity. ``rename``, ``delete`` and ``drop`` are also collection operations' names
    (``find`` and ``drop`` send the same command either way): a bucket's rename is told
    by its ``newFilename``, its delete by its ``id``."""
    name = operation.get("name")
    arguments = operation.get("arguments") or {}
    if name == "rename" and "newFilename" not in arguments:
        return None
    if name == "delete" and "id" not in arguments:
        return None
    return _COMMANDS.get(str(name))


def _definitions(document: Mapping[str, Any], test: Mapping[str, Any]) -> dict[str, Any]:
    """Entity id -> (kind, definition), of the file and of the test's createEntities."""
    found: dict[str, Any] = {}
    definitions = list(document.get("createEntities") or [])
    for operation in test.get("operations") or []:
        if operation.get("object") == "testRunner" and operation.get("name") == "createEntities":
            definitions.extend((operation.get("arguments") or {}).get("entities") or [])
    for definition in definitions:
        kind, spec = next(iter(definition.items()))
        found[str(spec.get("id"))] = (kind, spec)
    return found


def _bucket_namespace(
    document: Mapping[str, Any], test: Mapping[str, Any], entity: str
) -> Optional[tuple[str, str]]:
    """(database name, bucket name) of bucket entity ``entity``, or None if it is not one."""
    definitions = _definitions(document, test)
    kind, spec = definitions.get(entity, (None, None))
    if kind != "bucket":
        return None
    _, database = definitions.get(str(spec.get("database")), (None, {}))
    name = str((spec.get("bucketOptions") or {}).get("bucketName", "fs"))
    return str(database.get("databaseName")), name


def events_after_read(
    document: Mapping[str, Any], test: Mapping[str, Any], operation: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The commandStartedEvents a download sends once its find of the files document
    succeeded: the find of the file's chunks (none for a file of length 0: the spec's
    "File Download"). Empty for any other operation. The file is looked up in the
    test file's initialData; one not there is a shape this cannot tell."""
    name = operation.get("name")
    if name not in ("download", "downloadByName"):
        return []
    namespace = _bucket_namespace(document, test, str(operation.get("object")))
    if namespace is None:
        return []
    database, bucket_name = namespace
    stored = [
        dict(d)
        for data in document.get("initialData") or []
        if data.get("databaseName") == database
        and data.get("collectionName") == f"{bucket_name}.files"
        for d in data.get("documents") or []
    ]
    arguments = operation.get("arguments") or {}
    if name == "download":
        files = [d for d in stored if d.get("_id") == arguments.get("id")]
    else:
        revisions = sorted(
            (d for d in stored if d.get("filename") == arguments.get("filename")),
            key=lambda d: d.get("uploadDate"),
        )
        revision = int(arguments.get("revision", -1))
        files = [revisions[revision]] if -len(revisions) <= revision < len(revisions) else []
    if len(files) != 1:
        raise AssertionError(
            f"{name}: the file it reads is not in the test file's initialData, so what it "
            "sends after reading it cannot be told"
        )
    if not files[0].get("length"):
        return []
    return [
        {
            "commandStartedEvent": {
                "command": {"find": f"{bucket_name}.chunks"},
                "databaseName": database,
            }
        }
    ]


#: The field a file's id is queried by, in each collection of a bucket.
_ID_FIELDS = {"files": "_id", "chunks": "files_id"}


def _file_id_queries(
    document: Mapping[str, Any], test: Mapping[str, Any]
) -> list[tuple[MutableMapping[str, Any], str]]:
    """Each query (with the field naming a file id) of an expected command on a
    bucket's files or chunks collection: a find's filter, a delete's or update's q."""
    buckets = {
        namespace[1]
        for entity in _definitions(document, test)
        for namespace in [_bucket_namespace(document, test, entity)]
        if namespace is not None
    }
    found: list[tuple[MutableMapping[str, Any], str]] = []
    for expected in test.get("expectEvents") or []:
        for event in expected.get("events") or []:
            started = event.get("commandStartedEvent") if isinstance(event, Mapping) else None
            command = started.get("command") if isinstance(started, Mapping) else None
            if not isinstance(command, Mapping) or not command:
                continue
            command_name, collection = next(iter(command.items()))
            prefix, _, kind = str(collection).rpartition(".")
            if prefix not in buckets or kind not in _ID_FIELDS:
                continue
            queries: list[Any] = []
            if command_name == "find":
                queries = [command.get("filter")]
            elif command_name in ("delete", "update"):
                statements = command.get("deletes" if command_name == "delete" else "updates")
                if isinstance(statements, Sequence):
                    queries = [s.get("q") for s in statements if isinstance(s, Mapping)]
            found.extend(
                (query, _ID_FIELDS[kind])
                for query in queries
                if isinstance(query, MutableMapping) and _ID_FIELDS[kind] in query
            )
    return found


def _plain(value: Any) -> bool:
    """A value given as itself, not as a query operator or a special matching operator."""
    return not (isinstance(value, Mapping) and any(str(k).startswith("$") for k in value))


def expects_plain_file_id(document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """The shape of ``gridfs-file-id-eq``: an expected command queries a bucket's
    collection for a file id given as a plain value (``{_id: <id>}``)."""
    return any(_plain(query[field]) for query, field in _file_id_queries(document, test))


def expect_file_id_eq(document: Mapping[str, Any], test: MutableMapping[str, Any]) -> None:
    """``gridfs-file-id-eq``: each such query is expected as ``{_id: {$eq: <id>}}``."""
    for query, field in _file_id_queries(document, test):
        if _plain(query[field]):
            query[field] = {"$eq": query[field]}
