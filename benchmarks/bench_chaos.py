"""Retryable writes under chaos, at full size: 10,000 inserts from 8 threads.

The same run as tests/integration/test_chaos.py (which runs 300 writes from 4
threads in the default suite): a simulated 3-member replica set whose primary steps
down every ~300 ms, the new primary dropping the connection of one insert after
every second step-down. Prints the counts; exits non-zero if an acknowledged write
is missing or any write was applied twice.

Run: python benchmarks/bench_chaos.py [--writes N] [--threads N] [--interval S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The chaos driver lives with its test; make the repository importable when this
# file is run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.test_chaos import run_chaos


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--interval", type=float, default=0.3, help="seconds between step-downs")
    parser.add_argument(
        "--writes-per-step-down",
        type=int,
        default=10**9,
        help="also step down after this many acknowledged writes (default: time only)",
    )
    args = parser.parse_args(argv)
    report = run_chaos(
        writes=args.writes,
        threads=args.threads,
        interval=args.interval,
        writes_per_step_down=args.writes_per_step_down,
    )
    print(f"chaos: {args.writes} retryable inserts from {args.threads} threads")
    for line in report.lines():
        print(f"  {line}")
    if report.seconds:
        print(f"  acknowledged writes per second: {report.acknowledged / report.seconds:.0f}")
    ok = not report.lost and not report.duplicates
    print("result: OK" if ok else "result: FAILED (lost or duplicated writes)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
