"""Multi-document transactions in the simulator, driven by pymongo (an independent client
that speaks the transactions spec): commit, abort, isolation, conflicts, retried
commits, failover, the lifetime limit, replication of the commit, and mongos."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from bson import Binary, Int64  # noqa: E402
from pymongo import MongoClient, ReadPreference, monitoring  # noqa: E402
from pymongo.client_session import ClientSession  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402

from mongocore.pytest_plugin import MongoDBDeployment  # noqa: E402
from mongocore.sim import ReplicaSet, ShardedCluster  # noqa: E402
from tests.integration.sim_client import FAST  # noqa: E402
from tests.unit.sim_wire import connect  # noqa: E402

DEADLINE = 20.0
Client = MongoClient[dict[str, Any]]


class Commands(monitoring.CommandListener):
    """The commands pymongo sent and the replies it got, by command name."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.commands: list[monitoring.CommandStartedEvent] = []
        self.replies: list[monitoring.CommandSucceededEvent] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        with self.lock:
            self.commands.append(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        with self.lock:
            self.replies.append(event)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def sent(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(e.command) for e in self.commands if e.command_name == name]

    def answered(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(e.reply) for e in self.replies if e.command_name == name]


class FakeClock:
    """The replica set's clock, moved by the test (transaction lifetimes are measured on it)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def rs(mongodb_replica_set_per_test: MongoDBDeployment) -> ReplicaSet:
    """A replica set of each test's own (the plugin's): its tests read the oplog from its start."""
    replica_set: ReplicaSet = mongodb_replica_set_per_test.sim
    return replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    mongo: Client = MongoClient(rs.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


def _labels(failure: pytest.ExceptionInfo[OperationFailure]) -> list[str]:
    return list((failure.value.details or {}).get("errorLabels", []))


# -- committing and aborting --------------------------------------------------------------


def test_with_transaction_commits_every_write_at_once(client: Client) -> None:
    coll = client.db.accounts
    coll.insert_many([{"_id": "a", "balance": 100}, {"_id": "b", "balance": 0}])

    def transfer(session: ClientSession) -> int:
        coll.update_one({"_id": "a"}, {"$inc": {"balance": -30}}, session=session)
        coll.update_one({"_id": "b"}, {"$inc": {"balance": 30}}, session=session)
        inside = {d["_id"]: d["balance"] for d in coll.find({}, session=session)}
        outside = {d["_id"]: d["balance"] for d in coll.find({})}
        assert inside == {"a": 70, "b": 30}  # the transaction reads its own writes
        assert outside == {"a": 100, "b": 0}  # nobody else sees them before the commit
        return coll.count_documents({}, session=session)

    with client.start_session() as session:
        assert session.with_transaction(transfer) == 2
    assert {d["_id"]: d["balance"] for d in coll.find({})} == {"a": 70, "b": 30}


def test_abort_discards_the_transaction(client: Client) -> None:
    coll = client.db.c
    coll.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 2}, session=session)
        coll.delete_one({"_id": 1}, session=session)
        assert [d["_id"] for d in coll.find({}, session=session)] == [2]
        session.abort_transaction()
    assert [d["_id"] for d in coll.find({})] == [1]


def test_a_collection_created_in_a_transaction_appears_at_the_commit(client: Client) -> None:
    db = client.db
    with client.start_session() as session:
        session.start_transaction()
        db.create_collection("fresh", session=session)
        db.fresh.create_index("x", session=session)
        db.fresh.insert_one({"x": 1}, session=session)
        assert "fresh" not in db.list_collection_names()
        session.commit_transaction()
    assert "fresh" in db.list_collection_names()
    assert "x_1" in db.fresh.index_information()
    assert db.fresh.count_documents({}) == 1


def test_a_commit_retried_after_it_succeeded_succeeds_again(client: Client) -> None:
    coll = client.db.c
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 1}, session=session)
        session.commit_transaction()
        session.commit_transaction()  # pymongo sends commitTransaction again
    assert coll.count_documents({}) == 1


def test_the_commit_survives_an_election(rs: ReplicaSet, client: Client) -> None:
    coll = client.db.c
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 1}, session=session)
        session.commit_transaction()
        old = rs.step_down(stepdown_secs=5)
        assert rs.wait_for(lambda: rs.primary not in (None, old), DEADLINE)
        session.commit_transaction()  # answered by the new primary, from the set's records
    assert coll.count_documents({}) == 1


def test_a_step_down_aborts_the_transaction_in_progress(rs: ReplicaSet, client: Client) -> None:
    coll = client.db.c
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 1}, session=session)
        old = rs.step_down(stepdown_secs=5)
        assert rs.wait_for(lambda: rs.primary not in (None, old), DEADLINE)
        with pytest.raises(OperationFailure) as failure:
            session.commit_transaction()
    assert failure.value.code == 251
    assert "TransientTransactionError" in _labels(failure)
    assert coll.count_documents({}) == 0


# -- isolation and conflicts ---------------------------------------------------------------


def test_a_transaction_reads_from_its_snapshot(client: Client) -> None:
    db = client.db
    db.read.insert_one({"_id": 1, "v": "before"})
    db.untouched.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction()
        assert db.read.find_one({"_id": 1}, session=session)["v"] == "before"
        db.read.update_one({"_id": 1}, {"$set": {"v": "after"}})  # committed outside
        db.untouched.insert_one({"_id": 2})  # a collection the transaction never named yet
        assert db.read.find_one({"_id": 1}, session=session)["v"] == "before"
        assert db.untouched.count_documents({}, session=session) == 1
        session.commit_transaction()
    assert db.read.find_one({"_id": 1})["v"] == "after"
    assert db.untouched.count_documents({}) == 2


def test_two_transactions_writing_one_document_conflict(client: Client) -> None:
    coll = client.db.c
    coll.insert_one({"_id": 1, "n": 0})
    with client.start_session() as first, client.start_session() as second:
        first.start_transaction()
        second.start_transaction()
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=first)
        with pytest.raises(OperationFailure) as failure:
            coll.update_one({"_id": 1}, {"$inc": {"n": 10}}, session=second)
        assert failure.value.code == 112
        assert _labels(failure) == ["TransientTransactionError"]
        first.commit_transaction()
        # The conflict aborted the second transaction on the server.
        with pytest.raises(OperationFailure) as aborted:
            coll.insert_one({"_id": 2}, session=second)
        assert aborted.value.code == 251
        second.abort_transaction()
    assert coll.find_one({"_id": 1}) == {"_id": 1, "n": 1}


def test_a_write_committed_after_the_snapshot_conflicts(client: Client) -> None:
    coll = client.db.c
    coll.insert_one({"_id": 1, "n": 0})
    with client.start_session() as session:
        session.start_transaction()
        coll.find_one({"_id": 1}, session=session)
        coll.update_one({"_id": 1}, {"$set": {"n": 5}})
        with pytest.raises(OperationFailure) as failure:
            coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)
        assert failure.value.code == 112
        assert "TransientTransactionError" in _labels(failure)


def test_an_outside_write_makes_the_transaction_fail_its_commit(client: Client) -> None:
    coll = client.db.c
    coll.insert_one({"_id": 1, "n": 0})
    with client.start_session() as session:
        session.start_transaction()
        coll.update_one({"_id": 1}, {"$set": {"n": 1}}, session=session)
        coll.update_one({"_id": 1}, {"$set": {"n": 2}})  # goes ahead, outside
        with pytest.raises(OperationFailure) as failure:
            session.commit_transaction()
    assert failure.value.code == 112
    assert "TransientTransactionError" in _labels(failure)
    assert coll.find_one({"_id": 1}) == {"_id": 1, "n": 2}


def test_with_transaction_retries_conflicting_transactions(rs: ReplicaSet) -> None:
    counter_client: Client = MongoClient(rs.uri, **FAST)
    errors: list[BaseException] = []
    try:
        counter = counter_client.db.counter
        counter.insert_one({"_id": 1, "n": 0})

        def increment(session: ClientSession) -> None:
            counter.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)

        def worker() -> None:
            try:
                for _ in range(5):
                    with counter_client.start_session() as session:
                        session.with_transaction(increment)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, name=f"txn-worker-{i}") for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE * 3)
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        assert counter.find_one({"_id": 1}) == {"_id": 1, "n": 10}
    finally:
        counter_client.close()


# -- errors ---------------------------------------------------------------------------------


def test_a_write_error_aborts_the_transaction(client: Client) -> None:
    coll = client.db.c
    coll.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction()
        with pytest.raises(OperationFailure) as duplicate:
            coll.insert_one({"_id": 1}, session=session)
        assert duplicate.value.code == 11000
        assert "TransientTransactionError" not in _labels(duplicate)
        with pytest.raises(OperationFailure) as failure:
            coll.insert_one({"_id": 2}, session=session)
        assert failure.value.code == 251
        assert _labels(failure) == ["TransientTransactionError"]
        session.abort_transaction()
    assert coll.count_documents({}) == 1


def test_commands_a_transaction_may_not_run(client: Client) -> None:
    db = client.db
    db.existing.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction()
        with pytest.raises(OperationFailure) as count:
            db.command("count", "existing", session=session)
        assert count.value.code == 263
        session.abort_transaction()
        session.start_transaction()
        with pytest.raises(OperationFailure) as index:
            db.existing.create_index("x", session=session)
        assert index.value.code == 263
        session.abort_transaction()
        session.start_transaction(read_concern=pymongo.read_concern.ReadConcern("snapshot"))
        with pytest.raises(OperationFailure) as create:
            db.create_collection("other", session=session)
        assert create.value.code == 263
        session.abort_transaction()


def test_a_transaction_outliving_its_limit_is_aborted() -> None:
    clock = FakeClock()
    with ReplicaSet(1, election_delay=0.02, clock=clock) as rs:
        mongo: Client = MongoClient(rs.uri, **FAST)
        try:
            was = mongo.admin.command("setParameter", 1, transactionLifetimeLimitSeconds=5)
            assert was["was"] == 60
            coll = mongo.db.c
            with mongo.start_session() as session:
                session.start_transaction()
                coll.insert_one({"_id": 1}, session=session)
                clock.now += 6
                with pytest.raises(OperationFailure) as failure:
                    coll.insert_one({"_id": 2}, session=session)
                assert failure.value.code == 251
                assert "TransientTransactionError" in _labels(failure)
                session.abort_transaction()
            assert coll.count_documents({}) == 0
        finally:
            mongo.close()


# -- replication -----------------------------------------------------------------------------


def test_secondaries_see_the_commit_as_one_oplog_entry(rs: ReplicaSet, client: Client) -> None:
    coll = client.db.c
    secondary_reads = coll.with_options(read_preference=ReadPreference.SECONDARY)
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_many([{"_id": 1}, {"_id": 2}], session=session)
        coll.update_one({"_id": 1}, {"$set": {"x": 1}}, session=session)
        assert secondary_reads.count_documents({}) == 0
        session.commit_transaction()
        lsid = session.session_id
    assert sorted(secondary_reads.find({}), key=lambda d: d["_id"]) == [
        {"_id": 1, "x": 1},
        {"_id": 2},
    ]
    entry = client.local["oplog.rs"].find_one({"o.applyOps": {"$exists": True}})
    assert entry is not None
    ops = entry["o"]["applyOps"]
    assert [(op["op"], op["ns"]) for op in ops] == [
        ("c", "db.$cmd"),  # the collection, created by the first insert
        ("i", "db.c"),
        ("i", "db.c"),
        ("u", "db.c"),
    ]
    assert entry["o"]["lsid"] == lsid


# -- sharded cluster -----------------------------------------------------------------------


def test_a_transaction_through_mongos() -> None:
    commands = Commands()
    with ShardedCluster(2, shard_members=3, election_delay=0.05) as cluster:
        mongo: Client = MongoClient(cluster.uri, event_listeners=[commands], **FAST)
        try:
            coll = mongo.db.c
            with mongo.start_session() as session:
                session.with_transaction(
                    lambda s: coll.insert_many([{"_id": 1}, {"_id": 2}], session=s)
                )
            assert coll.count_documents({}) == 2
            token = {"recoveryShardId": cluster.shard.name}
            assert commands.answered("insert")[-1]["recoveryToken"] == token
            assert commands.sent("commitTransaction")[-1]["recoveryToken"] == token
        finally:
            mongo.close()


def test_another_mongos_recovers_the_commit_with_the_recovery_token() -> None:
    with ShardedCluster(2, shard_members=1, election_delay=0.02) as cluster:
        first, second = cluster.mongoses
        committed = {"id": Binary(uuid.uuid4().bytes, 4)}
        open_one = {"id": Binary(uuid.uuid4().bytes, 4)}
        with connect(first) as one, connect(second) as other:
            # Two transactions creating one collection would conflict: it exists already.
            assert one.command("db", {"create": "c"})["ok"] == 1.0
            for lsid, doc in ((committed, {"_id": 1}), (open_one, {"_id": 2})):
                reply = one.command(
                    "db",
                    {"insert": "c", "documents": [doc], "lsid": lsid, "txnNumber": Int64(1),
                     "startTransaction": True, "autocommit": False},
                )  # fmt: skip
                assert reply["ok"] == 1.0, reply
            token = reply["recoveryToken"]
            end = {"txnNumber": Int64(1), "autocommit": False}
            assert one.command("admin", {"commitTransaction": 1, "lsid": committed, **end})["ok"]
            unknown = other.command("admin", {"commitTransaction": 1, "lsid": committed, **end})
            assert unknown["code"] == 251  # without the token, this mongos knows nothing
            recovered = other.command(
                "admin",
                {"commitTransaction": 1, "lsid": committed, "recoveryToken": token, **end},
            )
            assert recovered["ok"] == 1.0
            never = other.command(
                "admin",
                {"commitTransaction": 1, "lsid": open_one, "recoveryToken": token, **end},
            )
            assert never["code"] == 251 and never["errorLabels"] == ["TransientTransactionError"]
            count = one.command("db", {"count": "c"})
        assert count["n"] == 1
