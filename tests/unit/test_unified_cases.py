"""The unified runner's reading of a test file (tests/spec/unified/cases.py and the
start of runner.TestRun.run): one file it cannot evaluate fails its own tests while
the suite's other files still get their deployments; requirements of newer schema
versions are evaluated; a test field it does not know is refused, never ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.spec.unified.cases import UnifiedCase, environments, needed_environments
from tests.spec.unified.deployments import Environment
from tests.spec.unified.entities import UnsupportedFeature
from tests.spec.unified.runner import TestRun


def _case(tmp_path: Path, name: str, document: dict[str, Any]) -> Any:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    return pytest.param(UnifiedCase("suite", path, 0, f"{name}: t"), id=name)


def _file(schema: str, requirements: Any) -> dict[str, Any]:
    return {
        "description": "d",
        "schemaVersion": schema,
        "runOnRequirements": requirements,
        "tests": [{"description": "t", "operations": []}],
    }


def test_a_file_the_runner_cannot_evaluate_does_not_stop_the_others(tmp_path: Path) -> None:
    """The broken variant this catches: evaluating every file's requirements for the
    module's deployments without containing errors, so that one file with a
    requirement of a newer schema (or malformed requirements) made every test of the
    suite an error at setup."""
    good = _case(tmp_path, "good", _file("1.0", [{"topologies": ["replicaset"]}]))
    unknown_field = _case(tmp_path, "newer", _file("1.0", [{"poolBackoff": True}]))
    malformed = _case(tmp_path, "malformed", _file("1.0", {"serverParameters": {}}))
    newer_schema = _case(tmp_path, "schema", _file("1.999", [{"topologies": ["sharded"]}]))

    needed = needed_environments([unknown_field, malformed, good, newer_schema])

    assert needed == {Environment("replicaset")}
    # The broken file's own test still meets the error when it runs.
    document, test = unknown_field.values[0].load()
    with pytest.raises(ValueError, match="poolBackoff"):
        environments(document, test)


@pytest.mark.parametrize(
    "requirement",
    [
        {"csfle": True},
        {"csfle": {"minLibmongocryptVersion": "1.13.0"}},
        {"minLibmongocryptVersion": "1.13.0"},
    ],
)
def test_client_side_encryption_requirements_are_never_met(requirement: dict[str, Any]) -> None:
    """csfle (a boolean, or an object since schema 1.25) and minLibmongocryptVersion
    (1.26) ask for libmongocrypt, which mongocore does not use."""
    file = _file("1.28", [requirement])
    assert environments(file, file["tests"][0]) == []


def test_a_test_field_the_runner_does_not_know_is_refused() -> None:
    """The broken variant this catches: ignoring an expectation of a newer schema
    (expectTracingMessages), so that the test passes without it being checked."""
    file = _file("1.28", None)
    test = {**file["tests"][0], "expectTracingMessages": [{"client": "c", "spans": []}]}
    with pytest.raises(UnsupportedFeature, match="expectTracingMessages"):
        TestRun(file, test, deployment=None).run()  # type: ignore[arg-type]
