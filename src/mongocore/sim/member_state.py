"""A simulated mongod's view of itself: its role, its replica-set configuration and its
copy of the data (MongoDB manual, "Replica Set Member States", "Replica Set
Configuration"; "Read Concern" for afterClusterTime).

:class:`MemberState` holds what :class:`~mongocore.sim.member.Member` dispatches
commands by: the role (named as replSetGetStatus names the states; the replica set
changes it, holding the lock), the configuration (:class:`MemberConfig`), the copy a
non-primary member reads from (replication.py) and the optime it has applied, the role
rules for reads and writes, and the wait of a read with ``afterClusterTime`` on a
lagging secondary.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Protocol

from mongocore.sim.codes import CloseConnection, CommandError
from mongocore.sim.process import Owner, Process
from mongocore.sim.profiler import Profiler
from mongocore.sim.replication import ReplicaView
from mongocore.sim.server import Connection
from mongocore.sim.store import DataStore, DataView, OpTime
from mongocore.sim.transactions import TransactionTable
from mongocore.sim.ttl_monitor import TTLMonitor

if TYPE_CHECKING:
    from mongocore.sim.member import Member

__all__ = [
    "ARBITER",
    "DOWN",
    "PRIMARY",
    "REMOVED",
    "SECONDARY",
    "STARTUP",
    "MemberConfig",
    "MemberOwner",
    "MemberState",
]

# Member roles, named as replSetGetStatus names the states.
PRIMARY = "PRIMARY"
SECONDARY = "SECONDARY"
ARBITER = "ARBITER"
STARTUP = "STARTUP"  # not initiated: no replica set config yet
REMOVED = "REMOVED"  # removed from the config by a reconfig
DOWN = "DOWN"  # killed


@dataclass
class MemberConfig:
    """One member's replica-set configuration (``members[n]`` of the replica set config)."""

    priority: float = 1.0
    votes: int = 1
    hidden: bool = False
    arbiter: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    lag: float = 0.0
    port: int = 0
    #: The member's name in the config ("host:port": hello's me, hosts, primary), for a
    #: deployment reached through names a test resolves itself; a name without a port
    #: ("localhost") is given the member's port; None: 127.0.0.1:<port>.
    host: Optional[str] = None

    def __post_init__(self) -> None:
        if self.hidden and self.priority != 0:
            raise ValueError("a hidden member must have priority 0")
        if self.arbiter and self.priority != 0:
            self.priority = 0.0


class MemberOwner(Owner, Protocol):
    store: DataStore
    #: The TTL monitor (sim/ttl_monitor.py): its passes run on the primary.
    ttl_monitor: TTLMonitor

    @property
    def transactions(self) -> Optional[TransactionTable]: ...

    @property
    def is_replica_set(self) -> bool: ...

    def data_bearing_count(self) -> int: ...

    def replica_set_hello(self, member: Member) -> dict[str, Any]: ...

    def last_write(self, member: Member) -> Optional[dict[str, Any]]: ...


