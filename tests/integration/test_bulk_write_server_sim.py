"""Where a bulk write's commands go, against a simulated three-member replica set.

A bulk write selects a server once, as pymongo's does: its later commands run where
its first ran, without a selection, while the topology still describes that server as
writable. When it no longer does (the primary stepped down between two commands), the
next command selects anew and goes to the new primary.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyuca")

from mongocore.api.client import Client
from mongocore.api.operations import DeleteOne, InsertOne, UpdateOne
from mongocore.core.events import CommandSucceededEvent
from mongocore.io.selection_log import SERVER_SELECTION_LOGGER
from mongocore.sim import ReplicaSet
from tests.integration.sim_client import Recorder, sim_client, wait_for_topology
from tests.log_capture import capture


def _selections(data: list[dict[str, object]]) -> int:
    return sum(1 for d in data if d["message"] == "Server selection succeeded")


def _primary_is(client: Client, host: str) -> None:
    wait_for_topology(
        client,
        lambda d: any(sd.is_writable and str(a) == host for a, sd in d.servers.items()),
    )


def test_a_bulk_write_selects_once(rs: ReplicaSet) -> None:
    """The broken variant this catches: a selection for every command of the bulk (three
    here), which also lets a bulk's commands go to different servers."""
    recorder = Recorder()
    with sim_client(rs.uri, recorder) as client:
        coll = client["db"]["c"]
        coll.insert_one({"_id": 0})  # the primary is known from here on
        recorder.clear()
        with capture(SERVER_SELECTION_LOGGER) as records:
            coll.bulk_write(
                [
                    InsertOne({"_id": 1}),
                    UpdateOne({"_id": 1}, {"$set": {"x": 1}}),
                    DeleteOne({"_id": 0}),
                ]
            )
        assert _selections(records.data) == 1
        commands = recorder.of(CommandSucceededEvent)
        assert [e.command_name for e in commands] == ["insert", "update", "delete"]
        assert len({e.address for e in commands}) == 1


def test_a_bulk_write_selects_again_when_its_server_stops_being_writable(rs: ReplicaSet) -> None:
    """Between the insert and the update the primary steps down and another member is
    elected; the client sees it before the update is sent. The broken variant this
    catches: sending the update to the old primary because the insert ran there (it
    would fail with NotWritablePrimary, and without retryWrites the bulk would raise)."""
    recorder = Recorder()
    with sim_client(rs.uri, recorder) as client:
        coll = client["db"]["c"]
        coll.insert_one({"_id": 0})
        old = rs.wait_for_primary()
        new = next(m for m in rs.members if m is not old and not m.arbiter)

        def elect_after_the_insert(event: CommandSucceededEvent) -> None:
            if event.command_name == "insert" and str(event.address) == old.host:
                rs.elect(new)
                _primary_is(client, new.host)

        recorder.on_succeeded = elect_after_the_insert
        recorder.clear()
        with capture(SERVER_SELECTION_LOGGER) as records:
            result = coll.bulk_write(
                [InsertOne({"_id": 1}), UpdateOne({"_id": 1}, {"$set": {"x": 1}})]
            )
        assert (result.inserted_count, result.modified_count) == (1, 1)
        assert _selections(records.data) == 2
        update = recorder.of(CommandSucceededEvent, "update")
        assert [str(e.address) for e in update] == [new.host]
