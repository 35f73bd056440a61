"""pymongo, an independent client, against mongocore.sim: does it pass for a MongoDB 7.0?"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from pymongo import MongoClient, ReadPreference, monitoring  # noqa: E402
from pymongo.errors import OperationFailure  # noqa: E402

from mongocore.pytest_plugin import MongoDBDeployment  # noqa: E402
from mongocore.sim import (  # noqa: E402
    LoadBalanced,
    ReplicaSet,
    ShardedCluster,
    Standalone,
    election_id,
)
from tests.integration.sim_client import FAST  # noqa: E402

# Short heartbeats and elections keep the suite fast; every wait is on an event or a
# condition with a generous deadline.
DEADLINE = 20.0


@pytest.fixture
def rs(mongodb_replica_set_per_test: MongoDBDeployment) -> ReplicaSet:
    """A replica set of each test's own (the plugin's): its tests read election ids
    from the first election, and kill and restart members."""
    replica_set: ReplicaSet = mongodb_replica_set_per_test.sim
    return replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[MongoClient[dict[str, Any]]]:
    mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


def wait_until(predicate: Any, timeout: float = DEADLINE) -> bool:
    """For data that appears with time (a secondary's lag): re-check until a deadline."""
    deadline = time.monotonic() + timeout
    event = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            return False
        event.wait(0.02)
    return True


class TopologyWatcher(monitoring.TopologyListener):
    """Wakes a waiter whenever pymongo's topology description changes."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.description: Any = None

    def opened(self, event: monitoring.TopologyOpenedEvent) -> None:
        pass

    def description_changed(self, event: monitoring.TopologyDescriptionChangedEvent) -> None:
        with self.cond:
            self.description = event.new_description
            self.cond.notify_all()

    def closed(self, event: monitoring.TopologyClosedEvent) -> None:
        pass

    def wait_for(self, predicate: Any, timeout: float = DEADLINE) -> bool:
        with self.cond:
            return self.cond.wait_for(
                lambda: self.description is not None and predicate(self.description), timeout
            )


@pytest.fixture
def watcher() -> TopologyWatcher:
    return TopologyWatcher()


@pytest.fixture
def watched(rs: ReplicaSet, watcher: TopologyWatcher) -> Iterator[MongoClient[dict[str, Any]]]:
    mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, event_listeners=[watcher], **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


class HeartbeatListener(monitoring.ServerHeartbeatListener):
    def __init__(self) -> None:
        self.awaited = threading.Event()

    def started(self, event: monitoring.ServerHeartbeatStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.ServerHeartbeatSucceededEvent) -> None:
        if event.awaited:
            self.awaited.set()

    def failed(self, event: monitoring.ServerHeartbeatFailedEvent) -> None:
        pass


def test_crud_on_a_replica_set(client: MongoClient[dict[str, Any]]) -> None:
    coll = client.app.items
    coll.insert_one({"_id": 1, "name": "a"})
    coll.insert_many([{"_id": i, "n": i} for i in range(2, 250)])
    assert coll.count_documents({}) == 249
    assert len(list(coll.find({}, batch_size=10))) == 249  # getMore round trips
    assert coll.update_many({"n": {"$lt": 10}}, {"$set": {"low": True}}).modified_count == 8
    result = coll.update_one({"_id": 999}, {"$set": {"x": 1}}, upsert=True)
    assert result.upserted_id == 999
    assert coll.find_one_and_update({"_id": 1}, {"$set": {"name": "b"}}, return_document=True) == {
        "_id": 1,
        "name": "b",
    }
    assert coll.delete_many({"n": {"$gte": 100}}).deleted_count == 150
    assert sorted(coll.distinct("low")) == [True]
    assert list(coll.aggregate([{"$match": {"_id": 1}}, {"$project": {"name": 1}}])) == [
        {"_id": 1, "name": "b"}
    ]
    with pytest.raises(pymongo.errors.DuplicateKeyError):
        coll.insert_one({"_id": 1})
    coll.create_index("name")
    assert {i["name"] for i in coll.list_indexes()} == {"_id_", "name_1"}
    assert "app" in client.list_database_names()
    assert client.app.list_collection_names() == ["items"]
    client.app.items.drop()
    assert client.app.list_collection_names() == []


def test_hello_fields_match_what_pymongo_sees(
    rs: ReplicaSet, watched: MongoClient[dict[str, Any]], watcher: TopologyWatcher
) -> None:
    client = watched
    assert watcher.wait_for(lambda d: len(d.readable_servers) == 3)
    description = client.topology_description
    assert description.topology_type_name == "ReplicaSetWithPrimary"
    servers = description.server_descriptions()
    primary = rs.primary
    assert primary is not None
    for member in rs.members:
        server = servers[member.address]
        assert server.replica_set_name == "rs0"
        assert server.max_wire_version == 21
        expected = "RSPrimary" if member is primary else "RSSecondary"
        assert server.server_type_name == expected
        assert server.set_version == 1
    assert servers[primary.address].election_id == election_id(rs.term)
    assert servers[primary.address].topology_version == primary.topology_version
    assert client.server_info()["version"].startswith("7.0.")


def test_retryable_write_across_a_step_down(
    rs: ReplicaSet, client: MongoClient[dict[str, Any]]
) -> None:
    coll = client.app.items
    coll.insert_one({"_id": "warm-up"})
    old = rs.primary
    assert old is not None
    # The insert blocks on the primary; the step-down interrupts it with
    # InterruptedDueToReplStateChange, and pymongo retries on the new primary.
    old.fail_command("insert", block_time_ms=60_000, mode={"times": 1})
    errors: list[BaseException] = []

    def write() -> None:
        try:
            coll.insert_one({"_id": "once"})
        except BaseException as exc:
            errors.append(exc)

    writer = threading.Thread(target=write, name="test-retryable-insert")
    writer.start()
    assert rs.wait_for(lambda: old.blocked_operations == 1, DEADLINE)
    rs.step_down(30)
    writer.join(timeout=DEADLINE)
    assert not writer.is_alive()
    assert errors == []
    assert coll.count_documents({"_id": "once"}) == 1
    assert rs.primary is not old


def test_retryable_write_to_a_primary_that_already_stepped_down(
    rs: ReplicaSet, client: MongoClient[dict[str, Any]]
) -> None:
    coll = client.app.items
    coll.insert_one({"_id": "warm-up"})
    rs.step_down(30)  # pymongo still believes the old primary is primary
    coll.insert_one({"_id": "once"})
    assert coll.count_documents({"_id": "once"}) == 1


def test_at_most_once_when_the_reply_carries_a_retryable_error(
    rs: ReplicaSet, client: MongoClient[dict[str, Any]]
) -> None:
    coll = client.app.items
    coll.insert_one({"_id": "warm-up"})
    # The write is applied, then the reply says RetryableWriteError: pymongo retries
    # with the same txnNumber and gets the recorded reply instead of a second write.
    client.admin.command(
        "configureFailPoint",
        "failCommand",
        mode={"times": 1},
        data={"failCommands": ["update"], "writeConcernError": {"code": 91, "errmsg": "shutdown"}},
    )
    coll.update_one({"_id": "counter"}, {"$inc": {"n": 1}}, upsert=True)
    assert coll.find_one({"_id": "counter"}) == {"_id": "counter", "n": 1}


def test_secondary_reads_see_writes_after_the_lag() -> None:
    with ReplicaSet(2, lag=0.3, election_delay=0.05) as rs:
        mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **FAST)
        try:
            mongo.app.items.insert_one({"_id": 1})
            secondary = mongo.get_database("app", read_preference=ReadPreference.SECONDARY).items
            assert wait_until(lambda: secondary.find_one({"_id": 1}) == {"_id": 1})
            address = mongo.app.items.with_options(
                read_preference=ReadPreference.SECONDARY
            ).find_one({"_id": 1})
            assert address == {"_id": 1}
        finally:
            mongo.close()


def test_repl_set_step_down_over_the_wire(
    rs: ReplicaSet, watched: MongoClient[dict[str, Any]], watcher: TopologyWatcher
) -> None:
    client = watched
    client.admin.command("ping")
    old = rs.primary
    assert old is not None

    def new_primary(description: Any) -> bool:
        primaries = [
            s.address for s in description.known_servers if s.server_type_name == "RSPrimary"
        ]
        return bool(primaries) and primaries != [old.address]

    client.admin.command("replSetStepDown", 30)
    assert watcher.wait_for(new_primary)
    new = rs.primary
    assert new is not None and client.primary == new.address
    servers = client.topology_description.server_descriptions()
    assert servers[new.address].election_id == election_id(2)
    client.app.items.insert_one({"after": "failover"})
    status = client.admin.command("replSetGetStatus")
    assert [m["stateStr"] for m in status["members"]].count("PRIMARY") == 1


def test_fail_points_through_pymongo(rs: ReplicaSet, client: MongoClient[dict[str, Any]]) -> None:
    reply = client.admin.command(
        "configureFailPoint",
        "failCommand",
        mode={"times": 1},
        data={"failCommands": ["find"], "errorCode": 2, "errmsg": "injected", "appName": "victim"},
    )
    assert reply["ok"] == 1.0
    client.app.items.find_one()  # another application: untouched
    victim: MongoClient[dict[str, Any]] = MongoClient(rs.uri, appname="victim", **FAST)
    try:
        with pytest.raises(OperationFailure) as failure:
            victim.app.items.find_one()
        assert failure.value.code == 2 and "injected" in str(failure.value)
        victim.app.items.find_one()  # times: 1 is used up
    finally:
        victim.close()
    client.admin.command("configureFailPoint", "failCommand", mode="off")


def test_killed_primary_is_replaced(rs: ReplicaSet, client: MongoClient[dict[str, Any]]) -> None:
    client.app.items.insert_one({"_id": 1})
    old = rs.primary
    assert old is not None
    rs.kill(old)
    client.app.items.insert_one({"_id": 2})
    assert client.app.items.count_documents({}) == 2
    rs.restart(old)


def test_pymongo_uses_the_streaming_protocol(rs: ReplicaSet) -> None:
    listener = HeartbeatListener()
    mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, event_listeners=[listener], **FAST)
    try:
        mongo.admin.command("ping")
        assert listener.awaited.wait(DEADLINE)
    finally:
        mongo.close()


def test_other_topologies() -> None:
    with Standalone() as standalone:
        mongo: MongoClient[dict[str, Any]] = MongoClient(standalone.uri, **FAST)
        try:
            mongo.app.items.insert_one({"_id": 1})  # retryWrites: pymongo sends no txnNumber
            assert mongo.topology_description.topology_type_name == "Single"
            assert mongo.app.items.find_one() == {"_id": 1}
        finally:
            mongo.close()
    with ShardedCluster(2, shard_members=2, election_delay=0.05) as cluster:
        mongo = MongoClient(cluster.uri, **FAST)
        try:
            mongo.app.items.insert_one({"_id": 1})
            assert mongo.topology_description.topology_type_name == "Sharded"
            assert mongo.app.items.find_one() == {"_id": 1}
        finally:
            mongo.close()
    with LoadBalanced(shard_members=1, election_delay=0.05) as lb:
        mongo = MongoClient(lb.uri, **FAST)
        try:
            mongo.app.items.insert_one({"_id": 1})
            assert mongo.topology_description.topology_type_name == "LoadBalanced"
            assert mongo.app.items.find_one() == {"_id": 1}
        finally:
            mongo.close()
