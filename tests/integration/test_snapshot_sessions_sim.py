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
