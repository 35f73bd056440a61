"""Runner for the unified test format's own conformance suite
(``unified-test-format/tests``), run by :mod:`tests.spec.unified.runner` against the
simulated deployments started once for the module (see ``conftest.py``).

- ``valid-pass``: every test must pass, as in any unified suite (with the same
  deviation and not-applicable rules).
- ``valid-fail``: every test must fail, and in the runner's way: an expectation that
  does not hold, an entity the runner could not create (AssertionError and its
  EntityCreationFailed), a test that breaks the format (InvalidTest: a required
  argument missing, an undefined entity, a value the format does not allow), a key or
  a feature the runner cannot check (UncheckedKey, UnsupportedFeature). Any other
  exception is a fault of the runner and fails the test, and so does a pass. The
  not-applicable rules are not consulted: a file the runner must refuse is refused,
  never skipped (a file that needs what mongocore does not offer, client-side
  encryption, fails as the runner refuses it).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.format_keys import UncheckedKey
from tests.spec.unified.cases import UnifiedCase, cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.entities import InvalidTest, UnsupportedFeature
from tests.spec.unified.runner import run_case

VALID_PASS_SUITE = "unified-test-format/tests/valid-pass"
VALID_FAIL_SUITE = "unified-test-format/tests/valid-fail"
SUITES = (VALID_PASS_SUITE, VALID_FAIL_SUITE)
VALID_PASS = cases(VALID_PASS_SUITE)
VALID_FAIL = cases(VALID_FAIL_SUITE)
#: Every case of the module, for the deployments it needs (conftest.py).
CASES = VALID_PASS + VALID_FAIL

#: How the runner fails a test: the only errors a valid-fail test may end with.
RUNNER_FAILURES = (AssertionError, InvalidTest, UncheckedKey, UnsupportedFeature)


@pytest.mark.parametrize("case", VALID_PASS)
def test_valid_pass(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments)


@pytest.mark.parametrize("case", VALID_FAIL)
def test_valid_fail(case: Any, deployments: Deployments) -> None:
    if not isinstance(case, UnifiedCase):
        pytest.skip("spec suite not available")
    try:
        run_case(case, deployments, not_applicable_rules=False)
    except RUNNER_FAILURES:
        return
    raise AssertionError(f"{case.test_id}: a valid-fail test passed")
