"""The connection pool of Connection Monitoring and Pooling (CMAP).

Spec: connection-monitoring-and-pooling.md, sections "Connection Pool Options",
"Connection Pool Members" (Connection, WaitQueue, Connection Pool), "Connection Pool
Behaviors", "Load Balancer Mode", "Optional Behaviors" (Background Thread,
withConnection) and "Connection Pool Monitoring" (events). This module has "Marking a
Connection Pool as Ready", "Clearing a Connection Pool" and "Closing a Connection Pool",
and assembles :class:`Pool` from the parts: :mod:`mongocore.io.pool_options` (the
options), :mod:`mongocore.io.pool_base` (the state, the events, locking and event
order), :mod:`mongocore.io.pool_checkout` (checkOut, checkIn, the WaitQueue) and
:mod:`mongocore.io.pool_maintenance` (the background thread).

The pool never opens sockets itself: it is given a ``connect`` factory that creates and
establishes one connection (TCP, TLS, handshake, authentication) and returns an object
that satisfies :class:`~mongocore.io.pool_base.PoolConnection`. The real socket
connection is one such object; the spec tests use a fake one.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from mongocore.core.events import PoolClearedEvent, PoolClosedEvent, PoolReadyEvent
from mongocore.errors import ConnectionFailure, PoolClearedError
from mongocore.io.pool_base import (
    C,
    Cancellable,
    CheckOutFailedReason,
    Closing,
    ConnectionClosedReason,
    PoolState,
)
from mongocore.io.pool_checkout import PoolCheckOut
from mongocore.io.pool_maintenance import PoolMaintenance

__all__ = ["Pool"]


class Pool(PoolCheckOut[C], PoolMaintenance[C]):
    """A thread-safe, blocking CMAP connection pool for one server.

    ``connect`` creates and establishes connections (see
    :class:`~mongocore.io.pool_base.ConnectionFactory`);
    the pool is generic in their type, so ``check_out`` returns what ``connect`` makes.
    ``load_balanced`` switches on per-serviceId generations ("Load Balancer Mode").
    ``on_establish_error`` receives each error of connection establishment, for a
    checkOut or for minPoolSize, with the failed connection's generation: the spec
    hands these to SDAM's error handling, whose pool clear must precede the failed
    connection's ConnectionClosedEvent. Without it, background errors are logged.
    ``clock`` is the monotonic clock used for idle times (maxIdleTimeMS).
    """

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
                self._start_maintenance_locked()
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
        ones of the cleared generations (reported closed when checked in, after their
        ConnectionCheckedInEvent); pending ones are aborted (when the pool has a
        cancellation factory) or closed once established.
        """
        to_close: Closing[C] = []
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
                        if (
                            conn.generation <= stale_through
                            and (not self._load_balanced or conn.service_id == service_id)
                            and conn.id not in self._closed_by_clear
                        ):
                            # Closed now, so that the thread using it fails at once; it
                            # stays checked out, and is reported closed when that thread
                            # checks it in (checkedIn, then closed, as drivers report it).
                            self._closed_by_clear.add(conn.id)
                            to_close.append((conn, ConnectionClosedReason.STALE))
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
        That holds for a pool closed already too (its server left the topology while an
        operation was blocked on it): its in-use connections are closed then.
        """
        to_close: Closing[C] = []
        to_cancel: list[Cancellable] = []
        thread: Optional[threading.Thread] = None
        try:
            with self._lock:
                closed_before = self._state is PoolState.CLOSED
                if closed_before and not (
                    interrupt_in_use_connections and (self._in_use or self._establishing)
                ):
                    return
                self._state = PoolState.CLOSED
                for conn in self._available:
                    self._discard_locked(conn, ConnectionClosedReason.POOL_CLOSED, to_close)
                self._available = []
                if interrupt_in_use_connections:
                    for conn in list(self._in_use.values()):
                        del self._in_use[conn.id]
                        self._interrupted[conn.id] = conn
                        # One closed by an interrupting clear is closed already.
                        closing: Closing[C] = [] if conn.id in self._closed_by_clear else to_close
                        self._closed_by_clear.discard(conn.id)
                        self._discard_locked(conn, ConnectionClosedReason.POOL_CLOSED, closing)
                    to_cancel = [c for _, c in self._establishing.values()]
                if not closed_before:
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
