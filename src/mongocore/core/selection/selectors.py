"""Server selection over an immutable TopologyDescription: suitability, then the latency window.

Seed: server-selection.rst 1.5, sections "Rules for server selection" (the order:
compatibility, maxStalenessSeconds checks, suitable servers, latency window,
random choice), "Topology type: Unknown", "Topology type: Single", "Topology
types: ReplicaSetWithPrimary or ReplicaSetNoPrimary", "Topology type: Sharded",
"mode", "maxStalenessSeconds" (the staleness formulas), "tag_sets" and "Selecting
servers within the latency window".

Added from the newer upstream spec (it only adds): the LoadBalanced topology (its
one load balancer is always suitable) and deprioritized servers (filtered out
first, unless that leaves no suitable server).

Each TopologyDescription is immutable, so what every selection needs is computed
once per description (the spec's "precompute once per description"): a
:class:`SelectionFacts`, made from a description and immutable in turn, holds the
primary, the secondaries, the mongoses and the available servers. The latency window
of a read preference is a pure function of the facts (:func:`latency_window`); the
shell keeps the windows it has computed for the current description
(``mongocore.io.selection_cache``), so that a repeated selection is a dictionary
look-up and one random draw. The random draw is the caller's: :func:`choose` takes the
random source, and this module keeps no random state of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Optional, Protocol, Union

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import IncompatibleServerError, InvalidReadPreference

__all__ = [
    "IDLE_WRITE_PERIOD_MS",
    "MAX_STALENESS_MIN_WIRE_VERSION",
    "SMALLEST_MAX_STALENESS_SECONDS",
    "RandomSource",
    "SelectionFacts",
    "choose",
    "in_latency_window",
    "latency_window",
    "select_server",
    "select_servers",
    "staleness",
]

#: idleWritePeriodMS: how often an idle primary writes a no-op (Max Staleness spec).
IDLE_WRITE_PERIOD_MS = 10_000
#: smallestMaxStalenessSeconds.
SMALLEST_MAX_STALENESS_SECONDS = 90
#: maxStalenessSeconds needs servers of wire version 5 (MongoDB 3.4) or newer.
MAX_STALENESS_MIN_WIRE_VERSION = 5

# Float slack for the "<=" comparisons on times in seconds: RTTs and dates come from
# milliseconds, and 0.005 + 0.015 need not equal 0.02 exactly. A nanosecond changes
# no real outcome and keeps the seed's inclusive bounds inclusive.
_EPSILON = 1e-9

_T = TopologyType
_RS_TYPES = frozenset({_T.REPLICA_SET_NO_PRIMARY, _T.REPLICA_SET_WITH_PRIMARY})
# Plain names: looking a member up on an Enum class is slow on older Pythons.
_UNKNOWN = ServerType.UNKNOWN
_POSSIBLE_PRIMARY = ServerType.POSSIBLE_PRIMARY  # like Unknown, "not available"
_PRIMARY = ServerType.RS_PRIMARY
_SECONDARY = ServerType.RS_SECONDARY
_MONGOS = ServerType.MONGOS
_LOAD_BALANCER = ServerType.LOAD_BALANCER
_SINGLE = TopologyType.SINGLE
_SHARDED = TopologyType.SHARDED
_LOAD_BALANCED = TopologyType.LOAD_BALANCED
_WITH_PRIMARY = TopologyType.REPLICA_SET_WITH_PRIMARY
_MODE_PRIMARY = Mode.PRIMARY
_MODE_PRIMARY_PREFERRED = Mode.PRIMARY_PREFERRED
_MODE_SECONDARY = Mode.SECONDARY
_MODE_NEAREST = Mode.NEAREST
_EMPTY: tuple[ServerDescription, ...] = ()
_MISSING = object()


class RandomSource(Protocol):
    """Anything with ``random() -> float`` in [0, 1), such as ``random.Random``."""

    def random(self) -> float: ...


Deprioritized = Iterable[Union[Address, ServerDescription]]


# --- what every selection on one description needs, computed once ---------------


class SelectionFacts:
    """The candidate lists of one description (or of a view without some servers),
    computed when it is made and immutable afterwards."""

    __slots__ = (
        "available",
        "description",
        "members",
        "primary",
        "routed",
        "routing",
        "secondaries",
    )

    description: TopologyDescription
    #: Single, Sharded, LoadBalanced: the read preference is not used to select.
    routing: bool
    #: ... and then these servers are suitable for any operation.
    routed: tuple[ServerDescription, ...]
    primary: Optional[ServerDescription]
    secondaries: tuple[ServerDescription, ...]
    #: The primary and the secondaries, in the description's order ('nearest').
    members: tuple[ServerDescription, ...]
    #: Every available server (for the maxStalenessSeconds wire version check).
    available: tuple[ServerDescription, ...]

    def __init__(self, description: TopologyDescription) -> None:
        topology_type = description.type
        available: list[ServerDescription] = []
        members: list[ServerDescription] = []
        secondaries: list[ServerDescription] = []
        mongoses: list[ServerDescription] = []
        balancers: list[ServerDescription] = []
        primary = None
        # One pass, comparing types by identity with module-level names: this runs
        # once per description, but on every topology change.
        for sd in description.servers.values():
            server_type = sd.type
            if server_type is _UNKNOWN or server_type is _POSSIBLE_PRIMARY:
                continue  # not available
            available.append(sd)
            if server_type is _SECONDARY:
                secondaries.append(sd)
                members.append(sd)
            elif server_type is _PRIMARY:
                members.append(sd)
                if primary is None:
                    primary = sd
            elif server_type is _MONGOS:
                mongoses.append(sd)
            elif server_type is _LOAD_BALANCER:
                balancers.append(sd)
        routing = True
        routed = _EMPTY
        if topology_type is _SINGLE:
            # "The single server is always suitable ... if it is available."
            routed = tuple(available)
        elif topology_type is _SHARDED:
            routed = tuple(mongoses)
        elif topology_type is _LOAD_BALANCED:
            routed = tuple(balancers)
        else:
            routing = False
        is_replica_set = topology_type in _RS_TYPES
        _init(
            self,
            description,
            routing,
            routed,
            primary if is_replica_set else None,
            tuple(secondaries) if is_replica_set else _EMPTY,
            tuple(members) if is_replica_set else _EMPTY,
            tuple(available),
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SelectionFacts is immutable; cannot set {name!r}")

    def without(self, excluded: frozenset[Address]) -> SelectionFacts:
        """A view with the deprioritized servers left out."""
        view = _new_object(SelectionFacts)
        primary = self.primary
        _init(
            view,
            self.description,
            self.routing,
            tuple(sd for sd in self.routed if sd.address not in excluded),
            None if primary is None or primary.address in excluded else primary,
            tuple(sd for sd in self.secondaries if sd.address not in excluded),
            tuple(sd for sd in self.members if sd.address not in excluded),
            self.available,
        )
        return view


_new_object = object.__new__
_set = object.__setattr__


def _init(  # noqa: PLR0917 - positional, as the slots are listed
    facts: SelectionFacts,
    description: TopologyDescription,
    routing: bool,
    routed: tuple[ServerDescription, ...],
    primary: Optional[ServerDescription],
    secondaries: tuple[ServerDescription, ...],
    members: tuple[ServerDescription, ...],
    available: tuple[ServerDescription, ...],
) -> None:
    _set(facts, "description", description)
    _set(facts, "routing", routing)
    _set(facts, "routed", routed)
    _set(facts, "primary", primary)
    _set(facts, "secondaries", secondaries)
    _set(facts, "members", members)
    _set(facts, "available", available)


# --- staleness --------------------------------------------------------------------


def _staleness_of_secondaries(description: TopologyDescription) -> dict[Address, Optional[float]]:
    heartbeat = description.settings.heartbeat_frequency
    secondaries = [sd for sd in description.servers.values() if sd.type is _SECONDARY]
    result: dict[Address, Optional[float]] = {}
    primary = description.primary
    if (
        description.type is _WITH_PRIMARY
        and primary is not None
        and primary.last_write_date is not None
    ):
        # (S.lastUpdateTime - S.lastWriteDate) - (P.lastUpdateTime - P.lastWriteDate)
        #   + heartbeatFrequencyMS
        primary_lag = primary.last_update_time - primary.last_write_date
        for sd in secondaries:
            lwd = sd.last_write_date
            result[sd.address] = (
                None if lwd is None else (sd.last_update_time - lwd) - primary_lag + heartbeat
            )
        return result
    # ReplicaSetNoPrimary: SMax.lastWriteDate - S.lastWriteDate + heartbeatFrequencyMS,
    # SMax being the secondary with the greatest lastWriteDate.
    dates = [sd.last_write_date for sd in secondaries if sd.last_write_date is not None]
    newest = max(dates) if dates else None
    for sd in secondaries:
        lwd = sd.last_write_date
        result[sd.address] = None if lwd is None or newest is None else newest - lwd + heartbeat
    return result


def staleness(description: TopologyDescription, server: ServerDescription) -> Optional[float]:
    """The seed's staleness estimate of ``server``, in seconds.

    Non-secondaries have zero staleness. None for a secondary whose staleness
    cannot be estimated (no lastWriteDate): such a secondary is never eligible
    when a maxStalenessSeconds is set.
    """
    if server.type is not _SECONDARY:
        return 0.0
    return _staleness_of_secondaries(description).get(server.address)


# --- the seed's checks before suitability ---------------------------------------


def _check_compatible(description: TopologyDescription) -> None:
    error = description.compatibility_error
    if error is not None:
        raise IncompatibleServerError(error)


def _max_wire_version(sd: ServerDescription) -> int:
    return sd.max_wire_version


def _check_max_staleness(
    description: TopologyDescription, facts: SelectionFacts, read_preference: ReadPreference
) -> None:
    """The maxStalenessSeconds checks that depend on the deployment."""
    max_staleness = read_preference.max_staleness_seconds
    if max_staleness is None or description.type is TopologyType.LOAD_BALANCED:
        # Load balancers: no server is monitored, so nothing is known of the versions
        # behind it; the read preference goes through as it is (load balancer spec).
        return
    oldest = min(facts.available, key=_max_wire_version, default=None)
    if oldest is not None and oldest.max_wire_version < MAX_STALENESS_MIN_WIRE_VERSION:
        raise InvalidReadPreference(
            f"read preference {read_preference} sets maxStalenessSeconds, which needs "
            f"MongoDB 3.4 (wire version {MAX_STALENESS_MIN_WIRE_VERSION}) or newer, but "
            f"server {oldest.address} reports wire version {oldest.max_wire_version}"
        )
    if description.type in _RS_TYPES:
        heartbeat_ms = description.settings.heartbeat_frequency_ms
        floor_ms = heartbeat_ms + IDLE_WRITE_PERIOD_MS
        if max_staleness * 1000 < floor_ms:
            raise InvalidReadPreference(
                f"maxStalenessSeconds={max_staleness} is too small: with "
                f"heartbeatFrequencyMS={heartbeat_ms} it must be at least "
                f"(heartbeatFrequencyMS + idleWritePeriodMS) / 1000 = {floor_ms / 1000:g} "
                "seconds, because staleness cannot be estimated more finely"
            )
        if max_staleness < SMALLEST_MAX_STALENESS_SECONDS:
            raise InvalidReadPreference(
                f"maxStalenessSeconds={max_staleness} is too small: it must be at least "
                f"{SMALLEST_MAX_STALENESS_SECONDS} seconds (smallestMaxStalenessSeconds)"
            )


# --- suitability ------------------------------------------------------------------


def _eligible(
    facts: SelectionFacts,
    candidates: tuple[ServerDescription, ...],
    read_preference: ReadPreference,
) -> tuple[ServerDescription, ...]:
    """Filter candidates by maxStalenessSeconds, then by the first matching tag set."""
    max_staleness = read_preference.max_staleness_seconds
    if max_staleness is not None and candidates:
        # Over the whole description: leaving deprioritized servers out of selection
        # does not change how stale the others are.
        stale = _staleness_of_secondaries(facts.description)
        limit = max_staleness + _EPSILON
        fresh = []
        for sd in candidates:
            if sd.type is _SECONDARY:
                value = stale.get(sd.address)
                if value is None or value > limit:
                    continue
            fresh.append(sd)
        candidates = tuple(fresh)
    tag_sets = read_preference.tag_sets
    if not read_preference.has_tags:
        # [{}] (the default) or only empty tag sets: every candidate matches.
        return candidates
    for tag_set in tag_sets:
        if not tag_set:
            return candidates
        if len(tag_set) == 1:
            # The common case, one tag: a plain look-up is several times faster.
            ((name, value),) = tag_set.items()
            matched = [sd for sd in candidates if sd.tags.get(name, _MISSING) == value]
        else:
            wanted = tag_set.items()
            matched = [sd for sd in candidates if wanted <= sd.tags.items()]
        if matched:
            return tuple(matched)
    return _EMPTY


def _suitable(
    facts: SelectionFacts, read_preference: Optional[ReadPreference]
) -> tuple[ServerDescription, ...]:
    """The seed's suitable servers by topology type and operation (None = write)."""
    if facts.routing:
        return facts.routed
    # Replica sets; for TopologyType Unknown every list is empty: nothing is suitable.
    primary = facts.primary
    if read_preference is None or read_preference.mode is _MODE_PRIMARY:
        return _EMPTY if primary is None else (primary,)
    mode = read_preference.mode
    if mode is _MODE_NEAREST:
        return _eligible(facts, facts.members, read_preference)
    if mode is _MODE_PRIMARY_PREFERRED:
        if primary is not None:
            return (primary,)
        return _eligible(facts, facts.secondaries, read_preference)
    found = _eligible(facts, facts.secondaries, read_preference)
    if found or mode is _MODE_SECONDARY:
        return found
    # secondaryPreferred with no eligible secondary: the primary.
    return _EMPTY if primary is None else (primary,)


