"""A simulated deployment the plugin owns: built from a shape, started, put back as it
was between tests, stopped.

Building imports ``mongocore.sim`` (the ``sim`` extra), and only then: a program that
calls ``mongocore.install_as_pymongo()`` in its conftest has done so before any test
asks for a deployment, so what the simulator imports of pymongo is mongocore's.

Putting it back (:meth:`Simulated.restore`) undoes what the failover controls and fail
points changed, through the simulator's own controls: a killed process is restarted,
a partitioned one healed, kill-after-write disarmed, every fail point cleared, the
members' lag set back and their freezes lifted, a primary waited for and the first
primary made primary again. What those controls cannot undo (a reconfig, an initiate
of a set built uninitiated) makes it build the deployment again, on the same ports
when they are free. The data is the business of sim's commands (reset.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from mongocore.pytest_plugin.shapes import Shape

if TYPE_CHECKING:
    from mongocore.cli.sim_options import TlsFiles
    from mongocore.sim import LoadBalanced, ReplicaSet, ShardedCluster, Standalone
    from mongocore.sim.member import Member
    from mongocore.sim.process import Process

    SimDeployment = Union[Standalone, ReplicaSet, ShardedCluster, LoadBalanced]

__all__ = ["SIM_EXTRA_MISSING", "Simulated", "import_sim"]

#: How long putting a deployment back may wait for its primary (seconds): generous,
#: an election takes election_delay.
PRIMARY_WAIT = 30.0

SIM_EXTRA_MISSING = (
    "the simulated deployments need mongocore's sim extra: pip install 'mongocore[sim]'"
    " (or point the fixtures at a deployment with --mongodb-uri)"
)


def import_sim() -> Any:
    """``mongocore.sim``, imported now; an ImportError that says what to install."""
    try:
        return importlib.import_module("mongocore.sim")
    except ImportError as exc:
        raise ImportError(f"{SIM_EXTRA_MISSING}: {exc}") from exc


class _Baseline:
    """What a started deployment looked like, to put it back to."""

    def __init__(self, deployment: SimDeployment) -> None:
        replica_set = _replica_set_of(deployment)
        self.users = tuple(deployment.security.users)
        self.shard_users = tuple(replica_set.security.users) if replica_set is not None else ()
        self.members: list[int] = []
        self.lags: dict[int, float] = {}
        self.set_version = 0
        self.initiated = False
        self.first_primary: Optional[int] = None
        if replica_set is not None:
            self.members = [m.member_id for m in replica_set.members]
            self.lags = {m.member_id: m.lag for m in replica_set.members}
            self.set_version = replica_set.set_version
            self.initiated = replica_set.initiated
            primary = replica_set.primary
            self.first_primary = primary.member_id if primary is not None else None


def _replica_set_of(deployment: SimDeployment) -> Optional[ReplicaSet]:
    shard = getattr(deployment, "shard", None)
    if shard is not None:
        return shard  # type: ignore[no-any-return]
    return deployment if deployment.is_replica_set else None  # type: ignore[return-value]


class Simulated:
    """One simulated deployment of ``shape``: ``start()``, ``restore()``, ``stop()``."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.deployment: Optional[SimDeployment] = None
        self._tls: Optional[TlsFiles] = None
        self._baseline: Optional[_Baseline] = None
        #: The listening ports, kept for a rebuild (router and balancer ports first).
        self._ports: list[int] = []

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Simulated:
        if self.deployment is None:
            self._start(ports=())
        return self

    def stop(self) -> None:
        """Stop every process and join every thread; remove the TLS files."""
        deployment, self.deployment = self.deployment, None
        try:
            if deployment is not None:
                deployment.stop()
        finally:
            tls, self._tls = self._tls, None
            if tls is not None:
                tls.remove()

    def _start(self, ports: Sequence[int]) -> None:
        sim = import_sim()
        if self.shape.tls and self._tls is None:
            from mongocore.cli.sim_options import make_tls_files  # noqa: PLC0415

            self._tls = make_tls_files()
        deployment = self._build(sim, ports)
        try:
            deployment.start()
        except BaseException:
            deployment.stop()
            raise
        self.deployment = deployment
        self._ports = [p.server.port for p in self.listeners(deployment)]
        self._baseline = _Baseline(deployment)

    def _build(self, sim: Any, ports: Sequence[int]) -> SimDeployment:
        shape = self.shape
        options = dict(shape.extra)
        if shape.auth is not None:
            options["users"] = [sim.User(*shape.auth)]
        if self._tls is not None:
            options.setdefault("tls", sim.server_tls_context(str(self._tls.server_file)))
        if shape.hostname is not None:
            options["hostname"] = shape.hostname
        port = iter(ports)
        if shape.kind == "standalone":
            if ports:
                options["port"] = next(port)
            deployment: SimDeployment = sim.Standalone(**options)
        elif shape.kind == "replica_set":
            members = shape.members
            if ports:
                configs = (
                    [sim.MemberConfig() for _ in range(members)]
                    if isinstance(members, int)
                    else [sim.MemberConfig(**vars(c)) for c in members]
                )
                for config in configs:
                    config.port = next(port, 0)
                members = configs
            if shape.name is not None:
                options["name"] = shape.name
            deployment = sim.ReplicaSet(members, election_delay=shape.election_delay, **options)
        else:
            if shape.name is not None:
                options["shard_name"] = shape.name
            common = {"shard_members": shape.shard_members, "election_delay": shape.election_delay}
            if shape.kind == "sharded_cluster":
                deployment = sim.ShardedCluster(shape.mongoses, **common, **options)
            else:
                deployment = sim.LoadBalanced(mongoses=shape.mongoses, **common, **options)
        if ports and shape.kind in ("sharded_cluster", "load_balanced"):
            # A cluster takes no ports: they are set on the listeners before they bind.
            for process in self.listeners(deployment):
                process.server.port = next(port, 0)
        return deployment

    @staticmethod
    def listeners(deployment: SimDeployment) -> list[Any]:
        """Everything that listens, in a fixed order: routers, balancer, mongods."""
        listeners: list[Any] = list(getattr(deployment, "mongoses", ()))
        balancer = getattr(deployment, "balancer", None)
        if balancer is not None:
            listeners.append(balancer)
        replica_set = _replica_set_of(deployment)
        if replica_set is not None:
            listeners += replica_set.members
        elif not listeners:
            listeners.append(deployment.primary)
        return listeners

    # -- what tests and messages read --------------------------------------------------

    @property
    def tls_ca_file(self) -> Optional[str]:
        return str(self._tls.ca_file) if self._tls is not None else None

    @property
    def uri(self) -> str:
        """The deployment's URI with what a client needs: credentials, TLS, compressors."""
        from mongocore.cli.sim_options import client_uri  # noqa: PLC0415

        deployment = self.started()
        return client_uri(
            deployment.uri,
            user=self.shape.auth,
            ca_file=self._tls.ca_file if self._tls is not None else None,
            compressors=tuple(deployment.security.compressors),
        )

    def started(self) -> SimDeployment:
        if self.deployment is None:
            raise RuntimeError(f"the simulated {self.shape.describe()} is not running")
        return self.deployment

    def command_process(self) -> Process:
        """Where the plugin sends its commands: the primary, the standalone, a router."""
        deployment = self.started()
        routers = getattr(deployment, "mongoses", None)
        if routers:
            return routers[0]  # type: ignore[no-any-return]
        primary = deployment.primary
        if primary is None:
            raise RuntimeError(f"the simulated {self.shape.describe()} has no primary")
        return primary

    # -- putting it back ---------------------------------------------------------------

    def restore(self) -> None:
        """Undo what the controls changed (see the module's docstring); build the
        deployment again when they cannot."""
        deployment = self.started()
        baseline = self._baseline
        assert baseline is not None
        replica_set = _replica_set_of(deployment)
        if replica_set is not None and (
            [m.member_id for m in replica_set.members] != baseline.members
            or replica_set.removed
            or replica_set.set_version != baseline.set_version
            or replica_set.initiated != baseline.initiated
        ):
            self._rebuild()
            return
        self._restore_users(deployment.security, baseline.users)
        if replica_set is not None and replica_set is not deployment:
            self._restore_users(replica_set.security, baseline.shard_users)
        for router in getattr(deployment, "mongoses", ()):
            self._restore_router(deployment, router)
        self._close_cursors(deployment)
        if replica_set is None:
            member = deployment.primary
            assert member is not None
            member.after_write = None
            if not member.alive:
                deployment.restart()  # type: ignore[call-arg]
            member.clear_fail_points()
            return
        self._restore_replica_set(replica_set, baseline)

    def _close_cursors(self, deployment: SimDeployment) -> None:
        # The cursors a test left open (a client closed without exhausting them): a
        # server keeps them for ten idle minutes, and the next test would find them in
        # serverStatus, currentOp and the cursor table.
        for process in self.listeners(deployment):
            cursors = getattr(process, "cursors", None)
            if cursors is not None:
                with process.cond:
                    cursors.clear()

    @staticmethod
    def _restore_router(cluster: Any, router: Process) -> None:
        if not router.alive:
            cluster.restart(router)
        elif router.partition_mode is not None:
            cluster.heal(router)
        router.clear_fail_points()

    @staticmethod
    def _restore_users(security: Any, users: Sequence[Any]) -> None:
        # createUser and dropUser change the users over the wire; the first ones come back.
        for user in list(security.users):
            if user not in users:
                security.remove_user(user.db, user.name)
        for user in users:
            if security.user(user.db, user.name) != user:
                security.remove_user(user.db, user.name)
                security.add_user(user)

    def _restore_replica_set(self, replica_set: ReplicaSet, baseline: _Baseline) -> None:
        for member in replica_set.members:
            replica_set.kill_after_write(member, armed=False)
            if not member.alive:
                replica_set.restart(member)
            elif member.partition_mode is not None:
                replica_set.heal(member)
            member.clear_fail_points()
            member.lag = baseline.lags[member.member_id]
            if member.frozen_until:
                replica_set.freeze(member, 0)
        if not baseline.initiated:
            return
        replica_set.wait_for_primary(PRIMARY_WAIT)
        first = next(m for m in replica_set.members if m.member_id == baseline.first_primary)
        if replica_set.primary is not first:
            replica_set.elect(first)

    def _rebuild(self) -> None:
        """Stop the deployment and build it again, on its ports if they are still free."""
        ports, deployment = self._ports, self.deployment
        self.deployment = None
        if deployment is not None:
            deployment.stop()
        try:
            self._start(ports)
        except OSError:
            self._start(())  # a port was taken meanwhile: new ones (the URI changes)

    def member(self, process: Union[str, Process, Member]) -> Any:
        """A process of the deployment, given as itself or as its host (``host:port``)."""
        if not isinstance(process, str):
            return process
        deployment = self.started()
        for candidate in self.listeners(deployment):
            if getattr(candidate, "host", None) == process:
                return candidate
        raise KeyError(f"no process {process!r} in the simulated {self.shape.describe()}")
