"""Runner for the sessions unified suite (``sessions/tests``): explicit and implicit
sessions, dirty server sessions, and snapshot sessions (Driver Sessions and Snapshot
Reads specs; :mod:`mongocore.api.client_session`, :mod:`mongocore.io.sessions`).

One pytest test per test case, with the id ``"<file>: <description>"``, run by
:mod:`tests.spec.unified.runner` against the simulated deployments started once for the
module (see ``conftest.py``).

``test_unified`` asserts the seed's outcome: the dirty-session tests write through a
client that does not set retryWrites, which the retryable-writes seed leaves off, so
their failed write is not retried (the retryable-writes-default-off rule of
``specs/deviations.toml``). ``test_unified_retry_writes_opted_in`` runs those tests
once more with ``retryWrites: true``, as upstream wrote them: the retry reuses the
dirty server session, which is then discarded rather than pooled.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.unified.cases import cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import retry_writes_opted_in_cases, run_case

SUITE = "sessions/tests"
CASES = cases(SUITE)
OPTED_IN_CASES = retry_writes_opted_in_cases(CASES)


@pytest.mark.parametrize("case", CASES)
def test_unified(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments)


@pytest.mark.parametrize("case", OPTED_IN_CASES)
def test_unified_retry_writes_opted_in(case: Any, deployments: Deployments) -> None:
    """Upstream's expectations, unchanged, for a client that opted in to retryable
    writes (see the module docstring)."""
    run_case(case, deployments, retry_writes_opted_in=True)
