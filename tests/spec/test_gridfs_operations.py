"""The unified runner's GridFS pieces on made-up tests no upstream file holds: the
``source`` of an upload, the bucket options, the operations it refuses (naming them),
the commands each bucket operation sends, and the two transformations GridFS brings
(the chunks a download reads once the reads seed lets it succeed; ``$eq`` in file id
queries of files older than the spec's rule)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from bson.objectid import ObjectId

from tests.spec import deviations
from tests.spec.unified import gridfs_operations, seed
from tests.spec.unified.entities import UnsupportedFeature

OID = ObjectId("000000000000000000000001")


def test_an_upload_source_is_hex_bytes_and_a_malformed_one_fails_the_test() -> None:
    assert gridfs_operations.hex_source({"$$hexBytes": "12aB"}).read() == b"\x12\xab"
    assert gridfs_operations.hex_source({"$$hexBytes": ""}).read() == b""
    for bad in ({"$$hexBytes": "123"}, {"$$hexBytes": "zz"}, {"$$hexBytes": 12}, {"x": "1"}, "12"):
        with pytest.raises(AssertionError, match="malformed"):
            gridfs_operations.hex_source(bad)


def test_stream_operations_and_unknown_options_are_refused_by_name() -> None:
    class FakeArgs:
        pass

    bucket = object.__new__(gridfs_operations.GridFSBucket)
    for name in sorted(gridfs_operations.STREAM_OPERATIONS):
        assert gridfs_operations.handles(bucket, name)
        with pytest.raises(UnsupportedFeature, match=name):
            gridfs_operations.run(bucket, name, FakeArgs())
    with pytest.raises(UnsupportedFeature, match="bucketOptions"):
        gridfs_operations.bucket(None, {"chunkSizeBytes": 4, "newOption": 1})  # type: ignore[arg-type]


def test_the_commands_of_bucket_operations() -> None:
    def commands(name: str, **arguments: Any) -> Any:
        return gridfs_operations.commands_of({"name": name, "arguments": arguments})

    assert commands("upload", filename="f") == ["find", "listIndexes", "createIndexes", "insert"]
    assert commands("download", id=OID) == ["find"]
    assert commands("delete", id=OID) == ["delete"]
    assert commands("rename", id=OID, newFilename="n") == ["update"]
    # A collection's rename (renameCollection) is not the bucket's.
    assert commands("rename", to="other") is None
    assert commands("find", filter={}) is None  # the same find either way


def _document(bucket_name: str = "fs", length: int = 1) -> dict[str, Any]:
    bucket: dict[str, Any] = {"id": "b", "database": "d"}
    if bucket_name != "fs":
        bucket["bucketOptions"] = {"bucketName": bucket_name}
    return {
        "description": "a file no one has seen",
        "schemaVersion": "1.9",
        "createEntities": [
            {"client": {"id": "c", "observeEvents": ["commandStartedEvent"]}},
            {"database": {"id": "d", "client": "c", "databaseName": "db"}},
            {"bucket": bucket},
        ],
        "initialData": [
            {
                "collectionName": f"{bucket_name}.files",
                "databaseName": "db",
                "documents": [
                    {"_id": OID, "length": length, "chunkSize": 4, "filename": "a"},
                ],
            }
        ],
        "tests": [],
    }


def _find(collection: str, filter_: Any) -> dict[str, Any]:
    return {"commandStartedEvent": {"command": {"find": collection, "filter": filter_}}}


def _download_failing_twice(document: dict[str, Any], name: str = "download") -> dict[str, Any]:
    bucket_name = next(
        e["bucket"].get("bucketOptions", {}).get("bucketName", "fs")
        for e in document["createEntities"]
        if "bucket" in e
    )
    arguments = {"id": OID} if name == "download" else {"filename": "a"}
    test = {
        "description": "made up",
        "operations": [
            {
                "name": "failPoint",
                "object": "testRunner",
                "arguments": {
                    "client": "c",
                    "failPoint": {
                        "configureFailPoint": "failCommand",
                        "mode": {"times": 2},
                        "data": {"failCommands": ["find"], "closeConnection": True},
                    },
                },
            },
            {"name": name, "object": "b", "arguments": arguments, "expectError": {"isError": True}},
        ],
        "expectEvents": [
            {
                "client": "c",
                "events": [
                    _find(f"{bucket_name}.files", {"_id": OID}),
                    _find(f"{bucket_name}.files", {"_id": OID}),
                ],
            }
        ],
    }
    document["tests"].append(test)
    return test


def test_a_download_the_reads_seed_lets_succeed_goes_on_to_its_chunks() -> None:
    document = _document("photos")
    test = _download_failing_twice(document)
    assert seed.SHAPES[seed.READS_SEED](document, test)
    changed = seed.transform(seed.READS_SEED, document, test)
    events = changed["expectEvents"][0]["events"]
    assert [next(iter(e["commandStartedEvent"]["command"].values())) for e in events] == [
        "photos.files",
        "photos.files",
        "photos.files",
        "photos.chunks",
    ]
    assert events[-1]["commandStartedEvent"]["databaseName"] == "db"
    assert "expectError" not in changed["operations"][1]
    # An empty file has no chunks to read.
    empty = _document(length=0)
    changed = seed.transform(seed.READS_SEED, empty, _download_failing_twice(empty))
    assert len(changed["expectEvents"][0]["events"]) == 3
    # downloadByName: the revision (-1, the latest) of the file named.
    by_name = _document()
    changed = seed.transform(
        seed.READS_SEED, by_name, _download_failing_twice(by_name, "downloadByName")
    )
    assert len(changed["expectEvents"][0]["events"]) == 4
    # A file the transformation cannot find is a shape it refuses.
    missing = _document()
    missing["initialData"] = []
    with pytest.raises(AssertionError, match="initialData"):
        seed.transform(seed.READS_SEED, missing, _download_failing_twice(missing))


def test_file_id_queries_are_expected_with_eq() -> None:
    document = _document("photos")
    test = {
        "description": "made up",
        "operations": [{"name": "delete", "object": "b", "arguments": {"id": OID}}],
        "expectEvents": [
            {
                "client": "c",
                "events": [
                    _find("photos.files", {"_id": OID}),
                    {
                        "commandStartedEvent": {
                            "command": {
                                "delete": "photos.chunks",
                                "deletes": [{"q": {"files_id": OID}}],
                            }
                        }
                    },
                    _find("photos.files", {"_id": {"$eq": OID}}),  # already as the spec says
                    _find("other.files", {"_id": OID}),  # no bucket's collection
                    _find("photos.files", {"filename": "a"}),  # no file id
                ],
            }
        ],
    }
    document["tests"].append(test)
    entry = next(
        e for e in deviations.entries()["deviation"] if e.get("transform") == seed.GRIDFS_FILE_ID_EQ
    )
    assert deviations.in_scope(entry, "a-new-suite/tests", document)
    assert deviations.matches(entry, document, test)
    changed = seed.transform(seed.GRIDFS_FILE_ID_EQ, document, test)
    events = [e["commandStartedEvent"]["command"] for e in changed["expectEvents"][0]["events"]]
    assert events[0]["filter"] == {"_id": {"$eq": OID}}
    assert events[1]["deletes"][0]["q"] == {"files_id": {"$eq": OID}}
    assert events[2:] == [
        e["commandStartedEvent"]["command"] for e in test["expectEvents"][0]["events"][2:]
    ]
    # Once every query has its $eq, the rule no longer selects the test.
    assert not seed.SHAPES[seed.GRIDFS_FILE_ID_EQ](document, changed)
    untouched = copy.deepcopy(test)
    untouched["expectEvents"][0]["events"] = untouched["expectEvents"][0]["events"][2:]
    assert not deviations.matches(entry, document, untouched)
