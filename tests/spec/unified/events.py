"""Unified test format: observing a client's events (``observeEvents``,
``ignoreCommandMonitoringEvents``, ``observeSensitiveCommands``) and matching them
against ``expectedEvent`` documents ("expectedCommandEvent", "expectedCmapEvent",
"expectedSdamEvent", "hasServiceId", "hasServerConnectionId"), and capturing a client's
log messages (``observeLogMessages``) to match them against ``expectLogMessages``
("expectedLogMessagesForClient", "expectedLogMessage").

One :class:`EventLog` per client entity receives every event of the client (through
one small listener per event family, since the listener interfaces of
``mongocore.core.events`` share method names) and keeps, under one condition, the events
the entity observes, each as an :class:`Observed` with the document the format's
assertions are evaluated against. ``waitForEvent`` waits on that condition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

from bson import ObjectId

from mongocore.core import events as ev
from mongocore.io import command_log, log_messages, pool_log, selection_log
from mongocore.io.command_monitoring import is_sensitive
from tests.spec.unified.matching import EntityLookup, match

#: The format's name of each event class, and its family (``eventType``).
EVENT_NAMES: dict[type, tuple[str, str]] = {
    ev.CommandStartedEvent: ("commandStartedEvent", "command"),
    ev.CommandSucceededEvent: ("commandSucceededEvent", "command"),
    ev.CommandFailedEvent: ("commandFailedEvent", "command"),
    ev.PoolCreatedEvent: ("poolCreatedEvent", "cmap"),
    ev.PoolReadyEvent: ("poolReadyEvent", "cmap"),
    ev.PoolClearedEvent: ("poolClearedEvent", "cmap"),
    ev.PoolClosedEvent: ("poolClosedEvent", "cmap"),
    ev.ConnectionCreatedEvent: ("connectionCreatedEvent", "cmap"),
    ev.ConnectionReadyEvent: ("connectionReadyEvent", "cmap"),
    ev.ConnectionClosedEvent: ("connectionClosedEvent", "cmap"),
    ev.ConnectionCheckOutStartedEvent: ("connectionCheckOutStartedEvent", "cmap"),
    ev.ConnectionCheckOutFailedEvent: ("connectionCheckOutFailedEvent", "cmap"),
    ev.ConnectionCheckedOutEvent: ("connectionCheckedOutEvent", "cmap"),
    ev.ConnectionCheckedInEvent: ("connectionCheckedInEvent", "cmap"),
    ev.ServerDescriptionChangedEvent: ("serverDescriptionChangedEvent", "sdam"),
    ev.TopologyDescriptionChangedEvent: ("topologyDescriptionChangedEvent", "sdam"),
    ev.TopologyOpeningEvent: ("topologyOpeningEvent", "sdam"),
    ev.TopologyClosedEvent: ("topologyClosedEvent", "sdam"),
    ev.ServerOpeningEvent: ("serverOpeningEvent", "sdam"),
    ev.ServerClosedEvent: ("serverClosedEvent", "sdam"),
    ev.ServerHeartbeatStartedEvent: ("serverHeartbeatStartedEvent", "sdam"),
    ev.ServerHeartbeatSucceededEvent: ("serverHeartbeatSucceededEvent", "sdam"),
    ev.ServerHeartbeatFailedEvent: ("serverHeartbeatFailedEvent", "sdam"),
}
KNOWN_EVENT_NAMES = frozenset(name for name, _ in EVENT_NAMES.values())
FAMILY_OF = {name: family for name, family in EVENT_NAMES.values()}

#: Keys of an expected event matched as root-level documents (extra fields allowed).
_ROOT_FIELDS = frozenset({"command", "reply", "previousDescription", "newDescription"})


@dataclass(frozen=True)
class Observed:
    """One observed event: the format's name, its family, the fields assertions read."""

    name: str
    family: str
    document: dict[str, Any]
    raw: object


def _has_service_id(service_id: Optional[object]) -> bool:
    if service_id is None:
        return False
    if isinstance(service_id, ObjectId):
        return service_id.binary != b"\x00" * 12
    return True


