"""Listeners that log every event at INFO level, under pymongo's module name
(``pymongo.event_loggers``).

``MongoClient(event_listeners=[CommandLogger(), ServerLogger()])`` logs each command,
server change, heartbeat, topology change or pool event in one line on the
``mongocore.event_loggers`` logger (Python's :mod:`logging`: nothing shows until the
application configures logging). They are examples as much as tools: write a listener
of your own (the classes of :mod:`mongocore.monitoring`) to do more.
"""

from __future__ import annotations

import logging

from mongocore import monitoring

__all__ = [
    "CommandLogger",
    "ConnectionPoolLogger",
    "HeartbeatLogger",
    "ServerLogger",
    "TopologyLogger",
]

_log = logging.getLogger(__name__)


class CommandLogger(monitoring.CommandListener):
    """Logs each command's start, success (with its duration) and failure."""

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        _log.info(
            "Command %s with request id %s started on server %s",
            event.command_name,
            event.request_id,
            event.address,
        )

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        _log.info(
            "Command %s with request id %s on server %s succeeded in %s microseconds",
            event.command_name,
            event.request_id,
            event.address,
            event.duration_micros,
        )

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        _log.info(
            "Command %s with request id %s on server %s failed in %s microseconds",
            event.command_name,
            event.request_id,
            event.address,
            event.duration_micros,
        )


class ServerLogger(monitoring.ServerListener):
    """Logs servers joining and leaving the topology and each change of a server's type."""

    def opened(self, event: monitoring.ServerOpeningEvent) -> None:
        _log.info("Server %s added to topology %s", event.address, event.topology_id)

    def description_changed(self, event: monitoring.ServerDescriptionChangedEvent) -> None:
        previous, new = event.previous_description.type, event.new_description.type
        if previous != new:
            _log.info("Server %s changed type from %s to %s", event.address, previous, new)

    def closed(self, event: monitoring.ServerClosedEvent) -> None:
        _log.info("Server %s removed from topology %s", event.address, event.topology_id)


class HeartbeatLogger(monitoring.ServerHeartbeatListener):
    """Logs each heartbeat (server check) and its outcome."""

    def started(self, event: monitoring.ServerHeartbeatStartedEvent) -> None:
        _log.info("Heartbeat sent to server %s", event.address)

    def succeeded(self, event: monitoring.ServerHeartbeatSucceededEvent) -> None:
        _log.info("Heartbeat to server %s succeeded with reply %s", event.address, event.reply)

    def failed(self, event: monitoring.ServerHeartbeatFailedEvent) -> None:
        _log.info("Heartbeat to server %s failed with error %s", event.address, event.failure)


class TopologyLogger(monitoring.TopologyListener):
    """Logs the topology opening, closing, and each change of its type or servers."""

    def opened(self, event: monitoring.TopologyOpeningEvent) -> None:
        _log.info("Topology with id %s opened", event.topology_id)

    def description_changed(self, event: monitoring.TopologyDescriptionChangedEvent) -> None:
        previous, new = event.previous_description, event.new_description
        _log.info("Topology description updated for topology id %s", event.topology_id)
        if previous.type != new.type:
            _log.info(
                "Topology %s changed type from %s to %s", event.topology_id, previous.type, new.type
            )
        servers = new.servers.values()
        if not any(sd.is_writable for sd in servers):
            _log.info("No writable servers available.")
        if not any(sd.is_readable for sd in servers):
            _log.info("No readable servers available.")

    def closed(self, event: monitoring.TopologyClosedEvent) -> None:
        _log.info("Topology with id %s closed", event.topology_id)


class ConnectionPoolLogger(monitoring.ConnectionPoolListener):
    """Logs every pool and connection event (CMAP)."""

    def pool_created(self, event: monitoring.PoolCreatedEvent) -> None:
        _log.info("[pool %s] pool created", event.address)

    def pool_ready(self, event: monitoring.PoolReadyEvent) -> None:
        _log.info("[pool %s] pool ready", event.address)

    def pool_cleared(self, event: monitoring.PoolClearedEvent) -> None:
        _log.info("[pool %s] pool cleared", event.address)

    def pool_closed(self, event: monitoring.PoolClosedEvent) -> None:
        _log.info("[pool %s] pool closed", event.address)

    def connection_created(self, event: monitoring.ConnectionCreatedEvent) -> None:
        _log.info(
            "[pool %s][connection #%s] connection created", event.address, event.connection_id
        )

    def connection_ready(self, event: monitoring.ConnectionReadyEvent) -> None:
        _log.info("[pool %s][connection #%s] connection ready", event.address, event.connection_id)

    def connection_closed(self, event: monitoring.ConnectionClosedEvent) -> None:
        _log.info(
            "[pool %s][connection #%s] connection closed, reason: %s",
            event.address,
            event.connection_id,
            event.reason,
        )

    def connection_check_out_started(
        self, event: monitoring.ConnectionCheckOutStartedEvent
    ) -> None:
        _log.info("[pool %s] connection check out started", event.address)

    def connection_check_out_failed(self, event: monitoring.ConnectionCheckOutFailedEvent) -> None:
        _log.info("[pool %s] connection check out failed, reason: %s", event.address, event.reason)

    def connection_checked_out(self, event: monitoring.ConnectionCheckedOutEvent) -> None:
        _log.info(
            "[pool %s][connection #%s] connection checked out of pool",
            event.address,
            event.connection_id,
        )

    def connection_checked_in(self, event: monitoring.ConnectionCheckedInEvent) -> None:
        _log.info(
            "[pool %s][connection #%s] connection checked into pool",
            event.address,
            event.connection_id,
        )
