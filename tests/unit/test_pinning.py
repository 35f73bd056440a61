"""Connection pinning in load-balanced mode (io/pinning.py): a pinned connection stays
out of the pool until its last holder lets go, and the pool's wait queue timeout
says who holds its connections (Load Balancer spec, "Connection Tracking")."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Optional

import pytest
from bson import ObjectId

from mongocore.core.address import Address
from mongocore.errors import WaitQueueTimeoutError
from mongocore.io.pinning import CURSOR, TRANSACTION, PinnedConnection
from mongocore.io.pool import Pool
from mongocore.io.pool_options import PoolOptions
from tests.fake_connection import FakeConnection

ADDRESS = Address("lb.example.com", 27017)
SERVICE = ObjectId()


@dataclasses.dataclass(eq=False)
class LbConnection(FakeConnection):
    address: Address = ADDRESS


def _connect(address: Address, generation: int, connection_id: int) -> LbConnection:
    return LbConnection(connection_id, generation, service_id=SERVICE)


@pytest.fixture
def pool() -> Iterator[Pool[LbConnection]]:
    created: Pool[LbConnection] = Pool(
        ADDRESS,
        _connect,
        PoolOptions(max_pool_size=1),
        load_balanced=True,
        maintenance_interval=None,
    )
    created.ready()
    yield created
    created.close()


def _pinned(pool: Pool[LbConnection]) -> tuple[PinnedConnection, LbConnection]:
    connection = pool.check_out()
    return PinnedConnection(pool, connection), connection  # type: ignore[arg-type]


def _timeout_message(pool: Pool[LbConnection]) -> str:
    with pytest.raises(WaitQueueTimeoutError) as info:
        pool.check_out(timeout=0)
    return str(info.value)


def test_checked_in_only_when_the_last_holder_releases(pool: Pool[LbConnection]) -> None:
    pinned, connection = _pinned(pool)
    pinned.hold(TRANSACTION)
    pinned.hold(CURSOR)  # a cursor opened in the transaction shares its connection
    pinned.release(CURSOR)
    assert not pinned.checked_in and pool.available_connection_count == 0
    pinned.release(TRANSACTION)
    assert pinned.checked_in and pool.available_connection_count == 1
    assert pool.check_out(timeout=0) is connection


def test_release_is_idempotent_and_a_returned_connection_cannot_be_held(
    pool: Pool[LbConnection],
) -> None:
    pinned, _ = _pinned(pool)
    pinned.hold(CURSOR)
    pinned.release(CURSOR)
    pinned.release(CURSOR)  # nothing held: no second check-in (which would raise)
    pinned.release(TRANSACTION)
    assert pool.available_connection_count == 1
    with pytest.raises(RuntimeError):
        pinned.hold(CURSOR)


def test_a_closed_pinned_connection_is_discarded_when_released(pool: Pool[LbConnection]) -> None:
    pinned, connection = _pinned(pool)
    pinned.hold(CURSOR)
    connection.close("error")  # a network error on a getMore
    pinned.release(CURSOR)
    assert pool.available_connection_count == 0 and pool.total_connection_count == 0


@pytest.mark.parametrize(
    ("kind", "counts"),
    [(CURSOR, (1, 0, 0)), (TRANSACTION, (0, 1, 0)), (None, (0, 0, 1))],
)
def test_wait_queue_timeout_tells_who_holds_the_connections(
    pool: Pool[LbConnection], kind: Optional[str], counts: tuple[int, int, int]
) -> None:
    pinned, _ = _pinned(pool)
    if kind is not None:
        pinned.hold(kind)
    cursors, transactions, others = counts
    assert (
        f"maxPoolSize: 1, connections in use by cursors: {cursors}, connections in use by "
        f"transactions: {transactions}, connections in use by other operations: {others}"
    ) in _timeout_message(pool)
    if kind is not None:
        pinned.release(kind)
        assert "connections in use by cursors: 0, connections in use by transactions: 0" in (
            _timeout_message_after_checkout(pool)
        )


def _timeout_message_after_checkout(pool: Pool[LbConnection]) -> str:
    """The message once the released connection is checked out again by a plain
    operation: no longer counted as a cursor's or a transaction's."""
    connection = pool.check_out(timeout=0)
    try:
        return _timeout_message(pool)
    finally:
        pool.check_in(connection)


def test_outside_load_balanced_mode_the_message_is_unchanged() -> None:
    plain: Pool[LbConnection] = Pool(
        ADDRESS, _connect, PoolOptions(max_pool_size=1), maintenance_interval=None
    )
    plain.ready()
    try:
        connection = plain.check_out()
        message = _timeout_message(plain)
        assert "maxPoolSize: 1, in use: 1" in message and "by cursors" not in message
        plain.check_in(connection)
    finally:
        plain.close()
