"""The simulator's change streams below the wire: resume tokens, update descriptions and
the change log fed by the store's oplog."""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("pyuca")

from bson import Int64, Timestamp
from hypothesis import given
from hypothesis import strategies as st

from mongocore.sim.change_events import Scope, StreamOptions, build_event
from mongocore.sim.change_log import ChangeLog, ChangeRecord, attach_change_log
from mongocore.sim.change_streams import ChangeStream
from mongocore.sim.codes import CommandError
from mongocore.sim.resume_token import Position, after, at, parse_token
from mongocore.sim.store import DataStore, OplogEntry, OpTime
from mongocore.sim.update_description import describe_update

positions = st.builds(
    Position,
    time=st.integers(0, 2**32 - 1),
    inc=st.integers(0, 2**32 - 1),
    event=st.booleans(),
    op_index=st.integers(0, 2**32 - 1),
    invalidate=st.booleans(),
)


# -- resume tokens --------------------------------------------------------------------------


@given(positions)
def test_a_token_names_its_position(position: Position) -> None:
    assert parse_token(position.token()) == position


@given(positions, positions)
def test_tokens_sort_as_their_positions(a: Position, b: Position) -> None:
    assert (a.token()["_data"] < b.token()["_data"]) == (a < b)


def test_a_high_water_mark_sits_between_timestamps() -> None:
    event = Position(10, 5, True)
    assert at(Timestamp(10, 5)) < event < after(Timestamp(10, 5)) < Position(10, 6, True)
    assert after(Timestamp(10, 2**32 - 1)) == Position(11, 0, False)


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ({"_data": "not hex"}, 9),
        ({"_data": ""}, 40649),
        ({"_data": 5}, 40647),
        ("82", 40647),
        ({"_data": "8200"}, 50811),
        ({"_data": "83" + "0" * 28}, 50811),
        ({"_data": "82" + "0" * 16 + "11" + "0" * 10}, 50811),
    ],
)
def test_a_bad_token_gets_the_servers_error(token: Any, code: int) -> None:
    with pytest.raises(CommandError) as caught:
        parse_token(token)
    assert caught.value.code == code


# -- update descriptions --------------------------------------------------------------------


def _describe(pre: Any, post: Any, update: Any, disambiguate: bool = False) -> Any:
    return describe_update(pre, post, update, disambiguate=disambiguate)


def test_operators_report_the_paths_they_name() -> None:
    pre = {"_id": 1, "a": {"b": 1, "c": 1}, "gone": 1, "n": 1}
    post = {"_id": 1, "a": {"b": 2, "c": 1}, "n": 1, "new": {"deep": {"x": 1}}}
    update = {"$set": {"a.b": 2, "n": 1, "new.deep.x": 1}, "$unset": {"gone": ""}}
    assert _describe(pre, post, update) == {
        "updatedFields": {"a.b": 2, "new": {"deep": {"x": 1}}},
        "removedFields": ["gone"],
        "truncatedArrays": [],
    }


def test_setting_a_whole_document_reports_it_whole() -> None:
    pre = {"_id": 1, "a": {"b": 1, "c": 1}}
    post = {"_id": 1, "a": {"b": 1, "c": 2}}
    assert _describe(pre, post, {"$set": {"a": {"b": 1, "c": 2}}})["updatedFields"] == {
        "a": {"b": 1, "c": 2}
    }


def test_array_operators() -> None:
    pre = {"_id": 1, "arr": [1, 2], "pop": [1, 2, 3]}
    post = {"_id": 1, "arr": [1, 2, 3, 4], "pop": [1, 2]}
    description = _describe(pre, post, {"$push": {"arr": {"$each": [3, 4]}}, "$pop": {"pop": 1}})
    assert description["updatedFields"] == {"arr.2": 3, "arr.3": 4, "pop": [1, 2]}


def test_rename_and_positional_paths() -> None:
    pre = {"_id": 1, "old": 1, "items": [{"q": 1}, {"q": 2}]}
    post = {"_id": 1, "new": 1, "items": [{"q": 1}, {"q": 5}]}
    update = {"$rename": {"old": "new"}, "$set": {"items.$[e].q": 5}}
    assert _describe(pre, post, update) == {
        "updatedFields": {"items.1.q": 5, "new": 1},
        "removedFields": ["old"],
        "truncatedArrays": [],
    }


def test_a_pipeline_update_is_compared_field_by_field() -> None:
    pre = {"_id": 1, "a": {"b": 1, "c": 1}, "arr": [1, {"x": 1}, 3], "drop": 0}
    post = {"_id": 1, "a": {"b": 1, "c": 2}, "arr": [1, {"x": 2}], "add": 1}
    assert _describe(pre, post, [{"$set": {}}]) == {
        "updatedFields": {"add": 1, "a.c": 2, "arr.1.x": 2},
        "removedFields": ["drop"],
        "truncatedArrays": [{"field": "arr", "newSize": 2}],
    }


def test_a_type_change_is_a_change() -> None:
    assert _describe({"_id": 1, "v": 1}, {"_id": 1, "v": 1.0}, {"$set": {"v": 1.0}})[
        "updatedFields"
    ] == {"v": 1.0}


def test_ambiguous_paths_are_disambiguated() -> None:
    pre = {"_id": 1, "a": {"1": 1}, "arr": [{"1": 1}, 2], "d": {"x.y": 1}, "0": {"k": 1}}
    post = {"_id": 1, "a": {"1": 2}, "arr": [{"1": 2}, 3], "d": {"x.y": 2}, "0": {"k": 2}}
    description = _describe(pre, post, [{"$set": {}}], disambiguate=True)
    assert description["disambiguatedPaths"] == {
        "a.1": ["a", "1"],
        "arr.0.1": ["arr", 0, "1"],
        "d.x.y": ["d", "x.y"],
    }
    assert "arr.1" in description["updatedFields"]  # an array index alone is unambiguous
    assert "0.k" in description["updatedFields"]  # so is a numeric first field


