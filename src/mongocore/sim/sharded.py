"""A simulated sharded cluster: mongos routers in front of one replica-set shard.

A ``Mongos`` answers hello as a router (``msg: "isdbgrid"``), keeps its own fail
points, and routes every data command in-process to a member of the shard: writes
and primary reads to the shard's primary (waiting for an election if there is none,
and retrying a command the shard refused because its primary changed), other reads
to a member chosen by the ``$readPreference`` mode. Fail points set on a shard member
apply to routed commands only with ``failInternalCommands``, as on a real shard.

``LoadBalanced`` is one mongos that behaves like one behind a load balancer: its
hello carries a ``serviceId`` when the handshake says ``loadBalanced: true``, and a
handshake without it fails with LoadBalancerSupportMismatch (354) and is closed.
"""

from __future__ import annotations

import random
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from bson import ObjectId

from mongocore.sim.change_streams import fail_get_more
from mongocore.sim.codes import STATE_CHANGE_CODES, CommandError
from mongocore.sim.command_table import REGISTRY
from mongocore.sim.commands import aggregate_writes
from mongocore.sim.load_balancer import Balancer
from mongocore.sim.member import Member, Outcome, Process
from mongocore.sim.registry import DATA, MONGOS
from mongocore.sim.replset import ReplicaSet, _checked_hostname, cluster_time_fields
from mongocore.sim.router_commands import routed_reply, router_reply
from mongocore.sim.security import Security, User
from mongocore.sim.server import Connection
from mongocore.sim.snapshot_reads import check_snapshot_read
from mongocore.sim.store import OpTime
from mongocore.sim.transaction_router import TransactionRouter
from mongocore.sim.transactions import SESSION_END_COMMANDS, is_transaction_command

__all__ = ["LoadBalanced", "Mongos", "ShardedCluster"]


