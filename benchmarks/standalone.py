"""The simulated standalone the CPU benchmarks talk to, in its own process.

``python -m mongocore sim --standalone`` runs in a separate interpreter so that its
work is never counted in the client process measured; :func:`standalone` starts it,
yields its URI, and stops it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def standalone() -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "mongocore", "sim", "--standalone"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=30)
