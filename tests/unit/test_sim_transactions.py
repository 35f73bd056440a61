"""The simulated server's answers to a transaction's commands, on the wire (what a driver
does not let a test send: wrong numbers, options a driver refuses, internal commands)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca")

from bson import Binary, Int64, ObjectId

from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from mongocore.sim.error_labels import error_labels
from tests.unit.sim_wire import RawClient, connect

DB = "db"


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(2, election_delay=0.02) as replica_set:
        yield replica_set


@pytest.fixture
def primary(rs: ReplicaSet) -> Iterator[RawClient]:
    with connect(rs.wait_for_primary()) as client:
        yield client


def _session() -> dict[str, Any]:
    return {"id": Binary(uuid.uuid4().bytes, 4)}


def _txn(lsid: dict[str, Any], number: int = 1, *, start: bool = False) -> dict[str, Any]:
    fields: dict[str, Any] = {"lsid": lsid, "txnNumber": Int64(number), "autocommit": False}
    if start:
        fields["startTransaction"] = True
    return fields


def _insert(doc: dict[str, Any], **txn: Any) -> dict[str, Any]:
    return {"insert": "c", "documents": [doc], **txn}


def _commit(lsid: dict[str, Any], number: int = 1) -> dict[str, Any]:
    return {"commitTransaction": 1, **_txn(lsid, number)}


def _count(client: RawClient) -> int:
    return int(client.command(DB, {"count": "c"})["n"])


def test_the_states_of_a_transaction(primary: RawClient) -> None:
    lsid = _session()
    assert primary.command(DB, _insert({"_id": 1}, **_txn(lsid, start=True)))["ok"] == 1.0
    twice = primary.command(DB, _insert({"_id": 2}, **_txn(lsid, start=True)))
    assert twice["code"] == 117  # one number, one transaction
    assert primary.command("admin", _commit(lsid))["ok"] == 1.0
    assert primary.command("admin", _commit(lsid))["ok"] == 1.0  # a retried commit
    after = primary.command(DB, _insert({"_id": 3}, **_txn(lsid)))
    assert after["code"] == 256 and after["codeName"] == "TransactionCommitted"
    abort = primary.command("admin", {"abortTransaction": 1, **_txn(lsid)})
    assert abort["code"] == 256
    assert primary.command(DB, _insert({"_id": 4}, **_txn(lsid, 2, start=True)))["ok"] == 1.0
    old = primary.command("admin", _commit(lsid, 1))
    assert old["code"] == 225  # the session moved on
    assert primary.command("admin", {"abortTransaction": 1, **_txn(lsid, 2)})["ok"] == 1.0
    aborted = primary.command("admin", _commit(lsid, 2))
    assert aborted["code"] == 251 and aborted["errorLabels"] == ["TransientTransactionError"]
    unknown = primary.command(DB, _insert({"_id": 5}, **_txn(lsid, 3)))
    assert unknown["code"] == 251 and unknown["errorLabels"] == ["TransientTransactionError"]
    assert _count(primary) == 1


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"autocommit": True}, 72),
        ({"autocommit": None, "startTransaction": True}, 72),
        ({"startTransaction": False}, 72),
        ({"readConcern": {"level": "available"}}, 72),
        ({"readConcern": {"level": "local", "atClusterTime": 1}}, 72),
        ({"writeConcern": {"w": 1}}, 72),
    ],
)
def test_session_options_a_server_refuses(
    primary: RawClient, extra: dict[str, Any], code: int
) -> None:
    command = _insert({"_id": 1}, **_txn(_session(), start=True))
    command.update(extra)
    if command.get("autocommit") is None:
        del command["autocommit"]
    reply = primary.command(DB, command)
    assert reply["code"] == code, reply
    assert _count(primary) == 0


@pytest.mark.parametrize(
    ("db", "command"),
    [
        (DB, {"count": "c"}),
        (DB, {"listCollections": 1}),
        ("admin", {"insert": "c", "documents": [{}]}),
        ("local", {"find": "c"}),
        (DB, {"insert": "system.js", "documents": [{}]}),
        (DB, {"aggregate": "c", "pipeline": [{"$out": "d"}], "cursor": {}}),
        (DB, {"commitTransaction": 1}),
    ],
)
def test_commands_a_transaction_may_not_run(
    primary: RawClient, db: str, command: dict[str, Any]
) -> None:
    reply = primary.command(db, {**command, **_txn(_session(), start=True)})
    assert reply["ok"] == 0.0
    assert reply["code"] in (263, 13), reply  # commitTransaction outside admin: 13


def test_read_concern_only_on_the_first_command(primary: RawClient) -> None:
    lsid = _session()
    first = {**_insert({"_id": 1}, **_txn(lsid, start=True)), "readConcern": {"level": "snapshot"}}
    assert primary.command(DB, first)["ok"] == 1.0
    later = {**_insert({"_id": 2}, **_txn(lsid)), "readConcern": {"level": "snapshot"}}
    assert primary.command(DB, later)["code"] == 72


def test_a_retryable_write_cannot_reuse_a_transaction_number(primary: RawClient) -> None:
    lsid = _session()
    assert primary.command(DB, _insert({"_id": 1}, **_txn(lsid, start=True)))["ok"] == 1.0
    retryable = primary.command(DB, _insert({"_id": 2}, lsid=lsid, txnNumber=Int64(1)))
    assert retryable["code"] == 217
    newer = primary.command(DB, _insert({"_id": 3}, lsid=lsid, txnNumber=Int64(2)))
    assert newer["n"] == 1
    superseded = primary.command("admin", _commit(lsid))  # the newer write ended it
    assert superseded["code"] == 225
    assert _count(primary) == 1


def test_two_transactions_creating_one_collection_conflict(primary: RawClient) -> None:
    first, second = _session(), _session()
    assert primary.command(DB, _insert({"_id": 1}, **_txn(first, start=True)))["ok"] == 1.0
    conflict = primary.command(DB, _insert({"_id": 2}, **_txn(second, start=True)))
    assert conflict["code"] == 112 and conflict["errorLabels"] == ["TransientTransactionError"]
    assert primary.command("admin", _commit(first))["ok"] == 1.0
    assert _count(primary) == 1


def test_the_snapshot_outlives_a_dropped_database(primary: RawClient) -> None:
    reader, writer = _session(), _session()
    assert primary.command(DB, {"insert": "other", "documents": [{"_id": 1}]})["n"] == 1
    assert primary.command("db2", _insert({"_id": 1}, **_txn(reader, start=True)))["ok"] == 1.0
    assert primary.command(DB, _insert({"_id": 1}, **_txn(writer, start=True)))["ok"] == 1.0
    assert primary.command(DB, {"dropDatabase": 1})["ok"] == 1.0
    # The reader's snapshot still has the collection, which it never named before.
    found = primary.command(DB, {"find": "other", **_txn(reader)})
    assert found["cursor"]["firstBatch"] == [{"_id": 1}]
    assert primary.command("admin", _commit(reader))["ok"] == 1.0
    # The writer wrote to a collection the drop removed: it can no longer go on.
    assert primary.command("admin", _commit(writer))["code"] == 112
    assert primary.command(DB, {"find": "other"})["cursor"]["firstBatch"] == []


def test_a_secondary_refuses_the_commit_as_a_retryable_error(rs: ReplicaSet) -> None:
    secondary = next(m for m in rs.members if not m.is_primary)
    with connect(secondary) as client:
        reply = client.command("admin", _commit(_session()))
    assert reply["code"] == 10107
    assert reply["errorLabels"] == ["RetryableWriteError"]


def test_ending_sessions_aborts_their_transactions(primary: RawClient) -> None:
    ended, killed, all_killed = _session(), _session(), _session()
    assert primary.command(DB, {"create": "c"})["ok"] == 1.0  # else their creations conflict
    for lsid in (ended, killed, all_killed):
        assert primary.command(DB, _insert({}, **_txn(lsid, start=True)))["ok"] == 1.0
    assert primary.command("admin", {"endSessions": [ended]})["ok"] == 1.0
    assert primary.command("admin", {"killSessions": [killed]})["ok"] == 1.0
    assert primary.command("admin", _commit(ended))["code"] == 251
    assert primary.command("admin", _commit(killed))["code"] == 251
    assert primary.command("admin", {"killAllSessions": []})["ok"] == 1.0
    assert primary.command("admin", _commit(all_killed))["code"] == 251
    assert _count(primary) == 0


def test_a_fail_point_error_leaves_the_transaction_open(primary: RawClient) -> None:
    lsid = _session()
    assert primary.command(DB, _insert({"_id": 1}, **_txn(lsid, start=True)))["ok"] == 1.0
    data = {"failCommands": ["insert"], "errorCode": 91}
    assert primary.command(
        "admin", {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": data}
    )["ok"]
    failed = primary.command(DB, _insert({"_id": 2}, **_txn(lsid)))
    assert failed["code"] == 91 and failed["errorLabels"] == ["TransientTransactionError"]
    assert primary.command(DB, _insert({"_id": 3}, **_txn(lsid)))["ok"] == 1.0
    assert primary.command("admin", _commit(lsid))["ok"] == 1.0
    assert _count(primary) == 2


def test_a_write_concern_error_on_the_commit(primary: RawClient) -> None:
    lsid = _session()
    assert primary.command(DB, _insert({"_id": 1}, **_txn(lsid, start=True)))["ok"] == 1.0
    data = {"failCommands": ["commitTransaction"], "writeConcernError": {"code": 91}}
    assert primary.command(
        "admin", {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": data}
    )["ok"]
    reply = primary.command("admin", _commit(lsid))
    assert reply["ok"] == 1.0 and reply["writeConcernError"]["code"] == 91
    assert reply["errorLabels"] == ["RetryableWriteError"]
    assert _count(primary) == 1  # committed; only the write concern failed


def test_recovering_a_commit(primary: RawClient) -> None:
    committed, open_one = _session(), _session()
    assert primary.command(DB, {"create": "c"})["ok"] == 1.0
    for lsid in (committed, open_one):
        assert primary.command(DB, _insert({}, **_txn(lsid, start=True)))["ok"] == 1.0
    assert primary.command("admin", _commit(committed))["ok"] == 1.0

    def recover(lsid: dict[str, Any]) -> dict[str, Any]:
        command = {"coordinateCommitTransaction": 1, "participants": [], **_txn(lsid)}
        return primary.command("admin", command)

    assert recover(committed)["ok"] == 1.0
    assert recover(open_one)["code"] == 251
    assert primary.command("admin", _commit(open_one))["code"] == 251  # aborted by it
    assert _count(primary) == 1


def test_the_lifetime_limit_is_a_parameter(primary: RawClient) -> None:
    refused = primary.command("admin", {"setParameter": 1, "transactionLifetimeLimitSeconds": 0})
    assert refused["code"] == 2
    reply = primary.command("admin", {"setParameter": 1, "transactionLifetimeLimitSeconds": 7})
    assert reply["was"] == 60
    again = primary.command("admin", {"setParameter": 1, "transactionLifetimeLimitSeconds": 60})
    assert again["was"] == 7


def test_a_standalone_refuses_transactions() -> None:
    with Standalone() as standalone, connect(standalone.member) as client:
        reply = client.command(DB, _insert({}, **_txn(_session(), start=True)))
    assert reply["code"] == 20


@pytest.mark.parametrize(
    ("name", "cmd", "code", "wc_code", "labels"),
    [
        ("insert", {"txnNumber": 1}, 91, None, ["RetryableWriteError"]),
        ("insert", {"txnNumber": 1}, None, 91, ["RetryableWriteError"]),
        ("insert", {"txnNumber": 1, "autocommit": False}, 91, None, ["TransientTransactionError"]),
        ("insert", {"txnNumber": 1, "autocommit": False}, None, 91, []),
        ("insert", {"txnNumber": 1, "autocommit": False}, 11000, None, []),
        ("find", {"txnNumber": 1, "autocommit": False}, 50, None, []),
        ("commitTransaction", {"txnNumber": 1, "autocommit": False}, 251, None,
         ["TransientTransactionError"]),
        ("commitTransaction", {"txnNumber": 1, "autocommit": False}, 251, 64, []),
        ("commitTransaction", {"txnNumber": 1, "autocommit": False}, 112, None,
         ["TransientTransactionError"]),
        ("commitTransaction", {"txnNumber": 1, "autocommit": False}, 189, None,
         ["RetryableWriteError"]),
        ("abortTransaction", {"txnNumber": 1, "autocommit": False}, None, 11602,
         ["RetryableWriteError"]),
        ("commitTransaction", {"txnNumber": 1, "autocommit": False}, 50, None, []),
        ("commitTransaction", {"txnNumber": 1, "autocommit": False}, None, 64, []),
        ("insert", {}, 91, None, []),
    ],
)  # fmt: skip
def test_error_labels(
    name: str, cmd: dict[str, Any], code: Any, wc_code: Any, labels: list[str]
) -> None:
    assert error_labels(name, {name: 1, **cmd}, code, wc_code) == labels


def test_a_primary_takes_any_read_preference_in_a_transaction() -> None:
    """A driver on a direct connection sends $readPreference primaryPreferred with every
    command (server selection spec, "Topology type: Single"); a 7.0 primary runs the
    transaction all the same. A mongos, which picks the shards' primaries itself,
    refuses a mode other than primary."""
    lsid = {"id": ObjectId().binary}
    txn = {"lsid": lsid, "txnNumber": 1, "autocommit": False}
    direct = {"$readPreference": {"mode": "primaryPreferred"}}
    with ReplicaSet(1, election_delay=0.02) as rs, connect(rs.wait_for_primary()) as client:
        client.command("db", {"create": "c", **direct})
        first = {"insert": "c", "documents": [{"_id": 1}], "startTransaction": True}
        assert client.command("db", {**first, **txn, **direct})["ok"] == 1.0
        found = client.command("db", {"find": "c", "filter": {}, **txn, **direct})
        assert found["cursor"]["firstBatch"] == [{"_id": 1}]
        assert client.command("admin", {"commitTransaction": 1, **txn, **direct})["ok"] == 1.0
        assert client.command("db", {"count": "c"})["n"] == 1
    cluster = ShardedCluster(1, shard_members=1, election_delay=0.02)
    with cluster, connect(cluster.mongoses[0]) as client:
        client.command("db", {"create": "c"})
        refused = client.command(
            "db", {"find": "c", "filter": {}, **txn, "startTransaction": True, **direct}
        )
        assert (refused["code"], refused["codeName"]) == (72, "InvalidOptions")
        assert refused["errmsg"] == "read preference in a transaction must be primary"
