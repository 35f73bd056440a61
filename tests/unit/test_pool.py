"""Unit tests of the CMAP connection pool (mongocore.io.pool).

A fake connection factory stands in for sockets. Where a test needs a connection to be
"being established" for a while, the factory blocks until the test releases it, which
also covers the behaviours the upstream integration tests check with a server fail point
(maxConnecting, interrupting pending connections, minPoolSize errors). Idle times use an
injected clock. Nothing sleeps to synchronize.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Callable, Optional

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mongocore.core.address import Address
from mongocore.core.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    ConnectionPoolListener,
    ConnectionReadyEvent,
    EventPublisher,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
)
from mongocore.errors import (
    ConfigurationError,
    PoolClearedError,
    PoolClosedError,
    WaitQueueTimeoutError,
)
from mongocore.io.pool import Pool
from mongocore.io.pool_base import PoolState
from mongocore.io.pool_options import PoolOptions, pool_options_from_mapping
from tests.fake_connection import FakeConnection

ADDRESS = Address("localhost", 27017)
WAIT = 10.0  # generous bound on any wait; only a broken pool reaches it


Conn = FakeConnection


class Factory:
    """A connect factory. With ``gated=True`` each call blocks until ``release()``."""

    def __init__(self, gated: bool = False, service_ids: Optional[list[object]] = None) -> None:
        self.gated = gated
        self.cond = threading.Condition()
        self.entered = 0
        self.permits = 0
        self.active = 0
        self.max_active = 0
        self.fail_with: Optional[BaseException] = None
        self.service_ids = list(service_ids or [])
        self.made: list[Conn] = []

    def __call__(self, address: Address, generation: int, connection_id: int) -> Conn:
        assert address == ADDRESS
        with self.cond:
            self.entered += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.cond.notify_all()
            if self.gated:
                assert self.cond.wait_for(lambda: self.permits > 0, WAIT), "never released"
                self.permits -= 1
            self.active -= 1
            if self.fail_with is not None:
                raise self.fail_with
            service_id = self.service_ids.pop(0) if self.service_ids else None
            conn = Conn(connection_id, generation, service_id)
            self.made.append(conn)
            return conn

    def wait_entered(self, count: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.entered >= count, WAIT), (
                f"{count} connection attempts expected, {self.entered} seen"
            )

    def release(self, count: int = 1) -> None:
        with self.cond:
            self.permits += count
            self.cond.notify_all()


class Recorder(ConnectionPoolListener):
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.cond = threading.Condition()

    def record(self, event: object) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def of(self, kind: type) -> list[Any]:
        with self.cond:
            return [e for e in self.events if isinstance(e, kind)]

    def kinds(self, *ignore: type) -> list[str]:
        with self.cond:
            return [type(e).__name__ for e in self.events if not isinstance(e, ignore)]

    def wait_for(self, kind: type, count: int = 1) -> None:
        with self.cond:
            ok = self.cond.wait_for(
                lambda: sum(isinstance(e, kind) for e in self.events) >= count, WAIT
            )
            assert ok, f"{count} {kind.__name__} expected; events: {self.kinds()}"


for _method in (
    "pool_created",
    "pool_ready",
    "pool_cleared",
    "pool_closed",
    "connection_created",
    "connection_ready",
    "connection_closed",
    "connection_check_out_started",
    "connection_check_out_failed",
    "connection_checked_out",
    "connection_checked_in",
):
    setattr(Recorder, _method, lambda self, event: self.record(event))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def make_pool(recorder: Recorder) -> Iterator[Callable[..., Pool[Conn]]]:
    pools: list[Pool[Conn]] = []

    def make(factory: Optional[Factory] = None, ready: bool = True, **kwargs: Any) -> Pool[Conn]:
        options = PoolOptions(**kwargs.pop("options", {}))
        kwargs.setdefault("maintenance_interval", None)
        pool = Pool(ADDRESS, factory or Factory(), options, EventPublisher([recorder]), **kwargs)
        pools.append(pool)
        if ready:
            pool.ready()
        return pool

    yield make
    for pool in pools:
        pool.close()


class Checkout(threading.Thread):
    """Check a connection out on another thread; keep the connection or the error."""

    def __init__(self, pool: Pool[Conn], name: str = "checkout", timeout: Optional[float] = None):
        super().__init__(name=f"test-{name}")
        self.pool = pool
        self.timeout = timeout
        self.conn: Optional[Any] = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.conn = self.pool.check_out(self.timeout)
        except BaseException as exc:
            self.error = exc

    def result(self) -> Any:
        self.join(WAIT)
        assert not self.is_alive(), "checkout thread did not finish"
        return self.conn


# --- options ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"max_pool_size": -1},
        {"min_pool_size": -1},
        {"max_pool_size": 2, "min_pool_size": 3},
        {"max_idle_time_ms": -5},
        {"wait_queue_timeout_ms": -1},
        {"max_connecting": 0},
        {"max_pool_size": True},
        {"max_pool_size": 1.5},
    ],
)
def test_invalid_options_are_rejected(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        PoolOptions(**options)


def test_options_defaults_and_spec_names() -> None:
    assert PoolOptions().non_default_options() == {}
    assert PoolOptions(max_pool_size=0, min_pool_size=5).min_pool_size == 5  # 0 = no limit
    options = pool_options_from_mapping({"maxPoolSize": 50, "maxIdleTimeMS": 100})
    assert options.non_default_options() == {"maxPoolSize": 50, "maxIdleTimeMS": 100}
    assert options.max_idle_time == 0.1
    assert PoolOptions(wait_queue_timeout_ms=0).wait_queue_timeout is None
    with pytest.raises(ConfigurationError, match="waitQueueSize"):
        pool_options_from_mapping({"waitQueueSize": 3})
    with pytest.raises(ConfigurationError):
        Pool(ADDRESS, Factory(), maintenance_interval=0)


def test_pool_created_event_carries_options(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    make_pool(ready=False, options={"max_pool_size": 7})
    (event,) = recorder.of(PoolCreatedEvent)
    assert event.address == ADDRESS
    assert event.options == {"maxPoolSize": 7}


# --- check out and check in --------------------------------------------------------


def test_new_pool_is_paused(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    pool = make_pool(ready=False)
    assert pool.state is PoolState.PAUSED
    with pytest.raises(PoolClearedError) as info:
        pool.check_out()
    assert info.value.has_error_label("RetryableWriteError")
    assert info.value.address == ADDRESS
    (failed,) = recorder.of(ConnectionCheckOutFailedEvent)
    assert failed.reason == "connectionError"
    pool.ready()
    assert pool.state.value == "ready"
    assert pool.check_out().id == 1


def test_ids_reuse_and_counts(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    pool = make_pool()
    a, b = pool.check_out(), pool.check_out()
    assert (a.id, b.id) == (1, 2)
    assert (pool.total_connection_count, pool.available_connection_count) == (2, 0)
    pool.check_in(a)
    pool.check_in(b)
    assert pool.available_connection_count == 2
    # The most recently used connection is handed out first, so extras can idle out.
    assert pool.check_out() is b
    assert pool.check_out() is a
    assert pool.check_out().id == 3
    assert [e.connection_id for e in recorder.of(ConnectionCreatedEvent)] == [1, 2, 3]
    ready = recorder.of(ConnectionReadyEvent)
    assert all(e.duration >= 0 for e in ready)


def test_connection_context_manager_checks_in_on_error(
    make_pool: Callable[..., Pool[Conn]],
) -> None:
    pool = make_pool()
    with pytest.raises(RuntimeError), pool.connection() as conn:
        assert pool.available_connection_count == 0
        raise RuntimeError("operation failed")
    assert pool.available_connection_count == 1
    with pool.connection() as again:
        assert again is conn


def test_check_in_foreign_or_twice_raises(make_pool: Callable[..., Pool[Conn]]) -> None:
    pool, other = make_pool(), make_pool()
    conn = pool.check_out()
    with pytest.raises(ValueError, match="not checked out"):
        other.check_in(conn)
    pool.check_in(conn)
    with pytest.raises(ValueError, match="not checked out"):
        pool.check_in(conn)


def test_closed_connection_is_discarded_at_check_in_and_out(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    pool = make_pool()
    a, b = pool.check_out(), pool.check_out()
    a.closed = True  # a network error broke it while in use
    pool.check_in(a)
    pool.check_in(b)
    b.closed = True  # it broke while available
    c = pool.check_out()
    assert c.id == 3
    assert [(e.connection_id, e.reason) for e in recorder.of(ConnectionClosedEvent)] == [
        (1, "error"),
        (2, "error"),
    ]
    assert a.close_reasons == ["error"] and b.close_reasons == ["error"]
    assert pool.total_connection_count == 1


def test_connect_error(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    factory = Factory()
    pool = make_pool(factory)
    boom = OSError("connection refused")
    factory.fail_with = boom
    with pytest.raises(OSError) as info:
        pool.check_out()
    assert info.value is boom
    assert recorder.kinds(PoolCreatedEvent, PoolReadyEvent) == [
        "ConnectionCheckOutStartedEvent",
        "ConnectionCreatedEvent",
        "ConnectionClosedEvent",
        "ConnectionCheckOutFailedEvent",
    ]
    assert recorder.of(ConnectionClosedEvent)[0].reason == "error"
    assert recorder.of(ConnectionCheckOutFailedEvent)[0].reason == "connectionError"
    assert (pool.total_connection_count, pool.pending_connection_count) == (0, 0)
    factory.fail_with = None
    assert pool.check_out().id == 2


def test_closed_pool(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    pool = make_pool()
    kept, returned = pool.check_out(), pool.check_out()
    pool.check_in(returned)
    pool.close()
    assert returned.close_reasons == ["poolClosed"]
    with pytest.raises(PoolClosedError, match="closed connection pool"):
        pool.check_out()
    assert recorder.of(ConnectionCheckOutFailedEvent)[-1].reason == "poolClosed"
    pool.check_in(kept)
    assert kept.close_reasons == ["poolClosed"]
    pool.close()
    pool.ready()
    pool.clear()
    assert pool.state is PoolState.CLOSED
    assert len(recorder.of(PoolClosedEvent)) == 1
    assert len(recorder.of(PoolClearedEvent)) == 0
    assert pool.total_connection_count == 0


# --- waiting -----------------------------------------------------------------------


def test_timeout_argument_and_wait_queue_timeout(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    pool = make_pool(options={"max_pool_size": 1, "wait_queue_timeout_ms": 60_000})
    conn = pool.check_out()
    with pytest.raises(WaitQueueTimeoutError, match="Timed out while checking out") as info:
        pool.check_out(timeout=0)  # the shorter limit wins
    assert info.value.address == ADDRESS
    assert "maxPoolSize: 1" in str(info.value)
    assert recorder.of(ConnectionCheckOutFailedEvent)[-1].reason == "timeout"
    # The timed-out request left the queue: the next one is served.
    pool.check_in(conn)
    assert pool.check_out(timeout=0) is conn

    short = make_pool(options={"max_pool_size": 1, "wait_queue_timeout_ms": 1})
    short.check_out()
    with pytest.raises(WaitQueueTimeoutError):
        short.check_out()


def test_max_connecting_is_enforced(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    factory = Factory(gated=True)
    pool = make_pool(factory)
    threads = [Checkout(pool, f"t{i}") for i in range(3)]
    for t in threads:
        t.start()
    recorder.wait_for(ConnectionCheckOutStartedEvent, 3)
    factory.wait_entered(2)
    assert pool.pending_connection_count == 2
    assert factory.entered == 2  # the third request waits for a slot
    factory.release()
    factory.wait_entered(3)
    factory.release(2)
    conns = [t.result() for t in threads]
    assert sorted(c.id for c in conns) == [1, 2, 3]
    assert factory.max_active == 2


def test_waiting_on_max_connecting_is_limited_by_the_timeout(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    """As pool-checkout-maxConnecting-timeout, without a server."""
    factory = Factory(gated=True)
    pool = make_pool(factory, options={"max_pool_size": 10, "wait_queue_timeout_ms": 50})
    first, second = Checkout(pool, "t1"), Checkout(pool, "t2")
    first.start()
    second.start()
    factory.wait_entered(2)
    with pytest.raises(WaitQueueTimeoutError):
        pool.check_out()
    assert recorder.of(ConnectionCheckOutFailedEvent)[0].reason == "timeout"
    factory.release(2)
    assert first.result() is not None and second.result() is not None


def test_returned_connection_goes_to_a_request_blocked_by_max_connecting(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    """As pool-checkout-returned-connection-maxConnecting, without a server."""
    factory = Factory(gated=True)
    pool = make_pool(factory, options={"max_pool_size": 10})
    factory.release()
    conn0 = pool.check_out()
    threads = [Checkout(pool, f"t{i}") for i in range(3)]
    for t in threads:
        t.start()
    recorder.wait_for(ConnectionCheckOutStartedEvent, 4)
    factory.wait_entered(3)  # conn0's attempt plus two
    pool.check_in(conn0)
    recorder.wait_for(ConnectionCheckedOutEvent, 2)
    checked_out = recorder.of(ConnectionCheckedOutEvent)
    assert [e.connection_id for e in checked_out] == [1, 1]
    factory.release(2)
    assert sorted(t.result().id for t in threads) == [1, 2, 3]


def test_wait_queue_is_fifo(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    pool = make_pool(options={"max_pool_size": 1})
    conn = pool.check_out()
    served: list[str] = []

    def use(name: str) -> None:
        c = pool.check_out()
        served.append(name)
        pool.check_in(c)

    threads = []
    for i in range(5):
        t = threading.Thread(target=use, args=(f"t{i}",), name=f"test-fifo-{i}")
        t.start()
        threads.append(t)
        # Its CheckOutStarted event is queued in the same step as its queue entry.
        recorder.wait_for(ConnectionCheckOutStartedEvent, i + 2)
    pool.check_in(conn)
    for t in threads:
        t.join(WAIT)
        assert not t.is_alive()
    assert served == [f"t{i}" for i in range(5)]


def test_clear_fails_waiting_requests(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    pool = make_pool(options={"max_pool_size": 1})
    conn = pool.check_out()
    threads = [Checkout(pool, f"t{i}") for i in range(3)]
    for t in threads:
        t.start()
    recorder.wait_for(ConnectionCheckOutStartedEvent, 4)
    pool.clear()
    for t in threads:
        t.result()
        assert isinstance(t.error, PoolClearedError)
        assert t.error.has_error_label("RetryableWriteError")
    kinds = recorder.kinds(ConnectionCheckOutStartedEvent)
    assert kinds.index("PoolClearedEvent") < kinds.index("ConnectionCheckOutFailedEvent")
    assert [e.reason for e in recorder.of(ConnectionCheckOutFailedEvent)] == ["connectionError"] * 3
    pool.check_in(conn)
    assert conn.close_reasons == ["stale"]


def test_close_fails_waiting_requests(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    pool = make_pool(options={"max_pool_size": 1})
    pool.check_out()
    waiting = Checkout(pool)
    waiting.start()
    recorder.wait_for(ConnectionCheckOutStartedEvent, 2)
    pool.close()
    waiting.result()
    assert isinstance(waiting.error, PoolClosedError)
    assert recorder.of(ConnectionCheckOutFailedEvent)[0].reason == "poolClosed"


# --- perished connections, clear ---------------------------------------------------


def test_idle_connections_perish(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    clock = Clock()
    pool = make_pool(options={"max_idle_time_ms": 10}, clock=clock)
    conn = pool.check_out()
    pool.check_in(conn)
    clock.now += 0.005
    assert pool.check_out() is conn
    pool.check_in(conn)
    clock.now += 0.011
    fresh = pool.check_out()
    assert fresh.id == 2
    assert conn.close_reasons == ["idle"]
    closed = recorder.of(ConnectionClosedEvent)
    assert [(e.connection_id, e.reason) for e in closed] == [(1, "idle")]


def test_run_maintenance_closes_idle_connections(make_pool: Callable[..., Pool[Conn]]) -> None:
    clock = Clock()
    pool = make_pool(options={"max_idle_time_ms": 1000}, clock=clock)
    a, b = pool.check_out(), pool.check_out()
    pool.check_in(a)
    clock.now += 0.6
    pool.check_in(b)
    clock.now += 0.6
    pool.run_maintenance()
    assert a.close_reasons == ["idle"] and b.close_reasons == []
    assert pool.available_connection_count == 1


def test_clear_closes_available_and_later_checked_in_connections(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    pool = make_pool()
    in_use, available = pool.check_out(), pool.check_out()
    pool.check_in(available)
    pool.clear()
    assert pool.generation == 1
    assert pool.state is PoolState.PAUSED
    assert available.close_reasons == ["stale"]  # eagerly, right after the event
    assert recorder.kinds(PoolCreatedEvent, PoolReadyEvent, ConnectionCheckOutStartedEvent)[
        -2:
    ] == ["PoolClearedEvent", "ConnectionClosedEvent"]
    assert in_use.close_reasons == []
    pool.check_in(in_use)
    assert in_use.close_reasons == ["stale"]
    pool.ready()
    assert pool.check_out().generation == 1


def test_clear_of_a_paused_pool_emits_nothing(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    pool = make_pool(ready=False)
    pool.clear()
    pool.ready()
    pool.ready()
    pool.clear()
    pool.clear()
    assert recorder.kinds(PoolCreatedEvent) == ["PoolReadyEvent", "PoolClearedEvent"]


def test_clear_interrupts_in_use_connections(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    pool = make_pool()
    a, b = pool.check_out(), pool.check_out()
    pool.clear(interrupt_in_use_connections=True)
    (cleared,) = recorder.of(PoolClearedEvent)
    assert cleared.interrupt_in_use_connections is True
    assert a.close_reasons == ["stale"] and b.close_reasons == ["stale"]
    # Closed at once, reported closed when checked in (checkedIn, then closed).
    assert recorder.of(ConnectionClosedEvent) == []
    pool.clear(interrupt_in_use_connections=True)  # not closed twice
    assert a.close_reasons == ["stale"]
    pool.check_in(a)
    assert a.close_reasons == ["stale"]
    returned = (ConnectionCheckedInEvent, ConnectionClosedEvent)
    assert [type(e) for e in recorder.events if isinstance(e, returned)] == list(returned)
    assert recorder.of(ConnectionClosedEvent)[0].reason == "stale"
    assert pool.total_connection_count == 1  # b is still checked out
    with pytest.raises(ValueError):
        pool.check_in(a)
    pool.check_in(b)
    assert b.close_reasons == ["stale"] and pool.total_connection_count == 0
    pool.ready()
    fresh = pool.check_out()
    pool.clear(interrupt_in_use_connections=False)
    assert fresh.close_reasons == []


def test_clear_interrupts_pending_connections(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    """As pool-clear-interrupting-pending-connections, without a server."""
    factory = Factory(gated=True)
    pool = make_pool(factory)
    pending = Checkout(pool)
    pending.start()
    recorder.wait_for(ConnectionCreatedEvent)
    factory.wait_entered(1)
    pool.clear(interrupt_in_use_connections=True)
    factory.release()
    pending.result()
    assert isinstance(pending.error, PoolClearedError)
    assert "interrupted" in str(pending.error)
    assert recorder.kinds(PoolCreatedEvent, PoolReadyEvent) == [
        "ConnectionCheckOutStartedEvent",
        "ConnectionCreatedEvent",
        "PoolClearedEvent",
        "ConnectionClosedEvent",
        "ConnectionCheckOutFailedEvent",
    ]
    assert factory.made[0].close_reasons == ["stale"]
    assert pool.total_connection_count == 0


def test_connection_pending_across_a_plain_clear_is_returned_then_closed(
    make_pool: Callable[..., Pool[Conn]],
) -> None:
    factory = Factory(gated=True)
    pool = make_pool(factory)
    pending = Checkout(pool)
    pending.start()
    factory.wait_entered(1)
    pool.clear()
    factory.release()
    conn = pending.result()
    assert conn.generation == 0 and pool.generation == 1
    pool.check_in(conn)
    assert conn.close_reasons == ["stale"]


def test_close_while_establishing(make_pool: Callable[..., Pool[Conn]]) -> None:
    factory = Factory(gated=True)
    pool = make_pool(factory)
    pending = Checkout(pool)
    pending.start()
    factory.wait_entered(1)
    pool.close()
    factory.release()
    pending.result()
    assert isinstance(pending.error, PoolClosedError)
    assert factory.made[0].close_reasons == ["poolClosed"]


def test_close_interrupting_closes_in_use_connections_now(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    """Catches a client close that leaves in-use connections open until checked in: an
    operation blocked reading a reply from a silent server would never end."""
    pool = make_pool()
    a, b = pool.check_out(), pool.check_out()
    pool.check_in(b)
    pool.close(interrupt_in_use_connections=True)
    assert a.close_reasons == ["poolClosed"] and b.close_reasons == ["poolClosed"]
    assert pool.total_connection_count == 0
    assert len(recorder.of(ConnectionClosedEvent)) == 2
    pool.check_in(a)  # the operation ends: accepted, not closed or reported twice
    assert a.close_reasons == ["poolClosed"]
    assert len(recorder.of(ConnectionClosedEvent)) == 2
    assert len(recorder.of(ConnectionCheckedInEvent)) == 2


def test_close_interrupting_aborts_pending_connections(
    make_pool: Callable[..., Pool[Conn]],
) -> None:
    class CancellableFactory(Factory):
        def __call__(  # type: ignore[override]
            self, address: Address, generation: int, connection_id: int, cancellation: Any
        ) -> Conn:
            return super().__call__(address, generation, connection_id)

    factory = CancellableFactory(gated=True)
    cancelled: list[bool] = []

    class Cancellation:
        def cancel(self) -> None:
            cancelled.append(True)
            factory.release()

    pool = make_pool(factory, cancellation_factory=Cancellation)
    pending = Checkout(pool)
    pending.start()
    factory.wait_entered(1)
    pool.close(interrupt_in_use_connections=True)
    pending.result()
    assert cancelled == [True]
    assert isinstance(pending.error, PoolClosedError)
    assert factory.made[0].close_reasons == ["poolClosed"]


# --- load balancer mode -------------------------------------------------------------


def test_load_balanced_generations(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    factory = Factory(service_ids=["A", "B", "A", "B"])
    pool = make_pool(factory, load_balanced=True, options={"max_pool_size": 3})
    a1, b1, a2 = pool.check_out(), pool.check_out(), pool.check_out()
    pool.check_in(b1)
    pool.check_in(a2)

    pool.clear(service_id="A")
    assert pool.state is PoolState.READY  # a load-balanced pool is never paused
    assert (pool.generation_for("A"), pool.generation_for("B"), pool.generation) == (1, 0, 0)
    (cleared,) = recorder.of(PoolClearedEvent)
    assert cleared.service_id == "A"
    assert a2.close_reasons == ["stale"] and b1.close_reasons == []
    assert pool.check_out() is b1
    b2 = pool.check_out()
    assert (b2.id, b2.service_id, b2.generation) == (4, "B", 0)

    waiting = Checkout(pool)
    waiting.start()
    recorder.wait_for(ConnectionCheckOutStartedEvent, 6)
    pool.clear(service_id="A")
    assert pool.generation_for("A") == 2
    pool.check_in(a1)  # stale: closed, which makes room for the waiting request
    assert a1.close_reasons == ["stale"]
    assert waiting.result().id == 5
    assert waiting.error is None
    # The last connection to A is gone, so A's entry is dropped.
    assert pool.generation_for("A") == 0


def test_load_balanced_interrupt_only_touches_the_service(
    make_pool: Callable[..., Pool[Conn]],
) -> None:
    factory = Factory(service_ids=["A", "B"])
    pool = make_pool(factory, load_balanced=True)
    a, b = pool.check_out(), pool.check_out()
    pool.clear(service_id="A", interrupt_in_use_connections=True)
    assert a.close_reasons == ["stale"] and b.close_reasons == []


# --- minPoolSize and the background thread ------------------------------------------


def test_min_pool_size_by_run_maintenance(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    before = set(threading.enumerate())
    pool = make_pool(ready=False, options={"min_pool_size": 2})
    pool.run_maintenance()  # paused: nothing happens
    assert pool.total_connection_count == 0
    pool.ready()
    assert set(threading.enumerate()) == before  # maintenance_interval=None: no thread
    pool.run_maintenance()
    assert (pool.total_connection_count, pool.available_connection_count) == (2, 2)
    assert recorder.kinds(PoolCreatedEvent) == [
        "PoolReadyEvent",
        "ConnectionCreatedEvent",
        "ConnectionReadyEvent",
        "ConnectionCreatedEvent",
        "ConnectionReadyEvent",
    ]
    pool.run_maintenance()
    assert pool.total_connection_count == 2


def test_populating_respects_max_connecting(make_pool: Callable[..., Pool[Conn]]) -> None:
    factory = Factory(gated=True)
    pool = make_pool(factory, options={"min_pool_size": 3, "max_connecting": 1})
    pending = Checkout(pool)
    pending.start()
    factory.wait_entered(1)
    pool.run_maintenance()  # a Run never waits for maxConnecting: it ends
    assert pool.total_connection_count == 1
    factory.release()
    pending.result()
    factory.release(2)
    pool.run_maintenance()
    assert pool.total_connection_count == 3


def test_populate_error_goes_to_the_handler(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    """As pool-create-min-size-error, without a server: SDAM's handler clears the pool."""
    factory = Factory()
    factory.fail_with = OSError("handshake failed")
    errors: list[BaseException] = []
    pool: Optional[Pool[Conn]] = None

    def handle(exc: BaseException, generation: int) -> None:
        errors.append(exc)
        assert pool is not None
        pool.clear()

    pool = make_pool(factory, options={"min_pool_size": 1}, on_establish_error=handle)
    pool.run_maintenance()
    assert errors == [factory.fail_with]
    assert recorder.kinds(PoolCreatedEvent) == [
        "PoolReadyEvent",
        "ConnectionCreatedEvent",
        "PoolClearedEvent",
        "ConnectionClosedEvent",
    ]
    assert recorder.of(ConnectionClosedEvent)[0].reason == "error"
    assert pool.total_connection_count == 0
    assert pool.state is PoolState.PAUSED


