"""Idle CPU and memory of connected clients, mongocore against pymongo.

A simulated three-member replica set runs in its own process (``python -m mongocore
sim --replset 3``), so that its work is not counted. For each driver in turn, 20
clients connect (each has discovered the set and run one ping), then:

- idle CPU: the process's CPU time (every thread: the clients' monitors, their
  round-trip-time pings, pymongo's periodic tasks) over ``--seconds`` of doing
  nothing, per second;
- memory: what ``tracemalloc`` counts as allocated by the 20 clients (taken after
  they connected, minus before), per client, in a separate round (tracing slows
  every allocation, so it is not on while CPU is measured).

Rounds alternate between the drivers; the best (lowest) round of each is reported,
with the ratio mongocore / pymongo (below 1: mongocore uses less). Default
heartbeatFrequencyMS (10 s) for both.

Run: python benchmarks/bench_idle.py [--rounds 2] [--seconds 20] [--markdown]
"""

from __future__ import annotations

import argparse
import gc
import platform
import time
import tracemalloc
from typing import Any, Callable

import pymongo

import mongocore
from ratio_table import print_ratio_table
from simulated import simulated

CLIENTS = 20


def connected(factory: Callable[[str], Any], uri: str) -> list[Any]:
    """CLIENTS clients of ``uri``, each having discovered the set and run a ping."""
    clients = [factory(uri) for _ in range(CLIENTS)]
    for client in clients:
        client.admin.command("ping")
        deadline = time.monotonic() + 30
        while len(client.nodes) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    return clients


def idle_cpu(factory: Callable[[str], Any], uri: str, seconds: float) -> float:
    """CPU seconds per second of the process while CLIENTS clients sit idle."""
    clients = connected(factory, uri)
    try:
        time.sleep(1.0)  # the connections' first heartbeats and pings settle
        begin = time.process_time()
        time.sleep(seconds)
        return (time.process_time() - begin) / seconds
    finally:
        for client in clients:
            client.close()


def memory_per_client(factory: Callable[[str], Any], uri: str) -> float:
    """Bytes tracemalloc counts for one connected client (CLIENTS of them, averaged)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        clients = connected(factory, uri)
        time.sleep(1.0)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    for client in clients:
        client.close()
    return (after - before) / CLIENTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    factories: dict[str, Callable[[str], Any]] = {
        "mongocore": mongocore.MongoClient,
        "pymongo": pymongo.MongoClient,
    }
    # Both drivers load their modules before anything is measured.
    with simulated("--replset", "3") as uri:
        for factory in factories.values():
            memory_per_client(factory, uri)
        cpu = {name: float("inf") for name in factories}
        memory = {name: float("inf") for name in factories}
        for _ in range(args.rounds):
            for name, factory in factories.items():
                cpu[name] = min(cpu[name], idle_cpu(factory, uri, args.seconds))
                memory[name] = min(memory[name], memory_per_client(factory, uri))
    print(
        f"python {platform.python_version()}, pymongo {pymongo.version}, mongocore"
        f" {mongocore.__version__}, {CLIENTS} clients of a 3-member set, best of"
        f" {args.rounds} rounds, {args.seconds:.0f} s idle"
    )
    rows = [
        ("idle CPU, ms per second", cpu["mongocore"] * 1e3, cpu["pymongo"] * 1e3),
        ("memory per client, KiB", memory["mongocore"] / 1024, memory["pymongo"] / 1024),
    ]
    print_ratio_table(rows, heading="measure", markdown=args.markdown)


if __name__ == "__main__":
    main()
