"""Finding the official JSON suites.

The suites are never copied into this repository: they are read from the folder
named by ``MONGOCORE_SPEC_TESTS``, laid out like the upstream ``source/`` folder.
Without it, spec tests are collected as one skipped test per suite with a reason
that says how to get the data; with ``--require-spec-tests`` (or
``MONGOCORE_REQUIRE_SPEC_TESTS=1``) a missing suite is a collection error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from bson import json_util

ENV = "MONGOCORE_SPEC_TESTS"
HOW_TO_GET = (
    f"set {ENV} to a clone of mongodb/specifications' source/ folder "
    "(for example MONGOCORE_SPEC_TESTS=../shared/specifications/source)"
)


def required() -> bool:
    return os.environ.get("MONGOCORE_REQUIRE_SPEC_TESTS", "") not in ("", "0")


def suite_dir(relative: str) -> Path | None:
    """The suite folder, or None when it is not available (and that is allowed)."""
    root = os.environ.get(ENV)
    if not root:
        if required():
            raise pytest.UsageError(f"spec suite {relative} is required but {ENV} is unset")
        return None
    path = Path(root) / relative
    if not path.is_dir():
        if required():
            raise pytest.UsageError(f"spec suite {relative} is required but {path} does not exist")
        return None
    return path


def json_files(relative: str, recursive: bool = False) -> list[Any]:
    """pytest params, one per JSON file of a suite (a skipped placeholder if it is missing)."""
    path = suite_dir(relative)
    if path is None:
        return [
            pytest.param(
                None,
                id=f"{relative}-missing",
                marks=pytest.mark.skip(reason=f"spec suite {relative} not found: {HOW_TO_GET}"),
            )
        ]
    files = sorted(path.rglob("*.json") if recursive else path.glob("*.json"))
    if not files:
        if required():
            raise pytest.UsageError(f"spec suite {relative} has no JSON files in {path}")
        return [
            pytest.param(
                None,
                id=f"{relative}-empty",
                marks=pytest.mark.skip(reason=f"no JSON files in {path}"),
            )
        ]
    return [pytest.param(f, id=str(f.relative_to(path).with_suffix(""))) for f in files]


def load(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_extended(path: Path) -> Any:
    """Load a suite file decoding extended JSON ($oid, $numberLong, ...) into bson types."""
    with open(path, encoding="utf-8") as f:
        return json_util.loads(f.read())
