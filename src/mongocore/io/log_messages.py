"""Structured log messages of server discovery and monitoring.

Spec: server-discovery-and-monitoring-logging-and-monitoring.md, "Log Messages"
("Starting/Stopped topology monitoring", "Starting/Stopped server monitoring",
"Topology description changed", "Server heartbeat started/succeeded/failed" and their
"Common Fields"), with the general rules of logging.md (component, level, relaxed
extended JSON, "Configurable Max Document Length", "Omitting Null Values",
"Performance Considerations").

Python's :mod:`logging` carries the messages. They are emitted on the logger named
for the spec's ``topology`` component, :data:`TOPOLOGY_LOGGER` (``mongocore.topology``),
at ``DEBUG``. Each is one :class:`logging.LogRecord` whose message is the spec's
unstructured form and which carries the structured form as an attribute,
:data:`DATA_ATTRIBUTE` (``record.mongocore_data``): a dict with the spec's key names
(``message``, ``topologyId``, ``serverHost``, ...); a field that is unknown is absent
from it, never None. :func:`structured_data` reads it back from a record.

A :class:`TopologyLogger` turns one client's SDAM and heartbeat events into these
messages (the spec allows logging "via an event subscriber"). The Client subscribes
one when it is created, if the logger is enabled for DEBUG at that moment
(:func:`topology_log_listeners`); otherwise nothing at all is done, and each message
is built only after ``isEnabledFor(DEBUG)`` said yes.

What every component's messages share (the structured form attribute, the max
document length, truncation, the text of an error, the server fields, durations, the
base of each component's logger) is in :mod:`mongocore.io.structured_log`; this
module re-exports its public names, where they were first defined.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Union

from mongocore.core.events import (
    Listener,
    ServerClosedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatListener,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerListener,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyListener,
    TopologyOpeningEvent,
)
from mongocore.io.structured_log import (
    DATA_ATTRIBUTE,
    DEFAULT_MAX_DOCUMENT_LENGTH,
    MAX_DOCUMENT_LENGTH_VARIABLES,
    StructuredLogger,
    current_max_document_length,
    document_json,
    duration_ms,
    failure_text,
    max_document_length_from_environment,
    server_fields,
    set_max_document_length,
    structured_data,
    truncate,
)

__all__ = [
    "COMPONENT",
    "DATA_ATTRIBUTE",
    "DEFAULT_MAX_DOCUMENT_LENGTH",
    "MAX_DOCUMENT_LENGTH_VARIABLES",
    "SERVER_HEARTBEAT_FAILED",
    "SERVER_HEARTBEAT_STARTED",
    "SERVER_HEARTBEAT_SUCCEEDED",
    "STARTING_SERVER_MONITORING",
    "STARTING_TOPOLOGY_MONITORING",
    "STOPPED_SERVER_MONITORING",
    "STOPPED_TOPOLOGY_MONITORING",
    "TOPOLOGY_DESCRIPTION_CHANGED",
    "TOPOLOGY_LOGGER",
    "TopologyLogger",
    "current_max_document_length",
    "document_json",
    "duration_ms",
    "failure_text",
    "max_document_length_from_environment",
    "server_fields",
    "set_max_document_length",
    "structured_data",
    "topology_log_listeners",
    "truncate",
]

#: The logging spec's component of these messages, and the logger that carries it.
COMPONENT = "topology"
TOPOLOGY_LOGGER = "mongocore.topology"

# The "message" value of each log message.
STARTING_TOPOLOGY_MONITORING = "Starting topology monitoring"
STOPPED_TOPOLOGY_MONITORING = "Stopped topology monitoring"
STARTING_SERVER_MONITORING = "Starting server monitoring"
STOPPED_SERVER_MONITORING = "Stopped server monitoring"
TOPOLOGY_DESCRIPTION_CHANGED = "Topology description changed"
SERVER_HEARTBEAT_STARTED = "Server heartbeat started"
SERVER_HEARTBEAT_SUCCEEDED = "Server heartbeat succeeded"
SERVER_HEARTBEAT_FAILED = "Server heartbeat failed"

_HeartbeatEvent = Union[
    ServerHeartbeatStartedEvent, ServerHeartbeatSucceededEvent, ServerHeartbeatFailedEvent
]


class TopologyLogger(StructuredLogger):
    """Emits the SDAM log messages for one client's topology.

    Feed it the client's events through :meth:`listeners`. ``topologyId`` is the
    topology id the events carry (an ObjectId, one per client); the heartbeat
    messages, whose events carry none, take the one the topology opened with.

    ``driverConnectionId`` and ``serverConnectionId`` come from the heartbeat
    events: the monitor numbers its monitoring connections per server (1, 2, ...; they
    are not pool connections), and the server's id is the ``connectionId`` of the
    connection's handshake reply, absent when the check opens a new connection.
    """

    LOGGER_NAME = TOPOLOGY_LOGGER

    def listeners(self) -> list[Listener]:
        """The listeners to register with the client's EventPublisher."""
        return [_TopologyEvents(self), _ServerEvents(self), _HeartbeatEvents(self)]

    # --- topology and server events --------------------------------------------------

    def topology_opened(self, event: TopologyOpeningEvent) -> None:
        self.topology_id = event.topology_id
        if not self._enabled():
            return
        self._emit(
            f"Starting monitoring for topology with ID {event.topology_id}",
            {"message": STARTING_TOPOLOGY_MONITORING, "topologyId": event.topology_id},
        )

    def topology_closed(self, event: TopologyClosedEvent) -> None:
        if not self._enabled():
            return
        self._emit(
            f"Stopped monitoring for topology with ID {event.topology_id}",
            {"message": STOPPED_TOPOLOGY_MONITORING, "topologyId": event.topology_id},
        )

    def topology_description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        if not self._enabled():
            return
        previous = repr(event.previous_description)
        new = repr(event.new_description)
        self._emit(
            f"Description changed for topology with ID {event.topology_id}. "
            f"Previous description: {previous}. New description: {new}",
            {
                "message": TOPOLOGY_DESCRIPTION_CHANGED,
                "topologyId": event.topology_id,
                "previousDescription": previous,
                "newDescription": new,
            },
        )

    def server_opened(self, event: ServerOpeningEvent) -> None:
        if not self._enabled():
            return
        data: dict[str, Any] = {
            "message": STARTING_SERVER_MONITORING,
            "topologyId": event.topology_id,
        }
        server = server_fields(data, event.address)
        self._emit(
            f"Starting monitoring for server {server} in topology with ID {event.topology_id}",
            data,
        )

    def server_closed(self, event: ServerClosedEvent) -> None:
        if not self._enabled():
            return
        data: dict[str, Any] = {
            "message": STOPPED_SERVER_MONITORING,
            "topologyId": event.topology_id,
        }
        server = server_fields(data, event.address)
        self._emit(
            f"Stopped monitoring for server {server} in topology with ID {event.topology_id}",
            data,
        )

    # --- heartbeats ------------------------------------------------------------------

    def _heartbeat(self, message: str, event: _HeartbeatEvent) -> tuple[dict[str, Any], str]:
        data = self._data(message)
        server = server_fields(data, event.address)
        driver_id, server_id = event.driver_connection_id, event.server_connection_id
        data["driverConnectionId"] = driver_id
        on = f"{server} on connection with driver-generated ID {driver_id}"
        if server_id is not None:
            data["serverConnectionId"] = server_id
            on += f" and server-generated ID {server_id}"
        data["awaited"] = event.awaited
        return data, f"{on} in topology with ID {self.topology_id}. Awaited: {event.awaited}"

    def heartbeat_started(self, event: ServerHeartbeatStartedEvent) -> None:
        if not self._enabled():
            return
        data, text = self._heartbeat(SERVER_HEARTBEAT_STARTED, event)
        self._emit(f"Heartbeat started for {text}", data)

    def heartbeat_succeeded(self, event: ServerHeartbeatSucceededEvent) -> None:
        if not self._enabled():
            return
        data, text = self._heartbeat(SERVER_HEARTBEAT_SUCCEEDED, event)
        duration = duration_ms(event.duration)
        reply = document_json(event.reply, self.max_document_length)
        data["durationMS"] = duration
        data["reply"] = reply
        self._emit(f"Heartbeat succeeded in {duration} ms for {text}. Reply: {reply}", data)

    def heartbeat_failed(self, event: ServerHeartbeatFailedEvent) -> None:
        if not self._enabled():
            return
        data, text = self._heartbeat(SERVER_HEARTBEAT_FAILED, event)
        duration = duration_ms(event.duration)
        failure = failure_text(event.failure, self.max_document_length)
        data["durationMS"] = duration
        data["failure"] = failure
        self._emit(f"Heartbeat failed in {duration} ms for {text}. Failure: {failure}", data)


