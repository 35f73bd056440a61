"""Retryable writes and reads, sessions and command events, against the simulated deployment.

Seeds: retryable-writes.rst 1.0 (retryWrites default false; transaction ids only on
supported writes; one retry; at-most-once), retryable-reads.rst 1.3.0 (retry until
success or a non-retryable error; two socket timeouts end it; PoolClearedError),
with the newer specs' additions (deprioritized mongos). Driver sessions: pooled
server sessions, txnNumber kept on reuse, dirty sessions dropped, cluster time
gossip, endSessions at close. Command monitoring: an event pair per attempt.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Int64

pytest.importorskip("pyuca")

from mongocore.api.operations import DeleteMany, InsertOne, UpdateMany, UpdateOne
from mongocore.core.address import Address
from mongocore.core.description.types import ServerType
from mongocore.core.events import CommandFailedEvent, CommandStartedEvent
from mongocore.errors import (
    ConfigurationError,
    ExecutionTimeout,
    InvalidOperation,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    WriteConcernError,
)
from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from mongocore.write_concern import WriteConcern
from tests.integration.sim_client import (
    DEADLINE,
    Recorder,
    run_in_thread,
    sim_client,
    wait_for_topology,
)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def txn_numbers(events: list[CommandStartedEvent]) -> list[Any]:
    return [e.command.get("txnNumber") for e in events]


# --- retryable writes -------------------------------------------------------------------


def test_retryable_insert_across_a_step_down_writes_exactly_once(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": "warm-up"})
        old_primary = rs.primary
        assert old_primary is not None
        # The insert blocks on the primary; the step-down interrupts it there
        # (InterruptedDueToReplStateChange) and the retry finds the new primary.
        old_primary.fail_command("insert", block_time_ms=10_000, mode={"times": 1})
        recorder.clear()
        join = run_in_thread(lambda: coll.insert_one({"_id": "x"}))
        assert rs.wait_for(lambda: old_primary.blocked_operations == 1, DEADLINE)
        rs.step_down()
        result = join()
        assert result.inserted_id == "x"
        assert coll.count_documents({"_id": "x"}) == 1
    inserts = recorder.started_of("insert")
    assert len(inserts) == 2
    failure = recorder.failed_of("insert")[0].failure
    assert isinstance(failure, OperationFailure) and failure.code == 11602
    assert inserts[0].address == Address(*old_primary.address)
    assert inserts[1].address != inserts[0].address
    # The same transaction id, the same operationId, a new requestId.
    assert inserts[0].command["txnNumber"] == inserts[1].command["txnNumber"]
    assert isinstance(inserts[0].command["txnNumber"], Int64)
    assert inserts[0].command["lsid"] == inserts[1].command["lsid"]
    assert inserts[0].operation_id == inserts[1].operation_id
    assert inserts[0].request_id != inserts[1].request_id


def test_a_retry_gets_the_recorded_reply_and_nothing_is_written_twice(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 0})
        primary = rs.primary
        assert primary is not None
        # The write is applied, then its reply carries a retryable write concern
        # error: the retry (same lsid and txnNumber) must get the recorded reply.
        primary.fail_command(
            "insert",
            write_concern_error={"code": 91, "errmsg": "Replication is being shut down"},
            mode={"times": 1},
        )
        recorder.clear()
        result = coll.insert_one({"_id": 1, "n": "once"})
        assert result.inserted_id == 1
        assert coll.count_documents({}) == 2
        inserts = recorder.started_of("insert")
        assert len(inserts) == 2
        assert txn_numbers(inserts)[0] == txn_numbers(inserts)[1]
        lsid = inserts[0].command["lsid"]
        record = rs.store.sessions.recorded(lsid)
        assert record is not None and record[0] == inserts[0].command["txnNumber"]
        # The first reply carried the write concern error, the retry's did not.
        replies = recorder.succeeded_of("insert")
        assert "writeConcernError" in replies[0].reply
        assert "writeConcernError" not in replies[1].reply
        assert replies[1].reply["n"] == 1


def test_a_write_whose_reply_is_lost_is_applied_once(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True, socketTimeoutMS=300) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 0})
        primary = rs.primary
        assert primary is not None
        # The first attempt times out on the client while the server holds it; the
        # retry runs the write; the first attempt, released later, finds it done.
        primary.fail_command("insert", block_time_ms=1_000, mode={"times": 1})
        recorder.clear()
        coll.insert_one({"_id": 1})
        assert rs.wait_for(lambda: primary.blocked_operations == 0, DEADLINE)
        assert coll.count_documents({}) == 2
        failure = recorder.failed_of("insert")[0].failure
        assert isinstance(failure, NetworkTimeout)
        assert failure.has_error_label("RetryableWriteError")


def test_retry_writes_is_off_by_default_and_then_writes_are_not_retried(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    with sim_client(rs.uri, recorder) as client:
        assert client.options.retry_writes is False
        coll = client["app"]["items"]
        primary = rs.primary
        assert primary is not None
        primary.fail_command("insert", error_code=91, mode={"times": 1})
        with pytest.raises(OperationFailure) as info:
            coll.insert_one({"_id": 1})
        assert info.value.code == 91
        inserts = recorder.started_of("insert")
        assert len(inserts) == 1
        assert "txnNumber" not in inserts[0].command
        assert "lsid" in inserts[0].command  # sessions are still used
    # Network errors get no RetryableWriteError label without retryWrites.
    with sim_client(rs.uri, recorder) as client:
        primary = rs.wait_for_primary()
        primary.fail_command("insert", close_connection=True, mode={"times": 1})
        with pytest.raises(NetworkError) as network:
            client["app"]["items"].insert_one({"_id": 2})
        assert not network.value.has_error_label("RetryableWriteError")


def test_a_write_is_retried_at_most_once(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        primary = rs.primary
        assert primary is not None
        primary.fail_command("insert", close_connection=True, mode={"times": 5})
        with pytest.raises(NetworkError):
            client["app"]["items"].insert_one({"_id": 1})
        assert len(recorder.started_of("insert")) == 2


def test_a_labeled_error_the_seed_does_not_list_is_not_retried(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    """retryable-writes 1.0: only network and "not writable primary" / "node is
    recovering" errors are retried; a server's RetryableWriteError label on another
    code (HostUnreachable here) does not make it retryable."""
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        primary = rs.primary
        assert primary is not None
        primary.fail_command(
            "insert", error_code=6, error_labels=["RetryableWriteError"], mode={"times": 1}
        )
        with pytest.raises(OperationFailure) as info:
            client["app"]["items"].insert_one({"_id": 1})
        assert info.value.code == 6
        assert len(recorder.started_of("insert")) == 1
        assert client["app"]["items"].find_one({"_id": 1}) is None


def test_a_non_retryable_error_is_not_retried(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        primary = rs.primary
        assert primary is not None
        primary.fail_command("update", error_code=2, mode={"times": 1})
        with pytest.raises(OperationFailure) as info:
            client["app"]["items"].update_one({"_id": 1}, {"$set": {"a": 1}})
        assert info.value.code == 2
        assert len(recorder.started_of("update")) == 1


def test_transaction_ids_only_on_supported_writes(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        db = client["app"]
        coll = db["items"]
        coll.insert_one({"_id": 1, "a": 1})
        coll.insert_many([{"_id": 2}, {"_id": 3}])
        coll.update_one({"_id": 1}, {"$set": {"a": 2}})
        coll.replace_one({"_id": 1}, {"a": 3})
        coll.delete_one({"_id": 3})
        coll.find_one_and_update({"_id": 1}, {"$set": {"a": 4}})
        coll.find_one_and_replace({"_id": 1}, {"a": 5})
        coll.find_one_and_delete({"_id": 2})
        coll.bulk_write([InsertOne({"_id": 9}), UpdateOne({"_id": 9}, {"$set": {"b": 1}})])
        supported = [e for e in recorder.of(CommandStartedEvent) if "txnNumber" in e.command]
        assert len(supported) == 10
        numbers = [int(e.command["txnNumber"]) for e in supported]
        assert numbers == sorted(set(numbers)), "a new, larger txnNumber per command"
        recorder.clear()
        coll.update_many({}, {"$set": {"m": 1}})
        coll.delete_many({"_id": 99})
        coll.bulk_write([InsertOne({"_id": 10}), UpdateMany({}, {"$set": {"c": 1}})])
        coll.bulk_write([InsertOne({"_id": 11}), DeleteMany({"_id": 99})], ordered=False)
        coll.with_options(write_concern=WriteConcern(w=0)).insert_one({"_id": 12})
        list(coll.aggregate([{"$match": {}}, {"$out": "copy"}]))
        client.command("app", {"insert": "items", "documents": [{"_id": 13}]})
        db.command({"delete": "items", "deletes": [{"q": {"_id": 13}, "limit": 1}]})
        db.command({"insert": "items", "documents": [{"_id": 14}], "writeConcern": {"w": 0}})
        sent = recorder.of(CommandStartedEvent)
        assert {e.command_name for e in sent} >= {"update", "delete", "insert", "aggregate"}
        assert all("txnNumber" not in e.command for e in sent)
        unacknowledged = [e for e in sent if e.command.get("writeConcern") == {"w": 0}]
        assert len(unacknowledged) == 2
        assert all("lsid" not in e.command for e in unacknowledged)


def test_a_standalone_runs_writes_once_without_transaction_ids(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder, retryWrites=True) as client:
        standalone.member.fail_command("insert", error_code=91, mode={"times": 1})
        with pytest.raises(OperationFailure):
            client["app"]["items"].insert_one({"_id": 1})
        inserts = recorder.started_of("insert")
        assert len(inserts) == 1 and "txnNumber" not in inserts[0].command


def test_a_mongos_that_failed_is_deprioritized_for_the_retry(recorder: Recorder) -> None:
    with (
        ShardedCluster(mongoses=2, election_delay=0.05) as cluster,
        sim_client(cluster.uri, recorder, retryWrites=True) as client,
    ):
        coll = client["app"]["items"]
        # Both mongoses must be known for deprioritizing one to mean anything.
        wait_for_topology(
            client,
            lambda td: (
                len(td.servers) == 2
                and all(s.type is ServerType.MONGOS for s in td.servers.values())
            ),
        )

        # Whichever mongos gets the command first fails it; the failure clears every
        # fail point before the retry, so a retry anywhere would succeed: only the
        # addresses tell whether the failed mongos was avoided.
        def clear_all(event: CommandFailedEvent) -> None:
            for mongos in cluster.mongoses:
                mongos.clear_fail_points()

        recorder.on_failed = clear_all
        for mongos in cluster.mongoses:
            mongos.fail_command("insert", error_code=189, mode={"times": 1})
        coll.insert_one({"_id": 1})
        for mongos in cluster.mongoses:
            mongos.fail_command("find", error_code=6, mode={"times": 1})
        assert coll.find_one({"_id": 1}) == {"_id": 1}
    for name in ("insert", "find"):
        attempts = recorder.started_of(name)
        assert len(attempts) == 2
        assert attempts[0].address != attempts[1].address


# --- retryable reads --------------------------------------------------------------------


def test_a_read_is_retried_until_it_succeeds(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 1})
        primary = rs.primary
        assert primary is not None
        primary.fail_command("find", error_code=6, mode={"times": 3})  # HostUnreachable
        recorder.clear()
        assert coll.find_one({"_id": 1}) == {"_id": 1}
    started = recorder.started_of("find")
    failed = recorder.failed_of("find")
    assert len(started) == 4, "the seed retries more than once"
    assert len(failed) == 3 and len(recorder.succeeded_of("find")) == 1
    assert len({e.operation_id for e in started}) == 1
    assert len({e.request_id for e in started}) == 4
    assert [e.request_id for e in failed] == [e.request_id for e in started[:3]]
    assert len({str(e.command["lsid"]) for e in started}) == 1


def test_a_read_survives_repeated_dropped_connections(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 1, "tag": "t"})
        primary = rs.primary
        assert primary is not None
        primary.fail_command("aggregate", close_connection=True, mode={"times": 2})
        recorder.clear()
        assert coll.count_documents({"tag": "t"}) == 1
        failures = [e.failure for e in recorder.failed_of("aggregate")]
        assert len(failures) == 2 and all(isinstance(f, NetworkError) for f in failures)
        # A network error makes the session dirty: it is not pooled again.
        lsid = recorder.started_of("aggregate")[0].command["lsid"]
        recorder.clear()
        coll.find_one({})
        assert recorder.started_of("find")[0].command["lsid"] != lsid


def test_reads_stop_after_the_second_socket_timeout(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder, socketTimeoutMS=200) as client:
        client["app"]["items"].insert_one({"_id": 1})
        standalone.member.fail_command("find", block_time_ms=2_000)
        recorder.clear()
        with pytest.raises(NetworkTimeout):
            client["app"]["items"].find_one({})
        failures = [e.failure for e in recorder.failed_of("find")]
        assert len(recorder.started_of("find")) == 2
        assert len(failures) == 2 and all(isinstance(f, NetworkTimeout) for f in failures)
        standalone.member.clear_fail_points()


def test_a_read_bounded_by_timeout_ms_raises_a_timeout_error(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder) as client:
        coll = client["app"]["items"]
        standalone.member.fail_command("distinct", error_code=6)
        with pytest.raises(MongoCoreError) as info:
            coll.distinct("a", timeout_ms=300)
        assert_last_attempt_error(info.value, recorder)
    with sim_client(standalone.uri, recorder, timeoutMS=300) as client:
        recorder.clear()
        with pytest.raises(MongoCoreError) as info:
            client["app"]["items"].distinct("a")
        assert_last_attempt_error(info.value, recorder)
        standalone.member.clear_fail_points()


def test_a_persistent_retryable_read_error_is_retried_within_a_bound(
    standalone: Standalone, recorder: Recorder
) -> None:
    """The seed retries a read "as many times as necessary"; with a server that keeps
    answering a retryable error (HostUnreachable leaves it selectable), mongocore keeps
    retrying for serverSelectionTimeoutMS, backing off, then raises the last error.
    Unbounded, the read would never return; without the back-off it would send
    hundreds of commands in that time."""
    with sim_client(standalone.uri, recorder, serverSelectionTimeoutMS=800) as client:
        coll = client["app"]["items"]
        standalone.member.fail_command("distinct", error_code=6)
        recorder.clear()
        join = run_in_thread(lambda: coll.distinct("a"))
        with pytest.raises(OperationFailure) as info:
            join()
        standalone.member.clear_fail_points()
    assert info.value.code == 6
    failures = recorder.failed_of("distinct")
    assert info.value is failures[-1].failure
    assert 3 <= len(failures) <= 40, len(failures)


def assert_last_attempt_error(error: BaseException, recorder: Recorder) -> None:
    """The read was retried until timeoutMS ran out, and the error raised is a timeout
    (CSOT, "Retryability"): the one that cut the last attempt short while it waited for
    its reply, or, when timeoutMS ran out between two attempts (how the time falls
    depends on the machine's load), an ExecutionTimeout whose cause is the last
    attempt's HostUnreachable (6) from the fail point."""
    failures = [event.failure for event in recorder.failed_of("distinct")]
    assert len(failures) >= 2
    for earlier in failures[:-1]:
        assert isinstance(earlier, OperationFailure) and earlier.code == 6
    if isinstance(error, NetworkTimeout):
        assert error is failures[-1]
    else:
        assert isinstance(error, ExecutionTimeout) and error.timeout
        cause = error.__cause__
        if cause is not None:  # expired between attempts (else: the next one not sent)
            assert cause is failures[-1]
            assert isinstance(cause, OperationFailure) and cause.code == 6


def test_a_pool_cleared_error_is_retried_without_an_attempt(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder, maxPoolSize=1) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 1})
        member = standalone.member
        # The only connection is held by a find the server keeps for a while.
        member.fail_command("find", block_time_ms=800, mode={"times": 1})
        first = run_in_thread(lambda: coll.find_one({"_id": 1}))
        assert standalone.wait_for(lambda: member.blocked_operations == 1, DEADLINE)
        with recorder.cond:
            queued = recorder.checkouts_started + 1
        second = run_in_thread(lambda: coll.find_one({"_id": 1}))
        recorder.wait_for(lambda: recorder.checkouts_started >= queued)
        # An application error elsewhere clears the pool while the second find waits.
        address = Address(*member.address)
        server = client.topology.get_server(address)
        assert server is not None
        client.topology.handle_error(
            address,
            NetworkError("simulated", address=address),
            generation=server.pool.generation,
            completed_handshake=True,
        )
        assert first() == {"_id": 1}
        assert second() == {"_id": 1}
    assert any(e.reason == "connectionError" for e in recorder.checkout_failures)
    # The PoolClearedError made no attempt: two finds in all, both succeeded.
    assert len(recorder.started_of("find")) == 2
    assert len(recorder.succeeded_of("find")) == 2


