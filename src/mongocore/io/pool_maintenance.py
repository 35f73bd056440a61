"""The background thread of a CMAP pool: minPoolSize and maxIdleTimeMS.

Spec: connection-monitoring-and-pooling.md, "Optional Behaviors", "Background Thread"
(its Run: close perished available connections, then populate the pool up to
minPoolSize) and "Connection Pool Behaviors", "Populating the Pool with a Connection".

When minPoolSize or maxIdleTimeMS is set, ``ready()`` starts one daemon thread named
``mongocore-pool-<address>`` that runs :meth:`PoolMaintenance.run_maintenance` every
``maintenance_interval`` seconds and at once when the pool becomes ready; ``close()``
stops and joins it. With ``maintenance_interval=None`` there is no thread and the owner
calls ``run_maintenance()`` itself. Stale available connections are closed eagerly by
``clear()`` itself (the spec's "immediate scheduling of the next background thread
iteration after a clear"), so a pool needs no thread to shed them.
"""

from __future__ import annotations

import threading

from mongocore.core.events import ConnectionReadyEvent
from mongocore.core.lazy_logger import get_logger
from mongocore.io import clock as _clock
from mongocore.io.pool_base import C, Closing, ConnectionClosedReason, PoolBase, PoolState

__all__ = ["PoolMaintenance"]

_log = get_logger("mongocore.pool")


class PoolMaintenance(PoolBase[C]):
    """The background thread, mixed into :class:`~mongocore.io.pool.Pool`."""

    def _start_maintenance_locked(self) -> None:
        """The pool became ready (the lock is held): start or wake the background
        thread, if minPoolSize or maxIdleTimeMS gives it work."""
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

    def abandon(self) -> None:
        """The topology was freed without being closed (a client its owner dropped,
        behind a load balancer, where no monitor closes the pool): the background
        thread, if there is one, closes the pool and ends.

        Called by the topology's finalizer, on any thread at any moment: it waits for
        no lock (a thread it could not wake sees the mark at its next Run)."""
        self._abandoned = True
        if self._lock.acquire(blocking=False):
            try:
                self._maintenance_cond.notify_all()
            finally:
                self._lock.release()

    def run_maintenance(self) -> None:
        """One background thread Run: close perished available connections, then, while
        the pool is ready, create connections up to minPoolSize. Does only the work that
        is possible now (it never waits for maxConnecting) and stops at the first error.
        """
        to_close: Closing[C] = []
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
        to_close: Closing[C] = []
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
                                        _clock.monotonic() - pending.created,
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

    def _maintenance_loop(self) -> None:
        interval = self._maintenance_interval
        assert interval is not None
        while True:
            with self._lock:
                deadline = _clock.monotonic() + interval
                while (
                    not self._maintenance_requested
                    and self._state is not PoolState.CLOSED
                    and not self._abandoned
                ):
                    remaining = deadline - _clock.monotonic()
                    if remaining <= 0:
                        break
                    self._maintenance_cond.wait(remaining)
                if self._state is PoolState.CLOSED:
                    return
                abandoned = self._abandoned
                self._maintenance_requested = False
            if abandoned:
                self.close(interrupt_in_use_connections=True)  # not joined: this thread
                return
            try:
                self.run_maintenance()
            except Exception:
                _log.exception("background maintenance of the pool for %s failed", self._address)
