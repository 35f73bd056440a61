"""mongocore's change streams against the simulated deployment, with pymongo as the
independent client: pymongo writes while mongocore watches and the other way round,
both streams seeing the same events; resume tokens passed between the two drivers;
mongocore's resume process (the commands it sends), its resume tokens while no event
comes, and the seed's retries of the opening aggregate.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Optional

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient

from mongocore.api.change_stream import ChangeStream
from mongocore.api.client import Client
from mongocore.core.events import CommandStartedEvent
from mongocore.errors import InvalidOperation, OperationFailure
from mongocore.sim import ReplicaSet, ShardedCluster
from tests.integration.sim_client import DEADLINE, Recorder, sim_client

AWAIT_MS = 100  # each getMore waits at most this long on the server
PyClient = MongoClient[dict[str, Any]]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(rs: ReplicaSet, recorder: Recorder) -> Iterator[Client]:
    with sim_client(rs.uri, recorder) as mongocore_client:
        yield mongocore_client


@pytest.fixture
def py(rs: ReplicaSet) -> Iterator[PyClient]:
    other: PyClient = MongoClient(rs.uri, serverSelectionTimeoutMS=20_000)
    try:
        yield other
    finally:
        other.close()


def next_change(stream: Any) -> dict[str, Any]:
    """The next event of a mongocore or pymongo stream, polling with try_next."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        change = stream.try_next()
        if change is not None:
            return dict(change)
        assert stream.alive, "the change stream was closed"
    raise AssertionError("no change event before the deadline")


def stages(events: list[CommandStartedEvent]) -> list[dict[str, Any]]:
    return [dict(e.command["pipeline"][0]["$changeStream"]) for e in events]


def fail_point(py: PyClient, data: dict[str, Any], times: int = 1) -> None:
    py.admin.command("configureFailPoint", "failCommand", mode={"times": times}, data=data)


# --- two drivers, the same events ---------------------------------------------------------


def writes(collection: Any) -> None:
    collection.insert_one({"_id": 1, "x": 1})
    collection.update_one({"_id": 1}, {"$set": {"x": 2}})
    collection.replace_one({"_id": 1}, {"y": 3})
    collection.delete_one({"_id": 1})


def test_mongocore_sees_the_events_of_pymongo_writes_as_pymongo_does(
    client: Client, py: PyClient
) -> None:
    py.app.create_collection("items")
    with (
        client.app.items.watch(max_await_time_ms=AWAIT_MS) as mine,
        py.app.items.watch(max_await_time_ms=AWAIT_MS) as theirs,
    ):
        writes(py.app.items)
        seen = [next_change(mine) for _ in range(4)]
        expected = [next_change(theirs) for _ in range(4)]
        assert mine.resume_token == theirs.resume_token
    assert [e["operationType"] for e in seen] == ["insert", "update", "replace", "delete"]
    assert seen == expected
    assert seen[1]["updateDescription"]["updatedFields"] == {"x": 2}


def test_pymongo_sees_the_events_of_mongocore_writes_as_mongocore_does(
    client: Client, py: PyClient
) -> None:
    client.app.create_collection("items")
    with (
        py.app.watch(max_await_time_ms=AWAIT_MS) as theirs,
        client.app.watch(max_await_time_ms=AWAIT_MS) as mine,
    ):
        writes(client.app.items)
        client.app.other.insert_one({"_id": 2})
        expected = [next_change(theirs) for _ in range(5)]
        seen = [next_change(mine) for _ in range(5)]
    assert [e["ns"]["coll"] for e in seen] == ["items"] * 4 + ["other"]
    assert seen == expected


def test_a_cluster_stream_of_each_driver_sees_every_database(client: Client, py: PyClient) -> None:
    with (
        client.watch(max_await_time_ms=AWAIT_MS) as mine,
        py.watch(max_await_time_ms=AWAIT_MS) as theirs,
    ):
        py.one.a.insert_one({"_id": 1})
        client.two.b.insert_one({"_id": 2})
        seen = [next_change(mine) for _ in range(2)]
        expected = [next_change(theirs) for _ in range(2)]
    assert [e["ns"] for e in seen] == [{"db": "one", "coll": "a"}, {"db": "two", "coll": "b"}]
    assert seen == expected


def test_resume_tokens_pass_between_the_drivers(client: Client, py: PyClient) -> None:
    items = client.app.items
    client.app.create_collection("items")
    with items.watch(max_await_time_ms=AWAIT_MS) as mine:
        items.insert_one({"_id": 1})
        first = next_change(mine)
        items.insert_one({"_id": 2})
        items.drop()
        after_first = [next_change(mine) for _ in range(3)]
        assert not mine.alive  # the invalidate ended it
    assert [e["operationType"] for e in after_first] == ["insert", "drop", "invalidate"]
    with py.app.items.watch(resume_after=first["_id"], max_await_time_ms=AWAIT_MS) as theirs:
        assert next_change(theirs) == after_first[0]
    # Past the invalidate only startAfter goes; mongocore takes pymongo's token.
    with py.app.items.watch(start_after=first["_id"], max_await_time_ms=AWAIT_MS) as theirs:
        invalidate_token = [next_change(theirs) for _ in range(3)][-1]["_id"]
    with items.watch(start_after=invalidate_token, max_await_time_ms=AWAIT_MS) as again:
        py.app.items.insert_one({"_id": 3})
        assert next_change(again)["documentKey"] == {"_id": 3}


