"""Change streams on the simulated deployment, with pymongo as the independent client.

pymongo runs the client side of the change streams spec (the aggregate with
``$changeStream``, getMore, resuming with the cached token); these tests check that the
simulated 7.0 server answers it as a real one would: the events, their fields, resume
tokens, invalidation, pre- and post-images, awaitData, errors and labels, and the same
through a mongos.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from bson import Timestamp
from pymongo import MongoClient, monitoring
from pymongo.change_stream import ChangeStream
from pymongo.errors import OperationFailure

from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from mongocore.sim.change_log import change_log_of

DEADLINE = 20.0
AWAIT_MS = 100  # each try_next waits at most this long on the server
Client = MongoClient[dict[str, Any]]


class Replies(monitoring.CommandListener):
    """Records the commands a client sends and the replies it gets."""

    def __init__(self) -> None:
        self.commands: list[monitoring.CommandStartedEvent] = []
        self.replies: list[tuple[str, dict[str, Any]]] = []
        self.get_more_started = threading.Event()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.commands.append(event)
        if event.command_name == "getMore":
            self.get_more_started.set()

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self.replies.append((event.command_name, dict(event.reply)))

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def names(self) -> list[str]:
        return [event.command_name for event in self.commands]


@pytest.fixture
def replies() -> Replies:
    return Replies()


@pytest.fixture
def client(rs: ReplicaSet, replies: Replies) -> Iterator[Client]:
    mongo: Client = MongoClient(rs.uri, event_listeners=[replies], serverSelectionTimeoutMS=20_000)
    try:
        yield mongo
    finally:
        mongo.close()


def next_change(stream: ChangeStream[Any], timeout: float = DEADLINE) -> dict[str, Any]:
    """The next event, iterating with try_next until a deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        change = stream.try_next()
        if change is not None:
            return dict(change)
        assert stream.alive, "the change stream was closed"
    raise AssertionError("no change event before the deadline")


def created(client: Client, db: str = "app", coll: str = "items", **options: Any) -> Any:
    client[db].create_collection(coll, **options)
    return client[db][coll]


# -- the events ----------------------------------------------------------------------------


def test_a_collection_stream_sees_inserts_updates_replaces_and_deletes(client: Client) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.insert_one({"_id": 1, "x": 1, "tags": ["a", "b"], "old": True})
        items.update_one({"_id": 1}, {"$set": {"x": 2}, "$unset": {"old": ""}})
        items.replace_one({"_id": 1}, {"x": 3})
        items.delete_one({"_id": 1})
        client.app.other.insert_one({"_id": 9})  # another collection: not seen
        insert, update, replace, delete = (next_change(stream) for _ in range(4))
    assert insert["operationType"] == "insert"
    assert insert["fullDocument"] == {"_id": 1, "x": 1, "tags": ["a", "b"], "old": True}
    assert insert["ns"] == {"db": "app", "coll": "items"}
    assert insert["documentKey"] == {"_id": 1}
    assert isinstance(insert["clusterTime"], Timestamp)
    assert insert["wallTime"] is not None
    assert set(insert["_id"]) == {"_data"}
    assert update["operationType"] == "update"
    assert "fullDocument" not in update
    assert update["updateDescription"] == {
        "updatedFields": {"x": 2},
        "removedFields": ["old"],
        "truncatedArrays": [],
    }
    assert replace["operationType"] == "replace"
    assert replace["fullDocument"] == {"_id": 1, "x": 3}
    assert delete["operationType"] == "delete"
    assert delete["documentKey"] == {"_id": 1}
    assert "fullDocument" not in delete
    tokens = [event["_id"]["_data"] for event in (insert, update, replace, delete)]
    assert tokens == sorted(tokens) and len(set(tokens)) == 4


def test_a_database_stream_sees_its_collections_only(client: Client) -> None:
    created(client)
    with client.app.watch(max_await_time_ms=AWAIT_MS) as stream:
        client.app.items.insert_one({"_id": 1})
        client.elsewhere.items.insert_one({"_id": 2})
        client.app.more.insert_one({"_id": 3})
        first, second = next_change(stream), next_change(stream)
        assert stream.try_next() is None
    assert [first["ns"], second["ns"]] == [
        {"db": "app", "coll": "items"},
        {"db": "app", "coll": "more"},
    ]