def _has_server_connection_id(value: Optional[int]) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def describe(event: object) -> Observed:
    """The document the format's expectedEvent assertions are evaluated against."""
    name, family = EVENT_NAMES[type(event)]
    doc: dict[str, Any] = {}
    if isinstance(event, (ev.CommandStartedEvent, ev.CommandSucceededEvent, ev.CommandFailedEvent)):
        doc["commandName"] = event.command_name
        doc["databaseName"] = event.database_name
        doc["hasServiceId"] = _has_service_id(event.service_id)
        doc["hasServerConnectionId"] = _has_server_connection_id(event.server_connection_id)
        if isinstance(event, ev.CommandStartedEvent):
            doc["command"] = dict(event.command)
        elif isinstance(event, ev.CommandSucceededEvent):
            doc["reply"] = dict(event.reply)
    elif isinstance(event, ev.PoolClearedEvent):
        doc["hasServiceId"] = _has_service_id(event.service_id)
        doc["interruptInUseConnections"] = event.interrupt_in_use_connections
    elif isinstance(event, (ev.ConnectionClosedEvent, ev.ConnectionCheckOutFailedEvent)):
        doc["reason"] = event.reason
    elif isinstance(event, (ev.ServerDescriptionChangedEvent, ev.TopologyDescriptionChangedEvent)):
        doc["previousDescription"] = {"type": str(event.previous_description.type)}
        doc["newDescription"] = {"type": str(event.new_description.type)}
    elif isinstance(
        event,
        (
            ev.ServerHeartbeatStartedEvent,
            ev.ServerHeartbeatSucceededEvent,
            ev.ServerHeartbeatFailedEvent,
        ),
    ):
        doc["awaited"] = event.awaited
    return Observed(name, family, doc, event)


def event_matches(
    expected: Mapping[str, Any], observed: Observed, entities: Optional[EntityLookup] = None
) -> Optional[str]:
    """None if ``observed`` satisfies the expectedEvent, else why not."""
    if len(expected) != 1:
        raise ValueError(f"an expectedEvent has exactly one key: {dict(expected)!r}")
    name, fields = next(iter(expected.items()))
    if name not in KNOWN_EVENT_NAMES:
        raise ValueError(f"unknown event type {name!r}")
    if name != observed.name:
        return f"expected {name}, observed {observed.name} {observed.document!r}"
    for key, value in (fields or {}).items():
        if key not in observed.document:
            raise ValueError(f"the runner cannot assert {name}.{key}")
        try:
            match(
                value,
                observed.document[key],
                entities,
                root=key in _ROOT_FIELDS,
                path=f"{name}.{key}",
            )
        except AssertionError as exc:
            return str(exc)
    return None