def topology_log_listeners(logger: Optional[logging.Logger] = None) -> list[Listener]:
    """A new TopologyLogger's listeners if ``logger`` (by default :data:`TOPOLOGY_LOGGER`)
    is enabled for DEBUG now, else none: a client with logging off pays nothing."""
    target = TopologyLogger.enabled_logger(logger)
    return [] if target is None else TopologyLogger(logger=target).listeners()


# --- adapters: the listener interfaces share method names -------------------------------


class _TopologyEvents(TopologyListener):
    def __init__(self, owner: TopologyLogger) -> None:
        self._owner = owner

    def opened(self, event: TopologyOpeningEvent) -> None:
        self._owner.topology_opened(event)

    def description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        self._owner.topology_description_changed(event)

    def closed(self, event: TopologyClosedEvent) -> None:
        self._owner.topology_closed(event)


class _ServerEvents(ServerListener):
    def __init__(self, owner: TopologyLogger) -> None:
        self._owner = owner

    def opened(self, event: ServerOpeningEvent) -> None:
        self._owner.server_opened(event)

    def closed(self, event: ServerClosedEvent) -> None:
        self._owner.server_closed(event)


class _HeartbeatEvents(ServerHeartbeatListener):
    def __init__(self, owner: TopologyLogger) -> None:
        self._owner = owner

    def started(self, event: ServerHeartbeatStartedEvent) -> None:
        self._owner.heartbeat_started(event)

    def succeeded(self, event: ServerHeartbeatSucceededEvent) -> None:
        self._owner.heartbeat_succeeded(event)

    def failed(self, event: ServerHeartbeatFailedEvent) -> None:
        self._owner.heartbeat_failed(event)
