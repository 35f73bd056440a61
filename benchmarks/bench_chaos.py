"""Retryable writes under chaos, side by side with pymongo: seeded writes from threads.

The run of tests/integration/test_chaos.py at full size (tests/integration/chaos.py
has the workload and the judge, chaos_faults.py the faults): ``$inc`` + ``$push``
of a unique token on shared counters, inserts and three-document insert_many
batches of unique tokens, against a simulated 3-member replica set while seeded
faults follow each other. ``--faults all`` (the default) arms every kind: step-downs,
connections closed before a write runs, writes applied and their reply lost (a
closed connection, a killed primary), primaries killed and restarted, partitions
refusing connections or dropping requests, reconfigs replacing a secondary;
``--faults basic`` the four of the default suite. With ``--pymongo``, pymongo runs
the same seeded workload and faults on a fresh replica set after mongocore, with the
same options.

Prints, per driver, what the callers were told and what the deployment holds: lost
acknowledged writes, writes applied twice, hung writes (still running
``--hang-after`` seconds after every other writer ended), errors raised to callers,
the p50 and p99 latency of the calls, then a side-by-side table (Markdown, for
docs/benchmarks.md). Exits non-zero if a write was lost or applied twice.

Run: python benchmarks/bench_chaos.py [--writes N] [--threads N] [--seed N]
         [--writes-per-fault N] [--interval S] [--faults all|basic]
         [--connect-timeout-ms N] [--hang-after S] [--pymongo]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

import pymongo
from pymongo.errors import PyMongoError

# The chaos driver lives with its test; make the repository importable when this
# file is run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.chaos import (
    ALL_FAULT_KINDS,
    CHAOS_OPTIONS,
    FAULT_KINDS,
    ChaosReport,
    Driver,
    mongocore_driver,
    run_chaos,
)
from tests.integration.sim_client import Recorder


def _pymongo_driver(**options: Any) -> Driver:
    def connect(uri: str, recorder: Recorder) -> Any:
        # The same settings as mongocore's; pymongo takes no mongocore listener.
        return pymongo.MongoClient(uri, **{**CHAOS_OPTIONS, **options})

    return Driver("pymongo", connect, PyMongoError, listens=False)


def _table(reports: list[ChaosReport]) -> list[str]:
    """The side-by-side table of docs/benchmarks.md."""
    rows: list[tuple[str, Callable[[ChaosReport], str]]] = [
        ("faults fired", lambda r: str(sum(r.faults_fired.values()))),
        ("acknowledged", lambda r: f"{r.count('acknowledged'):,}"),
        ("errors raised to callers", lambda r: str(r.count("unknown"))),
        ("of their statements applied anyway", lambda r: str(r.verdict.unknown_applied)),
        (
            'errors saying "not applied" (wrongly)',
            lambda r: f"{r.claimed_not_applied} ({len(r.verdict.false_not_applied)})",
        ),
        ("lost (acknowledged, not there)", lambda r: f"**{len(r.verdict.lost)}**"),
        ("applied twice", lambda r: f"**{len(r.verdict.applied_twice)}**"),
        ("hung", lambda r: str(r.count("hung"))),
        ("latency p50", lambda r: f"{r.latency_ms(50):.1f} ms"),
        ("latency p99", lambda r: f"{r.latency_ms(99):.1f} ms"),
        ("seconds", lambda r: f"{r.seconds:.0f}"),
    ]
    lines = [
        "| " + " | ".join(["", *(r.driver for r in reports)]) + " |",
        "| --- |" + " ---: |" * len(reports),
    ]
    lines += ["| " + " | ".join([name, *(cell(r) for r in reports)]) + " |" for name, cell in rows]
    return lines


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
    parser.add_argument("--faults", choices=("all", "basic"), default="all")
    parser.add_argument(
        "--connect-timeout-ms",
        type=int,
        default=2000,
        help="connectTimeoutMS of both drivers (also their monitors' socket timeout:"
        " how soon a dropped primary is noticed)",
    )
    parser.add_argument(
        "--hang-after",
        type=float,
        default=120.0,
        help="a write still running this long after every other writer ended is hung",
    )
    parser.add_argument("--pymongo", action="store_true", help="also run pymongo")
    args = parser.parse_args(argv)
    options = {"connectTimeoutMS": args.connect_timeout_ms}
    drivers = [mongocore_driver(**options)]
    if args.pymongo:
        drivers.append(_pymongo_driver(**options))
    kinds = ALL_FAULT_KINDS if args.faults == "all" else FAULT_KINDS
    ok = True
    reports = []
    for driver in drivers:
        report = run_chaos(
            writes=args.writes,
            threads=args.threads,
            seed=args.seed,
            writes_per_fault=args.writes_per_fault,
            interval=args.interval,
            driver=driver,
            fault_kinds=kinds,
            hang_after=args.hang_after,
        )
        reports.append(report)
        print(f"chaos: {driver.name}, {args.writes} retryable writes from {args.threads} threads")
        for line in report.lines():
            print(f"  {line}")
        if report.seconds:
            rate = report.count("acknowledged") / report.seconds
            print(f"  acknowledged writes per second: {rate:.0f}")
        ok = ok and report.ok
    print()
    print("\n".join(_table(reports)))
    print("result: OK" if ok else "result: FAILED (lost or duplicated writes)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
