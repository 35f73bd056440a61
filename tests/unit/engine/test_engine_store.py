"""The versioned collection: scan order, the _id index, unique indexes, reads as of a
stamp, the history window."""

from __future__ import annotations

import datetime
import itertools

import pytest

from mongocore.sim.codes import CommandError
from mongocore.sim.engine import crud
from mongocore.sim.engine.indexes import IndexSpec
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.engine.store import Collection, SnapshotTooOld


def filled(count: int) -> tuple[Collection, itertools.count[int]]:
    coll = Collection("db.c")
    stamps = itertools.count(1)
    for n in range(count):
        coll.insert({"_id": n, "v": n}, next(stamps))
    return coll, stamps


def test_scan_keeps_record_order_across_updates_and_reinserts() -> None:
    coll, stamps = filled(3)
    rid = coll.get(0)[0]  # type: ignore[index]
    coll.replace(rid, {"_id": 0, "v": 9}, next(stamps))
    coll.delete(coll.get(1)[0], next(stamps))  # type: ignore[index]
    coll.insert({"_id": 1, "v": 1}, next(stamps))
    assert [d["_id"] for _, d in coll.scan()] == [0, 2, 1]


def test_id_lookup_finds_equal_numbers_and_refuses_duplicates() -> None:
    coll, stamps = filled(2)
    assert coll.get(1.0) is not None
    with pytest.raises(CommandError) as caught:
        coll.insert({"_id": 1.0}, next(stamps))
    assert caught.value.code == 11000
    assert (
        caught.value.errmsg
        == "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1.0 }"
    )
    assert caught.value.extra == {"keyPattern": {"_id": 1}, "keyValue": {"_id": 1.0}}


def test_unique_index_sparse_and_partial() -> None:
    coll, stamps = filled(0)
    coll.create_index(
        IndexSpec.from_document({"key": {"a": 1}, "name": "a_1", "unique": True, "sparse": True})
    )
    coll.insert({"_id": 1}, next(stamps))
    coll.insert({"_id": 2}, next(stamps))  # sparse: no key for either
    coll.insert({"_id": 3, "a": [1, 2]}, next(stamps))
    with pytest.raises(CommandError) as caught:
        coll.insert({"_id": 4, "a": 2}, next(stamps))
    assert caught.value.extra["keyValue"] == {"a": 2}
    assert "index: a_1 dup key: { a: 2 }" in caught.value.errmsg
    partial = IndexSpec.from_document(
        {
            "key": {"b": 1},
            "name": "b_1",
            "unique": True,
            "partialFilterExpression": {"b": {"$gt": 5}},
        }
    )
    coll.create_index(partial)
    coll.insert({"_id": 5, "b": 1}, next(stamps))
    coll.insert({"_id": 6, "b": 1}, next(stamps))  # outside the partial filter
    coll.insert({"_id": 7, "b": 6}, next(stamps))
    with pytest.raises(CommandError):
        coll.insert({"_id": 8, "b": 6}, next(stamps))
    assert len(coll) == 6


def test_reads_as_of_a_stamp() -> None:
    coll, _stamps = filled(3)  # stamps 1..3
    coll.replace(coll.get(0)[0], {"_id": 0, "v": "new"}, 4)  # type: ignore[index]
    coll.delete(coll.get(1)[0], 5)  # type: ignore[index]
    coll.insert({"_id": 9}, 6)
    assert [d for _, d in coll.scan(as_of=3)] == [
        {"_id": 0, "v": 0},
        {"_id": 1, "v": 1},
        {"_id": 2, "v": 2},
    ]
    assert [d["_id"] for _, d in coll.scan(as_of=5)] == [0, 2]
    assert coll.get(0, as_of=3)[1] == {"_id": 0, "v": 0}  # type: ignore[index]
    assert coll.get(1, as_of=4) is not None and coll.get(1, as_of=5) is None
    assert coll.get(9, as_of=5) is None and coll.get(9) is not None
    assert [
        d["_id"] for _, d in coll.find(compile_filter({"_id": {"$in": [2, 0, 1]}}), as_of=4)
    ] == [0, 1, 2]


def test_trim_bounds_the_history_and_refuses_older_reads() -> None:
    coll, _stamps = filled(10)
    for stamp in range(11, 1011):
        rid = coll.get(stamp % 10)[0]  # type: ignore[index]
        coll.replace(rid, {"_id": stamp % 10, "v": stamp}, stamp)
    coll.trim(1000)
    # What a read as of 1000 or later needs, and no more: each record's version at the
    # horizon and its one write after it (stamps 1001..1010 wrote each record once).
    assert coll.history_size == 20
    assert coll.get(0, as_of=1000)[1]["v"] == 1000  # type: ignore[index]
    assert coll.get(0, as_of=1010)[1]["v"] == 1010  # type: ignore[index]
    with pytest.raises(SnapshotTooOld) as caught:
        list(coll.scan(as_of=999))
    assert caught.value.code == 239
    coll.trim(2000)
    assert coll.history_size == 0


