"""Event types and listener interfaces.

Shaped like the specs' events: SDAM monitoring (topology and server events,
server heartbeats), command monitoring, and connection pool (CMAP) events. Each
family has a listener base class whose methods do nothing; subclass it and
override what you need, then pass instances to the client's ``event_listeners``.

Listeners are called synchronously on the thread that caused the event. An
exception raised by a listener is logged and swallowed: a broken listener must
never break monitoring or an operation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, Union

from mongocore._deferred_dataclass import dataclass, field
from mongocore.core.address import Address
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import Transition
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.lazy_logger import get_logger

if TYPE_CHECKING:
    from mongocore.core.description.server import ServerDescription

_log = get_logger("mongocore.events")


def _pymongo_name(field_name: str) -> Any:
    """A read-only attribute under pymongo's name for the field ``field_name``: the
    events keep the specifications' names, and listeners written for pymongo's
    events read theirs (docs/from-pymongo.md, "Monitoring")."""
    return property(
        lambda event: getattr(event, field_name), doc=f"pymongo's name for {field_name}"
    )


#: pymongo's form of a command event's ``duration`` (seconds): whole microseconds.
_DURATION_MICROS: Any = property(
    lambda event: int(event.duration * 1_000_000),
    doc="pymongo's form of duration (seconds): whole microseconds",
)


# --- SDAM: topology and server events -------------------------------------


@dataclass(frozen=True)
class TopologyOpeningEvent:
    topology_id: object


@dataclass(frozen=True)
class TopologyClosedEvent:
    topology_id: object


@dataclass(frozen=True)
class TopologyDescriptionChangedEvent:
    topology_id: object
    previous_description: TopologyDescription
    new_description: TopologyDescription


@dataclass(frozen=True)
class ServerOpeningEvent:
    topology_id: object
    address: Address

    server_address = _pymongo_name("address")


@dataclass(frozen=True)
class ServerClosedEvent:
    topology_id: object
    address: Address

    server_address = _pymongo_name("address")


@dataclass(frozen=True)
class ServerDescriptionChangedEvent:
    topology_id: object
    address: Address
    previous_description: ServerDescription
    new_description: ServerDescription

    server_address = _pymongo_name("address")


SdamEvent = Union[
    TopologyOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    ServerOpeningEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
]

# --- SDAM: server heartbeats -------------------------------------------------


@dataclass(frozen=True)
class ServerHeartbeatStartedEvent:
    address: Address
    awaited: bool
    #: The monitoring connection's id (mongocore numbers them per server from 1) and
    #: the server's id for it (its hello's connectionId; None until known).
    driver_connection_id: int = 0
    server_connection_id: Optional[int] = None

    #: pymongo's ``connection_id`` of a heartbeat is the server's address.
    connection_id = _pymongo_name("address")


@dataclass(frozen=True)
class ServerHeartbeatSucceededEvent:
    address: Address
    duration: float
    reply: Mapping[str, Any]
    awaited: bool
    #: As in ServerHeartbeatStartedEvent.
    driver_connection_id: int = 0
    server_connection_id: Optional[int] = None

    connection_id = _pymongo_name("address")


@dataclass(frozen=True)
class ServerHeartbeatFailedEvent:
    address: Address
    duration: float
    failure: BaseException
    awaited: bool
    #: As in ServerHeartbeatStartedEvent.
    driver_connection_id: int = 0
    server_connection_id: Optional[int] = None

    connection_id = _pymongo_name("address")
    #: pymongo's ``reply`` of a failed heartbeat is the error.
    reply = _pymongo_name("failure")


# --- command monitoring ------------------------------------------------------


@dataclass(frozen=True)
class CommandStartedEvent:
    command: Mapping[str, Any]
    database_name: str
    command_name: str
    request_id: int
    operation_id: int
    address: Address
    connection_id: int
    server_connection_id: Optional[int] = None
    service_id: Optional[object] = None


@dataclass(frozen=True)
class CommandSucceededEvent:
    duration: float
    reply: Mapping[str, Any]
    database_name: str
    command_name: str
    request_id: int
    operation_id: int
    address: Address
    connection_id: int
    server_connection_id: Optional[int] = None
    service_id: Optional[object] = None

    duration_micros = _DURATION_MICROS


@dataclass(frozen=True)
class CommandFailedEvent:
    duration: float
    failure: BaseException
    database_name: str
    command_name: str
    request_id: int
    operation_id: int
    address: Address
    connection_id: int
    server_connection_id: Optional[int] = None
    service_id: Optional[object] = None

    duration_micros = _DURATION_MICROS


# --- connection pool (CMAP) ----------------------------------------------------


@dataclass(frozen=True)
class PoolCreatedEvent:
    address: Address
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PoolReadyEvent:
    address: Address


@dataclass(frozen=True)
class PoolClearedEvent:
    address: Address
    service_id: Optional[object] = None
    interrupt_in_use_connections: bool = False

    interrupt_connections = _pymongo_name("interrupt_in_use_connections")


@dataclass(frozen=True)
class PoolClosedEvent:
    address: Address


@dataclass(frozen=True)
class ConnectionCreatedEvent:
    address: Address
    connection_id: int


@dataclass(frozen=True)
class ConnectionReadyEvent:
    address: Address
    connection_id: int
    duration: float


@dataclass(frozen=True)
class ConnectionClosedEvent:
    address: Address
    connection_id: int
    reason: str  # "stale", "idle", "error", "poolClosed"
    #: With reason "error", the error, when the pool knows it (establishing failed).
    error: Optional[BaseException] = None


@dataclass(frozen=True)
class ConnectionCheckOutStartedEvent:
    address: Address


@dataclass(frozen=True)
class ConnectionCheckOutFailedEvent:
    address: Address
    reason: str  # "poolClosed", "timeout", "connectionError"
    duration: float
    #: With reason "connectionError", the error the checkOut raises.
    error: Optional[BaseException] = None

    @property
    def connection_id(self) -> int:
        """pymongo's: always 0 (no connection was checked out)."""
        return 0


