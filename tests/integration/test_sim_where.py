"""``$where`` on the simulated mongod, with pymongo as the independent client: matches,
the server's errors, and a ``sleep()`` that holds no lock and that killOp, maxTimeMS and
a departed client interrupt."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("pyuca")
pytest.importorskip("dukpy")

from bson import Code  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import NetworkTimeout, OperationFailure  # noqa: E402

from mongocore.sim import ReplicaSet, javascript  # noqa: E402

DEADLINE = 30.0
# Longer than any test waits: only an interruption ends these sleeps.
LONG_SLEEP = "sleep(600000) || true"


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(1) as replica_set:
        yield replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[MongoClient[dict[str, Any]]]:
    mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, serverSelectionTimeoutMS=20_000)
    try:
        mongo.t.drop_collection("items")
        documents = [{"_id": i, "a": i, "tag": "odd" if i % 2 else "even"} for i in range(6)]
        mongo.t.items.insert_many(documents)
        yield mongo
    finally:
        mongo.close()


def wait_until(predicate: Callable[[], bool], timeout: float = DEADLINE) -> bool:
    deadline = time.monotonic() + timeout
    event = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            return False
        event.wait(0.02)
    return True


def where_ops(client: MongoClient[dict[str, Any]]) -> list[dict[str, Any]]:
    reply = client.admin.command({"currentOp": 1, "command.filter.$where": {"$exists": True}})
    return list(reply["inprog"])


class Background:
    """Runs one call on a thread of its own; ``result()`` joins it."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.outcome: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.outcome = call()
            except BaseException as exc:
                self.error = exc

        self.thread = threading.Thread(target=run, name="test-where-find")
        self.thread.start()

    def join(self) -> None:
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), "the $where operation did not end"


def ids(docs: Any) -> list[Any]:
    return sorted(doc["_id"] for doc in docs)


def test_string_expression_and_function_match(client: MongoClient[dict[str, Any]]) -> None:
    items = client.t.items
    assert ids(items.find({"$where": "this.a > 3"})) == [4, 5]
    assert ids(items.find({"$where": "obj.tag == 'odd'"})) == [1, 3, 5]
    function = "function () { return this.a % 3 === 0; }"
    assert ids(items.find({"$where": function})) == [0, 3]
    assert ids(items.find({"$where": Code(function)})) == [0, 3]
    # A body of several statements returns explicitly.
    assert ids(items.find({"$where": "var limit = 2; return this.a < limit;"})) == [0, 1]


def test_where_with_other_conditions(client: MongoClient[dict[str, Any]]) -> None:
    items = client.t.items
    assert ids(items.find({"tag": "even", "$where": "this.a >= 2"})) == [2, 4]
    assert ids(items.find({"_id": {"$lt": 3}, "$where": "this.a > 0"})) == [1, 2]
    assert ids(items.find({"$or": [{"$where": "this.a == 0"}, {"a": 5}]})) == [0, 5]
    assert ids(items.find({"$nor": [{"$where": "this.a < 4"}]})) == [4, 5]
    assert items.count_documents({}) == 6
    assert sorted(items.distinct("tag", {"$where": "this.a > 4"})) == ["odd"]


def test_where_in_writes(client: MongoClient[dict[str, Any]]) -> None:
    items = client.t.items
    assert items.update_one({"$where": "this.a >= 4"}, {"$set": {"seen": True}}).modified_count == 1
    assert items.update_many({"$where": "this.a < 2"}, {"$set": {"low": True}}).modified_count == 2
    assert ids(items.find({"low": True})) == [0, 1]
    found = items.find_one_and_update({"$where": "this.a == 3"}, {"$set": {"x": 1}})
    assert found is not None and found["_id"] == 3
    assert items.delete_many({"$where": "this.tag == 'odd'"}).deleted_count == 3
    assert ids(items.find()) == [0, 2, 4]


