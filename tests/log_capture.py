"""Capturing the structured log records of a logger in a test.

:func:`capture` attaches a :class:`LogRecords` handler to a logger, sets the logger's
level (and, for a private logger, stops propagation so the test does not depend on
the global logging configuration), and puts everything back when the block ends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional, Union

from mongocore.io.structured_log import structured_data


class LogRecords(logging.Handler):
    """Every record that reaches :attr:`logger`, in order."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logging.DEBUG)
        self.logger = logger
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @property
    def data(self) -> list[dict[str, Any]]:
        """The structured forms of the records that carry one."""
        found = [structured_data(r) for r in self.records]
        return [d for d in found if d is not None]


@contextmanager
def capture(
    logger: Union[str, logging.Logger],
    level: int = logging.DEBUG,
    *,
    propagate: Optional[bool] = None,
) -> Iterator[LogRecords]:
    """Collect the records of ``logger`` (a logger or its name) set to ``level``;
    ``propagate``, if given, is the logger's propagation meanwhile. The logger's level
    and propagation are restored, and the handler removed, on the way out."""
    target = logging.getLogger(logger) if isinstance(logger, str) else logger
    handler = LogRecords(target)
    saved_level, saved_propagate = target.level, target.propagate
    target.setLevel(level)
    if propagate is not None:
        target.propagate = propagate
    target.addHandler(handler)
    try:
        yield handler
    finally:
        target.removeHandler(handler)
        target.setLevel(saved_level)
        target.propagate = saved_propagate
