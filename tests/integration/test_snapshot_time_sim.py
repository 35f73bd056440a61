"""A snapshot session's point in time (Snapshot Reads spec, ``snapshotTime``):
``get_snapshot_time()`` reads it, ``start_session(snapshot_time=...)`` chooses it.

Against a simulated replica set, whose replies report an ``atClusterTime`` for a
snapshot find, aggregate or distinct (the simulator does not keep document history
yet: these tests check what the driver sends and keeps, not what a read returns)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bson import Timestamp

pytest.importorskip("pyuca")

from mongocore.api.client import Client
from mongocore.errors import ConfigurationError, InvalidOperation
from mongocore.sim import ReplicaSet
from tests.integration.sim_client import Recorder, sim_client


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[tuple[Client, Recorder]]:
    recorder = Recorder()
    with sim_client(rs.uri, recorder) as connected:
        connected["db"]["c"].insert_many([{"_id": i} for i in range(3)])
        recorder.clear()
        yield connected, recorder
        connected["db"]["c"].drop()


@pytest.mark.parametrize("first_read", ["find", "aggregate", "distinct"])
def test_the_snapshot_time_is_the_first_reads_at_cluster_time(
    client: tuple[Client, Recorder], first_read: str
) -> None:
    """None before the first read, then what its reply reported (in the cursor of a
    find or aggregate, at the top of a distinct), and never changed after."""
    connected, recorder = client
    collection = connected["db"]["c"]
    with connected.start_session(snapshot=True) as session:
        assert session.get_snapshot_time() is None
        if first_read == "find":
            collection.find({}, session=session).to_list()
        elif first_read == "aggregate":
            collection.aggregate([], session=session).to_list()
        else:
            collection.distinct("_id", session=session)
        reply = recorder.succeeded_of(first_read)[-1].reply
        reported = (reply.get("cursor") or reply)["atClusterTime"]
        assert isinstance(reported, Timestamp)
        assert session.get_snapshot_time() == reported
        # Later reads, and writes by others, leave it as it is.
        connected["db"]["c"].insert_one({"_id": 10})
        collection.find({}, session=session).to_list()
        collection.distinct("_id", session=session)
        assert session.get_snapshot_time() == reported
        assert recorder.started_of("find")[-1].command["readConcern"] == {
            "level": "snapshot",
            "atClusterTime": reported,
        }


def test_a_snapshot_time_given_at_the_start_is_sent_by_the_first_read(
    client: tuple[Client, Recorder],
) -> None:
    """The broken variants this catches: a first read without the chosen
    atClusterTime (it would read at the server's latest time), and the chosen time
    replaced by what a reply reports."""
    connected, recorder = client
    collection = connected["db"]["c"]
    with connected.start_session(snapshot=True) as first:
        collection.find({}, session=first).to_list()
        chosen = first.get_snapshot_time()
    assert chosen is not None
    connected["db"]["c"].insert_one({"_id": 10})  # the cluster time moves on
    with connected.start_session(snapshot=True, snapshot_time=chosen) as session:
        assert session.get_snapshot_time() == chosen
        recorder.clear()
        collection.find({}, session=session).to_list()
        collection.distinct("_id", session=session)
        for name in ("find", "distinct"):
            assert recorder.started_of(name)[-1].command["readConcern"] == {
                "level": "snapshot",
                "atClusterTime": chosen,
            }
        assert session.get_snapshot_time() == chosen
        assert session.options.snapshot_time == chosen


def test_snapshot_time_options_are_checked(client: tuple[Client, Recorder]) -> None:
    connected, _ = client
    with pytest.raises(ConfigurationError, match="snapshot=True"):
        connected.start_session(snapshot_time=Timestamp(1, 1))
    with pytest.raises(TypeError, match=r"bson\.Timestamp"):
        connected.start_session(snapshot=True, snapshot_time=1234)  # type: ignore[arg-type]
    with connected.start_session() as session, pytest.raises(InvalidOperation):
        session.get_snapshot_time()
