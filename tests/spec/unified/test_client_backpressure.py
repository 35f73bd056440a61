"""Runner for the client backpressure unified suite (``client-backpressure/tests``):
one pytest test per test case, run by :mod:`tests.spec.unified.runner` against the
simulated deployments started once for the module (see ``conftest.py``).

mongocore does not implement the Client Backpressure spec, which retries any command
a server fails with an overload error; the seeds decide those retries (retryable
reads 1.3.0 and retryable writes 1.0: none for these errors), so the tests run with
the seed's outcome (the ``overloaded-errors-seed`` rule of specs/deviations.toml)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.unified.cases import cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import run_case

SUITE = "client-backpressure/tests"
CASES = cases(SUITE)


@pytest.mark.parametrize("case", CASES)
def test_unified(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments)
