"""Runner for the RunCommand unified suite (``run-command/tests/unified``):
``Database.command`` and ``Database.cursor_command`` (runCommand, runCursorCommand,
createCommandCursor).

One pytest test per test case, with the id ``"<file>: <description>"``, run by
:mod:`tests.spec.unified.runner` against the simulated deployments started once for the
module (see ``conftest.py``).

One driver feature these tests need is missing from mongocore; a test needing it
is a strict expected failure (it must fail, so an implementation shows up as an
XPASS), selected by what the test does (:data:`GAPS`): the Stable API (a client
entity created with ``serverApi``): mongocore declares no API version on its
commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

import pytest

from tests.spec.unified.cases import UnifiedCase, cases
from tests.spec.unified.deployments import Deployments
from tests.spec.unified.runner import run_case

SUITE = "run-command/tests/unified"


def _uses_server_api(document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """An operation goes through a client created with serverApi (or its entities)."""
    owners: dict[str, str] = {}
    with_api: set[str] = set()
    for definition in document.get("createEntities", []):
        kind, spec = next(iter(definition.items()))
        owners[spec["id"]] = spec.get("client") or spec.get("database") or spec["id"]
        if kind == "client" and "serverApi" in spec:
            with_api.add(spec["id"])

    def client_of(name: str) -> str:
        while owners.get(name, name) != name:
            name = owners[name]
        return name

    return any(client_of(str(op.get("object"))) in with_api for op in test["operations"])


#: Missing driver features: (rule, why the test fails).
GAPS: list[tuple[Callable[[Mapping[str, Any], Mapping[str, Any]], bool], str]] = [
    (_uses_server_api, "mongocore has no Stable API (serverApi): no apiVersion is sent"),
]


def _with_gaps(params: list[Any]) -> list[Any]:
    marked = []
    for param in params:
        case = param.values[0]
        reasons: list[str] = []
        if isinstance(case, UnifiedCase):
            document, test = case.load()
            reasons = [why for rule, why in GAPS if rule(document, test)]
        if reasons:
            mark = pytest.mark.xfail(reason="; ".join(reasons), strict=True)
            marked.append(pytest.param(case, id=param.id, marks=mark))
        else:
            marked.append(param)
    return marked


CASES = _with_gaps(cases(SUITE))


@pytest.mark.parametrize("case", CASES)
def test_unified(case: Any, deployments: Deployments) -> None:
    run_case(case, deployments)