def test_through_a_mongos_both_drivers_see_the_same_events() -> None:
    with (
        ShardedCluster(1, shard_members=1, election_delay=0.05) as cluster,
        sim_client(cluster.uri) as mine_client,
    ):
        theirs_client: PyClient = MongoClient(cluster.uri)
        try:
            with (
                mine_client.app.items.watch(max_await_time_ms=AWAIT_MS) as mine,
                theirs_client.app.items.watch(max_await_time_ms=AWAIT_MS) as theirs,
            ):
                theirs_client.app.items.insert_one({"_id": 1})
                mine_client.app.items.update_one({"_id": 1}, {"$set": {"x": 1}})
                seen = [next_change(mine) for _ in range(2)]
                expected = [next_change(theirs) for _ in range(2)]
        finally:
            theirs_client.close()
    assert [e["operationType"] for e in seen] == ["insert", "update"]
    assert seen == expected


# --- resume tokens and iteration ---------------------------------------------------------------


def test_try_next_returns_none_yet_the_resume_token_follows_the_empty_batches(
    client: Client, py: PyClient, recorder: Recorder
) -> None:
    with client.app.items.watch(max_await_time_ms=AWAIT_MS) as stream:
        opened = stream.resume_token
        assert opened is not None  # the aggregate's postBatchResumeToken
        py.app.unrelated.insert_one({"_id": 1})  # moves the stream's position, no event
        tokens: list[Optional[dict[str, Any]]] = [opened]
        deadline = time.monotonic() + DEADLINE
        while tokens[-1] == opened and time.monotonic() < deadline:
            assert stream.try_next() is None
            tokens.append(stream.resume_token)
        last = tokens[-1]
        assert last is not None and last["_data"] > opened["_data"]
    get_mores = recorder.started_of("getMore")
    assert get_mores and all(e.command["maxTimeMS"] == AWAIT_MS for e in get_mores)


def test_the_resume_token_is_the_last_document_or_its_batch_token(
    client: Client, py: PyClient
) -> None:
    with client.app.items.watch(max_await_time_ms=AWAIT_MS, batch_size=2) as stream:
        py.app.items.insert_many([{"_id": i} for i in range(3)])
        first = next_change(stream)
        assert stream.resume_token == first["_id"]  # not the last of its batch of two
        second = next_change(stream)
        assert stream.resume_token is not None
        assert stream.resume_token["_data"] >= second["_id"]["_data"]
        assert next_change(stream)["documentKey"] == {"_id": 2}


def test_close_kills_the_cursor_and_ends_iteration(client: Client, recorder: Recorder) -> None:
    stream = client.app.items.watch(max_await_time_ms=AWAIT_MS)
    with stream:
        cursor_id = recorder.succeeded_of("aggregate")[-1].reply["cursor"]["id"]
    assert not stream.alive
    assert [e.command["cursors"] for e in recorder.started_of("killCursors")] == [[cursor_id]]
    assert stream.try_next() is None
    with pytest.raises(StopIteration):
        next(stream)


def test_an_explicit_session_carries_every_command_of_the_stream(
    client: Client, py: PyClient, recorder: Recorder
) -> None:
    with (
        client.start_session() as session,
        client.app.items.watch(max_await_time_ms=AWAIT_MS, session=session) as stream,
    ):
        fail_point(py, {"failCommands": ["getMore"], "closeConnection": True})
        py.app.items.insert_one({"_id": 1})
        next_change(stream)
        lsid = session.session_id
    commands = [e for e in recorder.of(CommandStartedEvent) if e.command_name != "endSessions"]
    assert [e.command_name for e in commands][:3] == ["aggregate", "getMore", "aggregate"]
    assert all(e.command["lsid"] == lsid for e in commands)


# --- resuming --------------------------------------------------------------------------------


def test_a_network_error_resumes_after_the_cached_token_with_one_implicit_session(
    client: Client, py: PyClient, recorder: Recorder
) -> None:
    items = client.app.items
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        py.app.items.insert_one({"_id": 1})
        next_change(stream)
        token = stream.resume_token
        fail_point(py, {"failCommands": ["getMore"], "closeConnection": True})
        py.app.items.insert_one({"_id": 2})
        assert next_change(stream)["documentKey"] == {"_id": 2}
        assert stream.alive
    aggregates = recorder.started_of("aggregate")
    assert stages(aggregates) == [{}, {"resumeAfter": token}]
    # No killCursors after a network error: the old server could not be reached.
    kills = recorder.started_of("killCursors")
    assert len(kills) == 1  # the close of the resumed stream's cursor
    commands = [e for e in recorder.of(CommandStartedEvent) if "lsid" in e.command]
    assert len({str(e.command["lsid"]) for e in commands}) == 1


