"""User management over the wire against mongocore.sim, driven by pymongo: createUser,
usersInfo, updateUser, grantRolesToUser, revokeRolesFromUser, dropUser and
dropAllUsersFromDatabase, and logging in as the users created."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient
from pymongo.errors import NotPrimaryError, OperationFailure

from mongocore.sim import ReplicaSet, ShardedCluster, Standalone, User
from tests.integration.sim_client import FAST

Client = MongoClient[dict[str, Any]]


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    mongo: Client = MongoClient(rs.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


def _logs_in(uri: str, user: str, password: str, source: str, mechanism: str) -> bool:
    """Can ``user`` log in (and then run a command)?"""
    mongo: Client = MongoClient(
        uri,
        username=user,
        password=password,
        authSource=source,
        authMechanism=mechanism,
        serverSelectionTimeoutMS=20_000,
    )
    try:
        status = mongo[source].command("connectionStatus")
    except OperationFailure as exc:
        assert exc.code == 18  # AuthenticationFailed, whatever was wrong
        return False
    finally:
        mongo.close()
    assert status["authInfo"]["authenticatedUsers"] == [{"user": user, "db": source}]
    return True


def test_created_user_logs_in_with_both_scram_mechanisms(rs: ReplicaSet, client: Client) -> None:
    reply = client.app.command("createUser", "alice", pwd="s3cret", roles=["readWrite"])
    assert reply["ok"] == 1.0
    assert _logs_in(rs.uri, "alice", "s3cret", "app", "SCRAM-SHA-256")
    assert _logs_in(rs.uri, "alice", "s3cret", "app", "SCRAM-SHA-1")
    assert not _logs_in(rs.uri, "alice", "wrong", "app", "SCRAM-SHA-256")
    assert not _logs_in(rs.uri, "alice", "s3cret", "admin", "SCRAM-SHA-256")


def test_users_info(client: Client) -> None:
    client.app.command("createUser", "bob", pwd="pw", roles=[{"role": "read", "db": "app"}])
    client.app.command(
        "createUser",
        "carol",
        pwd="pw",
        roles=[],
        mechanisms=["SCRAM-SHA-256"],
        customData={"team": "ops"},
    )
    (bob,) = client.app.command("usersInfo", "bob")["users"]
    assert bob["_id"] == "app.bob" and bob["user"] == "bob" and bob["db"] == "app"
    assert bob["userId"].subtype == 4 and len(bob["userId"]) == 16
    assert bob["roles"] == [{"role": "read", "db": "app"}]
    assert bob["mechanisms"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert "credentials" not in bob  # showCredentials is false unless asked
    users = client.app.command("usersInfo", 1)["users"]
    assert [u["user"] for u in users] == ["bob", "carol"]
    assert users[1]["customData"] == {"team": "ops"}
    (carol,) = client.app.command("usersInfo", "carol", showCredentials=True)["users"]
    assert list(carol["credentials"]) == ["SCRAM-SHA-256"]
    assert carol["credentials"]["SCRAM-SHA-256"]["iterationCount"] == 15000
    assert set(carol["credentials"]["SCRAM-SHA-256"]) >= {"salt", "storedKey", "serverKey"}
    other_db = client.admin.command("usersInfo", {"user": "bob", "db": "app"})["users"]
    assert [u["_id"] for u in other_db] == ["app.bob"]
    every = client.admin.command("usersInfo", {"forAllDBs": True})["users"]
    assert [u["_id"] for u in every] == ["app.bob", "app.carol"]
    assert client.nobody.command("usersInfo", 1)["users"] == []
    with pytest.raises(OperationFailure) as failure:
        client.app.command("usersInfo", True)
    assert failure.value.code == 2


def test_create_user_errors(client: Client) -> None:
    client.app.command("createUser", "dave", pwd="pw", roles=[])
    cases: list[tuple[dict[str, Any], int]] = [
        ({"createUser": "dave", "pwd": "pw", "roles": []}, 51003),
        ({"createUser": "erin", "pwd": "pw"}, 40414),
        ({"createUser": "erin", "pwd": "pw", "roles": "readWrite"}, 14),
        ({"createUser": "erin", "roles": []}, 2),
        ({"createUser": "erin", "pwd": "pw", "roles": ["noSuchRole"]}, 31),
        ({"createUser": "erin", "pwd": "pw", "roles": ["root"]}, 31),  # root is admin's
        ({"createUser": "erin", "pwd": "pw", "roles": [], "mechanisms": []}, 2),
        ({"createUser": "erin", "pwd": "pw", "roles": [], "mechanisms": ["BAD"]}, 2),
        ({"createUser": "", "pwd": "pw", "roles": []}, 2),
    ]
    for command, code in cases:
        with pytest.raises(OperationFailure) as failure:
            client.app.command(command)
        assert failure.value.code == code, command


def test_update_grant_revoke_and_drop(rs: ReplicaSet, client: Client) -> None:
    db = client.app
    db.command("createUser", "frank", pwd="old", roles=["read"])
    db.command("updateUser", "frank", pwd="new")
    assert not _logs_in(rs.uri, "frank", "old", "app", "SCRAM-SHA-256")
    assert _logs_in(rs.uri, "frank", "new", "app", "SCRAM-SHA-256")
    db.command("grantRolesToUser", "frank", roles=["readWrite", {"role": "read", "db": "app"}])
    assert db.command("usersInfo", "frank")["users"][0]["roles"] == [
        {"role": "read", "db": "app"},
        {"role": "readWrite", "db": "app"},
    ]
    db.command("revokeRolesFromUser", "frank", roles=["read"])
    assert db.command("usersInfo", "frank")["users"][0]["roles"] == [
        {"role": "readWrite", "db": "app"}
    ]
    with pytest.raises(OperationFailure) as failure:
        db.command("updateUser", "nobody", pwd="x")
    assert failure.value.code == 11
    db.command("dropUser", "frank")
    assert not _logs_in(rs.uri, "frank", "new", "app", "SCRAM-SHA-256")
    with pytest.raises(OperationFailure) as failure:
        db.command("dropUser", "frank")
    assert failure.value.code == 11
    db.command("createUser", "g1", pwd="pw", roles=[])
    db.command("createUser", "g2", pwd="pw", roles=[])
    client.other.command("createUser", "g3", pwd="pw", roles=[])
    assert db.command("dropAllUsersFromDatabase", 1)["n"] == 2
    assert [u["_id"] for u in client.admin.command("usersInfo", {"forAllDBs": True})["users"]] == [
        "other.g3"
    ]


def test_user_writes_need_the_primary(rs: ReplicaSet) -> None:
    secondary = rs.secondaries[0]
    direct: Client = MongoClient(secondary.host, directConnection=True, **FAST)
    try:
        with pytest.raises(NotPrimaryError):
            direct.app.command("createUser", "henry", pwd="pw", roles=[])
        assert direct.app.command("usersInfo", 1)["users"] == []  # a read
    finally:
        direct.close()


def test_users_on_a_deployment_with_authentication() -> None:
    with Standalone(users=[User("root", "rootpw")]) as server:
        anonymous: Client = MongoClient(server.uri, serverSelectionTimeoutMS=20_000)
        admin: Client = MongoClient(server.uri, username="root", password="rootpw")
        try:
            with pytest.raises(OperationFailure) as failure:
                anonymous.app.command("createUser", "ivy", pwd="pw", roles=[])
            assert failure.value.code == 13
            admin.app.command("createUser", "ivy", pwd="pw", roles=["readWrite"])
            (root,) = admin.admin.command("usersInfo", "root")["users"]
            assert root["roles"] == [{"role": "root", "db": "admin"}]
            options = admin.admin.command("getCmdLineOpts")
            assert options["parsed"]["security"] == {"authorization": "enabled"}
            assert admin.admin.command("getLog", "startupWarnings")["log"] == []
        finally:
            anonymous.close()
            admin.close()
        ivy: Client = MongoClient(server.uri, username="ivy", password="pw", authSource="app")
        try:
            ivy.app.items.insert_one({"_id": 1})
            assert ivy.app.items.count_documents({}) == 1
        finally:
            ivy.close()


def test_users_of_a_sharded_cluster_log_in_through_any_router() -> None:
    with ShardedCluster(2, shard_members=1, election_delay=0.05) as cluster:
        first: Client = MongoClient(cluster.mongoses[0].host, **FAST)
        try:
            first.admin.command("createUser", "jack", pwd="pw", roles=["root"])
        finally:
            first.close()
        second_uri = f"mongodb://{cluster.mongoses[1].host}/"
        assert _logs_in(second_uri, "jack", "pw", "admin", "SCRAM-SHA-256")
