"""Server sessions and their pool, cluster time, and command-event redaction (pure parts).

Specs: Driver Sessions ("Server Session Pool" and its two algorithms, "Generating a
session ID locally", "Gossipping the cluster time"); Command Logging and Monitoring
("Security").
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any, Optional

from bson import Binary, Int64, Timestamp

from mongocore.api.client_session import ClientSession
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.errors import NetworkError, OperationFailure
from mongocore.io.command_monitoring import is_sensitive, next_operation_id, redacted_failure
from mongocore.io.sessions import (
    ClusterClock,
    ServerSession,
    ServerSessionPool,
    cluster_time_greater,
    newer_cluster_time,
    session_timeout_minutes,
)


def described(minutes: Optional[int]) -> TopologyDescription:
    """A standalone's topology whose logicalSessionTimeoutMinutes is ``minutes``."""
    address = Address("a", 27017)
    sd = ServerDescription(address, ServerType.STANDALONE, logical_session_timeout_minutes=minutes)
    return TopologyDescription(
        TopologyType.SINGLE, {address: sd}, TopologySettings(seeds=(address,))
    )


THIRTY, TEN, UNKNOWN = described(30), described(10), described(None)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_id_is_a_version_4_uuid_in_binary_subtype_4() -> None:
    session = ServerSession()
    value = session.session_id["id"]
    assert isinstance(value, Binary) and value.subtype == 4
    assert uuid.UUID(bytes=bytes(value)).version == 4
    assert set(session.session_id) == {"id"}


def test_transaction_numbers_increase_and_are_int64() -> None:
    session = ServerSession()
    first, second = session.next_txn_number(), session.next_txn_number()
    assert isinstance(first, Int64) and (first, second) == (1, 2)


def test_the_pool_reuses_the_most_recently_released_session_with_its_txn_number() -> None:
    clock = Clock()
    pool = ServerSessionPool(clock)
    a = pool.acquire(THIRTY)
    b = pool.acquire(THIRTY)
    assert a is not b
    a.next_txn_number()
    a.next_txn_number()
    pool.release(b, THIRTY)
    pool.release(a, THIRTY)
    again = pool.acquire(THIRTY)
    assert again is a and again.txn_number == 2  # the front of the deque, txnNumber kept
    assert pool.acquire(THIRTY) is b


def test_a_dirty_session_is_discarded_on_release() -> None:
    pool = ServerSessionPool(Clock())
    session = pool.acquire(THIRTY)
    session.dirty = True
    pool.release(session, THIRTY)
    assert len(pool) == 0
    assert pool.acquire(THIRTY) is not session


def test_sessions_with_less_than_a_minute_left_are_not_used() -> None:
    clock = Clock()
    pool = ServerSessionPool(clock)
    session = pool.acquire(THIRTY)
    pool.release(session, THIRTY)
    clock.now += 29 * 60 - 1  # 61 s left: still usable
    assert pool.acquire(THIRTY) is session
    session.touch()
    pool.release(session, THIRTY)
    clock.now += 29 * 60 + 1  # 59 s left: discarded on acquire
    assert pool.acquire(THIRTY) is not session


def test_sending_a_session_id_records_its_last_use() -> None:
    """Every command that sends the id touches the server session: one acquired 29.5
    minutes ago but last sent 9.5 minutes ago is still used (an lsid sent without
    touching it would leave lastUse at its acquisition, and the pool would drop it)."""
    clock = Clock()
    pool = ServerSessionPool(clock)
    client: Any = SimpleNamespace(
        _session_pool=pool, _topology=SimpleNamespace(_description=THIRTY)
    )
    session = ClientSession(client, implicit=True)
    lsid = session._use_lsid()
    server_session = session._server_session
    assert server_session is not None and lsid is server_session.session_id
    clock.now += 20 * 60
    assert session._use_lsid() is lsid
    session.end_session()
    clock.now += 9 * 60 + 30
    assert pool.acquire(THIRTY) is server_session


def test_a_session_returning_about_to_expire_is_not_pooled() -> None:
    clock = Clock()
    pool = ServerSessionPool(clock)
    session = pool.acquire(THIRTY)
    clock.now += 29 * 60 + 1  # 59 s left when it comes back
    pool.release(session, THIRTY)
    assert len(pool) == 0


def test_with_no_known_timeout_nothing_expires() -> None:
    clock = Clock()
    pool = ServerSessionPool(clock)
    session = pool.acquire(UNKNOWN)
    clock.now += 24 * 3600
    pool.release(session, UNKNOWN)
    assert len(pool) == 1
    clock.now += 24 * 3600
    assert pool.acquire(UNKNOWN) is session


def test_release_drops_expiring_sessions_from_the_back_first() -> None:
    clock = Clock()
    pool = ServerSessionPool(clock)
    back, front, returning = pool.acquire(THIRTY), pool.acquire(THIRTY), pool.acquire(THIRTY)
    pool.release(back, THIRTY)
    clock.now += 20 * 60
    front.touch()
    pool.release(front, THIRTY)  # the deque is now [front, back]
    clock.now += 9 * 60 + 30  # back has 30 s left, front 20.5 min
    returning.touch()
    pool.release(returning, THIRTY)
    assert len(pool) == 2
    assert pool.acquire(THIRTY) is returning
    assert pool.acquire(THIRTY) is front
    assert pool.acquire(THIRTY) not in (back, front, returning)