def test_a_deployment_stream_sees_every_database(client: Client, replies: Replies) -> None:
    with client.watch(max_await_time_ms=AWAIT_MS) as stream:
        client.one.a.insert_one({"_id": 1})
        client.two.b.insert_one({"_id": 2})
        namespaces = [next_change(stream)["ns"] for _ in range(2)]
    assert namespaces == [{"db": "one", "coll": "a"}, {"db": "two", "coll": "b"}]
    aggregate = next(e for e in replies.commands if e.command_name == "aggregate")
    assert aggregate.database_name == "admin"
    assert aggregate.command["pipeline"][0]["$changeStream"]["allChangesForCluster"] is True


def test_drop_is_followed_by_an_invalidate_that_closes_the_stream(client: Client) -> None:
    items = created(client)
    items.insert_one({"_id": 1})
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.drop()
        drop = next_change(stream)
        invalidate = next_change(stream)
        assert not stream.alive
    assert drop["operationType"] == "drop"
    assert drop["ns"] == {"db": "app", "coll": "items"}
    assert invalidate["operationType"] == "invalidate"
    assert set(invalidate) == {"_id", "operationType", "clusterTime", "wallTime"}
    assert invalidate["_id"]["_data"] > drop["_id"]["_data"]


def test_rename_reports_its_target_and_invalidates(client: Client) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.rename("renamed")
        rename, invalidate = next_change(stream), next_change(stream)
    assert rename["operationType"] == "rename"
    assert rename["ns"] == {"db": "app", "coll": "items"}
    assert rename["to"] == {"db": "app", "coll": "renamed"}
    assert invalidate["operationType"] == "invalidate"


def test_drop_database_drops_each_collection_then_invalidates_the_database_stream(
    client: Client,
) -> None:
    created(client, coll="a")
    created(client, coll="b")
    with client.app.watch(max_await_time_ms=AWAIT_MS) as stream:
        client.drop_database("app")
        events = [next_change(stream) for _ in range(4)]
    assert [e["operationType"] for e in events] == ["drop", "drop", "dropDatabase", "invalidate"]
    assert [e["ns"] for e in events[:3]] == [
        {"db": "app", "coll": "a"},
        {"db": "app", "coll": "b"},
        {"db": "app"},
    ]


def test_expanded_events_describe_the_catalog(client: Client) -> None:
    with client.app.watch(show_expanded_events=True, max_await_time_ms=AWAIT_MS) as stream:
        items = created(client)
        items.create_index("x", name="x_1")
        items.drop_index("x_1")
        items.insert_one({"_id": 1, "a": {"1": 1}})
        items.update_one({"_id": 1}, {"$set": {"a.1": 2}})
        create, create_indexes, drop_indexes, insert, update = (
            next_change(stream) for _ in range(5)
        )
    assert create["operationType"] == "create"
    assert create["operationDescription"]["idIndex"]["key"] == {"_id": 1}
    index = {"v": 2, "key": {"x": 1}, "name": "x_1"}
    assert create_indexes["operationDescription"] == {"indexes": [index]}
    assert drop_indexes["operationType"] == "dropIndexes"
    assert drop_indexes["operationDescription"] == {"indexes": [index]}
    uuid = client.app.command("listCollections", filter={"name": "items"})["cursor"]["firstBatch"][
        0
    ]["info"]["uuid"]
    assert {e["collectionUUID"] for e in (create, insert, update)} == {uuid}
    assert update["updateDescription"]["disambiguatedPaths"] == {"a.1": ["a", "1"]}


def test_a_pipeline_update_truncating_an_array_is_described_as_such(client: Client) -> None:
    items = created(client)
    items.insert_one({"_id": 1, "array": ["foo", {"a": "bar"}, 1, 2, 3]})
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.update_one({"_id": 1}, [{"$set": {"array": ["foo", {"a": "bar"}]}}])
        update = next_change(stream)
    assert update["updateDescription"] == {
        "updatedFields": {},
        "removedFields": [],
        "truncatedArrays": [{"field": "array", "newSize": 2}],
    }


