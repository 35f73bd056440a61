"""The simulator's ``onPrimaryTransactionalWrite`` fail point, over the wire: which
statements it acts on, what it does to them, and what a retry of the command answers."""

from __future__ import annotations

from typing import Any

from bson import ObjectId

from mongocore.sim import ReplicaSet
from tests.unit.sim_wire import RawClient, connect

FAIL_POINT = "onPrimaryTransactionalWrite"


def _configure(client: RawClient, mode: Any, data: dict[str, Any]) -> dict[str, Any]:
    return client.command("admin", {"configureFailPoint": FAIL_POINT, "mode": mode, "data": data})


def _retryable(cmd: dict[str, Any], lsid: dict[str, Any], txn: int = 1) -> dict[str, Any]:
    return {**cmd, "lsid": lsid, "txnNumber": txn}


def _closed_without_reply(client: RawClient, cmd: dict[str, Any]) -> bool:
    client.send_msg("db", cmd)
    return client.closed_by_peer()


def _documents(client: RawClient) -> list[dict[str, Any]]:
    reply = client.command("db", {"find": "c", "filter": {}, "sort": {"_id": 1}})
    return list(reply["cursor"]["firstBatch"])


def test_a_cut_off_statement_is_committed_and_the_retry_does_not_repeat_it(
    rs: ReplicaSet,
) -> None:
    lsid = {"id": ObjectId().binary}
    insert = _retryable({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]}, lsid)
    with connect(rs.members[0]) as admin:
        assert _configure(admin, {"times": 1}, {})["ok"] == 1.0
    with connect(rs.members[0]) as client:
        assert _closed_without_reply(client, insert)
    with connect(rs.members[0]) as client:
        # Statement 0 committed before the connection closed; the command stopped there.
        assert _documents(client) == [{"_id": 1}]
        retry = client.command("db", insert)
        assert retry["n"] == 2
        assert "writeErrors" not in retry
        assert _documents(client) == [{"_id": 1}, {"_id": 2}]
        # It acted once: configuring it again reports how often it was entered.
        assert _configure(client, "off", {})["count"] == 1


def test_a_failed_statement_is_not_applied_and_runs_again_on_retry(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    with connect(rs.members[0]) as client:
        client.command("db", {"insert": "c", "documents": [{"_id": 0, "y": 0}, {"_id": 1, "y": 0}]})
        _configure(
            client, {"skip": 1}, {"closeConnection": False, "failBeforeCommitExceptionCode": 1}
        )
        update = _retryable(
            {
                "update": "c",
                "updates": [
                    {"q": {"_id": 0}, "u": {"$inc": {"y": 1}}},
                    {"q": {"_id": 1}, "u": {"$inc": {"y": 1}}},
                ],
                "ordered": True,
            },
            lsid,
        )
        first = client.command("db", update)
        assert first["ok"] == 1.0 and first["n"] == 1 and first["nModified"] == 1
        assert [(e["index"], e["code"]) for e in first["writeErrors"]] == [(1, 1)]
        assert "must not be reflected" in first["writeErrors"][0]["errmsg"]
        _configure(client, "off", {})
        retry = client.command("db", update)
        assert retry["n"] == 2 and retry["nModified"] == 2
        assert _documents(client) == [{"_id": 0, "y": 1}, {"_id": 1, "y": 1}]


def test_a_failed_statement_with_the_default_close_leaves_no_trace(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    insert = _retryable({"insert": "c", "documents": [{"_id": 5}]}, lsid)
    with connect(rs.members[0]) as client:
        _configure(client, {"times": 1}, {"failBeforeCommitExceptionCode": 1})
        assert _closed_without_reply(client, insert)
    with connect(rs.members[0]) as client:
        assert _documents(client) == []
        # The collection the insert created was rolled back too.
        names = client.command("db", {"listCollections": 1, "nameOnly": True})
        assert names["cursor"]["firstBatch"] == []
        retry = client.command("db", insert)
        assert retry["n"] == 1
        assert _documents(client) == [{"_id": 5}]


def test_an_unordered_batch_goes_on_after_a_failed_statement(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    with connect(rs.members[0]) as client:
        _configure(
            client, {"times": 1}, {"closeConnection": False, "failBeforeCommitExceptionCode": 91}
        )
        reply = client.command(
            "db",
            _retryable(
                {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "ordered": False}, lsid
            ),
        )
        assert reply["n"] == 1 and [e["index"] for e in reply["writeErrors"]] == [0]
        assert reply["writeErrors"][0]["code"] == 91
        assert _documents(client) == [{"_id": 2}]


def test_writes_without_a_txn_number_and_statements_writing_nothing_are_not_counted(
    rs: ReplicaSet,
) -> None:
    lsid = {"id": ObjectId().binary}
    with connect(rs.members[0]) as client:
        _configure(client, {"times": 1}, {})
        assert client.command("db", {"insert": "c", "documents": [{"_id": 1}]})["n"] == 1
        no_match = client.command(
            "db",
            _retryable(
                {"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$set": {"a": 1}}}]}, lsid
            ),
        )
        assert no_match["n"] == 0
        delete_nothing = client.command(
            "db", _retryable({"delete": "c", "deletes": [{"q": {"_id": 9}, "limit": 1}]}, lsid, 2)
        )
        assert delete_nothing["n"] == 0
        # Still armed: the next statement that writes meets it.
        assert _closed_without_reply(
            client, _retryable({"insert": "c", "documents": [{"_id": 2}]}, lsid, 3)
        )
    with connect(rs.members[0]) as client:
        assert _configure(client, "off", {})["count"] == 1
        assert _documents(client) == [{"_id": 1}, {"_id": 2}]


