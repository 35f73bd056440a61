"""The RTT thread of the streaming protocol: a plain hello every heartbeat, timed.

Spec: server-monitoring.md, "Streaming Protocol", section "Measuring RTT", and the
"RTT thread" implementation note. While the monitor thread (:mod:`mongocore.io.monitor`)
waits on awaitable hellos, whose replies say nothing about the round trip time, this
thread measures it on a dedicated connection of its own. The two threads share one
:class:`RoundTripTimeAverager`, which holds the pure core's immutable
:class:`~mongocore.core.selection.rtt.RoundTripTime` under a lock.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from mongocore.core.address import Address
from mongocore.core.lazy_logger import get_logger
from mongocore.core.selection.rtt import EMPTY, RoundTripTime
from mongocore.core.stable_api import hello_command_name
from mongocore.io import clock as _clock
from mongocore.io.connection import Connection
from mongocore.io.monitor_connection import ConnectionSlot, abort
from mongocore.io.monitor_settings import MonitorSettings

__all__ = ["RoundTripTimeAverager", "RttMonitor"]

_log = get_logger("mongocore.monitor")


class RoundTripTimeAverager:
    """A thread-safe holder of the current ``RoundTripTime`` for one server's monitor."""

    __slots__ = ("_lock", "_value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = EMPTY

    def add(self, sample: float) -> RoundTripTime:
        """Record one measurement; returns the new value."""
        with self._lock:
            value = self._value = self._value.add(sample)
        return value

    def reset(self) -> None:
        """Forget every sample (the server became unavailable)."""
        with self._lock:
            self._value = EMPTY

    @property
    def value(self) -> RoundTripTime:
        return self._value

    @property
    def average(self) -> Optional[float]:
        return self._value.average

    @property
    def minimum(self) -> float:
        return self._value.minimum


class RttMonitor:
    """The RTT thread (``mongocore-rtt-<address>``) of one server's monitor.

    Every heartbeat_frequency it runs a plain hello on its own connection and adds the
    duration to the shared averager. Its errors only close its connection: they never
    reach the topology, publish no events, and do not reset the average (the monitor
    does that).
    """

    def __init__(
        self,
        address: Address,
        settings: MonitorSettings,
        averager: RoundTripTimeAverager,
        connect: Callable[..., Connection],
    ) -> None:
        self._address = address
        self._settings = settings
        self._averager = averager
        self._connect = connect
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stopped = False
        self._slot = ConnectionSlot(self._lock)
        self._hello_ok = False
        self._thread = threading.Thread(
            target=self._run, name=f"mongocore-rtt-{address}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        with self._lock:
            self._stopped = True
            taken = self._slot.take_locked()
            self._cond.notify_all()
        abort(taken, "monitor closed")
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        frequency = self._settings.heartbeat_frequency
        while True:
            try:
                self._averager.add(self._ping())
            except Exception as exc:
                _log.debug("RTT measurement of %s failed: %s", self._address, exc)
                with self._lock:
                    connection, _ = self._slot.take_locked()
                abort((connection, None), "error")
            with self._cond:
                deadline = _clock.monotonic() + frequency
                while not self._stopped:
                    remaining = deadline - _clock.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if self._stopped:
                    return

    def _ping(self) -> float:
        connection = self._slot.connection
        if connection is None or connection.closed:
            start = _clock.monotonic()
            connection = self._slot.establish(
                self._connect,
                self._address,
                self._settings.connection,
                lambda: not self._stopped,
            )
            self._hello_ok = connection.hello_ok
            connection.take_hello()  # only its helloOk is needed here
            duration = getattr(connection, "handshake_duration", None)
            return duration if duration is not None else _clock.monotonic() - start
        command_name = hello_command_name(self._hello_ok, self._settings.connection.server_api)
        start = _clock.monotonic()
        # "Clients MUST ignore the response to the hello command when measuring RTT."
        reply = connection.command("admin", {command_name: 1, "helloOk": True}, check=False)
        duration = _clock.monotonic() - start
        self._hello_ok = reply.get("helloOk") is True
        return duration