class Mongos(Process):
    """One mongos router process."""

    kind = "mongos"
    registry = REGISTRY

    def __init__(self, cluster: ShardedCluster, index: int, port: int, load_balanced: bool) -> None:
        super().__init__(cluster, f"mongos-{index}", port)
        self.cluster = cluster
        self.index = index
        self.load_balanced = load_balanced
        self.service_id = ObjectId()
        self.router = TransactionRouter(cluster.shard.name)

    def _come_up(self) -> None:
        super()._come_up()
        self.service_id = ObjectId()

    def _run(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        """The router's steps (command_pipeline.py lists them): the end of sessions, a
        transaction's commands, the commands it answers itself, then its shard."""
        command = self.registry.get(name)
        if name in SESSION_END_COMMANDS:
            self._end_sessions(name, cmd)
        if is_transaction_command(name, cmd):
            return Outcome(self._run_transaction(conn, name, db, cmd))
        check_snapshot_read(name, cmd, supported=True)
        local = router_reply(self, command, name, db, cmd)
        if local is not None:
            self.cluster.decorate(local)
            return Outcome(local)
        if command is None or not command.runs_on(MONGOS) or command.stage not in (DATA,):
            raise CommandError(59, f"no such cmd: {name}")
        kind = command.kind_of(cmd)
        reply = routed_reply(self, name, cmd, self._route(conn, name, db, cmd, kind))
        stream = name == "getMore" and bool(reply.get("cursor", {}).get("id"))
        return Outcome(reply, stream=stream, next_cmd=dict(cmd) if stream else None)

    def _run_transaction(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any]
    ) -> dict[str, Any]:
        """A transaction's command: run by the shard's primary (sim/transaction_router.py)."""
        with self.cond:
            name, db, cmd = self.router.plan(name, db, cmd)
        kind = "cursor" if name in ("getMore", "killCursors") else "write"
        return self.router.finish(self._route(conn, name, db, cmd, kind))

    def _end_sessions(self, name: str, cmd: Mapping[str, Any]) -> None:
        """The end of sessions aborts their transactions on the shard, as a router's does."""
        with self.cond:
            self.router.end_sessions(name, cmd)
        shard = self.cluster.shard
        with shard.cond:
            shard.transactions.end_sessions(name, cmd)

    def _route(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], kind: str
    ) -> dict[str, Any]:
        shard = self.cluster.shard
        if kind == "cursor":
            return self._route_cursor(conn, name, db, cmd)
        if name == "aggregate" and aggregate_writes(cmd):
            kind = "write"
        mode = "primary"
        read_preference = cmd.get("$readPreference")
        if kind == "read" and isinstance(read_preference, Mapping):
            mode = str(read_preference.get("mode", "primary"))
        deadline = time.monotonic() + self.cluster.shard_wait
        while True:
            target = self._choose(mode)
            if target is None:
                if (
                    not shard.wait_for(
                        lambda: shard.primary is not None or self.cluster.stopping,
                        max(0.0, deadline - time.monotonic()),
                    )
                    or self.cluster.stopping
                ):
                    raise CommandError(
                        133,
                        f'Could not find host matching read preference {{ mode: "{mode}" }}'
                        f" for set {shard.name}",
                    )
                continue
            reply = target.run_internal(
                name, db, cmd, secondary_ok=not target.is_primary, conn=conn
            )
            code = reply.get("code")
            if reply.get("ok") or code not in STATE_CHANGE_CODES or time.monotonic() > deadline:
                return reply
            # The shard's primary changed under us: wait for the next one and retry.
            shard.wait_for(_primary_changed(shard, target), 1.0)

    def _choose(self, mode: str) -> Optional[Member]:
        shard = self.cluster.shard
        with shard.cond:
            primary = shard.primary
            secondaries = [m for m in shard.secondaries if m.reachable and not m.hidden]
        if mode == "primary":
            return primary
        if mode == "secondary":
            return random.choice(secondaries) if secondaries else None
        if mode == "secondaryPreferred":
            return random.choice(secondaries) if secondaries else primary
        if mode == "primaryPreferred":
            return (
                primary
                if primary is not None
                else (random.choice(secondaries) if secondaries else None)
            )
        # nearest: all are equally near on loopback.
        candidates = secondaries + ([primary] if primary is not None else [])
        return random.choice(candidates) if candidates else None

    def _route_cursor(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any]
    ) -> dict[str, Any]:
        shard = self.cluster.shard
        with shard.cond:
            members = list(shard.members)
        if name == "getMore":
            cursor_id = cmd.get("getMore")
            with shard.cond:
                owner = next(
                    (m for m in members if isinstance(cursor_id, int) and m.cursors.has(cursor_id)),
                    None,
                )
            if owner is None:
                raise CommandError(43, f"cursor id {cursor_id} not found")
            with self.cond, shard.cond:
                fail_get_more(self.failpoints, owner.cursors, cmd)  # a router's own
            return owner.run_internal(name, db, cmd, secondary_ok=True, conn=conn)
        # killCursors: each cursor is killed where it lives.
        ids = cmd.get("cursors")
        if not isinstance(ids, list):
            raise CommandError(40414, "BSON field 'killCursors.cursors' is missing")
        killed: list[Any] = []
        not_found: list[Any] = []
        for cursor_id in ids:
            with shard.cond:
                owner = next((m for m in members if m.cursors.has(int(cursor_id))), None)
            if owner is None:
                not_found.append(cursor_id)
                continue
            reply = owner.run_internal(
                name, db, dict(cmd, cursors=[cursor_id]), secondary_ok=True, conn=conn
            )
            killed.extend(reply.get("cursorsKilled", []))
        result: dict[str, Any] = {
            "cursorsKilled": killed,
            "cursorsNotFound": not_found,
            "cursorsAlive": [],
            "cursorsUnknown": [],
            "ok": 1.0,
        }
        self.cluster.decorate(result)
        return result

    def _hello(
        self, conn: Connection, cmd: Mapping[str, Any], *, legacy: bool
    ) -> Optional[Outcome]:
        if self.load_balanced and not conn.handshake_done and not cmd.get("loadBalanced"):
            raise CommandError(
                354,
                "The server is being accessed through a load balancer, but this driver does"
                " not have load balancing enabled",
            )
        return super()._hello(conn, cmd, legacy=legacy)

    def hello_document(
        self, conn: Optional[Connection], cmd: Mapping[str, Any], *, legacy: bool = False
    ) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "ismaster" if legacy else "isWritablePrimary": True,
            "msg": "isdbgrid",
            "topologyVersion": self.topology_version,
        }
        if conn is not None:
            doc.update(self._common_hello_fields(conn, cmd))
            if self.load_balanced and conn.load_balanced:
                doc["serviceId"] = self.service_id
        doc["ok"] = 1.0
        return doc


def _primary_changed(shard: ReplicaSet, old: Member) -> Callable[[], bool]:
    return lambda: shard.primary not in (None, old)


