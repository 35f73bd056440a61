"""Function calls per operation, mongocore against pymongo: a count, not a time.

CPU time per operation moves by 10% and more between runs on a shared machine;
the number of function calls the interpreter makes for one operation does not. This
script counts them with :mod:`cProfile` for the operations of ``bench_cpu.py``, both
clients against the same simulated standalone (in its own process), in the thread
that runs the operation: "calls" are all calls, C functions included; "Python" are
calls of functions written in Python (each one a frame: the costlier kind).

Run: python benchmarks/bench_calls.py [--markdown]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from typing import Any, Callable

import pymongo

import mongocore
from simulated import simulated

CALLS = 200


def counts(op: Callable[[], object]) -> tuple[float, float]:
    """(all calls, Python-function calls) per call of ``op``, after a warm-up."""
    for _ in range(50):
        op()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(CALLS):
        op()
    profiler.disable()
    stats: Any = pstats.Stats(profiler)
    python = sum(value[1] for key, value in stats.stats.items() if key[0] != "~")
    return stats.total_calls / CALLS, python / CALLS


def operations(client: Any, name: str) -> dict[str, Callable[[], object]]:
    admin = client.admin
    docs = client.bench.docs
    inserts = client.bench[f"calls_{name}"]
    many = client.bench.many
    return {
        "ping": lambda: admin.command("ping"),
        "find_one by _id": lambda: docs.find_one({"_id": 5}),
        "insert_one": lambda: inserts.insert_one({"x": 1, "name": "bench"}),
        "iterate 1,000 documents": lambda: list(many.find({})),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with simulated("--standalone") as uri:
        theirs: Any = pymongo.MongoClient(uri)
        ours: Any = mongocore.MongoClient(uri)
        theirs.bench.docs.drop()
        theirs.bench.docs.insert_many([{"_id": i, "name": f"user{i}"} for i in range(10)])
        theirs.bench.many.drop()
        theirs.bench.many.insert_many([{"_id": i} for i in range(1000)])
        mine, other = operations(ours, "mongocore"), operations(theirs, "pymongo")
        rows = [(label, counts(mine[label]), counts(other[label])) for label in mine]
        ours.close()
        theirs.close()
    print(f"pymongo {pymongo.version} (C extensions: {pymongo.has_c()}), calls per operation")
    if args.markdown:
        print("| operation | mongocore calls | pymongo calls | mongocore Python | pymongo Python |")
        print("| --- | ---: | ---: | ---: | ---: |")
    for label, (m_all, m_py), (p_all, p_py) in rows:
        if args.markdown:
            print(f"| {label} | {m_all:.0f} | {p_all:.0f} | {m_py:.0f} | {p_py:.0f} |")
        else:
            print(
                f"{label:24s} mongocore {m_all:5.0f} calls ({m_py:4.0f} Python)   "
                f"pymongo {p_all:5.0f} calls ({p_py:4.0f} Python)"
            )


if __name__ == "__main__":
    main()