def test_an_upsert_retry_reports_the_upserted_id(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    upsert = _retryable(
        {"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$inc": {"x": 1}}, "upsert": True}]},
        lsid,
    )
    with connect(rs.members[0]) as client:
        _configure(client, {"times": 1}, {"closeConnection": True})
        assert _closed_without_reply(client, upsert)
    with connect(rs.members[0]) as client:
        retry = client.command("db", upsert)
        assert retry["n"] == 1 and retry["nModified"] == 0
        assert retry["upserted"] == [{"index": 0, "_id": 3}]
        assert _documents(client) == [{"_id": 3, "x": 1}]


def test_find_and_modify_fails_or_is_answered_from_its_record(rs: ReplicaSet) -> None:
    lsid = {"id": ObjectId().binary}
    with connect(rs.members[0]) as client:
        client.command("db", {"insert": "c", "documents": [{"_id": 1, "x": 1}]})
        modify = _retryable(
            {"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"x": 1}}, "new": True},
            lsid,
        )
        _configure(
            client, {"times": 1}, {"closeConnection": False, "failBeforeCommitExceptionCode": 91}
        )
        failed = client.command("db", modify)
        assert failed["ok"] == 0.0 and failed["code"] == 91
        assert failed["errorLabels"] == ["RetryableWriteError"]
        assert _documents(client) == [{"_id": 1, "x": 1}]
        _configure(client, {"times": 1}, {})
        assert _closed_without_reply(client, modify)
    with connect(rs.members[0]) as client:
        retry = client.command("db", modify)
        assert retry["value"] == {"_id": 1, "x": 2}
        assert retry["lastErrorObject"] == {"n": 1, "updatedExisting": True}
        assert _documents(client) == [{"_id": 1, "x": 2}]


def test_invalid_data_is_refused(rs: ReplicaSet) -> None:
    with connect(rs.members[0]) as client:
        assert _configure(client, "alwaysOn", {"closeConnection": 1})["code"] == 14
        bad_code = _configure(client, "alwaysOn", {"failBeforeCommitExceptionCode": "x"})
        assert bad_code["code"] == 14
        unknown = client.command("admin", {"configureFailPoint": "nope", "mode": "alwaysOn"})
        assert unknown["code"] == 2