def test_checkout_establishment_error_goes_to_sdam_before_the_close_event(
    make_pool: Callable[..., Pool[Conn]], recorder: Recorder
) -> None:
    """SDAM "MongoDB Handshake errors": the clear comes before ConnectionClosedEvent."""
    factory = Factory()
    factory.fail_with = OSError("handshake failed")
    reported: list[tuple[BaseException, int]] = []
    pool: Optional[Pool[Conn]] = None

    def handle(exc: BaseException, generation: int) -> None:
        reported.append((exc, generation))
        assert pool is not None
        pool.clear()

    pool = make_pool(factory, on_establish_error=handle)
    with pytest.raises(OSError, match="handshake failed"):
        pool.check_out()
    assert reported == [(factory.fail_with, 0)]
    assert recorder.kinds(PoolCreatedEvent) == [
        "PoolReadyEvent",
        "ConnectionCheckOutStartedEvent",
        "ConnectionCreatedEvent",
        "PoolClearedEvent",
        "ConnectionClosedEvent",
        "ConnectionCheckOutFailedEvent",
    ]
    assert pool.total_connection_count == 0


def test_background_thread(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    pool = make_pool(ready=False, options={"min_pool_size": 1}, maintenance_interval=30.0)
    assert not [t for t in threading.enumerate() if t.name.startswith("mongocore-pool")]
    pool.ready()  # starts the thread and asks for a Run at once
    recorder.wait_for(ConnectionReadyEvent)
    names = [t.name for t in threading.enumerate()]
    assert "mongocore-pool-localhost:27017" in names
    assert recorder.kinds(PoolCreatedEvent)[:3] == [
        "PoolReadyEvent",
        "ConnectionCreatedEvent",
        "ConnectionReadyEvent",
    ]
    pool.clear()
    pool.ready()
    recorder.wait_for(ConnectionReadyEvent, 2)
    assert pool.available_connection_count == 1
    pool.close()
    assert "mongocore-pool-localhost:27017" not in [t.name for t in threading.enumerate()]


def test_no_thread_without_min_pool_size_or_max_idle(make_pool: Callable[..., Pool[Conn]]) -> None:
    before = set(threading.enumerate())
    pool = make_pool(maintenance_interval=0.5)
    pool.check_in(pool.check_out())
    assert set(threading.enumerate()) == before


# --- listeners ------------------------------------------------------------------------


def test_listeners_may_call_back_and_may_raise(recorder: Recorder) -> None:
    seen: list[int] = []
    pool_box: list[Pool[Conn]] = []

    class Reentrant(ConnectionPoolListener):
        def connection_checked_out(self, event: ConnectionCheckedOutEvent) -> None:
            seen.append(pool_box[0].generation_for(None))
            seen.append(pool_box[0].available_connection_count)

    class Broken(ConnectionPoolListener):
        def connection_checked_in(self, event: ConnectionCheckedInEvent) -> None:
            raise RuntimeError("listener bug")

    pool = Pool(ADDRESS, Factory(), publisher=EventPublisher([Reentrant(), Broken(), recorder]))
    pool_box.append(pool)
    try:
        pool.ready()
        conn = pool.check_out()
        pool.check_in(conn)
        assert pool.check_out() is conn
        assert seen == [0, 0, 0, 0]
        assert len(recorder.of(ConnectionCheckedInEvent)) == 1
    finally:
        pool.close()


def test_pool_without_listeners() -> None:
    pool = Pool(ADDRESS, Factory(), maintenance_interval=None)
    pool.ready()
    with pool.connection() as conn:
        assert conn.id == 1
    pool.close()


# --- concurrency ----------------------------------------------------------------------


def test_many_threads(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    factory = Factory()
    pool = make_pool(factory, options={"max_pool_size": 4})
    live: list[int] = []
    peak: list[int] = [0]
    guard = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                with pool.connection() as conn:
                    with guard:
                        live.append(conn.id)
                        assert live.count(conn.id) == 1, "a connection was handed out twice"
                        peak[0] = max(peak[0], len(live))
                    with guard:
                        live.remove(conn.id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, name=f"test-worker-{i}") for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 3)
        assert not t.is_alive()
    assert errors == []
    assert peak[0] <= 4
    assert pool.total_connection_count <= 4
    assert len(factory.made) <= 4
    assert len(recorder.of(ConnectionCheckedOutEvent)) == 600
    assert len(recorder.of(ConnectionCheckedInEvent)) == 600


def test_many_threads_with_clears(make_pool: Callable[..., Pool[Conn]], recorder: Recorder) -> None:
    factory = Factory()
    pool = make_pool(factory, options={"max_pool_size": 3})
    outcomes: list[str] = []
    guard = threading.Lock()
    stop = threading.Event()

    def work() -> None:
        for _ in range(40):
            try:
                with pool.connection():
                    pass
                result = "ok"
            except PoolClearedError:
                result = "cleared"
            with guard:
                outcomes.append(result)

    def clearer() -> None:
        while not stop.is_set():
            pool.clear()
            pool.ready()

    threads = [threading.Thread(target=work, name=f"test-worker-{i}") for i in range(8)]
    chaos = threading.Thread(target=clearer, name="test-clearer")
    chaos.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 3)
        assert not t.is_alive()
    stop.set()
    chaos.join(WAIT)
    pool.ready()
    assert len(outcomes) == 320 and set(outcomes) <= {"ok", "cleared"}
    assert pool.pending_connection_count == 0
    assert pool.total_connection_count == pool.available_connection_count <= 3
    # Every connection made is either still available or was closed exactly once.
    closed = {e.connection_id for e in recorder.of(ConnectionClosedEvent)}
    assert len(closed) == len(recorder.of(ConnectionClosedEvent))
    for conn in factory.made:
        assert len(conn.close_reasons) == (1 if conn.id in closed else 0)
    assert len(factory.made) - len(closed) == pool.total_connection_count