def test_get_more_and_the_generic_command_are_never_retried(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["app"]["items"]
        coll.insert_many([{"_id": i} for i in range(5)])
        primary = rs.primary
        assert primary is not None
        cursor = coll.find({}, batch_size=2)
        assert next(cursor) == {"_id": 0}
        primary.fail_command("getMore", error_code=6, mode={"times": 1})
        with pytest.raises(OperationFailure):
            list(cursor)
        assert len(recorder.started_of("getMore")) == 1
        primary.fail_command("find", error_code=6, mode={"times": 1})
        recorder.clear()
        with pytest.raises(OperationFailure):
            client.command("app", {"find": "items"})
        assert len(recorder.started_of("find")) == 1
        primary.fail_command("insert", error_code=91, mode={"times": 1})
        with pytest.raises(OperationFailure):
            client["app"].command({"insert": "items", "documents": [{"_id": 7}]})
        assert len(recorder.started_of("insert")) == 1


def test_retry_reads_false_runs_reads_once(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, retryReads=False) as client:
        primary = rs.primary
        assert primary is not None
        primary.fail_command("find", error_code=6, mode={"times": 1})
        with pytest.raises(OperationFailure):
            client["app"]["items"].find_one({})
        assert len(recorder.started_of("find")) == 1


# --- sessions, cluster time, events ------------------------------------------------------


def test_implicit_sessions_are_reused_with_increasing_txn_numbers(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["app"]["items"]
        for i in range(4):
            coll.insert_one({"_id": i})
        coll.find_one({})
        inserts = recorder.started_of("insert")
        assert len({str(e.command["lsid"]) for e in inserts}) == 1, "one pooled server session"
        assert [int(n) for n in txn_numbers(inserts)] == [1, 2, 3, 4]
        assert recorder.started_of("find")[0].command["lsid"] == inserts[0].command["lsid"]
        # An explicit session reuses the pooled server session: its txnNumber goes on.
        with client.start_session() as session:
            coll.insert_one({"_id": 10}, session=session)
            assert session.txn_number == 5
            assert session.session_id == inserts[0].command["lsid"]
            assert coll.find_one({"_id": 10}, session=session) == {"_id": 10}
        with pytest.raises(InvalidOperation):
            coll.insert_one({"_id": 11}, session=session)
        with (
            sim_client(rs.uri) as other,
            other.start_session() as foreign,
            pytest.raises(InvalidOperation),
        ):
            coll.find_one({}, session=foreign)


def test_explicit_sessions_are_not_allowed_with_unacknowledged_writes(rs: ReplicaSet) -> None:
    with sim_client(rs.uri) as client, client.start_session() as session:
        coll = client["app"]["items"].with_options(write_concern=WriteConcern(w=0))
        with pytest.raises(ConfigurationError):
            coll.insert_one({"_id": 1}, session=session)


def test_cluster_time_is_gossiped_and_reads_are_causally_consistent(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    with sim_client(rs.uri, recorder) as client:
        coll = client["app"]["items"]
        before = client.cluster_time
        coll.insert_one({"_id": 1})
        assert before is None and client.cluster_time is not None
        coll.find_one({})
        find = recorder.started_of("find")[0]
        assert find.command["$clusterTime"]["clusterTime"] >= (
            recorder.started_of("insert")[0].command.get("$clusterTime") or {}
        ).get("clusterTime", find.command["$clusterTime"]["clusterTime"])
        with client.start_session() as session:
            coll.insert_one({"_id": 2}, session=session)
            assert session.operation_time is not None
            recorder.clear()
            coll.find_one({"_id": 2}, session=session)
            read_concern = recorder.started_of("find")[0].command["readConcern"]
            assert read_concern == {"afterClusterTime": session.operation_time}


def test_end_sessions_is_sent_on_close(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 1})
        with client.start_session() as a, client.start_session() as b:
            coll.find_one({}, session=a)
            coll.find_one({}, session=b)
        used = {
            str(e.command["lsid"]) for e in recorder.of(CommandStartedEvent) if "lsid" in e.command
        }
        assert len(used) == 2
    (end,) = recorder.started_of("endSessions")
    assert end.database_name == "admin"
    assert {str(lsid) for lsid in end.command["endSessions"]} == used
    assert len(recorder.succeeded_of("endSessions")) == 1


def test_sensitive_commands_are_redacted_in_events(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder) as client:
        with pytest.raises(OperationFailure):
            client.command("admin", {"saslStart": 1, "mechanism": "PLAIN", "payload": b"secret"})
        client.command("admin", {"hello": 1, "speculativeAuthenticate": {"saslStart": 1}})
    (sasl,) = recorder.started_of("saslStart")
    assert sasl.command == {}
    failure = recorder.failed_of("saslStart")[0].failure
    assert isinstance(failure, OperationFailure) and failure.code is not None
    assert "secret" not in str(failure) and set(failure.details) <= {
        "code",
        "codeName",
        "errorLabels",
    }
    (hello,) = recorder.started_of("hello")
    assert hello.command == {}
    assert recorder.succeeded_of("hello")[0].reply == {}


def test_events_pair_up_for_every_attempt(rs: ReplicaSet, recorder: Recorder) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        primary = rs.primary
        assert primary is not None
        primary.fail_command("insert", close_connection=True, mode={"times": 1})
        client["app"]["items"].insert_many([{"_id": 1}, {"_id": 2}])
    started = recorder.of(CommandStartedEvent)
    finished = {e.request_id for e in recorder.events if not isinstance(e, CommandStartedEvent)}
    assert {e.request_id for e in started} == finished
    inserts = recorder.started_of("insert")
    assert len(inserts) == 2 and inserts[0].command["documents"] == inserts[1].command["documents"]
    assert isinstance(recorder.failed_of("insert")[0], CommandFailedEvent)


def test_write_concern_errors_that_are_not_retryable_reach_the_caller(
    rs: ReplicaSet, recorder: Recorder
) -> None:
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        primary = rs.primary
        assert primary is not None
        primary.fail_command(
            "insert",
            write_concern_error={"code": 64, "errmsg": "waiting for replication timed out"},
            mode={"times": 1},
        )
        with pytest.raises(WriteConcernError) as info:
            client["app"]["items"].insert_one({"_id": 1})
        assert info.value.code == 64
        assert not info.value.has_error_label("RetryableWriteError")
        assert len(recorder.started_of("insert")) == 1
        assert client["app"]["items"].count_documents({}) == 1
