from typing import Any

import pytest

from tests.spec import deviations, specdata


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spec/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spec)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In a full strict run, every deviations.toml entry must have been used by some test."""
    config = session.config
    selective = bool(config.getoption("keyword") or config.getoption("markexpr"))
    if not specdata.required() or selective or session.testsfailed or not session.items:
        return
    ran_all_spec = any("tests/spec/" in str(i.fspath).replace("\\", "/") for i in session.items)
    full = [str(a) for a in config.args]
    if not ran_all_spec or any(a.endswith(".py") or "::" in a for a in full):
        return
    unused = deviations.unused()
    if unused:
        lines = "\n".join(f"  [[{kind}]] {e['suite']}: {e['selects']}" for kind, e in unused)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        config.get_terminal_writer().line(
            f"specs/deviations.toml has rules that selected no test:\n{lines}", red=True
        )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many tests each rule of specs/deviations.toml selected in this run."""
    if not any(deviations.SELECTED.values()):
        return
    terminalreporter.section("specs/deviations.toml: tests selected per rule")
    for line in deviations.report():
        terminalreporter.line(line)
