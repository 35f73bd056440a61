"""The listener and event classes, under pymongo's module name (``pymongo.monitoring``).

``from mongocore import monitoring`` ports ``from pymongo import monitoring``: the
classes are those of :mod:`mongocore.core.events`. Commands are monitored by
:mod:`mongocore.io.command_monitoring`. The events keep the specifications' names
and also answer to pymongo's (``server_address``, a heartbeat's ``connection_id``,
``duration_micros``, ...); the names pymongo gives that the specifications do not
are here too: ``TopologyOpenedEvent``, ``ConnectionClosedReason``,
``ConnectionCheckOutFailedReason``; and ``register()``, which gives a listener to every
client created afterwards. docs/from-pymongo.md lists what differs.
"""

from __future__ import annotations

from mongocore.api.listener_registry import register
from mongocore.core.events import (
    CommandFailedEvent,
    CommandListener,
    CommandStartedEvent,
    CommandSucceededEvent,
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    ConnectionPoolListener,
    ConnectionReadyEvent,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
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
from mongocore.io.pool_base import CheckOutFailedReason, ConnectionClosedReason

#: pymongo's name for the topology's opening event (the SDAM spec's TopologyOpeningEvent).
TopologyOpenedEvent = TopologyOpeningEvent


class ConnectionCheckOutFailedReason(CheckOutFailedReason):
    """pymongo's name for the check-out failure reasons, with its ``CONN_ERROR``."""

    CONN_ERROR = CheckOutFailedReason.CONNECTION_ERROR


__all__ = [
    "CommandFailedEvent",
    "CommandListener",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "ConnectionCheckOutFailedEvent",
    "ConnectionCheckOutFailedReason",
    "ConnectionCheckOutStartedEvent",
    "ConnectionCheckedInEvent",
    "ConnectionCheckedOutEvent",
    "ConnectionClosedEvent",
    "ConnectionClosedReason",
    "ConnectionCreatedEvent",
    "ConnectionPoolListener",
    "ConnectionReadyEvent",
    "PoolClearedEvent",
    "PoolClosedEvent",
    "PoolCreatedEvent",
    "PoolReadyEvent",
    "ServerClosedEvent",
    "ServerDescriptionChangedEvent",
    "ServerHeartbeatFailedEvent",
    "ServerHeartbeatListener",
    "ServerHeartbeatStartedEvent",
    "ServerHeartbeatSucceededEvent",
    "ServerListener",
    "ServerOpeningEvent",
    "TopologyClosedEvent",
    "TopologyDescriptionChangedEvent",
    "TopologyListener",
    "TopologyOpenedEvent",
    "TopologyOpeningEvent",
    "register",
]
