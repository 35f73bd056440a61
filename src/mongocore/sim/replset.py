"""A simulated replica set: members, elections and failover controls (its replSet*
commands are replset_commands.py's, registered in command_table.py; what its members
report, replset_report.py's).

Elections are not MongoDB's protocol (no heartbeats, no votes exchanged): the set
decides centrally. A primary exists while a majority of the voting members is
reachable; when it steps down, dies, or is cut off, a new one is chosen after
``election_delay`` seconds among the electable members (reachable secondaries with
priority > 0, not hidden, not frozen): the highest priority, then the most recent
applied optime, then the lowest member index. Each election increments the term,
which gives the new primary's electionId (``7fffffff`` followed by the term, as
real servers build it). Every change bumps the topologyVersion counter of every
member, which answers the awaitable hellos waiting on it.
"""

from __future__ import annotations

import functools
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

from mongocore.sim import replset_report
from mongocore.sim.change_log import attach_change_log
from mongocore.sim.member import (
    ARBITER,
    DOWN,
    PRIMARY,
    REMOVED,
    SECONDARY,
    STARTUP,
    Member,
    MemberConfig,
)
from mongocore.sim.replication import new_view
from mongocore.sim.replset_report import cluster_time_fields, election_id
from mongocore.sim.security import Security, User
from mongocore.sim.store import DataStore, OpTime
from mongocore.sim.transactions import TransactionTable
from mongocore.sim.ttl_monitor import TTLMonitor

__all__ = ["ReplicaSet", "cluster_time_fields", "election_id"]


def _member_configs(
    members: Union[int, Sequence[MemberConfig]],
    *,
    arbiters: int,
    hidden: int,
    priority0: int,
    tags: Optional[Sequence[Mapping[str, str]]],
    lag: Union[float, Sequence[float], None],
) -> list[MemberConfig]:
    if isinstance(members, int):
        if members < 1:
            raise ValueError("a replica set needs at least one data-bearing member")
        configs = [MemberConfig() for _ in range(members)]
    else:
        configs = [MemberConfig(**vars(c)) for c in members]
    configs += [MemberConfig(priority=0.0) for _ in range(priority0)]
    configs += [MemberConfig(priority=0.0, hidden=True) for _ in range(hidden)]
    data_bearing = list(configs)
    if tags is not None:
        for config, member_tags in zip(data_bearing, tags):
            config.tags = dict(member_tags)
    if lag is not None:
        lags = [float(lag)] * len(data_bearing) if isinstance(lag, (int, float)) else list(lag)
        for config, member_lag in zip(data_bearing, lags):
            config.lag = float(member_lag)
    configs += [MemberConfig(priority=0.0, arbiter=True) for _ in range(arbiters)]
    return configs


def _checked_hostname(hostname: Optional[str]) -> Optional[str]:
    if hostname is not None and (not hostname or ":" in hostname or "," in hostname):
        raise ValueError(f"hostname must be a host name without a port, not {hostname!r}")
    return hostname


