"""TopologyDescription: the client's immutable view of the whole deployment.

Seed: server-discovery-and-monitoring.md, sections "TopologyDescription", "Checking
wire protocol compatibility" and "Logical Session Timeout". How one outcome changes a
description (the TopologyType table, apply() and its Transition) is
:mod:`mongocore.core.description.topology_updates`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Optional

from mongocore._version import DRIVER_NAME
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.types import (
    DATA_BEARING,
    NO_WIRE_VERSIONS,
    ServerType,
    TopologyType,
)

# The wire protocol range mongocore speaks: OP_MSG, sessions and retryable writes
# arrived with wire version 6 (MongoDB 3.6).
CLIENT_MIN_WIRE_VERSION = 6
CLIENT_MAX_WIRE_VERSION = 28
_MONGODB_VERSION_OF_WIRE = {6: "3.6", 7: "4.0", 8: "4.2", 9: "4.4", 13: "5.0", 17: "6.0"}
_UNSET: Any = object()
# A plain name for the member every primary look-up compares: looking a member up on
# an Enum class goes through EnumType.__getattr__ on Python 3.11.
_RS_PRIMARY = ServerType.RS_PRIMARY


class TopologyDescription:
    """An immutable view of the whole deployment.

    ``servers`` maps each address to its ServerDescription. Three facts of the
    servers (the primary, compatibility, the logical session timeout) are computed
    on first use and kept: each is a function of the description alone, the same
    whoever asks first. Nothing a caller passes in is ever kept on a description
    (server selection's facts and windows are the shell's,
    ``mongocore.io.selection_cache``).
    """

    _servers: dict[Address, ServerDescription]
    _compatibility_error: Any
    _lstm: Any
    _primary: Any
    type: TopologyType
    set_name: Optional[str]
    max_election_id: Optional[Any]
    max_set_version: Optional[int]
    servers: MappingProxyType[Address, ServerDescription]
    settings: TopologySettings

    def __init__(
        self,
        type: TopologyType,
        servers: Mapping[Address, ServerDescription],
        settings: TopologySettings,
        *,
        set_name: Optional[str] = None,
        max_election_id: Optional[Any] = None,
        max_set_version: Optional[int] = None,
        _adopt: bool = False,
    ) -> None:
        # apply() hands over a dict it built and never touches again: no second copy.
        own = servers if _adopt and isinstance(servers, dict) else dict(servers)
        _fill(self, type, own, settings, set_name, max_election_id, max_set_version)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"TopologyDescription is immutable; cannot set {name!r}")

    @classmethod
    def adopting(  # noqa: PLR0917 - positional: one call per heartbeat
        cls,
        type: TopologyType,
        servers: dict[Address, ServerDescription],
        settings: TopologySettings,
        set_name: Optional[str],
        max_election_id: Optional[Any],
        max_set_version: Optional[int],
        known_compatible: bool = False,
    ) -> TopologyDescription:
        """The constructor's work without its copy and checks: the description takes
        ``servers``, a dict its caller built and never touches again (apply() makes
        one description per heartbeat). ``known_compatible``: the caller knows every
        server's wire versions meet the driver's, so the first selection skips the
        compatibility pass."""
        description = _new_object(cls)
        _fill(description, type, servers, settings, set_name, max_election_id, max_set_version)
        if known_compatible:
            description.__dict__["_compatibility_error"] = None
        return description

    @classmethod
    def initial(cls, settings: TopologySettings) -> TopologyDescription:
        """The TopologyDescription before any check: every seed Unknown."""
        servers = {address: ServerDescription(address) for address in settings.seeds}
        return cls(
            settings.initial_topology_type,
            servers,
            settings,
            set_name=settings.replica_set,
        )

    # --- derived facts, computed once -----------------------------------------

    @property
    def compatible(self) -> bool:
        return self.compatibility_error is None

    @property
    def known_compatible(self) -> bool:
        """Found compatible already: True once a selection (or the apply() that made
        this description) established it, without making the pass to find out."""
        return self._compatibility_error is None

    @property
    def compatibility_error(self) -> Optional[str]:
        """The seed's message for the first incompatible server, or None."""
        error = self._compatibility_error
        if error is _UNSET:
            error = None
            for sd in self._servers.values():
                error = incompatibility(sd)
                if error is not None:
                    break
            self.__dict__["_compatibility_error"] = error
        return error  # type: ignore[no-any-return]

    @property
    def logical_session_timeout_minutes(self) -> Optional[int]:
        """The smallest value over data-bearing servers; None if any of them has none."""
        lstm = self._lstm
        if lstm is _UNSET:
            lstm = None
            for sd in self._servers.values():
                if sd.type in DATA_BEARING:
                    value = sd.logical_session_timeout_minutes
                    if value is None:
                        lstm = None
                        break
                    lstm = value if lstm is None else min(lstm, value)
            self.__dict__["_lstm"] = lstm
        return lstm  # type: ignore[no-any-return]

    @property
    def primary(self) -> Optional[ServerDescription]:
        primary = self._primary
        if primary is _UNSET:
            primary = next((s for s in self._servers.values() if s.type is _RS_PRIMARY), None)
            self.__dict__["_primary"] = primary
        return primary  # type: ignore[no-any-return]

    @property
    def has_known_servers(self) -> bool:
        return any(sd.is_server_type_known for sd in self._servers.values())

    def __repr__(self) -> str:
        servers = ", ".join(repr(sd) for sd in self._servers.values())
        name = f" setName={self.set_name!r}" if self.set_name else ""
        return f"<TopologyDescription {self.type.value}{name} servers=[{servers}]>"


