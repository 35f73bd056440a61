"""The plugin's fixtures.

- ``mongodb_standalone``, ``mongodb_replica_set``, ``mongodb_sharded_cluster``,
  ``mongodb_load_balanced`` (session scope): one deployment of each kind per session
  (per xdist worker), in the ini options' shape, started when a test first asks for
  it and put back after every test that used it (:func:`mongodb_isolation`).
- ``mongodb_<kind>_per_test``: a deployment of the test's own, in the shape of the
  ini options and the test's ``mongodb`` marker, stopped after the test.
- ``mongodb_deployments``: a factory, ``mongodb_deployments.replica_set(members=5,
  arbiters=1)``, for any number of deployments of any shape, stopped after the test.

Every one is a :class:`~mongocore.pytest_plugin.handle.MongoDBDeployment`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mongocore.pytest_plugin.handle import MongoDBDeployment
from mongocore.pytest_plugin.session import Deployments, Settings

__all__ = [
    "FACTORY",
    "PER_TEST",
    "SHARED",
    "DeploymentFactory",
    "mongodb_deployments",
    "mongodb_isolation",
    "mongodb_load_balanced",
    "mongodb_load_balanced_per_test",
    "mongodb_replica_set",
    "mongodb_replica_set_per_test",
    "mongodb_session",
    "mongodb_sharded_cluster",
    "mongodb_sharded_cluster_per_test",
    "mongodb_standalone",
    "mongodb_standalone_per_test",
]

#: The session-scoped fixtures, and their kinds.
SHARED = {
    "mongodb_standalone": "standalone",
    "mongodb_replica_set": "replica_set",
    "mongodb_sharded_cluster": "sharded_cluster",
    "mongodb_load_balanced": "load_balanced",
}
#: The per-test fixtures, and their kinds.
PER_TEST = {f"{name}_per_test": kind for name, kind in SHARED.items()}
FACTORY = "mongodb_deployments"
_ALL = {*SHARED, *PER_TEST, FACTORY}


def marker_options(node: pytest.Item) -> dict[str, Any]:
    """The closest ``mongodb`` marker's keyword arguments (the test's, else its
    class's, else its module's)."""
    marker = node.get_closest_marker("mongodb")
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError(
            f"{node.nodeid}: the mongodb marker takes keyword arguments only"
            f" (members=3, auth='user:password', ...), not {marker.args!r}"
        )
    return dict(marker.kwargs)


@pytest.fixture(scope="session", name="_mongodb_session")
def mongodb_session(pytestconfig: pytest.Config) -> Iterator[Deployments]:
    """The session's deployments (session.py); the other fixtures go through it."""
    deployments = Deployments(Settings.from_config(pytestconfig))
    yield deployments
    deployments.close()


@pytest.fixture(autouse=True, name="_mongodb_isolation")
def mongodb_isolation(request: pytest.FixtureRequest) -> Iterator[None]:
    """Put the shared deployments a test used back as they were, after the test.

    An autouse fixture of the plugin is set up before the function-scoped fixtures of
    a conftest (a thread-leak check among them) and torn down after them: a restart
    the reset makes starts its threads outside such a check's window, and a test's
    clients are closed before the reset runs.
    """
    names = set(request.fixturenames) & _ALL
    if not names:
        yield
        return
    deployments: Deployments = request.getfixturevalue("_mongodb_session")
    shared = sorted(names & set(SHARED))
    if shared and not names - set(SHARED) and _marker_options(request):
        pytest.fail(
            f"mongocore plugin: the mongodb marker shapes the *_per_test fixtures and the"
            f" factory; {', '.join(shared)} has the ini options' shape (use"
            f" {shared[0]}_per_test for a shape of the test's own)",
            pytrace=False,
        )
    yield
    used = [deployments.shared(SHARED[name]) for name in shared]
    if deployments.real is not None:
        used = [deployments.real_handle(None)]
    for handle in used:
        try:
            handle.reset()
        except Exception as exc:
            deployments.forget(handle)
            raise RuntimeError(
                f"could not put {handle!r} back after {request.node.nodeid}: {exc}"
                " (it is stopped; the next test that asks for it gets a new one)"
            ) from exc


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    try:
        return marker_options(request.node)
    except pytest.UsageError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)


