"""The simulated deployments of a unified suite's module: started once per module, for
the environments its ``CASES`` need, and stopped after its last test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.spec.unified.cases import needed_environments
from tests.spec.unified.deployments import Deployments, running


@pytest.fixture(scope="module")
def deployments(request: pytest.FixtureRequest) -> Iterator[Deployments]:
    with running(needed_environments(request.module.CASES)) as started:
        yield started
