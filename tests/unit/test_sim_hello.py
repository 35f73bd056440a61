"""The simulator's hello: legacy OP_QUERY and OP_MSG, member kinds, awaitable and exhaust hello."""

from __future__ import annotations

import datetime
import socket
import threading
from collections.abc import Iterator

import pytest
from bson import Int64, ObjectId, Timestamp

from mongocore.core.wire import MORE_TO_COME, REPLY_QUERY_FAILURE, OpMsg
from mongocore.sim import (
    BUILD_VERSION,
    LoadBalanced,
    MemberConfig,
    ReplicaSet,
    ShardedCluster,
    Standalone,
    election_id,
)
from tests.unit.sim_wire import RawClient, connect


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(
        [MemberConfig(tags={"dc": "east"}), MemberConfig()],
        arbiters=1,
        hidden=1,
        priority0=1,
        election_delay=0.02,
    ) as replica_set:
        yield replica_set


def test_legacy_hello_on_the_primary(rs: ReplicaSet) -> None:
    primary = rs.primary
    assert primary is rs.members[0]
    with RawClient(primary.address) as client:
        reply = client.legacy_hello({"isMaster": 1, "helloOk": True, "client": {"driver": {}}})
    assert reply["ismaster"] is True
    assert "isWritablePrimary" not in reply
    assert reply["secondary"] is False
    assert reply["helloOk"] is True
    assert reply["setName"] == "rs0"
    assert reply["setVersion"] == 1
    assert reply["hosts"] == [rs.members[0].host, rs.members[1].host]
    assert reply["passives"] == [rs.members[2].host]
    assert reply["arbiters"] == [rs.members[4].host]
    assert rs.members[3].host not in reply["hosts"] + reply["passives"]
    assert reply["primary"] == reply["me"] == primary.host
    assert reply["electionId"] == election_id(rs.term) == ObjectId("7fffffff0000000000000001")
    assert reply["tags"] == {"dc": "east"}
    assert reply["topologyVersion"] == {
        "processId": primary.process_id,
        "counter": Int64(primary.counter),
    }
    assert reply["minWireVersion"] == 0 and reply["maxWireVersion"] == 21
    assert reply["maxBsonObjectSize"] == 16 * 1024 * 1024
    assert reply["maxMessageSizeBytes"] == 48_000_000
    assert reply["maxWriteBatchSize"] == 100_000
    assert reply["logicalSessionTimeoutMinutes"] == 30
    assert isinstance(reply["localTime"], datetime.datetime)
    assert reply["connectionId"] >= 1
    last_write = reply["lastWrite"]
    assert isinstance(last_write["opTime"]["ts"], Timestamp)
    assert last_write["opTime"]["t"] == 1
    assert isinstance(last_write["lastWriteDate"], datetime.datetime)
    assert "majorityOpTime" in last_write and "majorityWriteDate" in last_write
    assert isinstance(reply["$clusterTime"]["clusterTime"], Timestamp)
    assert isinstance(reply["operationTime"], Timestamp)
    assert reply["ok"] == 1.0


def test_hello_of_each_member_kind(rs: ReplicaSet) -> None:
    secondary, passive, hidden, arbiter = rs.members[1:]
    with connect(secondary) as client:
        reply = client.command("admin", {"hello": 1})
        assert reply["isWritablePrimary"] is False and reply["secondary"] is True
        assert reply["primary"] == rs.members[0].host
        assert "electionId" not in reply and "passive" not in reply
    with connect(passive) as client:
        reply = client.command("admin", {"hello": 1})
        assert reply["passive"] is True and reply["secondary"] is True
    with connect(hidden) as client:
        reply = client.command("admin", {"hello": 1})
        assert reply["hidden"] is True and reply["passive"] is True
    with connect(arbiter) as client:
        reply = client.command("admin", {"hello": 1})
        assert reply["arbiterOnly"] is True and reply["secondary"] is False
        assert "lastWrite" not in reply
        find = client.command("db", {"find": "c", "$readPreference": {"mode": "secondary"}})
        assert find["code"] == 13436 and find["codeName"] == "NotPrimaryOrSecondary"


def test_op_query_is_only_for_the_handshake(rs: ReplicaSet) -> None:
    with RawClient(rs.members[0].address) as client:
        reply = client.legacy_hello({"find": "c"})
        assert reply["ok"] == 0 and reply["code"] == 352
        assert reply["codeName"] == "UnsupportedOpQueryCommand"
        legacy_find = client.legacy_query("db.c", {})
        assert legacy_find.response_flags & REPLY_QUERY_FAILURE


def test_standalone_hello_has_no_replica_set_fields() -> None:
    with Standalone() as standalone, connect(standalone.member) as client:
        reply = client.command("admin", {"hello": 1})
        assert reply["isWritablePrimary"] is True
        for field in ("setName", "hosts", "$clusterTime", "operationTime", "lastWrite"):
            assert field not in reply
        assert "topologyVersion" in reply
        build = client.command("admin", {"buildInfo": 1})
        assert build["version"] == BUILD_VERSION and build["version"].startswith("7.0.")
        assert build["versionArray"][:2] == [7, 0]


def test_mongos_hello() -> None:
    with ShardedCluster(2, shard_members=1, election_delay=0.02) as cluster:
        assert len({m.port for m in cluster.members}) == 2
        with connect(cluster.members[1]) as client:
            reply = client.command("admin", {"hello": 1})
            assert reply["msg"] == "isdbgrid" and reply["isWritablePrimary"] is True
            assert "setName" not in reply and "serviceId" not in reply
            assert "$clusterTime" in reply


