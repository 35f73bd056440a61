"""The live topology: one lock and one condition around the current TopologyDescription.

Seeds: server-discovery-and-monitoring.md ("Replacing the TopologyDescription",
"Process one hello or legacy hello outcome at a time", "Connection Pool
Management", "Application errors") and server-selection.rst ("Multi-threaded or
asynchronous server selection").

The pure core decides; this module carries it out. Outcomes are applied one at a
time under the lock; pools are cleared and marked ready under the lock, as the seed
requires; monitors are started and stopped, and events published, after the lock is
released. No I/O happens while the lock is held: closing a pool or joining a
monitor thread is done outside it.
"""

from __future__ import annotations

import random
import sys
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional, Protocol

from bson import ObjectId

from mongocore.core.address import Address
from mongocore.core.description.errors import ApplicationError, ErrorDecision, ErrorKind, classify
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import (
    Transition,
    apply,
    apply_srv_hosts,
    remove_all,
)
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.events import (
    EventPublisher,
    SdamEvent,
    events_for_closing,
    events_for_opening,
    events_for_transition,
)
from mongocore.core.lazy_logger import get_logger
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.core.selection.selectors import choose, latency_window
from mongocore.errors import (
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    PoolClearedError,
    ProtocolError,
    ServerSelectionTimeoutError,
)
from mongocore.io import clock as _clock
from mongocore.io.selection_cache import SelectionCache

if TYPE_CHECKING:
    from logging import Logger

    from mongocore.io.selection_log import SelectionLog

_log = get_logger("mongocore.topology")

#: selection_log and its logger, loaded once logging is (import statements cost on
#: every call).
_SELECTION_LOG: list[tuple[Callable[..., Optional[SelectionLog]], Logger]] = []
_INFO = 20  # logging.INFO, without importing logging


def _load_selection_log() -> tuple[Callable[..., Optional[SelectionLog]], Logger]:
    import logging  # noqa: PLC0415 - see above

    from mongocore.io.selection_log import (  # noqa: PLC0415 - see above
        SERVER_SELECTION_LOGGER,
        selection_log,
    )

    if not _SELECTION_LOG:
        _SELECTION_LOG.append((selection_log, logging.getLogger(SERVER_SELECTION_LOGGER)))
    return _SELECTION_LOG[0]


class MonitorLike(Protocol):
    def open(self) -> None: ...
    def request_check(self) -> None: ...
    def cancel_check(self) -> None: ...
    def close(self) -> None: ...

    # Optional (looked up when needed): abandon(pool), for a topology freed unclosed.


class PoolLike(Protocol):
    @property
    def generation(self) -> int: ...
    def check_out(self, timeout: Optional[float] = None) -> Any: ...
    def check_in(self, conn: Any) -> None: ...
    def generation_for(self, service_id: Optional[object]) -> int: ...
    def ready(self) -> None: ...
    def clear(
        self, service_id: Optional[object] = None, interrupt_in_use_connections: bool = False
    ) -> None: ...
    def close(self, interrupt_in_use_connections: bool = False) -> None: ...


MonitorFactory = Callable[[Address, "Topology"], MonitorLike]
PoolFactory = Callable[[Address], PoolLike]


class EstablishedConnection(Protocol):
    """What the error handling needs from an application connection."""

    @property
    def address(self) -> Address: ...

    @property
    def generation(self) -> int: ...

    @property
    def max_wire_version(self) -> int: ...

    @property
    def service_id(self) -> Optional[Any]: ...


class Server:
    """A server of the topology as the shell holds it: its pool and its monitor."""

    __slots__ = ("address", "monitor", "pool")

    def __init__(self, address: Address, pool: PoolLike, monitor: Optional[MonitorLike]) -> None:
        self.address = address
        self.pool = pool
        self.monitor = monitor

    def __repr__(self) -> str:
        return f"<Server {self.address}>"


