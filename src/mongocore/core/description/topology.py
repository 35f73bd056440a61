"""TopologyDescription and the SDAM state machine, as a pure function.

Seed: server-discovery-and-monitoring.md, sections "TopologyDescription",
"Updating the TopologyDescription" (apply() dispatches on the TopologyType table;
the table and its actions are in topology_updates), "Checking wire protocol
compatibility", "Verifying setName with TopologyType Single", "Logical Session
Timeout" and "Connection Pool Management".

``apply(description, server_description)`` never mutates its inputs. It returns a
``Transition``: the new description plus what the I/O shell must do about it
(monitors to start and stop, checks to request, pools to clear or mark ready).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Optional

from mongocore._version import DRIVER_NAME
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology_updates import (
    _TABLE,
    _address_sort_key,
    _append,
    _Update,
)
from mongocore.core.description.topology_version import compare_topology_version
from mongocore.core.description.types import (
    DATA_BEARING,
    NO_WIRE_VERSIONS,
    ServerType,
    TopologyType,
)
from mongocore.core.lazy_logger import get_logger

_log = get_logger("mongocore.topology")

# The wire protocol range mongocore speaks: OP_MSG, sessions and retryable writes
# arrived with wire version 6 (MongoDB 3.6).
CLIENT_MIN_WIRE_VERSION = 6
CLIENT_MAX_WIRE_VERSION = 28
_MONGODB_VERSION_OF_WIRE = {6: "3.6", 7: "4.0", 8: "4.2", 9: "4.4", 13: "5.0", 17: "6.0"}
_T = TopologyType
_S = ServerType
_UNSET: Any = object()
# Plain names for the members every heartbeat compares: looking a member up on an
# Enum class goes through EnumType.__getattr__ on Python 3.11.
_RS_PRIMARY = ServerType.RS_PRIMARY
_UNKNOWN = ServerType.UNKNOWN
_SINGLE = TopologyType.SINGLE
_LOAD_BALANCED = TopologyType.LOAD_BALANCED


class TopologyDescription:
    """An immutable view of the whole deployment.

    ``servers`` maps each address to its ServerDescription. Facts that server
    selection needs on every call (the primary, the readable servers,
    compatibility) are computed once, on first use, and kept.
    """

    _servers: dict[Address, ServerDescription]
    _compatibility_error: Any
    _lstm: Any
    _primary: Any
    type: TopologyType
    set_name: Optional[str]
    max_election_id: Optional[Any]
    max_set_version: Optional[int]
    servers: Mapping[Address, ServerDescription]
    settings: TopologySettings
    selection_cache: dict[Any, Any]

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
    # Owned by mongocore.core.selection: per-description precomputed selection data.
    "selection_cache": None,
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
    attributes["selection_cache"] = {}
    _set(description, "__dict__", attributes)


_set = object.__setattr__
_new_object = object.__new__


class Transition(NamedTuple):
    """The outcome of applying one ServerDescription to a TopologyDescription."""

    previous: TopologyDescription
    description: TopologyDescription
    #: The description actually stored for the checked server; None if the outcome
    #: was ignored (server not in the topology, or an older topologyVersion).
    applied: Optional[ServerDescription] = None
    #: Servers added to the topology: start monitoring them.
    added: tuple[Address, ...] = ()
    #: Servers removed from the topology: stop monitoring them, close their pools.
    removed: tuple[Address, ...] = ()
    #: Servers to check right away (an invalidated primary).
    request_check: tuple[Address, ...] = ()
    #: Servers whose pools must be cleared (an invalidated primary older than 4.2).
    clear_pools: tuple[Address, ...] = ()
    #: Servers whose pools must be marked ready (a successful check of a usable server).
    ready_pools: tuple[Address, ...] = ()

    @property
    def ignored(self) -> bool:
        return self.applied is None


_new_tuple = tuple.__new__


def _transition(update: _Update, applied: ServerDescription) -> Transition:
    """The Transition an update ends with: the new description and the actions."""
    previous = update.previous
    # The constructor's work without its checks: the servers dict is ours to adopt.
    description = _new_object(TopologyDescription)
    _fill(
        description,
        update.type,
        update.servers,
        previous.settings,
        update.set_name,
        update.max_election_id,
        update.max_set_version,
    )
    stored = update.servers.get(applied.address)
    # Compatible before and the checked server compatible: compatible now, without a
    # pass over every server at the next selection. An update changes no other server
    # but to Unknown or PossiblePrimary (added, demoted or invalidated), which have no
    # wire versions, or by removing it.
    if previous._compatibility_error is None and (
        stored is None or incompatibility(stored) is None
    ):
        description.__dict__["_compatibility_error"] = None
    ready: tuple[Address, ...] = ()
    if stored is not None and (
        stored.type in DATA_BEARING or (stored.type is not _UNKNOWN and update.type is _SINGLE)
    ):
        ready = (stored.address,)
    # tuple.__new__ directly: the NamedTuple constructor is a Python-level call,
    # and one Transition is made per heartbeat.
    return _new_tuple(
        Transition,
        (
            previous,
            description,
            stored if stored is not None else applied,
            tuple(update.added),
            tuple(update.removed),
            tuple(update.request_check),
            tuple(update.clear_pools),
            ready,
        ),
    )


def apply(description: TopologyDescription, sd: ServerDescription) -> Transition:
    """Process one check outcome (or an application error's Unknown description)."""
    current = description._servers.get(sd.address)
    if current is None:
        # The server was removed while it was being checked: ignore its outcome.
        return Transition(description, description)
    known, reported = current.topology_version, sd.topology_version
    if (
        known is not None
        and reported is not None
        # A counter that did not go down cannot be older: no processId comparison.
        and not (
            type(known.counter) is int
            and type(reported.counter) is int
            and known.counter <= reported.counter
        )
        and compare_topology_version(known, reported) > 0
    ):
        # Older than what we already know: keep the current description.
        return Transition(description, description)

    update = _Update(description)
    topology_type = description.type

    if topology_type is _SINGLE:
        replica_set = description.settings.replica_set
        if replica_set is not None and sd.set_name != replica_set:
            found = "no setName" if sd.set_name is None else f"setName {sd.set_name!r}"
            sd = ServerDescription.from_error(
                sd.address,
                sd.error
                or f"replica set name mismatch: expected {replica_set!r}, but {sd.address} "
                f"reports {found}",
                last_update_time=sd.last_update_time,
            )
        update.servers[sd.address] = sd
        return _transition(update, sd)

    update.servers[sd.address] = sd
    if topology_type is not _LOAD_BALANCED:
        handler = _TABLE[topology_type].get(sd.type)
        if handler is not None:
            try:
                handler(update, sd)
            except Exception as exc:
                # A description built by hand with values parsing never gives (a
                # wire version that is not a number, ...): never let it wedge the
                # topology. The server becomes Unknown, with the reason.
                _log.error("cannot apply %r", sd, exc_info=True)
                unknown = ServerDescription.from_error(
                    sd.address,
                    f"invalid server description: {type(exc).__name__}: {exc}",
                    last_update_time=sd.last_update_time,
                )
                return apply(description, unknown)
    return _transition(update, sd)


def apply_srv_hosts(description: TopologyDescription, hosts: Iterable[Address]) -> Transition:
    """SRV polling: make the servers of a Sharded or Unknown topology match the SRV records.

    Spec: polling-srv-records-for-mongos-discovery ("Polling" and the host list it
    gives): new hosts are added as Unknown and monitored; hosts no longer listed are
    removed. Other topology types are left alone.
    """
    if description.type not in (_T.SHARDED, _T.UNKNOWN):
        return Transition(description, description)
    wanted = set(hosts)
    update = _Update(description)
    for address in sorted(wanted - set(update.servers), key=_address_sort_key):
        update.servers[address] = ServerDescription(address)
        update.added = _append(update.added, address)
    for address in [a for a in update.servers if a not in wanted]:
        update.remove(address)
    if not update.added and not update.removed:
        return Transition(description, description)
    new = TopologyDescription(
        update.type, update.servers, description.settings, set_name=description.set_name
    )
    return Transition(description, new, None, tuple(update.added), tuple(update.removed))


def remove_all(description: TopologyDescription) -> Transition:
    """Client closing: remove every server and set the TopologyType to Unknown."""
    closed = TopologyDescription(_T.UNKNOWN, {}, description.settings)
    return Transition(description, closed, removed=tuple(description._servers))