def test_load_balanced_mongos() -> None:
    with LoadBalanced(shard_members=1, election_delay=0.02) as lb:
        assert lb.uri.endswith("?loadBalanced=true")
        with RawClient(lb.mongos.address) as client:
            reply = client.command("admin", {"hello": 1, "loadBalanced": True})
            assert reply["serviceId"] == lb.mongos.service_id
            assert client.command("admin", {"ping": 1})["ok"] == 1.0
        with RawClient(lb.mongos.address) as client:
            reply = client.command("admin", {"hello": 1})
            assert reply["code"] == 354 and reply["codeName"] == "LoadBalancerSupportMismatch"
            assert client.closed_by_peer()


def test_uninitiated_member_reports_isreplicaset() -> None:
    with ReplicaSet(2, initiate=False, election_delay=0.02) as rs:
        with connect(rs.members[0]) as client:
            reply = client.command("admin", {"hello": 1})
            assert reply["isreplicaset"] is True and reply["isWritablePrimary"] is False
            assert "setName" not in reply
            status = client.command("admin", {"replSetGetStatus": 1})
            assert status["code"] == 94
            assert client.command("admin", {"replSetInitiate": {}})["ok"] == 1.0
        assert rs.wait_for_primary() is rs.members[0]


def test_awaitable_hello_answers_when_the_state_changes(rs: ReplicaSet) -> None:
    secondary = rs.members[1]
    with connect(secondary) as client:
        first = client.command("admin", {"hello": 1})
        replies: list[dict[str, object]] = []

        def wait() -> None:
            replies.append(
                client.command(
                    "admin",
                    {
                        "hello": 1,
                        "topologyVersion": first["topologyVersion"],
                        "maxAwaitTimeMS": 60_000,
                    },
                )
            )

        waiter = threading.Thread(target=wait, name="test-awaitable-hello")
        waiter.start()
        # The waiter is parked until the state changes, and the member lists its
        # connection as waiting meanwhile (what the spec runner waits for before it
        # configures a fail point); a step-down changes the state.
        connection_id = first["connectionId"]
        with secondary.cond:
            assert secondary.cond.wait_for(
                lambda: connection_id in secondary.awaiting_hellos, timeout=30
            )
        rs.step_down(10)
        waiter.join(timeout=30)
        assert not waiter.is_alive()
        with secondary.cond:
            assert connection_id not in secondary.awaiting_hellos
    reply = replies[0]
    counter = reply["topologyVersion"]["counter"]  # type: ignore[index]
    assert counter > first["topologyVersion"]["counter"]


def test_awaitable_hello_times_out_unchanged(rs: ReplicaSet) -> None:
    with connect(rs.members[1]) as client:
        first = client.command("admin", {"hello": 1})
        again = client.command(
            "admin", {"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 20}
        )
        assert again["topologyVersion"] == first["topologyVersion"]


def test_exhaust_hello_streams_more_to_come_replies(rs: ReplicaSet) -> None:
    member = rs.members[1]
    with connect(member) as client:
        first = client.command("admin", {"hello": 1})
        request_id = client.exhaust(
            "admin",
            {"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 60_000},
        )
        # Nothing changed: the first streamed reply comes only after a change.
        rs.freeze(rs.members[2], 0)  # no state change: no reply expected from this
        rs.step_down(10)
        header, message = client.read()
        assert isinstance(message, OpMsg) and message.flag_bits & MORE_TO_COME
        assert header.response_to == request_id
        counter = message.body["topologyVersion"]["counter"]
        # The stream continues on its own: the next change yields the next reply.
        rs.kill(rs.members[2])
        header2, message2 = client.read()
        assert isinstance(message2, OpMsg) and message2.flag_bits & MORE_TO_COME
        assert header2.response_to == header.request_id
        assert message2.body["topologyVersion"]["counter"] > counter


@pytest.mark.parametrize("exhaust", [False, True])
def test_a_client_that_hangs_up_during_an_awaitable_hello_ends_its_thread(
    rs: ReplicaSet, exhaust: bool
) -> None:
    """The member closes the connection at once, while the deployment keeps running:
    its thread does not wait out maxAwaitTimeMS (60 s here) for nobody."""
    member = rs.members[1]
    client = connect(member)
    first = client.command("admin", {"hello": 1})
    connection_id = first["connectionId"]
    awaitable = {"hello": 1, "topologyVersion": first["topologyVersion"], "maxAwaitTimeMS": 60_000}
    if exhaust:
        client.exhaust("admin", awaitable)
    else:
        client.send_msg("admin", awaitable)
    with member.cond:
        assert member.cond.wait_for(lambda: connection_id in member.awaiting_hellos, timeout=30)
    served = member.server.connection(connection_id)
    assert served is not None and served.thread is not None
    client.close()
    served.thread.join(timeout=30)
    assert not served.thread.is_alive()
    assert served.closed and member.server.connection(connection_id) is None
    # The member goes on serving, awaitable hellos included.
    with connect(member) as other:
        again = other.command("admin", {"hello": 1})
        assert again["connectionId"] != connection_id
        reply = other.command("admin", {**awaitable, "maxAwaitTimeMS": 20})
        assert reply["topologyVersion"] == first["topologyVersion"]


def test_killed_member_refuses_and_restart_gets_a_new_process_id(rs: ReplicaSet) -> None:
    member = rs.members[1]
    old_process = member.process_id
    rs.kill(member)
    with pytest.raises(OSError):
        socket.create_connection(member.address, timeout=5).close()
    rs.restart(member)
    with connect(member) as client:
        reply = client.command("admin", {"hello": 1})
    assert reply["topologyVersion"]["processId"] != old_process
    assert reply["topologyVersion"]["counter"] == 0
    assert reply["secondary"] is True
