"""Retryable writes under chaos, at full size: 10,000 seeded writes from 8 threads.

The same run as tests/integration/test_chaos.py (400 writes from 4 threads in the
default suite; tests/integration/chaos.py has the workload, the faults and the
judge): ``$inc`` + ``$push`` of a unique token on shared counters, inserts and
three-document insert_many batches of unique tokens, against a simulated 3-member
replica set while seeded faults follow each other (step-downs, connections closed
before a write runs, writes applied and their reply lost by a closed connection or
a killed primary). Prints, per driver, what the callers were told and what the
deployment holds: lost acknowledged writes, writes applied twice, errors raised to
callers (unknown outcome). With ``--pymongo``, pymongo runs the same seeded
workload and faults on a fresh replica set after mongocore. Exits non-zero if a
write was lost or applied twice.

Run: python benchmarks/bench_chaos.py [--writes N] [--threads N] [--seed N]
         [--writes-per-fault N] [--interval S] [--pymongo]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pymongo
from pymongo.errors import PyMongoError

# The chaos driver lives with its test; make the repository importable when this
# file is run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.chaos import CHAOS_OPTIONS, MONGOCORE, Driver, run_chaos
from tests.integration.sim_client import Recorder


def _pymongo_driver() -> Driver:
    def connect(uri: str, recorder: Recorder) -> Any:
        # The same settings as mongocore's; pymongo takes no mongocore listener.
        return pymongo.MongoClient(uri, **CHAOS_OPTIONS)

    return Driver("pymongo", connect, PyMongoError, listens=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--writes-per-fault",
        type=int,
        default=40,
        help="arm the next fault after this many acknowledged writes",
    )
    parser.add_argument(
        "--interval", type=float, default=None, help="or after this many seconds, if sooner"
    )
    parser.add_argument("--pymongo", action="store_true", help="also run pymongo")
    args = parser.parse_args(argv)
    drivers = [MONGOCORE, _pymongo_driver()] if args.pymongo else [MONGOCORE]
    ok = True
    for driver in drivers:
        report = run_chaos(
            writes=args.writes,
            threads=args.threads,
            seed=args.seed,
            writes_per_fault=args.writes_per_fault,
            interval=args.interval,
            driver=driver,
        )
        print(f"chaos: {driver.name}, {args.writes} retryable writes from {args.threads} threads")
        for line in report.lines():
            print(f"  {line}")
        if report.seconds:
            rate = report.count("acknowledged") / report.seconds
            print(f"  acknowledged writes per second: {rate:.0f}")
        ok = ok and report.ok
    print("result: OK" if ok else "result: FAILED (lost or duplicated writes)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
