"""Unified test format: loading test files ("Executing a Test File", "Schema Version",
"Version String") and evaluating "runOnRequirement" against the simulated deployment.

Each test case becomes one pytest test with the id ``"<file stem>: <description>"``.
A file is loaded with an Extended JSON parser; a file whose schemaVersion this runner
does not support fails its tests (it is never silently skipped).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from tests.spec import specdata
from tests.spec.unified.deployments import SERVER_VERSION, TOPOLOGIES, Environment
from tests.spec.unified.matching import match

#: The newest schema version this runner implements (for the features these suites
#: use). Of what 1.22 to 1.28 added, it evaluates the requirements csfle (as an object
#: too) and minLibmongocryptVersion (never met: no client-side encryption), observes
#: topologyOpeningEvent and topologyClosedEvent, and waits for awaitMinPoolSizeMS; a
#: test using the rest (autoEncryptOpts, the connectionPendingResponse events,
#: observeTracingMessages and expectTracingMessages) fails with UnsupportedFeature
#: naming it, as does any other key it does not know.
SCHEMA_VERSION = (1, 28)


@dataclass(frozen=True)
class UnifiedCase:
    """One test of one file."""

    suite: str
    path: Path
    index: int
    test_id: str

    def load(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The file (Extended JSON decoded) and this test of it: a fresh copy, which the
        caller may change."""
        document = copy.deepcopy(_load_extended(self.path))
        return document, document["tests"][self.index]


@cache
def _load_extended(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = specdata.load_extended(path)
    return document


def parse_version(text: str) -> tuple[int, ...]:
    """A Version String: major[.minor[.patch]], anything after the patch dropped."""
    parts: list[int] = []
    for piece in str(text).split(".")[:3]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits or 0))
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def schema_supported(version: str) -> bool:
    wanted = parse_version(version)
    return wanted[0] == SCHEMA_VERSION[0] and wanted[1] <= SCHEMA_VERSION[1]


def cases(suite: str) -> list[Any]:
    """pytest params, one per test case of every file of ``suite`` (or one skipped
    placeholder when the suite is not available, as specdata does)."""
    params: list[Any] = []
    for file_param in specdata.json_files(suite):
        path = file_param.values[0]
        if path is None:
            params.append(file_param)
            continue
        document = specdata.load(path)
        stem = path.stem
        for index, test in enumerate(document.get("tests", [])):
            test_id = f"{stem}: {test.get('description', index)}"
            params.append(pytest.param(UnifiedCase(suite, path, index, test_id), id=test_id))
    return params


# --- runOnRequirement ----------------------------------------------------------------


#: A deployment's answer to getParameter for one parameter (MISSING: it has none), for
#: the requirements only a running deployment can evaluate (serverParameters,
#: authMechanism); None evaluates the rest and leaves those to the run.
ParameterLookup = Optional[Callable[[str], Any]]
MISSING = object()


def _parameters_met(requirement: Mapping[str, Any], parameter: Callable[[str], Any]) -> bool:
    """serverParameters (flexible numeric comparisons; a parameter the server lacks is
    "not equal") and authMechanism (one of the server's authenticationMechanisms)."""
    for name, expected in dict(requirement.get("serverParameters") or {}).items():
        actual = parameter(str(name))
        if actual is MISSING:
            return False
        try:
            match(expected, actual, root=False)
        except AssertionError:
            return False
    if "authMechanism" in requirement:
        mechanisms = parameter("authenticationMechanisms")
        if mechanisms is MISSING or not isinstance(mechanisms, (list, tuple)):
            return False
        wanted = str(requirement["authMechanism"]).upper()
        return wanted in {str(m).upper() for m in mechanisms}
    return True