@dataclass(frozen=True)
class ConnectionCheckedOutEvent:
    address: Address
    connection_id: int
    duration: float


@dataclass(frozen=True)
class ConnectionCheckedInEvent:
    address: Address
    connection_id: int


# --- listener interfaces -----------------------------------------------------


class TopologyListener:
    def opened(self, event: TopologyOpeningEvent) -> None:
        """The client opened a topology."""

    def description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        """The TopologyDescription was replaced by a different one."""

    def closed(self, event: TopologyClosedEvent) -> None:
        """The topology was closed."""


class ServerListener:
    def opened(self, event: ServerOpeningEvent) -> None:
        """A server was added to the topology and monitoring began."""

    def description_changed(self, event: ServerDescriptionChangedEvent) -> None:
        """A server's description changed (by the spec's equality rule)."""

    def closed(self, event: ServerClosedEvent) -> None:
        """A server was removed from the topology."""


class ServerHeartbeatListener:
    def started(self, event: ServerHeartbeatStartedEvent) -> None:
        """A monitor is about to check a server."""

    def succeeded(self, event: ServerHeartbeatSucceededEvent) -> None:
        """A check succeeded."""

    def failed(self, event: ServerHeartbeatFailedEvent) -> None:
        """A check failed."""


class CommandListener:
    def started(self, event: CommandStartedEvent) -> None:
        """A command is about to be sent."""

    def succeeded(self, event: CommandSucceededEvent) -> None:
        """A command succeeded."""

    def failed(self, event: CommandFailedEvent) -> None:
        """A command failed."""


class ConnectionPoolListener:
    def pool_created(self, event: PoolCreatedEvent) -> None: ...
    def pool_ready(self, event: PoolReadyEvent) -> None: ...
    def pool_cleared(self, event: PoolClearedEvent) -> None: ...
    def pool_closed(self, event: PoolClosedEvent) -> None: ...
    def connection_created(self, event: ConnectionCreatedEvent) -> None: ...
    def connection_ready(self, event: ConnectionReadyEvent) -> None: ...
    def connection_closed(self, event: ConnectionClosedEvent) -> None: ...
    def connection_check_out_started(self, event: ConnectionCheckOutStartedEvent) -> None: ...
    def connection_check_out_failed(self, event: ConnectionCheckOutFailedEvent) -> None: ...
    def connection_checked_out(self, event: ConnectionCheckedOutEvent) -> None: ...
    def connection_checked_in(self, event: ConnectionCheckedInEvent) -> None: ...


Listener = Union[
    TopologyListener,
    ServerListener,
    ServerHeartbeatListener,
    CommandListener,
    ConnectionPoolListener,
]

_L = TypeVar("_L")

_LISTENER_CLASSES = (
    TopologyListener,
    ServerListener,
    ServerHeartbeatListener,
    CommandListener,
    ConnectionPoolListener,
)


def check_listeners(listeners: Sequence[object]) -> None:
    unknown = [x for x in listeners if not isinstance(x, _LISTENER_CLASSES)]
    if unknown:
        raise TypeError(
            f"event listeners must subclass one of the listener classes in "
            f"mongocore.core.events, not {type(unknown[0]).__name__}"
        )


