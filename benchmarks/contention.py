"""CPU contention for the monitor benchmarks: busy threads in the process, busy
processes on the machine.

:func:`contended` starts ``threads`` Python threads that run bytecode without pause
(each holds the GIL until the interpreter's switch interval takes it away, the way
a CPU-bound part of an application does) and ``processes`` interpreters that do the
same on the machine's cores, and stops them all on the way out.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: What a load process runs: a loop of bytecode until it is terminated.
_SPIN = "while True:\n    pass\n"


def _spin(stop: threading.Event) -> None:
    count = 0
    while not stop.is_set():
        for _ in range(10_000):
            count += 1


@contextmanager
def contended(threads: int = 3, processes: int = 0) -> Iterator[None]:
    """Busy threads in this process and busy processes on the machine, for the
    duration of the block."""
    stop = threading.Event()
    spinners = [
        threading.Thread(target=_spin, args=(stop,), name=f"busy-{i}", daemon=True)
        for i in range(threads)
    ]
    loads: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(processes):
            loads.append(subprocess.Popen([sys.executable, "-c", _SPIN]))
        for spinner in spinners:
            spinner.start()
        yield
    finally:
        stop.set()
        for spinner in spinners:
            if spinner.ident is not None:
                spinner.join()
        for load in loads:
            load.terminate()
        for load in loads:
            load.wait(timeout=30)
