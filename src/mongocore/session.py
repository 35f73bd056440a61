"""Driver sessions: server sessions, their pool, client sessions, and cluster time.

Spec: Driver Sessions ("ServerSession", "Generating a session ID locally", "Server
Session Pool" and its two algorithms, "ClientSession", "Gossipping the cluster
time"), with the transaction number the retryable-writes seed keeps per server
session ("Generating Transaction IDs"), and the ``afterClusterTime`` of causally
consistent reads.

A :class:`ClientSession` is what the application holds (explicit, from
``client.start_session()``) or what an operation makes for itself (implicit). It is
bound to one :class:`ServerSession` for its whole life, taken from the client's
:class:`ServerSessionPool` only when a command first needs an ``lsid`` (after a
connection was checked out), and returned to the pool when the session ends. Pooled
server sessions keep their transaction number, so every retryable write on one
``lsid`` has a higher ``txnNumber`` than the last.

Sessions are not thread-safe: a ClientSession must be used by one thread at a time
(the spec forbids detecting misuse). The pool is thread-safe.
"""

from __future__ import annotations

import collections
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional

from bson import Binary, Int64, Timestamp

from mongocore.errors import InvalidOperation

if TYPE_CHECKING:
    from mongocore.client import Client

__all__ = [
    "ClientSession",
    "ClusterClock",
    "ServerSession",
    "ServerSessionPool",
    "SessionOptions",
    "cluster_time_greater",
    "newer_cluster_time",
]

#: "about to expire": less than one minute left before the server forgets it.
EXPIRY_MARGIN = 60.0


