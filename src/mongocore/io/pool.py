"""The connection pool of Connection Monitoring and Pooling (CMAP).

Spec: connection-monitoring-and-pooling.md, sections "Connection Pool Options",
"Connection Pool Members" (Connection, WaitQueue, Connection Pool), "Connection Pool
Behaviors", "Load Balancer Mode", "Optional Behaviors" (Background Thread,
withConnection) and "Connection Pool Monitoring" (events).

The pool never opens sockets itself: it is given a ``connect`` factory that creates and
establishes one connection (TCP, TLS, handshake, authentication) and returns an object
that satisfies :class:`PoolConnection`. The real socket connection is one such object; the
spec tests use a fake one.

Locking
-------
One lock guards all pool state; every thread that must wait (the WaitQueue, the
background thread) waits on a condition bound to that lock, so there is no polling and
no sleeping. The lock is never held while the ``connect`` factory runs, while a
connection is closed, or while a listener runs.

Event order
-----------
Events are built while the lock is held, at the moment the state they describe changes,
and appended to an ordered queue. After releasing the lock, the thread delivers the
queue under a separate (re-entrant) delivery lock. So listeners see events in exactly
the order of the pool's state changes, even across threads (a PoolReadyEvent always
precedes the background thread's ConnectionCreatedEvent; a ConnectionCheckOutStarted
event is queued in the same step as the WaitQueue entry, so event order is queue order),
and a pool call returns only after its own events were delivered. The price: when
several threads use the pool at once, a listener may be called on another thread of the
same pool that is delivering queued events. Listeners may call back into the pool; they
should not block.

WaitQueue
---------
Strictly FIFO: only the request at the head of the queue may take an available
connection or start creating one; it alone is woken when that may have become
possible. Clearing the pool (not in load-balanced mode) or closing it fails every
queued request at once.

Background thread
-----------------
When minPoolSize or maxIdleTimeMS is set, ``ready()`` starts one daemon thread named
``mongocore-pool-<address>`` that runs :meth:`Pool.run_maintenance` every
``maintenance_interval`` seconds and at once when the pool becomes ready; ``close()``
stops and joins it. With ``maintenance_interval=None`` there is no thread and the owner
calls ``run_maintenance()`` itself. Stale available connections are closed eagerly by
``clear()`` itself (the spec's "immediate scheduling of the next background thread
iteration after a clear"), so a pool needs no thread to shed them.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Callable, Generic, NamedTuple, Optional, Protocol, TypeVar, Union

from mongocore.core.address import Address
from mongocore.core.deferred_dataclass import dataclass
from mongocore.core.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    ConnectionReadyEvent,
    EventPublisher,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
)
from mongocore.errors import (
    ConfigurationError,
    ConnectionFailure,
    PoolClearedError,
    PoolClosedError,
    WaitQueueTimeoutError,
)

__all__ = [
    "DEFAULT_MAINTENANCE_INTERVAL",
    "DEFAULT_MAX_CONNECTING",
    "DEFAULT_MAX_POOL_SIZE",
    "CheckOutFailedReason",
    "ConnectionClosedReason",
    "ConnectionFactory",
    "Pool",
    "PoolConnection",
    "PoolOptions",
    "PoolState",
    "interrupted_error",
    "pool_options_from_mapping",
]

_log = logging.getLogger("mongocore.pool")

DEFAULT_MAX_POOL_SIZE = 100
DEFAULT_MAX_CONNECTING = 2
#: Seconds between two runs of the background thread (minPoolSize, maxIdleTimeMS).
DEFAULT_MAINTENANCE_INTERVAL = 1.0


class ConnectionClosedReason:
    """The ``reason`` values of ConnectionClosedEvent."""

    STALE = "stale"
    IDLE = "idle"
    ERROR = "error"
    POOL_CLOSED = "poolClosed"


class CheckOutFailedReason:
    """The ``reason`` values of ConnectionCheckOutFailedEvent."""

    POOL_CLOSED = "poolClosed"
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connectionError"


class PoolState(enum.Enum):
    """The pool's ``state``: it starts paused, ``ready()`` and ``clear()`` move it between
    paused and ready, and closed is final."""

    PAUSED = "paused"
    READY = "ready"
    CLOSED = "closed"


# --- options ---------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class PoolOptions:
    """ConnectionPoolOptions, named as the spec names them (in snake case).

    ``max_idle_time_ms`` and ``wait_queue_timeout_ms``: None or 0 means no limit.
    """

    max_pool_size: int = DEFAULT_MAX_POOL_SIZE
    min_pool_size: int = 0
    max_idle_time_ms: Optional[float] = None
    wait_queue_timeout_ms: Optional[float] = None
    max_connecting: int = DEFAULT_MAX_CONNECTING

    def __post_init__(self) -> None:
        if not _is_int(self.max_pool_size) or self.max_pool_size < 0:
            raise ConfigurationError(
                f"maxPoolSize must be an integer >= 0 (0 means no limit), "
                f"not {self.max_pool_size!r}"
            )
        if not _is_int(self.min_pool_size) or self.min_pool_size < 0:
            raise ConfigurationError(
                f"minPoolSize must be an integer >= 0, not {self.min_pool_size!r}"
            )
        if self.max_pool_size and self.min_pool_size > self.max_pool_size:
            raise ConfigurationError(
                f"minPoolSize ({self.min_pool_size}) must not exceed maxPoolSize "
                f"({self.max_pool_size}): lower minPoolSize or raise maxPoolSize"
            )
        for name, value in (
            ("maxIdleTimeMS", self.max_idle_time_ms),
            ("waitQueueTimeoutMS", self.wait_queue_timeout_ms),
        ):
            if value is not None and (not _is_number(value) or value < 0):
                raise ConfigurationError(
                    f"{name} must be a number >= 0 (0 means no limit), not {value!r}"
                )
        if not _is_int(self.max_connecting) or self.max_connecting < 1:
            raise ConfigurationError(
                f"maxConnecting must be an integer > 0, not {self.max_connecting!r}"
            )

    @property
    def max_idle_time(self) -> Optional[float]:
        """maxIdleTimeMS in seconds, or None for no limit."""
        return self.max_idle_time_ms / 1000.0 if self.max_idle_time_ms else None

    @property
    def wait_queue_timeout(self) -> Optional[float]:
        """waitQueueTimeoutMS in seconds, or None for no limit."""
        return self.wait_queue_timeout_ms / 1000.0 if self.wait_queue_timeout_ms else None

    def non_default_options(self) -> dict[str, Any]:
        """The options that differ from the defaults, by their spec names (PoolCreatedEvent)."""
        defaults = _default_options()
        names = (
            ("maxPoolSize", "max_pool_size"),
            ("minPoolSize", "min_pool_size"),
            ("maxIdleTimeMS", "max_idle_time_ms"),
            ("waitQueueTimeoutMS", "wait_queue_timeout_ms"),
            ("maxConnecting", "max_connecting"),
        )
        return {
            spec_name: getattr(self, attr)
            for spec_name, attr in names
            if getattr(self, attr) != getattr(defaults, attr)
        }


_DEFAULT_OPTIONS: list[PoolOptions] = []


def _default_options() -> PoolOptions:
    # Built on first use: PoolOptions is a deferred dataclass, completed by its first
    # instance (mongocore.core.deferred_dataclass), which importing must not make.
    if not _DEFAULT_OPTIONS:
        _DEFAULT_OPTIONS.append(PoolOptions())
    return _DEFAULT_OPTIONS[0]


# --- what the pool needs from a connection ----------------------------------------


class PoolConnection(Protocol):
    """What the pool needs from a connection ("Connection" in the spec).

    ``generation`` is written by the pool in load-balanced mode, once the handshake told
    the connection its ``service_id``; ``last_checkin_time`` is written by the pool each
    time the connection becomes available (in the pool's clock, ``time.monotonic`` by
    default). ``closed`` is read while the pool lock is held: it must be a cheap flag,
    true once the connection failed or was closed. ``close(reason)`` is called without the
    pool lock, at most once by the pool, with a ConnectionClosedReason; with
    interruptInUseConnections it may be called from another thread while the connection
    is in use, and must then make that thread's I/O fail promptly (see
    :func:`interrupted_error`).
    """

    @property
    def id(self) -> int: ...

    generation: int
    last_checkin_time: float

    @property
    def service_id(self) -> Optional[object]: ...

    @property
    def closed(self) -> bool: ...

    def close(self, reason: str) -> None: ...


C = TypeVar("C", bound=PoolConnection)
C_co = TypeVar("C_co", bound=PoolConnection, covariant=True)


class ConnectionFactory(Protocol[C_co]):
    """Create and establish one connection; raise on failure.

    Called without the pool lock, between ConnectionCreatedEvent and ConnectionReadyEvent.
    The returned connection has the given ``connection_id`` and ``generation``.
    """

    def __call__(self, address: Address, generation: int, connection_id: int) -> C_co: ...


def interrupted_error(address: Address) -> PoolClearedError:
    """The error for an operation whose connection a clear with interruptInUseConnections
    closed (the spec's suggested message)."""
    return PoolClearedError(
        f"Connection to {address} interrupted due to server monitor timeout", address
    )


# --- internals ---------------------------------------------------------------------


class Cancellable(Protocol):
    """What the pool needs to abort a connection being established."""

    def cancel(self) -> None: ...


class _Pending(NamedTuple):
    """A connection the pool counts as pending: created, not yet established."""

    connection_id: int
    generation: int
    created: float


class _Waiter:
    """One checkOut request in the WaitQueue."""

    __slots__ = ("cond", "failure")

    def __init__(self) -> None:
        # Created on first wait: most requests never wait.
        self.cond: Optional[threading.Condition] = None
        # Set (with the queue entry removed) when a clear or close fails the request.
        self.failure: Optional[tuple[str, ConnectionFailure]] = None


_Closing = list[tuple[C, str]]


class Pool(Generic[C]):
    """A thread-safe, blocking CMAP connection pool for one server.

    ``connect`` creates and establishes connections (see :class:`ConnectionFactory`);
    the pool is generic in their type, so ``check_out`` returns what ``connect`` makes.
    ``load_balanced`` switches on per-serviceId generations ("Load Balancer Mode").
    ``on_establish_error`` receives each error of connection establishment, for a
    checkOut or for minPoolSize, with the failed connection's generation: the spec
    hands these to SDAM's error handling, whose pool clear must precede the failed
    connection's ConnectionClosedEvent. Without it, background errors are logged.
    ``clock`` is the monotonic clock used for idle times (maxIdleTimeMS).
    """

    def __init__(
        self,
        address: Address,
        connect: ConnectionFactory[C],
        options: Optional[PoolOptions] = None,
        publisher: Optional[EventPublisher] = None,
        *,
        load_balanced: bool = False,
        maintenance_interval: Optional[float] = DEFAULT_MAINTENANCE_INTERVAL,
        on_establish_error: Optional[Callable[[BaseException, int], None]] = None,
        clock: Callable[[], float] = time.monotonic,
        cancellation_factory: Optional[Callable[[], Cancellable]] = None,
    ) -> None:
        if maintenance_interval is not None and not maintenance_interval > 0:
            raise ConfigurationError(
                f"maintenance_interval must be a positive number of seconds or None, "
                f"not {maintenance_interval!r}"
            )
        self._address = address
        self._connect = connect
        self._options = options if options is not None else _default_options()
        self._publisher = publisher if publisher is not None else EventPublisher()
        self._listeners = self._publisher.pool_listeners
        self._cmap = bool(self._listeners)
        self._load_balanced = load_balanced
        self._maintenance_interval = maintenance_interval
        self._on_establish_error = on_establish_error
        self._clock = clock
        # With a cancellation factory, ``connect`` is called with ``cancellation=``, and a
        # clear with interruptInUseConnections aborts connections still being established.
        self._cancellation_factory = cancellation_factory
        self._establishing: dict[int, tuple[int, Cancellable]] = {}
        opts = self._options
        self._max_pool_size = opts.max_pool_size
        self._max_connecting = opts.max_connecting
        self._max_idle_time = opts.max_idle_time

        self._lock = threading.Lock()
        self._maintenance_cond = threading.Condition(self._lock)
        self._state = PoolState.PAUSED
        self._generation = 0
        # Load Balancer Mode: serviceId -> [generation, connection count].
        self._service_generations: dict[object, list[int]] = {}
        # The newest generation an interrupting clear covered (not load balanced).
        self._interrupted_generation = -1
        self._next_id = 1
        self._available: list[C] = []  # a stack: most recently used on top
        self._in_use: dict[int, C] = {}
        self._interrupted: dict[int, C] = {}  # closed by the pool while in use
        # Load Balancer Mode: in-use connections pinned to cursors and transactions
        # (io/pinning.py), which the WaitQueueTimeoutError message counts apart.
        self._pinned: dict[str, int] = {"cursor": 0, "transaction": 0}
        self._total = 0
        self._pending = 0
        self._waiters: deque[_Waiter] = deque()
        self._maintenance_requested = False
        self._thread: Optional[threading.Thread] = None

        self._events: deque[tuple[str, object]] = deque()
        self._delivery_lock = threading.RLock()

        if self._cmap:
            self._events.append(
                ("pool_created", PoolCreatedEvent(address, opts.non_default_options()))
            )
        self._flush()

    # --- introspection -----------------------------------------------------------

    @property
    def address(self) -> Address:
        return self._address

    @property
    def options(self) -> PoolOptions:
        return self._options

    @property
    def load_balanced(self) -> bool:
        return self._load_balanced

    @property
    def state(self) -> PoolState:
        return self._state

    @property
    def generation(self) -> int:
        """The pool's generation (the one that matters when not load balanced)."""
        return self._generation

    def generation_for(self, service_id: Optional[object]) -> int:
        """The generation connections to ``service_id`` must have to be fresh."""
        with self._lock:
            return self._generation_for_locked(service_id)

    @property
    def total_connection_count(self) -> int:
        """Pending, available and in-use connections."""
        return self._total

    @property
    def available_connection_count(self) -> int:
        return len(self._available)

    @property
    def pending_connection_count(self) -> int:
        return self._pending

    def __repr__(self) -> str:
        return (
            f"Pool({self._address}, state={self._state.value}, generation={self._generation}, "
            f"total={self._total}, available={len(self._available)}, pending={self._pending})"
        )

    # --- checkOut ----------------------------------------------------------------

    def check_out(self, timeout: Optional[float] = None) -> C:
        """Check out a connection ("Checking Out a Connection").

        Waits at most the shorter of waitQueueTimeoutMS and ``timeout`` seconds (the
        caller's remaining operation time) for its turn, then raises
        WaitQueueTimeoutError. Raises PoolClosedError if the pool is closed,
        PoolClearedError if it is paused or is cleared while this request waits, and
        whatever the ``connect`` factory raised if establishing a new connection failed.
        """
        started = time.monotonic()
        deadline = self._deadline(started, timeout)
        to_close: _Closing[C] = []
        result: Union[C, _Pending, None] = None
        waiter: Optional[_Waiter] = None
        try:
            with self._lock:
                if self._cmap:
                    self._events.append(
                        (
                            "connection_check_out_started",
                            ConnectionCheckOutStartedEvent(self._address),
                        )
                    )
                self._refuse_if_unusable_locked(started)
                if not self._waiters:
                    result = self._try_acquire_locked(started, to_close)
                if result is None:
                    waiter = _Waiter()
                    self._waiters.append(waiter)
        finally:
            if to_close or self._cmap:  # else _finish has nothing to do
                self._finish(to_close)
        while result is None:
            assert waiter is not None
            to_close = []
            try:
                with self._lock:
                    try:
                        result = self._serve_locked(waiter, started, deadline, to_close)
                    except BaseException:
                        # E.g. KeyboardInterrupt while waiting: never leave a dead entry
                        # at the head of the queue.
                        if waiter in self._waiters:
                            self._leave_queue_locked(waiter)
                        raise
            finally:
                self._finish(to_close)
        if isinstance(result, _Pending):
            return self._establish(result, started)
        return result

    @contextmanager
    def connection(self, timeout: Optional[float] = None) -> Iterator[C]:
        """Check a connection out for the ``with`` block and always check it back in
        ("withConnection")."""
        conn = self.check_out(timeout)
        try:
            yield conn
        finally:
            self.check_in(conn)

    def _deadline(self, started: float, timeout: Optional[float]) -> Optional[float]:
        limit = self._options.wait_queue_timeout
        if timeout is not None and (limit is None or timeout < limit):
            limit = timeout
        return None if limit is None else started + limit

    def _refuse_if_unusable_locked(self, started: float) -> None:
        """A closed or paused pool fails a checkOut at once."""
        if self._state is PoolState.CLOSED:
            self._emit_check_out_failed_locked(CheckOutFailedReason.POOL_CLOSED, started)
            raise self._closed_error()
        if self._state is PoolState.PAUSED:
            error = PoolClearedError(
                f"Connection pool for {self._address} is paused: it was cleared after an "
                "error, or no server check has succeeded yet; the operation may be retried",
                self._address,
            )
            self._emit_check_out_failed_locked(
                CheckOutFailedReason.CONNECTION_ERROR, started, error
            )
            raise error

    def _closed_error(self) -> PoolClosedError:
        return PoolClosedError(
            f"Attempted to check out a connection from closed connection pool "
            f"{self._address}; the server was removed or the client closed",
            address=self._address,
        )

    def _try_acquire_locked(
        self, started: float, to_close: _Closing[C]
    ) -> Union[C, _Pending, None]:
        """The body of the spec's checkOut loop, for the request at the head of the queue:
        an available non-perished connection, else a new pending one if maxPoolSize and
        maxConnecting allow, else None (wait). Perished connections met on the way are
        closed (added to ``to_close``)."""
        available = self._available
        if available:
            now = self._clock()
            while available:
                conn = available.pop()
                reason = self._perished_reason_locked(conn, now)
                if reason is None:
                    self._in_use[conn.id] = conn
                    if self._cmap:
                        self._events.append(
                            (
                                "connection_checked_out",
                                ConnectionCheckedOutEvent(
                                    self._address, conn.id, time.monotonic() - started
                                ),
                            )
                        )
                    return conn
                self._discard_locked(conn, reason, to_close)
        if (
            self._max_pool_size == 0 or self._total < self._max_pool_size
        ) and self._pending < self._max_connecting:
            return self._new_pending_locked()
        return None

    def _serve_locked(
        self,
        waiter: _Waiter,
        started: float,
        deadline: Optional[float],
        to_close: _Closing[C],
    ) -> Union[C, _Pending, None]:
        """Wait in the queue until this request is served, fails or times out. Returns
        None when perished connections must be closed (outside the lock) first."""
        while True:
            if waiter.failure is not None:
                reason, error = waiter.failure
                self._emit_check_out_failed_locked(reason, started, error)
                raise error
            if self._waiters[0] is waiter:
                result = self._try_acquire_locked(started, to_close)
                if result is not None:
                    self._waiters.popleft()
                    self._notify_head_locked()
                    return result
                if to_close:
                    return None
            remaining: Optional[float] = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._leave_queue_locked(waiter)
                    self._emit_check_out_failed_locked(CheckOutFailedReason.TIMEOUT, started)
                    raise self._timeout_error(started)
            if waiter.cond is None:
                waiter.cond = threading.Condition(self._lock)
            waiter.cond.wait(remaining)

    def note_pinned(self, kind: str, delta: int) -> None:
        """A checked-out connection was pinned to (+1) or unpinned from (-1) a cursor or
        a transaction (load-balanced mode; see io/pinning.py)."""
        with self._lock:
            self._pinned[kind] = self._pinned.get(kind, 0) + delta

    def _timeout_error(self, started: float) -> WaitQueueTimeoutError:
        waited_ms = (time.monotonic() - started) * 1000.0
        limit = "no limit" if self._max_pool_size == 0 else str(self._max_pool_size)
        in_use = f"in use: {len(self._in_use)}"
        if self._load_balanced:
            # Load Balancer spec, "Connection Pool Management": who holds them.
            cursors, transactions = self._pinned["cursor"], self._pinned["transaction"]
            others = max(0, len(self._in_use) - cursors - transactions)
            in_use = (
                f"connections in use by cursors: {cursors}, connections in use by "
                f"transactions: {transactions}, connections in use by other operations: "
                f"{others}"
            )
        return WaitQueueTimeoutError(
            f"Timed out while checking out a connection from connection pool {self._address} "
            f"after {waited_ms:.0f} ms (maxPoolSize: {limit}, {in_use}, "
            f"being established: {self._pending}, requests waiting: {len(self._waiters)}, "
            f"maxConnecting: {self._max_connecting}); raise maxPoolSize or "
            "waitQueueTimeoutMS, or run fewer operations at once",
            address=self._address,
        )

    def _leave_queue_locked(self, waiter: _Waiter) -> None:
        was_head = self._waiters[0] is waiter
        self._waiters.remove(waiter)
        if was_head:
            self._notify_head_locked()

    def _notify_head_locked(self) -> None:
        """Wake the request at the head of the queue: it may be able to proceed now.
        (A head that has not waited yet re-checks before it waits.)"""
        if self._waiters:
            cond = self._waiters[0].cond
            if cond is not None:
                cond.notify()

    def _new_pending_locked(self) -> _Pending:
        """Count a new connection as pending and emit ConnectionCreatedEvent ("Creating a
        Connection")."""
        connection_id = self._next_id
        self._next_id += 1
        self._total += 1
        self._pending += 1
        if self._cmap:
            self._events.append(
                ("connection_created", ConnectionCreatedEvent(self._address, connection_id))
            )
        return _Pending(connection_id, self._generation, time.monotonic())

    def _connect_pending(self, pending: _Pending) -> C:
        """Call the factory for a pending connection, interruptible if the pool can."""
        factory = self._cancellation_factory
        if factory is None:
            return self._connect(self._address, pending.generation, pending.connection_id)
        cancellation = factory()
        with self._lock:
            self._establishing[pending.connection_id] = (pending.generation, cancellation)
        try:
            connect: Any = self._connect
            conn: C = connect(
                self._address,
                pending.generation,
                pending.connection_id,
                cancellation=cancellation,
            )
            return conn
        finally:
            with self._lock:
                self._establishing.pop(pending.connection_id, None)

    def _establish(self, pending: _Pending, started: float) -> C:
        """Establish a new connection for a checkOut, outside the lock ("Establishing a
        Connection")."""
        to_close: _Closing[C] = []
        try:
            conn = self._connect_pending(pending)
        except BaseException as exc:
            with self._lock:
                interrupted = (
                    not self._load_balanced and pending.generation <= self._interrupted_generation
                )
            try:
                if not interrupted and isinstance(exc, Exception):
                    # SDAM first: its pool clear precedes the ConnectionClosedEvent.
                    self._report_establish_error(exc, pending.generation)
            finally:
                with self._lock:
                    self._abandon_pending_locked(pending.connection_id, exc)
                    self._emit_check_out_failed_locked(
                        CheckOutFailedReason.CONNECTION_ERROR, started, exc
                    )
                self._flush()
            if interrupted and isinstance(exc, Exception):
                # Aborted by a clear with interruptInUseConnections.
                raise interrupted_error(self._address) from exc
            raise
        error: Optional[ConnectionFailure] = None
        try:
            with self._lock:
                self._pending -= 1
                if self._load_balanced:
                    self._adopt_service_locked(conn)
                if self._state is PoolState.CLOSED:
                    self._discard_locked(conn, ConnectionClosedReason.POOL_CLOSED, to_close)
                    self._emit_check_out_failed_locked(CheckOutFailedReason.POOL_CLOSED, started)
                    error = self._closed_error()
                elif not self._load_balanced and conn.generation <= self._interrupted_generation:
                    # A clear with interruptInUseConnections happened while it was pending.
                    self._discard_locked(conn, ConnectionClosedReason.STALE, to_close)
                    error = interrupted_error(self._address)
                    self._emit_check_out_failed_locked(
                        CheckOutFailedReason.CONNECTION_ERROR, started, error
                    )
                else:
                    self._in_use[conn.id] = conn
                    if self._cmap:
                        now = time.monotonic()
                        self._events.append(
                            (
                                "connection_ready",
                                ConnectionReadyEvent(self._address, conn.id, now - pending.created),
                            )
                        )
                        self._events.append(
                            (
                                "connection_checked_out",
                                ConnectionCheckedOutEvent(self._address, conn.id, now - started),
                            )
                        )
                self._notify_head_locked()
        finally:
            self._finish(to_close)
        if error is not None:
            raise error
        return conn

    def _abandon_pending_locked(
        self, connection_id: int, error: Optional[BaseException] = None
    ) -> None:
        """Establishing failed (with ``error``): the pending connection is closed
        (reason "error")."""
        self._pending -= 1
        self._total -= 1
        if self._cmap:
            self._events.append(
                (
                    "connection_closed",
                    ConnectionClosedEvent(
                        self._address, connection_id, ConnectionClosedReason.ERROR, error
                    ),
                )
            )
        self._notify_head_locked()

    def _emit_check_out_failed_locked(
        self, reason: str, started: float, error: Optional[BaseException] = None
    ) -> None:
        if self._cmap:
            if reason != CheckOutFailedReason.CONNECTION_ERROR:
                error = None  # the event carries the error of a connectionError only
            self._events.append(
                (
                    "connection_check_out_failed",
                    ConnectionCheckOutFailedEvent(
                        self._address, reason, time.monotonic() - started, error
                    ),
                )
            )

    # --- checkIn -----------------------------------------------------------------

    def check_in(self, conn: C) -> None:
        """Return a connection ("Checking In a Connection"): it becomes available, or is
        closed if it is perished or the pool is closed. Raises ValueError for a connection
        this pool did not check out."""
        to_close: _Closing[C] = []
        try:
            with self._lock:
                conn_id = conn.id
                if self._in_use.get(conn_id) is not conn:
                    if self._interrupted.get(conn_id) is conn:
                        # Already closed (and reported) by an interrupting clear.
                        del self._interrupted[conn_id]
                        self._emit_checked_in_locked(conn_id)
                        return
                    raise ValueError(
                        f"connection {conn_id} was not checked out of the pool for "
                        f"{self._address} (checked in twice, or to the wrong pool)"
                    )
                del self._in_use[conn_id]
                if self._cmap:
                    self._emit_checked_in_locked(conn_id)
                if self._state is PoolState.CLOSED:
                    reason: Optional[str] = ConnectionClosedReason.POOL_CLOSED
                elif conn.closed:
                    reason = ConnectionClosedReason.ERROR
                elif conn.generation != self._generation_for_locked(conn.service_id):
                    reason = ConnectionClosedReason.STALE
                else:
                    reason = None
                if reason is None:
                    conn.last_checkin_time = self._clock()
                    self._available.append(conn)
                else:
                    self._discard_locked(conn, reason, to_close)
                if self._waiters:
                    self._notify_head_locked()
        finally:
            if to_close or self._cmap:  # as in check_out
                self._finish(to_close)

    def _emit_checked_in_locked(self, connection_id: int) -> None:
        if self._cmap:
            self._events.append(
                ("connection_checked_in", ConnectionCheckedInEvent(self._address, connection_id))
            )

    # --- ready, clear, close -------------------------------------------------------

    def ready(self) -> None:
        """Mark a paused pool "ready" (SDAM does after each successful check); no effect
        on a ready or closed pool."""
        try:
            with self._lock:
                if self._state is not PoolState.PAUSED:
                    return
                self._state = PoolState.READY
                if self._cmap:
                    self._events.append(("pool_ready", PoolReadyEvent(self._address)))
                opts = self._options
                if self._maintenance_interval is not None and (
                    opts.min_pool_size > 0 or self._max_idle_time is not None
                ):
                    if self._thread is None:
                        self._thread = threading.Thread(
                            target=self._maintenance_loop,
                            name=f"mongocore-pool-{self._address}",
                            daemon=True,
                        )
                        # Started under the lock, so close() never sees an unstarted thread.
                        self._thread.start()
                    self._maintenance_requested = True
                    self._maintenance_cond.notify()
        finally:
            self._flush()

    def clear(
        self,
        service_id: Optional[object] = None,
        interrupt_in_use_connections: bool = False,
    ) -> None:
        """Clear the pool ("Clearing a Connection Pool").

        Not load balanced: increment the generation, pause the pool, fail every queued
        checkOut with PoolClearedError, emit PoolClearedEvent unless already paused.
        Load balanced: increment only ``service_id``'s generation and emit the event; the
        pool stays ready and the queue is kept. Either way, available connections made
        stale are closed now, and with ``interrupt_in_use_connections`` so are in-use
        ones of the cleared generations; pending ones are aborted (when the pool has a
        cancellation factory) or closed once established.
        """
        to_close: _Closing[C] = []
        to_cancel: list[Cancellable] = []
        try:
            with self._lock:
                if self._state is PoolState.CLOSED:
                    return
                if self._load_balanced:
                    entry = self._service_generations.setdefault(service_id, [0, 0])
                    stale_through = entry[0]
                    entry[0] += 1
                    if self._cmap:
                        self._events.append(
                            (
                                "pool_cleared",
                                PoolClearedEvent(
                                    self._address, service_id, interrupt_in_use_connections
                                ),
                            )
                        )
                else:
                    stale_through = self._generation
                    self._generation += 1
                    was_paused = self._state is PoolState.PAUSED
                    self._state = PoolState.PAUSED
                    if interrupt_in_use_connections:
                        self._interrupted_generation = stale_through
                    if not was_paused and self._cmap:
                        self._events.append(
                            (
                                "pool_cleared",
                                PoolClearedEvent(self._address, None, interrupt_in_use_connections),
                            )
                        )
                    self._fail_waiters_locked(
                        CheckOutFailedReason.CONNECTION_ERROR,
                        lambda: PoolClearedError(
                            f"Connection pool for {self._address} was cleared while this "
                            "operation waited for a connection; the operation may be retried",
                            self._address,
                        ),
                    )
                keep: list[C] = []
                for conn in self._available:
                    if conn.generation != self._generation_for_locked(conn.service_id):
                        self._discard_locked(conn, ConnectionClosedReason.STALE, to_close)
                    else:
                        keep.append(conn)
                self._available = keep
                if interrupt_in_use_connections:
                    if not self._load_balanced:
                        to_cancel = [
                            c for g, c in self._establishing.values() if g <= stale_through
                        ]
                    for conn in list(self._in_use.values()):
                        if conn.generation <= stale_through and (
                            not self._load_balanced or conn.service_id == service_id
                        ):
                            del self._in_use[conn.id]
                            self._interrupted[conn.id] = conn
                            self._discard_locked(conn, ConnectionClosedReason.STALE, to_close)
                self._notify_head_locked()
        finally:
            self._finish(to_close)
        for cancellation in to_cancel:
            cancellation.cancel()  # outside the lock: it shuts a socket down

    def close(self, interrupt_in_use_connections: bool = False) -> None:
        """Close the pool ("Closing a Connection Pool"): close available connections,
        fail queued checkOuts with PoolClosedError, stop and join the background thread
        (waiting for a connection it is establishing). Idempotent.

        In-use connections are closed when checked in; with
        ``interrupt_in_use_connections`` (a client closing) they are closed now, and
        connections being established are aborted, so that no operation outlives the
        client: a thread blocked reading a reply fails at once with a network error.
        """
        to_close: _Closing[C] = []
        to_cancel: list[Cancellable] = []
        thread: Optional[threading.Thread] = None
        try:
            with self._lock:
                if self._state is PoolState.CLOSED:
                    return
                self._state = PoolState.CLOSED
                for conn in self._available:
                    self._discard_locked(conn, ConnectionClosedReason.POOL_CLOSED, to_close)
                self._available = []
                if interrupt_in_use_connections:
                    for conn in list(self._in_use.values()):
                        del self._in_use[conn.id]
                        self._interrupted[conn.id] = conn
                        self._discard_locked(conn, ConnectionClosedReason.POOL_CLOSED, to_close)
                    to_cancel = [c for _, c in self._establishing.values()]
                self._fail_waiters_locked(CheckOutFailedReason.POOL_CLOSED, self._closed_error)
                if self._cmap:
                    self._events.append(("pool_closed", PoolClosedEvent(self._address)))
                thread = self._thread
                self._maintenance_cond.notify_all()
        finally:
            self._finish(to_close)
        for cancellation in to_cancel:
            cancellation.cancel()  # outside the lock: it shuts a socket down
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _fail_waiters_locked(
        self, reason: str, make_error: Callable[[], ConnectionFailure]
    ) -> None:
        """Empty the WaitQueue: each request fails (and reports it) when it wakes."""
        for waiter in self._waiters:
            waiter.failure = (reason, make_error())
            if waiter.cond is not None:
                waiter.cond.notify()
        self._waiters.clear()

    # --- background thread ------------------------------------------------------------

    def run_maintenance(self) -> None:
        """One background thread Run: close perished available connections, then, while
        the pool is ready, create connections up to minPoolSize. Does only the work that
        is possible now (it never waits for maxConnecting) and stops at the first error.
        """
        to_close: _Closing[C] = []
        try:
            with self._lock:
                if self._state is PoolState.CLOSED:
                    return
                if self._available:
                    now = self._clock()
                    keep: list[C] = []
                    for conn in self._available:
                        reason = self._perished_reason_locked(conn, now)
                        if reason is None:
                            keep.append(conn)
                        else:
                            self._discard_locked(conn, reason, to_close)
                    self._available = keep
                    if to_close:
                        self._notify_head_locked()
        finally:
            self._finish(to_close)
        while self._populate_one():
            pass

    def _populate_one(self) -> bool:
        """Create one connection for minPoolSize ("Populating the Pool with a Connection");
        False when the Run should end."""
        with self._lock:
            total = self._total
            if (
                self._state is not PoolState.READY
                or total >= self._options.min_pool_size
                or (self._max_pool_size and total >= self._max_pool_size)
                or self._pending >= self._max_connecting
            ):
                return False
            pending = self._new_pending_locked()
        self._flush()
        try:
            conn = self._connect_pending(pending)
        except Exception as exc:
            try:
                # The spec defers this error to SDAM; its pool clear precedes the close.
                self._report_establish_error(exc, pending.generation)
            finally:
                with self._lock:
                    self._abandon_pending_locked(pending.connection_id, exc)
                self._flush()
            return False
        except BaseException:
            with self._lock:
                self._abandon_pending_locked(pending.connection_id)
            self._flush()
            raise
        to_close: _Closing[C] = []
        try:
            with self._lock:
                self._pending -= 1
                if self._load_balanced:
                    self._adopt_service_locked(conn)
                conn.last_checkin_time = self._clock()
                # Read through the property: the state may have changed during the I/O.
                if self.state is PoolState.CLOSED:
                    self._discard_locked(conn, ConnectionClosedReason.POOL_CLOSED, to_close)
                else:
                    reason = self._perished_reason_locked(conn, conn.last_checkin_time)
                    if reason is None:
                        if self._cmap:
                            self._events.append(
                                (
                                    "connection_ready",
                                    ConnectionReadyEvent(
                                        self._address,
                                        conn.id,
                                        time.monotonic() - pending.created,
                                    ),
                                )
                            )
                        # Available and no longer pending in one step: no checkOut starts
                        # a connection while this one is there for it.
                        self._available.append(conn)
                    else:
                        self._discard_locked(conn, reason, to_close)
                self._notify_head_locked()
        finally:
            self._finish(to_close)
        return not to_close

    def _report_establish_error(self, exc: BaseException, generation: int) -> None:
        handler = self._on_establish_error
        if handler is None:
            _log.warning("could not create a connection to %s: %s", self._address, exc)
            return
        try:
            handler(exc, generation)
        except Exception:
            _log.exception(
                "the establishment error handler of the pool for %s raised", self._address
            )

    def _maintenance_loop(self) -> None:
        interval = self._maintenance_interval
        assert interval is not None
        while True:
            with self._lock:
                deadline = time.monotonic() + interval
                while not self._maintenance_requested and self._state is not PoolState.CLOSED:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._maintenance_cond.wait(remaining)
                if self._state is PoolState.CLOSED:
                    return
                self._maintenance_requested = False
            try:
                self.run_maintenance()
            except Exception:
                _log.exception("background maintenance of the pool for %s failed", self._address)

    # --- shared helpers ---------------------------------------------------------------

    def _generation_for_locked(self, service_id: Optional[object]) -> int:
        if not self._load_balanced:
            return self._generation
        entry = self._service_generations.get(service_id)
        return entry[0] if entry is not None else 0

    def _adopt_service_locked(self, conn: C) -> None:
        """Load Balancer Mode: after the handshake, a connection takes its service's
        generation and counts towards it."""
        entry = self._service_generations.setdefault(conn.service_id, [0, 0])
        conn.generation = entry[0]
        entry[1] += 1

    def _perished_reason_locked(self, conn: C, now: float) -> Optional[str]:
        """Why an available connection is perished ("Perishable"), or None."""
        if conn.closed:
            return ConnectionClosedReason.ERROR
        if conn.generation != self._generation_for_locked(conn.service_id):
            return ConnectionClosedReason.STALE
        if self._max_idle_time is not None and now - conn.last_checkin_time > self._max_idle_time:
            return ConnectionClosedReason.IDLE
        return None

    def _discard_locked(self, conn: C, reason: str, to_close: _Closing[C]) -> None:
        """Stop counting a connection and emit ConnectionClosedEvent now ("Closing a
        Connection"); the connection itself is closed later, outside the lock."""
        self._total -= 1
        if self._load_balanced:
            entry = self._service_generations.get(conn.service_id)
            if entry is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    del self._service_generations[conn.service_id]
        if self._cmap:
            self._events.append(
                ("connection_closed", ConnectionClosedEvent(self._address, conn.id, reason))
            )
        to_close.append((conn, reason))

    def _finish(self, to_close: _Closing[C]) -> None:
        """After releasing the lock: deliver queued events, then close connections."""
        try:
            self._flush()
        finally:
            for conn, reason in to_close:
                try:
                    conn.close(reason)
                except Exception:
                    _log.debug("closing connection %s to %s failed", conn.id, self._address)

    def _flush(self) -> None:
        """Deliver queued events in order (see "Event order" in the module docstring)."""
        if not self._cmap:
            return
        events = self._events
        publish = self._publisher.publish
        listeners = self._listeners
        with self._delivery_lock:
            while events:
                method, event = events.popleft()
                publish(listeners, method, event)


def pool_options_from_mapping(options: Mapping[str, Any]) -> PoolOptions:
    """PoolOptions from spec-named options (``maxPoolSize``, ``waitQueueTimeoutMS``, ...);
    unknown names raise ConfigurationError."""
    names = {
        "maxPoolSize": "max_pool_size",
        "minPoolSize": "min_pool_size",
        "maxIdleTimeMS": "max_idle_time_ms",
        "waitQueueTimeoutMS": "wait_queue_timeout_ms",
        "maxConnecting": "max_connecting",
    }
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ConfigurationError(
            f"unknown connection pool option(s) {unknown}; known: {sorted(names)}"
        )
    return PoolOptions(**{names[key]: value for key, value in options.items()})
