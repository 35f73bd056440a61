"""mongocore's transactions and pymongo's, on one simulated deployment: each client
sees what the other's transactions commit, nothing before the commit, nothing of an
abort; a write conflict between them is a TransientTransactionError that
mongocore's with_transaction retries; and on a sharded cluster mongocore's
transaction stays on one mongos and recovers its commit through the other one with
the recovery token when its mongos fails the commit.

pymongo is the independent client: it implements the transactions spec on its own,
so what it reads is what the deployment really committed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient  # noqa: E402

from mongocore.api.client import Client  # noqa: E402
from mongocore.api.client_session import ClientSession  # noqa: E402
from mongocore.core.events import CommandListener, CommandStartedEvent  # noqa: E402
from mongocore.core.transaction_rules import (  # noqa: E402
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_TRANSACTION_COMMIT_RESULT,
)
from mongocore.errors import NetworkError, OperationFailure  # noqa: E402
from mongocore.sim import ReplicaSet, ShardedCluster  # noqa: E402

FAST: dict[str, Any] = {"heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 20_000}
PyClient = MongoClient[dict[str, Any]]


class Started(CommandListener):
    """The commands mongocore sent: (name, address, document)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.commands: list[tuple[str, Any, dict[str, Any]]] = []

    def started(self, event: CommandStartedEvent) -> None:
        with self.lock:
            self.commands.append((event.command_name, event.address, dict(event.command)))

    def named(self, *names: str) -> list[tuple[str, Any, dict[str, Any]]]:
        with self.lock:
            return [c for c in self.commands if c[0] in names]


@pytest.fixture
def clients(rs: ReplicaSet) -> Iterator[tuple[Client, PyClient]]:
    ours = Client(rs.uri, **FAST)
    theirs: PyClient = MongoClient(rs.uri, **FAST)
    try:
        theirs.db.drop_collection("accounts")
        theirs.db.accounts.insert_many([{"_id": "a", "balance": 100}, {"_id": "b", "balance": 0}])
        yield ours, theirs
    finally:
        ours.close()
        theirs.close()


def _balances(client: Any) -> dict[str, int]:
    return {d["_id"]: d["balance"] for d in client.db.accounts.find({})}


def test_pymongo_sees_what_a_mongocore_transaction_commits_and_only_then(
    clients: tuple[Client, PyClient],
) -> None:
    ours, theirs = clients
    accounts = ours.db.accounts
    with ours.start_session() as session:
        with session.start_transaction():
            accounts.update_one({"_id": "a"}, {"$inc": {"balance": -30}}, session=session)
            accounts.update_one({"_id": "b"}, {"$inc": {"balance": 30}}, session=session)
            assert _balances(theirs) == {"a": 100, "b": 0}  # not committed yet
        assert _balances(theirs) == {"a": 70, "b": 30}
        session.start_transaction()
        accounts.insert_one({"_id": "c", "balance": 1}, session=session)
        session.abort_transaction()
    assert _balances(theirs) == {"a": 70, "b": 30}


def test_mongocore_sees_what_a_pymongo_transaction_commits_and_keeps_its_snapshot(
    clients: tuple[Client, PyClient],
) -> None:
    ours, theirs = clients
    with ours.start_session() as reader:
        reader.start_transaction()
        # The first read fixes the snapshot of mongocore's transaction.
        assert ours.db.accounts.find_one({"_id": "a"}, session=reader) == {
            "_id": "a",
            "balance": 100,
        }
        with theirs.start_session() as writer:
            writer.start_transaction()
            theirs.db.accounts.update_one({"_id": "a"}, {"$set": {"balance": 5}}, session=writer)
            assert _balances(ours)["a"] == 100  # pymongo has not committed
            writer.commit_transaction()
        assert _balances(ours)["a"] == 5  # outside the transaction: committed data
        inside = ours.db.accounts.find_one({"_id": "a"}, session=reader)
        assert inside == {"_id": "a", "balance": 100}  # the transaction's snapshot
        reader.commit_transaction()