def _deprioritized_addresses(deprioritized: Deprioritized) -> frozenset[Address]:
    return frozenset(
        item.address if isinstance(item, ServerDescription) else item for item in deprioritized
    )


def _suitable_servers(
    facts: SelectionFacts,
    read_preference: Optional[ReadPreference],
    deprioritized: Deprioritized,
) -> tuple[ServerDescription, ...]:
    description = facts.description
    _check_compatible(description)
    if read_preference is not None:
        _check_max_staleness(description, facts, read_preference)
    if deprioritized:
        excluded = _deprioritized_addresses(deprioritized)
        if excluded:
            found = _suitable(facts.without(excluded), read_preference)
            if found:
                return found
            # Nothing suitable without them: select as if none were deprioritized.
    return _suitable(facts, read_preference)


def select_servers(
    description: TopologyDescription,
    read_preference: Optional[ReadPreference] = None,
    *,
    deprioritized: Deprioritized = (),
) -> list[ServerDescription]:
    """The suitable servers for a read with ``read_preference``, or a write if it is None.

    ``deprioritized`` (addresses or descriptions) are left out unless that leaves
    no suitable server. Raises IncompatibleServerError if the description is not
    compatible, and InvalidReadPreference if maxStalenessSeconds cannot be used
    with this deployment. The latency window is not applied here.
    """
    return list(_suitable_servers(SelectionFacts(description), read_preference, deprioritized))


