"""The one place the I/O shell reads time.

Every module of ``mongocore.io`` reads the time, sleeps, and measures durations
through this module, never through :mod:`time`; ``tests/unit/test_layers.py`` fails
if any other module of the shell imports :mod:`time`. So the shell's time has one
seam: the components that take a ``clock`` argument (the topology, monitors, pools,
the session pool) default to :data:`monotonic` here, and the rest read this module's
attributes when they run.

The functions are the standard library's own, bound without a wrapper, so reading
the clock costs what it cost before (the operation paths read it several times per
command).

Socket timeouts stay real: ``settimeout()`` and ``select()`` bounds are the operating
system's, measured on its clock. The deadlines the shell computes (connectTimeoutMS,
socketTimeoutMS, timeoutMS) are read through this module, but a wait on a socket is
a wait in real time whatever clock computed its length.
"""

from __future__ import annotations

import time as _time

__all__ = ["monotonic", "perf_counter", "sleep", "wall"]

#: Seconds on a clock that never goes back; deadlines and intervals use it.
monotonic = _time.monotonic
#: The highest-resolution clock, for the durations events report.
perf_counter = _time.perf_counter
#: Seconds since the epoch, for what is stamped with the date.
wall = _time.time
#: Blocks the calling thread for the given seconds.
sleep = _time.sleep
