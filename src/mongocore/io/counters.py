"""Counters that threads share: the ids of requests and of operations.

Every message and every operation takes the next id of one process-wide counter, so
taking it is on the path of every command. A C iterator (``itertools.count``, a
chain of ranges) advances without running Python code, which under the
interpreter's lock makes ``iterator.__next__`` atomic: no lock of our own, no Python
call. A free-threaded build has no such lock, and there the ids are taken under one.

The counters live in the shell, not in the wire codec: they are state every thread of
the process shares, and the codec (pure) only encodes the id it is given.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator

from mongocore.core.wire.header import MAX_INT32

__all__ = ["atomic_next", "next_request_id", "request_id_generator"]


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


def request_id_generator(start: int = 0) -> Callable[[], int]:
    """A thread-safe source of request ids: ``start + 1`` up to 2**31 - 1, then from 1
    again.

    Zero and negative ids are never produced: ``responseTo`` 0 means "not a reply",
    and a positive id cannot be mistaken for it. The source is a chain of C iterators
    (ranges, repeated), taken without a Python call (:func:`atomic_next`).
    """
    if not 0 <= start <= MAX_INT32:
        raise ValueError(f"start must be in [0, {MAX_INT32}], got {start}")
    every_id = range(1, MAX_INT32 + 1)
    return atomic_next(
        itertools.chain(every_id[start:], itertools.chain.from_iterable(itertools.repeat(every_id)))
    )


next_request_id = request_id_generator()
"""The process-wide request id source used by connections and the simulated server."""