def incompatibility(sd: ServerDescription) -> Optional[str]:
    """The seed's message if ``sd``'s wire version range does not meet mongocore's,
    else None ("Checking wire protocol compatibility")."""
    if sd.type in NO_WIRE_VERSIONS:  # nothing to compare yet
        return None
    if sd.min_wire_version > CLIENT_MAX_WIRE_VERSION:
        return (
            f"Server at {sd.address} requires wire version {sd.min_wire_version}, "
            f"but this version of {DRIVER_NAME} only supports up to "
            f"{CLIENT_MAX_WIRE_VERSION}."
        )
    if sd.max_wire_version < CLIENT_MIN_WIRE_VERSION:
        return (
            f"Server at {sd.address} reports wire version {sd.max_wire_version}, "
            f"but this version of {DRIVER_NAME} requires at least "
            f"{CLIENT_MIN_WIRE_VERSION} (MongoDB "
            f"{_MONGODB_VERSION_OF_WIRE[CLIENT_MIN_WIRE_VERSION]})."
        )
    return None


#: A description's attributes before _fill sets them (a dict display of them all costs
#: more than copying this): the derived facts start unset, computed on first use.
_ATTRIBUTES: dict[str, Any] = {
    "type": None,
    "_servers": None,
    "servers": None,
    "settings": None,
    "set_name": None,
    "max_election_id": None,
    "max_set_version": None,
    "_compatibility_error": _UNSET,
    "_lstm": _UNSET,
    "_primary": _UNSET,
}


def _fill(  # noqa: PLR0917 - positional: one call per heartbeat
    description: TopologyDescription,
    type: TopologyType,
    servers: dict[Address, ServerDescription],
    settings: TopologySettings,
    set_name: Optional[str],
    max_election_id: Optional[Any],
    max_set_version: Optional[int],
) -> None:
    # One __dict__ assignment instead of a setattr per field: apply() makes one
    # description per heartbeat.
    attributes = _ATTRIBUTES.copy()
    attributes["type"] = type
    attributes["_servers"] = servers
    attributes["servers"] = MappingProxyType(servers)
    attributes["settings"] = settings
    attributes["set_name"] = set_name
    attributes["max_election_id"] = max_election_id
    attributes["max_set_version"] = max_set_version
    _set(description, "__dict__", attributes)


_set = object.__setattr__
_new_object = object.__new__
