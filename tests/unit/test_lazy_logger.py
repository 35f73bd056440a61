"""mongocore.core.lazy_logger: module loggers that load logging only when needed."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from mongocore.core.lazy_logger import get_logger


def test_messages_reach_the_real_logger_with_the_callers_location(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = get_logger("mongocore.test_lazy")
    with caplog.at_level(logging.DEBUG, logger="mongocore.test_lazy"):
        log.debug("d %s", 1)
        log.info("i")
        log.warning("w")
        log.error("e")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("x")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "d 1"),
        (logging.INFO, "i"),
        (logging.WARNING, "w"),
        (logging.ERROR, "e"),
        (logging.ERROR, "x"),
    ]
    assert {r.funcName for r in caplog.records} == {
        "test_messages_reach_the_real_logger_with_the_callers_location"
    }
    assert caplog.records[-1].exc_info is not None
    assert log.logger is logging.getLogger("mongocore.test_lazy")


def test_without_logging_loaded_only_warnings_load_it() -> None:
    code = (
        "import sys\n"
        "from mongocore.core.lazy_logger import get_logger\n"
        "log = get_logger('mongocore.test_lazy')\n"
        "log.debug('dropped'); log.info('dropped')\n"
        "print('logging' in sys.modules)\n"
        "log.warning('shown')\n"
        "print('logging' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["False", "True"]
    assert "shown" in result.stderr  # Python's last-resort handler prints warnings
    assert "dropped" not in result.stderr