# --- a state machine over single-threaded operations ---------------------------------


class PoolMachine(RuleBasedStateMachine):
    """Random sequences of pool operations on one thread keep the pool's books straight."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.factory = Factory()
        self.recorder = Recorder()
        self.pool = Pool(
            ADDRESS,
            self.factory,
            PoolOptions(max_pool_size=3, min_pool_size=1, max_idle_time_ms=50),
            EventPublisher([self.recorder]),
            maintenance_interval=None,
            clock=self.clock,
        )
        self.held: list[Any] = []
        # Held connections an interrupting clear closed: reported closed when checked in.
        self.interrupted: set[int] = set()

    @rule()
    def check_out(self) -> None:
        try:
            self.held.append(self.pool.check_out(timeout=0))
        except WaitQueueTimeoutError:
            assert self.pool.total_connection_count == 3
        except (PoolClearedError, PoolClosedError):
            assert self.pool.state is not PoolState.READY

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def check_in(self, data: st.DataObject) -> None:
        conn = self.held.pop(data.draw(st.integers(0, len(self.held) - 1)))
        if data.draw(st.booleans()):
            conn.closed = True
        self.pool.check_in(conn)

    @rule(interrupt=st.booleans())
    def clear(self, interrupt: bool) -> None:
        if interrupt and self.pool.state is not PoolState.CLOSED:
            self.interrupted.update(c.id for c in self.held)
        self.pool.clear(interrupt_in_use_connections=interrupt)

    @rule()
    def ready(self) -> None:
        self.pool.ready()

    @rule(ms=st.integers(0, 100))
    def time_passes(self, ms: int) -> None:
        self.clock.now += ms / 1000.0

    @rule()
    def maintenance(self) -> None:
        self.pool.run_maintenance()

    @rule(interrupt=st.booleans())
    def close(self, interrupt: bool) -> None:
        self.pool.close(interrupt_in_use_connections=interrupt)

    @invariant()
    def books_balance(self) -> None:
        pool = self.pool
        closed_ids = [e.connection_id for e in self.recorder.of(ConnectionClosedEvent)]
        assert len(closed_ids) == len(set(closed_ids)), "a connection was closed twice"
        assert pool.pending_connection_count == 0
        assert pool.total_connection_count <= 3
        assert pool.total_connection_count == len(self.factory.made) - len(closed_ids)
        in_use = [c for c in self.held if c.id not in closed_ids]
        assert pool.total_connection_count == pool.available_connection_count + len(in_use)
        for conn in self.factory.made:
            closed = conn.id in closed_ids or conn.id in self.interrupted
            assert len(conn.close_reasons) == (1 if closed else 0)
        created = [e.connection_id for e in self.recorder.of(ConnectionCreatedEvent)]
        assert created == list(range(1, len(created) + 1))

    def teardown(self) -> None:
        self.pool.close()


TestPoolMachine = PoolMachine.TestCase
TestPoolMachine.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)


# --- without listeners: the pool's shortcut for the common check-out ---------------


def test_without_listeners_checkout_still_skips_perished_connections() -> None:
    """With no CMAP listener, check-out first tries the connection checked in last in
    one locked step. The broken variant this catches: that shortcut handing out the
    last connection without the perished checks (closed while available, idle past
    maxIdleTimeMS, stale after a clear), or while the pool is paused."""
    clock = Clock()
    factory = Factory()
    pool: Pool[Conn] = Pool(
        ADDRESS,
        factory,
        PoolOptions(max_idle_time_ms=10),
        EventPublisher(),
        maintenance_interval=None,
        clock=clock,
    )
    try:
        pool.ready()
        first = pool.check_out()
        pool.check_in(first)
        assert pool.check_out() is first  # the shortcut: reused at once
        pool.check_in(first)

        first.closed = True  # broke while available
        second = pool.check_out()
        assert second is not first and first.close_reasons == ["error"]
        pool.check_in(second)

        clock.now += 0.011  # idle longer than maxIdleTimeMS
        third = pool.check_out()
        assert third is not second and second.close_reasons == ["idle"]
        pool.check_in(third)

        pool.clear()  # stale, and the pool paused
        with pytest.raises(PoolClearedError):
            pool.check_out()
        pool.ready()
        fourth = pool.check_out()
        assert fourth.generation == 1 and third.close_reasons == ["stale"]
        pool.check_in(fourth)
        assert pool.check_out() is fourth
    finally:
        pool.close()