def _shared(request: pytest.FixtureRequest, kind: str) -> MongoDBDeployment:
    deployments: Deployments = request.getfixturevalue("_mongodb_session")
    return deployments.shared(kind)


@pytest.fixture(scope="session")
def mongodb_standalone(request: pytest.FixtureRequest) -> MongoDBDeployment:
    """The session's standalone, put back after every test that uses it."""
    return _shared(request, "standalone")


@pytest.fixture(scope="session")
def mongodb_replica_set(request: pytest.FixtureRequest) -> MongoDBDeployment:
    """The session's replica set, put back after every test that uses it."""
    return _shared(request, "replica_set")


@pytest.fixture(scope="session")
def mongodb_sharded_cluster(request: pytest.FixtureRequest) -> MongoDBDeployment:
    """The session's sharded cluster, put back after every test that uses it."""
    return _shared(request, "sharded_cluster")


@pytest.fixture(scope="session")
def mongodb_load_balanced(request: pytest.FixtureRequest) -> MongoDBDeployment:
    """The session's load-balanced deployment, put back after every test that uses it."""
    return _shared(request, "load_balanced")


def _own(request: pytest.FixtureRequest, kind: str) -> Iterator[MongoDBDeployment]:
    deployments: Deployments = request.getfixturevalue("_mongodb_session")
    handle = deployments.own(kind, _marker_options(request))
    try:
        yield handle
    finally:
        deployments.release(handle)


@pytest.fixture
def mongodb_standalone_per_test(request: pytest.FixtureRequest) -> Iterator[MongoDBDeployment]:
    """A standalone of the test's own (the ``mongodb`` marker's shape)."""
    yield from _own(request, "standalone")


@pytest.fixture
def mongodb_replica_set_per_test(request: pytest.FixtureRequest) -> Iterator[MongoDBDeployment]:
    """A replica set of the test's own (the ``mongodb`` marker's shape)."""
    yield from _own(request, "replica_set")


@pytest.fixture
def mongodb_sharded_cluster_per_test(
    request: pytest.FixtureRequest,
) -> Iterator[MongoDBDeployment]:
    """A sharded cluster of the test's own (the ``mongodb`` marker's shape)."""
    yield from _own(request, "sharded_cluster")


@pytest.fixture
def mongodb_load_balanced_per_test(
    request: pytest.FixtureRequest,
) -> Iterator[MongoDBDeployment]:
    """A load-balanced deployment of the test's own (the ``mongodb`` marker's shape)."""
    yield from _own(request, "load_balanced")


class DeploymentFactory:
    """Builds simulated deployments for one test; each is stopped after the test.

    The keyword arguments are the ``mongodb`` marker's: the plugin's shape options
    (``members``, ``name``, ``hostname``, ``auth``, ``tls``, ``election_delay``,
    ``shard_members``, ``mongoses``) over the ini's, and any other keyword of the
    simulator's class (``arbiters=1``, ``tags=[...]``).
    """

    def __init__(self, deployments: Deployments) -> None:
        self._deployments = deployments
        self._made: list[MongoDBDeployment] = []

    def _make(self, kind: str, options: dict[str, Any]) -> MongoDBDeployment:
        handle = self._deployments.own(kind, options)
        self._made.append(handle)
        return handle

    def standalone(self, **options: Any) -> MongoDBDeployment:
        return self._make("standalone", options)

    def replica_set(self, **options: Any) -> MongoDBDeployment:
        return self._make("replica_set", options)

    def sharded_cluster(self, **options: Any) -> MongoDBDeployment:
        return self._make("sharded_cluster", options)

    def load_balanced(self, **options: Any) -> MongoDBDeployment:
        return self._make("load_balanced", options)

    def close(self) -> None:
        made, self._made = self._made, []
        for handle in reversed(made):
            self._deployments.release(handle)


@pytest.fixture
def mongodb_deployments(request: pytest.FixtureRequest) -> Iterator[DeploymentFactory]:
    """A factory of simulated deployments of any shape, for this test."""
    factory = DeploymentFactory(request.getfixturevalue("_mongodb_session"))
    try:
        yield factory
    finally:
        factory.close()
