"""The simulator's diagnostic pieces on their own: the query planner explain reports, the
opcounters, the user registry, and the role rules of the new commands over raw OP_MSG
(no driver adding a read preference)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("pyuca")

from mongocore.sim import ReplicaSet, Security, User
from mongocore.sim.operations import OpCounters
from mongocore.sim.query_planner import (
    QueryShape,
    choose_plans,
    execution_stages,
    index_bounds,
    parsed_query,
    plan_stages,
)
from tests.unit.sim_wire import RawClient, connect

INDEXES = {
    "_id_": {"key": [("_id", 1)], "v": 2},
    "a_1": {"key": [("a", 1)], "v": 2},
    "a_1_b_1": {"key": [("a", 1), ("b", 1)], "v": 2, "unique": True},
}
DOCS = [{"_id": i, "a": i % 4, "b": i % 3, "c": i} for i in range(12)]


# -- the planner -----------------------------------------------------------------------


def test_parsed_query_is_the_server_normal_form() -> None:
    assert parsed_query({}) == {}
    assert parsed_query({"a": 1}) == {"a": {"$eq": 1}}
    assert parsed_query({"a": {"$gt": 1, "$lt": 5}, "b": 2}) == {
        "$and": [{"a": {"$gt": 1}}, {"a": {"$lt": 5}}, {"b": {"$eq": 2}}]
    }


def test_the_longest_constrained_index_prefix_wins() -> None:
    shape = QueryShape(filter={"a": 1, "b": 2})
    winner, rejected = choose_plans(True, INDEXES, shape)
    assert (winner.access, winner.index) == ("IXSCAN", "a_1_b_1")
    assert [p.index for p in rejected] == ["a_1"]
    assert index_bounds(winner, shape.filter) == {"a": ["[1, 1]"], "b": ["[2, 2]"]}
    tree = plan_stages(winner, shape, INDEXES)
    assert tree["stage"] == "FETCH" and "filter" not in tree
    assert tree["inputStage"]["isUnique"] is True


def test_access_paths() -> None:
    assert choose_plans(False, INDEXES, QueryShape(filter={"a": 1}))[0].access == "EOF"
    assert choose_plans(True, INDEXES, QueryShape(filter={"_id": 3}))[0].access == "IDHACK"
    assert choose_plans(True, INDEXES, QueryShape(filter={"c": 3}))[0].access == "COLLSCAN"
    # An $or is not planned with an index here; a sort on an indexed field is.
    assert choose_plans(True, INDEXES, QueryShape(filter={"$or": [{"a": 1}]}))[0].access == (
        "COLLSCAN"
    )
    by_sort = choose_plans(True, INDEXES, QueryShape(filter={"c": 1}, sort={"a": -1}))[0]
    assert (by_sort.index, by_sort.direction, by_sort.sorted_by_index) == ("a_1", -1, True)
    hinted = choose_plans(True, INDEXES, QueryShape(filter={"c": 1}, hint="a_1"))[0]
    assert hinted.index == "a_1"
    natural = choose_plans(True, INDEXES, QueryShape(hint={"$natural": -1}))[0]
    assert (natural.access, natural.direction) == ("COLLSCAN", -1)


def test_range_bounds() -> None:
    shape = QueryShape(filter={"a": {"$gte": 1, "$lt": 3}})
    winner, _ = choose_plans(True, INDEXES, shape)
    assert index_bounds(winner, shape.filter)["a"] == ["[1, 3)"]
    in_shape = QueryShape(filter={"a": {"$in": [3, 1]}})
    winner, _ = choose_plans(True, INDEXES, in_shape)
    assert index_bounds(winner, in_shape.filter)["a"] == ["[1, 1]", "[3, 3]"]


def test_stages_above_the_access_path() -> None:
    shape = QueryShape(
        filter={"c": {"$gt": 2}}, sort={"c": 1}, skip=1, limit=2, projection={"c": 1}
    )
    winner, _ = choose_plans(True, INDEXES, shape)
    tree = plan_stages(winner, shape, INDEXES)
    names = []
    stage = tree
    while True:
        names.append(stage["stage"])
        if "inputStage" not in stage:
            break
        stage = stage["inputStage"]
    assert names == ["PROJECTION_SIMPLE", "SKIP", "SORT", "COLLSCAN"]
    assert tree["inputStage"]["inputStage"]["limitAmount"] == 3


def test_execution_counts() -> None:
    shape = QueryShape(filter={"a": 1})
    winner, _ = choose_plans(True, INDEXES, shape)
    tree, totals = execution_stages(winner, shape, INDEXES, DOCS)
    assert totals == {"nReturned": 3, "totalKeysExamined": 3, "totalDocsExamined": 3}
    assert tree["nReturned"] == 3 and tree["inputStage"]["keysExamined"] == 3
    scan = QueryShape(filter={"c": {"$gte": 0}}, limit=2)
    winner, _ = choose_plans(True, INDEXES, scan)
    _, totals = execution_stages(winner, scan, INDEXES, DOCS)
    # A scan without a blocking sort stops once it has what the limit asks for.
    assert totals == {"nReturned": 2, "totalKeysExamined": 0, "totalDocsExamined": 2}
    by_id = QueryShape(filter={"_id": 99})
    winner, _ = choose_plans(True, INDEXES, by_id)
    _, totals = execution_stages(winner, by_id, INDEXES, DOCS)
    assert totals == {"nReturned": 0, "totalKeysExamined": 0, "totalDocsExamined": 0}


# -- counters and users ------------------------------------------------------------------


def test_opcounters_count_as_a_server_does() -> None:
    counters = OpCounters()
    counters.record("insert", {"insert": "c", "documents": [{}, {}, {}]})
    counters.record("update", {"update": "c", "updates": [{}, {}]})
    counters.record("delete", {"delete": "c", "deletes": [{}]})
    counters.record("find", {"find": "c"})
    counters.record("getMore", {"getMore": 1})
    counters.record("aggregate", {"aggregate": "c"})
    counters.record("hello", {"hello": 1})
    assert counters.document() == {
        "insert": 3,
        "query": 1,
        "update": 2,
        "delete": 1,
        "getmore": 1,
        "command": 2,
    }


def test_users_added_later_do_not_turn_authentication_on() -> None:
    open_server = Security()
    open_server.add_user(User("late", "pw"))
    assert not open_server.auth_enabled
    assert open_server.user("admin", "late") is not None
    stored = open_server.stored_credentials(open_server.users[0])
    assert stored["SCRAM-SHA-256"]["iterationCount"] == 15000
    assert stored["SCRAM-SHA-1"]["iterationCount"] == 10000
    with pytest.raises(ValueError):
        open_server.add_user(User("late", "again"))
    assert open_server.remove_user("admin", "late")
    assert not open_server.remove_user("admin", "late")
    secured = Security(users=[User("root", "pw")])
    secured.remove_user("admin", "root")
    assert secured.auth_enabled  # --auth is fixed at startup


# -- over the wire ---------------------------------------------------------------------


@pytest.fixture
def secondary(rs: ReplicaSet) -> Iterator[RawClient]:
    rs.wait_for_primary()
    with connect(rs.secondaries[0]) as raw:
        yield raw


def test_local_reads_on_a_secondary_need_no_secondary_ok(secondary: RawClient) -> None:
    oplog = secondary.command("local", {"find": "oplog.rs", "limit": 1})
    assert oplog["ok"] == 1.0 and len(oplog["cursor"]["firstBatch"]) == 1
    stats = secondary.command("local", {"collStats": "oplog.rs"})
    assert stats["ok"] == 1.0 and stats["capped"] is True
    other = secondary.command("app", {"find": "items"})
    assert other["code"] == 13435  # NotPrimaryNoSecondaryOk


def test_refusals_are_server_errors(rs: ReplicaSet) -> None:
    with connect(rs.wait_for_primary()) as primary:
        reply = primary.command(
            "app", {"aggregate": "c", "pipeline": [{"$collStats": 1}], "cursor": {}}
        )
        assert (reply["ok"], reply["code"]) == (0.0, 5447000)
        reply = primary.command("app", {"explain": {"find": "c"}, "verbosity": 3})
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 9, "FailedToParse")
        reply = primary.command("app", {"killOp": 1, "op": 1})
        assert reply["code"] == 13  # admin only
        reply = primary.command("admin", {"killOp": 1, "op": "one"})
        assert reply["code"] == 14
        reply = primary.command("admin", {"currentOp": 1, "op": "command"})
        assert all(op["op"] == "command" for op in reply["inprog"])
        reply = primary.command(
            "app", {"aggregate": 1, "pipeline": [{"$currentOp": {}}], "cursor": {}}
        )
        assert reply["code"] == 73  # only on admin
