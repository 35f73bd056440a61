"""A simulated deployment for the benchmarks, in its own process.

``python -m mongocore sim`` runs in a separate interpreter so that its work is never
counted in the client process measured; :func:`simulated` starts it with the given
topology options (``"--standalone"``, ``"--replset", "3"``), yields its URI (the
first line it prints), and stops it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def simulated(*topology: str) -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "mongocore", "sim", *topology],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=60)
