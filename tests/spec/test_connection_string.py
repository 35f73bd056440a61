"""The official connection-string suite (Connection String spec), one test per case."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec import uri_runner

SUITE = "connection-string/tests"


@pytest.mark.parametrize(("test_id", "case"), uri_runner.cases(SUITE))
def test_connection_string(test_id: str, case: dict[str, Any]) -> None:
    uri_runner.run(SUITE, test_id, case, warning_means_error=False)
