"""SDAM "Configuration": the initial TopologyDescription and allowed option combinations.

Seed: server-discovery-and-monitoring.md, sections "Initial TopologyDescription",
"Allowed configuration combinations" and "heartbeatFrequencyMS".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from mongocore._deferred_dataclass import dataclass
from mongocore.core.address import Address
from mongocore.core.description.types import TopologyType
from mongocore.core.lazy_logger import get_logger
from mongocore.errors import ConfigurationError

_log = get_logger("mongocore.topology")

# minHeartbeatFrequencyMS: "This value MUST be 500 ms, and it MUST NOT be configurable."
MIN_HEARTBEAT_FREQUENCY_MS = 500
DEFAULT_HEARTBEAT_FREQUENCY_MS = 10_000
DEFAULT_LOCAL_THRESHOLD_MS = 15
DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class TopologySettings:
    """What SDAM and server selection need from the client's configuration."""

    seeds: tuple[Address, ...]
    direct_connection: Optional[bool] = None
    replica_set: Optional[str] = None
    load_balanced: bool = False
    srv: bool = False
    heartbeat_frequency_ms: int = DEFAULT_HEARTBEAT_FREQUENCY_MS
    local_threshold_ms: int = DEFAULT_LOCAL_THRESHOLD_MS
    server_selection_timeout_ms: int = DEFAULT_SERVER_SELECTION_TIMEOUT_MS

    def __post_init__(self) -> None:
        check_configuration(
            self.seeds,
            direct_connection=self.direct_connection,
            replica_set=self.replica_set,
            load_balanced=self.load_balanced,
            srv=self.srv,
            heartbeat_frequency_ms=self.heartbeat_frequency_ms,
        )
        if not self.seeds:
            _log.warning("the client was configured with an empty seed list")

    @property
    def initial_topology_type(self) -> TopologyType:
        return initial_topology_type(self.direct_connection, self.replica_set, self.load_balanced)

    @property
    def heartbeat_frequency(self) -> float:
        """heartbeatFrequencyMS in seconds."""
        return self.heartbeat_frequency_ms / 1000.0

    @property
    def local_threshold(self) -> float:
        return self.local_threshold_ms / 1000.0


def initial_topology_type(
    direct_connection: Optional[bool], replica_set: Optional[str], load_balanced: bool
) -> TopologyType:
    """The "Initial TopologyType" table; an absent directConnection behaves as false."""
    if load_balanced:
        return TopologyType.LOAD_BALANCED
    if direct_connection:
        return TopologyType.SINGLE
    if replica_set is not None:
        return TopologyType.REPLICA_SET_NO_PRIMARY
    return TopologyType.UNKNOWN


def check_configuration(
    seeds: Sequence[Address],
    *,
    direct_connection: Optional[bool],
    replica_set: Optional[str],
    load_balanced: bool,
    srv: bool = False,
    heartbeat_frequency_ms: int = DEFAULT_HEARTBEAT_FREQUENCY_MS,
) -> None:
    """Raise ConfigurationError for the combinations the seed forbids."""
    if direct_connection and len(seeds) > 1:
        raise ConfigurationError(
            f"directConnection=true cannot be used with multiple seeds ({len(seeds)} given): "
            "name one host, or drop directConnection to discover the deployment"
        )
    if direct_connection and srv:
        raise ConfigurationError("directConnection=true cannot be used with mongodb+srv://")
    if load_balanced:
        if direct_connection:
            raise ConfigurationError("loadBalanced=true cannot be used with directConnection=true")
        if replica_set is not None:
            raise ConfigurationError("loadBalanced=true cannot be used with replicaSet")
        if len(seeds) > 1:
            raise ConfigurationError(
                f"loadBalanced=true requires exactly one host, not {len(seeds)}"
            )
    if heartbeat_frequency_ms < MIN_HEARTBEAT_FREQUENCY_MS:
        raise ConfigurationError(
            f"heartbeatFrequencyMS must be at least {MIN_HEARTBEAT_FREQUENCY_MS}, "
            f"not {heartbeat_frequency_ms}"
        )
