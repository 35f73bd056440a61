"""The TTL monitor of the simulated replica set, through pymongo (an independent
client): a pass on the primary at most every ttlMonitorSleepSecs of the set's clock
deletes what a TTL index expired, and the deletes replicate as any other (the
secondaries read them, change streams see delete events, serverStatus counts them).
The set runs on a clock of the test's own, so the test decides when a pass is due."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")

from pymongo import MongoClient
from pymongo.errors import OperationFailure

from mongocore.sim import ReplicaSet
from tests.integration.sim_client import FAST

Client = MongoClient[dict[str, Any]]


class Clock:
    """The set's clock: the wall clock's time at the start, then moved by the test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = time.time()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def at(self, seconds: float = 0.0) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self() + seconds, tz=datetime.timezone.utc)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def rs(clock: Clock) -> Iterator[ReplicaSet]:
    with ReplicaSet(3, election_delay=0.05, clock=clock) as replica_set:
        replica_set.wait_for_primary()
        yield replica_set


def _ids(client: Client) -> list[Any]:
    return sorted(doc["_id"] for doc in client.ttl.c.find({}, {"_id": 1}))


def _member_ids(rs: ReplicaSet) -> dict[str, list[Any]]:
    """Each data-bearing member's documents, read from it directly."""
    found = {}
    for member in [rs.primary, *rs.secondaries]:
        assert member is not None
        with MongoClient(
            member.host, directConnection=True, readPreference="secondaryPreferred", **FAST
        ) as direct:
            found[member.host] = _ids(direct)
    return found


def _ttl_metrics(client: Client) -> dict[str, Any]:
    return dict(client.admin.command("serverStatus")["metrics"]["ttl"])


def test_expired_documents_are_deleted_on_the_primary_and_replicated(
    rs: ReplicaSet, clock: Clock
) -> None:
    with MongoClient(rs.uri, w=3, **FAST) as client:
        coll = client.ttl.c
        coll.create_index("at", expireAfterSeconds=60)
        coll.insert_many(
            [
                {"_id": "old", "at": clock.at(-3600)},
                {"_id": "old-array", "at": [clock.at(3600), clock.at(-3600)]},
                {"_id": "fresh", "at": clock.at(3600)},
                {"_id": "string", "at": "2000-01-01"},
                {"_id": "number", "at": 0},
                {"_id": "missing"},
            ]
        )
        kept = ["fresh", "missing", "number", "string"]
        everything = sorted([*kept, "old", "old-array"])
        with coll.watch(max_await_time_ms=100) as stream:
            # Before ttlMonitorSleepSecs (60) have passed, no pass runs.
            clock.advance(30)
            assert _ids(client) == everything
            assert _ttl_metrics(client) == {"deletedDocuments": 0, "passes": 0}
            clock.advance(31)
            assert _ids(client) == kept  # the command ran the pass first
            assert _ttl_metrics(client) == {"deletedDocuments": 2, "passes": 1}
            deleted = [stream.next(), stream.next()]
        assert sorted(event["documentKey"]["_id"] for event in deleted) == ["old", "old-array"]
        assert {event["operationType"] for event in deleted} == {"delete"}
        # The secondaries (without lag, they have applied every entry) read the deletes
        # the primary wrote.
        found = _member_ids(rs)
        assert found == {host: kept for host in found} and len(found) == 3
        entries = list(client.local["oplog.rs"].find({"op": "d", "ns": "ttl.c"}))
        assert sorted(entry["o"]["_id"] for entry in entries) == ["old", "old-array"]
        # A pass before "fresh" expires (an hour after its date) leaves it; a pass after
        # deletes it; the documents without a date stay.
        clock.advance(3590)
        assert _ids(client) == kept
        assert _ttl_metrics(client) == {"deletedDocuments": 2, "passes": 2}
        clock.advance(60)
        assert _ids(client) == ["missing", "number", "string"]
        assert _ttl_metrics(client) == {"deletedDocuments": 3, "passes": 3}


def test_ttl_monitor_sleep_secs_is_set_with_set_parameter(rs: ReplicaSet, clock: Clock) -> None:
    with MongoClient(rs.uri, **FAST) as client:
        reply = client.admin.command("setParameter", 1, ttlMonitorSleepSecs=1)
        assert reply["was"] == 60
        client.ttl.c.create_index("at", expireAfterSeconds=0)
        client.ttl.c.insert_one({"_id": 1, "at": clock.at(-1)})
        clock.advance(1)
        assert _ids(client) == []
        for refused in (0, 1.5, "1", True):
            with pytest.raises(OperationFailure) as caught:
                client.admin.command("setParameter", 1, ttlMonitorSleepSecs=refused)
            assert caught.value.code == 2
        with pytest.raises(OperationFailure) as caught:
            client.admin.command("setParameter", 1, ttlMonitorSleepSecs=5, ttlMonitorEnabled=False)
        assert caught.value.code == 238
        assert client.admin.command("setParameter", 1, ttlMonitorSleepSecs=5)["was"] == 1