def test_later_stages_filter_and_reshape_the_events(client: Client) -> None:
    items = created(client)
    pipeline = [
        {"$match": {"fullDocument.keep": True}},
        {"$project": {"kind": "$operationType", "ns.extra": "value", "fullDocument": 1}},
    ]
    with items.watch(pipeline, max_await_time_ms=AWAIT_MS) as stream:
        items.insert_many([{"_id": 1, "keep": False}, {"_id": 2, "keep": True}])
        change = next_change(stream)
        assert stream.try_next() is None
    assert change["kind"] == "insert"
    assert change["ns"] == {"extra": "value"}
    assert change["fullDocument"] == {"_id": 2, "keep": True}


def test_a_pipeline_that_changes_the_resume_token_fails_the_stream(client: Client) -> None:
    items = created(client)
    with items.watch([{"$project": {"_id": 0}}], max_await_time_ms=AWAIT_MS) as stream:
        items.insert_one({"_id": 1})
        with pytest.raises(OperationFailure) as caught:
            next_change(stream)
    assert caught.value.code == 280
    assert caught.value.has_error_label("NonResumableChangeStreamError")


def test_stages_a_change_stream_refuses(client: Client) -> None:
    items = created(client)
    with pytest.raises(OperationFailure) as unknown:
        items.watch([{"$unsupported": "foo"}])
    assert unknown.value.code == 40324
    with pytest.raises(OperationFailure) as refused:
        items.watch([{"$group": {"_id": None}}])
    assert refused.value.code == 20


def test_a_transaction_shows_one_event_per_operation_with_its_session(client: Client) -> None:
    items = created(client)
    items.insert_one({"_id": 0})
    with client.app.watch(max_await_time_ms=AWAIT_MS) as stream:
        with client.start_session() as session:
            with session.start_transaction():
                items.insert_one({"_id": 1}, session=session)
                items.update_one({"_id": 0}, {"$set": {"v": 1}}, session=session)
                items.replace_one({"_id": 1}, {"r": 1}, session=session)
                items.delete_one({"_id": 0}, session=session)
            lsid = session.session_id
        events = [next_change(stream) for _ in range(4)]
    assert [e["operationType"] for e in events] == ["insert", "update", "replace", "delete"]
    assert len({e["clusterTime"] for e in events}) == 1
    assert all(e["lsid"] == lsid and e["txnNumber"] == 1 for e in events)
    tokens = [e["_id"]["_data"] for e in events]
    assert tokens == sorted(tokens) and len(set(tokens)) == 4


# -- resuming ------------------------------------------------------------------------------


def test_resume_after_a_token_continues_after_its_event(client: Client) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
        first = next_change(stream)
    with items.watch(resume_after=first["_id"], max_await_time_ms=AWAIT_MS) as resumed:
        rest = [next_change(resumed)["documentKey"] for _ in range(2)]
    assert rest == [{"_id": 2}, {"_id": 3}]


def test_start_at_operation_time_replays_from_that_time(client: Client) -> None:
    items = created(client)
    before = client.admin.command("ping")["operationTime"]
    items.insert_one({"_id": 1})
    start = client.app.command("insert", "items", documents=[{"_id": 2}])["operationTime"]
    assert before < start
    with items.watch(start_at_operation_time=before, max_await_time_ms=AWAIT_MS) as stream:
        assert next_change(stream)["documentKey"] == {"_id": 1}
    with items.watch(start_at_operation_time=start, max_await_time_ms=AWAIT_MS) as stream:
        assert next_change(stream)["documentKey"] == {"_id": 2}


def test_start_after_an_invalidate_sees_the_recreated_collection(client: Client) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.drop()
        next_change(stream)
        invalidate = next_change(stream)
    items.insert_one({"_id": "again"})
    with pytest.raises(OperationFailure) as refused:
        items.watch(resume_after=invalidate["_id"])
    assert refused.value.code == 260
    with items.watch(start_after=invalidate["_id"], max_await_time_ms=AWAIT_MS) as stream:
        change = next_change(stream)
    assert change["operationType"] == "insert"
    assert change["documentKey"] == {"_id": "again"}


