"""Collecting a unified suite (tests/spec/unified/cases.py): one file the runner
cannot evaluate fails its own tests, and the suite's other files still get their
deployments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.spec.unified.cases import UnifiedCase, environments, needed_environments
from tests.spec.unified.deployments import Environment


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
