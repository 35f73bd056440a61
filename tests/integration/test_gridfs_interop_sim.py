"""mongocore's GridFS and pymongo's, side by side on one simulated replica set.

pymongo's ``gridfs`` is the independent implementation: for the same calls, both
must store the same files documents and chunks and create the same indexes, each must
read what the other wrote, and both must fail with the same errors (the same class
names in the same hierarchy: every one a GridFSError). What is stored is always read
back through pymongo's plain collections.

GridFS spec ("File Upload", "File Download", "File Deletion", "Indexes", "Renaming
stored files", "File Download by Filename"); pymongo 4.20's names.
"""

from __future__ import annotations

import datetime
import io
import os
import warnings
from collections.abc import Iterator
from typing import Any, Callable

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

import gridfs as pygridfs  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from bson.objectid import ObjectId  # noqa: E402

from mongocore import MongoClient, gridfs  # noqa: E402
from mongocore.errors import InvalidOperation, MongoCoreError  # noqa: E402
from mongocore.gridfs.errors import GridFSError  # noqa: E402
from mongocore.sim import ReplicaSet  # noqa: E402
from tests.integration.sim_client import FAST, Recorder  # noqa: E402

PyClient = pymongo.MongoClient


# The clients are each test's own: a sim connection thread must not outlive its test.
@pytest.fixture
def ours(rs: ReplicaSet) -> Iterator[MongoClient]:
    with MongoClient(rs.uri, **FAST) as client:
        yield client


@pytest.fixture
def theirs(rs: ReplicaSet) -> Iterator[Any]:
    client = PyClient(rs.uri, **FAST)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def name(request: pytest.FixtureRequest, theirs: Any) -> str:
    """A database of this test's own, empty."""
    database = "gridfs_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50]
    theirs.drop_database(database)
    return database


def _kind(error: BaseException) -> tuple[str, ...]:
    """An error as its class names from the GridFS error class down (the same for both
    libraries when the hierarchies agree)."""
    names = []
    for cls in type(error).__mro__:
        names.append(cls.__name__)
        if cls.__name__ == "GridFSError":
            break
    else:
        raise AssertionError(f"{error!r} is not a GridFSError")
    return tuple(names)


def both_raise(ours: Callable[[], Any], theirs: Callable[[], Any]) -> tuple[str, ...]:
    """Both calls fail with the same kind of GridFS error; returns it."""
    with pytest.raises(GridFSError) as mine:
        ours()
    with pytest.raises(pygridfs.errors.GridFSError) as other:
        theirs()
    assert isinstance(mine.value, MongoCoreError)
    assert _kind(mine.value) == _kind(other.value)
    return _kind(mine.value)