class Topology:
    """Owns the servers, applies outcomes, and selects servers for operations.

    ``monitor_factory`` and ``pool_factory`` build the shell's parts for one
    address; tests pass fakes. In LoadBalanced mode no monitor is created: the one
    server is a LoadBalancer from the start.
    """

    def __init__(
        self,
        settings: TopologySettings,
        *,
        pool_factory: PoolFactory,
        monitor_factory: MonitorFactory,
        publisher: Optional[EventPublisher] = None,
        rng: Optional[random.Random] = None,
        clock: Callable[[], float] = _clock.monotonic,
        topology_id: Optional[object] = None,
    ) -> None:
        self._settings = settings
        self._pool_factory = pool_factory
        self._monitor_factory = monitor_factory
        self._publisher = publisher or EventPublisher()
        self._rng = rng or random.Random()
        self._clock = clock
        self._lock = threading.Lock()
        self._condition = threading.Condition(self._lock)
        self._description = TopologyDescription.initial(settings)
        # Server selection's facts and latency windows for the current description
        # (replaced, not updated, when a selection finds a newer description).
        self._selection = SelectionCache(self._description)
        self._servers: dict[Address, Server] = {}
        # The pools of servers that left the topology, while an operation may still use
        # one of their connections: close() interrupts those too. Weak: a pool no
        # operation holds any more has nothing left to interrupt.
        self._retired: weakref.WeakSet[PoolLike] = weakref.WeakSet()
        self._opened = False
        self._closed = False
        # Unique per topology; an ObjectId, so that log messages can show it. The client
        # passes its own when its CMAP log messages need it before the topology exists.
        self.topology_id: object = ObjectId() if topology_id is None else topology_id
        # A topology its owner drops without closing it (a client never closed) is
        # freed as pymongo's is: nothing of the shell holds it strongly (monitors and
        # pools reach it through weak references), and this finalizer then ends their
        # threads. It holds the servers, never the topology; close() detaches it.
        self._finalizer = weakref.finalize(self, _abandon, self._servers)
        self._finalizer.atexit = False

    # --- life cycle -------------------------------------------------------------

    def open(self) -> None:
        """Create pools and start a monitor per seed (no I/O in the calling thread)."""
        with self._lock:
            if self._opened:
                return
            self._opened = True
            initial = self._description
            for address in initial.servers:
                self._servers[address] = self._new_server(address)
            servers = list(self._servers.values())
        if self._publisher.has_sdam_listeners:
            self._publish(events_for_opening(self.topology_id, initial))
        if initial.type is TopologyType.LOAD_BALANCED:
            (address,) = initial.servers
            self.on_server_check(ServerDescription.load_balancer(address))
            return
        for server in servers:
            if server.monitor is not None:
                server.monitor.open()

    def close(self) -> None:
        """Stop every monitor and pool, join their threads, publish the closing events."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            transition = remove_all(self._description)
            self._description = transition.description
            servers = list(self._servers.values())
            self._servers.clear()
            retired = list(self._retired)
            self._retired.clear()
            self._condition.notify_all()
        for server in servers:
            # Closing the client ends the operations in flight too: their connections
            # are closed now, not when checked in, so none waits on a silent server.
            self._stop(server, interrupt_in_use_connections=True)
        for pool in retired:
            # So do those on servers that left the topology meanwhile (their pools were
            # closed then, as the seed says, with their in-use connections left alone).
            pool.close(interrupt_in_use_connections=True)
        if self._opened and self._publisher.has_sdam_listeners:
            self._publish(events_for_closing(self.topology_id, transition))

    def _new_server(self, address: Address) -> Server:
        monitor = None
        if self._description.type is not TopologyType.LOAD_BALANCED:
            monitor = self._monitor_factory(address, self)
        return Server(address, self._pool_factory(address), monitor)

    @staticmethod
    def _stop(server: Server, interrupt_in_use_connections: bool = False) -> None:
        if server.monitor is not None:
            server.monitor.close()
        if interrupt_in_use_connections:
            server.pool.close(interrupt_in_use_connections=True)
        else:
            server.pool.close()

    # --- reading ------------------------------------------------------------------

    @property
    def description(self) -> TopologyDescription:
        """The current description; immutable, so it is read without the lock."""
        return self._description

    @property
    def settings(self) -> TopologySettings:
        return self._settings

    def get_server(self, address: Address) -> Optional[Server]:
        return self._servers.get(address)

    # --- applying outcomes --------------------------------------------------------

    def on_server_check(
        self, description: ServerDescription, *, interrupt_in_use_connections: bool = False
    ) -> None:
        """A monitor's check outcome (MonitorTarget).

        A failed check also clears the server's pool ("Network or command error during
        server check"): if the monitor's socket is bad, the pool's likely are too. A
        check that timed out clears it with ``interrupt_in_use_connections``: the
        connections checked out then are closed, so that operations blocked on a server
        that stopped answering fail now (and follow the retry rules) instead of waiting
        for replies that never come.
        """
        self._apply(
            description,
            clear_pool=description.error is not None,
            interrupt_in_use_connections=interrupt_in_use_connections,
        )

    def on_srv_hosts(self, hosts: list[Address]) -> None:
        """SRV polling found a new host list (Sharded or Unknown topologies only)."""
        with self._lock:
            if self._closed:
                return
            transition = apply_srv_hosts(self._description, hosts)
            if transition.description is transition.previous:
                return
            started, stopped = self._carry_out_locked(transition)
        self._after(transition, started, stopped)

    def _apply(
        self,
        description: ServerDescription,
        *,
        clear_pool: bool = False,
        interrupt_in_use_connections: bool = False,
    ) -> None:
        with self._lock:
            if self._closed:
                return
            transition = apply(self._description, description)
            if transition.ignored:
                return
            started, stopped = self._carry_out_locked(transition)
            server = self._servers.get(description.address)
            if clear_pool and server is not None:
                # Under the lock, with the description update (the seed requires it);
                # the pool closes interrupted connections after releasing its own lock.
                server.pool.clear(interrupt_in_use_connections=interrupt_in_use_connections)
        self._after(transition, started, stopped)

    def _after(self, transition: Transition, started: list[Server], stopped: list[Server]) -> None:
        """Outside the lock: stop removed servers, start new monitors, publish events."""
        if stopped:
            with self._lock:
                closed = self._closed
                if not closed:
                    self._retired.update(server.pool for server in stopped)
            for server in stopped:
                # Once the topology is closed, nobody would interrupt them later.
                self._stop(server, interrupt_in_use_connections=closed)
        for server in started:
            if server.monitor is not None:
                server.monitor.open()
        if self._publisher.has_sdam_listeners:
            self._publish(events_for_transition(self.topology_id, transition))

    def _carry_out_locked(self, transition: Transition) -> tuple[list[Server], list[Server]]:
        """Do, under the lock, what must be synchronized with the new description."""
        started = []
        for address in transition.added:
            server = self._new_server(address)
            self._servers[address] = server
            started.append(server)
        stopped = [self._servers.pop(a) for a in transition.removed if a in self._servers]
        for address in transition.clear_pools:
            old_primary = self._servers.get(address)
            if old_primary is not None:
                old_primary.pool.clear()
        for address in transition.ready_pools:
            self._servers[address].pool.ready()
        self._description = transition.description
        for address in transition.request_check:
            to_check = self._servers.get(address)
            if to_check is not None and to_check.monitor is not None:
                to_check.monitor.request_check()
        self._condition.notify_all()
        return started, stopped

    def _publish(self, events: Sequence[SdamEvent]) -> None:
        if events:
            self._publisher.publish_sdam(events)

    # --- application errors ---------------------------------------------------------

    def handle_connection_error(
        self, connection: EstablishedConnection, error: BaseException
    ) -> ErrorDecision:
        """handle_error for an error on an established application connection (after
        its handshake): the connection's generation, wire version and serviceId tell
        how the error applies."""
        return self.handle_error(
            connection.address,
            error,
            generation=connection.generation,
            completed_handshake=True,
            max_wire_version=connection.max_wire_version,
            service_id=connection.service_id,
        )

    def handle_error(
        self,
        address: Address,
        error: BaseException,
        *,
        generation: int,
        completed_handshake: bool,
        max_wire_version: int = 0,
        service_id: Optional[Any] = None,
        in_authentication: bool = False,
    ) -> ErrorDecision:
        """Carry out the seed's error handling for an error on an application connection."""
        if isinstance(error, PoolClearedError):
            # Retryable, and already accounted for: the clear that caused it.
            return ErrorDecision()
        context = application_error(
            address,
            error,
            generation=generation,
            completed_handshake=completed_handshake,
            max_wire_version=max_wire_version,
            service_id=service_id,
            in_authentication=in_authentication,
        )
        if context is None:
            return ErrorDecision()
        stopped: list[Server] = []
        started: list[Server] = []
        transition: Optional[Transition] = None
        with self._lock:
            server = self._servers.get(address)
            if server is None or self._closed:
                return ErrorDecision()
            pool_generation = server.pool.generation_for(service_id)
            decision = classify(self._description, context, pool_generation)
            if decision.mark_unknown is not None:
                transition = apply(self._description, decision.mark_unknown)
                if not transition.ignored:
                    started, stopped = self._carry_out_locked(transition)
            if decision.clear_pool:
                # Under the lock, with the description update (the seed requires it).
                server.pool.clear(service_id=decision.service_id)
            if decision.request_check and server.monitor is not None:
                server.monitor.request_check()
        if decision.cancel_check and server.monitor is not None:
            server.monitor.cancel_check()  # closes the monitoring socket: not under the lock
        if transition is not None:
            self._after(transition, started, stopped)
        return decision

    # --- server selection ---------------------------------------------------------

    def select_server(
        self,
        read_preference: Optional[ReadPreference] = None,
        *,
        deprioritized: Iterable[Address] = (),
        timeout: Optional[float] = None,
        operation: Optional[str] = None,
        operation_id: Optional[int] = None,
    ) -> tuple[Server, ServerDescription]:
        """The seed's multi-threaded selection loop. ``read_preference`` None is a write.

        Raises ServerSelectionTimeoutError after serverSelectionTimeoutMS (or
        ``timeout`` seconds) with the read preference, the topology type and every
        server's type and last error in its message. ``operation`` and
        ``operation_id`` name what the server is for in the selection's log messages
        (:mod:`mongocore.io.selection_log`), which are logged outside the lock.
        """
        if timeout is None:
            timeout = self._settings.server_selection_timeout_ms / 1000.0
        deadline = self._clock() + timeout
        if type(deprioritized) is not tuple:
            deprioritized = tuple(deprioritized)
        log: Optional[SelectionLog] = None
        if "logging" in sys.modules:  # else nothing can have enabled the logger
            selection_log, logger = _SELECTION_LOG[0] if _SELECTION_LOG else _load_selection_log()
            # Asked here rather than by selection_log: two calls fewer per selection
            # while the logger is off.
            if logger.isEnabledFor(_INFO):
                log = selection_log(
                    self.topology_id,
                    read_preference,
                    deprioritized=deprioritized,
                    operation=operation,
                    operation_id=operation_id,
                    logger=logger,
                )
        description = self._description
        if log is not None:
            log.started(description)
        while True:
            description = self._description
            try:
                # Raises for an incompatible topology or an invalid read preference.
                cache = self._selection
                if cache.description is not description:
                    cache = self._selection = SelectionCache(description)
                if deprioritized:
                    window = latency_window(cache.facts, read_preference, deprioritized)
                else:
                    window = cache.window(read_preference)
                selected = choose(window, self._rng)
            except Exception as exc:
                if log is not None:
                    log.failed(description, exc)
                raise
            if selected is not None:
                server = self._servers.get(selected.address)
                if server is not None:
                    if log is not None:
                        log.succeeded(description, selected.address)
                    return server, selected
            if log is not None:
                log.waiting(description, deadline - self._clock())
            closed = False
            with self._lock:
                closed = self._closed
                if not closed and self._description is description:
                    for candidate in self._servers.values():
                        if candidate.monitor is not None:
                            candidate.monitor.request_check()
                    remaining = deadline - self._clock()
                    if remaining > 0:
                        self._condition.wait(remaining)
            if closed:
                self._selection_failed(
                    log, description, ServerSelectionTimeoutError("the client is closed")
                )
            if self._clock() >= deadline and self._description is description:
                summary = selection_timeout_summary(read_preference, timeout)
                error = ServerSelectionTimeoutError(
                    selection_timeout_message(read_preference, description, timeout)
                )
                self._selection_failed(log, description, error, summary)

    def select_pinned(
        self, address: Address, *, timeout: Optional[float] = None
    ) -> tuple[Server, ServerDescription]:
        """The server a session is pinned to (a sharded transaction's mongos), once it
        is known: after an error marked it Unknown, its monitor checks it again at once.
        Raises ServerSelectionTimeoutError after serverSelectionTimeoutMS (or
        ``timeout`` seconds), or at once if it left the topology."""
        if timeout is None:
            timeout = self._settings.server_selection_timeout_ms / 1000.0
        deadline = self._clock() + timeout
        while True:
            description = self._description
            known = description.servers.get(address)
            server = self._servers.get(address)
            if known is None or server is None:
                raise ServerSelectionTimeoutError(
                    f"the server {address} this session is pinned to left the topology"
                )
            if known.type is not ServerType.UNKNOWN:
                return server, known
            with self._lock:
                if self._closed:
                    raise ServerSelectionTimeoutError("the client is closed")
                if self._description is description:
                    if server.monitor is not None:
                        server.monitor.request_check()
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        raise ServerSelectionTimeoutError(
                            f"the server {address} this session is pinned to is unknown"
                            f" after {timeout:g} s: {known.error or 'no reply'}"
                        )
                    self._condition.wait(remaining)

    @staticmethod
    def _selection_failed(
        log: Optional[SelectionLog],
        description: TopologyDescription,
        error: ServerSelectionTimeoutError,
        summary: Optional[str] = None,
    ) -> NoReturn:
        if log is not None:
            log.failed(description, error, summary)
        raise error