class EventLog:
    """The events one client entity observes, in order, under a condition."""

    def __init__(
        self,
        observe: Iterable[str] = (),
        *,
        ignore_commands: Iterable[str] = (),
        observe_sensitive: bool = False,
    ) -> None:
        self.cond = threading.Condition()
        self.observe = frozenset(observe)
        unknown = self.observe - KNOWN_EVENT_NAMES
        if unknown:
            raise ValueError(f"observeEvents names unknown events: {sorted(unknown)}")
        self.ignore_commands = frozenset(ignore_commands) | {"configureFailPoint"}
        self.observe_sensitive = observe_sensitive
        self.events: list[Observed] = []
        #: Every command started event sent (configureFailPoint aside), observed or not.
        self.commands_sent: list[ev.CommandStartedEvent] = []
        self.checked_out = 0
        self.changes = 0  # bumped on every event: waiters on the topology wake up
        self._ignored_requests: set[int] = set()
        self._hooks: list[Callable[[ev.CommandStartedEvent], None]] = []
        self._frozen = False

    # --- listeners ---------------------------------------------------------------------

    def listeners(self) -> list[ev.Listener]:
        return [
            _CommandListener(self),
            _PoolListener(self),
            _TopologyListener(self),
            _ServerListener(self),
            _HeartbeatListener(self),
        ]

    def on_command_started(self, hook: Callable[[ev.CommandStartedEvent], None]) -> None:
        """Call ``hook`` (on the operation's thread) before each command is sent."""
        self._hooks.append(hook)

    def freeze(self) -> None:
        """The test's operations are over: later events are not observed."""
        with self.cond:
            self._frozen = True

    def add(self, event: object) -> None:
        if isinstance(event, ev.CommandStartedEvent) and event.command_name != "configureFailPoint":
            for hook in list(self._hooks):
                hook(event)
        with self.cond:
            if self._frozen:
                return
            self.changes += 1
            if isinstance(event, ev.ConnectionCheckedOutEvent):
                self.checked_out += 1
            elif isinstance(event, ev.ConnectionCheckedInEvent):
                self.checked_out -= 1
            if isinstance(
                event, (ev.CommandStartedEvent, ev.CommandSucceededEvent, ev.CommandFailedEvent)
            ) and self._ignored(event):
                self.cond.notify_all()
                return
            if isinstance(event, ev.CommandStartedEvent):
                self.commands_sent.append(event)
            observed = describe(event)
            if observed.name in self.observe:
                self.events.append(observed)
            self.cond.notify_all()

    def _ignored(self, event: Any) -> bool:
        request_id = event.request_id
        if request_id in self._ignored_requests:
            if not isinstance(event, ev.CommandStartedEvent):
                self._ignored_requests.discard(request_id)
            return True
        name = event.command_name
        ignore = name in self.ignore_commands
        if not ignore and not self.observe_sensitive:
            if isinstance(event, ev.CommandStartedEvent):
                # mongocore redacts sensitive commands (an empty document).
                ignore = is_sensitive(name, event.command) or (
                    name.lower() in ("hello", "ismaster") and not event.command
                )
            else:
                ignore = is_sensitive(name, {})
        if ignore and isinstance(event, ev.CommandStartedEvent):
            self._ignored_requests.add(request_id)
        return ignore

    # --- queries -----------------------------------------------------------------------

    def of_family(self, family: str) -> list[Observed]:
        with self.cond:
            return [e for e in self.events if e.family == family]

    def count(self, expected: Mapping[str, Any], entities: Optional[EntityLookup] = None) -> int:
        with self.cond:
            snapshot = list(self.events)
        return sum(1 for o in snapshot if event_matches(expected, o, entities) is None)

    def wait_for(
        self,
        expected: Mapping[str, Any],
        count: int,
        timeout: float,
        entities: Optional[EntityLookup] = None,
    ) -> int:
        """Wait until ``count`` observed events match; returns how many matched."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                seen = sum(1 for o in self.events if event_matches(expected, o, entities) is None)
                remaining = deadline - time.monotonic()
                if seen >= count or remaining <= 0:
                    return seen
                self.cond.wait(remaining)

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait (woken by every event of the client) until ``predicate()`` holds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                if predicate():
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.cond.wait(min(remaining, 0.5))


def assert_events(
    expected: Sequence[Mapping[str, Any]],
    observed: Sequence[Observed],
    *,
    ignore_extra: bool,
    entities: Optional[EntityLookup] = None,
    label: str = "",
) -> None:
    """expectedEventsForClient: the same events, in order (extra ones only if allowed)."""
    shown = "\n  ".join(f"{o.name} {o.document!r}" for o in observed)
    if len(observed) < len(expected) or (len(observed) > len(expected) and not ignore_extra):
        raise AssertionError(
            f"{label}: expected {len(expected)} events, observed {len(observed)}:\n  {shown}"
        )
    for index, (want, got) in enumerate(zip(expected, observed)):
        why = event_matches(want, got, entities)
        if why is not None:
            raise AssertionError(f"{label}: event {index}: {why}\nobserved:\n  {shown}")


# --- one listener per family (their method names overlap) ------------------------------


class _CommandListener(ev.CommandListener):
    def __init__(self, log: EventLog) -> None:
        self._log = log

    def started(self, event: ev.CommandStartedEvent) -> None:
        self._log.add(event)

    def succeeded(self, event: ev.CommandSucceededEvent) -> None:
        self._log.add(event)

    def failed(self, event: ev.CommandFailedEvent) -> None:
        self._log.add(event)


class _PoolListener(ev.ConnectionPoolListener):
    def __init__(self, log: EventLog) -> None:
        self._log = log

    def pool_created(self, event: ev.PoolCreatedEvent) -> None:
        self._log.add(event)

    def pool_ready(self, event: ev.PoolReadyEvent) -> None:
        self._log.add(event)

    def pool_cleared(self, event: ev.PoolClearedEvent) -> None:
        self._log.add(event)

    def pool_closed(self, event: ev.PoolClosedEvent) -> None:
        self._log.add(event)

    def connection_created(self, event: ev.ConnectionCreatedEvent) -> None:
        self._log.add(event)

    def connection_ready(self, event: ev.ConnectionReadyEvent) -> None:
        self._log.add(event)

    def connection_closed(self, event: ev.ConnectionClosedEvent) -> None:
        self._log.add(event)

    def connection_check_out_started(self, event: ev.ConnectionCheckOutStartedEvent) -> None:
        self._log.add(event)

    def connection_check_out_failed(self, event: ev.ConnectionCheckOutFailedEvent) -> None:
        self._log.add(event)

    def connection_checked_out(self, event: ev.ConnectionCheckedOutEvent) -> None:
        self._log.add(event)

    def connection_checked_in(self, event: ev.ConnectionCheckedInEvent) -> None:
        self._log.add(event)


class _TopologyListener(ev.TopologyListener):
    def __init__(self, log: EventLog) -> None:
        self._log = log

    def opened(self, event: ev.TopologyOpeningEvent) -> None:
        self._log.add(event)

    def description_changed(self, event: ev.TopologyDescriptionChangedEvent) -> None:
        self._log.add(event)

    def closed(self, event: ev.TopologyClosedEvent) -> None:
        self._log.add(event)


class _ServerListener(ev.ServerListener):
    def __init__(self, log: EventLog) -> None:
        self._log = log

    def opened(self, event: ev.ServerOpeningEvent) -> None:
        self._log.add(event)

    def description_changed(self, event: ev.ServerDescriptionChangedEvent) -> None:
        self._log.add(event)

    def closed(self, event: ev.ServerClosedEvent) -> None:
        self._log.add(event)


class _HeartbeatListener(ev.ServerHeartbeatListener):
    def __init__(self, log: EventLog) -> None:
        self._log = log

    def started(self, event: ev.ServerHeartbeatStartedEvent) -> None:
        self._log.add(event)

    def succeeded(self, event: ev.ServerHeartbeatSucceededEvent) -> None:
        self._log.add(event)

    def failed(self, event: ev.ServerHeartbeatFailedEvent) -> None:
        self._log.add(event)


# --- log messages (observeLogMessages, expectLogMessages) --------------------------------

#: The logging spec's severity levels as Python's ("Log Severity Levels": a level Python
#: lacks is the closest less severe one it has, else the closest more severe one).
LOG_LEVELS: dict[str, int] = {
    "emergency": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warn": logging.WARNING,
    "notice": logging.INFO,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": logging.DEBUG,
}
#: The components mongocore emits the spec's structured messages for, and their loggers.
LOG_COMPONENTS: dict[str, str] = {
    log_messages.COMPONENT: log_messages.TOPOLOGY_LOGGER,
    selection_log.COMPONENT: selection_log.SERVER_SELECTION_LOGGER,
    pool_log.COMPONENT: pool_log.CONNECTION_LOGGER,
    command_log.COMPONENT: command_log.COMMAND_LOGGER,
}


@dataclass(frozen=True)
class LogMessage:
    """One captured log message: Python level, the spec's component, structured data."""

    level: int
    component: str
    data: dict[str, Any]