def test_resuming_after_a_drop_owes_the_invalidate(client: Client) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.drop()
        drop = next_change(stream)
    with items.watch(resume_after=drop["_id"], max_await_time_ms=AWAIT_MS) as resumed:
        assert next_change(resumed)["operationType"] == "invalidate"


def test_a_resume_point_no_longer_kept_is_history_lost(rs: ReplicaSet, client: Client) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        items.insert_many([{"_id": 1}, {"_id": 2}])
        token = next_change(stream)["_id"]
    log = change_log_of(rs.store)
    assert log is not None
    with rs.cond:
        log.trim(0)
    with pytest.raises(OperationFailure) as caught:
        items.watch(resume_after=token)
    assert caught.value.code == 286
    assert caught.value.has_error_label("NonResumableChangeStreamError")


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ({"_data": "zz"}, 9),
        ({"_data": ""}, 40649),
        ({"_data": "82AB"}, 50811),
        ({"data": "82"}, 40647),
    ],
)
def test_an_invalid_resume_token_is_refused(client: Client, token: Any, code: int) -> None:
    with pytest.raises(OperationFailure) as caught:
        created(client).watch(resume_after=token)
    assert caught.value.code == code


def test_a_stream_resumes_on_the_new_primary_when_the_old_one_dies() -> None:
    with ReplicaSet(3, election_delay=0.05) as rs:
        # The stream's getMore goes to the dead member until selecting it times out;
        # pymongo then resumes on the new primary.
        mongo: Client = MongoClient(
            rs.uri, heartbeatFrequencyMS=500, serverSelectionTimeoutMS=5_000
        )
        try:
            items = created(mongo)
            with items.watch(max_await_time_ms=AWAIT_MS) as stream:
                items.insert_one({"_id": 1})
                assert next_change(stream)["documentKey"] == {"_id": 1}
                old = rs.wait_for_primary()
                rs.kill(old)
                assert rs.wait_for(lambda: rs.primary not in (None, old), DEADLINE)
                items.insert_one({"_id": 2})
                assert next_change(stream)["documentKey"] == {"_id": 2}
        finally:
            mongo.close()


def test_every_batch_carries_a_post_batch_resume_token(client: Client, replies: Replies) -> None:
    items = created(client)
    with items.watch(batch_size=1, max_await_time_ms=AWAIT_MS) as stream:
        initial = stream.resume_token
        assert stream.try_next() is None
        empty = stream.resume_token
        items.insert_many([{"_id": 1}, {"_id": 2}])
        first = next_change(stream)
        assert stream.resume_token == first["_id"]
        next_change(stream)
    cursors = [r["cursor"] for name, r in replies.replies if name in ("aggregate", "getMore")]
    assert cursors and all("postBatchResumeToken" in c for c in cursors)
    assert "firstBatch" in cursors[0] and "nextBatch" in cursors[-1]
    assert initial is not None and empty is not None
    assert initial["_data"] <= empty["_data"] < first["_id"]["_data"]


# -- fullDocument and images ---------------------------------------------------------------


def test_update_lookup_returns_the_current_document(client: Client) -> None:
    items = created(client)
    items.insert_one({"_id": 1, "x": 0})
    with items.watch(full_document="updateLookup", max_await_time_ms=AWAIT_MS) as stream:
        items.update_one({"_id": 1}, {"$set": {"x": 1}})
        items.update_one({"_id": 1}, {"$set": {"x": 2}})
        items.insert_one({"_id": 2})
        items.update_one({"_id": 2}, {"$set": {"y": 1}})
        items.delete_one({"_id": 2})
        lookups = [next_change(stream).get("fullDocument") for _ in range(5)]
    # Looked up when read: both updates of _id 1 see its latest state, and _id 2 is gone.
    assert lookups == [{"_id": 1, "x": 2}, {"_id": 1, "x": 2}, {"_id": 2}, None, None]


