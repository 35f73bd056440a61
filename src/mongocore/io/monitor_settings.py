"""How a server monitor checks its server: the heartbeat settings and the monitoring mode.

Spec: server-monitoring.md, sections "heartbeatFrequencyMS", "minHeartbeatFrequencyMS",
"serverMonitoringMode" and, in "Streaming Protocol", "Streaming hello" (the socket
timeout of awaitable hello replies). The monitor thread that uses them is
:mod:`mongocore.io.monitor`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from mongocore._deferred_dataclass import dataclass, field
from mongocore.core.uri_options import SERVER_MONITORING_MODES
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.handshake import detect_faas

if TYPE_CHECKING:
    from mongocore.core.options import ClientOptions

__all__ = [
    "MIN_HEARTBEAT_FREQUENCY",
    "SERVER_MONITORING_MODES",
    "MonitorSettings",
    "streaming_enabled",
]

#: minHeartbeatFrequencyMS, in seconds.
MIN_HEARTBEAT_FREQUENCY = 0.5


@dataclass(frozen=True)
class MonitorSettings:
    """How a monitor checks its server. Times are in seconds."""

    heartbeat_frequency: float = 10.0
    min_heartbeat_frequency: float = MIN_HEARTBEAT_FREQUENCY
    connection: ConnectionSettings = field(default_factory=ConnectionSettings)
    server_monitoring_mode: str = "auto"

    def __post_init__(self) -> None:
        if self.server_monitoring_mode not in SERVER_MONITORING_MODES:
            raise ValueError(
                f"serverMonitoringMode must be one of {SERVER_MONITORING_MODES},"
                f" not {self.server_monitoring_mode!r}"
            )
        if not self.min_heartbeat_frequency > 0:
            raise ValueError("min_heartbeat_frequency must be positive")
        if not self.heartbeat_frequency >= self.min_heartbeat_frequency:
            raise ValueError(
                f"heartbeat_frequency ({self.heartbeat_frequency}s) must be at least"
                f" min_heartbeat_frequency ({self.min_heartbeat_frequency}s)"
            )

    @classmethod
    def from_options(cls, options: ClientOptions) -> MonitorSettings:
        """Settings from a :class:`mongocore.core.options.ClientOptions`."""
        return cls(
            heartbeat_frequency=options.heartbeat_frequency_ms / 1000.0,
            connection=ConnectionSettings.from_options(options),
            server_monitoring_mode=options.server_monitoring_mode,
        )

    @property
    def streaming_timeout(self) -> Optional[float]:
        """Read timeout for awaitable hello replies: connectTimeoutMS + heartbeatFrequencyMS,
        or none when connectTimeoutMS is 0 (no limit)."""
        connect_timeout = self.connection.connect_timeout
        return None if connect_timeout is None else connect_timeout + self.heartbeat_frequency


def streaming_enabled(mode: str, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether ``serverMonitoringMode`` allows the streaming protocol here ("auto": not on
    a FaaS platform, detected as for the handshake's ``client.env``)."""
    if mode == "stream":
        return True
    if mode == "poll":
        return False
    return detect_faas(environ) is None
