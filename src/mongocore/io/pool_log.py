"""Structured log messages of the connection pool.

Spec: connection-monitoring-and-pooling.md, "Connection Pool Logging" ("Common Fields"
and the messages "Connection pool created", "ready", "cleared" and "closed",
"Connection created", "ready" and "closed", "Connection checkout started" and
"failed", "Connection checked out", "Connection checked in"), with the general rules
of logging.md.

A module of its own, one per component of the logging spec (``topology`` in
:mod:`mongocore.io.log_messages`, ``serverSelection`` in :mod:`mongocore.io.selection_log`,
``connection`` here): each stays small and is read with its spec section, while what
every component shares (the structured form attribute, the max document length, how
errors are written, the base of each component's logger) is in
:mod:`mongocore.io.structured_log`.

The spec allows logging "via an event subscriber", and that is what a
:class:`ConnectionLogger` is: it turns one client's CMAP events into these messages,
on the logger named for the component, :data:`CONNECTION_LOGGER`
(``mongocore.connection``), at ``DEBUG``. The Client subscribes one when it is
created, if that logger is enabled for DEBUG at that moment
(:func:`connection_log_listeners`); otherwise nothing at all is done, and each
message is built only after ``isEnabledFor(DEBUG)`` said yes. Besides the spec's
fields every message carries ``topologyId``, the id the SDAM messages and events
carry, so that the messages of one client can be told apart.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

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
    Listener,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
)
from mongocore.io.structured_log import (
    StructuredLogger,
    duration_ms,
    failure_text,
    server_fields,
)

#: The logging spec's component of these messages, and the logger that carries it.
COMPONENT = "connection"
CONNECTION_LOGGER = "mongocore.connection"

# The "message" value of each log message.
POOL_CREATED = "Connection pool created"
POOL_READY = "Connection pool ready"
POOL_CLEARED = "Connection pool cleared"
POOL_CLOSED = "Connection pool closed"
CONNECTION_CREATED = "Connection created"
CONNECTION_READY = "Connection ready"
CONNECTION_CLOSED = "Connection closed"
CHECKOUT_STARTED = "Connection checkout started"
CHECKOUT_FAILED = "Connection checkout failed"
CHECKED_OUT = "Connection checked out"
CHECKED_IN = "Connection checked in"

#: The pool options a "Connection pool created" message shows (the event's options
#: are those the user set to something other than the default), in the spec's order.
POOL_OPTION_FIELDS = (
    "maxIdleTimeMS",
    "minPoolSize",
    "maxPoolSize",
    "maxConnecting",
    "waitQueueTimeoutMS",
)

#: The ``reason`` text the spec requires for each ConnectionClosedEvent reason.
CLOSED_REASONS = {
    "stale": "Connection became stale because the pool was cleared",
    "idle": "Connection has been available but unused for longer than the configured max idle time",
    "error": "An error occurred while using the connection",
    "poolClosed": "Connection pool was closed",
}
#: The ``reason`` text the spec requires for each ConnectionCheckOutFailedEvent reason.
CHECKOUT_FAILED_REASONS = {
    "timeout": "Wait queue timeout elapsed without a connection becoming available",
    "connectionError": "An error occurred while trying to establish a new connection",
    "poolClosed": "Connection pool was closed",
}


class ConnectionLogger(StructuredLogger, ConnectionPoolListener):
    """Emits the CMAP log messages for the pools of one client's topology.

    Register it (it is a ConnectionPoolListener) with the client's EventPublisher.
    ``topology_id`` is the id of the client's topology.
    """

    LOGGER_NAME = CONNECTION_LOGGER

    # --- the common fields -------------------------------------------------------------

    def _start(self, message: str, address: Address) -> tuple[dict[str, Any], str]:
        data = self._data(message)
        return data, server_fields(data, address)

    def _error(self, data: dict[str, Any], error: Optional[BaseException]) -> str:
        """Adds ``error`` when the event carries one; returns the text's ". Error: ..."."""
        if error is None:
            return ""
        text = failure_text(error, self.max_document_length)
        data["error"] = text
        return f". Error: {text}"

    # --- the pool ----------------------------------------------------------------------

    def pool_created(self, event: PoolCreatedEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(POOL_CREATED, event.address)
        shown = []
        for name in POOL_OPTION_FIELDS:
            value = event.options.get(name)
            if value is not None:
                data[name] = value
                shown.append(f"{name}={value}")
        options = f" using options {', '.join(shown)}" if shown else ""
        self._emit(f"Connection pool created for {server}{options}", data)

    def pool_ready(self, event: PoolReadyEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(POOL_READY, event.address)
        self._emit(f"Connection pool ready for {server}", data)

    def pool_cleared(self, event: PoolClearedEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(POOL_CLEARED, event.address)
        text = f"Connection pool for {server} cleared"
        if event.service_id is not None:
            service_id = str(event.service_id)  # an ObjectId: its hex string
            data["serviceId"] = service_id
            text += f" for serviceId {service_id}"
        self._emit(text, data)

    def pool_closed(self, event: PoolClosedEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(POOL_CLOSED, event.address)
        self._emit(f"Connection pool closed for {server}", data)

    # --- connections -------------------------------------------------------------------

    def connection_created(self, event: ConnectionCreatedEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(CONNECTION_CREATED, event.address)
        data["driverConnectionId"] = event.connection_id
        self._emit(
            f"Connection created: address={server}, driver-generated ID={event.connection_id}",
            data,
        )

    def connection_ready(self, event: ConnectionReadyEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(CONNECTION_READY, event.address)
        data["driverConnectionId"] = event.connection_id
        duration = data["durationMS"] = duration_ms(event.duration)
        self._emit(
            f"Connection ready: address={server}, driver-generated ID={event.connection_id}, "
            f"established in={duration} ms",
            data,
        )

    def connection_closed(self, event: ConnectionClosedEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(CONNECTION_CLOSED, event.address)
        data["driverConnectionId"] = event.connection_id
        reason = data["reason"] = CLOSED_REASONS.get(event.reason, event.reason)
        error = self._error(data, event.error if event.reason == "error" else None)
        self._emit(
            f"Connection closed: address={server}, driver-generated ID={event.connection_id}. "
            f"Reason: {reason}{error}",
            data,
        )

    # --- checkOut and checkIn ----------------------------------------------------------

    def connection_check_out_started(self, event: ConnectionCheckOutStartedEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(CHECKOUT_STARTED, event.address)
        self._emit(f"Checkout started for connection to {server}", data)

    def connection_check_out_failed(self, event: ConnectionCheckOutFailedEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(CHECKOUT_FAILED, event.address)
        reason = data["reason"] = CHECKOUT_FAILED_REASONS.get(event.reason, event.reason)
        error = self._error(data, event.error if event.reason == "connectionError" else None)
        duration = data["durationMS"] = duration_ms(event.duration)
        self._emit(
            f"Checkout failed for connection to {server}. Reason: {reason}{error}. "
            f"Duration: {duration} ms",
            data,
        )

    def connection_checked_out(self, event: ConnectionCheckedOutEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(CHECKED_OUT, event.address)
        data["driverConnectionId"] = event.connection_id
        duration = data["durationMS"] = duration_ms(event.duration)
        self._emit(
            f"Connection checked out: address={server}, "
            f"driver-generated ID={event.connection_id}, duration={duration} ms",
            data,
        )

    def connection_checked_in(self, event: ConnectionCheckedInEvent) -> None:
        if not self._enabled():
            return
        data, server = self._start(CHECKED_IN, event.address)
        data["driverConnectionId"] = event.connection_id
        self._emit(
            f"Connection checked in: address={server}, driver-generated ID={event.connection_id}",
            data,
        )


def connection_log_listeners(
    topology_id: object, logger: Optional[logging.Logger] = None
) -> list[Listener]:
    """A new ConnectionLogger if ``logger`` (by default :data:`CONNECTION_LOGGER`) is
    enabled for DEBUG now, else none: a client with logging off pays nothing."""
    target = ConnectionLogger.enabled_logger(logger)
    return [] if target is None else [ConnectionLogger(topology_id, logger=target)]