class EventPublisher:
    """Holds the registered listeners and delivers events to them.

    ``has_*`` flags let hot paths skip building events nobody listens to.
    """

    def __init__(self, listeners: Iterable[Listener] = ()) -> None:
        listeners = list(listeners)
        check_listeners(listeners)
        self.topology_listeners = [x for x in listeners if isinstance(x, TopologyListener)]
        self.server_listeners = [x for x in listeners if isinstance(x, ServerListener)]
        self.heartbeat_listeners = [x for x in listeners if isinstance(x, ServerHeartbeatListener)]
        self.command_listeners = [x for x in listeners if isinstance(x, CommandListener)]
        self.pool_listeners = [x for x in listeners if isinstance(x, ConnectionPoolListener)]

    @property
    def has_sdam_listeners(self) -> bool:
        return bool(self.topology_listeners or self.server_listeners)

    def publish_sdam(self, events: Sequence[SdamEvent]) -> None:
        for event in events:
            if isinstance(event, (TopologyOpeningEvent, TopologyClosedEvent)):
                name = "opened" if isinstance(event, TopologyOpeningEvent) else "closed"
                _deliver(self.topology_listeners, name, event)
            elif isinstance(event, TopologyDescriptionChangedEvent):
                _deliver(self.topology_listeners, "description_changed", event)
            elif isinstance(event, ServerOpeningEvent):
                _deliver(self.server_listeners, "opened", event)
            elif isinstance(event, ServerClosedEvent):
                _deliver(self.server_listeners, "closed", event)
            else:
                _deliver(self.server_listeners, "description_changed", event)

    def publish(self, listeners: Sequence[_L], method: str, event: object) -> None:
        _deliver(listeners, method, event)


def _deliver(listeners: Sequence[object], method: str, event: object) -> None:
    for listener in listeners:
        callback: Callable[[object], None] = getattr(listener, method)
        try:
            callback(event)
        except Exception:
            _log.exception("event listener %r raised in %s; ignored", listener, method)


# --- SDAM events derived from the pure core's transitions -------------------------


def events_for_opening(topology_id: object, initial: TopologyDescription) -> list[SdamEvent]:
    """Opening a topology: opened, the first description change, then each seed opened."""
    empty = TopologyDescription(TopologyType.UNKNOWN, {}, initial.settings)
    events: list[SdamEvent] = [
        TopologyOpeningEvent(topology_id),
        TopologyDescriptionChangedEvent(topology_id, empty, initial),
    ]
    events.extend(ServerOpeningEvent(topology_id, address) for address in initial.servers)
    return events


def events_for_transition(topology_id: object, transition: Transition) -> list[SdamEvent]:
    """The events one applied outcome causes.

    A server's description change is published only when the two descriptions are
    unequal by the seed's (=) fields; the topology's only when a server changed,
    came or went, or a topology field changed.
    """
    previous, new = transition.previous, transition.description
    if new is previous:
        return []
    old_servers, new_servers = previous.servers, new.servers
    events: list[SdamEvent] = []
    applied = transition.applied
    order = list(new_servers)
    if applied is not None and applied.address in new_servers:
        order.remove(applied.address)
        order.insert(0, applied.address)
    for address in order:
        old = old_servers.get(address)
        sd = new_servers[address]
        if old is not None and old != sd and not _unknown_to_possible_primary(old, sd):
            events.append(ServerDescriptionChangedEvent(topology_id, address, old, sd))
    events.extend(ServerClosedEvent(topology_id, address) for address in transition.removed)
    events.extend(ServerOpeningEvent(topology_id, address) for address in transition.added)
    if (
        events
        or previous.type is not new.type
        or previous.set_name != new.set_name
        or previous.max_election_id != new.max_election_id
        or previous.max_set_version != new.max_set_version
    ):
        events.append(TopologyDescriptionChangedEvent(topology_id, previous, new))
    return events


def _unknown_to_possible_primary(old: ServerDescription, new: ServerDescription) -> bool:
    # For a multi-threaded client PossiblePrimary "is synonymous with Unknown": marking
    # an Unknown server as the possible primary is no change worth an event.
    return old.type is ServerType.UNKNOWN and new == old.replace(type=ServerType.POSSIBLE_PRIMARY)


def events_for_closing(topology_id: object, transition: Transition) -> list[SdamEvent]:
    """Closing: each server closed, the description emptied, then the topology closed.

    ``transition`` is ``mongocore.core.description.topology_updates.remove_all(description)``.
    """
    events: list[SdamEvent] = [
        ServerClosedEvent(topology_id, address) for address in transition.removed
    ]
    events.append(
        TopologyDescriptionChangedEvent(topology_id, transition.previous, transition.description)
    )
    events.append(TopologyClosedEvent(topology_id))
    return events
