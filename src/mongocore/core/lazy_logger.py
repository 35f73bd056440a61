"""Module loggers that import :mod:`logging` only when a message could be emitted.

Import time (docs/benchmarks.md, "Import time"): ``logging`` (with ``traceback``,
``string`` and ``weakref``) is a tenth of what importing the client costs, and a
program that never configures logging never needs it. Until something imports
``logging``, no handler or level can have been set, so a DEBUG or INFO message has
nowhere to go and is dropped without loading it. WARNING and above still load it and
go through the real logger, since Python prints those even unconfigured ("last
resort" handler). Once ``logging`` is loaded every call goes to the real logger, so
handlers, levels and pytest's ``caplog`` see exactly what an eager logger would emit.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

_DEBUG = 10  # logging.DEBUG, without importing logging
_INFO = 20  # logging.INFO


class LazyLogger:
    """Stands for ``logging.getLogger(name)``; the methods a module logger uses."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    @property
    def logger(self) -> logging.Logger:
        """The real logger (loads :mod:`logging` on first use)."""
        if self._logger is None:
            import logging  # noqa: PLC0415 - loaded with the first message that can be emitted

            self._logger = logging.getLogger(self.name)
        return self._logger

    def _silent(self, level: int) -> bool:
        # logging not loaded: nothing configured it, so nothing below WARNING is shown.
        return self._logger is None and "logging" not in sys.modules and level < 30

    def isEnabledFor(self, level: int) -> bool:
        return not self._silent(level) and self.logger.isEnabledFor(level)

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        if not self._silent(_DEBUG):
            kwargs.setdefault("stacklevel", 2)  # the record names our caller
            self.logger.debug(msg, *args, **kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        if not self._silent(_INFO):
            kwargs.setdefault("stacklevel", 2)
            self.logger.info(msg, *args, **kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        kwargs.setdefault("stacklevel", 2)
        self.logger.warning(msg, *args, **kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        kwargs.setdefault("stacklevel", 2)
        self.logger.error(msg, *args, **kwargs)

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        kwargs.setdefault("stacklevel", 2)
        kwargs.setdefault("exc_info", True)
        self.logger.error(msg, *args, **kwargs)


def get_logger(name: str) -> LazyLogger:
    """The lazy stand-in for ``logging.getLogger(name)``."""
    return LazyLogger(name)