class LogCapture(logging.Handler):
    """The log messages one client entity observes (``observeLogMessages``).

    Attached to the components' loggers before the client exists (its first messages,
    "Starting topology monitoring" and "Connection pool created", are emitted while it
    is created), it keeps every structured record at or above each component's level;
    :meth:`messages` returns those of the client's topology (every mongocore message
    carries its ``topologyId``), whose id :attr:`topology_id` is set once the client
    exists. The loggers' levels are lowered as needed while attached and put
    back by :meth:`detach`.
    """

    def __init__(self, observe: Mapping[str, str]) -> None:
        super().__init__(logging.DEBUG)
        self.thresholds: dict[str, int] = {}
        for component, level in observe.items():
            if component not in LOG_COMPONENTS:
                raise ValueError(f"no structured log messages for component {component!r}")
            if str(level).lower() == "off":
                continue
            if str(level).lower() not in LOG_LEVELS:
                raise ValueError(f"unknown log severity level {level!r}")
            self.thresholds[component] = LOG_LEVELS[str(level).lower()]
        self.topology_id: Optional[object] = None
        self._captured: list[LogMessage] = []
        self._guard = threading.Lock()
        self._frozen = False
        self._restore: list[tuple[logging.Logger, int]] = []

    def attach(self) -> None:
        for component, threshold in self.thresholds.items():
            logger = logging.getLogger(LOG_COMPONENTS[component])
            self._restore.append((logger, logger.level))
            if logger.getEffectiveLevel() > threshold:
                logger.setLevel(threshold)
            logger.addHandler(self)

    def detach(self) -> None:
        """Stop capturing and put the loggers' levels back (captures detach in reverse)."""
        for logger, level in reversed(self._restore):
            logger.removeHandler(self)
            logger.setLevel(level)
        self._restore.clear()

    def freeze(self) -> None:
        """The test's operations are over: later messages are not observed."""
        with self._guard:
            self._frozen = True

    def emit(self, record: logging.LogRecord) -> None:
        data = log_messages.structured_data(record)
        if data is None:
            return
        component = next((c for c, name in LOG_COMPONENTS.items() if record.name == name), None)
        if component is None or record.levelno < self.thresholds.get(
            component, logging.CRITICAL + 1
        ):
            return
        with self._guard:
            if not self._frozen:
                self._captured.append(LogMessage(record.levelno, component, dict(data)))

    def messages(self) -> list[LogMessage]:
        with self._guard:
            return [m for m in self._captured if m.data.get("topologyId") == self.topology_id]