class ShardedCluster:
    """``mongoses`` mongos routers in front of one replica-set shard (``cluster.shard``).

    ``tls``, ``tls_mode``, ``users`` and ``compressors`` configure the routers' security
    (the shard is reached in-process, never over the wire).
    """

    is_replica_set = False

    def __init__(
        self,
        mongoses: int = 1,
        *,
        shard_members: int = 3,
        shard_name: str = "shard01",
        election_delay: float = 0.2,
        shard_wait: float = 10.0,
        load_balanced: bool = False,
        clock: Callable[[], float] = time.time,
        tls: Optional[ssl.SSLContext] = None,
        tls_mode: str = "requireTLS",
        users: Sequence[User] = (),
        compressors: Sequence[str] = (),
        hostname: Optional[str] = None,
    ) -> None:
        if mongoses < 1:
            raise ValueError("a sharded cluster needs at least one mongos")
        #: The name the routers and the shard's members advertise ("localhost").
        self.hostname = _checked_hostname(hostname)
        if load_balanced and mongoses != 1:
            raise ValueError("a load-balanced deployment is one address: use one mongos")
        self.cond = threading.Condition(threading.RLock())
        self.stopping = False
        self._clock = clock
        self.security = Security(tls=tls, tls_mode=tls_mode, users=users, compressors=compressors)
        self.shard_wait = shard_wait
        self.load_balanced = load_balanced
        self.shard = ReplicaSet(
            shard_members,
            name=shard_name,
            election_delay=election_delay,
            clock=clock,
            hostname=hostname,
        )
        self.mongoses = [Mongos(self, i, 0, load_balanced) for i in range(mongoses)]
        self._started = False

    def clock(self) -> float:
        return self._clock()

    def decorate(self, reply: dict[str, Any], optime: Optional[OpTime] = None) -> None:
        reply.update(cluster_time_fields(self.shard.store, optime))

    @property
    def members(self) -> list[Mongos]:
        """The mongos routers (what a client connects to)."""
        return list(self.mongoses)

    @property
    def primary(self) -> Optional[Member]:
        """The shard's primary."""
        return self.shard.primary

    @property
    def uri(self) -> str:
        hosts = ",".join(m.host for m in self.mongoses)
        if self.load_balanced:
            return f"mongodb://{hosts}/?loadBalanced=true"
        return f"mongodb://{hosts}/"

    def start(self) -> ShardedCluster:
        if self._started:
            return self
        self._started = True
        self.shard.start()
        with self.cond:
            try:
                for mongos in self.mongoses:
                    mongos._start_listening()
            except BaseException:
                self.stop()
                raise
        return self

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        # Routed commands wait on the shard's condition: wake them too.
        with self.shard.cond:
            self.shard.cond.notify_all()
        for mongos in self.mongoses:
            mongos._stop()
        self.shard.stop()

    def kill(self, mongos: Mongos) -> None:
        with self.cond:
            mongos._go_down()

    def restart(self, mongos: Mongos) -> None:
        with self.cond:
            if mongos.alive:
                raise RuntimeError(f"{mongos!r} is running; kill it first")
            mongos._come_up()

    def partition(self, mongos: Mongos, mode: str = "refuse") -> None:
        with self.cond:
            mongos._partition(mode)

    def heal(self, mongos: Mongos) -> None:
        with self.cond:
            mongos._heal()

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout)

    def __enter__(self) -> ShardedCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LoadBalanced(ShardedCluster):
    """A mongos behind a (simulated) load balancer; connect with ``loadBalanced=true``.

    ``uri`` reaches the first mongos alone (a balancer in front of one mongos behaves
    as that mongos). With ``mongoses`` > 1, ``balancer`` is a load balancer in front
    of all of them (sim/load_balancer.py) and ``balancer_uri`` its connection string:
    each connection reaches one mongos, round robin, with that mongos's serviceId.
    """

    def __init__(
        self,
        *,
        mongoses: int = 1,
        shard_members: int = 3,
        election_delay: float = 0.2,
        shard_wait: float = 10.0,
        clock: Callable[[], float] = time.time,
        tls: Optional[ssl.SSLContext] = None,
        tls_mode: str = "requireTLS",
        users: Sequence[User] = (),
        compressors: Sequence[str] = (),
        hostname: Optional[str] = None,
    ) -> None:
        if mongoses < 1:
            raise ValueError("a load-balanced deployment needs at least one mongos")
        super().__init__(
            1,
            shard_members=shard_members,
            election_delay=election_delay,
            shard_wait=shard_wait,
            load_balanced=True,
            clock=clock,
            tls=tls,
            tls_mode=tls_mode,
            users=users,
            compressors=compressors,
            hostname=hostname,
        )
        self.mongoses.extend(Mongos(self, i, 0, True) for i in range(1, mongoses))
        self.balancer: Optional[Balancer] = None
        if mongoses > 1:
            self.balancer = Balancer("load-balancer", self.mongoses, self.security)

    @property
    def mongos(self) -> Mongos:
        return self.mongoses[0]

    @property
    def balancer_host(self) -> str:
        """The balancer's address (the first mongos's when there is one mongos)."""
        return self.balancer.host if self.balancer is not None else self.mongos.host

    @property
    def balancer_uri(self) -> str:
        return f"mongodb://{self.balancer_host}/?loadBalanced=true"

    @property
    def uri(self) -> str:
        return f"mongodb://{self.mongos.host}/?loadBalanced=true"

    def start(self) -> LoadBalanced:
        if self._started:
            return self
        super().start()
        if self.balancer is not None:
            try:
                self.balancer.start()
            except BaseException:
                self.stop()
                raise
        return self

    def stop(self) -> None:
        if self.balancer is not None:
            self.balancer.stop()
        super().stop()
