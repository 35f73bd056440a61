"""Stopping a long-running command cleanly: on SIGINT/SIGTERM, or from another thread."""

from __future__ import annotations

import contextlib
import queue
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Callable, Optional

from mongocore.cli.view import SIGNAL_LATENCY

__all__ = ["Stopper", "stop_on_signals"]

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """While in the block, SIGINT (Ctrl-C) and SIGTERM call ``stop()`` instead of raising.

    The handlers stay installed until the block ends, so a second Ctrl-C while
    closing does not cut the clean shutdown short. Outside the main thread (where
    Python cannot install handlers) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        stop()

    previous = {sig: signal.signal(sig, handler) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class Stopper:
    """Lines to print and the request to stop, handed to the thread running a command.

    ``stop()`` may be called from any thread or from a signal handler
    (``queue.SimpleQueue.put`` is reentrant).
    """

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[Optional[str]] = queue.SimpleQueue()

    def stop(self) -> None:
        self._inbox.put(None)

    def say(self, line: str) -> None:
        self._inbox.put(line)

    def next_line(self) -> Optional[str]:
        """The next line to print; None once stopping was asked for."""
        while True:
            try:
                # A timeout, so that a signal handler gets to run (see SIGNAL_LATENCY).
                return self._inbox.get(timeout=SIGNAL_LATENCY)
            except queue.Empty:
                continue
