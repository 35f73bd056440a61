"""Replication in the simulated replica set at scale, seen by pymongo: an election after
10,000 writes applies none of them and takes its delay, a member catching up on a
long backlog still answers hello and ping at once, and its reads then see every write
(a committed transaction's too).

Counts carry the assertions; the one deadline (an election within its delay plus ten
seconds) is far above what the replicated writes cost."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("mongomock")

from pymongo import MongoClient  # noqa: E402

from mongocore.sim import Member, ReplicaSet, replication  # noqa: E402
from mongocore.sim.store import OplogEntry  # noqa: E402

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


@pytest.fixture
def applied(monkeypatch: pytest.MonkeyPatch) -> list[OplogEntry]:
    """Every oplog entry applied to a member's copy, in order."""
    entries: list[OplogEntry] = []
    apply_entry = replication.apply_entry

    def recording(client: Any, entry: OplogEntry) -> None:
        entries.append(entry)
        apply_entry(client, entry)

    monkeypatch.setattr(replication, "apply_entry", recording)
    return entries


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


def test_an_election_after_10_000_writes_applies_none_of_them(
    lagging_set: tuple[ReplicaSet, FakeClock], applied: list[OplogEntry]
) -> None:
    rs, clock = lagging_set
    client: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **OPTIONS)
    try:
        _write(client, 100, 100)
        old = rs.primary
        assert old is not None
        # Every write is now due on the two lagging members; neither has applied one.
        clock.now += 3600.0
        before = len(applied)
        rs.step_down(60)
        new = rs.wait_for_primary(timeout=ELECTION_DELAY + 10.0)
        assert new is not old
        # Choosing the most up-to-date member read positions, not documents.
        assert len(applied) == before
        # The new primary has every write; the other lagging member catches up when read.
        assert sum(client.db[f"c{c}"].count_documents({}) for c in range(100)) == 10_000
        other = next(m for m in rs.members if m not in (old, new))
        secondary = _direct(other, readPreference="secondaryPreferred")
        try:
            counts = [secondary.db[f"c{c}"].count_documents({}) for c in range(100)]
            assert counts == [100] * 100
            assert secondary.db.c99.find_one({"_id": 99}) == {"_id": 99, "c": 99}
        finally:
            secondary.close()
        assert len(applied) - before >= 10_000
    finally:
        client.close()


def test_hello_and_ping_answer_while_a_member_catches_up(
    lagging_set: tuple[ReplicaSet, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    rs, clock = lagging_set
    client: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **OPTIONS)
    lagging = rs.members[1]
    clients = [_direct(member) for member in rs.members]
    reader = _direct(lagging, readPreference="secondaryPreferred")
    halfway = threading.Event()
    resume = threading.Event()
    calls = 0
    apply_entry = replication.apply_entry

    def stalling(copy: Any, entry: OplogEntry) -> None:
        # The catch-up stops halfway through, as a long one would be at any moment.
        nonlocal calls
        calls += 1
        if calls == 1_000:
            halfway.set()
            resume.wait(DEADLINE)
        apply_entry(copy, entry)

    results: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            results.append(sum(reader.db[f"c{c}"].count_documents({}) for c in range(4)))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=read)
    try:
        _write(client, 4, 500)
        for each in clients:
            each.admin.command("ping")  # connected before the catch-up starts
        clock.now += 3600.0
        monkeypatch.setattr(replication, "apply_entry", stalling)
        thread.start()
        assert halfway.wait(DEADLINE)
        for member, each in zip(rs.members, clients):
            hello = each.admin.command("hello")
            assert hello["me"] == member.host
            assert each.admin.command("ping")["ok"] == 1.0
        # The lagging member reports the position it has reached, though its copy has not.
        last_write = clients[1].admin.command("hello")["lastWrite"]["opTime"]
        assert last_write == clients[0].admin.command("hello")["lastWrite"]["opTime"]
        assert calls == 1_000 and thread.is_alive()
    finally:
        resume.set()
        thread.join(DEADLINE)
        for each in [client, reader, *clients]:
            each.close()
    assert not thread.is_alive()
    assert errors == []
    assert results == [2_000]


def test_a_committed_transaction_reaches_a_secondary_as_one_entry(
    applied: list[OplogEntry],
) -> None:
    with ReplicaSet(2, election_delay=ELECTION_DELAY) as rs:
        client: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **OPTIONS)
        secondary = _direct(rs.members[1], readPreference="secondaryPreferred")
        try:
            client.db.c.insert_one({"_id": 0})
            with client.start_session() as session, session.start_transaction():
                client.db.c.insert_one({"_id": 1}, session=session)
                client.db.c.update_one({"_id": 0}, {"$set": {"x": 1}}, session=session)
            assert list(secondary.db.c.find().sort("_id")) == [{"_id": 0, "x": 1}, {"_id": 1}]
        finally:
            secondary.close()
            client.close()
    commits = [e for e in applied if e.command is not None and "applyOps" in e.command]
    # Applied once by each member's copy; its operations then one by one.
    assert len(commits) == 2
