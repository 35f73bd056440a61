"""Counters that threads share: the ids of requests and of operations.

Every message and every operation takes the next id of one process-wide counter, so
taking it is on the path of every command. A C iterator (``itertools.count``, a
chain of ranges) advances without running Python code, which under the
interpreter's lock makes ``iterator.__next__`` atomic: no lock of our own, no Python
call. A free-threaded build has no such lock, and there the ids are taken under one.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

__all__ = ["atomic_next"]


def atomic_next(ids: Iterator[int]) -> Callable[[], int]:
    """A function returning the next of ``ids``, callable from any thread.

    ``ids`` must be an iterator implemented in C whose items need no Python code to
    produce (``itertools.count``, ``itertools.chain`` of ranges).
    """
    gil_enabled = getattr(sys, "_is_gil_enabled", None)  # Python 3.13 and later
    if gil_enabled is None or gil_enabled():
        return ids.__next__
    lock = threading.Lock()

    def next_id() -> int:
        with lock:
            return next(ids)

    return next_id
