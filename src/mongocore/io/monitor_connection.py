"""The dedicated connection of a monitoring thread, which other threads may abort.

Spec: server-monitoring.md, the "Monitor thread" and "RTT thread" implementation notes
(each thread has a dedicated connection, never one from the pool) and, in "Streaming
Protocol", "Cancellation" (an application's network error or closing the client ends a
check blocked on its socket at once). The monitor thread (:mod:`mongocore.io.monitor`)
and the RTT thread (:mod:`mongocore.io.rtt_monitor`) each keep their connection in a
:class:`ConnectionSlot`.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from mongocore.core.address import Address
from mongocore.io.connection import Connection
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.establishment import Cancellation

__all__ = ["CheckCancelled", "ConnectionSlot", "Taken", "abort"]


class CheckCancelled(Exception):
    """The check was cancelled (cancel_check or close) and must not be reported."""


Taken = tuple[Optional[Connection], Optional[Cancellation]]


class ConnectionSlot:
    """The monitoring connection of one thread (the monitor's or the RTT thread's),
    which other threads may abort.

    The owner's lock guards the slot. ``close()`` and ``cancel_check()`` take what is
    there under the lock and abort it outside (:func:`abort`): I/O never happens
    under the lock, and a blocked connect or read ends at once.
    """

    __slots__ = ("_lock", "cancellation", "connection")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.connection: Optional[Connection] = None
        self.cancellation: Optional[Cancellation] = None

    def establish(
        self,
        connect: Callable[..., Connection],
        address: Address,
        settings: ConnectionSettings,
        wanted: Callable[[], bool],
        connection_id: int = 0,
    ) -> Connection:
        """Open a monitoring connection and keep it here, as long as ``wanted()``
        (called with the lock held) stays true; else raise CheckCancelled."""
        cancellation = Cancellation()
        with self._lock:
            if not wanted():
                raise CheckCancelled()
            self.cancellation = cancellation
        try:
            connection = connect(
                address,
                settings,
                connection_id=connection_id,
                monitoring=True,
                cancellation=cancellation,
            )
        finally:
            with self._lock:
                self.cancellation = None
        with self._lock:
            keep = wanted()
            if keep:
                self.connection = connection
        if not keep:
            connection.close("cancelled")
            raise CheckCancelled()
        return connection

    def take_locked(self) -> Taken:
        """Empty the slot (the lock is held): the connection and any establishment."""
        connection, self.connection = self.connection, None
        return connection, self.cancellation


def abort(taken: Taken, reason: str) -> None:
    """Cancel the establishment and close the connection taken from a slot."""
    connection, cancellation = taken
    if cancellation is not None:
        cancellation.cancel()
    if connection is not None:
        connection.close(reason)