class MemberState(Process):
    """What a mongod knows of itself: its configuration, its role and its copy of the data."""

    def __init__(self, owner: MemberOwner, index: int, config: MemberConfig, label: str) -> None:
        super().__init__(owner, label, config.port)
        self._member_owner = owner
        self.index = index
        self.member_id = index
        self.config = config
        self.view: Optional[ReplicaView] = None
        self.role = STARTUP
        self.frozen_until = 0.0  # monotonic time before which it may not stand for election
        #: Armed by ``ReplicaSet.kill_after_write``: called (holding the lock) once a write
        #: command changed data on this member, before its reply is sent.
        self.after_write: Optional[Callable[[], None]] = None
        #: ``fsync`` locks held (maintenance_commands.py): writes wait while any is.
        self.fsync_locks = 0
        #: The database profiler and each database's system.profile (profiler.py).
        self.profiler = Profiler()

    # -- configuration -----------------------------------------------------------------

    @property
    def host(self) -> str:
        """The member's name in the replica set config: ``MemberConfig.host`` (with the
        member's port when it names none), else the process's (``127.0.0.1:<port>``, or
        the deployment's ``hostname``). The member listens on 127.0.0.1:<port> either way."""
        name = self.config.host
        if name is None:
            return super().host
        return name if ":" in name else f"{name}:{self.port}"

    @property
    def priority(self) -> float:
        return self.config.priority

    @property
    def hidden(self) -> bool:
        return self.config.hidden

    @property
    def arbiter(self) -> bool:
        return self.config.arbiter

    @property
    def tags(self) -> dict[str, str]:
        return dict(self.config.tags)

    @property
    def lag(self) -> float:
        return self.config.lag

    @lag.setter
    def lag(self, seconds: float) -> None:
        with self.cond:
            self.config.lag = float(seconds)
            if self.view is not None:
                self.view.lag = float(seconds)

    @property
    def role(self) -> str:
        """PRIMARY, SECONDARY, ... (the owner holds the lock to change it)."""
        return self._role

    @role.setter
    def role(self, role: str) -> None:
        self._role = role
        if self.view is not None:
            # A primary has applied every entry it wrote, and lags from there once it
            # steps down, dies or is cut off.
            self.view.follow_end(role == PRIMARY)

    @property
    def state(self) -> str:
        return self.role

    @property
    def is_primary(self) -> bool:
        return self.role == PRIMARY

    @property
    def is_secondary(self) -> bool:
        return self.role == SECONDARY

    def _go_down(self) -> None:
        self.after_write = None
        self.fsync_locks = 0  # a lock of the process's memory
        super()._go_down()

    # -- data --------------------------------------------------------------------------

    def reader(self) -> DataView:
        """The data this member's reads see: the latest on the primary, as of its applied
        optime on a secondary (the caller holds the lock)."""
        store = self._member_owner.store
        if self.role == PRIMARY or self.view is None:
            return store.latest
        return self.view.data(self._owner.clock())

    def applied_optime(self) -> OpTime:
        """The optime of the last entry this member has applied (the lock is held): no
        document is touched, so hello and elections never wait for a catch-up."""
        store = self._member_owner.store
        if self.role == PRIMARY or self.view is None:
            return store.last_optime
        self.view.advance(self._owner.clock())
        return self.view.applied_optime

    def _reads_own_copy(self, kind: str) -> bool:
        return kind == "read" and self.role != PRIMARY and self.view is not None

    # -- role rules ------------------------------------------------------------------

    def _check_role(self, kind: str, secondary_ok: bool) -> None:
        if kind == "any":
            return
        if self.role in (ARBITER, STARTUP, REMOVED, DOWN):
            raise CommandError(13436, "node is not in primary or recovering state")
        if kind == "write" and self.role != PRIMARY:
            raise CommandError(10107, "not primary")
        if kind == "read" and self.role != PRIMARY and not secondary_ok:
            raise CommandError(13435, "not primary and secondaryOk=false")

    def _wait_for_read_concern(self, conn: Connection, cmd: Mapping[str, Any]) -> None:
        """readConcern afterClusterTime on a lagging secondary waits until it has caught up."""
        read_concern = cmd.get("readConcern")
        if not isinstance(read_concern, Mapping) or self.view is None:
            return
        after = read_concern.get("afterClusterTime")
        if after is None:
            return
        max_time_ms = cmd.get("maxTimeMS")
        limit = time.monotonic() + (float(max_time_ms) / 1000.0 if max_time_ms else 60.0)
        while True:
            self.view.advance(self._owner.clock())
            if self.view.applied_optime.ts >= after:
                return
            due = self.view.next_apply_time(after)
            if due is None:
                return  # not written yet: nothing to wait for
            wait = min(due - self._owner.clock(), limit - time.monotonic())
            if wait <= 0 and time.monotonic() >= limit:
                raise CommandError(50, "operation exceeded time limit")
            if not self.alive or conn.closed or self._owner.stopping:
                raise CloseConnection
            self.cond.wait(max(wait, 0.001))
