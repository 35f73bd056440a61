"""Runner for the retryable-writes unified suite
(``retryable-writes/tests/unified``): one pytest test per test case, with the id
``"<file>: <description>"``, run by :mod:`tests.spec.unified.runner` against the
simulated deployments started once for the module (see ``conftest.py``).

``test_unified`` asserts the seed's outcome (with the [[deviation]] entries of
``specs/deviations.toml``); ``test_unified_retry_writes_opted_in`` runs the tests the
``retryable-writes-default-off`` deviation covers once more, with retries enabled.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec import deviations
from tests.spec.unified import seed
from tests.spec.unified.cases import UnifiedCase
from tests.spec.unified.cases import cases as suite_cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import run_case

SUITE = "retryable-writes/tests/unified"
CASES = suite_cases(SUITE)


def _opted_in(param: Any) -> bool:
    """Does the case run once more with retryWrites opted in: does the
    retryable-writes-default-off rule select it (a client that does not set
    retryWrites runs a supported write)? The placeholder standing for an unavailable
    suite is kept."""
    case = param.values[0]
    if not isinstance(case, UnifiedCase):
        return True
    document, test = case.load()
    if deviations.not_applicable(case.suite, document, test, case.test_id) is not None:
        return False
    return any(
        entry.get("transform") == seed.WRITES_DEFAULT_OFF
        for entry in deviations.deviations(case.suite, document, test, case.test_id)
    )


OPTED_IN_CASES = [param for param in CASES if _opted_in(param)]


@pytest.mark.parametrize("case", CASES)
def test_unified(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments)


@pytest.mark.parametrize("case", OPTED_IN_CASES)
def test_unified_retry_writes_opted_in(case: Any, deployments: Deployments) -> None:
    """The upstream expectations, unchanged, with retryable writes opted in.

    The seed defaults retryWrites to false, so ``test_unified`` asserts that these
    tests' clients retry nothing, and that onPrimaryTransactionalWrite never acts on
    their writes (they carry no txnNumber). Retrying is still the behaviour upstream
    describes, and the one these fail points exist to provoke: here each client whose
    uriOptions do not set retryWrites gets ``retryWrites: true``, and the test must
    pass as upstream wrote it (same events, results, errors and outcome), except where
    the retryable-writes-seed-errors rule says the seed retries other errors.
    """
    run_case(case, deployments, retry_writes_opted_in=True)