def stored(client: Any, database: str, bucket: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """The bucket's files documents and chunks, as pymongo reads them, sorted (files by
    _id, chunks by files_id and n)."""
    db = client[database]
    files = list(db[f"{bucket}.files"].find({}, sort=[("_id", 1)]))
    chunks = list(db[f"{bucket}.chunks"].find({}, sort=[("files_id", 1), ("n", 1)]))
    return files, chunks


def comparable_files(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Files documents with the upload date replaced by its type (the dates differ)."""
    out = []
    for document in files:
        copy = dict(document)
        assert isinstance(copy.pop("uploadDate"), datetime.datetime)
        out.append(copy)
    return out


def comparable_chunks(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Chunks without their own _id (an ObjectId each), as (files_id, n, data, fields)."""
    out = []
    for chunk in chunks:
        assert isinstance(chunk["_id"], ObjectId)
        out.append((chunk["files_id"], chunk["n"], bytes(chunk["data"]), sorted(chunk)))
    return out


def indexes(client: Any, database: str, collection: str) -> list[dict[str, Any]]:
    return sorted(
        (
            {k: v for k, v in index.items() if k != "ns"}
            for index in client[database][collection].list_indexes()
        ),
        key=lambda index: index["name"],
    )


SIZES = [0, 1, 3, 4, 5, 8, 9, 1000]


def test_uploads_store_the_same_files_chunks_and_indexes(
    ours: MongoClient, theirs: Any, name: str
) -> None:
    mine = gridfs.GridFSBucket(ours[name], "mine", chunk_size_bytes=4)
    other = pygridfs.GridFSBucket(theirs[name], "other", chunk_size_bytes=4)
    for size in SIZES:
        data = os.urandom(size)
        file_id = ObjectId()
        metadata = {"size": size, "tags": ["a", "b"]}
        mine.upload_from_stream_with_id(file_id, f"f{size}", data, metadata=metadata)
        other.upload_from_stream_with_id(file_id, f"f{size}", data, metadata=metadata)
    # An id of another type, a stream source, the bucket's default chunk size.
    for bucket in (
        gridfs.GridFSBucket(ours[name], "mine"),
        pygridfs.GridFSBucket(theirs[name], "other"),
    ):
        bucket.upload_from_stream_with_id("text-id", "big", io.BytesIO(b"x" * 300_000))
    my_files, my_chunks = stored(theirs, name, "mine")
    their_files, their_chunks = stored(theirs, name, "other")
    assert comparable_files(my_files) == comparable_files(their_files)
    assert comparable_chunks(my_chunks) == comparable_chunks(their_chunks)
    assert all(isinstance(f["length"], Int64) for f in my_files)
    assert indexes(theirs, name, "mine.files") == indexes(theirs, name, "other.files")
    assert indexes(theirs, name, "mine.chunks") == indexes(theirs, name, "other.chunks")
    assert {i["name"] for i in indexes(theirs, name, "mine.chunks")} == {"_id_", "files_id_1_n_1"}


def test_open_upload_stream_writes_like_pymongos(ours: MongoClient, theirs: Any, name: str) -> None:
    """Writes of every size, str with an encoding, fields set before and after close."""
    ids = []
    for bucket in (
        gridfs.GridFSBucket(ours[name], "mine", chunk_size_bytes=5),
        pygridfs.GridFSBucket(theirs[name], "other", chunk_size_bytes=5),
    ):
        file_id = ObjectId() if not ids else ids[0]
        ids.append(file_id)
        with bucket.open_upload_stream_with_id(file_id, "s", metadata={"m": 1}) as stream:
            stream.encoding = "utf-8"
            stream.author = "ann"
            pieces = [b"ab", b"", b"cdefg", "héllo", b"x" * 11, io.BytesIO(b"stream-data")]
            for piece in pieces:
                stream.write(piece)
            stream.writelines([b"1", b"22"])
        stream.after = "closed"  # updates the stored document
        assert stream.closed
        assert stream.length == 2 + 5 + len("héllo".encode()) + 11 + 11 + 1 + 2
        assert stream.author == "ann"
    my_files, my_chunks = stored(theirs, name, "mine")
    their_files, their_chunks = stored(theirs, name, "other")
    assert comparable_files(my_files) == comparable_files(their_files)
    assert my_files[0]["after"] == "closed"
    assert comparable_chunks(my_chunks) == comparable_chunks(their_chunks)


def _upload_both(ours: MongoClient, theirs: Any, name: str, data: bytes, chunk_size: int) -> Any:
    file_id = ObjectId()
    gridfs.GridFSBucket(ours[name], "mine", chunk_size_bytes=chunk_size).upload_from_stream_with_id(
        file_id, "f", data
    )
    pygridfs.GridFSBucket(
        theirs[name], "other", chunk_size_bytes=chunk_size
    ).upload_from_stream_with_id(file_id, "f", data)
    return file_id


def _reads(stream: Any) -> list[Any]:
    """What a sequence of reads, seeks and line reads returns."""
    out: list[Any] = [stream.read(3), stream.tell(), stream.readchunk(), stream.readline()]
    out.append(stream.seek(2))
    out.append(stream.read(7))
    out.append(stream.seek(-4, os.SEEK_END))
    out.append(stream.read())
    out.append(stream.read())
    out.append(stream.seek(1, os.SEEK_SET))
    out.append(stream.seek(3, os.SEEK_CUR))
    out.append(stream.readline(2))
    out.append(stream.readlines())
    stream.seek(0)
    out.append(list(stream))
    out.append(stream.seek(1000))
    out.append(stream.read())
    return out


def test_each_reads_what_the_other_wrote(ours: MongoClient, theirs: Any, name: str) -> None:
    data = b"line one\nline two\n\nlast line without newline"
    file_id = _upload_both(ours, theirs, name, data, 6)
    for bucket_name in ("mine", "other"):
        my_bucket = gridfs.GridFSBucket(ours[name], bucket_name)
        their_bucket = pygridfs.GridFSBucket(theirs[name], bucket_name)
        with (
            my_bucket.open_download_stream(file_id) as mine,
            their_bucket.open_download_stream(file_id) as other,
        ):
            assert mine.read() == other.read() == data
        with (
            my_bucket.open_download_stream(file_id) as mine,
            their_bucket.open_download_stream(file_id) as other,
        ):
            assert _reads(mine) == _reads(other)
        for stream in (io.BytesIO(), io.BytesIO()):
            my_bucket.download_to_stream(file_id, stream)
            assert stream.getvalue() == data
        mine_by_name = io.BytesIO()
        my_bucket.download_to_stream_by_name("f", mine_by_name)
        assert mine_by_name.getvalue() == data


def test_file_attributes_match(ours: MongoClient, theirs: Any, name: str) -> None:
    file_id = ObjectId()
    for bucket in (
        gridfs.GridFSBucket(ours[name], "mine", chunk_size_bytes=7),
        pygridfs.GridFSBucket(theirs[name], "other", chunk_size_bytes=7),
    ):
        bucket.upload_from_stream_with_id(file_id, "attrs", b"0123456789", metadata={"k": "v"})
    # Legacy fields a file may hold (from older drivers), and one of the application's.
    for bucket_name in ("mine", "other"):
        theirs[name][f"{bucket_name}.files"].update_one(
            {"_id": file_id},
            {"$set": {"contentType": "text/plain", "aliases": ["x"], "extra": 5}},
        )
    mine = gridfs.GridFSBucket(ours[name], "mine").open_download_stream(file_id)
    other = pygridfs.GridFSBucket(theirs[name], "other").open_download_stream(file_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for attribute in (
            "_id",
            "filename",
            "name",
            "length",
            "chunk_size",
            "metadata",
            "content_type",
            "aliases",
            "md5",
            "extra",
        ):
            assert getattr(mine, attribute) == getattr(other, attribute), attribute
    assert mine.upload_date.replace(tzinfo=None) - other.upload_date.replace(
        tzinfo=None
    ) < datetime.timedelta(minutes=5)
    with pytest.warns(DeprecationWarning):
        assert mine.content_type == "text/plain"
    assert (mine.readable(), mine.seekable(), mine.writable()) == (
        other.readable(),
        other.seekable(),
        other.writable(),
    )
    for method in ("write", "fileno", "truncate"):
        with pytest.raises(io.UnsupportedOperation):
            getattr(mine, method)(*([b""] if method == "write" else []))
    with pytest.raises(AttributeError):
        mine.no_such_field  # noqa: B018
    mine.close()
    other.close()


def test_revisions_by_name(ours: MongoClient, theirs: Any, name: str) -> None:
    """Revisions are ordered by uploadDate (set here, so that no two are equal)."""
    contents = [b"first", b"second", b"third"]
    for bucket_name in ("mine", "other"):
        bucket = pygridfs.GridFSBucket(theirs[name], bucket_name)
        for number, content in enumerate(contents):
            file_id = bucket.upload_from_stream("r", content)
            theirs[name][f"{bucket_name}.files"].update_one(
                {"_id": file_id},
                {"$set": {"uploadDate": datetime.datetime(2020, 1, 1 + number)}},
            )
    mine = gridfs.GridFSBucket(ours[name], "mine")
    other = pygridfs.GridFSBucket(theirs[name], "other")
    for revision in (-1, -2, -3, 0, 1, 2):
        assert (
            mine.open_download_stream_by_name("r", revision).read()
            == other.open_download_stream_by_name("r", revision).read()
            == contents[revision]
        )
    for missing in (3, -4):
        both_raise(
            lambda: mine.open_download_stream_by_name("r", missing),  # noqa: B023
            lambda: other.open_download_stream_by_name("r", missing),  # noqa: B023
        )
    assert mine.open_download_stream_by_name("r").read() == b"third"
    my_fs, their_fs = gridfs.GridFS(ours[name], "mine"), pygridfs.GridFS(theirs[name], "other")
    for version in (-1, 0, 2, None):
        assert my_fs.get_version("r", version).read() == their_fs.get_version("r", version).read()
    assert my_fs.get_last_version("r").read() == their_fs.get_last_version("r").read()
    both_raise(lambda: my_fs.get_version("r", 5), lambda: their_fs.get_version("r", 5))


def test_missing_files_and_duplicates_raise_the_same_errors(
    ours: MongoClient, theirs: Any, name: str
) -> None:
    file_id = _upload_both(ours, theirs, name, b"data", 2)
    mine = gridfs.GridFSBucket(ours[name], "mine")
    other = pygridfs.GridFSBucket(theirs[name], "other")
    missing = ObjectId()
    assert (
        both_raise(
            lambda: mine.open_download_stream(missing), lambda: other.open_download_stream(missing)
        )[0]
        == "NoFile"
    )
    assert (
        both_raise(
            lambda: mine.download_to_stream(missing, io.BytesIO()),
            lambda: other.download_to_stream(missing, io.BytesIO()),
        )[0]
        == "NoFile"
    )
    assert (
        both_raise(
            lambda: mine.open_download_stream_by_name("nope"),
            lambda: other.open_download_stream_by_name("nope"),
        )[0]
        == "NoFile"
    )
    assert both_raise(lambda: mine.delete(missing), lambda: other.delete(missing))[0] == "NoFile"
    assert (
        both_raise(lambda: mine.delete_by_name("nope"), lambda: other.delete_by_name("nope"))[0]
        == "NoFile"
    )
    assert (
        both_raise(lambda: mine.rename(missing, "x"), lambda: other.rename(missing, "x"))[0]
        == "NoFile"
    )
    assert (
        both_raise(
            lambda: mine.rename_by_name("nope", "x"), lambda: other.rename_by_name("nope", "x")
        )[0]
        == "NoFile"
    )
    assert (
        both_raise(
            lambda: gridfs.GridFS(ours[name], "mine").get(missing),
            lambda: pygridfs.GridFS(theirs[name], "other").get(missing),
        )[0]
        == "NoFile"
    )
    # The same _id again: its chunks (or, for an empty file, its files document) exist.
    for data in (b"again", b""):
        assert (
            both_raise(
                lambda: mine.upload_from_stream_with_id(file_id, "dup", data),  # noqa: B023
                lambda: other.upload_from_stream_with_id(file_id, "dup", data),  # noqa: B023
            )[0]
            == "FileExists"
        )
    # Nothing of the refused uploads' files document was stored.
    files, _ = stored(theirs, name, "mine")
    assert [f["filename"] for f in files] == ["f"]
    assert gridfs.errors.NoFile.__mro__[1] is GridFSError
    with pytest.raises(TypeError):
        mine.open_upload_stream(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        other.open_upload_stream(5)


@pytest.mark.parametrize(
    "damage",
    [
        "missing middle",
        "missing last",
        "short middle",
        "short last",
        "long last",
        "extra with data",
        "out of order",
    ],
)
def test_corrupt_files_raise_the_same_errors(
    ours: MongoClient, theirs: Any, name: str, damage: str
) -> None:
    file_id = _upload_both(ours, theirs, name, b"0123456789", 4)  # chunks of 4, 4, 2
    for bucket_name in ("mine", "other"):
        chunks = theirs[name][f"{bucket_name}.chunks"]
        if damage == "missing middle":
            chunks.delete_one({"files_id": file_id, "n": 1})
        elif damage == "missing last":
            chunks.delete_one({"files_id": file_id, "n": 2})
        elif damage == "short middle":
            chunks.update_one({"files_id": file_id, "n": 1}, {"$set": {"data": b"45"}})
        elif damage == "short last":
            chunks.update_one({"files_id": file_id, "n": 2}, {"$set": {"data": b"8"}})
        elif damage == "long last":
            chunks.update_one({"files_id": file_id, "n": 2}, {"$set": {"data": b"8901"}})
        elif damage == "extra with data":
            chunks.insert_one({"files_id": file_id, "n": 3, "data": b"zz"})
        else:
            chunks.update_one({"files_id": file_id, "n": 1}, {"$set": {"n": 7}})
    mine = gridfs.GridFSBucket(ours[name], "mine")
    other = pygridfs.GridFSBucket(theirs[name], "other")
    kind = both_raise(
        lambda: mine.open_download_stream(file_id).read(),
        lambda: other.open_download_stream(file_id).read(),
    )
    assert kind[0] == "CorruptGridFile"


def test_deletes_and_renames_leave_the_same_files(
    ours: MongoClient, theirs: Any, name: str
) -> None:
    for bucket in (
        gridfs.GridFSBucket(ours[name], "mine", chunk_size_bytes=3),
        pygridfs.GridFSBucket(theirs[name], "other", chunk_size_bytes=3),
    ):
        ids = [
            bucket.upload_from_stream_with_id(n, f"name{n % 3}", b"abcdefg"[: n + 1])
            for n in range(6)
        ]
        assert ids == [None] * 6
        bucket.delete(0)
        bucket.delete_by_name("name2")  # 2 and 5
        bucket.rename(1, "renamed")
        bucket.rename_by_name("name1", "also")  # 4
    my_files, my_chunks = stored(theirs, name, "mine")
    their_files, their_chunks = stored(theirs, name, "other")
    assert comparable_files(my_files) == comparable_files(their_files)
    assert [f["filename"] for f in my_files] == ["renamed", "name0", "also"]
    assert comparable_chunks(my_chunks) == comparable_chunks(their_chunks)


def test_find_gives_the_same_files(ours: MongoClient, theirs: Any, name: str) -> None:
    for bucket_name in ("mine", "other"):
        bucket = pygridfs.GridFSBucket(theirs[name], bucket_name)
        for n in range(6):
            bucket.upload_from_stream_with_id(
                n, f"n{n}", bytes([n]) * n, metadata={"even": n % 2 == 0}
            )
    mine = gridfs.GridFSBucket(ours[name], "mine")
    other = pygridfs.GridFSBucket(theirs[name], "other")

    def summary(cursor: Any) -> list[tuple[Any, str, bytes]]:
        return [(f._id, f.filename, f.read()) for f in cursor]

    queries: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (({},), {}),
        (({"metadata.even": True},), {"sort": [("filename", -1)]}),
        (({},), {"skip": 1, "limit": 3, "sort": [("_id", 1)], "batch_size": 2}),
        (({"length": {"$gt": 2}}, 1, 2), {}),
        ((), {"filter": {"_id": {"$in": [1, 4]}}, "no_cursor_timeout": True}),
    ]
    for args, kwargs in queries:
        assert summary(mine.find(*args, **kwargs)) == summary(other.find(*args, **kwargs))
    assert summary(mine.find().sort("length", -1).limit(2)) == summary(
        other.find().sort("length", -1).limit(2)
    )
    assert mine.find({"_id": 3})[0].read() == other.find({"_id": 3})[0].read()
    assert len(mine.find({}).to_list()) == len(other.find({}).to_list()) == 6
    assert isinstance(mine.find().next(), gridfs.GridOut)
    with pytest.raises(ValueError):
        mine.find().to_list(0)


def test_legacy_gridfs_matches(ours: MongoClient, theirs: Any, name: str) -> None:
    mine = gridfs.GridFS(ours[name], "mine")
    other = pygridfs.GridFS(theirs[name], "other")
    for fs in (mine, other):
        fs.put(b"plain", _id="a", filename="one", author="ann")
        fs.put(
            "texte accentué", _id="b", filename="two", encoding="utf-8", contentType="text/plain"
        )
        fs.put(io.BytesIO(b"from a stream"), _id="c", filename="one", chunkSize=4)
        fs.put(b"no name", _id="d")
        with fs.new_file(_id="e", filename="three", chunk_size=2, content_type="x/y") as f:
            f.write(b"new file")
    my_files, my_chunks = stored(theirs, name, "mine")
    their_files, their_chunks = stored(theirs, name, "other")
    assert comparable_files(my_files) == comparable_files(their_files)
    assert comparable_chunks(my_chunks) == comparable_chunks(their_chunks)
    assert sorted(mine.list()) == sorted(other.list()) == ["one", "three", "two"]
    for query in ("a", "zz", {"filename": "two"}, None):
        assert mine.exists(query) == other.exists(query)
    assert mine.exists(author="ann") and other.exists(author="ann")
    assert not mine.exists(author="bob") and not other.exists(author="bob")
    assert mine.get("b").read() == other.get("b").read()
    assert mine.get_version(author="ann").read() == other.get_version(author="ann").read()
    assert mine.find_one("c").read() == other.find_one("c").read() == b"from a stream"
    assert (
        mine.find_one({"filename": "nothing"}) is None
        and other.find_one({"filename": "nothing"}) is None
    )
    assert [f._id for f in mine.find({"filename": "one"}, sort=[("_id", -1)])] == [
        f._id for f in other.find({"filename": "one"}, sort=[("_id", -1)])
    ]
    for fs in (mine, other):
        fs.delete("a")
        fs.delete("not there")  # no error
    assert comparable_files(stored(theirs, name, "mine")[0]) == comparable_files(
        stored(theirs, name, "other")[0]
    )
    with pytest.raises(TypeError):
        gridfs.GridFS("not a database")  # type: ignore[arg-type]


def test_transactions_are_refused(ours: MongoClient, theirs: Any, name: str) -> None:
    mine = gridfs.GridFSBucket(ours[name])
    other = pygridfs.GridFSBucket(theirs[name])
    with ours.start_session() as my_session, theirs.start_session() as their_session:
        my_session.start_transaction()
        their_session.start_transaction()
        for call, error in (
            (lambda s, b: b.upload_from_stream("x", b"1", session=s), None),
            (lambda s, b: b.open_download_stream(ObjectId(), session=s), None),
            (lambda s, b: b.delete(ObjectId(), session=s), None),
            (lambda s, b: b.rename(ObjectId(), "y", session=s), None),
            (lambda s, b: b.find({}, session=s), None),
        ):
            assert error is None
            with pytest.raises(InvalidOperation):
                call(my_session, mine)
            with pytest.raises(pymongo.errors.InvalidOperation):
                call(their_session, other)
        my_session.abort_transaction()
        their_session.abort_transaction()


def test_a_source_that_fails_aborts_the_upload(ours: MongoClient, theirs: Any, name: str) -> None:
    """The spec's "Aborting an upload": the chunks sent before the source failed are
    deleted, and the source's error is raised."""

    class Failing(io.RawIOBase):
        def __init__(self) -> None:
            self.sent = 0

        def read(self, size: int = -1) -> bytes:
            self.sent += 1
            if self.sent > 3:
                raise OSError("the source failed")
            return b"x" * size

    bucket = gridfs.GridFSBucket(ours[name], "mine", chunk_size_bytes=4)
    with pytest.raises(OSError, match="the source failed"):
        bucket.upload_from_stream("f", Failing())
    assert stored(theirs, name, "mine") == ([], [])
    stream = bucket.open_upload_stream("g", chunk_size_bytes=2)
    stream.write(b"abcdef")
    stream.abort()
    assert stream.closed
    with pytest.raises(ValueError):
        stream.write(b"more")
    assert stored(theirs, name, "mine") == ([], [])


def test_indexes_only_for_an_empty_files_collection(rs: ReplicaSet, theirs: Any, name: str) -> None:
    """The spec's "Indexes": checked (listIndexes) before created, and only when the files
    collection is empty; an existing index with other numeric types counts."""
    recorder = Recorder()
    with MongoClient(rs.uri, event_listeners=[recorder], **FAST) as client:
        theirs[name]["a.files"].insert_one(
            {
                "_id": 1,
                "filename": "x",
                "length": 0,
                "chunkSize": 4,
                "uploadDate": datetime.datetime(2020, 1, 1),
            }
        )
        gridfs.GridFSBucket(client[name], "a").upload_from_stream("y", b"1")
        assert [e.command_name for e in recorder.started_of("listIndexes")] == []
        assert recorder.started_of("createIndexes") == []
        # As the shell creates them: doubles (pymongo's create_index takes only ints).
        theirs[name].command(
            "createIndexes",
            "b.files",
            indexes=[{"key": {"filename": 1.0, "uploadDate": Int64(1)}, "name": "f"}],
        )
        theirs[name].command(
            "createIndexes",
            "b.chunks",
            indexes=[{"key": {"files_id": 1.0, "n": 1.0}, "name": "c", "unique": True}],
        )
        recorder.clear()
        gridfs.GridFSBucket(client[name], "b").upload_from_stream("y", b"1")
        assert len(recorder.started_of("listIndexes")) == 2
        assert recorder.started_of("createIndexes") == []
        recorder.clear()
        gridfs.GridFSBucket(client[name], "c").upload_from_stream("y", b"1")
        assert len(recorder.started_of("createIndexes")) == 2
        find = recorder.started_of("find")[0].command
        assert find["find"] == "c.files" and find["projection"] == {"_id": 1}
        assert [dict(e.command)["filter"] for e in recorder.started_of("find")] == [{}]
    assert [i["key"] for i in indexes(theirs, name, "c.chunks")] == [
        {"_id": 1},
        {"files_id": 1, "n": 1},
    ]


def test_file_ids_are_queried_with_eq(ours: MongoClient, theirs: Any, name: str) -> None:
    """ "TFileId Queries": an id that looks like an operator matches only itself."""
    sneaky = {"$ne": None}
    with pytest.raises(GridFSError):
        gridfs.GridFSBucket(ours[name]).open_download_stream(sneaky)
    bucket = gridfs.GridFSBucket(ours[name])
    bucket.upload_from_stream_with_id(1, "one", b"1")
    with pytest.raises(GridFSError):
        bucket.delete(sneaky)
    with pytest.raises(GridFSError):
        bucket.rename(sneaky, "x")
    assert bucket.open_download_stream(1).read() == b"1"


def _block(client: Any, commands: list[str], times: int, ms: int) -> None:
    client.admin.command(
        "configureFailPoint",
        "failCommand",
        mode={"times": times},
        data={"failCommands": commands, "blockConnection": True, "blockTimeMS": ms},
    )


def test_one_timeout_for_the_whole_operation(
    rs: ReplicaSet, ours: MongoClient, theirs: Any, name: str
) -> None:
    """timeoutMS bounds a GridFS operation as a whole (CSOT spec, "GridFS API"), as
    pymongo's timeout() does: two commands blocked 50 ms each exceed 75 ms together."""
    mine = gridfs.GridFSBucket(ours[name], "mine")
    other = pygridfs.GridFSBucket(theirs[name], "other")
    _block(theirs, ["find", "listIndexes"], 2, 50)
    with pytest.raises(pymongo.errors.PyMongoError) as their_error, pymongo.timeout(0.075):
        other.upload_from_stream("f", b"data")
    assert their_error.value.timeout
    theirs.admin.command("configureFailPoint", "failCommand", mode="off")
    _block(theirs, ["find", "listIndexes"], 2, 50)
    # A timeout error (CSOT): the socket's, or MaxTimeMSExpired from the maxTimeMS the
    # time left gives the command, or a command not sent with no time left.
    with pytest.raises(MongoCoreError) as my_error:
        mine.upload_from_stream("f", b"data", timeout_ms=75)
    assert my_error.value.timeout
    theirs.admin.command("configureFailPoint", "failCommand", mode="off")
    # Generous enough for any machine, and the same blocked commands.
    _block(theirs, ["find", "listIndexes"], 2, 50)
    file_id = mine.upload_from_stream("f", b"data", timeout_ms=20_000)
    assert mine.open_download_stream(file_id, timeout_ms=20_000).read() == b"data"
    theirs.admin.command("configureFailPoint", "failCommand", mode="off")
    # The client's timeoutMS, when the call gives none.
    with MongoClient(rs.uri, timeoutMS=75, **FAST) as limited:
        bucket = gridfs.GridFSBucket(limited[name], "mine")
        _block(theirs, ["delete"], 2, 50)
        with pytest.raises(MongoCoreError) as my_error:
            bucket.delete(file_id)
        assert my_error.value.timeout
        theirs.admin.command("configureFailPoint", "failCommand", mode="off")
        _block(theirs, ["drop"], 2, 50)
        with pytest.raises(MongoCoreError) as my_error:
            bucket.drop()
        assert my_error.value.timeout
        theirs.admin.command("configureFailPoint", "failCommand", mode="off")
        _block(theirs, ["drop"], 2, 50)
        bucket.drop(timeout_ms=0)  # no limit at all
        theirs.admin.command("configureFailPoint", "failCommand", mode="off")
