"""The simulator's server-side answers inside transactions, against what the official
transactions suites expect of a server (transactions and transactions-convenient-api,
unified format).

The suites run through a driver, which adds labels of its own (UnknownTransactionCommitResult,
and TransientTransactionError for network errors). What a server alone decides is the
error that a ``failCommand`` fail point makes it return and the labels it attaches. So,
by rule over every test of every file: the first operation after a ``failPoint`` (or
``targetedFailPoint``) that sends a command the fail point's ``failCommands`` name, when
it has an ``expectError`` and that fail point makes the server answer (``errorCode`` or
``writeConcernError``; not ``closeConnection`` or ``blockConnection``, which the driver
turns into its own errors), is replayed on the wire: a transaction is started, the fail
point configured as the test configures it, and the command sent inside the transaction.
The reply must carry the expected code and code name (for a command error), the
server's labels among ``errorLabelsContain``, and none of ``errorLabelsOmit``. Files for
replica sets run on a simulated replica set, those only for sharded clusters through a
simulated mongos.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional, Union

import pytest

pytest.importorskip("pyuca")

from bson import Binary, Int64

from mongocore.sim import ReplicaSet, ShardedCluster
from tests.spec import specdata
from tests.unit.sim_wire import RawClient, connect

SUITES = ("transactions/tests/unified", "transactions-convenient-api/tests/unified")
SERVER_LABELS = frozenset({"TransientTransactionError", "RetryableWriteError"})
DB = "transaction-tests"

# What each unified operation sends to the server.
OPERATION_COMMANDS = {
    "insertOne": "insert",
    "insertMany": "insert",
    "updateOne": "update",
    "updateMany": "update",
    "replaceOne": "update",
    "deleteOne": "delete",
    "deleteMany": "delete",
    "findOneAndDelete": "findAndModify",
    "findOneAndUpdate": "findAndModify",
    "findOneAndReplace": "findAndModify",
    "find": "find",
    "aggregate": "aggregate",
    "countDocuments": "aggregate",
    "distinct": "distinct",
    "commitTransaction": "commitTransaction",
    "abortTransaction": "abortTransaction",
    "clientBulkWrite": "bulkWrite",
}

# A minimal document of each command, sent in the transaction.
COMMAND_DOCUMENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "insert": (DB, {"insert": "test", "documents": [{"x": 1}]}),
    "update": (DB, {"update": "test", "updates": [{"q": {}, "u": {"$set": {"x": 2}}}]}),
    "delete": (DB, {"delete": "test", "deletes": [{"q": {}, "limit": 1}]}),
    "findAndModify": (DB, {"findAndModify": "test", "query": {}, "update": {"$set": {"x": 3}}}),
    "find": (DB, {"find": "test", "filter": {}}),
    "aggregate": (DB, {"aggregate": "test", "pipeline": [], "cursor": {}}),
    "distinct": (DB, {"distinct": "test", "key": "x"}),
    "commitTransaction": ("admin", {"commitTransaction": 1}),
    "abortTransaction": ("admin", {"abortTransaction": 1}),
    "bulkWrite": ("admin", {"bulkWrite": 1, "ops": [], "nsInfo": []}),
}


def _commands_of(operation: Mapping[str, Any]) -> set[str]:
    name = operation.get("name")
    arguments = operation.get("arguments") or {}
    if name == "runCommand":
        command = arguments.get("command") or {}
        return {next(iter(command))} if command else set()
    if name == "withTransaction":
        inner: set[str] = {"commitTransaction"}
        for step in arguments.get("callback") or ():
            inner |= _commands_of(step)
        return inner
    if name == "bulkWrite":
        return {"insert", "update", "delete"}
    command = OPERATION_COMMANDS.get(str(name))
    return {command} if command else set()


def _server_answers(fail_point: Mapping[str, Any]) -> bool:
    data = fail_point.get("data") or {}
    if data.get("closeConnection") or data.get("blockConnection"):
        return False
    return "errorCode" in data or "writeConcernError" in data


def _checked(expect: Mapping[str, Any]) -> bool:
    """Does the expectation say anything a server decides?"""
    return bool(
        "errorCode" in expect
        or "errorCodeName" in expect
        or expect.get("errorLabelsOmit")
        or SERVER_LABELS & set(expect.get("errorLabelsContain") or ())
    )


Case = tuple[str, str, dict[str, Any], dict[str, Any]]


def _cases(document: Mapping[str, Any]) -> list[tuple[str, Case]]:
    """(topology, (test, command, fail point, expectError)) for every pair the rule selects."""
    cases: list[tuple[str, Case]] = []
    for test in document.get("tests", ()):
        topology = _topology(document.get("runOnRequirements"), test.get("runOnRequirements"))
        if topology is None:
            continue
        fail_point: Optional[dict[str, Any]] = None
        for operation in test.get("operations", ()):
            if operation.get("name") in ("failPoint", "targetedFailPoint"):
                fail_point = operation["arguments"]["failPoint"]
                continue
            if fail_point is None:
                continue
            failing = set(fail_point.get("data", {}).get("failCommands", ())) & _commands_of(
                operation
            )
            if not failing:
                continue
            # The first operation sending a command the fail point names is the one the
            # test set it up for.
            point, fail_point = fail_point, None
            expect = operation.get("expectError")
            if not isinstance(expect, Mapping) or not _checked(expect):
                continue
            if not _server_answers(point):
                continue
            for command in sorted(failing & set(COMMAND_DOCUMENTS)):
                cases.append((topology, (test["description"], command, point, dict(expect))))
    return cases


ALL_TOPOLOGIES = ("single", "replicaset", "sharded", "load-balanced")


def _topologies(requirements: Any) -> set[str]:
    """Where a list of requirements may run (any one requirement suffices)."""
    topologies: set[str] = set()
    for requirement in requirements or [{}]:
        topologies |= set(requirement.get("topologies", ALL_TOPOLOGIES))
    return topologies


def _topology(file_requirements: Any, test_requirements: Any) -> Optional[str]:
    """A replica set if the file and the test allow one, else a sharded cluster."""
    allowed = _topologies(file_requirements) & _topologies(test_requirements)
    if "replicaset" in allowed:
        return "replicaset"
    return "sharded" if "sharded" in allowed else None


def _files() -> list[Any]:
    params: list[Any] = []
    for suite in SUITES:
        params += specdata.json_files(suite)
    return params


Deployment = Union[ReplicaSet, ShardedCluster]


@contextmanager
def _deployment(topology: str) -> Iterator[tuple[Deployment, Any]]:
    if topology == "replicaset":
        with ReplicaSet(1, election_delay=0.02) as rs:
            yield rs, rs.wait_for_primary()
    else:
        with ShardedCluster(1, shard_members=1, election_delay=0.02) as cluster:
            yield cluster, cluster.mongoses[0]


def _in_transaction(lsid: dict[str, Any], start: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False}
    if start:
        fields["startTransaction"] = True
    return fields


def _run_case(target: Any, case: Case) -> None:
    description, command, fail_point, expect = case
    app_name = fail_point.get("data", {}).get("appName")
    lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
    with connect(target, app_name=app_name) as client:
        started = client.command(
            DB, {"insert": "test", "documents": [{}], **_in_transaction(lsid, True)}
        )
        assert started["ok"] == 1.0, (description, started)
        _configure(client, fail_point)
        try:
            db, document = COMMAND_DOCUMENTS[command]
            reply = client.command(db, {**document, **_in_transaction(lsid, False)})
        finally:
            _configure(client, {**fail_point, "mode": "off"})
            client.command("admin", {"abortTransaction": 1, **_in_transaction(lsid, False)})
    labels = set(reply.get("errorLabels", ()))
    assert reply["ok"] == 0.0 or "writeConcernError" in reply, (description, reply)
    if reply["ok"] == 0.0:
        if "errorCode" in expect:
            assert reply["code"] == expect["errorCode"], (description, reply)
        if "errorCodeName" in expect:
            assert reply["codeName"] == expect["errorCodeName"], (description, reply)
    assert not labels & set(expect.get("errorLabelsOmit") or ()), (description, reply)
    wanted = SERVER_LABELS & set(expect.get("errorLabelsContain") or ())
    assert wanted <= labels, (description, reply)


def _configure(client: RawClient, fail_point: Mapping[str, Any]) -> None:
    reply = client.command(
        "admin",
        {
            "configureFailPoint": fail_point["configureFailPoint"],
            "mode": fail_point["mode"],
            "data": fail_point.get("data", {}),
        },
    )
    assert reply["ok"] == 1.0, reply


@pytest.mark.parametrize("path", _files())
def test_server_answers_in_transactions(path: Optional[Path]) -> None:
    assert path is not None
    cases = _cases(specdata.load_extended(path))
    if not cases:
        pytest.skip("no operation of this file fails by a fail point the server answers")
    for topology in sorted({topology for topology, _ in cases}):
        with _deployment(topology) as (_, target):
            for _, case in (c for c in cases if c[0] == topology):
                _run_case(target, case)
