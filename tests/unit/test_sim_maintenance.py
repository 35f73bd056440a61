"""validate, rolesInfo and fsync/fsyncUnlock on a simulated mongod, answered as a
MongoDB 7.0 server answers them (MongoDB manual, "validate", "rolesInfo", "fsync",
"fsyncUnlock")."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mongocore.sim import Standalone
from tests.unit.sim_wire import RawClient, connect


@pytest.fixture
def standalone() -> Iterator[Standalone]:
    with Standalone() as server:
        yield server


@pytest.fixture
def client(standalone: Standalone) -> Iterator[RawClient]:
    with connect(standalone.member) as raw:
        yield raw


# -- validate ------------------------------------------------------------------------------


def test_validate_reports_the_documents_and_the_keys_of_each_index(client: RawClient) -> None:
    docs = [{"_id": 1, "tags": ["a", "b"]}, {"_id": 2, "tags": ["c"]}, {"_id": 3}]
    client.command("db", {"insert": "c", "documents": docs})
    client.command(
        "db",
        {
            "createIndexes": "c",
            "indexes": [
                {"key": {"tags": 1}, "name": "tags_1"},
                {"key": {"tags": 1, "x": 1}, "name": "sparse", "sparse": True},
            ],
        },
    )
    reply = client.command("db", {"validate": "c", "full": True})
    assert reply["ok"] == 1.0 and reply["valid"] is True
    assert reply["ns"] == "db.c" and reply["nrecords"] == 3 and reply["nIndexes"] == 3
    # A multikey index has a key per element (and a missing field is null); a sparse
    # one leaves out the document without any of its fields.
    assert reply["keysPerIndex"] == {"_id_": 3, "tags_1": 4, "sparse": 3}
    assert reply["indexDetails"] == {name: {"valid": True} for name in reply["keysPerIndex"]}
    for field in ("warnings", "errors", "extraIndexEntries", "missingIndexEntries"):
        assert reply[field] == []
    assert (reply["nInvalidDocuments"], reply["nNonCompliantDocuments"]) == (0, 0)
    assert reply["repaired"] is False and reply["corruptRecords"] == []


def test_validate_counts_documents_the_validator_does_not_accept(client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": 1, "n": "one"}, {"_id": 2, "n": 2}]})
    client.command("db", {"collMod": "c", "validator": {"n": {"$type": "int"}}})
    reply = client.command("db", {"validate": "c"})
    assert reply["valid"] is True and reply["nNonCompliantDocuments"] == 1
    assert len(reply["warnings"]) == 1


def test_validate_refuses_what_a_server_refuses(client: RawClient) -> None:
    missing = client.command("db", {"validate": "nothing"})
    assert (missing["code"], missing["codeName"]) == (26, "NamespaceNotFound")
    assert missing["errmsg"] == "Collection 'db.nothing' does not exist to validate."
    client.command("db", {"create": "v", "viewOn": "c", "pipeline": []})
    view = client.command("db", {"validate": "v"})
    assert (view["code"], view["codeName"]) == (166, "CommandNotSupportedOnView")


# -- rolesInfo -----------------------------------------------------------------------------


def test_roles_info_lists_the_built_in_roles(client: RawClient) -> None:
    shown = client.command("db", {"rolesInfo": 1, "showBuiltinRoles": True})
    names = [role["role"] for role in shown["roles"]]
    # enableSharding is a role of every database on a 7.0 server (mongosh's show roles).
    assert names == ["dbAdmin", "dbOwner", "enableSharding", "read", "readWrite", "userAdmin"]
    assert shown["roles"][3] == {
        "role": "read",
        "db": "db",
        "isBuiltin": True,
        "roles": [],
        "inheritedRoles": [],
    }
    admin = client.command("admin", {"rolesInfo": 1, "showBuiltinRoles": True})
    assert {"root", "clusterAdmin", "readAnyDatabase", "read"} <= {
        role["role"] for role in admin["roles"]
    }
    # Without showBuiltinRoles: the database's own roles, of which there are none.
    assert client.command("db", {"rolesInfo": 1})["roles"] == []


def test_roles_info_of_named_roles(client: RawClient) -> None:
    one = client.command("db", {"rolesInfo": "readWrite"})
    assert [(r["role"], r["db"]) for r in one["roles"]] == [("readWrite", "db")]
    several = client.command(
        "db", {"rolesInfo": [{"role": "root", "db": "admin"}, "nonexistent", "read"]}
    )
    assert [(r["role"], r["db"]) for r in several["roles"]] == [("root", "admin"), ("read", "db")]
    assert client.command("db", {"rolesInfo": {"role": "root", "db": "db"}})["roles"] == []
    sharding = client.command("db", {"rolesInfo": "enableSharding"})
    assert [(r["role"], r["db"]) for r in sharding["roles"]] == [("enableSharding", "db")]
    bad = client.command("db", {"rolesInfo": 2})
    assert (bad["ok"], bad["code"]) == (0.0, 2)
    privileges = client.command("db", {"rolesInfo": 1, "showPrivileges": True})
    assert privileges["code"] == 238


# -- fsync ---------------------------------------------------------------------------------


def _insert_in_thread(standalone: Standalone, replies: list[dict[str, Any]]) -> threading.Thread:
    def insert() -> None:
        with connect(standalone.member) as other:
            replies.append(other.command("db", {"insert": "c", "documents": [{"_id": 2}]}))

    thread = threading.Thread(target=insert)
    thread.start()
    return thread


def test_fsync_lock_blocks_writes_until_unlocked(standalone: Standalone, client: RawClient) -> None:
    client.command("db", {"insert": "c", "documents": [{"_id": 1}]})
    assert client.command("admin", {"fsync": 1}) == {"numFiles": 1, "ok": 1.0}
    locked = client.command("admin", {"fsync": 1, "lock": True})
    assert locked["ok"] == 1.0 and locked["lockCount"] == 1
    assert locked["info"] == "now locked against writes, use db.fsyncUnlock() to unlock"
    member = standalone.member
    replies: list[dict[str, Any]] = []
    thread = _insert_in_thread(standalone, replies)
    try:
        # The insert is waiting (a blocked operation, as a fail point's block is).
        assert standalone.wait_for(lambda: member.blocked_operations == 1)
        # Reads go on; the write waits.
        assert client.command("db", {"count": "c"})["n"] == 1
        assert replies == []
        unlocked = client.command("admin", {"fsyncUnlock": 1})
        assert unlocked == {"info": "fsyncUnlock completed", "lockCount": 0, "ok": 1.0}
    finally:
        thread.join(timeout=30)
    assert replies[0]["n"] == 1
    assert client.command("db", {"count": "c"})["n"] == 2
    refused = client.command("admin", {"fsyncUnlock": 1})
    assert (refused["ok"], refused["code"], refused["errmsg"]) == (
        0.0,
        20,
        "fsyncUnlock called when not locked",
    )
    assert client.command("db", {"fsync": 1})["code"] == 13  # admin only


def test_fsync_locks_nest(client: RawClient) -> None:
    client.command("admin", {"fsync": 1, "lock": True})
    assert client.command("admin", {"fsync": 1, "lock": True})["lockCount"] == 2
    assert client.command("admin", {"fsyncUnlock": 1})["lockCount"] == 1
    assert client.command("admin", {"fsyncUnlock": 1})["lockCount"] == 0
    assert client.command("db", {"insert": "c", "documents": [{}]})["n"] == 1