# --- the latency window -------------------------------------------------------------


def _window(
    servers: Sequence[ServerDescription], local_threshold: float
) -> tuple[ServerDescription, ...]:
    if len(servers) <= 1:
        return tuple(servers)
    # A server without an average RTT (a load balancer is never monitored) counts as 0.
    rtts = [0.0 if sd.round_trip_time is None else sd.round_trip_time for sd in servers]
    limit = min(rtts) + local_threshold + _EPSILON
    # A list comprehension, then a tuple: cheaper than a generator for a few servers.
    return tuple([sd for sd, rtt in zip(servers, rtts) if rtt <= limit])


def in_latency_window(
    servers: Sequence[ServerDescription], local_threshold: float
) -> list[ServerDescription]:
    """The servers whose average RTT is within ``local_threshold`` of the shortest.

    ``local_threshold`` is in seconds (``TopologySettings.local_threshold``):
    A is the shortest average RTT, and a server is in the window if A <= RTT <= A +
    localThresholdMS.
    """
    return list(_window(servers, local_threshold))


def latency_window(
    facts: SelectionFacts,
    read_preference: Optional[ReadPreference] = None,
    deprioritized: Deprioritized = (),
) -> tuple[ServerDescription, ...]:
    """The servers to choose from: suitable for a read with ``read_preference`` (a write
    if None), then within the latency window, in the seed's order.

    Raises IncompatibleServerError if the description is not compatible, and
    InvalidReadPreference if maxStalenessSeconds cannot be used here. Empty means no
    server is suitable now: the caller requests a check and waits.
    """
    description = facts.description
    if (
        not deprioritized
        and description.type is _WITH_PRIMARY
        and (read_preference is None or read_preference.mode is _MODE_PRIMARY)
    ):
        # Writes and mode primary: the primary alone, which the facts already know;
        # nothing else needs computing.
        _check_compatible(description)
        primary = facts.primary
        return _EMPTY if primary is None else (primary,)
    suitable = _suitable_servers(facts, read_preference, deprioritized)
    return _window(suitable, description.settings.local_threshold)


