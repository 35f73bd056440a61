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

What every component's messages share lives here too (the structured form
attribute, the max document length, truncation, the text of an error, the server
fields, durations): :mod:`mongocore.io.selection_log` (``serverSelection``) and
:mod:`mongocore.io.pool_log` (``connection``) use it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Optional, Union

from bson import json_util

from mongocore.core.address import Address
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
from mongocore.errors import MongoCoreError, OperationFailure

#: The logging spec's component of these messages, and the logger that carries it.
COMPONENT = "topology"
TOPOLOGY_LOGGER = "mongocore.topology"
#: The LogRecord attribute holding the structured form of a message (a dict).
DATA_ATTRIBUTE = "mongocore_data"
#: "The default max length is 1000" (logging.md); the unit is the Unicode code point.
DEFAULT_MAX_DOCUMENT_LENGTH = 1000
#: Environment variables read for the max document length, first found wins. The
#: spec's text spells its variable MONGOB_...; the MONGODB_... spelling is read first.
MAX_DOCUMENT_LENGTH_VARIABLES = (
    "MONGODB_LOG_MAX_DOCUMENT_LENGTH",
    "MONGOB_LOG_MAX_DOCUMENT_LENGTH",
)

# The "message" value of each log message.
STARTING_TOPOLOGY_MONITORING = "Starting topology monitoring"
STOPPED_TOPOLOGY_MONITORING = "Stopped topology monitoring"
STARTING_SERVER_MONITORING = "Starting server monitoring"
STOPPED_SERVER_MONITORING = "Stopped server monitoring"
TOPOLOGY_DESCRIPTION_CHANGED = "Topology description changed"
SERVER_HEARTBEAT_STARTED = "Server heartbeat started"
SERVER_HEARTBEAT_SUCCEEDED = "Server heartbeat succeeded"
SERVER_HEARTBEAT_FAILED = "Server heartbeat failed"

_ELLIPSIS = "..."

_HeartbeatEvent = Union[
    ServerHeartbeatStartedEvent, ServerHeartbeatSucceededEvent, ServerHeartbeatFailedEvent
]

#: The max document length set by set_max_document_length(), if any.
_max_document_length: Optional[int] = None


def structured_data(record: logging.LogRecord) -> Optional[dict[str, Any]]:
    """The structured form of a record emitted by this module (None for other records)."""
    data = getattr(record, DATA_ATTRIBUTE, None)
    return data if isinstance(data, dict) else None


def max_document_length_from_environment(
    environ: Optional[Mapping[str, str]] = None,
) -> int:
    """The max document length the environment asks for, or the default.

    An invalid value (not an integer, or negative) counts as unset, as the spec requires;
    it is reported with a warning on this module's logger, never raised.
    """
    env = os.environ if environ is None else environ
    for name in MAX_DOCUMENT_LENGTH_VARIABLES:
        raw = env.get(name)
        if raw is None:
            continue
        try:
            value = int(raw.strip())
        except ValueError:
            value = -1
        if value >= 0:
            return value
        logging.getLogger(TOPOLOGY_LOGGER).warning(
            "ignoring %s=%r: the max document length must be a non-negative integer", name, raw
        )
    return DEFAULT_MAX_DOCUMENT_LENGTH


def set_max_document_length(length: Optional[int]) -> Optional[int]:
    """Set the max document length of clients created from now on; returns the previous
    setting. None goes back to the environment variable (or the default). This setting
    takes precedence over the environment, as the logging spec requires."""
    global _max_document_length
    if length is not None and (
        not isinstance(length, int) or isinstance(length, bool) or length < 0
    ):
        raise ValueError(f"the max document length must be a non-negative integer, not {length!r}")
    previous, _max_document_length = _max_document_length, length
    return previous


def current_max_document_length() -> int:
    """The max document length a client created now uses."""
    if _max_document_length is not None:
        return _max_document_length
    return max_document_length_from_environment()


