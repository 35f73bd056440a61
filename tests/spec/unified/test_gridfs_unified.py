"""Runner for the GridFS unified suite (``gridfs/tests``): one pytest test per test
case, with the id ``"<file>: <description>"``, run by :mod:`tests.spec.unified.runner`
against the simulated deployments started once for the module (see ``conftest.py``);
the bucket entity and its operations are :mod:`tests.spec.unified.gridfs_operations`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.unified.cases import cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import run_case

SUITE = "gridfs/tests"
CASES = cases(SUITE)


@pytest.mark.parametrize("case", CASES)
def test_unified(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments)
