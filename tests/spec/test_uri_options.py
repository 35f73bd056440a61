"""The official uri-options suite (URI Options spec), one test per case.

Beyond the files' own assertions, a case that warns must warn because of an invalid
value (and then strict mode, what the client uses, raises naming the option) or
because of an unknown key (never an error).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec import uri_runner

SUITE = "uri-options/tests"


@pytest.mark.parametrize(("test_id", "case"), uri_runner.cases(SUITE))
def test_uri_options(test_id: str, case: dict[str, Any]) -> None:
    uri_runner.run(SUITE, test_id, case, warning_means_error=True)
