"""The simulator checks a command's Stable API parameters as a MongoDB 7.0 server does
(mongocore.sim.api_parameters)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bson import Int64

from mongocore.sim import ShardedCluster, Standalone
from mongocore.sim.api_parameters import check_api_parameters
from mongocore.sim.codes import CommandError
from mongocore.sim.command_table import REGISTRY
from tests.unit.sim_wire import RawClient, connect

API_V1_COMMANDS = REGISTRY.names(lambda command: command.api_version_1)


def _check(name: str, cmd: dict[str, Any]) -> None:
    check_api_parameters(name, cmd, api_version_1=name in API_V1_COMMANDS)


def _refusal(name: str, cmd: dict[str, Any]) -> tuple[int, str]:
    with pytest.raises(CommandError) as caught:
        _check(name, cmd)
    return caught.value.code, caught.value.errmsg


@pytest.mark.parametrize(
    "cmd",
    [
        {"ping": 1},
        {"ping": 1, "apiVersion": "1"},
        {"ping": 1, "apiVersion": "1", "apiStrict": True, "apiDeprecationErrors": True},
        {"ping": 1, "apiVersion": "1", "apiStrict": False, "apiDeprecationErrors": False},
        # Not in version 1, but not strict: accepted.
        {"buildInfo": 1, "apiVersion": "1"},
        {"buildInfo": 1, "apiVersion": "1", "apiDeprecationErrors": True},
        {"buildInfo": 1, "apiVersion": "1", "apiStrict": False},
    ],
)
def test_accepted(cmd: dict[str, Any]) -> None:
    _check(next(iter(cmd)), cmd)


@pytest.mark.parametrize(
    ("cmd", "code", "message"),
    [
        ({"ping": 1, "apiVersion": 1}, 14, "apiVersion' is the wrong type 'int'"),
        ({"ping": 1, "apiVersion": Int64(1)}, 14, "wrong type 'long', expected type 'string'"),
        ({"ping": 1, "apiVersion": "1", "apiStrict": "true"}, 14, "wrong type 'string'"),
        ({"ping": 1, "apiVersion": "1", "apiDeprecationErrors": 0}, 14, "expected type 'bool'"),
        # A flag without a version, whatever its value.
        ({"ping": 1, "apiStrict": False}, 4886600, "without passing apiVersion"),
        ({"ping": 1, "apiDeprecationErrors": True}, 4886600, "without passing apiVersion"),
        ({"ping": 1, "apiVersion": "3"}, 322, 'API version must be "1"'),
        ({"ping": 1, "apiVersion": ""}, 322, 'API version must be "1"'),
        ({"ping": 1, "apiVersion": "2"}, 322, "Cannot accept API version 2"),
        ({"buildInfo": 1, "apiVersion": "1", "apiStrict": True}, 323, "buildInfo is not in"),
        ({"isMaster": 1, "apiVersion": "1", "apiStrict": True}, 323, "isMaster is not in"),
        # distinct is not in version 1 (the versioned-api suite's strict test).
        ({"distinct": "c", "apiVersion": "1", "apiStrict": True}, 323, "distinct is not in"),
        # Nor are the diagnostic aggregation stages.
        (
            {
                "aggregate": 1,
                "pipeline": [{"$listLocalSessions": {}}, {"$limit": 1}],
                "apiVersion": "1",
                "apiStrict": True,
            },
            323,
            "$listLocalSessions is not allowed with 'apiStrict: true'",
        ),
    ],
)
def test_refused(cmd: dict[str, Any], code: int, message: str) -> None:
    found_code, errmsg = _refusal(next(iter(cmd)), cmd)
    assert found_code == code
    assert message in errmsg


def test_an_aggregate_of_version_1_stages_is_strict_enough() -> None:
    pipeline = [{"$match": {}}, {"$group": {"_id": "$a"}}, {"$sort": {"_id": 1}}]
    _check(
        "aggregate", {"aggregate": "c", "pipeline": pipeline, "apiVersion": "1", "apiStrict": True}
    )
    # Without apiStrict, any stage.
    _check("aggregate", {"aggregate": 1, "pipeline": [{"$currentOp": {}}], "apiVersion": "1"})


def test_strict_accepts_every_version_1_command() -> None:
    for name in API_V1_COMMANDS:
        _check(name, {name: 1, "apiVersion": "1", "apiStrict": True})
    assert {"hello", "find", "getMore", "commitTransaction", "saslStart"} <= API_V1_COMMANDS
    assert not {"isMaster", "buildInfo", "serverStatus", "listCommands"} & API_V1_COMMANDS


@pytest.fixture
def standalone() -> Iterator[Standalone]:
    with Standalone() as server:
        yield server


def test_errors_on_the_wire_carry_the_code_name(standalone: Standalone) -> None:
    with connect(standalone.member) as client:
        reply = client.command("admin", {"ping": 1, "apiVersion": "9"})
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 322, "APIVersionError")
        reply = client.command("admin", {"serverStatus": 1, "apiVersion": "1", "apiStrict": True})
        assert (reply["code"], reply["codeName"]) == (323, "APIStrictError")
        assert client.command("admin", {"ping": 1, "apiVersion": "1", "apiStrict": True})["ok"]


def test_the_handshake_is_checked_too(standalone: Standalone) -> None:
    with RawClient(standalone.member.address) as client:
        refused = client.legacy_hello({"isMaster": 1, "apiVersion": "1", "apiStrict": True})
        assert refused["code"] == 323
    with RawClient(standalone.member.address) as client:
        reply = client.handshake(apiVersion="1", apiStrict=True, apiDeprecationErrors=True)
        assert reply["ok"] == 1 and reply["isWritablePrimary"] is True


def test_a_mongos_checks_them() -> None:
    with ShardedCluster(mongoses=1) as cluster, connect(cluster.mongoses[0]) as client:
        reply = client.command("admin", {"ping": 1, "apiVersion": "0"})
        assert reply["code"] == 322
        reply = client.command("db", {"find": "c", "apiVersion": "1", "apiStrict": True})
        assert reply["ok"] == 1
