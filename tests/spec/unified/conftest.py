"""The simulated deployments of a unified suite's module: started once per module, for
the environments its ``CASES`` need, and stopped after its last test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.spec.unified.cases import asked_parameters, needed_environments
from tests.spec.unified.deployments import Deployments, running


@pytest.fixture(scope="module")
def deployments(request: pytest.FixtureRequest) -> Iterator[Deployments]:
    with running(needed_environments(request.module.CASES)) as started:
        # The server parameters the tests' requirements ask for, asked once now, so
        # that no test's own threads include the query's.
        names = asked_parameters(request.module.CASES)
        for deployment in started.environments.values():
            for name in names:
                deployment.server_parameter(name)
        yield started