# --- selecting one server ---------------------------------------------------------


def choose(window: Sequence[ServerDescription], rng: RandomSource) -> Optional[ServerDescription]:
    """One server of ``window`` (a latency window), uniformly at random with ``rng``
    (the seed's "randomly select one"); None if the window is empty."""
    count = len(window)
    if count == 1:
        return window[0]
    if count == 0:
        return None
    # Uniform: random() is a multiple of 2**-53 in [0, 1), so each index is drawn
    # with probability 1/count to within count * 2**-53.
    return window[int(rng.random() * count)]


def select_server(
    description: TopologyDescription,
    read_preference: Optional[ReadPreference],
    rng: RandomSource,
    *,
    deprioritized: Deprioritized = (),
) -> Optional[ServerDescription]:
    """One server for a read with ``read_preference`` (a write if None), or None.

    In the seed's order: raise IncompatibleServerError if the description is not
    compatible; raise InvalidReadPreference if maxStalenessSeconds cannot be used
    here; find the suitable servers; keep those in the latency window; pick one of
    them uniformly at random with ``rng``. None means no server is suitable now: the
    caller requests a check and waits. Each call computes the description's
    :class:`SelectionFacts` afresh; a caller selecting on one description many times
    makes them once and calls :func:`latency_window` and :func:`choose`.
    """
    return choose(latency_window(SelectionFacts(description), read_preference, deprioritized), rng)
