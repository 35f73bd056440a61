"""At-most-once retryable writes in the simulator: the (lsid, txnNumber) records."""

from __future__ import annotations

import pytest
from bson import ObjectId

from mongocore.sim import ReplicaSet, SessionRecords, ShardedCluster, Standalone
from mongocore.sim.codes import CommandError
from tests.unit.sim_wire import connect


def _insert(txn: int, lsid: dict[str, object], doc: dict[str, object]) -> dict[str, object]:
    return {"insert": "c", "documents": [doc], "lsid": lsid, "txnNumber": txn}


def test_retry_returns_the_recorded_reply_without_writing_again(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    with connect(rs.members[0]) as client:
        first = client.command("db", _insert(1, lsid, {"_id": 1}))
        retry = client.command("db", _insert(1, lsid, {"_id": 1}))
        assert first["n"] == retry["n"] == 1 and retry["ok"] == 1.0
        assert "writeErrors" not in retry  # not a duplicate key: the write was not re-run
        assert client.command("db", {"count": "c"})["n"] == 1
        assert client.command("db", _insert(2, lsid, {"_id": 2}))["n"] == 1
        too_old = client.command("db", _insert(1, lsid, {"_id": 3}))
        assert too_old["code"] == 225 and too_old["codeName"] == "TransactionTooOld"
        assert client.command("db", {"count": "c"})["n"] == 2


def test_find_and_modify_retry_returns_the_same_image(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    cmd = {
        "findAndModify": "c",
        "query": {"_id": 1},
        "update": {"$inc": {"n": 1}},
        "upsert": True,
        "new": True,
        "lsid": lsid,
        "txnNumber": 5,
    }
    with connect(rs.members[0]) as client:
        first = client.command("db", cmd)
        retry = client.command("db", cmd)
        assert first["value"] == retry["value"] == {"_id": 1, "n": 1}
        assert first["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": 1}


def test_records_survive_a_step_down(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    old = rs.primary
    assert old is not None
    with connect(old) as client:
        assert client.command("db", _insert(7, lsid, {"_id": 1}))["n"] == 1
    rs.step_down(30)
    new = rs.wait_for_primary()
    with connect(new) as client:
        assert client.command("db", _insert(7, lsid, {"_id": 1}))["n"] == 1
        assert client.command("db", {"count": "c"})["n"] == 1


def test_failed_attempt_is_not_recorded(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    primary = rs.members[0]
    primary.fail_command("insert", error_code=91, mode={"times": 1})
    with connect(primary) as client:
        assert client.command("db", _insert(1, lsid, {"_id": 1}))["code"] == 91
        assert client.command("db", _insert(1, lsid, {"_id": 1}))["n"] == 1
        assert client.command("db", {"count": "c"})["n"] == 1


def test_retry_on_a_secondary_fails_with_a_retryable_label(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    with connect(rs.members[1]) as client:
        reply = client.command("db", _insert(1, lsid, {"_id": 1}))
    assert reply["code"] == 10107 and reply["errorLabels"] == ["RetryableWriteError"]


def test_transaction_numbers_need_a_replica_set() -> None:
    with Standalone() as standalone, connect(standalone.member) as client:
        reply = client.command("db", _insert(1, {"id": ObjectId().binary}, {"_id": 1}))
        assert reply["code"] == 20 and reply["codeName"] == "IllegalOperation"
        assert reply["errmsg"] == (
            "Transaction numbers are only allowed on a replica set member or mongos"
        )


def test_transaction_numbers_only_on_retryable_writes(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        find = client.command(
            "db", {"find": "c", "lsid": {"id": ObjectId().binary}, "txnNumber": 1}
        )
        assert find["code"] == 50768
        no_session = client.command("db", {"insert": "c", "documents": [{}], "txnNumber": 1})
        assert no_session["code"] == 72
        lsid = {"id": ObjectId().binary}
        transaction = client.command(
            "db", {**_insert(1, lsid, {}), "startTransaction": True, "autocommit": False}
        )
        assert transaction["ok"] == 1.0
        # A transaction's number is not also a retryable write's.
        retryable = client.command("db", _insert(1, lsid, {}))
        assert retryable["code"] == 217 and retryable["codeName"] == "IncompleteTransactionHistory"


def test_mongos_forwards_retryable_writes() -> None:
    lsid = {"id": ObjectId().binary}
    cluster = ShardedCluster(1, shard_members=2, election_delay=0.02)
    with cluster.start(), connect(cluster.members[0]) as client:
        assert client.command("db", _insert(1, lsid, {"_id": 1}))["n"] == 1
        assert client.command("db", _insert(1, lsid, {"_id": 1}))["n"] == 1
        assert client.command("db", {"count": "c"})["n"] == 1


def test_session_records_directly() -> None:
    records = SessionRecords()
    lsid = {"id": b"0123456789abcdef"}
    assert records.begin(lsid, 3) is None
    assert records.begin(lsid, 3) is None  # started, not completed: run it again
    records.complete(lsid, 3, {"n": 1, "ok": 1.0})
    assert records.begin(lsid, 3) == {"n": 1, "ok": 1.0}
    with pytest.raises(CommandError) as failure:
        records.begin(lsid, 2)
    assert failure.value.code == 225
    assert records.begin(lsid, 4) is None
    assert records.recorded(lsid) == (4, None)
    assert len(records) == 1
