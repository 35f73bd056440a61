"""Server monitors: one thread per server checking it with hello, plus an RTT thread.

Spec: server-monitoring.md, sections "Multi-threaded or asynchronous monitoring",
"serverMonitoringMode", "Streaming Protocol" (streaming hello, socket timeout,
measuring RTT, SDAM monitoring, heartbeat frequency, cancellation), "Polling Protocol",
"Error handling" and the "Monitor thread" and "RTT thread" implementation notes.

A :class:`Monitor` owns a dedicated connection (never from the pool, never
authenticated) and reports each check's outcome, a :class:`ServerDescription`, to its
:class:`MonitorTarget` (the topology), without holding any lock of its own.

Scheduling: the next check starts ``heartbeat_frequency`` after the previous one ended,
or sooner when :meth:`Monitor.request_check` asks, but never less than
``min_heartbeat_frequency`` after it. Requests that arrive while a check is running are
ignored ("If a hello call is already in progress, the request MUST be ignored").

Protocols: the polling protocol sends ``{hello: 1}`` each time. The streaming protocol,
used when enabled (``serverMonitoringMode`` "stream", or "auto" off FaaS platforms) and
the server's hello carries a ``topologyVersion``, sends an awaitable hello with
exhaustAllowed and then reads every reply the server streams, starting a separate RTT
thread (``mongocore-rtt-<address>``, :mod:`mongocore.io.rtt_monitor`) with its own
connection that measures a plain hello every ``heartbeat_frequency``. The settings
(heartbeat frequencies, the monitoring mode) are :mod:`mongocore.io.monitor_settings`;
the dedicated connections other threads may abort, :mod:`mongocore.io.monitor_connection`.

Failures: a failed check closes the monitoring connection and resets the RTT average,
and is reported at once: the server becomes Unknown, with the error as text, and the
topology clears its pool. A network failure of a server whose previous description was
known is then checked once more right away, on a new connection, without waiting for
the next heartbeat. A check that timed out asks the topology to clear the pool with
interruptInUseConnections ("Network or command error during server check"), which
ends operations blocked on a server that stopped answering. Anything a server sends,
however broken, becomes an Unknown description; the thread never dies of it. An
unexpected error inside the monitor (or the topology failing to take an outcome) is
logged at ERROR with its traceback and the server reported Unknown with it: nothing
may leave the topology on a description the monitor can no longer vouch for.

One deliberate addition to the spec: a server that answers awaitable hellos at once
without a newer topologyVersion does not make the monitor spin (a new awaitable hello
is sent at most every ``min_heartbeat_frequency``).

The monitor holds its target (the topology) through a weak reference, as pymongo's
monitors do: the thread does not keep a client alive that its owner dropped without
closing it. The topology's finalizer then calls :meth:`Monitor.abandon`, and the
thread ends, closing its connections, its RTT thread and its server's pool.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, Optional, Protocol

from bson.int64 import Int64

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology_version import (
    TopologyVersion,
    compare_topology_version,
)
from mongocore.core.description.types import ServerType
from mongocore.core.events import (
    EventPublisher,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from mongocore.core.lazy_logger import get_logger
from mongocore.core.stable_api import hello_command_name
from mongocore.errors import (
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    ProtocolError,
    command_error_from_reply,
)
from mongocore.io import clock as _clock
from mongocore.io.connection import Connection, connect
from mongocore.io.monitor_connection import CheckCancelled, ConnectionSlot, abort

# MonitorSettings is documented public as mongocore.io.monitor.MonitorSettings
# (docs/monitoring.md): it lives in monitor_settings and is re-exported here.
from mongocore.io.monitor_settings import MonitorSettings, streaming_enabled
from mongocore.io.rtt_monitor import RoundTripTimeAverager, RttMonitor

__all__ = [
    "Closable",
    "Monitor",
    "MonitorSettings",
    "MonitorTarget",
]

_log = get_logger("mongocore.monitor")


class MonitorTarget(Protocol):
    """Who receives check outcomes: the topology.

    Called on the monitor's thread, with no monitor lock held; the target applies the
    description under its own lock. It may call back into the monitor (even
    ``close()``).
    """

    def on_server_check(
        self, description: ServerDescription, *, interrupt_in_use_connections: bool = False
    ) -> None: ...


class Closable(Protocol):
    """What an abandoned monitor closes on its way out: its server's pool."""

    def close(self, interrupt_in_use_connections: bool = False) -> None: ...


#: How long a monitor whose topology was freed waits for the finalizer's abandon().
_ABANDON_WAIT = 5.0


