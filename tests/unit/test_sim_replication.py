"""Replication in the simulated replica set, counted rather than timed: a secondary
reads the data as of the optime it has applied (nothing is replayed), the observable
position moves without touching documents, a read in the past examines the records of
the collection whatever the length of its history, and the oplog keeps only what some
member has not applied."""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest
from bson import ObjectId

from mongocore.sim import ReplicaSet, replication
from mongocore.sim.engine import store as engine_store
from mongocore.sim.store import DataStore
from tests.unit.sim_wire import connect

SECONDARY_OK = {"$readPreference": {"mode": "secondaryPreferred"}}


class FakeClock:
    """Wall-clock time under the test's control, for lag."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class VersionCounts:
    """How many versions reads in the past examined (the engine's version chains)."""

    def __init__(self) -> None:
        self.examined = 0


@pytest.fixture
def versions(monkeypatch: pytest.MonkeyPatch) -> VersionCounts:
    counted = VersionCounts()
    original = engine_store.Collection._version

    def counting(collection: Any, rid: int, as_of: Any) -> Any:
        chain = collection._history.get(rid)
        if chain is None:
            counted.examined += 1
        else:
            newer = sum(1 for stamp, _ in chain if stamp is not None and stamp > as_of)
            counted.examined += newer + 1
        return original(collection, rid, as_of)

    monkeypatch.setattr(engine_store.Collection, "_version", counting)
    return counted


def _secondary_documents(rs: ReplicaSet, coll: str = "c") -> list[dict[str, Any]]:
    with connect(rs.members[1]) as client:
        reply = client.command(
            "db", {"find": coll, "sort": {"_id": 1}, "batchSize": 100_000, **SECONDARY_OK}
        )
    return list(reply["cursor"]["firstBatch"])


def _primary_documents(rs: ReplicaSet, coll: str = "c") -> list[dict[str, Any]]:
    with connect(rs.members[0]) as client:
        reply = client.command("db", {"find": coll, "sort": {"_id": 1}, "batchSize": 100_000})
    return list(reply["cursor"]["firstBatch"])


def _lagging_read_work(history: int, versions: VersionCounts) -> int:
    """Versions a lagging secondary's read examines, after ``history`` writes it has
    applied and 60 it has not, over a collection of 100 documents."""
    clock = FakeClock()
    with ReplicaSet(2, lag=[0.0, 10.0], election_delay=0.02, clock=clock) as rs:
        with connect(rs.members[0]) as client:
            client.command("db", {"insert": "c", "documents": [{"_id": n} for n in range(100)]})
            for n in range(history):
                client.command(
                    "db",
                    {"update": "c", "updates": [{"q": {"_id": n % 100}, "u": {"$inc": {"v": 1}}}]},
                )
            clock.now += 10.0
            applied = _primary_documents(rs)
            for n in range(20):
                client.command("db", {"insert": "c", "documents": [{"_id": 100 + n}]})
                client.command(
                    "db", {"update": "c", "updates": [{"q": {"_id": n}, "u": {"$set": {"v": -1}}}]}
                )
                client.command(
                    "db", {"delete": "c", "deletes": [{"q": {"_id": 99 - n}, "limit": 1}]}
                )
        before = versions.examined
        assert _secondary_documents(rs) == applied  # as of what it applied
        examined = versions.examined - before
        clock.now += 10.0
        assert _secondary_documents(rs) == _primary_documents(rs)
        return examined


def test_a_lagging_read_costs_the_same_whatever_the_history(versions: VersionCounts) -> None:
    short = _lagging_read_work(50, versions)
    long = _lagging_read_work(3_000, versions)
    assert short == long
    # Each of the 120 records once, and the 60 versions written since its position.
    assert short <= 120 + 60


def test_documents_with_any_id_replicate_as_the_primary_stores_them() -> None:
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone.utc)
    documents: list[dict[str, Any]] = [
        {"_id": {"a": 1, "b": [1, 2]}, "v": 1},
        {"_id": {"a": 2}, "v": 2},
        {"_id": None, "when": when, "nested": {"list": [{"x": 1}]}},
        {"_id": "s", "v": 3},
    ]
    with ReplicaSet(2, election_delay=0.02) as rs:
        with connect(rs.members[0]) as client:
            client.command("db", {"insert": "c", "documents": documents})
            updates = [{"q": {"_id": {"a": 1, "b": [1, 2]}}, "u": {"$set": {"v": 10}}}]
            client.command("db", {"update": "c", "updates": updates})
            client.command("db", {"delete": "c", "deletes": [{"q": {"_id": {"a": 2}}, "limit": 1}]})
        expected = _primary_documents(rs)
        assert len(expected) == 3
        assert _secondary_documents(rs) == expected


def test_hello_reports_the_lagging_position_and_reads_follow_it() -> None:
    clock = FakeClock()
    with ReplicaSet(2, lag=[0.0, 10.0], election_delay=0.02, clock=clock) as rs:
        with connect(rs.members[0]) as client:
            client.command("db", {"insert": "c", "documents": [{"_id": n} for n in range(500)]})
            written = client.command("admin", {"hello": 1})["lastWrite"]["opTime"]
        with connect(rs.members[1]) as client:
            behind = client.command("admin", {"hello": 1})["lastWrite"]["opTime"]
            before = client.command("db", {"count": "c", **SECONDARY_OK})["n"]
            clock.now += 10.0
            caught_up = client.command("admin", {"hello": 1})["lastWrite"]["opTime"]
        assert behind["ts"] < written["ts"] and caught_up == written
        assert before == 0  # the collection did not exist yet at its position
        assert _secondary_documents(rs) == [{"_id": n} for n in range(500)]