def test_a_conflict_with_a_pymongo_transaction_is_retried_by_with_transaction(
    clients: tuple[Client, PyClient],
) -> None:
    ours, theirs = clients
    attempts: list[OperationFailure] = []
    with theirs.start_session() as blocker:
        blocker.start_transaction()
        theirs.db.accounts.update_one({"_id": "a"}, {"$set": {"by": "pymongo"}}, session=blocker)

        def callback(session: ClientSession) -> str:
            try:
                ours.db.accounts.update_one(
                    {"_id": "a"}, {"$set": {"by": "mongocore"}}, session=session
                )
            except OperationFailure as exc:
                attempts.append(exc)
                if blocker.in_transaction:
                    blocker.abort_transaction()  # the conflict goes away
                raise
            return "written"

        with ours.start_session() as session:
            assert session.with_transaction(callback) == "written"
    assert len(attempts) == 1
    assert attempts[0].code == 112  # WriteConflict
    assert attempts[0].has_error_label(TRANSIENT_TRANSACTION_ERROR)
    assert theirs.db.accounts.find_one({"_id": "a"})["by"] == "mongocore"


def test_a_sharded_transaction_stays_on_its_mongos_and_recovers_its_commit() -> None:
    started = Started()
    with ShardedCluster(2, shard_members=3, election_delay=0.05) as cluster:
        ours = Client(cluster.uri, event_listeners=[started], **FAST)
        theirs: PyClient = MongoClient(cluster.uri, **FAST)
        try:
            coll = ours.db.c
            theirs.db.c.insert_one({"_id": 0})
            with ours.start_session() as session:
                session.start_transaction()
                for n in range(1, 4):
                    coll.insert_one({"_id": n}, session=session)
                    assert coll.count_documents({}, session=session) == n + 1
                pinned = session.pinned_address
                assert pinned is not None
                sent = started.named("insert", "aggregate")
                assert {str(address) for _, address, _ in sent} == {str(pinned)}
                # The pinned mongos commits, but answers with a retryable write concern
                # error: the commit is sent again, unpinned, to the other mongos, which
                # learns the outcome from the recovery token.
                with MongoClient(str(pinned), directConnection=True) as direct:
                    direct.admin.command(
                        {
                            "configureFailPoint": "failCommand",
                            "mode": {"times": 1},
                            "data": {
                                "failCommands": ["commitTransaction"],
                                "writeConcernError": {"code": 91, "errmsg": "shutting down"},
                            },
                        }
                    )
                session.commit_transaction()
                assert session.pinned_address != pinned
            commits = started.named("commitTransaction")
            assert len(commits) == 2
            assert str(commits[0][1]) == str(pinned) != str(commits[1][1])
            token = {"recoveryShardId": cluster.shard.name}
            assert [c[2]["recoveryToken"] for c in commits] == [token, token]
            assert commits[1][2]["writeConcern"] == {"w": "majority", "wtimeout": 10000}
            assert sorted(d["_id"] for d in theirs.db.c.find({})) == [0, 1, 2, 3]
        finally:
            ours.close()
            theirs.close()


def test_a_commit_whose_connection_drops_twice_has_an_unknown_result(
    clients: tuple[Client, PyClient],
) -> None:
    ours, theirs = clients
    with ours.start_session() as session:
        session.start_transaction()
        ours.db.accounts.insert_one({"_id": "z", "balance": 1}, session=session)
        theirs.admin.command(
            {
                "configureFailPoint": "failCommand",
                "mode": {"times": 2},
                "data": {"failCommands": ["commitTransaction"], "closeConnection": True},
            }
        )
        with pytest.raises(NetworkError) as raised:
            session.commit_transaction()
        assert raised.value.has_error_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
        assert not raised.value.has_error_label(TRANSIENT_TRANSACTION_ERROR)
        session.commit_transaction()  # the application commits again: it succeeds
    assert _balances(theirs)["z"] == 1