class _Outcome(NamedTuple):
    description: Optional[ServerDescription]  # None: cancelled, report nothing
    error: Optional[BaseException]


def _describe(exc: BaseException) -> str:
    """A readable error for a description: what failed, never just a class name."""
    if isinstance(exc, MongoCoreError):
        return str(exc)
    return f"unexpected {type(exc).__name__} during the check: {exc}"


def _is_network_error(exc: Optional[BaseException]) -> bool:
    return isinstance(exc, (NetworkError, ProtocolError))


def _is_timeout(exc: Optional[BaseException]) -> bool:
    """A heartbeat timeout: the server stopped answering within the check's timeout."""
    return isinstance(exc, NetworkTimeout)


class Monitor:
    """Monitors one server on a thread of its own (``mongocore-monitor-<address>``).

    ``connect`` makes the monitoring connections; it is called as
    ``connect(address, settings.connection, monitoring=True, cancellation=...)``.
    ``clock`` stamps ``last_update_time`` on the descriptions; scheduling and durations
    use ``time.monotonic``.
    """

    def __init__(
        self,
        address: Address,
        target: MonitorTarget,
        settings: MonitorSettings,
        publisher: Optional[EventPublisher] = None,
        *,
        connect: Callable[..., Connection] = connect,
        clock: Callable[[], float] = _clock.monotonic,
    ) -> None:
        self._address = address
        # Weak: the monitor thread must not keep an unclosed client's topology alive
        # (see the module docstring and abandon()).
        self._target = weakref.ref(target)
        #: Set by abandon(): what the thread closes on its way out.
        self._abandoned = False
        self._abandoned_pool: Optional[Closable] = None
        self._settings = settings
        self._listeners = publisher.heartbeat_listeners if publisher is not None else []
        self._publisher = publisher if publisher is not None else EventPublisher()
        self._connect = connect
        self._clock = clock
        self._streaming = streaming_enabled(settings.server_monitoring_mode)
        self._rtt = RoundTripTimeAverager()

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # Guarded by _lock:
        self._thread: Optional[threading.Thread] = None
        self._rtt_monitor: Optional[RttMonitor] = None
        self._stopped = False
        self._check_requested = False
        #: A hello call is in progress: check requests are ignored meanwhile.
        self._checking = False
        #: A request was ignored during the check in progress.
        self._request_ignored = False
        self._cancel_generation = 0
        self._slot = ConnectionSlot(self._lock)
        # Used by the monitor thread only:
        self._description = ServerDescription(address)
        self._hello_ok = False
        self._last_check_end = -float("inf")
        self._last_awaitable_sent = -float("inf")
        self._heartbeat_start: Optional[float] = None
        self._heartbeat_awaited = False
        # The heartbeat's connection: (mongocore's id, the server's id or None).
        self._heartbeat_connection: tuple[int, Optional[int]] = (0, None)
        self._connections_opened = 0

    # --- public interface ---------------------------------------------------------------

    @property
    def address(self) -> Address:
        return self._address

    @property
    def settings(self) -> MonitorSettings:
        return self._settings

    @property
    def streaming(self) -> bool:
        """Whether the streaming protocol is enabled (it is used once the server allows)."""
        return self._streaming

    @property
    def round_trip_time(self) -> RoundTripTimeAverager:
        return self._rtt

    def open(self) -> None:
        """Start the monitor thread (once; nothing happens after close())."""
        with self._lock:
            if self._thread is not None or self._stopped:
                return
            self._thread = threading.Thread(
                target=self._run, name=f"mongocore-monitor-{self._address}", daemon=True
            )
            self._thread.start()

    def request_check(self) -> None:
        """Check as soon as possible, but not sooner than min_heartbeat_frequency after
        the previous check ended; ignored if a check is in progress."""
        with self._lock:
            if self._checking:
                # "If a hello call is already in progress, the request MUST be ignored":
                # the check under way reports a description at least as new.
                self._request_ignored = True
                return
            self._check_requested = True
            self._cond.notify_all()

    def cancel_check(self) -> None:
        """The application saw a network error: close the monitoring connection and
        abandon a check in progress without reporting its outcome. The next check runs
        on the usual schedule (or when requested)."""
        with self._lock:
            self._cancel_generation += 1
            if self._checking and self._request_ignored:
                # The cancelled check reports nothing: what it was to answer is owed.
                self._check_requested = True
            self._checking = False
            taken = self._slot.take_locked()
            self._cond.notify_all()
        abort(taken, "cancelled")

    def close(self) -> None:
        """Stop monitoring and join the monitor and RTT threads. Prompt even when a check
        is blocked on the socket: the socket is shut down to unblock it."""
        with self._lock:
            self._stopped = True
            self._cancel_generation += 1
            taken = self._slot.take_locked()
            rtt_monitor = self._rtt_monitor
            thread = self._thread
            self._cond.notify_all()
        abort(taken, "monitor closed")
        if rtt_monitor is not None:
            rtt_monitor.close()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def abandon(self, pool: Optional[Closable] = None) -> None:
        """The target was freed without being closed (a client its owner dropped): stop,
        and on the way out close the connections, the RTT thread and ``pool``.

        Called by the topology's finalizer, which may run on any thread at any moment
        (the garbage collector's), this monitor's own thread included, inside one of its
        critical sections: it waits for no lock. It marks the monitor stopped, shuts down
        the socket a check may be blocked on, and wakes the thread if the lock is free;
        a thread it could not wake sees the mark when its wait ends, within a heartbeat.
        """
        self._abandoned_pool = pool
        self._abandoned = True
        self._stopped = True
        connection, cancellation = self._slot.connection, self._slot.cancellation
        if cancellation is not None:
            cancellation.cancel_nowait()
        if connection is not None:
            connection.shutdown_nowait()
        if self._lock.acquire(blocking=False):
            try:
                self._cond.notify_all()
            finally:
                self._lock.release()

    # --- the monitor thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            if not self._abandoned and self._target() is None:
                # The topology was freed and this thread saw it first: the garbage
                # collector clears weak references just before it runs finalizers, so
                # the topology's is running now and hands over the pool through
                # abandon(), which notifies the condition if it can (a bounded wait).
                with self._lock:
                    if not self._abandoned:
                        self._cond.wait(_ABANDON_WAIT)
            if self._abandoned:
                self._retire()

    def _retire(self) -> None:
        """After abandon(), on the monitor's own thread: close what abandon() could not."""
        with self._lock:
            taken = self._slot.take_locked()
            rtt_monitor = self._rtt_monitor
        abort(taken, "client freed")
        if rtt_monitor is not None:
            rtt_monitor.close()
        pool = self._abandoned_pool
        if pool is not None:
            pool.close(interrupt_in_use_connections=True)

    def _loop(self) -> None:
        while not self._stopped:
            try:
                if not self._iteration():
                    return
            except Exception as exc:
                # A bug, or a listener that raised in an unexpected place. Loud, never
                # silent: logged with its traceback, and the server reported Unknown
                # with the error (its pool cleared), so the topology cannot stay on a
                # description this monitor can no longer vouch for. Then pause as
                # after any check, on a new connection, and keep monitoring.
                _log.error(
                    "monitor of %s: unexpected error; the server is marked Unknown",
                    self._address,
                    exc_info=True,
                )
                self._drop_connection()
                self._rtt.reset()
                self._last_check_end = _clock.monotonic()
                self._report_unknown(f"internal error in the monitor: {_describe(exc)}")
                self._wait()

    def _iteration(self) -> bool:
        """One check, its report (and the one immediate retry), and the pause; False to stop."""
        previous = self._description
        outcome = self._check(previous)
        if (
            outcome.description is not None
            and _is_network_error(outcome.error)
            and previous.type is not ServerType.UNKNOWN
        ):
            # A known server failed: report it Unknown at once (the topology clears its
            # pool), then check once more right away: it may have been a glitch or a
            # restart, and the retry finds out without waiting a heartbeat.
            _log.debug("monitor of %s: retrying after %s", self._address, outcome.error)
            if not self._report(outcome.description, _is_timeout(outcome.error)):
                return False
            outcome = self._check(outcome.description)
        description = outcome.description
        if description is None:
            if self._stopped:
                return False
            self._wait()
            return True
        if not self._report(description, _is_timeout(outcome.error)):
            return False

        supports_streaming = (
            description.type is not ServerType.UNKNOWN and description.topology_version is not None
        )
        connection = self._slot.connection
        connection_streaming = connection is not None and connection.more_to_come()
        if self._streaming and supports_streaming:
            self._start_rtt_monitor()
        if self._streaming and (supports_streaming or connection_streaming):
            # "After processing an ok:1 response, the client MUST NOT sleep."
            return True
        self._wait()
        return True

    def _report(self, description: ServerDescription, timed_out: bool = False) -> bool:
        """Hand a check outcome to the target; False if the monitor was stopped.

        ``timed_out``: the check failed with a network timeout, so the target clears
        the pool with interruptInUseConnections ("Network or command error during
        server check").
        """
        self._description = description
        target = self._target()
        if self._stopped or target is None:
            return False
        try:
            if timed_out:
                target.on_server_check(description, interrupt_in_use_connections=True)
            else:
                target.on_server_check(description)
        except Exception as exc:
            # The topology could not take this outcome. Were it merely logged, the
            # topology would keep the last description it took, however wrong, for
            # as long as the server answers the same way: report the server Unknown
            # with the reason instead, and say so at ERROR.
            _log.error(
                "monitor of %s: the topology failed to apply %r; the server is marked Unknown",
                self._address,
                description,
                exc_info=True,
            )
            if description.type is not ServerType.UNKNOWN or description.error is None:
                self._report_unknown(f"the check outcome could not be applied: {_describe(exc)}")
        return not self._is_stopped()  # the target may have closed this monitor

    def _report_unknown(self, error: str) -> None:
        """Report the server Unknown with ``error`` after an internal failure (logged by
        the caller); a target that raises again is logged, never propagated."""
        unknown = ServerDescription.from_error(self._address, error, last_update_time=self._clock())
        self._description = unknown
        target = self._target()
        if self._stopped or target is None:
            return
        try:
            target.on_server_check(unknown)
        except Exception:
            _log.error(
                "monitor of %s: the topology failed to mark the server Unknown",
                self._address,
                exc_info=True,
            )

    def _wait(self) -> None:
        """Sleep until heartbeat_frequency after the last check, or a requested check,
        but at least min_heartbeat_frequency after it; close() wakes it at once."""
        settings = self._settings
        with self._cond:
            deadline = self._last_check_end + settings.heartbeat_frequency
            while not self._stopped and not self._check_requested:
                remaining = deadline - _clock.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            earliest = self._last_check_end + settings.min_heartbeat_frequency
            while not self._stopped:
                remaining = earliest - _clock.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)

    # --- one check ------------------------------------------------------------------------

    def _check(self, previous: ServerDescription) -> _Outcome:
        with self._lock:
            if self._stopped:
                return _Outcome(None, None)
            generation = self._cancel_generation
            connection = self._slot.connection
            self._check_requested = False
            self._checking = True
            self._request_ignored = False
        self._heartbeat_start = None
        error: Optional[BaseException] = None
        description: Optional[ServerDescription] = None
        reply: Any = None
        try:
            reply = self._hello(connection, previous, generation)
            description = ServerDescription.from_hello(
                self._address,
                reply,
                self._rtt.average,
                min_round_trip_time=self._rtt.minimum,
                last_update_time=self._clock(),
            )
            if description.error is not None:
                # A reply the server should never send: treat it as a failed check.
                raise ProtocolError(description.error, address=self._address)
        except Exception as exc:
            error = exc
        finally:
            with self._lock:
                self._checking = False
        self._last_check_end = _clock.monotonic()
        cancelled = self._is_cancelled(generation)
        if error is None and not cancelled:
            assert description is not None
            self._hello_ok = reply.get("helloOk") is True
            self._publish_succeeded(reply)
            return _Outcome(description, None)

        self._drop_connection()
        self._rtt.reset()
        if cancelled or error is None:
            # Cancelled (by cancel_check or close), whatever happened meanwhile: even a
            # reply that arrived may predate what the application saw, so it is dropped.
            error = NetworkError(f"the check of {self._address} was cancelled")
            self._publish_failed(error)
            return _Outcome(None, error)
        self._publish_failed(error)
        _log.debug("monitor of %s: check failed: %s", self._address, error)
        return _Outcome(
            ServerDescription.from_error(
                self._address, _describe(error), last_update_time=self._clock()
            ),
            error,
        )

    def _hello(
        self, connection: Optional[Connection], previous: ServerDescription, generation: int
    ) -> Mapping[str, Any]:
        if connection is None or connection.closed:
            self._connections_opened += 1
            self._publish_started(False, self._connections_opened, None)
            start = _clock.monotonic()
            connection = self._establish(generation, self._connections_opened)
            self._heartbeat_connection = (connection.id, connection.server_connection_id)
            duration = getattr(connection, "handshake_duration", None)
            self._rtt.add(duration if duration is not None else _clock.monotonic() - start)
            self._hello_ok = connection.hello_ok
            return connection.take_hello()
        settings = self._settings
        ids = (connection.id, connection.server_connection_id)
        if connection.more_to_come():
            self._publish_started(True, *ids)
            streamed = connection.receive(settings.streaming_timeout)
            if streamed.get("ok") != 1:
                raise command_error_from_reply(streamed)
            return streamed
        # With a declared API version legacy hello is never used (Stable API).
        command_name = hello_command_name(self._hello_ok, settings.connection.server_api)
        topology_version = previous.topology_version
        if self._streaming and topology_version is not None:
            self._pace_awaitable_hello(generation)
            self._publish_started(True, *ids)
            self._last_awaitable_sent = _clock.monotonic()
            command = {
                command_name: 1,
                "helloOk": True,
                "topologyVersion": {
                    "processId": topology_version.process_id,
                    "counter": Int64(topology_version.counter),
                },
                "maxAwaitTimeMS": Int64(round(settings.heartbeat_frequency * 1000)),
            }
            reply = connection.command(
                "admin", command, timeout=settings.streaming_timeout, exhaust_allowed=True
            )
            self._note_awaited_reply(previous, reply)
            return reply
        self._publish_started(False, *ids)
        start = _clock.monotonic()
        reply = connection.command("admin", {command_name: 1, "helloOk": True})
        self._rtt.add(_clock.monotonic() - start)
        return reply

    def _note_awaited_reply(self, previous: ServerDescription, reply: Mapping[str, Any]) -> None:
        # Replying at once with the same topologyVersion is not what an awaitable
        # hello is for; pace the next request so such a server cannot make us spin.
        # A newer topologyVersion (a real change) lifts the pacing.
        try:
            received = TopologyVersion.parse(reply.get("topologyVersion"))
            newer = compare_topology_version(previous.topology_version, received) < 0
        except Exception:
            newer = False
        if newer:
            self._last_awaitable_sent = -float("inf")

    def _pace_awaitable_hello(self, generation: int) -> None:
        earliest = self._last_awaitable_sent + self._settings.min_heartbeat_frequency
        with self._cond:
            while not self._stopped and self._cancel_generation == generation:
                remaining = earliest - _clock.monotonic()
                if remaining <= 0:
                    return
                self._cond.wait(remaining)
        raise CheckCancelled()

    def _establish(self, generation: int, connection_id: int) -> Connection:
        return self._slot.establish(
            self._connect,
            self._address,
            self._settings.connection,
            lambda: not self._stopped and self._cancel_generation == generation,
            connection_id=connection_id,
        )

    def _is_stopped(self) -> bool:
        return self._stopped

    def _is_cancelled(self, generation: int) -> bool:
        with self._lock:
            return self._stopped or self._cancel_generation != generation

    def _drop_connection(self) -> None:
        with self._lock:
            connection, _ = self._slot.take_locked()
        abort((connection, None), "error")

    # --- RTT thread ----------------------------------------------------------------------

    def _start_rtt_monitor(self) -> None:
        with self._lock:
            if self._rtt_monitor is not None or self._stopped:
                return
            rtt_monitor = RttMonitor(self._address, self._settings, self._rtt, self._connect)
            self._rtt_monitor = rtt_monitor
            # Started under the lock so that close() either sees it or stops it first.
            rtt_monitor.start()

    # --- heartbeat events -------------------------------------------------------------------

    def _publish_started(
        self, awaited: bool, connection_id: int, server_connection_id: Optional[int]
    ) -> None:
        self._heartbeat_start = _clock.monotonic()
        self._heartbeat_awaited = awaited
        self._heartbeat_connection = (connection_id, server_connection_id)
        if self._listeners:
            event = ServerHeartbeatStartedEvent(
                self._address, awaited, connection_id, server_connection_id
            )
            self._publisher.publish(self._listeners, "started", event)

    def _publish_succeeded(self, reply: Mapping[str, Any]) -> None:
        start = self._heartbeat_start
        if start is None or not self._listeners:
            return
        event = ServerHeartbeatSucceededEvent(
            self._address,
            _clock.monotonic() - start,
            reply,
            self._heartbeat_awaited,
            *self._heartbeat_connection,
        )
        self._publisher.publish(self._listeners, "succeeded", event)

    def _publish_failed(self, error: BaseException) -> None:
        start = self._heartbeat_start
        # Only a started heartbeat fails: every started event gets exactly one outcome.
        if start is None or not self._listeners:
            return
        event = ServerHeartbeatFailedEvent(
            self._address,
            _clock.monotonic() - start,
            error,
            self._heartbeat_awaited,
            *self._heartbeat_connection,
        )
        self._publisher.publish(self._listeners, "failed", event)
