"""Cursors and results in pymongo's shape, without a server: the find command a cursor
builds from its modifiers, slicing, cloning, what getMore and killCursors echo back
(the cursor id's BSON type, the namespace when a reply has no ``ns``), and the
result objects' attributes.

Spec: CRUD (find options, results), find/getMore/killCursors.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Optional, cast

import bson
import pytest
from bson import Int64

from mongocore.api.bulk import _Batch, _BulkWrite
from mongocore.api.collection import Collection
from mongocore.api.command_cursor import (
    CommandCursor,
    _command_namespace,
    _write_stage_read_preference,
)
from mongocore.api.cursor import Cursor
from mongocore.api.cursor_options import index_spec, slice_bounds
from mongocore.api.operations import UpdateOne
from mongocore.api.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import ServerType
from mongocore.core.selection.read_preference import PRIMARY, Mode, ReadPreference
from mongocore.errors import InvalidOperation
from mongocore.io.operation import CommandOutcome, Operation

ADDRESS = Address("db.example", 27017)


class FakeExecutor:
    """Records each operation's command and answers with the queued replies."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def run(self, op: Operation) -> CommandOutcome:
        command = op.build(cast(Any, None))
        self.sent.append((op.database, command.body))
        return CommandOutcome(self.replies.pop(0), ADDRESS, cast(Any, None), 1)


class FakeClient:
    def __init__(self, replies: Optional[list[dict[str, Any]]] = None) -> None:
        self._executor = FakeExecutor(replies or [])


class FakeSession:
    has_ended = False

    def end_session(self) -> None:
        self.has_ended = True


class FakeCollection:
    """What a Cursor reads from its collection before it starts."""

    name = "items"
    _decoding = None

    def __init__(self) -> None:
        self.client = FakeClient()


def _cursor(**options: Any) -> Cursor:
    return Cursor(cast(Collection, FakeCollection()), {"a": 1}, **options)


def _command_cursor(
    reply: dict[str, Any], client: FakeClient, ns: tuple[str, str]
) -> CommandCursor:
    outcome = CommandOutcome(reply, ADDRESS, cast(Any, None), 1)
    session = cast(Any, FakeSession())
    return CommandCursor.from_reply(cast(Any, client), outcome, None, session, None, namespace=ns)


# --- modifiers -----------------------------------------------------------------------------


def test_modifiers_chain_and_become_find_fields() -> None:
    cursor = _cursor()
    same = (
        cursor.hint([("a", 1)])
        .max_time_ms(500)
        .comment("why")
        .collation({"locale": "fr"})
        .min([("a", 0)])
        .max({"a": 9})
        .allow_disk_use(True)
        .sort("a", -1)
        .skip(2)
        .limit(3)
    )
    assert same is cursor
    body = cursor._find_body()
    assert body == {
        "find": "items",
        "filter": {"a": 1},
        "sort": {"a": -1},
        "skip": 2,
        "limit": 3,
        "hint": {"a": 1},
        "maxTimeMS": 500,
        "comment": "why",
        "collation": {"locale": "fr"},
        "min": {"a": 0},
        "max": {"a": 9},
        "allowDiskUse": True,
    }
    cursor.hint(None).max_time_ms(None)
    assert "hint" not in cursor._find_body() and "maxTimeMS" not in cursor._find_body()


def test_modifiers_check_their_arguments() -> None:
    cursor = _cursor()
    with pytest.raises(TypeError):
        cursor.max_time_ms(cast(Any, "5"))
    with pytest.raises(TypeError):
        cursor.allow_disk_use(cast(Any, 1))
    with pytest.raises(TypeError):
        cursor.collation(cast(Any, "fr"))
    with pytest.raises(TypeError):
        cursor.max(cast(Any, "a"))
    with pytest.raises(TypeError):
        cursor.hint(cast(Any, 5))
    assert index_spec("a_1") == "a_1"
    assert index_spec([("a", 1), ("b", -1)]) == {"a": 1, "b": -1}