def test_a_labeled_server_error_kills_the_old_cursor_then_resumes(
    client: Client, py: PyClient, recorder: Recorder
) -> None:
    with client.app.items.watch(max_await_time_ms=AWAIT_MS) as stream:
        first_cursor = recorder.succeeded_of("aggregate")[-1].reply["cursor"]["id"]
        fail_point(
            py,
            {
                "failCommands": ["getMore"],
                "errorCode": 6,
                "errorLabels": ["ResumableChangeStreamError"],
            },
        )
        py.app.items.insert_one({"_id": 1})
        assert next_change(stream)["documentKey"] == {"_id": 1}
    names = [e.command_name for e in recorder.of(CommandStartedEvent)]
    failed_get_more = names.index("getMore")
    assert names[failed_get_more + 1 : failed_get_more + 3] == ["killCursors", "aggregate"]
    kill = recorder.started_of("killCursors")[0]
    assert kill.command["cursors"] == [first_cursor]


def test_resuming_before_any_token_starts_at_the_saved_operation_time(
    client: Client, py: PyClient, recorder: Recorder, rs: ReplicaSet
) -> None:
    # The last write before the stream opens is of another collection: a resume at the
    # operation time it saves sees the entry at that time too (startAtOperationTime is
    # inclusive), and on a deployment an earlier test used, that would otherwise be
    # whatever it wrote last (the drop of app, say).
    py.app.other.insert_one({})
    with client.app.items.watch(max_await_time_ms=AWAIT_MS) as stream:
        # Forget the aggregate's postBatchResumeToken: the stream then has only the
        # operation time it would have saved from a server without one.
        stream._state = type(stream._state)(
            operation_time=recorder.succeeded_of("aggregate")[-1].reply["operationTime"]
        )
        fail_point(py, {"failCommands": ["getMore"], "closeConnection": True})
        py.app.items.insert_one({"_id": 1})
        assert next_change(stream)["documentKey"] == {"_id": 1}
    resumed = stages(recorder.started_of("aggregate"))[1]
    assert set(resumed) == {"startAtOperationTime"}


def test_a_second_resumable_error_resumes_again(
    client: Client, py: PyClient, recorder: Recorder
) -> None:
    with client.app.items.watch(max_await_time_ms=AWAIT_MS) as stream:
        fail_point(py, {"failCommands": ["getMore"], "closeConnection": True}, times=2)
        # Each call: a getMore fails, the stream resumes (nothing to return yet).
        assert stream.try_next() is None
        assert stream.try_next() is None
        py.app.items.insert_one({"_id": 1})
        assert next_change(stream)["documentKey"] == {"_id": 1}
    assert len(recorder.started_of("aggregate")) == 3


def test_an_error_that_is_not_resumable_closes_the_stream(client: Client, py: PyClient) -> None:
    stream = client.app.items.watch(max_await_time_ms=AWAIT_MS)
    fail_point(py, {"failCommands": ["getMore"], "errorCode": 216})  # ElectionInProgress
    with pytest.raises(OperationFailure) as caught:
        next_change(stream)
    assert caught.value.code == 216
    assert not stream.alive


def test_the_opening_aggregate_is_retried_until_it_succeeds(
    client: Client, py: PyClient, recorder: Recorder
) -> None:
    # The retryable-reads seed: "as many times as necessary", not once.
    fail_point(py, {"failCommands": ["aggregate"], "closeConnection": True}, times=3)
    with client.app.items.watch(max_await_time_ms=AWAIT_MS) as stream:
        assert stream.alive
    assert len(recorder.started_of("aggregate")) == 4


def test_an_aggregate_error_is_not_resumed(client: Client, py: PyClient) -> None:
    fail_point(py, {"failCommands": ["aggregate"], "errorCode": 216})
    with pytest.raises(OperationFailure) as caught:
        client.app.items.watch()
    assert caught.value.code == 216


def test_a_closed_client_ends_the_stream_with_its_error(rs: ReplicaSet) -> None:
    closed: Optional[ChangeStream] = None
    with sim_client(rs.uri) as mongocore_client:
        closed = mongocore_client.app.items.watch(max_await_time_ms=AWAIT_MS)
    with pytest.raises(InvalidOperation):
        closed.try_next()
    assert not closed.alive


def test_watch_checks_its_arguments(client: Client) -> None:
    with pytest.raises(TypeError):
        client.app.items.watch({"$match": {}})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.app.items.watch(full_document=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        client.app.items.watch(batch_size=-1)
