"""What a cursor's getMores carry from the command that opened it, as pymongo's do:
the command's ``comment`` (find, aggregate, listCollections, listIndexes; to servers
4.4 and newer only, which accept it there) and aggregate's ``maxAwaitTimeMS`` (as the
getMore's ``maxTimeMS``: it is no field of aggregate, which a server refuses).

Against the simulator (a 7.0 server), and MockupDB playing a 4.2 and a 4.4 server."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any, Callable

import pytest
from bson import Int64
from mockupdb import MockupDB

pytest.importorskip("pyuca")

from mongocore.api.client import Client
from mongocore.api.collection import Collection
from mongocore.errors import OperationFailure
from mongocore.sim import ReplicaSet, Standalone
from tests.integration.mock_servers import DEADLINE, HelloResponder, address_of, hello_reply
from tests.integration.sim_client import Recorder, sim_client

COMMENT = {"tag": "report-42"}


@pytest.fixture(scope="module")
def standalone() -> Iterator[Standalone]:
    with Standalone() as server:
        yield server


def _three_of_each(collection: Collection) -> None:
    """Three documents, three indexes besides _id's, three collections in the database."""
    collection.insert_many([{"_id": i, "a": i, "b": i, "c": i} for i in range(3)])
    for key in "abc":
        collection.create_index(key)
    for name in ("other1", "other2"):
        collection.database[name].insert_one({})


#: Each kind of cursor with a comment, read one document (index, collection) per batch.
OPENERS: dict[str, Callable[[Collection, Any], Any]] = {
    "find": lambda c, comment: c.find({}, batch_size=1, comment=comment),
    "find().comment()": lambda c, comment: c.find({}, batch_size=1).comment(comment),
    "aggregate": lambda c, comment: c.aggregate([], batch_size=1, comment=comment),
    "list_indexes": lambda c, comment: c.list_indexes(batch_size=1, comment=comment),
    "list_collections": lambda c, comment: c.database.list_collections(
        batch_size=1, comment=comment
    ),
}


@pytest.mark.parametrize("kind", list(OPENERS))
@pytest.mark.parametrize("comment", [COMMENT, None], ids=["comment", "no-comment"])
def test_the_commands_comment_is_on_every_get_more(
    standalone: Standalone, kind: str, comment: Any
) -> None:
    """The broken variant this catches: a find's getMores without the find's comment
    (the aggregate's had it), and a comment added where none was given."""
    recorder = Recorder()
    with sim_client(standalone.uri, recorder) as client:
        collection = client["get_more_fields"][kind.replace("()", "").replace(".", "_")]
        collection.database.drop_collection(collection.name)
        _three_of_each(collection)
        recorder.clear()
        with OPENERS[kind](collection, comment) as cursor:
            assert len(list(cursor)) >= 3
        get_mores = recorder.started_of("getMore")
        assert len(get_mores) >= 2, "each batch of one needs a getMore"
        for event in get_mores:
            assert event.command.get("comment") == comment
            assert ("comment" in event.command) is (comment is not None)


def test_aggregate_sends_max_await_time_ms_as_the_get_mores_max_time_ms() -> None:
    """maxAwaitTimeMS on an aggregate with a $changeStream (a tailable, awaitData
    cursor). The broken variant this catches: maxAwaitTimeMS sent as a field of the
    aggregate, which a server refuses (40415, "an unknown field")."""
    recorder = Recorder()
    with ReplicaSet(members=1) as rs, sim_client(rs.uri, recorder) as client:
        collection = client["get_more_fields"]["awaited"]
        collection.insert_one({"_id": 0})
        recorder.clear()
        with collection.aggregate([{"$changeStream": {}}], maxAwaitTimeMS=50) as cursor:
            collection.insert_one({"_id": 1})
            change = next(cursor)
        assert change["documentKey"] == {"_id": 1}
        (aggregate,) = recorder.started_of("aggregate")
        assert "maxAwaitTimeMS" not in aggregate.command
        assert "maxTimeMS" not in aggregate.command
        get_mores = recorder.started_of("getMore")
        assert get_mores and all(e.command["maxTimeMS"] == 50 for e in get_mores)
        # And what the server says to the field on the aggregate itself:
        with pytest.raises(OperationFailure) as refused:
            collection.database.command(
                {"aggregate": collection.name, "pipeline": [], "cursor": {}, "maxAwaitTimeMS": 5}
            )
        assert refused.value.code == 40415


@pytest.mark.parametrize(("max_wire_version", "sent"), [(8, False), (9, True)])
def test_the_get_more_comment_goes_to_servers_4_4_and_newer(
    mockupdb_factory: Callable[..., MockupDB], max_wire_version: int, sent: bool
) -> None:
    """MongoDB before 4.4 (wire version 9) refuses comment on getMore; the find still
    carries it. The broken variants this catches: the comment sent to a 4.2 server
    (whose getMore would fail), or left off a 4.4 one's."""
    server = mockupdb_factory()
    reply = hello_reply(maxWireVersion=max_wire_version)
    HelloResponder.install(server, reply, handshake_reply=reply)
    commands: queue.Queue[dict[str, Any]] = queue.Queue()

    def answer(request: Any) -> bool:
        name = request.command_name
        if name not in ("find", "getMore"):
            return False
        commands.put(dict(request.doc))
        batch = "firstBatch" if name == "find" else "nextBatch"
        cursor_id = Int64(5 if name == "find" else 0)
        request.reply({"cursor": {"id": cursor_id, "ns": "db.c", batch: [{"_id": name}]}})
        return True

    server.autoresponds(answer)
    uri = f"mongodb://{address_of(server)}/"
    with Client(uri, serverSelectionTimeoutMS=10_000) as client:
        documents = list(client["db"]["c"].find({}, batch_size=1, comment=COMMENT))
    assert documents == [{"_id": "find"}, {"_id": "getMore"}]
    find = commands.get(timeout=DEADLINE)
    get_more = commands.get(timeout=DEADLINE)
    assert find["comment"] == COMMENT
    assert get_more["getMore"] == 5
    assert ("comment" in get_more) is sent
    if sent:
        assert get_more["comment"] == COMMENT