def test_pre_and_post_images_when_the_collection_records_them(client: Client) -> None:
    items = created(client, changeStreamPreAndPostImages={"enabled": True})
    items.insert_one({"_id": 1, "x": 0})
    with items.watch(
        full_document="required",
        full_document_before_change="required",
        max_await_time_ms=AWAIT_MS,
    ) as stream:
        items.update_one({"_id": 1}, {"$inc": {"x": 1}})
        items.delete_one({"_id": 1})
        update, delete = next_change(stream), next_change(stream)
    assert update["fullDocument"] == {"_id": 1, "x": 1}
    assert update["fullDocumentBeforeChange"] == {"_id": 1, "x": 0}
    assert delete["fullDocumentBeforeChange"] == {"_id": 1, "x": 1}


def test_images_are_null_or_an_error_when_the_collection_does_not_record_them(
    client: Client,
) -> None:
    items = created(client, changeStreamPreAndPostImages={"enabled": True})
    client.app.command("collMod", "items", changeStreamPreAndPostImages={"enabled": False})
    items.insert_one({"_id": 1})
    with items.watch(
        full_document="whenAvailable",
        full_document_before_change="whenAvailable",
        max_await_time_ms=AWAIT_MS,
    ) as stream:
        items.update_one({"_id": 1}, {"$set": {"x": 1}})
        update = next_change(stream)
    assert update["fullDocument"] is None
    assert update["fullDocumentBeforeChange"] is None
    with items.watch(full_document_before_change="required", max_await_time_ms=AWAIT_MS) as st:
        items.update_one({"_id": 1}, {"$set": {"x": 2}})
        with pytest.raises(OperationFailure) as caught:
            next_change(st)
    assert caught.value.code == 47


def test_coll_mod_shows_as_a_modify_event(client: Client) -> None:
    created(client)
    with client.app.watch(show_expanded_events=True, max_await_time_ms=AWAIT_MS) as stream:
        client.app.command("collMod", "items", changeStreamPreAndPostImages={"enabled": True})
        modify = next_change(stream)
    assert modify["operationType"] == "modify"
    assert modify["operationDescription"] == {"changeStreamPreAndPostImages": {"enabled": True}}
    assert "collectionOptions" in modify["stateBeforeChange"]


# -- awaitData, cursors, errors ------------------------------------------------------------


def test_try_next_returns_none_when_nothing_happens(client: Client, replies: Replies) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=50) as stream:
        assert stream.try_next() is None
        assert stream.alive
    get_more = next(e for e in replies.commands if e.command_name == "getMore")
    assert get_more.command["maxTimeMS"] == 50


def test_a_waiting_get_more_returns_a_write_made_while_it_waits(rs: ReplicaSet) -> None:
    # The getMore waits far longer than the client's socket timeout: only an oplog
    # append waking it lets it answer in time.
    watcher: Client = MongoClient(rs.uri, socketTimeoutMS=int(DEADLINE * 1000))
    writer: Client = MongoClient(rs.uri)
    try:
        db = watcher.app
        db.create_collection("items")
        opened = db.command("aggregate", "items", pipeline=[{"$changeStream": {}}], cursor={})
        cursor_id = opened["cursor"]["id"]
        assert cursor_id != 0 and opened["cursor"]["firstBatch"] == []
        result: dict[str, Any] = {}

        def get_more() -> None:
            result["reply"] = db.command(
                "getMore", cursor_id, collection="items", maxTimeMS=int(DEADLINE * 10_000)
            )

        primary = rs.primary
        assert primary is not None
        with rs.cond:
            cursor = primary.cursors.find(cursor_id)
            assert cursor is not None
            stream = cursor.stream
            reads = stream.reads
        thread = threading.Thread(target=get_more, name="test-get-more")
        thread.start()
        try:
            # Checked under the deployment's lock, which the getMore holds until it waits:
            # once it has read the stream again, it is waiting. Nothing notifies when it
            # starts waiting, so the check is repeated until a deadline.
            deadline = time.monotonic() + DEADLINE
            while not rs.wait_for(lambda: stream.reads > reads, 0.02):
                assert time.monotonic() < deadline, "the getMore never ran"
            writer.app.items.insert_one({"_id": "late"})
        finally:
            thread.join(DEADLINE * 2)
        assert not thread.is_alive()
        batch = result["reply"]["cursor"]["nextBatch"]
        assert [event["documentKey"] for event in batch] == [{"_id": "late"}]
    finally:
        watcher.close()
        writer.close()


