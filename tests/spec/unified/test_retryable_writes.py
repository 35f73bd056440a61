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

from tests.spec.unified.cases import cases as suite_cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import retry_writes_opted_in_cases, run_case

SUITE = "retryable-writes/tests/unified"
CASES = suite_cases(SUITE)
OPTED_IN_CASES = retry_writes_opted_in_cases(CASES)


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
