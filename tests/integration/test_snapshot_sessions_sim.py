"""Snapshot sessions against simulated deployments (Snapshot Reads spec): the first
read's atClusterTime is sent by the next ones, writes are refused by the server, and a
standalone refuses snapshot reads."""

from __future__ import annotations

import pytest

from mongocore.errors import OperationFailure
from mongocore.sim import ReplicaSet, Standalone
from tests.integration.sim_client import Recorder, sim_client


def test_snapshot_reads_against_a_simulated_replica_set() -> None:
    recorder = Recorder()
    with ReplicaSet(1, election_delay=0.02) as rs, sim_client(rs.uri, recorder) as client:
        collection = client["db"]["c"]
        collection.insert_many([{"_id": i} for i in range(3)])
        with client.start_session(snapshot=True) as session:
            assert len(collection.find({}, session=session).to_list()) == 3
            assert collection.distinct("_id", session=session) == [0, 1, 2]
            with pytest.raises(OperationFailure) as info:
                collection.insert_one({"_id": 9}, session=session)
            assert info.value.code == 72
        find = recorder.started_of("find")[-1].command["readConcern"]
        distinct = recorder.started_of("distinct")[-1].command["readConcern"]
        assert find == {"level": "snapshot"}  # the first read: no time yet
        reported = recorder.succeeded_of("find")[-1].reply["cursor"]["atClusterTime"]
        assert distinct == {"level": "snapshot", "atClusterTime": reported}
        assert recorder.started_of("insert")[-1].command["readConcern"]["level"] == "snapshot"


def test_a_standalone_refuses_snapshot_reads() -> None:
    with (
        Standalone() as standalone,
        sim_client(standalone.uri) as client,
        client.start_session(snapshot=True) as session,
        pytest.raises(OperationFailure),
    ):
        client["db"]["c"].find_one({}, session=session)


class FakeClock:
    """Wall-clock time under the test's control, for the history window."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_snapshot_session_does_not_see_later_writes() -> None:
    """A snapshot session reads as of its first read's atClusterTime, so a
    write made after that read is not seen by the next ones, in any read command."""
    with ReplicaSet(1, election_delay=0.02) as rs, sim_client(rs.uri) as client:
        collection = client["db"]["c"]
        collection.insert_many([{"_id": i, "v": 0} for i in range(3)])
        with client.start_session(snapshot=True) as session:
            first = collection.find({}, session=session).to_list()
            assert first == [{"_id": i, "v": 0} for i in range(3)]
            collection.insert_one({"_id": 3, "v": 0})
            collection.update_one({"_id": 0}, {"$set": {"v": 1}})
            collection.delete_one({"_id": 2})
            client["db"]["later"].insert_one({"_id": 0})
            assert collection.find({}, session=session).to_list() == first
            assert collection.distinct("_id", session=session) == [0, 1, 2]
            pipeline = [{"$match": {"v": 0}}, {"$count": "n"}]
            assert collection.aggregate(pipeline, session=session).to_list() == [{"n": 3}]
            assert client["db"]["later"].find({}, session=session).to_list() == []
        # A new snapshot sees them.
        with client.start_session(snapshot=True) as session:
            assert collection.find({}, session=session).to_list() == [
                {"_id": 0, "v": 1},
                {"_id": 1, "v": 0},
                {"_id": 3, "v": 0},
            ]


def test_a_read_older_than_the_history_window_is_refused_with_snapshot_too_old() -> None:
    """The history is kept 300 s (7.0's default minSnapshotHistoryWindowInSeconds); an
    atClusterTime older than that fails with SnapshotTooOld (239)."""
    clock = FakeClock()
    with ReplicaSet(1, election_delay=0.02, clock=clock) as rs, sim_client(rs.uri) as client:
        db = client["db"]
        db["c"].insert_one({"_id": 1, "v": "old"})
        reply = db.command(
            {"find": "c", "readConcern": {"level": "snapshot"}},
        )
        at = reply["cursor"]["atClusterTime"]
        clock.now += 299.0
        db["c"].update_one({"_id": 1}, {"$set": {"v": "new"}})
        within = db.command(
            {"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": at}}
        )
        assert within["cursor"]["firstBatch"] == [{"_id": 1, "v": "old"}]
        clock.now += 2.0
        db["c"].update_one({"_id": 1}, {"$set": {"v": "newer"}})  # the history is trimmed
        with pytest.raises(OperationFailure) as info:
            db.command({"find": "c", "readConcern": {"level": "snapshot", "atClusterTime": at}})
        assert info.value.code == 239
        assert "is older than the oldest available timestamp" in str(info.value)
        latest = db.command({"find": "c", "readConcern": {"level": "snapshot"}})
        assert latest["cursor"]["firstBatch"] == [{"_id": 1, "v": "newer"}]
