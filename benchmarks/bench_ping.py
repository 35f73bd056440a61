"""`ping` commands per second, mongocore against pymongo, against one loopback server.

The server is the simulated standalone (`mongocore.sim`), run in a separate process
so that its work does not share a GIL with the clients being measured. Both
clients talk to the same server in the same run, with 1 and with 8 threads, in
alternating rounds; the best round of each is reported. The ratio is mongocore's
throughput divided by pymongo's: 1 or more means mongocore is at least as fast.

Run: python benchmarks/bench_ping.py [--seconds 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from typing import Callable

import pymongo

from mongocore.api.client import Client

SERVER = """
import signal, sys, threading
from mongocore.sim import Standalone
deployment = Standalone().start()
print(deployment.uri, flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
try:
    sys.stdin.read()
finally:
    deployment.stop()
"""


def throughput(ping: Callable[[], object], threads: int, seconds: float) -> float:
    """Pings per second from ``threads`` threads for about ``seconds``."""
    counts = [0] * threads
    start_line = threading.Barrier(threads + 1)
    deadline = [0.0]

    def worker(i: int) -> None:
        start_line.wait()
        n = 0
        while time.perf_counter() < deadline[0]:
            ping()
            n += 1
        counts[i] = n

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    begin = time.perf_counter()
    deadline[0] = begin + seconds
    start_line.wait()
    for w in workers:
        w.join()
    return sum(counts) / (time.perf_counter() - begin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        uri = server.stdout.readline().strip()
        ours = Client(uri)
        theirs: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(uri)
        ours.command("admin", {"ping": 1})
        theirs.admin.command("ping")
        print(f"python {sys.version.split()[0]}, pymongo {pymongo.version}, server {uri}")
        for threads in (1, 8):
            best_ours = best_theirs = 0.0
            for _ in range(args.rounds):
                best_ours = max(
                    best_ours,
                    throughput(lambda: ours.command("admin", {"ping": 1}), threads, args.seconds),
                )
                best_theirs = max(
                    best_theirs,
                    throughput(lambda: theirs.admin.command("ping"), threads, args.seconds),
                )
            print(
                f"{threads} thread(s): mongocore {best_ours:8.0f} pings/s   "
                f"pymongo {best_theirs:8.0f} pings/s   ratio {best_ours / best_theirs:.2f}"
            )
        ours.close()
        theirs.close()
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
