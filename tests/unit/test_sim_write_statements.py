"""The simulator's write commands parse their statements as a 7.0 server does: a
statement the parser refuses fails the whole command (``ok: 0``, nothing applied);
an error while a parsed statement is applied is that statement's write error, unless
it is one a server lets fail the command (an interruption)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from bson import Binary, Int64

from mongocore.sim import ReplicaSet, Standalone
from mongocore.sim.codes import CommandError
from mongocore.sim.write_statements import fails_the_command
from tests.unit.sim_wire import RawClient, connect


@pytest.fixture(scope="module")
def server() -> Iterator[Standalone]:
    with Standalone() as standalone:
        yield standalone


@pytest.fixture
def client(server: Standalone) -> Iterator[RawClient]:
    with connect(server.member) as raw:
        raw.command("db", {"drop": "c"})
        raw.command("db", {"insert": "c", "documents": [{"_id": 1, "v": 0}, {"_id": 2, "v": 0}]})
        yield raw


def _documents(client: RawClient) -> list[Any]:
    reply = client.command("db", {"find": "c", "filter": {}, "sort": {"_id": 1}})
    return list(reply["cursor"]["firstBatch"])


def _refused(client: RawClient, cmd: dict[str, Any], code: int, errmsg: str) -> None:
    before = _documents(client)
    reply = client.command("db", cmd)
    assert reply["ok"] == 0.0, reply
    assert reply["code"] == code and errmsg in reply["errmsg"], reply
    assert "writeErrors" not in reply
    # The whole command was refused before any statement ran, the valid first one too.
    assert _documents(client) == before


FIRST = {"q": {"_id": 1}, "u": {"$set": {"v": 1}}}


@pytest.mark.parametrize(
    ("statement", "code", "errmsg"),
    [
        ({"q": {}, "u": [{"$set": {"v": 2}}, 1]}, 14, "Each element of the 'pipeline' array"),
        ({"q": {}, "u": "v"}, 9, "Update argument must be either an object or an array"),
        ({"q": 1, "u": {"$set": {"v": 2}}}, 14, "'update.updates.q' is the wrong type 'int'"),
        ({"q": {}}, 40414, "'update.updates.u' is missing but a required field"),
        ({"q": {}, "u": {"$set": {"v": 2}}, "multi": 1}, 14, "expected type 'bool'"),
        ({"q": {}, "u": {"$set": {"v": 2}}, "sort": {"_id": 1}}, 40415, "'update.updates.sort'"),
        ({"q": {}, "u": {"$set": {"v": 2}}, "arrayFilters": [1]}, 14, "arrayFilters.0"),
    ],
)
def test_an_update_statement_the_parser_refuses_fails_the_command(
    client: RawClient, statement: dict[str, Any], code: int, errmsg: str
) -> None:
    _refused(client, {"update": "c", "updates": [FIRST, statement]}, code, errmsg)


def test_an_invalid_pipeline_stage_is_the_statements_write_error(client: RawClient) -> None:
    reply = client.command(
        "db", {"update": "c", "updates": [FIRST, {"q": {}, "u": [{"$match": {}}]}]}
    )
    assert reply["ok"] == 1.0 and reply["n"] == 1
    (error,) = reply["writeErrors"]
    assert error["index"] == 1 and error["code"] == 72
    assert error["errmsg"] == "$match is not allowed to be used within an update"
    assert _documents(client)[0]["v"] == 1


def test_a_delete_statement_the_parser_refuses_fails_the_command(client: RawClient) -> None:
    first = {"q": {"_id": 1}, "limit": 1}
    limit_two = {"q": {}, "limit": 2}
    _refused(client, {"delete": "c", "deletes": [first, limit_two]}, 9, "must be 0 or 1. Got 2")
    _refused(client, {"delete": "c", "deletes": [first, {"q": {}}]}, 40414, "limit")


def test_insert_and_batch_size(client: RawClient) -> None:
    _refused(client, {"insert": "c", "documents": [{"_id": 3}, 1]}, 14, "insert.documents.1")
    _refused(client, {"update": "c", "updates": []}, 16, "Write batch sizes must be between 1")
    _refused(client, {"insert": "c", "documents": [{"_id": 3}], "ordered": 1}, 14, "ordered")


def test_an_interruption_fails_the_command(client: RawClient) -> None:
    slow = {"q": {"$where": "sleep(2000) || true"}, "u": {"$set": {"v": 3}}}
    reply = client.command("db", {"update": "c", "updates": [slow], "maxTimeMS": 50})
    assert reply["ok"] == 0.0 and reply["code"] == 50, reply


@pytest.mark.parametrize(("code", "fails_command"), [(1, False), (11602, True), (50, True)])
def test_an_error_while_a_statement_is_applied(code: int, fails_command: bool) -> None:
    """The statement fails as it is applied (onPrimaryTransactionalWrite's
    failBeforeCommitExceptionCode): an interruption fails the command, any other error
    is the statement's write error."""
    with ReplicaSet(1) as rs, connect(rs.members[0]) as raw:
        raw.command(
            "admin",
            {
                "configureFailPoint": "onPrimaryTransactionalWrite",
                "mode": {"times": 1},
                "data": {"failBeforeCommitExceptionCode": code, "closeConnection": False},
            },
        )
        session = {"lsid": {"id": Binary(uuid.uuid4().bytes, 4)}, "txnNumber": Int64(1)}
        reply = raw.command("db", {"insert": "c", "documents": [{"_id": 1}], **session})
    if fails_command:
        assert reply["ok"] == 0.0 and reply["code"] == code, reply
        assert "writeErrors" not in reply
    else:
        assert reply["ok"] == 1.0 and reply["n"] == 0, reply
        assert [e["code"] for e in reply["writeErrors"]] == [code]


def test_which_errors_fail_the_command() -> None:
    for code in (50, 11601, 11602, 262, 283):
        assert fails_the_command(CommandError(code, "x"))
    for code in (11000, 72, 9, 121, 112):
        assert not fails_the_command(CommandError(code, "x"))
