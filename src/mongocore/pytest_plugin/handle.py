"""What a fixture gives a test: :class:`MongoDBDeployment`, a deployment's URI and the
control handle for its failovers and fail points.

The controls are the simulator's own (docs/simulator.md): they act on the processes
of a simulated deployment. On a real deployment (``--mongodb-uri``) they raise
:class:`FaultControlsUnavailable`, which says why and what to do; a test marked
``@pytest.mark.mongodb_simulator`` is skipped there instead of failing.

A process is named by the simulator's object (``handle.primary``, ``handle.members[1]``)
or by its host as hello names it (``"127.0.0.1:27018"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from mongocore.pytest_plugin.real import Real, redacted
from mongocore.pytest_plugin.reset import DataBaseline, connection, drop_data
from mongocore.pytest_plugin.simulated import Simulated

if TYPE_CHECKING:
    from mongocore.sim import Member, Process, ReplicaSet

    ProcessRef = Union[str, Process]

__all__ = ["FaultControlsUnavailable", "MongoDBDeployment"]


class FaultControlsUnavailable(RuntimeError):
    """A fault control (or the simulator itself) was asked of a real deployment."""


class MongoDBDeployment:
    """A deployment for tests: ``uri`` to connect to, and controls to break it.

    ``kind`` is ``"standalone"``, ``"replica_set"``, ``"sharded_cluster"`` or
    ``"load_balanced"``; ``simulated`` says whether it is the simulator's (False with
    ``--mongodb-uri``). ``uri`` carries what a client needs: the credentials and
    ``tls=true&tlsCAFile=...`` when the deployment requires them.
    """

    def __init__(self, kind: str, backend: Union[Simulated, Real]) -> None:
        self.kind = kind
        self._backend = backend
        # A simulated deployment's data before any test: nothing (every database goes).
        self._baseline = DataBaseline()

    def __repr__(self) -> str:
        where = "simulated" if self.simulated else "real"
        return f"<MongoDBDeployment {self.kind} ({where}) {redacted(self.uri)}>"

    # -- what every deployment has -----------------------------------------------------

    @property
    def simulated(self) -> bool:
        return isinstance(self._backend, Simulated)

    @property
    def uri(self) -> str:
        backend = self._backend
        return backend.uri

    @property
    def tls_ca_file(self) -> Optional[str]:
        """The CA file of a simulated deployment that requires TLS (also in ``uri``)."""
        backend = self._backend
        return backend.tls_ca_file if isinstance(backend, Simulated) else None

    def reset(self) -> list[str]:
        """Put the deployment back as it was before the tests: what the plugin does
        between tests. Returns what was dropped (databases, ``admin`` collections,
        users), for messages."""
        backend = self._backend
        if isinstance(backend, Real):
            return backend.drop_data()
        backend.restore()
        process = backend.command_process()
        with connection(backend.uri, process.address) as commands:
            return drop_data(commands, self._baseline)

    # -- the simulator -----------------------------------------------------------------

    def _simulated(self, what: str) -> Simulated:
        backend = self._backend
        if isinstance(backend, Simulated):
            return backend
        raise FaultControlsUnavailable(
            f"{what} needs a simulated deployment, and the tests run against a real one"
            f" (--mongodb-uri {redacted(backend.uri)}): its processes cannot be killed,"
            " partitioned, stepped down or given fail points from here. Mark the test"
            " @pytest.mark.mongodb_simulator to skip it on a real deployment."
        )

    @property
    def sim(self) -> Any:
        """The simulator's deployment (a ``mongocore.sim`` ReplicaSet, Standalone,
        ShardedCluster or LoadBalanced), for everything it offers beyond these
        controls. FaultControlsUnavailable on a real deployment."""
        return self._simulated("the simulator's deployment (.sim)").started()

    @property
    def members(self) -> list[Any]:
        """The processes a client connects to: the mongods (a sharded cluster's and a
        load-balanced deployment's: the mongos routers)."""
        return list(self.sim.members)

    @property
    def primary(self) -> Optional[Member]:
        """The primary (of the shard, for a cluster), or None between two primaries."""
        return self._simulated("primary").started().primary

    def _replica_set(self, what: str) -> ReplicaSet:
        deployment: Any = self._simulated(what).started()
        replica_set = getattr(deployment, "shard", deployment)
        if not replica_set.is_replica_set:
            raise ValueError(f"{what}: a standalone has no replica set")
        return replica_set  # type: ignore[no-any-return]

    def _process(self, member: Optional[ProcessRef], what: str) -> Any:
        backend = self._simulated(what)
        if member is None:
            return backend.command_process()
        return backend.member(member)

    # -- failovers ---------------------------------------------------------------------

    def wait_for_primary(self, timeout: float = 10.0) -> Member:
        """The primary, once there is one (TimeoutError after ``timeout`` seconds)."""
        return self._replica_set("wait_for_primary").wait_for_primary(timeout)

    def step_down(
        self, stepdown_secs: float = 60.0, *, election_delay: Optional[float] = None
    ) -> Member:
        """The primary steps down at once (``ReplicaSet.step_down``); returns it."""
        return self._replica_set("step_down").step_down(
            stepdown_secs, election_delay=election_delay
        )

    def elect(self, member: ProcessRef) -> None:
        """Make ``member`` primary now."""
        self._replica_set("elect").elect(self._process(member, "elect"))

    def freeze(self, member: ProcessRef, seconds: float) -> None:
        """Keep ``member`` from standing for election for ``seconds`` (0 unfreezes)."""
        self._replica_set("freeze").freeze(self._process(member, "freeze"), seconds)

    def kill(self, member: Optional[ProcessRef] = None) -> None:
        """The process dies (a standalone's by default): connections refused, open
        ones dropped. A router of a cluster, or a member of its shard."""
        self._owner_of(member, "kill").kill(*self._target(member, "kill"))

    def restart(self, member: Optional[ProcessRef] = None) -> None:
        """Start a killed process again (a new processId; its data kept)."""
        self._owner_of(member, "restart").restart(*self._target(member, "restart"))

    def partition(self, member: ProcessRef, mode: str = "refuse") -> None:
        """Cut ``member`` off: ``"refuse"`` refuses connections, ``"drop"`` never answers."""
        self._owner_of(member, "partition").partition(self._process(member, "partition"), mode)

    def heal(self, member: ProcessRef) -> None:
        """Undo ``partition``."""
        self._owner_of(member, "heal").heal(self._process(member, "heal"))

    def kill_after_write(self, member: ProcessRef, *, armed: bool = True) -> None:
        """Kill ``member`` right after its next write, before it replies."""
        process = self._process(member, "kill_after_write")
        self._replica_set("kill_after_write").kill_after_write(process, armed=armed)

    def _target(self, member: Optional[ProcessRef], what: str) -> tuple[Any, ...]:
        deployment = self._simulated(what).started()
        if not deployment.is_replica_set and not hasattr(deployment, "shard"):
            if member is not None and self._process(member, what) is not deployment.member:
                raise KeyError(f"{member!r} is not this standalone's process")
            return ()  # Standalone.kill() and restart() take no process
        if member is None:
            raise ValueError(f"{what}: name the process (a standalone's is the default)")
        return (self._process(member, what),)

    def _owner_of(self, member: Optional[ProcessRef], what: str) -> Any:
        """Who controls ``member``: the replica set, a cluster (its routers) or its shard."""
        deployment = self._simulated(what).started()
        shard = getattr(deployment, "shard", None)
        if shard is None:
            if not deployment.is_replica_set and what in ("partition", "heal"):
                raise ValueError(f"{what}: a standalone cannot be partitioned (kill it instead)")
            return deployment
        process = self._process(member, what) if member is not None else None
        return shard if process in shard.members else deployment

    # -- fail points -------------------------------------------------------------------

    def fail_command(
        self, *commands: str, member: Optional[ProcessRef] = None, **options: Any
    ) -> None:
        """``failCommand`` on ``member`` (by default the primary, the standalone, or the
        first router): ``fail_command("insert", error_code=91, mode={"times": 1})``,
        with the keywords of ``Process.fail_command`` (docs/simulator.md)."""
        self._process(member, "fail_command").fail_command(*commands, **options)

    def configure_fail_point(
        self,
        name: str,
        mode: Union[str, Mapping[str, Any]],
        data: Optional[Mapping[str, Any]] = None,
        *,
        member: Optional[ProcessRef] = None,
    ) -> int:
        """``configureFailPoint`` on ``member`` (defaults as ``fail_command``)."""
        process = self._process(member, "configure_fail_point")
        return process.configure_fail_point(name, mode, data)  # type: ignore[no-any-return]

    def clear_fail_points(self, members: Optional[Sequence[ProcessRef]] = None) -> None:
        """Turn every fail point off, on ``members`` (every process by default)."""
        backend = self._simulated("clear_fail_points")
        deployment = backend.started()
        processes = (
            [backend.member(m) for m in members]
            if members is not None
            else backend.listeners(deployment)
        )
        for process in processes:
            if hasattr(process, "clear_fail_points"):
                process.clear_fail_points()