def truncate(text: str, max_length: int) -> str:
    """Cut ``text`` to ``max_length`` code points, plus "..." if anything was cut.

    Naive on purpose (logging.md): the result need not be valid JSON any more.
    """
    if len(text) <= max_length:
        return text
    return text[:max_length] + _ELLIPSIS


def document_json(document: Mapping[str, Any], max_length: int) -> str:
    """A document as relaxed extended JSON, truncated to ``max_length``."""
    text = json_util.dumps(_plain(document), json_options=json_util.RELAXED_JSON_OPTIONS)
    return truncate(text, max_length)


def _plain(value: Any) -> Any:
    # json_util serializes dicts and lists; replies may hold other Mappings/Sequences.
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def failure_text(error: BaseException, max_length: int) -> str:
    """How a heartbeat's error appears in a log message ("Representing Errors").

    The error's class and message, its labels if it has any, and for a server error
    the server's response as extended JSON, truncated to ``max_length``. Heartbeats
    are never sensitive (monitoring connections do not authenticate), so nothing is
    redacted.
    """
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, MongoCoreError) and error.error_labels:
        text += f" (error labels: {', '.join(sorted(error.error_labels))})"
    if isinstance(error, OperationFailure) and error.details:
        text += f" Server response: {document_json(error.details, max_length)}"
    return text


def duration_ms(seconds: float) -> float:
    """A duration in seconds as the ``durationMS`` of a log message."""
    return round(seconds * 1000.0, 3)


def server_fields(data: dict[str, Any], address: Address) -> str:
    """Add ``serverHost`` and ``serverPort`` (no port for a Unix socket) to a message's
    structured form; returns the server as the unstructured text shows it."""
    data["serverHost"] = address.host
    if address.port is not None:
        data["serverPort"] = address.port
        return f"{address.host}:{address.port}"
    return address.host


class TopologyLogger:
    """Emits the SDAM log messages for one client's topology.

    Feed it the client's events through :meth:`listeners`. ``topologyId`` is the
    topology id the events carry (an ObjectId, one per client).

    ``driverConnectionId`` and ``serverConnectionId`` come from the heartbeat
    events: the monitor numbers its monitoring connections per server (1, 2, ...; they
    are not pool connections), and the server's id is the ``connectionId`` of the
    connection's handshake reply, absent when the check opens a new connection.
    """

    def __init__(
        self,
        *,
        logger: Optional[logging.Logger] = None,
        max_document_length: Optional[int] = None,
    ) -> None:
        self.logger = logger if logger is not None else logging.getLogger(TOPOLOGY_LOGGER)
        self.max_document_length = (
            current_max_document_length() if max_document_length is None else max_document_length
        )
        self.topology_id: Optional[object] = None

    def listeners(self) -> list[Listener]:
        """The listeners to register with the client's EventPublisher."""
        return [_TopologyEvents(self), _ServerEvents(self), _HeartbeatEvents(self)]

    # --- emitting --------------------------------------------------------------------

    def _enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.DEBUG)

    def _emit(self, text: str, data: dict[str, Any]) -> None:
        self.logger.debug(text, extra={DATA_ATTRIBUTE: data})

    @staticmethod
    def _server_fields(data: dict[str, Any], address: Address) -> str:
        return server_fields(data, address)

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
        server = self._server_fields(data, event.address)
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
        server = self._server_fields(data, event.address)
        self._emit(
            f"Stopped monitoring for server {server} in topology with ID {event.topology_id}",
            data,
        )

    # --- heartbeats ------------------------------------------------------------------

    def _heartbeat(self, message: str, event: _HeartbeatEvent) -> tuple[dict[str, Any], str]:
        data: dict[str, Any] = {"message": message, "topologyId": self.topology_id}
        server = self._server_fields(data, event.address)
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
    target = logger if logger is not None else logging.getLogger(TOPOLOGY_LOGGER)
    if not target.isEnabledFor(logging.DEBUG):
        return []
    return TopologyLogger(logger=target).listeners()


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
