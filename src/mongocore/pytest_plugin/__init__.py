"""mongocore's pytest plugin: MongoDB deployments for tests, without a server binary.

Installed with mongocore (the ``pytest11`` entry point ``mongocore``; ``-p
no:mongocore`` turns it off); its simulated deployments need the ``sim`` extra. The
fixtures (fixtures.py) give a test a standalone, a replica set, a sharded cluster or
a load-balanced deployment of ``mongocore.sim``, shared by the session or the test's
own, each a :class:`MongoDBDeployment`: its URI and the controls for step-downs,
kills, partitions and fail points. ``--mongodb-uri`` (or ``MONGOCORE_TEST_URI``, or
the ``mongodb_uri`` ini option) points the same fixtures at a real deployment.
docs/simulator.md, "Testing with pytest".

Loading the plugin imports neither the simulator nor pymongo: a conftest may call
``mongocore.install_as_pymongo()`` first, and the simulator, imported when a test
first asks for a deployment, then runs on mongocore's pymongo.
"""

from __future__ import annotations

import pytest

# The fixtures are this module's attributes: pytest finds them here.
from mongocore.pytest_plugin.fixtures import (
    FACTORY,
    PER_TEST,
    DeploymentFactory,
    marker_options,
    mongodb_deployments,
    mongodb_isolation,
    mongodb_load_balanced,
    mongodb_load_balanced_per_test,
    mongodb_replica_set,
    mongodb_replica_set_per_test,
    mongodb_session,
    mongodb_sharded_cluster,
    mongodb_sharded_cluster_per_test,
    mongodb_standalone,
    mongodb_standalone_per_test,
)
from mongocore.pytest_plugin.handle import FaultControlsUnavailable, MongoDBDeployment
from mongocore.pytest_plugin.real import redacted
from mongocore.pytest_plugin.session import REAL_SHAPE, URI_ENV, Settings
from mongocore.pytest_plugin.shapes import INI_OPTIONS

__all__ = [
    "DeploymentFactory",
    "FaultControlsUnavailable",
    "MongoDBDeployment",
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

_SETTINGS = pytest.StashKey[Settings]()

#: Why a test marked mongodb_simulator is skipped on a real deployment.
_NEEDS_SIMULATOR = (
    "needs the simulator (marked mongodb_simulator), and the fixtures are pointed at a"
    " real deployment (--mongodb-uri)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mongodb", "MongoDB deployments (mongocore)")
    group.addoption(
        "--mongodb-uri",
        dest="mongodb_uri",
        default=None,
        metavar="URI",
        help="run the mongodb_* fixtures against this deployment instead of the simulator"
        f" (also: the {URI_ENV} environment variable, the mongodb_uri ini option). Its"
        " fault controls are then unavailable; the tests' databases are dropped after"
        " each test",
    )
    parser.addini("mongodb_uri", "the deployment --mongodb-uri names, when it is not given")
    for name, (_, help_text) in INI_OPTIONS.items():
        parser.addini(name, help_text)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mongodb(**shape): the shape of the test's own deployment (the *_per_test fixtures):"
        " members, name, hostname, auth, tls, election_delay, shard_members, mongoses, and"
        " any keyword of the simulator's class",
    )
    config.addinivalue_line(
        "markers",
        "mongodb_simulator: the test needs the simulator (fault controls, .sim); skipped"
        " when the fixtures are pointed at a real deployment (--mongodb-uri)",
    )
    settings = Settings.from_config(config)
    config.stash[_SETTINGS] = settings
    if settings.uri is not None and _workers(config) > 1:
        raise pytest.UsageError(
            "--mongodb-uri runs on one worker: each worker drops the databases its tests"
            " made, which would drop the other workers'. Leave out -n (or give -n 0)"
        )


def _workers(config: pytest.Config) -> int:
    # xdist's -n, a number by now ("auto" is counted before pytest_configure). Not the
    # PYTEST_XDIST_WORKER_COUNT of the environment: a pytest run inside a worker's test
    # (pytester) inherits it, yet runs on one process.
    count = getattr(config.option, "numprocesses", None)
    return count if isinstance(count, int) else 0


def pytest_report_header(config: pytest.Config) -> list[str]:
    settings = config.stash.get(_SETTINGS, None)
    if settings is None or settings.uri is None:
        return []
    return [f"mongodb: the fixtures run against {redacted(settings.uri)} (--mongodb-uri)"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a real deployment, skip what only the simulator can give, saying why."""
    settings = config.stash.get(_SETTINGS, None)
    if settings is None or settings.uri is None:
        return
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("mongodb_simulator") is not None:
            item.add_marker(pytest.mark.skip(reason=_NEEDS_SIMULATOR))
        elif FACTORY in names:
            item.add_marker(pytest.mark.skip(reason=f"{REAL_SHAPE}: {FACTORY}"))
        elif names & set(PER_TEST) and marker_options(item):
            item.add_marker(pytest.mark.skip(reason=f"{REAL_SHAPE}: the mongodb marker"))
