"""``ClientSession.bind()`` (pymongo 4.17): inside its block, operations given no
session run in the bound one, as if it were passed; the block ends the session unless
told not to; another client's operations inside the block are refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca")

from mongocore.api.client import Client
from mongocore.errors import InvalidOperation
from mongocore.monitoring import CommandStartedEvent
from mongocore.sim import ReplicaSet
from tests.integration.sim_client import Recorder, sim_client


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[tuple[Client, Recorder]]:
    recorder = Recorder()
    with sim_client(rs.uri, recorder) as connected:
        connected["db"]["bind"].insert_many([{"_id": i} for i in range(5)])
        recorder.clear()
        yield connected, recorder
        connected["db"]["bind"].drop()


def _lsids(recorder: Recorder) -> dict[str, Any]:
    return {
        event.command_name: event.command.get("lsid")
        for event in recorder.events
        if isinstance(event, CommandStartedEvent)
    }


def test_operations_in_the_block_run_in_the_bound_session(
    client: tuple[Client, Recorder],
) -> None:
    connected, recorder = client
    collection = connected["db"]["bind"]
    session = connected.start_session()
    lsid = session.session_id
    with session.bind() as bound:
        assert bound is session
        collection.insert_one({"_id": 10})
        assert collection.find_one({"_id": 10}) == {"_id": 10}
        assert [d["_id"] for d in collection.find({}, batch_size=2).sort("_id")] == [
            0,
            1,
            2,
            3,
            4,
            10,
        ]
        collection.update_one({"_id": 10}, {"$set": {"x": 1}})
        assert collection.count_documents({}) == 6
        connected["db"].command("ping")
        connected.list_database_names()
        assert not session.has_ended  # every operation above left it open
    assert session.has_ended  # the block ends it
    lsids = _lsids(recorder)
    for name in ("insert", "find", "getMore", "update", "aggregate", "ping", "listDatabases"):
        assert lsids[name] == lsid, name


def test_end_session_false_keeps_it_and_outside_the_block_sessions_are_implicit(
    client: tuple[Client, Recorder],
) -> None:
    connected, recorder = client
    collection = connected["db"]["bind"]
    with connected.start_session() as session:
        lsid = session.session_id
        with session.bind(end_session=False):
            collection.find_one({"_id": 1})
        assert not session.has_ended
        inside = _lsids(recorder)["find"]
        recorder.clear()
        collection.find_one({"_id": 1})
        outside = _lsids(recorder)["find"]
    assert inside == lsid
    assert outside is not None and outside != lsid


def test_another_clients_operations_in_the_block_are_refused(
    client: tuple[Client, Recorder], rs: ReplicaSet
) -> None:
    connected, _ = client
    with sim_client(rs.uri, Recorder()) as other, connected.start_session() as session:
        with session.bind(end_session=False), pytest.raises(InvalidOperation, match="bound"):
            other["db"]["bind"].find_one({})
        # The block's end unbinds: the other client works again.
        assert other["db"]["bind"].find_one({"_id": 0}) == {"_id": 0}