def log_message_matches(
    expected: Mapping[str, Any], actual: LogMessage, entities: Optional[EntityLookup] = None
) -> Optional[str]:
    """None if ``actual`` satisfies the expectedLogMessage, else why not."""
    unknown = set(expected) - {"level", "component", "data", "failureIsRedacted"}
    if unknown:
        raise ValueError(f"unknown expectedLogMessage fields {sorted(unknown)}")
    level = str(expected["level"]).lower()
    if level not in LOG_LEVELS:
        raise ValueError(f"unknown log severity level {expected['level']!r}")
    if LOG_LEVELS[level] != actual.level:
        return f"expected level {level}, got {logging.getLevelName(actual.level)}"
    if expected["component"] != actual.component:
        return f"expected component {expected['component']}, got {actual.component}"
    if "failureIsRedacted" in expected:
        failure = actual.data.get("failure")
        if failure is None:
            return "expected a failure"
        # mongocore represents a redacted failure as an empty string.
        if bool(expected["failureIsRedacted"]) != (failure == ""):
            return f"expected the failure {'' if expected['failureIsRedacted'] else 'not '}redacted"
    try:
        match(expected["data"], actual.data, entities, root=True, path="data")
    except AssertionError as exc:
        return str(exc)
    return None


def assert_log_messages(
    expected: Mapping[str, Any],
    observed: Sequence[LogMessage],
    *,
    entities: Optional[EntityLookup] = None,
    label: str = "",
) -> None:
    """expectedLogMessagesForClient: ``ignoreMessages`` are dropped first, then the
    ``messages`` must match in order, extra ones only with ``ignoreExtraMessages``."""
    unknown = set(expected) - {"client", "messages", "ignoreMessages", "ignoreExtraMessages"}
    if unknown:
        raise ValueError(f"unknown expectedLogMessagesForClient fields {sorted(unknown)}")
    ignore = list(expected.get("ignoreMessages", []))
    relevant = [
        m
        for m in observed
        if not any(log_message_matches(pattern, m, entities) is None for pattern in ignore)
    ]
    wanted = list(expected["messages"])
    shown = "\n  ".join(
        f"{logging.getLevelName(m.level)} {m.component} {m.data!r}" for m in relevant
    )
    too_many = len(relevant) > len(wanted) and not expected.get("ignoreExtraMessages", False)
    if len(relevant) < len(wanted) or too_many:
        raise AssertionError(
            f"{label}: expected {len(wanted)} log messages, observed {len(relevant)}:\n  {shown}"
        )
    for index, (want, got) in enumerate(zip(wanted, relevant)):
        why = log_message_matches(want, got, entities)
        if why is not None:
            raise AssertionError(f"{label}: log message {index}: {why}\nobserved:\n  {shown}")
