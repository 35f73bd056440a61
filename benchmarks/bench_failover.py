"""Failover: from a step-down to the first acknowledged write, mongocore against pymongo.

One simulated three-member replica set (``python -m mongocore sim``, in its own
process, election delay 200 ms: the floor). For each round, one client writes in a
loop (retryable writes on, as pymongo defaults); the primary is stepped down over
the wire with ``replSetStepDown`` (through a connection opened beforehand); the
time from that command to the first acknowledged write begun after it is the
failover time. Rounds alternate between the two
clients. Reported: the median per client, their ratio (mongocore / pymongo: at
most 1 means mongocore is no slower) and each one's distance from the floor.

Each step-down comes after the writer has run for 0.3 s plus a random part of a
heartbeat (seeded, the same sequence for both clients): with polling monitors, when
a client finds the new primary depends on where the step-down falls between its
monitors' checks, and a fixed delay would give each client the same luck every round.

Run: python benchmarks/bench_failover.py [--rounds 6] [--mode stream|poll]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import threading
import time
from typing import Any, Callable

import pymongo
import pymongo.errors

from mongocore.api.client import Client
from simulated import simulated

ELECTION_DELAY = 0.2
HEARTBEAT = 0.5  # heartbeatFrequencyMS of both clients, in seconds


def measure(
    write: Callable[[], object],
    prepare: Callable[[], object],
    step_down: Callable[[], bool],
    settle: float,
) -> float:
    """Seconds from the step-down command to the first write acknowledged after it;
    NaN if the server refused to step down (then the round does not count)."""
    stepped = threading.Event()
    result: dict[str, float] = {}
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            # Only a write begun after the step-down counts: one already in flight
            # may be acknowledged by the old primary just before it stepped down.
            after = stepped.is_set()
            try:
                write()
            except Exception:
                continue
            if after and "at" not in result:
                result["at"] = time.perf_counter()
                return

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(settle)  # the writer reaches its steady state before the step-down
    prepare()
    started = time.perf_counter()
    accepted = step_down()
    stepped.set()
    thread.join(timeout=30)
    stop.set()
    thread.join()
    if not accepted:
        return float("nan")
    return result.get("at", float("inf")) - started


def new_document_writer(collection: Any) -> Callable[[], object]:
    """Inserts a new document per call. (Both drivers give a document without ``_id``
    the one they generate: a document inserted again would be a duplicate key.)"""

    def write() -> object:
        return collection.insert_one({"x": 1})

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--mode", choices=["stream", "poll"], default="stream")
    args = parser.parse_args()
    with simulated("--replset", "3") as uri:
        options: dict[str, Any] = {"heartbeatFrequencyMS": int(HEARTBEAT * 1000)}
        ours = Client(uri, retryWrites=True, serverMonitoringMode=args.mode, **options)
        theirs: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
            uri, retryWrites=True, serverMonitoringMode=args.mode, **options
        )
        admin: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(uri)
        ours_coll, theirs_coll = ours["bench"]["failover"], theirs["bench"]["failover"]
        ours_coll.insert_one({"warm": 1})
        theirs_coll.insert_one({"warm": 1})

        def step_down() -> bool:
            # The step-down command itself is not part of the failover: the admin
            # client already holds a connection to the primary (see warm_admin), so
            # the clock does not include a connection handshake with a busy server.
            try:
                admin.admin.command("replSetStepDown", 1, secondaryCatchUpPeriodSecs=0)
            except pymongo.errors.AutoReconnect:
                return True  # the old primary dropped our connection as it stepped down
            except pymongo.errors.OperationFailure:
                return False  # refused (no electable secondary yet): not a failover
            return True

        def warm_admin() -> None:
            # A pooled connection to the current primary (it changes every round).
            admin.admin.command("ping")

        ours_times: list[float] = []
        theirs_times: list[float] = []
        # Each client draws its delays from its own generator of the same seed: the
        # same sequence for both (see the docstring).
        clients = [
            (ours_times, ours_coll, random.Random(1)),
            (theirs_times, theirs_coll, random.Random(1)),
        ]
        while min(len(ours_times), len(theirs_times)) < args.rounds:
            for times, coll, delays in clients:
                if len(times) < args.rounds:
                    settle = 0.3 + delays.uniform(0.0, HEARTBEAT)
                    elapsed = measure(new_document_writer(coll), warm_admin, step_down, settle)
                    if not math.isnan(elapsed):  # the step-down happened
                        times.append(elapsed)
                time.sleep(1.5)  # the stepped-down member may stand again after 1 s
        ours.close()
        theirs.close()
        admin.close()
    ours_median = statistics.median(ours_times)
    theirs_median = statistics.median(theirs_times)
    print(f"python {sys.version.split()[0]}, pymongo {pymongo.version}, monitoring: {args.mode}")
    print(f"election delay (the floor): {ELECTION_DELAY * 1000:.0f} ms, {args.rounds} rounds each")
    print(
        f"mongocore median {ours_median * 1000:.0f} ms (floor + "
        f"{(ours_median - ELECTION_DELAY) * 1000:.0f} ms), all: "
        + ", ".join(f"{t * 1000:.0f}" for t in ours_times)
    )
    print(
        f"pymongo   median {theirs_median * 1000:.0f} ms (floor + "
        f"{(theirs_median - ELECTION_DELAY) * 1000:.0f} ms), all: "
        + ", ".join(f"{t * 1000:.0f}" for t in theirs_times)
    )
    print(f"ratio mongocore / pymongo: {ours_median / theirs_median:.2f}")


if __name__ == "__main__":
    main()
