"""Replication in the simulated replica set at scale, seen by pymongo: a secondary
reads as of the optime it has applied, so an election after 10,000 writes examines no
document and takes its delay, a lagging member sees a long backlog of writes exactly
when its lag has passed (and not before), and a committed transaction reaches it all
at once, as one oplog entry.

Counts carry the assertions; the one deadline (an election within its delay plus ten
seconds) is far above what the writes cost."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")

from pymongo import MongoClient  # noqa: E402

from mongocore.sim import Member, ReplicaSet  # noqa: E402
from mongocore.sim.engine import store as engine_store  # noqa: E402

DEADLINE = 30.0
ELECTION_DELAY = 0.2
OPTIONS: dict[str, Any] = {
    "heartbeatFrequencyMS": 500,
    "serverSelectionTimeoutMS": 20_000,
    "socketTimeoutMS": 20_000,
}


class FakeClock:
    """Wall-clock time under the test's control: the lag ends when the test says so."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Scans:
    """How many records the engine's collections yielded to scans."""

    def __init__(self) -> None:
        self.records = 0


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Scans:
    counted = Scans()
    original = engine_store.Collection.scan

    def scan(collection: Any, as_of: Any = None) -> Iterator[Any]:
        for record in original(collection, as_of):
            counted.records += 1
            yield record

    monkeypatch.setattr(engine_store.Collection, "scan", scan)
    return counted


def _direct(member: Member, **options: Any) -> MongoClient[dict[str, Any]]:
    return MongoClient(member.address[0], member.port, directConnection=True, **OPTIONS, **options)


def _write(client: MongoClient[dict[str, Any]], collections: int, per_collection: int) -> None:
    # Many small collections: the primary's own writes stay cheap, and every document
    # is one oplog entry a lagging member has to apply.
    for c in range(collections):
        docs = [{"_id": n, "c": c} for n in range(per_collection)]
        client.db[f"c{c}"].insert_many(docs)


@pytest.fixture
def lagging_set() -> Iterator[tuple[ReplicaSet, FakeClock]]:
    clock = FakeClock()
    with ReplicaSet(3, lag=[0.0, 3600.0, 3600.0], election_delay=ELECTION_DELAY, clock=clock) as rs:
        yield rs, clock


def test_an_election_after_10_000_writes_examines_no_document(
    lagging_set: tuple[ReplicaSet, FakeClock], scans: Scans
) -> None:
    rs, clock = lagging_set
    client: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **OPTIONS)
    try:
        _write(client, 100, 100)
        old = rs.primary
        assert old is not None
        # Every write is now due on the two lagging members.
        clock.now += 3600.0
        before = scans.records
        rs.step_down(60)
        new = rs.wait_for_primary(timeout=ELECTION_DELAY + 10.0)
        assert new is not old
        # Choosing the most up-to-date member read positions, not documents.
        assert scans.records == before
        # The new primary has every write; so does the other lagging member.
        assert sum(client.db[f"c{c}"].count_documents({}) for c in range(100)) == 10_000
        other = next(m for m in rs.members if m not in (old, new))
        secondary = _direct(other, readPreference="secondaryPreferred")
        try:
            counts = [secondary.db[f"c{c}"].count_documents({}) for c in range(100)]
            assert counts == [100] * 100
            assert secondary.db.c99.find_one({"_id": 99}) == {"_id": 99, "c": 99}
        finally:
            secondary.close()
    finally:
        client.close()


def test_a_lagging_member_sees_a_backlog_exactly_when_its_lag_has_passed(
    lagging_set: tuple[ReplicaSet, FakeClock],
) -> None:
    rs, clock = lagging_set
    client: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **OPTIONS)
    reader = _direct(rs.members[1], readPreference="secondaryPreferred")
    try:
        _write(client, 4, 500)
        assert sum(reader.db[f"c{c}"].count_documents({}) for c in range(4)) == 0
        assert reader.db.list_collection_names() == []
        clock.now += 1800.0
        assert sum(reader.db[f"c{c}"].count_documents({}) for c in range(4)) == 0
        clock.now += 1800.0
        assert sum(reader.db[f"c{c}"].count_documents({}) for c in range(4)) == 2_000
        assert sorted(reader.db.list_collection_names()) == ["c0", "c1", "c2", "c3"]
        # Its position is the primary's now.
        hellos = [_direct(m) for m in rs.members[:2]]
        try:
            times = [h.admin.command("hello")["lastWrite"]["opTime"] for h in hellos]
        finally:
            for each in hellos:
                each.close()
        assert times[0] == times[1]
    finally:
        reader.close()
        client.close()


def test_a_committed_transaction_reaches_a_secondary_as_one_entry() -> None:
    clock = FakeClock()
    with ReplicaSet(2, lag=[0.0, 10.0], election_delay=ELECTION_DELAY, clock=clock) as rs:
        client: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **OPTIONS)
        secondary = _direct(rs.members[1], readPreference="secondaryPreferred")
        try:
            client.db.c.insert_one({"_id": 0})
            clock.now += 10.0
            with client.start_session() as session, session.start_transaction():
                client.db.c.insert_one({"_id": 1}, session=session)
                client.db.c.update_one({"_id": 0}, {"$set": {"x": 1}}, session=session)
            assert list(secondary.db.c.find().sort("_id")) == [{"_id": 0}]
            clock.now += 10.0
            assert list(secondary.db.c.find().sort("_id")) == [{"_id": 0, "x": 1}, {"_id": 1}]
            oplog = secondary.local["oplog.rs"]
            commits = list(oplog.find({"o.applyOps": {"$exists": True}}))
            assert len(commits) == 1
            assert len(commits[0]["o"]["applyOps"]) == 2
        finally:
            secondary.close()
            client.close()
