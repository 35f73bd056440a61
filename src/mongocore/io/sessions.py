"""Server sessions, their pool, and the cluster time a client gossips.

Spec: Driver Sessions ("ServerSession", "Generating a session ID locally", "Server
Session Pool" and its two algorithms, "Gossipping the cluster time"), with the
transaction number the retryable-writes seed keeps per server session ("Generating
Transaction IDs"). Pooled server sessions keep their transaction number, so every
retryable write on one ``lsid`` has a higher ``txnNumber`` than the last. The pool
is thread-safe.
"""

from __future__ import annotations

import collections
import threading
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Optional

from bson import Binary, Int64, Timestamp

from mongocore.core.description.types import TopologyType
from mongocore.io import clock as _clock

if TYPE_CHECKING:
    from mongocore.core.description.topology import TopologyDescription

#: "about to expire": less than one minute left before the server forgets it.
EXPIRY_MARGIN = 60.0

# An enum member compared on every acquire and release, bound once: on Python 3.11
# an enum member read from its class is several times slower (EnumType.__getattr__).
_LOAD_BALANCED = TopologyType.LOAD_BALANCED


class ServerSession:
    """A server session: its id (``{id: UUID}``), when it was last sent, its txnNumber.

    ``dirty`` marks a session that met a network error: an operation may still be
    running on the server under this id, so it is never pooled again.
    """

    __slots__ = ("_clock", "dirty", "generation", "last_use", "session_id", "txn_number")

    def __init__(self, generation: int = 0, clock: Callable[[], float] = _clock.monotonic) -> None:
        # A version 4 UUID, as BSON binary subtype 4 ("Generating a session ID locally").
        self.session_id: dict[str, Any] = {"id": Binary(uuid.uuid4().bytes, 4)}
        self._clock = clock
        self.last_use = clock()
        self.txn_number = 0
        self.dirty = False
        self.generation = generation

    def touch(self) -> None:
        """The id is being sent to the server now ("lastUse")."""
        self.last_use = self._clock()

    def next_txn_number(self) -> Int64:
        """A transaction number larger than any used before on this session."""
        self.txn_number += 1
        return Int64(self.txn_number)

    def __repr__(self) -> str:
        value = self.session_id["id"]
        return f"<ServerSession {value.as_uuid()} txnNumber={self.txn_number}>"


class ServerSessionPool:
    """The client's pool of server sessions: a deque, most recently released first.

    Follows the spec's two algorithms: acquiring takes from the front, skipping
    (dropping) sessions about to expire; releasing first drops expiring sessions from
    the back, then keeps the released one at the front unless it is dirty or about
    to expire. There is no maximum size. Both take the topology description in force,
    whose session timeout decides what is about to expire.
    """

    def __init__(self, clock: Callable[[], float] = _clock.monotonic) -> None:
        self._lock = threading.Lock()
        self._sessions: collections.deque[ServerSession] = collections.deque()
        self._clock = clock
        self._generation = 0
        #: The description last given and how long a session may then have been idle
        #: (seconds; None: nothing is known to expire), worked out once per
        #: description: descriptions are immutable, and change only with the topology.
        self._idle_limit: tuple[object, Optional[float]] = (None, None)

    def __len__(self) -> int:
        return len(self._sessions)

    def _max_idle(self, description: TopologyDescription) -> Optional[float]:
        minutes = session_timeout_minutes(description)
        max_idle = None if minutes is None else minutes * 60.0 - EXPIRY_MARGIN
        self._idle_limit = (description, max_idle)
        return max_idle

    def acquire(self, description: TopologyDescription) -> ServerSession:
        known, max_idle = self._idle_limit
        if known is not description:
            max_idle = self._max_idle(description)
        # acquire and release, not a with block (twice the cost): every operation takes
        # this lock twice, for its implicit session.
        lock = self._lock
        lock.acquire()
        try:
            sessions = self._sessions
            if sessions:
                if max_idle is None:  # nothing is known to expire
                    return sessions.popleft()
                # One cutoff for the whole call, compared with each session's last use.
                cutoff = self._clock() - max_idle
                while sessions:
                    session = sessions.popleft()
                    if session.last_use >= cutoff:
                        return session
            generation = self._generation
        finally:
            lock.release()
        return ServerSession(generation, self._clock)

    def release(self, session: ServerSession, description: TopologyDescription) -> None:
        known, max_idle = self._idle_limit
        if known is not description:
            max_idle = self._max_idle(description)
        cutoff = None if max_idle is None else self._clock() - max_idle
        lock = self._lock
        lock.acquire()  # not a with block: see acquire
        try:
            sessions = self._sessions
            if cutoff is not None:  # else nothing is known to expire
                while sessions and sessions[-1].last_use < cutoff:
                    sessions.pop()
            if session.generation != self._generation:
                return  # checked out before a reset: never returns to the new pool
            if session.dirty or (cutoff is not None and session.last_use < cutoff):
                return
            sessions.appendleft(session)
        finally:
            lock.release()

    def drain(self) -> list[dict[str, Any]]:
        """Empty the pool and return the ids it held (for ``endSessions`` at close)."""
        with self._lock:
            ids = [s.session_id for s in self._sessions]
            self._sessions.clear()
            self._generation += 1
        return ids

    def reset(self) -> None:
        """Forget every pooled session without ending them on the server (after a fork).

        Sessions checked out now are not taken back when they are released.
        """
        self.drain()


def session_timeout_minutes(description: TopologyDescription) -> Optional[int]:
    """The timeout the pool applies to server sessions: the topology's
    logicalSessionTimeoutMinutes, unknown (None) in load-balanced mode, where "the
    driver ... use[s] this ServerSession" whatever its age. A session less than
    EXPIRY_MARGIN from it is about to expire."""
    if description.type is _LOAD_BALANCED:
        return None
    return description.logical_session_timeout_minutes


def cluster_time_greater(a: Optional[Mapping[str, Any]], b: Optional[Mapping[str, Any]]) -> bool:
    """Is cluster time ``a`` greater than ``b``? Only ``clusterTime`` (both parts of the
    Timestamp) counts; the signature does not. None is less than anything."""
    if a is None:
        return False
    if b is None:
        return True
    ta, tb = a.get("clusterTime"), b.get("clusterTime")
    if not isinstance(ta, Timestamp):
        return False
    if not isinstance(tb, Timestamp):
        return True
    return bool(ta > tb)


def newer_cluster_time(
    a: Optional[Mapping[str, Any]], b: Optional[Mapping[str, Any]]
) -> Optional[Mapping[str, Any]]:
    """The greater of two cluster times (either may be None)."""
    return a if cluster_time_greater(a, b) else (b if b is not None else a)


class ClusterClock:
    """The highest cluster time a client has received from a server (thread-safe).

    Only ``$clusterTime`` documents received directly from servers advance it, never
    a session's cluster time (which an application may set).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: Optional[Mapping[str, Any]] = None

    @property
    def value(self) -> Optional[Mapping[str, Any]]:
        return self._value

    def advance(self, cluster_time: Any) -> None:
        # None first: a reply without $clusterTime skips the (slower) ABC check.
        if (
            cluster_time is None
            or not isinstance(cluster_time, Mapping)
            or not isinstance(cluster_time.get("clusterTime"), Timestamp)
        ):
            return
        with self._lock:
            if cluster_time_greater(cluster_time, self._value):
                self._value = cluster_time