class ReplicaSet:
    """A replica set of mongod members, each on its own 127.0.0.1 port.

    ``ReplicaSet(members=3)`` is three data-bearing members of priority 1;
    ``arbiters``, ``hidden`` and ``priority0`` add members of those kinds; ``tags``
    and ``lag`` (seconds, one number or one per data-bearing member) configure the
    data-bearing members in order. Use it as a context manager, or ``start()`` and
    ``stop()``. The first electable member is primary once ``start()`` returns.
    ``tls``, ``tls_mode``, ``users`` and ``compressors`` configure every member's
    security (see :class:`~mongocore.sim.security.Security`); ``write_concern_modes``
    are the config's custom write concern modes (``settings.getLastErrorModes``, each
    ``{tag: number of distinct values}``; sim/write_concern.py). ``hostname`` is the
    name the members advertise with their ports (``"localhost"``: ``localhost:<port>``
    in hello, ``hosts`` and ``uri``); they listen on 127.0.0.1 either way. A member's
    ``MemberConfig.host`` renames it in the set's config (``uri``, ``hosts`` and hello
    use that name).
    """

    def __init__(
        self,
        members: Union[int, Sequence[MemberConfig]] = 3,
        *,
        arbiters: int = 0,
        hidden: int = 0,
        priority0: int = 0,
        tags: Optional[Sequence[Mapping[str, str]]] = None,
        lag: Union[float, Sequence[float], None] = None,
        name: str = "rs0",
        election_delay: float = 0.2,
        initiate: bool = True,
        clock: Callable[[], float] = time.time,
        tls: Optional[ssl.SSLContext] = None,
        tls_mode: str = "requireTLS",
        users: Sequence[User] = (),
        compressors: Sequence[str] = (),
        write_concern_modes: Optional[Mapping[str, Mapping[str, int]]] = None,
        hostname: Optional[str] = None,
    ) -> None:
        self.name = name
        #: The name every member advertises with its port (hello's me, hosts, the uri):
        #: "localhost" for clients that connect to localhost; None: 127.0.0.1.
        self.hostname = _checked_hostname(hostname)
        #: The config's custom write concern modes (settings.getLastErrorModes):
        #: ``{"multiDC": {"dc": 2}}`` is satisfied by members of two distinct "dc" tags.
        self.write_concern_modes: dict[str, dict[str, int]] = {
            mode: {str(tag): int(count) for tag, count in tags.items()}
            for mode, tags in (write_concern_modes or {}).items()
        }
        self.security = Security(tls=tls, tls_mode=tls_mode, users=users, compressors=compressors)
        self.cond = threading.Condition(threading.RLock())
        self.stopping = False
        self._clock = clock
        self.store = DataStore(clock)
        #: Multi-document transactions, by session (sim/transactions.py).
        self.transactions = TransactionTable(self.store)
        #: Deletes what TTL indexes expire, on the primary (sim/ttl_monitor.py).
        self.ttl_monitor = TTLMonitor(clock)
        attach_change_log(self.store, self.cond)  # a replica set's oplog feeds change streams
        self.election_delay = election_delay
        self.term = 0
        self.set_version = 1
        self.initiated = False
        self._initiate_on_start = initiate
        self._configs = _member_configs(
            members, arbiters=arbiters, hidden=hidden, priority0=priority0, tags=tags, lag=lag
        )
        self.members: list[Member] = [
            Member(self, index, config, f"{name}-{index}")
            for index, config in enumerate(self._configs)
        ]
        self.removed: list[Member] = []
        self._election_due: Optional[float] = None
        self._elector: Optional[threading.Thread] = None
        self._started = False

    # -- Owner -------------------------------------------------------------------------

    is_replica_set = True

    def clock(self) -> float:
        return self._clock()

    def decorate(self, reply: dict[str, Any], optime: Optional[OpTime] = None) -> None:
        reply.update(cluster_time_fields(self.store, optime))

    def data_bearing_count(self) -> int:
        return sum(1 for m in self.members if not m.arbiter)

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> ReplicaSet:
        with self.cond:
            if self._started:
                return self
            self._started = True
            try:
                for member in self.members:
                    member._start_listening()
            except BaseException:
                for member in self.members:
                    member._stop()
                raise
            if self._initiate_on_start:
                self._initiate_locked()
            self._elector = threading.Thread(
                target=self._elector_loop, name=f"mongocore-sim-elector-{self.name}", daemon=True
            )
            self._elector.start()
        return self

    def stop(self) -> None:
        """Stop every member and thread; returns once all are joined."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        if self._elector is not None:
            self._elector.join()
            self._elector = None
        for member in [*self.members, *self.removed]:
            member._stop()

    def __enter__(self) -> ReplicaSet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- views of the set --------------------------------------------------------------

    @property
    def uri(self) -> str:
        """``mongodb://127.0.0.1:p1,.../?replicaSet=<name>`` (hidden members are not seeds)."""
        hosts = ",".join(m.host for m in self.members if not m.hidden)
        return f"mongodb://{hosts}/?replicaSet={self.name}"

    @property
    def hosts(self) -> list[str]:
        return [m.host for m in self.members]

    @property
    def primary(self) -> Optional[Member]:
        with self.cond:
            return next((m for m in self.members if m.role == PRIMARY), None)

    @property
    def secondaries(self) -> list[Member]:
        with self.cond:
            return [m for m in self.members if m.role == SECONDARY]

    @property
    def arbiters(self) -> list[Member]:
        return [m for m in self.members if m.arbiter]

    def member(self, host: str) -> Member:
        for m in [*self.members, *self.removed]:
            if m.host == host:
                return m
        raise KeyError(host)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Wait (on the set's condition, no polling) until ``predicate()`` holds."""
        with self.cond:
            return self.cond.wait_for(predicate, timeout)

    def wait_for_primary(self, timeout: float = 10.0) -> Member:
        """The primary, waiting for an election if needed; TimeoutError if none comes."""
        with self.cond:
            if not self.cond.wait_for(lambda: self.primary is not None, timeout):
                raise TimeoutError(f"no primary in replica set {self.name} after {timeout}s")
            primary = self.primary
            assert primary is not None
            return primary

    # -- failover controls -------------------------------------------------------------

    def step_down(
        self,
        stepdown_secs: float = 60.0,
        *,
        election_delay: Optional[float] = None,
    ) -> Member:
        """Step the primary down at once; a new primary is elected after the delay.

        The old primary may not be re-elected for ``stepdown_secs``. Operations blocked
        on it fail with InterruptedDueToReplStateChange. Returns the old primary.
        """
        with self.cond:
            primary = self.primary
            if primary is None:
                raise RuntimeError(f"replica set {self.name} has no primary to step down")
            self._step_down_locked(primary, stepdown_secs)
            self._schedule_election_locked(election_delay)
            return primary

    def elect(self, member: Member) -> None:
        """Make ``member`` primary now (the current primary, if any, steps down)."""
        with self.cond:
            if member not in self.members or member.arbiter or not member.reachable:
                raise ValueError(f"{member!r} cannot become primary")
            current = self.primary
            if current is member:
                return
            if current is not None:
                self._step_down_locked(current, 0.0)
            member.frozen_until = 0.0
            self._make_primary_locked(member)

    def freeze(self, member: Member, seconds: float) -> None:
        """Keep ``member`` from standing for election for ``seconds`` (0 unfreezes)."""
        with self.cond:
            member.frozen_until = time.monotonic() + seconds if seconds > 0 else 0.0
            if self.primary is None:
                self._schedule_election_locked(None)

    def kill(self, member: Member) -> None:
        """The member's process dies: connections are refused and open ones dropped."""
        with self.cond:
            if member.role == DOWN:
                return
            was_primary = member.role == PRIMARY
            # DOWN before the process drops its connections: a client that sees its
            # connection closed or refused then finds the member down, lock or not.
            member.role = DOWN
            member._go_down()
            if was_primary:
                self._schedule_election_locked(None)
            self._after_change_locked()

    def kill_after_write(self, member: Member, *, armed: bool = True) -> None:
        """Kill ``member`` right after the next command that changes its data (any write
        command, ``commitTransaction`` included), before it replies: the write is
        applied (and recorded for its session, so a retry with the same txnNumber is
        answered from the record, a retried commit succeeds), the reply is lost, and the
        set goes on as after :meth:`kill`. ``armed=False`` disarms it, and so does any
        kill.
        """
        with self.cond:
            if not armed:
                member.after_write = None
                return
            if not member.alive:
                raise RuntimeError(f"{member!r} is down")
            member.after_write = functools.partial(self.kill, member)

    def restart(self, member: Member) -> None:
        """Start a killed member again: a new processId, topologyVersion counter 0."""
        with self.cond:
            if member.alive:
                raise RuntimeError(f"{member!r} is running; kill it first")
            member._come_up()
            member.frozen_until = 0.0
            if member in self.removed:
                member.role = REMOVED
            elif not self.initiated:
                member.role = STARTUP
            else:
                member.role = ARBITER if member.arbiter else SECONDARY
            # A fresh process: its counter stays 0 until its hello next changes.
            self._after_change_locked(skip=member)

    def partition(self, member: Member, mode: str = "refuse") -> None:
        """Cut the member off: "refuse" refuses connections, "drop" never answers."""
        if mode not in ("refuse", "drop"):
            raise ValueError(f"partition mode must be 'refuse' or 'drop', not {mode!r}")
        with self.cond:
            was_primary = member.role == PRIMARY
            if was_primary:
                # A primary that cannot see a majority steps down, and does so before
                # its connections drop: a client that sees its connection closed or
                # refused then finds no primary there, lock or not (as kill() does).
                self._step_down_locked(member, 0.0)
            member._partition(mode)
            if was_primary:
                self._schedule_election_locked(None)
            self._after_change_locked()

    def heal(self, member: Member) -> None:
        """Undo ``partition()``."""
        with self.cond:
            member._heal()
            self._after_change_locked()

    def reconfig(
        self,
        *,
        add: Union[int, Sequence[MemberConfig]] = 0,
        remove: Sequence[Member] = (),
    ) -> list[Member]:
        """Add and remove members (setVersion is bumped); returns the added members.

        A removed member keeps running and answers hello as a member without a valid
        config, like a real one. An added member starts with a copy of the data.
        """
        with self.cond:
            for member in remove:
                if member not in self.members:
                    raise ValueError(f"{member!r} is not a member of {self.name}")
                if member.role == PRIMARY:
                    raise ValueError("the primary cannot be removed; step it down first")
            new_configs = (
                [MemberConfig() for _ in range(add)] if isinstance(add, int) else list(add)
            )
            added: list[Member] = []
            next_id = max(m.member_id for m in [*self.members, *self.removed]) + 1
            try:
                for offset, config in enumerate(new_configs):
                    member = Member(
                        self, next_id + offset, config, f"{self.name}-{next_id + offset}"
                    )
                    member._start_listening()
                    added.append(member)
            except BaseException:
                for member in added:
                    member._stop()
                raise
            for member in remove:
                self.members.remove(member)
                self.removed.append(member)
                if member.view is not None:
                    self.store.drop_view(member.view)
                    member.view = None
                if member.alive:
                    member.role = REMOVED
            for member in added:
                self.members.append(member)
                if self.initiated:
                    member.role = ARBITER if member.arbiter else SECONDARY
                    if not member.arbiter:
                        member.view = new_view(self.store, member.lag)
            self.set_version += 1
            self._after_change_locked()
            return added

    def initiate(self) -> None:
        """``replSetInitiate`` from Python, for a set created with ``initiate=False``."""
        with self.cond:
            if self.initiated:
                raise RuntimeError(f"replica set {self.name} is already initiated")
            self._initiate_locked()

    # -- internals (the lock is held) --------------------------------------------------

    def _initiate_locked(self) -> None:
        self.initiated = True
        for member in self.members:
            if member.role == DOWN:
                continue
            member.role = ARBITER if member.arbiter else SECONDARY
            if not member.arbiter and member.view is None:
                member.view = new_view(self.store, member.lag)
        self._bump_all_locked()
        self._run_election_locked()

    def _votes(self, members: Sequence[Member]) -> int:
        return sum(m.config.votes for m in members)

    def _majority_reachable(self) -> bool:
        total = self._votes(self.members)
        reachable = self._votes([m for m in self.members if m.reachable])
        return reachable * 2 > total

    def _step_down_locked(self, member: Member, stepdown_secs: float) -> None:
        member.role = SECONDARY if member.alive else DOWN
        member.state_epoch += 1
        member.frozen_until = time.monotonic() + stepdown_secs if stepdown_secs > 0 else 0.0
        self._bump_all_locked()

    def _electable(self, member: Member, now: float) -> bool:
        return (
            member.role == SECONDARY
            and member.reachable
            and member.priority > 0
            and not member.hidden
            and now >= member.frozen_until
        )

    def _schedule_election_locked(self, delay: Optional[float]) -> None:
        wait = self.election_delay if delay is None else delay
        due = time.monotonic() + max(0.0, wait)
        if self._election_due is None or due < self._election_due:
            self._election_due = due
        self.cond.notify_all()

    def _run_election_locked(self) -> None:
        if not self.initiated or self.primary is not None:
            return
        if not self._majority_reachable():
            return  # no primary until enough members come back
        now = time.monotonic()
        candidates = [m for m in self.members if self._electable(m, now)]
        if not candidates:
            waiting = [
                m.frozen_until
                for m in self.members
                if m.role == SECONDARY and m.reachable and m.priority > 0 and not m.hidden
            ]
            if waiting:
                self._schedule_election_locked(max(0.0, min(waiting) - now))
            return
        winner = max(candidates, key=lambda m: (m.priority, m.applied_optime().ts, -m.index))
        self._make_primary_locked(winner)

    def _make_primary_locked(self, member: Member) -> None:
        self.term += 1
        self.store.term = self.term
        member.role = PRIMARY
        # A new primary's first oplog entry is a no-op of its term.
        self.store.noop()
        self._bump_all_locked()

    def _after_change_locked(self, skip: Optional[Member] = None) -> None:
        primary = self.primary
        if primary is not None and not self._majority_reachable():
            self._step_down_locked(primary, 0.0)
        if self.primary is None:
            self._schedule_election_locked(None)
        self._bump_all_locked(skip)

    def _bump_all_locked(self, skip: Optional[Member] = None) -> None:
        for member in [*self.members, *self.removed]:
            if member.alive and member is not skip:
                member.bump_topology_version()
        self.cond.notify_all()

    def _elector_loop(self) -> None:
        with self.cond:
            while not self.stopping:
                due = self._election_due
                if due is None:
                    self.cond.wait()
                    continue
                remaining = due - time.monotonic()
                if remaining > 0:
                    self.cond.wait(remaining)
                    continue
                self._election_due = None
                self._run_election_locked()

    # -- what members report (replset_report.py) ----------------------------------------

    def replica_set_hello(self, member: Member) -> dict[str, Any]:
        return replset_report.hello_fields(self, member)

    def last_write(self, member: Member) -> Optional[dict[str, Any]]:
        return replset_report.last_write(self, member)
