"""timeoutMS for GridFS (the CSOT spec, "GridFS API"): one deadline for a whole GridFS
operation, or for the whole lifetime of a stream it opens.

An operation's timeout is its ``timeout_ms`` argument, else the client's timeoutMS.
Every command the operation sends gets the time left (its ``timeout_ms``), so the
commands together cannot outlast it; a command due after the deadline is not sent:
:class:`~mongocore.errors.NetworkTimeout` is raised, as for any command whose
timeoutMS expired. ``0`` means no limit, as for timeoutMS itself.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from mongocore.errors import NetworkTimeout


class Deadline:
    """The end of one GridFS operation's (or stream's) time, if it has one."""

    __slots__ = ("_expires", "_timeout_ms")

    def __init__(self, timeout_ms: Optional[float]) -> None:
        if timeout_ms is not None and (
            isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float))
        ):
            raise TypeError(f"timeout_ms must be a number of milliseconds, not {timeout_ms!r}")
        if timeout_ms is not None and timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, not {timeout_ms!r}")
        self._timeout_ms = timeout_ms
        self._expires = (
            time.monotonic() + timeout_ms / 1000.0 if timeout_ms else None  # 0: no limit
        )

    @classmethod
    def for_operation(cls, client: Any, timeout_ms: Optional[float]) -> Deadline:
        """The deadline of an operation started now: ``timeout_ms`` if given, else the
        client's timeoutMS (None when neither is set)."""
        if timeout_ms is None:
            timeout_ms = client.settings.timeout_ms
        return cls(timeout_ms)

    @property
    def timeout_ms(self) -> Optional[float]:
        return self._timeout_ms

    def remaining_ms(self, step: str) -> Optional[float]:
        """The ``timeout_ms`` for the next command (``step`` says which, for the error):
        the time left; ``0`` (no limit) or None (the client's default) when the
        operation has no deadline. Raises NetworkTimeout once it has passed."""
        if self._expires is None:
            return self._timeout_ms
        left = (self._expires - time.monotonic()) * 1000.0
        if left <= 0:
            raise NetworkTimeout(
                f"timeoutMS of {self._timeout_ms:g} ms expired before {step} could be sent"
            )
        return left
