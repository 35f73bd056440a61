"""What every part of the CMAP connection pool shares: its state, events and members.

Spec: connection-monitoring-and-pooling.md, "Connection Pool Members" (Connection,
WaitQueue, Connection Pool: the state, the generation, the counts), "Load Balancer
Mode" (per-serviceId generations), "Creating a Connection", "Closing a Connection",
"Perishable" and "Connection Pool Monitoring" (the events and their reasons).
:class:`PoolBase` holds the state the behaviours work on; the behaviours are mixins:
checkOut and checkIn in :mod:`mongocore.io.pool_checkout`, the background thread in
:mod:`mongocore.io.pool_maintenance`, ready, clear and close in :mod:`mongocore.io.pool`,
which assembles :class:`~mongocore.io.pool.Pool`.

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
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from typing import Any, Callable, Generic, NamedTuple, Optional, Protocol, TypeVar

from mongocore.core.address import Address
from mongocore.core.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    EventPublisher,
    PoolCreatedEvent,
)
from mongocore.core.lazy_logger import get_logger
from mongocore.errors import (
    ConfigurationError,
    ConnectionFailure,
    PoolClearedError,
    PoolClosedError,
)
from mongocore.io import clock as _clock
from mongocore.io.pool_options import PoolOptions, default_options

__all__ = [
    "DEFAULT_MAINTENANCE_INTERVAL",
    "C",
    "Cancellable",
    "CheckOutFailedReason",
    "Closing",
    "ConnectionClosedReason",
    "ConnectionFactory",
    "Pending",
    "PoolBase",
    "PoolConnection",
    "PoolState",
    "Waiter",
    "interrupted_error",
]

_log = get_logger("mongocore.pool")

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


class Pending(NamedTuple):
    """A connection the pool counts as pending: created, not yet established."""

    connection_id: int
    generation: int
    created: float


class Waiter:
    """One checkOut request in the WaitQueue."""

    __slots__ = ("cond", "failure")

    def __init__(self) -> None:
        # Created on first wait: most requests never wait.
        self.cond: Optional[threading.Condition] = None
        # Set (with the queue entry removed) when a clear or close fails the request.
        self.failure: Optional[tuple[str, ConnectionFailure]] = None


Closing = list[tuple[C, str]]


class PoolBase(Generic[C]):
    """The state of a CMAP pool and the steps its behaviours share (see the module
    docstring); :class:`~mongocore.io.pool.Pool` is the pool to use."""

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
        clock: Callable[[], float] = _clock.monotonic,
        cancellation_factory: Optional[Callable[[], Cancellable]] = None,
    ) -> None:
        if maintenance_interval is not None and not maintenance_interval > 0:
            raise ConfigurationError(
                f"maintenance_interval must be a positive number of seconds or None, "
                f"not {maintenance_interval!r}"
            )
        self._address = address
        self._connect = connect
        self._options = options if options is not None else default_options()
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
        # In use, closed by an interrupting clear, reported closed once checked in.
        self._closed_by_clear: set[int] = set()
        # Load Balancer Mode: in-use connections pinned to cursors and transactions
        # (io/pinning.py), which the WaitQueueTimeoutError message counts apart.
        self._pinned: dict[str, int] = {"cursor": 0, "transaction": 0}
        self._total = 0
        self._pending = 0
        self._waiters: deque[Waiter] = deque()
        self._maintenance_requested = False
        #: Set by abandon() (a finalizer): the background thread closes the pool.
        self._abandoned = False
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

    # --- steps the behaviours share ------------------------------------------------

    def note_pinned(self, kind: str, delta: int) -> None:
        """A checked-out connection was pinned to (+1) or unpinned from (-1) a cursor or
        a transaction (load-balanced mode; see io/pinning.py)."""
        with self._lock:
            self._pinned[kind] = self._pinned.get(kind, 0) + delta

    def _closed_error(self) -> PoolClosedError:
        return PoolClosedError(
            f"Attempted to check out a connection from closed connection pool "
            f"{self._address}; the server was removed or the client closed",
            address=self._address,
        )

    def _notify_head_locked(self) -> None:
        """Wake the request at the head of the queue: it may be able to proceed now.
        (A head that has not waited yet re-checks before it waits.)"""
        if self._waiters:
            cond = self._waiters[0].cond
            if cond is not None:
                cond.notify()

    def _new_pending_locked(self) -> Pending:
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
        return Pending(connection_id, self._generation, _clock.monotonic())

    def _connect_pending(self, pending: Pending) -> C:
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
                        self._address, reason, _clock.monotonic() - started, error
                    ),
                )
            )

    def _emit_checked_in_locked(self, connection_id: int) -> None:
        if self._cmap:
            self._events.append(
                ("connection_checked_in", ConnectionCheckedInEvent(self._address, connection_id))
            )

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

    def _discard_locked(self, conn: C, reason: str, to_close: Closing[C]) -> None:
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

    def close(self, interrupt_in_use_connections: bool = False) -> None:
        """Close the pool ("Closing a Connection Pool"): :class:`~mongocore.io.pool.Pool`'s."""
        raise NotImplementedError

    def _finish(self, to_close: Closing[C]) -> None:
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
