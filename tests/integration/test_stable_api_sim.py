"""The Stable API end to end: a client declaring a server API version against the
simulated MongoDB 7.0 deployments (which refuse what a 7.0 server refuses), against
MockupDB (what the handshake and the monitor send on the wire), and side by side
with pymongo (the same fields on the same commands for the same options)."""

from __future__ import annotations

import threading
from typing import Any, Optional

import pytest
from mockupdb import MockupDB, OpMsg

from mongocore import MongoClient
from mongocore.core.events import CommandStartedEvent
from mongocore.errors import OperationFailure
from mongocore.server_api import ServerApi
from mongocore.sim import ReplicaSet, Standalone, User
from tests.integration.mock_servers import HelloResponder, address_of, hello_reply
from tests.integration.sim_client import FAST, Recorder

pymongo = pytest.importorskip("pymongo")
from pymongo import monitoring as pymongo_monitoring  # noqa: E402
from pymongo.server_api import ServerApi as PymongoServerApi  # noqa: E402

API_FIELDS = ("apiVersion", "apiStrict", "apiDeprecationErrors")
STRICT = ServerApi("1", strict=True)


def api_fields_of(command: Any) -> dict[str, Any]:
    return {name: command[name] for name in API_FIELDS if name in command}


def workload(client: Any, db_name: str, strict: bool) -> None:
    """One of each kind of command an application sends, through pymongo's API (which
    mongocore's MongoClient shares): CRUD, a cursor's getMore and killCursors, indexes,
    runCommand, and the commands of two transactions. ``strict``: the client declares
    apiStrict, and distinct, outside API version 1, is refused (APIStrictError)."""
    coll = client[db_name]["items"]
    coll.drop()
    coll.insert_many([{"_id": i, "x": i} for i in range(6)])
    coll.update_one({"_id": 1}, {"$set": {"x": 10}})
    coll.delete_one({"_id": 5})
    coll.find_one_and_update({"_id": 2}, {"$inc": {"x": 1}})
    cursor = coll.find({}, batch_size=2)
    assert [next(cursor)["_id"] for _ in range(3)] == [0, 1, 2]  # the third needs a getMore
    cursor.close()  # killCursors
    assert list(coll.aggregate([{"$match": {"x": {"$gte": 0}}}]))
    assert coll.count_documents({}) == 5
    assert coll.estimated_document_count() == 5
    if strict:
        with pytest.raises((OperationFailure, pymongo.errors.OperationFailure)) as caught:
            coll.distinct("x")
        assert caught.value.code == 323, caught.value
    else:
        assert coll.distinct("x")
    coll.create_index("x")
    assert len(list(coll.list_indexes())) == 2
    assert client[db_name].list_collection_names() == ["items"]
    assert client[db_name].command("ping")["ok"] == 1
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 10}, session=session)
        coll.insert_one({"_id": 11}, session=session)
        session.commit_transaction()
        session.start_transaction()
        coll.insert_one({"_id": 12}, session=session)
        session.abort_transaction()
    assert coll.count_documents({"_id": {"$gte": 10}}) == 2


def commands_sent(
    rs: ReplicaSet, server_api: Optional[ServerApi], db_name: str
) -> list[CommandStartedEvent]:
    recorder = Recorder()
    client = MongoClient(rs.uri, event_listeners=[recorder], server_api=server_api, **FAST)
    try:
        workload(client, db_name, server_api is not None and bool(server_api.strict))
    finally:
        client.close()  # endSessions
    return recorder.of(CommandStartedEvent)


# --- every command, with the simulator refusing what a server refuses ----------------


def test_every_command_carries_the_declared_version_and_a_strict_server_accepts_it(
    rs: ReplicaSet,
) -> None:
    started = commands_sent(rs, STRICT, "stable_api_strict")
    names = {event.command_name for event in started}
    expected = {
        "drop", "insert", "update", "delete", "findAndModify", "find", "getMore",
        "killCursors", "aggregate", "count", "distinct", "createIndexes", "listIndexes",
        "listCollections", "ping", "commitTransaction", "abortTransaction", "endSessions",
    }  # fmt: skip
    assert expected <= names, sorted(expected - names)
    for event in started:
        assert api_fields_of(event.command) == {"apiVersion": "1", "apiStrict": True}, event
    # The transaction's later commands and its commit carry them as its first did.
    in_transaction = [e for e in started if "txnNumber" in e.command and "autocommit" in e.command]
    assert len(in_transaction) >= 5


def test_without_a_declaration_nothing_is_added(rs: ReplicaSet) -> None:
    for event in commands_sent(rs, None, "stable_api_none"):
        assert api_fields_of(event.command) == {}, event