def test_a_started_cursor_refuses_modifiers() -> None:
    cursor = _cursor()
    cursor._started = True
    for change in (
        lambda: cursor.hint("a_1"),
        lambda: cursor.comment("x"),
        lambda: cursor.limit(1),
        lambda: cursor[1:2],
    ):
        with pytest.raises(InvalidOperation):
            change()


def test_clone_copies_the_query_and_options_not_the_state() -> None:
    cursor = _cursor(comment="c").sort("a").skip(1).limit(-2).batch_size(7)
    cursor._started = True
    twin = cursor.clone()
    assert twin is not cursor and not twin._started
    assert twin._find_body() == cursor._find_body()
    twin._options["comment"] = "changed"
    assert cursor._options["comment"] == "c"


# --- indexing ------------------------------------------------------------------------------


def test_slices_become_skip_and_limit() -> None:
    assert slice_bounds(slice(2, 5)) == (2, 3)
    assert slice_bounds(slice(None, 4)) == (0, 4)
    assert slice_bounds(slice(3, None)) == (3, None)
    for bad in (slice(0, 4, 2), slice(-1, 3), slice(4, 2)):
        with pytest.raises(IndexError):
            slice_bounds(bad)
    cursor = _cursor()[5:8]
    body = cursor._find_body()
    assert (body["skip"], body["limit"]) == (5, 3)


def test_an_empty_slice_sends_nothing() -> None:
    cursor = _cursor()[3:3]
    assert cursor.to_list() == []
    assert cast(FakeCollection, cursor.collection).client._executor.sent == []


def test_indexes_must_be_non_negative_ints() -> None:
    with pytest.raises(IndexError):
        _cursor()[-1]
    with pytest.raises(TypeError):
        _cursor()[cast(Any, "1")]


# --- cursor ids and namespaces ----------------------------------------------------------


@pytest.mark.parametrize("cursor_id", [Int64(77), 77], ids=["int64", "int32"])
def test_get_more_and_kill_cursors_echo_the_id_as_the_server_sent_it(cursor_id: int) -> None:
    reply = {"cursor": {"id": cursor_id, "ns": "shop.items", "firstBatch": [{"_id": 1}]}}
    client = FakeClient([{"cursor": {"id": cursor_id, "nextBatch": [{"_id": 2}]}}, {"ok": 1}])
    cursor = _command_cursor(reply, client, ("ignored", "ignored"))
    assert type(cursor.cursor_id) is type(cursor_id)
    assert [next(cursor), next(cursor)] == [{"_id": 1}, {"_id": 2}]
    cursor.close()
    (db, get_more), (_, kill) = client._executor.sent
    assert db == "shop" and get_more["collection"] == "items"
    sent_type = bson.decode(bson.encode(get_more))["getMore"]
    assert type(sent_type) is type(cursor_id)
    assert type(bson.decode(bson.encode(kill))["cursors"][0]) is type(cursor_id)


def test_a_reply_without_ns_continues_on_the_commands_namespace() -> None:
    reply = {"cursor": {"id": Int64(5), "firstBatch": []}}
    client = FakeClient([{"cursor": {"id": 0, "nextBatch": [{"_id": 1}]}}])
    cursor = _command_cursor(reply, client, ("shop", "$cmd.aggregate"))
    assert cursor.to_list() == [{"_id": 1}]
    ((db, get_more),) = client._executor.sent
    assert (db, get_more["collection"]) == ("shop", "$cmd.aggregate")
    assert not cursor.alive


def test_the_namespace_a_command_names() -> None:
    assert _command_namespace("shop", {"aggregate": "items", "pipeline": []}) == ("shop", "items")
    assert _command_namespace("shop", {"aggregate": 1}) == ("shop", "$cmd.aggregate")
    assert _command_namespace("shop", {"listCollections": 1}) == ("shop", "$cmd.listCollections")


def test_command_cursor_batch_size_applies_to_get_more() -> None:
    reply = {"cursor": {"id": Int64(5), "ns": "shop.items", "firstBatch": []}}
    client = FakeClient([{"cursor": {"id": 0, "nextBatch": []}}])
    cursor = _command_cursor(reply, client, ("shop", "items"))
    assert cursor.batch_size(3) is cursor
    assert cursor.to_list() == []
    assert client._executor.sent[0][1]["batchSize"] == 3