# -- the change log -------------------------------------------------------------------------


def _log() -> tuple[DataStore, ChangeLog]:
    clock = iter(range(1_000, 1_000_000))
    store = DataStore(lambda: float(next(clock)))
    return store, attach_change_log(store, threading.Condition(threading.RLock()))


def _records(log: ChangeLog) -> list[ChangeRecord]:
    return list(log.after(Position(0, 0, False)))


def test_the_store_feeds_one_record_per_change() -> None:
    store, log = _log()
    store.create_collection("d", "c")
    store.insert("d", "c", {"_id": 1, "x": 1})
    store.update("d", "c", {"_id": 1}, {"$set": {"x": 2}})
    store.update("d", "c", {"_id": 1}, {"x": 3})
    store.update("d", "c", {"_id": 2}, {"$set": {"x": 1}}, upsert=True)
    store.delete("d", "c", {"_id": 1}, 1)
    records = _records(log)
    assert [r.op for r in records] == ["create", "insert", "update", "replace", "insert", "delete"]
    update, replace, delete = records[2], records[3], records[5]
    assert update.pre == {"_id": 1, "x": 1} and update.post == {"_id": 1, "x": 2}
    assert replace.pre == {"_id": 1, "x": 2}
    assert delete.pre == {"_id": 1, "x": 3} and delete.key == {"_id": 1}
    assert [r.position for r in records] == sorted(r.position for r in records)


def test_a_transaction_is_unwound_in_order_with_its_session() -> None:
    _, log = _log()
    lsid = {"id": b"session"}
    command = {
        "applyOps": [
            {"op": "c", "ns": "d.$cmd", "o": {"create": "c"}},
            {"op": "i", "ns": "d.c", "o": {"_id": 1, "v": 1}},
            {"op": "u", "ns": "d.c", "o": {"_id": 1, "v": 2}, "o2": {"_id": 1}},
            {"op": "d", "ns": "d.c", "o": {"_id": 1}},
        ],
        "lsid": lsid,
        "txnNumber": Int64(7),
    }
    optime = OpTime(Timestamp(50, 1), 1, 50.0)
    log.appended(OplogEntry(optime, "c", "admin", "$cmd", command=command), 0)
    records = _records(log)
    assert [r.op for r in records] == ["create", "insert", "update", "delete"]
    assert [r.position.op_index for r in records] == [0, 1, 2, 3]
    assert {r.position.ts for r in records} == {Timestamp(50, 1)}
    assert all(r.txn == {"txnNumber": Int64(7), "lsid": lsid} for r in records)
    event = build_event(records[2], StreamOptions(), lambda *_: None)
    assert event["txnNumber"] == 7 and event["lsid"] == lsid
    assert event["updateDescription"]["updatedFields"] == {"v": 2}


def test_trimmed_history_is_lost_for_earlier_positions_only() -> None:
    store, log = _log()
    for n in range(5):
        store.insert("d", "c", {"_id": n})
    records = _records(log)[1:]  # after the implicit create
    log.trim(2)
    assert [r.key for r in _records(log)] == [{"_id": 3}, {"_id": 4}]
    assert log.lost(records[1].position)  # resuming after _id 1 needs _id 2
    assert not log.lost(records[2].position)
    assert log.find(records[0].position) is None
    assert log.find(records[3].position) == records[3]


def test_a_rolled_back_write_leaves_no_record() -> None:
    store, log = _log()
    store.insert("d", "c", {"_id": 1, "v": 1})
    checkpoint = store.checkpoint("d", "c")
    store.update("d", "c", {"_id": 1}, {"$set": {"v": 2}})
    store.rollback(checkpoint)
    store.update("d", "c", {"_id": 1}, {"$set": {"v": 3}})
    records = _records(log)
    assert [r.op for r in records] == ["create", "insert", "update"]
    assert records[-1].pre == {"_id": 1, "v": 1}


def test_scopes_and_invalidation() -> None:
    store, log = _log()
    store.create_collection("d", "c")
    store.insert("d", "c", {"_id": 1})
    store.insert("e", "c", {"_id": 1})
    store.rename_collection("d.c", "d.r", drop_target=False)
    store.drop_database("d")
    records = _records(log)
    collection, database, everything = Scope("d", "c"), Scope("d"), Scope()
    rename = next(r for r in records if r.op == "rename")
    drop_database = next(r for r in records if r.op == "dropDatabase")
    assert collection.covers(rename, False) and collection.invalidated_by(rename)
    assert Scope("d", "r").invalidated_by(rename)
    assert database.covers(rename, False) and not database.invalidated_by(rename)
    assert database.invalidated_by(drop_database) and not everything.invalidated_by(drop_database)
    assert not collection.covers(records[0], False)  # create: an expanded event
    assert collection.covers(records[0], True)
    assert [r.db for r in records if everything.covers(r, False)] == ["d", "e", "d", "d", "d"]


def test_a_stream_that_falls_behind_the_kept_history_fails() -> None:
    store, log = _log()
    store.insert("d", "c", {"_id": 0})
    stream = ChangeStream(
        log, Scope("d", "c"), StreamOptions(), pipeline=[], position=Position(0, 0, False)
    )
    assert [e["documentKey"] for e in stream.read(1, store.latest)] == [{"_id": 0}]
    assert stream.read(None, store.latest) == []
    store.insert("d", "c", {"_id": 1})
    store.insert("d", "c", {"_id": 2})
    log.trim(1)
    with pytest.raises(CommandError) as caught:
        stream.read(None, store.latest)
    assert caught.value.code == 286