def test_expiry_uses_the_timeout_in_force() -> None:
    # Ten minutes after its last use a session has no time left of a 10-minute timeout
    # and 20 minutes of a 30-minute one: one minute less than that counts as expired.
    clock = Clock()
    pool = ServerSessionPool(clock)
    session = pool.acquire(THIRTY)
    pool.release(session, THIRTY)
    clock.now += 10 * 60
    assert pool.acquire(THIRTY) is session
    pool.release(session, THIRTY)
    assert pool.acquire(TEN) is not session
    # The pool follows each new description: back to 30 minutes, then 10 again, where
    # 9 minutes of idleness less a second is the most a session may have.
    fresh = pool.acquire(THIRTY)
    pool.release(fresh, THIRTY)
    clock.now += 9 * 60 - 1
    assert pool.acquire(TEN) is fresh
    pool.release(fresh, TEN)
    clock.now += 2
    assert pool.acquire(TEN) is not fresh


def test_in_load_balanced_mode_pooled_sessions_never_expire() -> None:
    address = Address("a", 27017)
    sd = ServerDescription(address, ServerType.LOAD_BALANCER, logical_session_timeout_minutes=30)
    balanced = TopologyDescription(
        TopologyType.LOAD_BALANCED, {address: sd}, TopologySettings(seeds=(address,))
    )
    clock = Clock()
    pool = ServerSessionPool(clock)
    session = pool.acquire(balanced)
    clock.now += 24 * 3600
    pool.release(session, balanced)
    clock.now += 24 * 3600
    assert pool.acquire(balanced) is session


def test_drain_returns_the_pooled_ids_and_sessions_in_use_never_come_back() -> None:
    pool = ServerSessionPool(Clock())
    in_use = pool.acquire(THIRTY)
    pooled = pool.acquire(THIRTY)
    pool.release(pooled, THIRTY)
    assert pool.drain() == [pooled.session_id]
    pool.release(in_use, THIRTY)  # checked out before the drain
    assert len(pool) == 0


def cluster_time(t: int, i: int) -> dict[str, Any]:
    return {"clusterTime": Timestamp(t, i), "signature": {"hash": b"", "keyId": 0}}


def test_cluster_times_compare_by_timestamp_and_increment() -> None:
    assert cluster_time_greater(cluster_time(5, 2), cluster_time(5, 1))
    assert cluster_time_greater(cluster_time(6, 0), cluster_time(5, 9))
    assert not cluster_time_greater(cluster_time(5, 1), cluster_time(5, 1))
    assert cluster_time_greater(cluster_time(1, 1), None)
    assert not cluster_time_greater(None, cluster_time(1, 1))
    assert newer_cluster_time(None, cluster_time(1, 1)) == cluster_time(1, 1)
    assert newer_cluster_time(cluster_time(2, 1), cluster_time(1, 1)) == cluster_time(2, 1)


def test_the_cluster_clock_only_moves_forward() -> None:
    clock = ClusterClock()
    clock.advance(cluster_time(5, 1))
    clock.advance(cluster_time(4, 9))
    clock.advance({"clusterTime": "not a timestamp"})
    clock.advance(None)
    assert clock.value == cluster_time(5, 1)
    clock.advance(cluster_time(5, 2))
    assert clock.value == cluster_time(5, 2)


def test_sensitive_commands_are_recognized() -> None:
    for name in ("saslStart", "saslContinue", "authenticate", "getnonce", "createUser"):
        assert is_sensitive(name, {name: 1})
    for name in ("updateUser", "copydbgetnonce", "copydbsaslstart", "copydb"):
        assert is_sensitive(name, {name: 1})
    assert is_sensitive("hello", {"hello": 1, "speculativeAuthenticate": {}})
    assert is_sensitive("isMaster", {"isMaster": 1, "speculativeAuthenticate": {}})
    assert is_sensitive("ismaster", {"ismaster": 1, "speculativeAuthenticate": {}})
    assert not is_sensitive("hello", {"hello": 1})
    assert not is_sensitive("find", {"find": "c"})


def test_a_redacted_server_failure_keeps_only_code_name_and_labels() -> None:
    error = OperationFailure(
        "auth failed: secret detail",
        18,
        {
            "ok": 0,
            "errmsg": "secret detail",
            "code": 18,
            "codeName": "AuthenticationFailed",
            "errorLabels": ["X"],
            "payload": b"secret",
        },
    )
    redacted = redacted_failure(error)
    assert isinstance(redacted, OperationFailure)
    assert redacted.code == 18
    assert dict(redacted.details) == {
        "code": 18,
        "codeName": "AuthenticationFailed",
        "errorLabels": ["X"],
    }
    assert "secret" not in str(redacted)
    network = NetworkError("reset")
    assert redacted_failure(network) is network


def test_operation_ids_are_unique() -> None:
    ids = {next_operation_id() for _ in range(100)}
    assert len(ids) == 100


def test_the_pool_timeout_is_the_topologys_and_unknown_in_load_balanced_mode() -> None:
    address = Address("a", 27017)
    settings = TopologySettings(seeds=(address,))
    for server_type, topology_type, expected in [
        (ServerType.STANDALONE, TopologyType.SINGLE, 30),
        # "If the driver is in load balancer mode, use this ServerSession": whatever
        # a description says, nothing is known to expire.
        (ServerType.LOAD_BALANCER, TopologyType.LOAD_BALANCED, None),
    ]:
        sd = ServerDescription(address, server_type, logical_session_timeout_minutes=30)
        td = TopologyDescription(topology_type, {address: sd}, settings)
        assert td.logical_session_timeout_minutes == 30
        assert session_timeout_minutes(td) == expected, server_type
