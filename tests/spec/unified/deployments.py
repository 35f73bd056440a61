"""The deployments the unified suites run against: ``mongocore.sim`` (MongoDB 7.0, wire
version 21) as a standalone, a replica set, a sharded cluster or mongoses behind a
load balancer, with or without authentication.

A test module starts the deployments its tests need once, in a module-scoped fixture
(so their threads exist before each test's thread-leak check), and resets them after
every test: fail points cleared on every process and a primary present. Collection
data is reset by each test's ``initialData``, through the internal client.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Optional, Union

from mongocore.sim import (
    BUILD_VERSION,
    LoadBalanced,
    ReplicaSet,
    ShardedCluster,
    Standalone,
    User,
)

#: The topologies the simulator offers, by their runOnRequirement names.
TOPOLOGIES = ("single", "replicaset", "sharded", "load-balanced")
SERVER_VERSION: tuple[int, int, int] = tuple(int(p) for p in BUILD_VERSION.split("."))  # type: ignore[assignment]

#: Elections in the simulated replica sets: short, so failovers end quickly.
ELECTION_DELAY = 0.05
#: Routers of the simulated sharded cluster and behind the simulated load balancer
#: (useMultipleMongoses: true needs two).
MONGOSES = 2

#: The one user of an authenticated deployment (SCRAM, both mechanisms, on admin).
USER = "unified-runner"
PASSWORD = "unified-runner-password"

Sim = Union[Standalone, ReplicaSet, ShardedCluster, LoadBalanced]


@dataclass(frozen=True, order=True)
class Environment:
    """A topology, with or without authentication."""

    topology: str
    auth: bool = False

    def __str__(self) -> str:
        return f"{self.topology}{'+auth' if self.auth else ''}"


class Deployment:
    """One running simulated deployment and what the runner needs of it."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self._parameters: dict[str, Any] = {}
        users = [User(USER, PASSWORD)] if env.auth else []
        self.sim: Sim
        if env.topology == "single":
            self.sim = Standalone(users=users)
        elif env.topology == "replicaset":
            self.sim = ReplicaSet(3, election_delay=ELECTION_DELAY, users=users)
        elif env.topology == "sharded":
            self.sim = ShardedCluster(MONGOSES, election_delay=ELECTION_DELAY, users=users)
        elif env.topology == "load-balanced":
            # Two mongoses behind the balancer (useMultipleMongoses: true), as the
            # format's MULTI_MONGOS_LB_URI; the first alone is SINGLE_MONGOS_LB_URI.
            self.sim = LoadBalanced(mongoses=MONGOSES, election_delay=ELECTION_DELAY, users=users)
        else:
            raise ValueError(f"unknown topology {env.topology!r}")

    def start(self) -> None:
        self.sim.start()

    def stop(self) -> None:
        self.sim.stop()

    @property
    def version(self) -> tuple[int, int, int]:
        return SERVER_VERSION

    def hosts(self, use_multiple_mongoses: Optional[bool] = None) -> list[str]:
        """The seeds for a client. With ``useMultipleMongoses: false`` a sharded cluster
        is reached through its first mongos only; otherwise through all of them."""
        sim = self.sim
        if isinstance(sim, ReplicaSet):
            return list(sim.hosts)
        if isinstance(sim, LoadBalanced):
            return [sim.balancer_host if use_multiple_mongoses else sim.mongos.host]
        hosts = [m.host for m in sim.members]
        if isinstance(sim, ShardedCluster) and use_multiple_mongoses is False:
            return hosts[:1]
        return hosts

    def uri(
        self, use_multiple_mongoses: Optional[bool] = None, *, direct_connection: bool = False
    ) -> str:
        """The suite's connection string for this deployment (the test's uriOptions are
        passed to the client on top of it, and win). ``direct_connection``: for a client
        whose uriOptions set ``directConnection: true``, one seed (a replica set's
        primary, a cluster's first mongos) and no ``replicaSet``, as the unified format
        asks of such a client's connection string."""
        query: dict[str, str] = {}
        if isinstance(self.sim, ReplicaSet) and not direct_connection:
            query["replicaSet"] = self.sim.name
        if isinstance(self.sim, ShardedCluster) and self.sim.load_balanced:
            query["loadBalanced"] = "true"
        credentials = ""
        if self.env.auth:
            credentials = f"{urllib.parse.quote_plus(USER)}:{urllib.parse.quote_plus(PASSWORD)}@"
        seeds = self.hosts(use_multiple_mongoses)
        if direct_connection:
            primary = getattr(self.sim, "primary", None)
            seeds = [primary.host] if primary is not None else seeds[:1]
        hosts = ",".join(seeds)
        suffix = "/?" + urllib.parse.urlencode(query) if query else "/"
        return f"mongodb://{credentials}{hosts}{suffix}"

    def server_parameter(self, name: str) -> Any:
        """What ``getParameter`` answers for ``name`` (cached), or ``cases.MISSING``
        when the server has no such parameter (runOnRequirement serverParameters)."""
        if name not in self._parameters:
            from mongocore.api.client import Client  # noqa: PLC0415 - the runner's client
            from mongocore.errors import OperationFailure  # noqa: PLC0415
            from tests.spec.unified.cases import MISSING  # noqa: PLC0415 - cases imports us

            client = Client(self.uri(use_multiple_mongoses=False), serverSelectionTimeoutMS=20_000)
            try:
                reply = client.command("admin", {"getParameter": 1, name: 1})
                self._parameters[name] = reply.get(name, MISSING)
            except OperationFailure:
                self._parameters[name] = MISSING  # "no option found to get"
            finally:
                client.close()
                # Its monitors' awaitable hellos end with their connections now, not
                # after maxAwaitTimeMS (no thread of the query outlives it).
                self.release()
        return self._parameters[name]

    def processes(self) -> list[Any]:
        """Every simulated process that may hold a fail point."""
        sim = self.sim
        if isinstance(sim, ShardedCluster):
            return list(sim.members) + list(sim.shard.members)
        return list(sim.members)

    def reset(self) -> None:
        """After a test's operations: no fail point left anywhere, and a primary."""
        for process in self.processes():
            process.clear_fail_points()
        sim = self.sim
        if isinstance(sim, ReplicaSet):
            sim.wait_for_primary(20.0)
        elif isinstance(sim, ShardedCluster):
            sim.shard.wait_for_primary(20.0)

    def release(self) -> None:
        """After the test's clients are closed: close the server side of their
        connections too, and wake what waits on them (an awaitable hello, a blocked
        fail point), so the threads serving them end now. A client closing its socket
        does not wake a hello waiting for maxAwaitTimeMS, nor a streamed one."""
        for process in self.processes():
            process.server.close_connections()
            with process.cond:
                process.cond.notify_all()
        if isinstance(self.sim, LoadBalanced) and self.sim.balancer is not None:
            self.sim.balancer.server.close_connections()


class Deployments:
    """The deployments of one test module, started together and stopped together."""

    def __init__(self, environments: Iterable[Environment]) -> None:
        self._deployments: dict[Environment, Deployment] = {
            env: Deployment(env) for env in sorted(set(environments))
        }

    def start(self) -> None:
        try:
            for deployment in self._deployments.values():
                deployment.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for deployment in self._deployments.values():
            deployment.stop()

    def __getitem__(self, env: Environment) -> Deployment:
        try:
            return self._deployments[env]
        except KeyError:
            raise KeyError(f"no {env} deployment was started for this module") from None

    @property
    def environments(self) -> Mapping[Environment, Deployment]:
        return self._deployments


@contextmanager
def running(environments: Iterable[Environment]) -> Iterator[Deployments]:
    deployments = Deployments(environments)
    deployments.start()
    try:
        yield deployments
    finally:
        deployments.stop()