def _abandon(servers: dict[Address, Server]) -> None:
    """The finalizer of a topology freed without close(): ask each monitor to stop and
    close its server's pool on its way out (a pool without a monitor, behind a load
    balancer, closes itself from its background thread, if it has one).

    Runs wherever the garbage collector freed the topology, possibly inside another
    thread's critical section: the parts' abandon() methods wait for no lock. A part
    without one (a test's fake) is left alone; nothing may escape a finalizer.
    """
    for server in list(servers.values()):
        try:
            monitor_abandon = getattr(server.monitor, "abandon", None)
            if monitor_abandon is not None:
                monitor_abandon(server.pool)
            else:
                pool_abandon = getattr(server.pool, "abandon", None)
                if pool_abandon is not None:
                    pool_abandon()
        except Exception:  # pragma: no cover - a bug; the finalizer must not raise
            _log.exception("could not stop the parts of %s of a freed topology", server)


def application_error(
    address: Address,
    error: BaseException,
    *,
    generation: int,
    completed_handshake: bool,
    max_wire_version: int = 0,
    service_id: Optional[Any] = None,
    in_authentication: bool = False,
) -> Optional[ApplicationError]:
    """Describe an exception for the pure error-handling decision; None if SDAM ignores it."""
    labels = frozenset(getattr(error, "error_labels", ()))
    if isinstance(error, NetworkTimeout):
        kind, reply = ErrorKind.TIMEOUT, None
    elif isinstance(error, (NetworkError, ProtocolError)):
        # A malformed reply is an error reading from the server, as the seed's "Network
        # error when reading or writing" means it: the stream cannot be trusted, and a
        # server (or what is in between) that garbles one reply may garble the next.
        kind, reply = ErrorKind.NETWORK, None
    elif isinstance(error, OperationFailure):
        kind, reply = ErrorKind.COMMAND, dict(error.details) or {"ok": 0, "errmsg": str(error)}
        if error.code is not None:
            reply.setdefault("code", error.code)
    else:
        return None
    return ApplicationError(
        address=address,
        kind=kind,
        generation=generation,
        completed_handshake=completed_handshake,
        in_authentication=in_authentication,
        max_wire_version=max_wire_version,
        reply=reply,
        error_labels=labels,
        service_id=service_id,
        message=str(error),
    )


def selection_timeout_summary(read_preference: Optional[ReadPreference], timeout: float) -> str:
    """The first words of a selection timeout's message: what was asked, for how long."""
    wanted = (
        "a writable server" if read_preference is None else f"read preference {read_preference}"
    )
    return f"No server matched {wanted} within {timeout:g} s"


def selection_timeout_message(
    read_preference: Optional[ReadPreference],
    description: TopologyDescription,
    timeout: float,
) -> str:
    """An actionable message: what was asked, what the topology is, each server's state."""
    lines = [
        f"{selection_timeout_summary(read_preference, timeout)}; "
        f"topology type {description.type.value}"
        + (f", replica set {description.set_name!r}" if description.set_name else "")
        + ". Servers:"
    ]
    if not description.servers:
        lines.append("  (none: the topology has no servers left to monitor)")
    for sd in description.servers.values():
        error = f", last error: {sd.error}" if sd.error else ""
        lines.append(f"  {sd.address}: {sd.type.value}{error}")
    if description.compatibility_error:
        lines.append(description.compatibility_error)
    return "\n".join(lines)