# --- iteration: a for loop reads a batch at a time -------------------------------------------


def _three_batches() -> tuple[CommandCursor, FakeClient]:
    """A cursor over _id 1 to 6 in three batches of two (two getMores)."""
    reply = {"cursor": {"id": Int64(5), "ns": "shop.items", "firstBatch": [{"_id": 1}, {"_id": 2}]}}
    client = FakeClient(
        [
            {"cursor": {"id": Int64(5), "nextBatch": [{"_id": 3}, {"_id": 4}]}},
            {"cursor": {"id": 0, "nextBatch": [{"_id": 5}, {"_id": 6}]}},
        ]
    )
    return _command_cursor(reply, client, ("shop", "items")), client


def _ids(documents: Any) -> list[int]:
    return [document["_id"] for document in documents]


def test_a_for_loop_reads_every_batch_in_order() -> None:
    cursor, client = _three_batches()
    assert _ids(cursor) == [1, 2, 3, 4, 5, 6]
    assert [body["getMore"] for _, body in client._executor.sent] == [5, 5]
    assert not cursor.alive and cursor.retrieved == 6
    assert _ids(cursor) == [] and cursor.try_next() is None


def test_a_loop_that_stops_goes_on_where_it_left_off_whichever_way_it_is_read() -> None:
    """Breaking out of a loop, then reading the cursor with next(), another loop,
    to_list() or try_next(): each document exactly once, in order. Broken variant
    caught: a loop taking its whole batch up front (the rest of the batch lost after
    a break), or a second reader not taking the position back (documents twice)."""
    cursor, _ = _three_batches()
    seen = []
    for document in cursor:
        seen.append(document["_id"])
        if document["_id"] == 1:
            break
    assert cursor.alive
    seen.append(next(cursor)["_id"])  # 2: the rest of the first batch
    for document in cursor:
        seen.append(document["_id"])
        if document["_id"] == 3:
            break
    seen.append(cast(dict[str, Any], cursor.try_next())["_id"])  # 4
    seen += _ids(cursor.to_list(1))  # 5
    seen += _ids(cursor)  # 6
    assert seen == [1, 2, 3, 4, 5, 6]


def test_two_loops_over_one_cursor_share_its_position() -> None:
    """Two iterators of one cursor read alternately never hand out a document twice:
    the cursor is one stream, as pymongo's (whose iterator is the cursor itself)."""
    cursor, _ = _three_batches()
    first, second = iter(cursor), iter(cursor)
    read = [next(first), next(second), next(cursor), next(first), next(second), next(first)]
    assert _ids(read) == [1, 2, 3, 4, 5, 6]
    assert list(first) == [] and list(second) == []


def test_closing_a_cursor_ends_its_loop() -> None:
    cursor, client = _three_batches()
    client._executor.replies.insert(0, {"ok": 1})  # the killCursors reply
    seen = []
    for document in cursor:
        seen.append(document["_id"])
        cursor.close()
    assert seen == [1]
    assert [next(iter(body)) for _, body in client._executor.sent] == ["killCursors"]


# --- results -------------------------------------------------------------------------------


def test_update_result_reads_the_reply_in_pymongos_shape() -> None:
    upserted = UpdateResult({"n": 1, "nModified": 0, "upserted": 9, "ok": 1.0}, True)
    assert (upserted.matched_count, upserted.upserted_id, upserted.did_upsert) == (0, 9, True)
    none_id = UpdateResult({"n": 1, "nModified": 0, "upserted": None, "ok": 1.0}, True)
    assert none_id.did_upsert and none_id.matched_count == 0
    matched = UpdateResult({"n": 2, "nModified": 1, "ok": 1.0, "updatedExisting": True}, True)
    assert (matched.matched_count, matched.modified_count, matched.upserted_id) == (2, 1, None)
    assert not matched.did_upsert and matched.raw_result is not None
    command_shape = UpdateResult({"n": 1, "upserted": [{"index": 0, "_id": 4}]}, True)
    assert command_shape.upserted_id == 4
    unacknowledged = UpdateResult(None, False)
    assert unacknowledged.raw_result is None
    with pytest.raises(InvalidOperation):
        _ = unacknowledged.matched_count