class ServerSession:
    """A server session: its id (``{id: UUID}``), when it was last sent, its txnNumber.

    ``dirty`` marks a session that met a network error: an operation may still be
    running on the server under this id, so it is never pooled again.
    """

    __slots__ = ("_clock", "dirty", "generation", "last_use", "session_id", "txn_number")

    def __init__(self, generation: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
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

    def timed_out(self, timeout_minutes: Optional[int], now: float) -> bool:
        """True if it has less than a minute left before the server considers it stale.

        With no known timeout (no data-bearing server seen yet, or a load balancer)
        nothing is known to expire.
        """
        if timeout_minutes is None:
            return False
        idle = now - self.last_use
        return idle > timeout_minutes * 60.0 - EXPIRY_MARGIN

    def __repr__(self) -> str:
        value = self.session_id["id"]
        return f"<ServerSession {value.as_uuid()} txnNumber={self.txn_number}>"


class ServerSessionPool:
    """The client's pool of server sessions: a deque, most recently released first.

    Follows the spec's two algorithms: acquiring takes from the front, skipping
    (dropping) sessions about to expire; releasing first drops expiring sessions from
    the back, then keeps the released one at the front unless it is dirty or about
    to expire. There is no maximum size.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._sessions: collections.deque[ServerSession] = collections.deque()
        self._clock = clock
        self._generation = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def acquire(self, timeout_minutes: Optional[int]) -> ServerSession:
        now = self._clock()
        with self._lock:
            while self._sessions:
                session = self._sessions.popleft()
                if not session.timed_out(timeout_minutes, now):
                    return session
            generation = self._generation
        return ServerSession(generation, self._clock)

    def release(self, session: ServerSession, timeout_minutes: Optional[int]) -> None:
        now = self._clock()
        with self._lock:
            while self._sessions and self._sessions[-1].timed_out(timeout_minutes, now):
                self._sessions.pop()
            if session.generation != self._generation:
                return  # checked out before a reset: never returns to the new pool
            if session.dirty or session.timed_out(timeout_minutes, now):
                return
            self._sessions.appendleft(session)

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
        if not isinstance(cluster_time, Mapping) or not isinstance(
            cluster_time.get("clusterTime"), Timestamp
        ):
            return
        with self._lock:
            if cluster_time_greater(cluster_time, self._value):
                self._value = cluster_time


@dataclass(frozen=True)
class SessionOptions:
    """Options of an explicit session, fixed when it starts.

    ``causal_consistency`` (default True for explicit sessions): reads in the session
    carry ``readConcern.afterClusterTime`` of the session's last operation, so they
    see that operation's writes even on a lagging secondary.
    """

    causal_consistency: Optional[bool] = None


class ClientSession:
    """A client session: start one with ``client.start_session()``, pass it as
    ``session=`` to operations, end it with ``end_session()`` or a ``with`` block.

    Not thread-safe. Waiting more than a minute between starting a session and
    using it risks the server session going stale before its first use. An implicit
    session (one an operation makes when none is given) is never seen by
    applications.
    """

    def __init__(
        self,
        client: Client,
        options: Optional[SessionOptions] = None,
        *,
        implicit: bool = False,
    ) -> None:
        self._client = client
        self._options = options or SessionOptions()
        self._implicit = implicit
        self._server_session: Optional[ServerSession] = None
        self._ended = False
        self._cluster_time: Optional[Mapping[str, Any]] = None
        self._operation_time: Optional[Timestamp] = None

    # --- the spec's members ----------------------------------------------------------

    @property
    def client(self) -> Client:
        return self._client

    @property
    def options(self) -> SessionOptions:
        return self._options

    @property
    def implicit(self) -> bool:
        return self._implicit

    @property
    def has_ended(self) -> bool:
        return self._ended

    @property
    def causal_consistency(self) -> bool:
        if self._implicit:
            return False
        value = self._options.causal_consistency
        return True if value is None else value

    @property
    def session_id(self) -> Mapping[str, Any]:
        """The ``lsid`` document; starts using a server session if none was yet."""
        return self._server_session_for_use().session_id

    @property
    def cluster_time(self) -> Optional[Mapping[str, Any]]:
        return self._cluster_time

    @property
    def operation_time(self) -> Optional[Timestamp]:
        return self._operation_time

    @property
    def in_transaction(self) -> bool:
        """Always False: mongocore runs no multi-document transactions."""
        return False

    @property
    def txn_number(self) -> int:
        """The transaction number last used on this session's server session (0: none)."""
        return 0 if self._server_session is None else self._server_session.txn_number

    @property
    def dirty(self) -> bool:
        return self._server_session is not None and self._server_session.dirty

    def advance_cluster_time(self, cluster_time: Mapping[str, Any]) -> None:
        """Advance this session's cluster time (never the client's: it cannot be verified)."""
        if not isinstance(cluster_time, Mapping) or not isinstance(
            cluster_time.get("clusterTime"), Timestamp
        ):
            raise TypeError("cluster_time must be a document with a Timestamp 'clusterTime'")
        if cluster_time_greater(cluster_time, self._cluster_time):
            self._cluster_time = cluster_time

    def advance_operation_time(self, operation_time: Timestamp) -> None:
        if not isinstance(operation_time, Timestamp):
            raise TypeError("operation_time must be a bson Timestamp")
        if self._operation_time is None or operation_time > self._operation_time:
            self._operation_time = operation_time

    def end_session(self) -> None:
        """End the session, returning its server session to the pool. Idempotent."""
        if self._ended:
            return
        self._ended = True
        server_session, self._server_session = self._server_session, None
        if server_session is not None:
            self._client._release_server_session(server_session)

    def __enter__(self) -> ClientSession:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.end_session()

    def __repr__(self) -> str:
        kind = "implicit" if self._implicit else "explicit"
        state = "ended" if self._ended else repr(self._server_session)
        return f"<ClientSession {kind} {state}>"

    # --- used by the operation executor ----------------------------------------------

    def _check_usable(self, client: Client) -> None:
        """Raise if the session cannot be used with ``client`` ("Methods that have a
        session parameter MUST check ...")."""
        if self._ended:
            raise InvalidOperation("cannot use a session that has ended")
        if self._client is not client:
            raise InvalidOperation("this session was started by another Client")

    def _server_session_for_use(self) -> ServerSession:
        if self._ended:
            raise InvalidOperation("cannot use a session that has ended")
        if self._server_session is None:
            self._server_session = self._client._acquire_server_session()
        return self._server_session

    def _use_lsid(self) -> dict[str, Any]:
        """The ``lsid`` to send now; records the use for the session's expiry."""
        server_session = self._server_session_for_use()
        server_session.touch()
        return server_session.session_id

    def _next_txn_number(self) -> Int64:
        return self._server_session_for_use().next_txn_number()

    def _mark_dirty(self) -> None:
        if self._server_session is not None:
            self._server_session.dirty = True

    def _process_reply(self, reply: Mapping[str, Any]) -> None:
        """Advance cluster and operation time from a server's reply (ok or not)."""
        cluster_time = reply.get("$clusterTime")
        if isinstance(cluster_time, Mapping) and isinstance(
            cluster_time.get("clusterTime"), Timestamp
        ):
            self.advance_cluster_time(cluster_time)
        operation_time = reply.get("operationTime")
        if isinstance(operation_time, Timestamp):
            self.advance_operation_time(operation_time)