def test_documents_are_javascript_values(client: MongoClient[dict[str, Any]]) -> None:
    items = client.t.items
    items.insert_one({"_id": "typed", "when": datetime.datetime(2020, 5, 17), "n": [1, 2]})
    dated = "this.when instanceof Date && this.when.getUTCFullYear() == 2020"
    assert ids(items.find({"$where": dated})) == ["typed"]
    assert ids(items.find({"$where": "Array.isArray(this.n) && this.n.length == 2"})) == ["typed"]
    assert ids(items.find({"$where": "this._id instanceof ObjectId"})) == []


@pytest.mark.parametrize(
    ("flt", "code", "code_name"),
    [
        ({"$where": "this.a ==="}, 139, "JSInterpreterFailure"),
        ({"$where": "missing.field > 1"}, 139, "JSInterpreterFailure"),
        ({"$where": "throw new Error('no')"}, 139, "JSInterpreterFailure"),
        ({"$where": 5}, 2, "BadValue"),
        ({"$where": ""}, 2, "BadValue"),
        ({"$where": Code("this.a > x", {"x": 1})}, 4649201, None),
    ],
)
def test_errors(
    client: MongoClient[dict[str, Any]], flt: dict[str, Any], code: int, code_name: str | None
) -> None:
    with pytest.raises(OperationFailure) as info:
        list(client.t.items.find(flt))
    assert info.value.code == code
    if code_name is not None:
        assert info.value.details is not None
        assert info.value.details["codeName"] == code_name


def test_syntax_error_names_the_error(client: MongoClient[dict[str, Any]]) -> None:
    with pytest.raises(OperationFailure) as info:
        list(client.t.items.find({"$where": "function ( { }"}))
    assert info.value.code == 139
    assert "SyntaxError" in str(info.value)


def test_match_stage_refuses_where(client: MongoClient[dict[str, Any]]) -> None:
    with pytest.raises(OperationFailure) as info:
        list(client.t.items.aggregate([{"$match": {"$where": "true"}}]))
    assert info.value.code == 2


def test_max_time_ms_ends_a_sleep_and_a_runaway_script(client: MongoClient[dict[str, Any]]) -> None:
    items = client.t.items
    for script in (LONG_SLEEP, "var i = 0; while (true) { i++; }"):
        with pytest.raises(OperationFailure) as info:
            list(items.find({"$where": script}, max_time_ms=200))
        assert info.value.code == 50


def test_runaway_script_without_max_time_ms(
    client: MongoClient[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(javascript, "JAVASCRIPT_TIME_LIMIT", 0.3)
    with pytest.raises(OperationFailure) as info:
        list(client.t.items.find({"$where": "var i = 0; while (true) { i++; }"}))
    assert info.value.code == 139


def test_sleep_holds_no_lock_and_kill_op_interrupts_it(
    client: MongoClient[dict[str, Any]], rs: ReplicaSet
) -> None:
    items = client.t.items
    sleeper = Background(lambda: list(items.find({"_id": 1, "$where": LONG_SLEEP})))
    try:
        assert wait_until(lambda: bool(where_ops(client)))
        # The deployment keeps answering while the script sleeps.
        other: MongoClient[dict[str, Any]] = MongoClient(rs.uri, socketTimeoutMS=10_000)
        try:
            assert other.admin.command("ping")["ok"] == 1.0
            other.t.items.insert_one({"_id": 100})
            assert other.t.items.find_one({"_id": 100}) == {"_id": 100}
        finally:
            other.close()
        (op,) = where_ops(client)
        client.admin.command("killOp", op=op["opid"])
    finally:
        sleeper.join()
    assert isinstance(sleeper.error, OperationFailure)
    assert sleeper.error.code == 11601
    assert where_ops(client) == []


def test_a_departed_client_ends_the_script(
    client: MongoClient[dict[str, Any]], rs: ReplicaSet
) -> None:
    impatient: MongoClient[dict[str, Any]] = MongoClient(
        rs.uri, socketTimeoutMS=300, retryReads=False
    )
    try:
        with pytest.raises(NetworkTimeout):
            list(impatient.t.items.find({"_id": 1, "$where": LONG_SLEEP}))
    finally:
        impatient.close()
    # The server notices the closed connection and kills the operation.
    assert wait_until(lambda: where_ops(client) == [])