def test_delete_insert_and_bulk_results() -> None:
    assert DeleteResult({"n": 3, "ok": 1.0}, True).deleted_count == 3
    assert DeleteResult(None, False).raw_result is None
    one = InsertOneResult(5, False)
    assert one.inserted_id == 5 and not one.acknowledged
    assert InsertManyResult([1, 2], True).inserted_ids == [1, 2]
    raw = {
        "writeErrors": [],
        "writeConcernErrors": [],
        "nInserted": 1,
        "nUpserted": 1,
        "nMatched": 2,
        "nModified": 2,
        "nRemoved": 1,
        "upserted": [{"index": 3, "_id": "x"}],
    }
    bulk = BulkWriteResult(raw, True)
    counts = (bulk.inserted_count, bulk.matched_count, bulk.modified_count)
    assert counts == (1, 2, 2)
    assert (bulk.deleted_count, bulk.upserted_count, bulk.upserted_ids) == (1, 1, {3: "x"})
    assert BulkWriteResult({}, True).upserted_ids is None
    with pytest.raises(InvalidOperation):
        _ = BulkWriteResult({}, False).upserted_ids


def test_an_upsert_reply_without_index_is_placed_by_its_order() -> None:
    collection = cast(Any, FakeCollection())
    requests = [UpdateOne({"_id": i}, {"$set": {"x": 1}}, upsert=True) for i in range(3)]
    bulk = _BulkWrite(
        collection, requests, ordered=True, session=cast(Any, None), timeout_ms=None, options={}
    )
    group = _Batch("update", [(i, r._statement()) for i, r in enumerate(requests)])
    reply = {"n": 3, "nModified": 1, "upserted": [{"_id": "a"}, {"_id": "b"}], "ok": 1}
    bulk._merge(group, range(3), reply)
    assert bulk.result["upserted"] == [{"index": 0, "_id": "a"}, {"index": 1, "_id": "b"}]
    assert (bulk.result["nUpserted"], bulk.result["nMatched"]) == (2, 1)
    double_index = {"n": 1, "nModified": 0, "upserted": [{"index": 2.0, "_id": "c"}], "ok": 1}
    bulk._merge(group, range(3), double_index)
    assert bulk.result["upserted"][-1] == {"index": 2, "_id": "c"}


def _scope_with(*types_and_versions: tuple[ServerType, int]) -> Any:
    servers = {
        Address(f"m{i}", 27017): ServerDescription(
            Address(f"m{i}", 27017), server_type, max_wire_version=version
        )
        for i, (server_type, version) in enumerate(types_and_versions)
    }
    description = SimpleNamespace(servers=servers)
    client = SimpleNamespace(topology=SimpleNamespace(description=description))
    return SimpleNamespace(read_preference=PRIMARY, _client=client)


def test_an_aggregate_writing_keeps_its_read_preference_while_a_member_is_unchecked() -> None:
    """A PossiblePrimary (named by a secondary's hello, not checked yet) and an Unknown
    member carry no wire version: they must not send $out to the primary while every
    checked member is 5.0 or newer. (Counting the PossiblePrimary's 0 did, for as long
    as discovery took: the CRUD suite's "$out includes read preference" test failed
    when it ran then.)"""
    preference = ReadPreference(Mode.SECONDARY_PREFERRED)
    unchecked = _scope_with(
        (ServerType.RS_SECONDARY, 21),
        (ServerType.POSSIBLE_PRIMARY, 0),
        (ServerType.UNKNOWN, 0),
    )
    assert _write_stage_read_preference(unchecked, preference) is preference
    old = _scope_with((ServerType.RS_SECONDARY, 21), (ServerType.RS_PRIMARY, 12))
    assert _write_stage_read_preference(old, preference) is None
    assert _write_stage_read_preference(unchecked, ReadPreference(Mode.PRIMARY)) is None
