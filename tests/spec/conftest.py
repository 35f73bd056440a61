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
    unused = sorted(deviations.all_patterns() - deviations.USED)
    if unused:
        lines = "\n".join(f"  [[{k}]] {s}: {p}" for k, s, p in unused)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        config.get_terminal_writer().line(
            f"specs/deviations.toml has entries no test used:\n{lines}", red=True
        )