def test_the_server_refuses_a_command_outside_version_1_in_strict_mode(rs: ReplicaSet) -> None:
    with MongoClient(rs.uri, server_api=STRICT, **FAST) as client:
        with pytest.raises(OperationFailure) as caught:
            client.admin.command("buildInfo")
        assert caught.value.code == 323
        assert caught.value.details["codeName"] == "APIStrictError"
    # Not strict: the same command runs.
    with MongoClient(rs.uri, server_api=ServerApi("1"), **FAST) as client:
        assert client.admin.command("buildInfo")["version"].startswith("7.0")


def test_run_command_takes_the_clients_declaration(rs: ReplicaSet) -> None:
    recorder = Recorder()
    with MongoClient(rs.uri, event_listeners=[recorder], server_api=STRICT, **FAST) as client:
        # An unknown version in the document is replaced by the client's: the ping runs.
        assert client.admin.command({"ping": 1, "apiVersion": "2", "apiStrict": False})["ok"]
    (ping,) = recorder.started_of("ping")
    assert api_fields_of(ping.command) == {"apiVersion": "1", "apiStrict": True}
    # Without a declaration the document goes as written, and the server judges it.
    with MongoClient(rs.uri, **FAST) as client:
        with pytest.raises(OperationFailure) as caught:
            client.admin.command({"ping": 1, "apiVersion": "2"})
        assert caught.value.code == 322


def test_the_handshake_and_monitoring_use_hello_only() -> None:
    with Standalone() as server:
        with MongoClient(server.uri, server_api=STRICT, **FAST) as client:
            client.admin.command("ping")
        received = [request.command for request in server.member.server.requests]
    assert received.count("hello") >= 2  # the monitor's and the pool's handshakes
    assert "isMaster" not in received and "ismaster" not in received


def test_a_strict_client_authenticates() -> None:
    with Standalone(users=[User("app", "secret")]) as server:
        recorder = Recorder()
        with MongoClient(
            server.uri,
            username="app",
            password="secret",
            server_api=STRICT,
            event_listeners=[recorder],
            **FAST,
        ) as client:
            assert client.test.command("ping")["ok"] == 1
        (ping,) = recorder.started_of("ping")
        assert ping.command["apiStrict"] is True


# --- on the wire: the handshake and the monitor's checks (MockupDB) ------------------


def test_handshake_and_heartbeats_are_op_msg_hello_with_the_fields(
    mockupdb_server: MockupDB,
) -> None:
    # A server that never says helloOk: the monitor still never falls back to isMaster.
    responder = HelloResponder.install(mockupdb_server, hello_reply(helloOk=False))
    api = ServerApi("1", deprecation_errors=False)
    uri = f"mongodb://{address_of(mockupdb_server)}/?heartbeatFrequencyMS=500"
    with MongoClient(uri, server_api=api, serverSelectionTimeoutMS=10_000):
        handshake = responder.next_seen()
        heartbeat = responder.next_seen()
    for request in (handshake, heartbeat):
        assert isinstance(request, OpMsg)
        assert request.command_name == "hello"
        assert api_fields_of(request.doc) == {"apiVersion": "1", "apiDeprecationErrors": False}
    assert "client" in handshake.doc and "client" not in heartbeat.doc


def test_without_a_declaration_the_handshake_is_legacy_hello(mockupdb_server: MockupDB) -> None:
    responder = HelloResponder.install(mockupdb_server)
    with MongoClient(f"mongodb://{address_of(mockupdb_server)}", serverSelectionTimeoutMS=10_000):
        handshake = responder.next_seen()
    assert handshake.command_name == "isMaster"
    assert api_fields_of(handshake.doc) == {}


# --- parity with pymongo ------------------------------------------------------------


class PymongoRecorder(pymongo_monitoring.CommandListener):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[Any] = []

    def started(self, event: Any) -> None:
        with self.lock:
            self.events.append(event)

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


def fields_by_command(events: list[Any]) -> dict[str, list[dict[str, Any]]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_name.setdefault(event.command_name, []).append(api_fields_of(event.command))
    return by_name


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"strict": True},
        {"strict": False, "deprecation_errors": True},
        {"deprecation_errors": False},
    ],
)
def test_same_fields_as_pymongo(rs: ReplicaSet, options: dict[str, Any]) -> None:
    ours = commands_sent(rs, ServerApi("1", **options), "stable_api_ours")
    listener = PymongoRecorder()
    client: Any = pymongo.MongoClient(
        rs.uri, event_listeners=[listener], server_api=PymongoServerApi("1", **options), **FAST
    )
    try:
        workload(client, "stable_api_theirs", bool(options.get("strict")))
    finally:
        client.close()
    mine = fields_by_command(ours)
    theirs = fields_by_command(listener.events)
    assert theirs, "pymongo sent nothing"
    for name in set(mine) & set(theirs):
        assert set(map(_frozen, mine[name])) == set(map(_frozen, theirs[name])), name
    assert {"find", "getMore", "insert", "commitTransaction", "abortTransaction"} <= (
        set(mine) & set(theirs)
    )


def _frozen(fields: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(fields.items()))