def test_a_read_in_the_past_touches_only_the_records_written_since() -> None:
    # The cost of a point read as of a stamp does not grow with the history: one chain.
    coll, stamps = filled(1000)
    for _ in range(50_000 // 1000):
        for n in range(1000):
            coll.replace(coll.get(n)[0], {"_id": n, "v": -n}, next(stamps))  # type: ignore[index]
    coll.trim(next(stamps) - 10)
    assert coll.history_size < 30


def test_crud_update_and_delete() -> None:
    coll, stamps = filled(3)
    result = crud.update(coll, {"v": {"$gte": 1}}, {"$inc": {"v": 10}}, stamps.__next__, multi=True)
    assert (result.matched, result.modified) == (2, 2)
    result = crud.update(coll, {"_id": 0}, {"$set": {"v": 0}}, stamps.__next__)
    assert (result.matched, result.modified) == (1, 0)  # the same value: not modified
    result = crud.update(coll, {"_id": 7, "k": 1}, {"$set": {"z": 1}}, stamps.__next__, upsert=True)
    assert result.upserted_id == 7
    assert coll.get(7)[1] == {"_id": 7, "k": 1, "z": 1}  # type: ignore[index]
    assert crud.delete(coll, {"v": {"$gt": 5}}, stamps.__next__) == 2
    assert crud.find(coll, {}, sort={"_id": -1}, projection={"_id": 0, "v": 1}) == [{}, {"v": 0}]


def test_ttl_expiry() -> None:
    coll, stamps = filled(0)
    coll.create_index(
        IndexSpec.from_document({"key": {"at": 1}, "name": "at_1", "expireAfterSeconds": 60})
    )
    start = datetime.datetime(2024, 1, 1)
    coll.insert({"_id": 1, "at": start}, next(stamps))
    coll.insert({"_id": 2, "at": start + datetime.timedelta(seconds=100)}, next(stamps))
    coll.insert({"_id": 3, "at": "not a date"}, next(stamps))
    assert coll.expired(start + datetime.timedelta(seconds=90)) == [coll.get(1)[0]]  # type: ignore[index]


def _rid(coll: Collection, doc_id: int) -> int:
    found = coll.get(doc_id)
    assert found is not None
    return found[0]


def test_ttl_expiry_takes_the_earliest_date_of_an_array_and_dotted_paths() -> None:
    coll, stamps = filled(0)
    coll.create_index(
        IndexSpec.from_document({"key": {"a.at": 1}, "name": "a_1", "expireAfterSeconds": 60})
    )
    start = datetime.datetime(2024, 1, 1)
    later = start + datetime.timedelta(seconds=100)
    coll.insert({"_id": 1, "a": {"at": [later, start, "x"]}}, next(stamps))
    coll.insert({"_id": 2, "a": [{"at": later}, {"at": start}]}, next(stamps))
    coll.insert({"_id": 3, "a": {"at": [later, 7]}}, next(stamps))
    coll.insert({"_id": 4, "a": {"at": [1, "s", None]}}, next(stamps))  # no date: never
    coll.insert({"_id": 5, "a": {}}, next(stamps))
    assert coll.expired(start + datetime.timedelta(seconds=60)) == [_rid(coll, 1), _rid(coll, 2)]
    assert coll.expired(start + datetime.timedelta(seconds=59)) == []
    # Far in the future, still only the documents holding a date.
    assert coll.expired(start + datetime.timedelta(days=3650)) == [
        _rid(coll, 1),
        _rid(coll, 2),
        _rid(coll, 3),
    ]


def test_ttl_expiry_skips_what_a_partial_index_leaves_out_and_compound_indexes() -> None:
    coll, stamps = filled(0)
    coll.create_index(
        IndexSpec.from_document(
            {
                "key": {"at": 1},
                "name": "at_1",
                "expireAfterSeconds": 0,
                "partialFilterExpression": {"kind": "session"},
            }
        )
    )
    coll.create_index(
        IndexSpec.from_document(
            {"key": {"other": 1, "x": 1}, "name": "other_1_x_1", "expireAfterSeconds": 0}
        )
    )
    start = datetime.datetime(2024, 1, 1)
    coll.insert({"_id": 1, "at": start, "kind": "session"}, next(stamps))
    coll.insert({"_id": 2, "at": start, "kind": "keep"}, next(stamps))
    coll.insert({"_id": 3, "other": start, "x": 1}, next(stamps))
    assert coll.expired(start + datetime.timedelta(seconds=1)) == [_rid(coll, 1)]


def test_wildcard_indexes_are_refused() -> None:
    coll, _ = filled(0)
    with pytest.raises(CommandError) as caught:
        coll.create_index(IndexSpec.from_document({"key": {"$**": 1}, "name": "x"}))
    assert caught.value.code == 238


def test_index_kinds_for_later_phases_are_refused() -> None:
    # Text and geo indexes are kinds of their own (test_engine_text, test_engine_geo);
    # wildcard and geoHaystack indexes are not there yet.
    coll, _ = filled(0)
    for pattern in ({"$**": 1}, {"p": "geoHaystack"}):
        with pytest.raises(CommandError) as caught:
            coll.create_index(IndexSpec.from_document({"key": pattern, "name": "x"}))
        assert caught.value.code == 238
