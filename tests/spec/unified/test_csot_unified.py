"""Runner for the Client Side Operations Timeout unified suite
(``client-side-operations-timeout/tests``): one pytest test per test case, with the id
``"<file>: <description>"``, run by :mod:`tests.spec.unified.runner` against the
simulated deployments started once for the module (see ``conftest.py``).

The suite races fail points' blocks against timeouts by a few tens of milliseconds
(a 125 ms block against a socketTimeoutMS of 100); each test runs with its durations
:data:`TIME_DILATION` times longer (:mod:`tests.spec.unified.dilation`), every ratio
kept, so that the machine's load does not decide which comes first."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.unified.cases import cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import run_case

SUITE = "client-side-operations-timeout/tests"
CASES = cases(SUITE)
#: The margins become five times wider: 125 ms where upstream leaves 25 (at three, a
#: client thread kept from running for 75 ms on a loaded machine still lost the race).
TIME_DILATION = 5


@pytest.mark.parametrize("case", CASES)
def test_unified(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments, time_dilation=TIME_DILATION)