def test_the_oplog_keeps_only_what_a_member_has_not_applied() -> None:
    clock = FakeClock()
    with ReplicaSet(3, lag=[0.0, 0.0, 60.0], election_delay=0.02, clock=clock) as rs:
        with connect(rs.members[0]) as client:
            for n in range(300):
                client.command("db", {"insert": "c", "documents": [{"_id": n}]})
            # The lagging member holds back exactly the last minute of writes.
            assert rs.store.oplog_kept >= 300
            clock.now += 60.0
            client.command("db", {"insert": "c", "documents": [{"_id": "last"}]})
            # Every member's position moved with the write: only it may be kept.
            assert rs.store.oplog_kept <= 1
        rs.members[2].lag = 0.0
        for n in range(10_000):
            with rs.cond:
                rs.store.insert("db", f"d{n // 100}", {"_id": n})
        assert rs.store.oplog_kept < 4_200


def test_a_rolled_back_statement_never_reaches_a_secondary() -> None:
    with ReplicaSet(2, election_delay=0.02) as rs:
        lsid = {"id": ObjectId().binary}
        with connect(rs.members[0]) as client:
            client.command("db", {"insert": "c", "documents": [{"_id": 0}]})
            client.command(
                "admin",
                {
                    "configureFailPoint": "onPrimaryTransactionalWrite",
                    "mode": {"times": 1},
                    "data": {"closeConnection": False, "failBeforeCommitExceptionCode": 1},
                },
            )
            reply = client.command(
                "db",
                {"insert": "c", "documents": [{"_id": 1}], "lsid": lsid, "txnNumber": 1},
            )
            assert reply["writeErrors"][0]["code"] == 1
            client.command("db", {"insert": "c", "documents": [{"_id": 2}]})
        assert _secondary_documents(rs) == _primary_documents(rs) == [{"_id": 0}, {"_id": 2}]


def test_a_rollback_takes_back_a_position_counted_in_between() -> None:
    clock = FakeClock()
    store = DataStore(clock)
    lock = threading.Condition(threading.RLock())
    with lock:
        view = replication.new_view(store)
        store.insert("db", "c", {"_id": 1})
        checkpoint = store.checkpoint("db", "c")
        store.insert("db", "c", {"_id": 2})
        view.advance(clock())  # its position asked for before the statement failed
        assert view.applied == store.oplog_end
        store.rollback(checkpoint)
        assert view.applied == store.oplog_end == checkpoint.oplog_end
        assert view.applied_optime == store.last_optime == checkpoint.last_optime
        store.insert("db", "c", {"_id": 3})
        view.advance(clock())
        assert [doc["_id"] for doc in view.data(clock()).documents("db", "c")] == [1, 3]
        assert view.applied == store.oplog_end


def test_a_member_that_was_primary_keeps_every_write_it_made() -> None:
    clock = FakeClock()
    with ReplicaSet(2, lag=10.0, election_delay=0.02, clock=clock) as rs:
        first, second = rs.members
        with connect(first) as client:
            client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
            written = client.command("admin", {"hello": 1})["lastWrite"]["opTime"]
        rs.elect(second)
        # The old primary lags from where it stood, not from before its own writes.
        with connect(first) as client:
            assert client.command("admin", {"hello": 1})["lastWrite"]["opTime"] == written
            batch = client.command("db", {"find": "c", **SECONDARY_OK})["cursor"]["firstBatch"]
        assert batch == [{"_id": 1}]


def test_concurrent_writes_and_secondary_reads_end_with_equal_copies() -> None:
    with ReplicaSet(3, election_delay=0.02) as rs:
        errors: list[BaseException] = []
        done = threading.Event()

        def write(worker: int) -> None:
            try:
                with connect(rs.members[0]) as client:
                    for n in range(150):
                        doc_id = f"{worker}-{n}"
                        client.command("db", {"insert": "c", "documents": [{"_id": doc_id}]})
                        client.command(
                            "db",
                            {"update": "c", "updates": [{"q": {"_id": doc_id}, "u": {"v": n}}]},
                        )
                        if n % 3 == 0:
                            client.command(
                                "db",
                                {"delete": "c", "deletes": [{"q": {"_id": doc_id}, "limit": 1}]},
                            )
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        def read(member: int) -> None:
            try:
                with connect(rs.members[member]) as client:
                    while not done.is_set():
                        client.command("db", {"count": "c", **SECONDARY_OK})
                        client.command("admin", {"hello": 1})
            except BaseException as exc:
                errors.append(exc)

        writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
        readers = [threading.Thread(target=read, args=(m,)) for m in (1, 2)]
        for thread in [*writers, *readers]:
            thread.start()
        for thread in writers:
            thread.join(timeout=120)
        done.set()
        for thread in readers:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in [*writers, *readers])
        assert errors == []
        expected = _primary_documents(rs)
        assert len(expected) == 4 * 100
        assert _secondary_documents(rs) == expected
        with connect(rs.members[2]) as client:
            reply = client.command(
                "db", {"find": "c", "sort": {"_id": 1}, "batchSize": 1_000, **SECONDARY_OK}
            )
        assert reply["cursor"]["firstBatch"] == expected