def test_a_killed_change_stream_cursor_is_not_found(client: Client) -> None:
    items = created(client)
    opened = client.app.command("aggregate", "items", pipeline=[{"$changeStream": {}}], cursor={})
    cursor_id = opened["cursor"]["id"]
    client.app.command("killCursors", "items", cursors=[cursor_id])
    with pytest.raises(OperationFailure) as caught:
        client.app.command("getMore", cursor_id, collection="items")
    assert caught.value.code == 43
    assert items.find_one() is None


def test_a_resumable_get_more_error_is_labelled_and_resumed(
    client: Client, replies: Replies
) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        client.admin.command(
            "configureFailPoint",
            "failGetMoreAfterCursorCheckout",
            mode={"times": 1},
            data={"errorCode": 6},
        )
        items.insert_one({"_id": 1})
        change = next_change(stream)
    assert change["documentKey"] == {"_id": 1}
    aggregates = [e for e in replies.commands if e.command_name == "aggregate"]
    assert len(aggregates) == 2
    assert "resumeAfter" in aggregates[1].command["pipeline"][0]["$changeStream"] or (
        "startAtOperationTime" in aggregates[1].command["pipeline"][0]["$changeStream"]
    )


def test_a_fail_command_error_without_labels_is_not_resumed(client: Client) -> None:
    items = created(client)
    with items.watch(max_await_time_ms=AWAIT_MS) as stream:
        client.admin.command(
            "configureFailPoint",
            "failCommand",
            mode={"times": 1},
            data={"failCommands": ["getMore"], "errorCode": 6},
        )
        with pytest.raises(OperationFailure) as caught:
            next_change(stream)
    assert caught.value.code == 6


def test_a_change_stream_aggregate_failing_resumably_is_labelled(client: Client) -> None:
    created(client)
    client.admin.command(
        "configureFailPoint",
        "failCommand",
        mode={"times": 2},
        data={"failCommands": ["aggregate"], "errorCode": 6},
    )
    with pytest.raises(OperationFailure) as change_stream:
        client.app.command("aggregate", "items", pipeline=[{"$changeStream": {}}], cursor={})
    assert change_stream.value.has_error_label("ResumableChangeStreamError")
    with pytest.raises(OperationFailure) as plain:
        client.app.command("aggregate", "items", pipeline=[], cursor={})
    assert not plain.value.has_error_label("ResumableChangeStreamError")


def test_a_standalone_refuses_change_streams() -> None:
    with Standalone() as standalone:
        mongo: Client = MongoClient(standalone.uri)
        try:
            with pytest.raises(OperationFailure) as caught:
                mongo.app.items.watch()
        finally:
            mongo.close()
    assert caught.value.code == 40573


# -- through a mongos ----------------------------------------------------------------------


def test_change_streams_through_a_mongos() -> None:
    with ShardedCluster(1, shard_members=1, election_delay=0.05) as cluster:
        replies = Replies()
        mongo: Client = MongoClient(cluster.uri, event_listeners=[replies])
        try:
            items = mongo.app.items
            items.insert_one({"_id": 0})
            with items.watch(max_await_time_ms=AWAIT_MS) as stream:
                items.insert_one({"_id": 1})
                items.update_one({"_id": 1}, {"$set": {"x": 1}})
                insert, update = next_change(stream), next_change(stream)
                token = stream.resume_token
            with items.watch(resume_after=insert["_id"], max_await_time_ms=AWAIT_MS) as again:
                assert next_change(again)["_id"] == update["_id"]
        finally:
            mongo.close()
    assert insert["documentKey"] == {"_id": 1}
    assert update["updateDescription"]["updatedFields"] == {"x": 1}
    assert token == update["_id"]
    cursors = [r["cursor"] for name, r in replies.replies if name in ("aggregate", "getMore")]
    assert cursors and all("postBatchResumeToken" in c for c in cursors)
