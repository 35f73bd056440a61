"""Runner for the server selection logging suite (``server-selection/tests/logging``):
the structured log messages of server selection (:mod:`mongocore.io.selection_log`).

One pytest test per test case, with the id ``"<file>: <description>"``, run by
:mod:`tests.spec.unified.runner` against the simulated deployments started once for the
module (see ``conftest.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.unified.cases import cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import run_case

SUITE = "server-selection/tests/logging"
CASES = cases(SUITE)


@pytest.mark.parametrize("case", CASES)
def test_unified(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments)
