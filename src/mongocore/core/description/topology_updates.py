"""The SDAM state machine, as a pure function: one outcome applied to a description.

Seed: server-discovery-and-monitoring.md, "Updating the TopologyDescription": the
TopologyType table, and the actions updateUnknownWithStandalone,
updateRSWithoutPrimary, updateRSWithPrimaryFromMember, updateRSFromPrimary,
checkIfHasPrimary and remove, named here as the spec names them; also "Verifying
setName with TopologyType Single", "Connection Pool Management" (which pools to clear
and mark ready) and the SRV polling spec's host list.

``apply(description, server_description)`` never mutates its inputs: it dispatches on
the table, whose actions work on an ``_Update`` (the working state of one apply()),
and returns a ``Transition``: the new description plus what the I/O shell must do
about it (monitors to start and stop, checks to request, pools to clear or mark
ready).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Callable, NamedTuple, Optional

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription, incompatibility
from mongocore.core.description.topology_version import compare_topology_version
from mongocore.core.description.types import DATA_BEARING, ServerType, TopologyType
from mongocore.core.lazy_logger import get_logger

_log = get_logger("mongocore.topology")

# "If the old primary server version is 4.0 or earlier, the client MUST clear its
# connection pool": 4.2 is wire version 8.
WIRE_VERSION_4_2 = 8

_T = TopologyType
_S = ServerType
# Plain names for the members heartbeats compare and set: looking a member up on an
# Enum class goes through EnumType.__getattr__ on Python 3.11.
_RS_PRIMARY = ServerType.RS_PRIMARY
_UNKNOWN = ServerType.UNKNOWN
_SINGLE = TopologyType.SINGLE
_LOAD_BALANCED = TopologyType.LOAD_BALANCED
_WITH_PRIMARY = TopologyType.REPLICA_SET_WITH_PRIMARY
_NO_PRIMARY = TopologyType.REPLICA_SET_NO_PRIMARY
_NOTHING: Any = ()


def _append(items: list[Address], address: Address) -> list[Address]:
    """``items`` with ``address`` appended; the shared empty tuple becomes a new list."""
    if items is _NOTHING:
        return [address]
    items.append(address)
    return items


class _Update:
    """The working state of one apply(): a copy of the servers and the fields that change."""

    __slots__ = (
        "added",
        "clear_pools",
        "max_election_id",
        "max_set_version",
        "previous",
        "removed",
        "request_check",
        "servers",
        "set_name",
        "type",
    )

    def __init__(self, previous: TopologyDescription) -> None:
        self.previous = previous
        # (The read-only view's copy() is its dict's: dict(view) would go key by key.)
        self.servers: dict[Address, ServerDescription] = previous.servers.copy()
        self.type = previous.type
        self.set_name = previous.set_name
        self.max_election_id = previous.max_election_id
        self.max_set_version = previous.max_set_version
        # Most heartbeats add, remove, check and clear nothing: the lists are made on
        # first use (_append), and the empty tuple stands for them until then.
        self.added: list[Address] = _NOTHING
        self.removed: list[Address] = _NOTHING
        self.request_check: list[Address] = _NOTHING
        self.clear_pools: list[Address] = _NOTHING

    # -- the seed's subroutines ---------------------------------------------

    def remove(self, address: Address) -> None:
        """remove: drop the server and stop monitoring it."""
        if self.servers.pop(address, None) is not None:
            self.removed = _append(self.removed, address)
            if not self.servers:
                _log.warning(
                    "removed %s, the last server of the topology: no server is left to monitor",
                    address,
                )

    def add_members(self, sd: ServerDescription) -> None:
        """Add every member this server reports that the topology does not have yet."""
        servers = self.servers
        for address in sorted(sd.all_hosts, key=_address_sort_key):
            if address not in servers:
                servers[address] = ServerDescription(address)
                self.added = _append(self.added, address)

    def check_if_has_primary(self) -> None:
        """checkIfHasPrimary."""
        if _has_primary(self.servers, self.previous):
            self.type = _WITH_PRIMARY
        else:
            self.type = _NO_PRIMARY

    def mark_possible_primary(self, sd: ServerDescription) -> None:
        primary = sd.primary
        if primary is None:
            return
        current = self.servers.get(primary)
        if current is not None and current.type is _UNKNOWN:
            self.servers[primary] = current.replace(type=_S.POSSIBLE_PRIMARY)

    def update_unknown_with_standalone(self, sd: ServerDescription) -> None:
        if sd.address not in self.servers:
            return
        if len(self.previous.settings.seeds) == 1:
            self.type = _T.SINGLE
        else:
            self.remove(sd.address)

    def update_rs_without_primary(self, sd: ServerDescription) -> None:
        if sd.address not in self.servers:
            return
        if self.set_name is None:
            self.set_name = sd.set_name
        elif self.set_name != sd.set_name:
            self.remove(sd.address)
            return
        self.add_members(sd)
        self.mark_possible_primary(sd)
        if sd.me is not None and sd.address != sd.me:
            self.remove(sd.address)

    def update_rs_with_primary_from_member(self, sd: ServerDescription) -> None:
        if sd.address not in self.servers:
            # Another thread heard from the primary that this server left the set.
            return
        if self.set_name != sd.set_name or (sd.me is not None and sd.address != sd.me):
            self.remove(sd.address)
            self.check_if_has_primary()
            return
        # Had this member been the primary?
        if not _has_primary(self.servers, self.previous):
            self.type = _NO_PRIMARY
            self.mark_possible_primary(sd)

    def update_rs_from_primary(self, sd: ServerDescription) -> None:
        address = sd.address
        if address not in self.servers:
            return
        if self.set_name is None:
            self.set_name = sd.set_name
        elif self.set_name != sd.set_name:
            # A primary, but not of the set the user named or we discovered.
            self.remove(address)
            self.check_if_has_primary()
            return

        if not self._accept_election(sd):
            self.check_if_has_primary()
            return

        for other, other_sd in list(self.servers.items()):
            if other != address and other_sd.type is _RS_PRIMARY:
                self.servers[other] = ServerDescription.from_error(
                    other, "primary marked stale due to discovery of newer primary"
                )
                self.request_check = _append(self.request_check, other)
                if other_sd.max_wire_version < WIRE_VERSION_4_2:
                    self.clear_pools = _append(self.clear_pools, other)

        self.add_members(sd)
        members = sd.all_hosts
        for other in list(self.servers):
            if other not in members:
                self.remove(other)
        self.check_if_has_primary()

    def _accept_election(self, sd: ServerDescription) -> bool:
        """The (electionId, setVersion) check. False, and the server marked Unknown, if stale."""
        election_id, set_version = sd.election_id, sd.set_version
        if sd.max_wire_version >= 17:  # MongoDB 6.0+: electionId first; null is least.
            by_election = _cmp_nullable(election_id, self.max_election_id)
            if by_election > 0 or (
                by_election == 0 and _cmp_nullable(set_version, self.max_set_version) >= 0
            ):
                self.max_election_id = election_id
                self.max_set_version = set_version
                return True
            self._mark_stale_primary(sd)
            return False

        # Older servers: setVersion is compared before electionId.
        if set_version is not None and election_id is not None:
            if self.max_set_version is not None and self.max_election_id is not None:
                by_version = _cmp_nullable(set_version, self.max_set_version)
                if by_version < 0 or (
                    by_version == 0 and _cmp_nullable(election_id, self.max_election_id) < 0
                ):
                    self._mark_stale_primary(sd)
                    return False
            self.max_election_id = election_id
        if set_version is not None and _cmp_nullable(set_version, self.max_set_version) > 0:
            self.max_set_version = set_version
        return True

    def _mark_stale_primary(self, sd: ServerDescription) -> None:
        self.servers[sd.address] = ServerDescription.from_error(
            sd.address,
            "primary marked stale due to electionId/setVersion mismatch, "
            f"({sd.election_id}, {sd.set_version}) is stale compared to "
            f"({self.max_election_id}, {self.max_set_version})",
        )


def _set_type(topology_type: TopologyType, then: _Handler | None = None) -> _Handler:
    def handler(update: _Update, sd: ServerDescription) -> None:
        update.type = topology_type
        if then is not None:
            then(update, sd)

    return handler


def _remove(update: _Update, sd: ServerDescription) -> None:
    update.remove(sd.address)


def _remove_and_check(update: _Update, sd: ServerDescription) -> None:
    update.remove(sd.address)
    update.check_if_has_primary()


_Handler = Callable[[_Update, ServerDescription], None]

# The seed's TopologyType table: (TopologyType, ServerType) -> action; absent = no-op.
_TABLE: dict[TopologyType, dict[ServerType, _Handler]] = {
    _T.UNKNOWN: {
        _S.STANDALONE: _Update.update_unknown_with_standalone,
        _S.MONGOS: _set_type(_T.SHARDED),
        _S.RS_PRIMARY: _set_type(_T.REPLICA_SET_WITH_PRIMARY, _Update.update_rs_from_primary),
        _S.RS_SECONDARY: _set_type(_T.REPLICA_SET_NO_PRIMARY, _Update.update_rs_without_primary),
        _S.RS_ARBITER: _set_type(_T.REPLICA_SET_NO_PRIMARY, _Update.update_rs_without_primary),
        _S.RS_OTHER: _set_type(_T.REPLICA_SET_NO_PRIMARY, _Update.update_rs_without_primary),
    },
    _T.SHARDED: {
        _S.STANDALONE: _remove,
        _S.RS_PRIMARY: _remove,
        _S.RS_SECONDARY: _remove,
        _S.RS_ARBITER: _remove,
        _S.RS_OTHER: _remove,
        _S.RS_GHOST: _remove,
    },
    _T.REPLICA_SET_NO_PRIMARY: {
        _S.STANDALONE: _remove,
        _S.MONGOS: _remove,
        _S.RS_PRIMARY: _set_type(_T.REPLICA_SET_WITH_PRIMARY, _Update.update_rs_from_primary),
        _S.RS_SECONDARY: _Update.update_rs_without_primary,
        _S.RS_ARBITER: _Update.update_rs_without_primary,
        _S.RS_OTHER: _Update.update_rs_without_primary,
    },
    _T.REPLICA_SET_WITH_PRIMARY: {
        _S.UNKNOWN: lambda update, sd: update.check_if_has_primary(),
        _S.RS_GHOST: lambda update, sd: update.check_if_has_primary(),
        _S.STANDALONE: _remove_and_check,
        _S.MONGOS: _remove_and_check,
        _S.RS_PRIMARY: _Update.update_rs_from_primary,
        _S.RS_SECONDARY: _Update.update_rs_with_primary_from_member,
        _S.RS_ARBITER: _Update.update_rs_with_primary_from_member,
        _S.RS_OTHER: _Update.update_rs_with_primary_from_member,
    },
}


def _has_primary(
    servers: Mapping[Address, ServerDescription], previous: TopologyDescription
) -> bool:
    # Fast path: the previous primary (computed once per description, and needed by
    # server selection anyway) is usually still there.
    hint = previous.primary
    if hint is not None:
        current = servers.get(hint.address)
        if current is not None and current.type is _RS_PRIMARY:
            return True
    return any(sd.type is _RS_PRIMARY for sd in servers.values())


def _cmp_nullable(a: Any, b: Any) -> int:
    """Compare with null less than every value (the seed's electionId/setVersion rule).

    ``a`` is the reported value, ``b`` the stored maximum. Parsing guarantees the
    types (ObjectId, int), but a description can be built by hand: values that
    cannot be ordered against each other count ``a`` as newer, so a bad maximum is
    replaced by the next primary rather than failing every later comparison.
    """
    if a is None:
        return 0 if b is None else -1
    if b is None:
        return 1
    try:
        return 1 if a > b else (-1 if a < b else 0)
    except TypeError:
        return 1


def _address_sort_key(address: Address) -> tuple[str, int]:
    return (address.host, address.port or 0)


# --- the Transition -----------------------------------------------------------------


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
    stored = update.servers.get(applied.address)
    # Compatible before and the checked server compatible: compatible now, without a
    # pass over every server at the next selection. An update changes no other server
    # but to Unknown or PossiblePrimary (added, demoted or invalidated), which have no
    # wire versions, or by removing it.
    description = TopologyDescription.adopting(
        update.type,
        update.servers,
        previous.settings,
        update.set_name,
        update.max_election_id,
        update.max_set_version,
        previous.known_compatible and (stored is None or incompatibility(stored) is None),
    )
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
    current = description.servers.get(sd.address)
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
    return Transition(description, closed, removed=tuple(description.servers))