def _satisfied(
    requirement: Mapping[str, Any], env: Environment, parameter: ParameterLookup = None
) -> bool:
    known = {
        "minServerVersion",
        "maxServerVersion",
        "topologies",
        "serverless",
        "auth",
        "serverParameters",
        "csfle",
        "minLibmongocryptVersion",
        "authMechanism",
    }
    unknown = set(requirement) - known
    if unknown:
        raise ValueError(f"unknown runOnRequirement fields {sorted(unknown)}")
    version = SERVER_VERSION
    if "minServerVersion" in requirement and version < parse_version(
        requirement["minServerVersion"]
    ):
        return False
    if "maxServerVersion" in requirement and version > parse_version(
        requirement["maxServerVersion"]
    ):
        return False
    if "topologies" in requirement:
        # The simulated sharded cluster's shard is a replica set: it is also
        # "sharded-replicaset".
        names = {"sharded" if t == "sharded-replicaset" else t for t in requirement["topologies"]}
        if env.topology not in names:
            return False
    if requirement.get("serverless") == "require":
        return False  # the simulator is not Atlas Serverless
    if "auth" in requirement and bool(requirement["auth"]) != env.auth:
        return False
    if requirement.get("csfle") or "minLibmongocryptVersion" in requirement:
        return False  # no client-side field level encryption (csfle: true or an object)
    # serverParameters and authMechanism are asked of the running deployment.
    return parameter is None or _parameters_met(requirement, parameter)


def _any_satisfied(
    requirements: Optional[Sequence[Mapping[str, Any]]],
    env: Environment,
    parameter: ParameterLookup = None,
) -> bool:
    if not requirements:
        return True
    return any(_satisfied(r, env, parameter) for r in requirements)


def environments(file: Mapping[str, Any], test: Mapping[str, Any]) -> list[Environment]:
    """The deployments a test may run against: every topology that satisfies both the
    file's and the test's runOnRequirements; authentication only where a requirement
    asks for it (without authentication otherwise). The requirements only a running
    deployment can answer are then checked by :func:`satisfied_by`."""
    chosen: list[Environment] = []
    for topology in TOPOLOGIES:
        for auth in (False, True):
            env = Environment(topology, auth)
            if _any_satisfied(file.get("runOnRequirements"), env) and _any_satisfied(
                test.get("runOnRequirements"), env
            ):
                chosen.append(env)
                break
    return chosen


def satisfied_by(
    file: Mapping[str, Any],
    test: Mapping[str, Any],
    env: Environment,
    parameter: Callable[[str], Any],
) -> bool:
    """Do the runOnRequirements hold for this running deployment, its server parameters
    (``parameter``: its getParameter answers) included?"""
    return _any_satisfied(file.get("runOnRequirements"), env, parameter) and _any_satisfied(
        test.get("runOnRequirements"), env, parameter
    )


def asked_parameters(params: Iterable[Any]) -> set[str]:
    """The server parameters the runOnRequirements of these cases ask for (and
    authenticationMechanisms, for an authMechanism requirement)."""
    names: set[str] = set()
    for param in params:
        case = param.values[0]
        if not isinstance(case, UnifiedCase):
            continue
        try:
            document, test = case.load()
        except Exception:  # the case's own failure, not the module's
            continue
        requirements = [*(document.get("runOnRequirements") or [])]
        requirements += test.get("runOnRequirements") or []
        for requirement in requirements:
            if not isinstance(requirement, Mapping):
                continue
            names.update(str(name) for name in requirement.get("serverParameters") or {})
            if "authMechanism" in requirement:
                names.add("authenticationMechanisms")
    return names


def needed_environments(params: Iterable[Any]) -> set[Environment]:
    """Every deployment the given cases may run against (started once per module)."""
    needed: set[Environment] = set()
    for param in params:
        case = param.values[0]
        if not isinstance(case, UnifiedCase):
            continue
        try:
            document, test = case.load()
            if schema_supported(str(document.get("schemaVersion", ""))):
                needed.update(environments(document, test))
        except Exception:  # the case's own failure, not the module's
            # A file this runner cannot load or whose requirements it cannot evaluate
            # (malformed, or of a newer schema) fails its own tests: run_case meets the
            # same error there. The other files of the suite still run.
            continue
    return needed
