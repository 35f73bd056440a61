"""The simulator's command registry (mongocore.sim.registry, command_table.py): one entry
per command, and the rules the pipeline takes from it, as a MongoDB 7.0 server applies
them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from mongocore.sim.command_table import REGISTRY
from mongocore.sim.registry import (
    DATA,
    END,
    GENERIC_ARGUMENTS,
    MONGOS,
    REPLICA_SET,
    STATEMENT,
    Command,
    Registry,
)
from tests.unit.sim_wire import RawClient, connect


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[RawClient]:
    with connect(rs.members[0]) as raw:
        yield raw


def test_every_name_resolves_to_one_entry() -> None:
    assert REGISTRY.get("ismaster") is REGISTRY.get("isMaster")
    assert REGISTRY.get("buildinfo") is REGISTRY["buildInfo"]
    assert REGISTRY.get("findandmodify") is REGISTRY["findAndModify"]
    assert REGISTRY.get("hello") is not REGISTRY.get("isMaster")  # a command of its own
    assert REGISTRY.get("noSuchCommand") is None
    names = [command.name for command in REGISTRY]
    assert len(names) == len(set(names)) == len(REGISTRY)
    with pytest.raises(ValueError, match="registered twice"):
        Registry([Command("ping", REGISTRY["ping"].handler), Command("ping", stage="handshake")])
    with pytest.raises(ValueError, match="needs a handler"):
        Command("x")


def test_entries_carry_the_servers_rules() -> None:
    transaction_statements = REGISTRY.names(lambda c: c.transaction == STATEMENT)
    assert transaction_statements == {
        "aggregate", "create", "createIndexes", "delete", "distinct", "find",
        "findAndModify", "findandmodify", "getMore", "insert", "killCursors", "update",
    }  # fmt: skip
    assert REGISTRY.names(lambda c: c.transaction == END) == {
        "abortTransaction",
        "commitTransaction",
        "coordinateCommitTransaction",
    }
    assert REGISTRY.names(lambda c: c.retryable_write) == {
        "insert", "update", "delete", "findAndModify", "findandmodify",
    }  # fmt: skip
    assert not REGISTRY["ping"].requires_auth and REGISTRY["find"].requires_auth
    assert REGISTRY["replSetStepDown"].stage == REPLICA_SET
    assert not REGISTRY["replSetStepDown"].runs_on(MONGOS)
    assert REGISTRY["listShards"].deployments == {MONGOS}
    assert all(c.handler is not None for c in REGISTRY if c.stage == DATA)


def _refused_field(reply: dict[str, Any], command: str, field: str) -> None:
    assert reply["ok"] == 0.0
    assert reply["code"] == 40415
    assert reply["codeName"] == "Location40415"
    assert reply["errmsg"] == f"BSON field '{command}.{field}' is an unknown field."


def test_an_unknown_field_is_refused_as_the_server_refuses_it(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
    reply = client.command("db", {"aggregate": "c", "pipeline": [], "cursor": {}, "foo": 1})
    _refused_field(reply, "aggregate", "foo")
    _refused_field(client.command("db", {"find": "c", "filtr": {}}), "find", "filtr")
    _refused_field(
        client.command("db", {"insert": "c", "documents": [{}], "orderd": False}),
        "insert",
        "orderd",
    )
    # Nothing ran: the refused insert inserted nothing.
    assert client.command("db", {"count": "c"})["n"] == 1


def test_generic_arguments_are_accepted(client: RawClient) -> None:
    generic = {
        "comment": "why",
        "maxTimeMS": 1000,
        "readConcern": {"level": "local"},
        "$readPreference": {"mode": "primaryPreferred"},
        "apiVersion": "1",
    }
    reply = client.command("db", {"find": "c", "filter": {}, **generic})
    assert reply["ok"] == 1.0
    assert {"comment", "maxTimeMS", "readConcern", "$readPreference"} <= GENERIC_ARGUMENTS


def test_a_leniently_parsed_command_accepts_any_field(client: RawClient) -> None:
    assert REGISTRY["ping"].fields is None
    assert client.command("admin", {"ping": 1, "anything": True})["ok"] == 1.0


def test_a_mongos_refuses_an_unknown_field_too() -> None:
    cluster = ShardedCluster(1, shard_members=1, election_delay=0.02)
    with cluster, connect(cluster.mongoses[0]) as raw:
        reply = raw.command("db", {"aggregate": "c", "pipeline": [], "cursor": {}, "x": 1})
        _refused_field(reply, "aggregate", "x")


def test_where_a_command_may_run() -> None:
    with Standalone() as standalone, connect(standalone.member) as raw:
        refused = raw.command("admin", {"replSetGetStatus": 1})
        assert (refused["code"], refused["codeName"]) == (76, "NoReplicationEnabled")
        # An unknown replSet name is no command at all, on a standalone too.
        assert raw.command("admin", {"replSetNoSuchThing": 1})["code"] == 59
        assert raw.command("admin", {"listShards": 1})["code"] == 59
        listed = raw.command("admin", {"listCommands": 1})["commands"]
        assert "replSetGetStatus" in listed and "listShards" not in listed
        assert "isMaster" in listed and "ismaster" not in listed  # once, by its name
        assert listed["commitTransaction"]["apiVersions"] == ["1"]
