"""Test-wide configuration: the spec-suite switch, hypothesis profiles, thread-leak check,
and the simulated deployments most tests share.

- ``rs``: the session's simulated replica set (mongocore's pytest plugin,
  ``mongodb_replica_set``): three members, ``members[0]`` primary, no data. The plugin
  puts it back after every test (killed members restarted, fail points cleared, the
  first primary elected again, the databases dropped), so a test may break it.
- ``standalone``: the session's simulated standalone (``mongodb_standalone``), likewise.
- ``cluster``: the session's simulated sharded cluster (``mongodb_sharded_cluster``: one
  router, a shard of three members), likewise.
- ``lb``: the session's simulated load-balanced deployment (``mongodb_load_balanced``),
  likewise.

A test that restarts, heals or adds a member inside itself starts threads that outlive
it (the deployment is the session's), which the thread-leak check below would report:
its module asks for a deployment of its own (``mongodb_replica_set_per_test``, or its
own ``rs``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from mongocore.pytest_plugin import MongoDBDeployment

if TYPE_CHECKING:
    from mongocore.sim import LoadBalanced, ReplicaSet, ShardedCluster, Standalone

# CI runs a fixed, derandomized profile so a result never depends on luck.
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require-spec-tests",
        action="store_true",
        default=False,
        help="fail, instead of skipping, when MONGOCORE_SPEC_TESTS is unset or a suite is missing",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--require-spec-tests"):
        os.environ["MONGOCORE_REQUIRE_SPEC_TESTS"] = "1"


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    """Every test must stop and join the threads it started."""
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    leaked += [
        t
        for t in threading.enumerate()
        if t not in before and t.is_alive() and t.name.startswith("mongocore")
    ]
    for t in leaked:
        t.join(timeout=10)
    still = sorted({t.name for t in leaked if t.is_alive()})
    assert not still, f"threads left running after the test: {still}"


@pytest.fixture
def rs(mongodb_replica_set: MongoDBDeployment) -> ReplicaSet:
    """The session's replica set (see the module's docstring)."""
    replica_set: ReplicaSet = mongodb_replica_set.sim
    return replica_set


@pytest.fixture
def standalone(mongodb_standalone: MongoDBDeployment) -> Standalone:
    """The session's standalone (see the module's docstring)."""
    server: Standalone = mongodb_standalone.sim
    return server


@pytest.fixture
def cluster(mongodb_sharded_cluster: MongoDBDeployment) -> ShardedCluster:
    """The session's sharded cluster (see the module's docstring)."""
    sharded: ShardedCluster = mongodb_sharded_cluster.sim
    return sharded


@pytest.fixture
def lb(mongodb_load_balanced: MongoDBDeployment) -> LoadBalanced:
    """The session's load-balanced deployment (see the module's docstring)."""
    balanced: LoadBalanced = mongodb_load_balanced.sim
    return balanced


_THIRDPARTY_REPORTS: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep the reports the third-party suites' runners record (tests/thirdparty)."""
    if report.when == "call":
        for name, value in report.user_properties:
            if name == "thirdparty_report":
                _THIRDPARTY_REPORTS.append(str(value))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The third-party suites' counts, per driver, and their failures by rule."""
    if _THIRDPARTY_REPORTS:
        terminalreporter.section("third-party suites on the simulated deployment")
        for report in _THIRDPARTY_REPORTS:
            for line in report.splitlines():
                terminalreporter.line(line)
