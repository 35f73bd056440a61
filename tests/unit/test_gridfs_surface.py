"""mongocore.gridfs has the surface of pymongo's ``gridfs`` package: its modules' public
names, its classes' methods with pymongo's parameters (names, order, kinds, defaults),
and its errors' hierarchy; and the pure pieces of GridFS behave as the spec says
(index keys compared by value, ``$eq`` file id queries, one deadline per operation).

The differences docs/from-pymongo.md lists are the only ones allowed here: the
keyword-only ``timeout_ms`` of GridFSBucket's methods and of GridOutCursor, the
keyword-only ``read_concern`` of GridFSBucket, its ``drop()`` (the spec's, which pymongo
lacks), and no asynchronous classes.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

pygridfs = pytest.importorskip("gridfs")
pytest.importorskip("gridfs.grid_file")

from mongocore import gridfs  # noqa: E402
from mongocore.api.gridfs.deadline import Deadline  # noqa: E402
from mongocore.api.gridfs.file_model import CHUNKS_INDEX, FILES_INDEX, id_query  # noqa: E402
from mongocore.api.gridfs.indexes import same_key  # noqa: E402
from mongocore.errors import MongoCoreError, NetworkTimeout  # noqa: E402
from mongocore.gridfs import errors, grid_file  # noqa: E402

#: Keyword-only parameters mongocore adds, by class and method.
ADDED = {
    ("GridFSBucket", "__init__"): {"read_concern"},
    ("GridOutCursor", "__init__"): {"timeout_ms"},
}
BUCKET_METHODS_WITH_TIMEOUT = {
    "open_upload_stream",
    "open_upload_stream_with_id",
    "upload_from_stream",
    "upload_from_stream_with_id",
    "open_download_stream",
    "download_to_stream",
    "open_download_stream_by_name",
    "download_to_stream_by_name",
    "delete",
    "delete_by_name",
    "rename",
    "rename_by_name",
}
#: Methods mongocore adds (the spec's), by class.
EXTRA_METHODS = {"GridFSBucket": {"drop"}}


def _public(module: Any) -> set[str]:
    names = getattr(module, "__all__", None)
    return {n for n in (names or dir(module)) if not n.startswith("_")}


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [(gridfs, pygridfs), (errors, pygridfs.errors)],
    ids=["gridfs", "gridfs.errors"],
)
def test_the_modules_have_pymongos_public_names(ours: Any, theirs: Any) -> None:
    wanted = {n for n in _public(theirs) if not n.startswith("Async")}
    if theirs is pygridfs.errors:
        wanted = {n for n in wanted if isinstance(getattr(theirs, n), type)} - {"PyMongoError"}
    assert wanted - _public(ours) == set()


def test_grid_file_has_pymongos_classes() -> None:
    theirs = pygridfs.grid_file
    classes = {
        n
        for n in dir(theirs)
        if not n.startswith(("_", "Async"))
        and isinstance(getattr(theirs, n), type)
        and getattr(theirs, n).__module__.startswith("gridfs")
    }
    assert classes - _public(grid_file) == set()
    assert grid_file.GridFSBucket is gridfs.GridFSBucket  # one home per class


def _parameters(function: Any) -> list[tuple[str, Any, Any]]:
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]


CLASSES = ["GridFS", "GridFSBucket", "GridIn", "GridOut", "GridOutCursor"]


@pytest.mark.parametrize("name", CLASSES)
def test_methods_take_pymongos_parameters(name: str) -> None:
    ours, theirs = getattr(gridfs, name), getattr(pygridfs, name)
    own = {
        n
        for n, member in vars(theirs).items()
        if (not n.startswith("_") or n == "__init__") and callable(member)
    }
    for method in sorted(own):
        assert hasattr(ours, method), f"{name}.{method} is missing"
        mine = _parameters(getattr(ours, method))
        added = set(ADDED.get((name, method), set()))
        if name == "GridFSBucket" and method in BUCKET_METHODS_WITH_TIMEOUT:
            added.add("timeout_ms")
        extra = [p for p in mine if p[0] in added]
        assert all(p[1] is inspect.Parameter.KEYWORD_ONLY for p in extra), (name, method)
        assert [p for p in mine if p[0] not in added] == _parameters(getattr(theirs, method)), (
            f"{name}.{method}"
        )
    for method in EXTRA_METHODS.get(name, set()):
        assert not hasattr(theirs, method)


@pytest.mark.parametrize("name", CLASSES)
def test_properties_are_pymongos(name: str) -> None:
    theirs = getattr(pygridfs, name)
    properties = {n for n, member in vars(theirs).items() if isinstance(member, property)}
    ours = getattr(gridfs, name)
    assert {n for n in properties if not isinstance(getattr(ours, n, None), property)} == set()


def test_the_errors_have_pymongos_hierarchy() -> None:
    for name in ("GridFSError", "CorruptGridFile", "NoFile", "FileExists"):
        mine = [c.__name__ for c in getattr(errors, name).__mro__]
        theirs = [c.__name__ for c in getattr(pygridfs.errors, name).__mro__]
        assert mine[: mine.index("GridFSError") + 1] == theirs[: theirs.index("GridFSError") + 1]
        assert issubclass(getattr(errors, name), MongoCoreError)
    assert str(errors.NoFile()) == ""
    assert errors.NoFile("gone").message == "gone"


def test_index_keys_are_compared_by_value_in_order() -> None:
    assert same_key({"filename": 1, "uploadDate": 1}, FILES_INDEX)
    assert same_key({"filename": 1.0, "uploadDate": 1}, FILES_INDEX)
    assert same_key({"files_id": 1.0, "n": 1.0}, CHUNKS_INDEX)
    assert not same_key({"uploadDate": 1, "filename": 1}, FILES_INDEX)
    assert not same_key({"filename": 1}, FILES_INDEX)
    assert not same_key({"filename": 1, "uploadDate": -1}, FILES_INDEX)
    assert not same_key({"filename": "text", "uploadDate": 1}, FILES_INDEX)
    assert not same_key({"filename": True, "uploadDate": 1}, FILES_INDEX)
    assert not same_key(None, FILES_INDEX)


def test_file_ids_are_queried_with_eq() -> None:
    assert id_query("_id", {"$ne": 1}) == {"_id": {"$eq": {"$ne": 1}}}
    assert id_query("files_id", 5) == {"files_id": {"$eq": 5}}


class _Options:
    def __init__(self, timeout_ms: Any) -> None:
        self.timeout_ms = timeout_ms


class _Client:
    def __init__(self, timeout_ms: Any) -> None:
        self.settings = _Options(timeout_ms)


def test_a_deadline_gives_each_command_the_time_left() -> None:
    assert Deadline.for_operation(_Client(None), None).remaining_ms("x") is None
    # 0 is no limit: passed on, so that the client's own timeoutMS does not apply.
    assert Deadline.for_operation(_Client(75), 0).remaining_ms("x") == 0
    left = Deadline.for_operation(_Client(None), 60_000).remaining_ms("x")
    assert left is not None and 0 < left <= 60_000
    client_default = Deadline.for_operation(_Client(60_000), None).remaining_ms("x")
    assert client_default is not None and 0 < client_default <= 60_000
    expired = Deadline(1e-9)
    with pytest.raises(NetworkTimeout, match="before the insert"):
        for _ in range(1000):  # the first call may come within a nanosecond
            expired.remaining_ms("the insert")
    for bad in (-1, "5", True):
        with pytest.raises((TypeError, ValueError)):
            Deadline(bad)
