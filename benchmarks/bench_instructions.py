"""Instructions per operation, mongocore against pymongo: counted, not timed.

CPU time per operation moves by 10% and more between runs on a shared machine; the
number of machine instructions a client executes for one operation does not. This
script runs each client in a child interpreter under valgrind (``cachegrind``, no
cache simulation), twice per operation with the same warm-up and two counts of it
(``OPERATIONS``), and divides the difference of the two totals by that of the counts: what
remains is the user-space instructions of one operation, with start-up, imports and
shutdown cancelled out. The kernel's part (the send, the receive, the wake-up: the
floor of ``bench_cpu.py``) is not counted, so the ratio is that of the two clients'
own work. The server is the simulated standalone in its own process; the clients'
heartbeat is set to ten minutes so that no monitor check falls inside one run and
not the other.

Needs valgrind (``apt-get install valgrind``); it takes a few minutes.

Run: python benchmarks/bench_instructions.py [--markdown]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pymongo

import mongocore
from bench_cpu import DOCUMENTS, Driver, document
from ratio_table import print_ratio_table
from simulated import simulated

# label, method, warm-up, and the two counts whose difference is measured (a find of
# 1,000 documents costs a hundred times a ping: fewer of them give the same precision).
OPERATIONS = [
    ("ping", "ping", 30, 100, 600),
    ("find_one by _id", "find_one", 30, 100, 600),
    ("insert_one", "insert_one", 30, 100, 600),
    (f"iterate a find of {DOCUMENTS:,} documents", "iterate_find", 3, 10, 40),
]
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def child(driver: str, method: str, warm_up: int, count: int, uri: str) -> None:
    """Run in the child interpreter: ``warm_up`` operations, then ``count`` more."""
    module: Any = mongocore if driver == "mongocore" else pymongo
    client = module.MongoClient(uri, heartbeatFrequencyMS=600_000)
    bench = Driver(driver, client)
    bench.reset_inserts()
    op = getattr(bench, method)
    for _ in range(warm_up + count):
        op()
    client.close()


def instructions(driver: str, method: str, warm_up: int, count: int, uri: str) -> int:
    """The total instructions of one child run, as valgrind reports them."""
    run = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            driver,
            method,
            str(warm_up),
            str(count),
            uri,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    match = _REFS.search(run.stderr)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{run.stderr[-2000:]}")
    return int(match.group(1).replace(",", ""))


def per_operation(driver: str, method: str, counts: tuple[int, int, int], uri: str) -> float:
    """One operation's instructions: two runs differing only in their count of it
    (``counts``: the warm-up, then the two counts)."""
    warm_up, low, high = counts
    fewer = instructions(driver, method, warm_up, low, uri)
    more = instructions(driver, method, warm_up, high, uri)
    return (more - fewer) / (high - low)


def main() -> None:
    if len(sys.argv) == 7 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("bench_instructions.py needs valgrind on the PATH (apt-get install valgrind)")
    with simulated("--standalone") as uri:
        seed: Any = pymongo.MongoClient(uri)
        seed.bench.docs.drop()
        seed.bench.docs.insert_many([document(i) for i in range(DOCUMENTS)])
        seed.close()
        jobs = [
            (label, driver, method, (warm_up, low, high))
            for label, method, warm_up, low, high in OPERATIONS
            for driver in ("mongocore", "pymongo")
        ]
        # Two children at a time (valgrind is slow); counts do not depend on the overlap.
        with ThreadPoolExecutor(max_workers=2) as pool:
            counts = list(pool.map(lambda job: per_operation(job[1], job[2], job[3], uri), jobs))
    measured = dict(zip([(job[0], job[1]) for job in jobs], counts))
    rows = [
        (label, measured[(label, "mongocore")] / 1000, measured[(label, "pymongo")] / 1000)
        for label, *_ in OPERATIONS
    ]
    print(
        f"pymongo {pymongo.version} (C extensions: {pymongo.has_c()}), user-space"
        " instructions per operation (under valgrind: the difference of two runs, "
        + ", ".join(f"{low} and {high} of {method}" for _, method, _, low, high in OPERATIONS)
        + ", divided by that difference)"
    )
    print_ratio_table(rows, heading="operation", unit="k instructions", markdown=args.markdown)


if __name__ == "__main__":
    main()
