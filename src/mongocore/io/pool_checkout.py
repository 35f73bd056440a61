"""Checking a connection out of a CMAP pool and back in, with the WaitQueue.

Spec: connection-monitoring-and-pooling.md, "Connection Pool Behaviors": "Checking Out
a Connection" (the WaitQueue, maxConnecting, waitQueueTimeoutMS), "Establishing a
Connection" (for a checkOut), "Checking In a Connection", and "Optional Behaviors",
"withConnection"; "Load Balancer Mode" for the message of a WaitQueueTimeoutError.

WaitQueue
---------
Strictly FIFO: only the request at the head of the queue may take an available
connection or start creating one; it alone is woken when that may have become
possible. Clearing the pool (not in load-balanced mode) or closing it fails every
queued request at once (:mod:`mongocore.io.pool`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional, Union

from mongocore.core.events import (
    ConnectionCheckedOutEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionReadyEvent,
)
from mongocore.errors import ConnectionFailure, PoolClearedError, WaitQueueTimeoutError
from mongocore.io import clock as _clock
from mongocore.io.pool_base import (
    C,
    CheckOutFailedReason,
    Closing,
    ConnectionClosedReason,
    Pending,
    PoolBase,
    PoolState,
    Waiter,
    interrupted_error,
)

__all__ = ["PoolCheckOut"]

# Enum members compared on every check-out and check-in, bound once: on Python 3.11
# an enum member read from its class is several times slower (EnumType.__getattr__).
_READY, _CLOSED = PoolState.READY, PoolState.CLOSED


class PoolCheckOut(PoolBase[C]):
    """checkOut and checkIn, mixed into :class:`~mongocore.io.pool.Pool`."""

    # --- checkOut ----------------------------------------------------------------

    def check_out(self, timeout: Optional[float] = None) -> C:
        """Check out a connection ("Checking Out a Connection").

        Waits at most the shorter of waitQueueTimeoutMS and ``timeout`` seconds (the
        caller's remaining operation time) for its turn, then raises
        WaitQueueTimeoutError. Raises PoolClosedError if the pool is closed,
        PoolClearedError if it is paused or is cleared while this request waits, and
        whatever the ``connect`` factory raised if establishing a new connection failed.
        """
        if not self._cmap:
            # The common case first: a ready pool, nobody waiting, and the connection
            # checked in last still usable (not closed, not stale, not idle too long).
            # The general path below does the same with events and the wait queue.
            # (acquire and release, not a with block, which costs twice as much: every
            # operation takes this lock here and in check_in.)
            lock = self._lock
            lock.acquire()
            try:
                available = self._available
                if (
                    available
                    and self._state is _READY
                    and not self._waiters
                    and not self._load_balanced
                ):
                    conn = available[-1]
                    if (
                        not conn.closed
                        and conn.generation == self._generation
                        and (
                            self._max_idle_time is None
                            or self._clock() - conn.last_checkin_time <= self._max_idle_time
                        )
                    ):
                        available.pop()
                        self._in_use[conn.id] = conn
                        return conn
            finally:
                lock.release()
        started = _clock.monotonic()
        deadline = self._deadline(started, timeout)
        to_close: Closing[C] = []
        result: Union[C, Pending, None] = None
        waiter: Optional[Waiter] = None
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
                    waiter = Waiter()
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
        if isinstance(result, Pending):
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

    def _try_acquire_locked(self, started: float, to_close: Closing[C]) -> Union[C, Pending, None]:
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
                                    self._address, conn.id, _clock.monotonic() - started
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
        waiter: Waiter,
        started: float,
        deadline: Optional[float],
        to_close: Closing[C],
    ) -> Union[C, Pending, None]:
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
                remaining = deadline - _clock.monotonic()
                if remaining <= 0:
                    self._leave_queue_locked(waiter)
                    self._emit_check_out_failed_locked(CheckOutFailedReason.TIMEOUT, started)
                    raise self._timeout_error(started)
            if waiter.cond is None:
                waiter.cond = threading.Condition(self._lock)
            waiter.cond.wait(remaining)

    def _timeout_error(self, started: float) -> WaitQueueTimeoutError:
        waited_ms = (_clock.monotonic() - started) * 1000.0
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

    def _leave_queue_locked(self, waiter: Waiter) -> None:
        was_head = self._waiters[0] is waiter
        self._waiters.remove(waiter)
        if was_head:
            self._notify_head_locked()

    def _establish(self, pending: Pending, started: float) -> C:
        """Establish a new connection for a checkOut, outside the lock ("Establishing a
        Connection")."""
        to_close: Closing[C] = []
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
                        now = _clock.monotonic()
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

    # --- checkIn -----------------------------------------------------------------

    def check_in(self, conn: C) -> None:
        """Return a connection ("Checking In a Connection"): it becomes available, or is
        closed if it is perished or the pool is closed. Raises ValueError for a connection
        this pool did not check out."""
        to_close: Closing[C] = []
        lock = self._lock
        try:
            lock.acquire()  # not a with block: see check_out
            try:
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
                already_closed = conn_id in self._closed_by_clear
                if already_closed:
                    self._closed_by_clear.discard(conn_id)
                if self._state is _CLOSED:
                    reason: Optional[str] = ConnectionClosedReason.POOL_CLOSED
                elif already_closed:
                    # An interrupting clear closed it while in use: reported closed now.
                    reason = ConnectionClosedReason.STALE
                elif conn.closed:
                    reason = ConnectionClosedReason.ERROR
                elif conn.generation != (
                    self._generation_for_locked(conn.service_id)
                    if self._load_balanced
                    else self._generation
                ):
                    reason = ConnectionClosedReason.STALE
                else:
                    reason = None
                if reason is None:
                    conn.last_checkin_time = self._clock()
                    self._available.append(conn)
                else:
                    self._discard_locked(conn, reason, [] if already_closed else to_close)
                if self._waiters:
                    self._notify_head_locked()
            finally:
                lock.release()
        finally:
            if to_close or self._cmap:  # as in check_out
                self._finish(to_close)
