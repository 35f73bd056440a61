"""The simulator itself: operations per second, and elections and secondary reads after
a long history of writes.

Throughput: a simulated three-member replica set (``python -m mongocore sim``, in its
own process so it does not share a GIL with the client), driven by pymongo from 8
threads: ``insert_one``, ``find_one`` by ``_id`` and ``update_one`` (``$inc``) by
``_id``, each for ``--seconds``, on collections of ``--docs`` documents (inserts move
to a new collection every ``--docs`` documents).

History: for each count in ``--writes``, a fresh in-process replica set (3 members,
election delay 200 ms, the floor) receives that many inserts through pymongo while
both secondaries are held back (their lag raised), in collections of
``--per-collection`` documents. Then, with every member pinged in a loop, the lag is
lowered to 0: every write is due on both secondaries and neither has applied one yet.
Measured: the election after a step-down (from ``step_down()`` to the new primary),
the slowest ping answered by any member from the lag's end until after the first
read, and the first and second ``find_one`` on the secondary that was not elected
(the first applies the whole backlog).

Run: python benchmarks/bench_sim.py [--seconds 3] [--writes 0,10000,100000]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import threading
import time
from typing import Any, Callable

import pymongo
from pymongo import MongoClient

from mongocore.sim import Member, ReplicaSet
from simulated import simulated

ELECTION_DELAY = 0.2
THREADS = 8
BATCH = 1_000
# Never time out: a slow answer is what the history figures measure.
LONG_TIMEOUTS: dict[str, Any] = {
    "socketTimeoutMS": 600_000,
    "connectTimeoutMS": 600_000,
    "serverSelectionTimeoutMS": 600_000,
}


def throughput(operation: Callable[[int], object], seconds: float) -> float:
    """Operations per second from ``THREADS`` threads for about ``seconds``."""
    counts = [0] * THREADS
    start_line = threading.Barrier(THREADS + 1)
    deadline = [0.0]

    def worker(index: int) -> None:
        start_line.wait()
        n = 0
        while time.perf_counter() < deadline[0]:
            operation(index)
            n += 1
        counts[index] = n

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in workers:
        thread.start()
    begin = time.perf_counter()
    deadline[0] = begin + seconds
    start_line.wait()
    for thread in workers:
        thread.join()
    return sum(counts) / (time.perf_counter() - begin)


def measure_throughput(seconds: float, docs: int) -> dict[str, float]:
    with simulated("--replset", "3") as uri:
        client: MongoClient[dict[str, Any]] = MongoClient(uri, maxPoolSize=THREADS * 2)
        coll = client.bench.docs
        coll.insert_many([{"_id": n, "count": 0} for n in range(docs)])
        inserted = [itertools.count() for _ in range(THREADS)]

        def insert_one(index: int) -> None:
            n = next(inserted[index])
            client.bench[f"insert-{index}-{n // docs}"].insert_one({"_id": n, "count": 0})

        def find_one(index: int) -> None:
            coll.find_one({"_id": random.randrange(docs)})

        def update_one(index: int) -> None:
            coll.update_one({"_id": random.randrange(docs)}, {"$inc": {"count": 1}})

        results = {
            name: throughput(operation, seconds)
            for name, operation in (
                ("insert_one", insert_one),
                ("find_one", find_one),
                ("update_one", update_one),
            )
        }
        client.close()
        return results


class Pinger:
    """Pings every member from its own thread; keeps the slowest answer."""

    def __init__(self, members: list[Member]) -> None:
        self.slowest = 0.0
        self._stop = threading.Event()
        self._clients = [_direct(member) for member in members]
        for client in self._clients:
            client.admin.command("ping")
        self._threads = [threading.Thread(target=self._run, args=(c,)) for c in self._clients]

    def _run(self, client: MongoClient[dict[str, Any]]) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            client.admin.command("ping")
            self.slowest = max(self.slowest, time.perf_counter() - started)
            self._stop.wait(0.005)

    def __enter__(self) -> Pinger:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        for client in self._clients:
            client.close()


def _direct(member: Member, **options: Any) -> MongoClient[dict[str, Any]]:
    host, port = member.address
    return MongoClient(host, port, directConnection=True, **LONG_TIMEOUTS, **options)


def measure_history(writes: int, per_collection: int) -> dict[str, float]:
    with ReplicaSet(3, election_delay=ELECTION_DELAY) as rs:
        client: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **LONG_TIMEOUTS)
        secondaries = rs.secondaries
        for member in secondaries:
            member.lag = 1e9  # hold every write back
        step = min(BATCH, per_collection)
        for start in range(0, writes, step):
            count = min(step, writes - start)
            collection = client.bench[f"c{start // per_collection}"]
            collection.insert_many([{"_id": start + n, "payload": "x" * 64} for n in range(count)])
        kept = getattr(rs.store, "oplog_kept", float("nan"))
        with Pinger(rs.members) as pinger:
            for member in secondaries:
                member.lag = 0.0  # every write is due now; none is applied yet
            started = time.perf_counter()
            rs.step_down(60)
            elected = rs.wait_for_primary(timeout=600)
            election = time.perf_counter() - started
            other = next(m for m in secondaries if m is not elected)
            reader = _direct(other, readPreference="secondaryPreferred")
            reads = []
            for _ in range(2):
                started = time.perf_counter()
                reader.bench.c0.find_one({"_id": 0})
                reads.append(time.perf_counter() - started)
            reader.close()
        client.close()
    return {
        "election": election,
        "slowest_ping": pinger.slowest,
        "first_read": reads[0],
        "second_read": reads[1],
        "kept": kept,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--writes", default="0,10000,100000")
    parser.add_argument("--per-collection", type=int, default=100)
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, pymongo {pymongo.version}")
    if not args.skip_throughput:
        print(f"\n{THREADS} threads, collections of {args.docs} documents, {args.seconds} s each")
        print("| operation | ops/s |\n| --- | ---: |")
        for name, rate in measure_throughput(args.seconds, args.docs).items():
            print(f"| {name} | {rate:,.0f} |")
    print(
        f"\nelection delay {ELECTION_DELAY * 1000:.0f} ms; writes in collections of "
        f"{args.per_collection} documents"
    )
    print(
        "| writes | oplog kept | election ms | slowest ping ms | first secondary read ms"
        " | second read ms |\n| ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for writes in (int(w) for w in args.writes.split(",")):
        result = measure_history(writes, args.per_collection)
        print(
            f"| {writes:,} | {result['kept']:,.0f} | {result['election'] * 1000:,.0f}"
            f" | {result['slowest_ping'] * 1000:,.1f} | {result['first_read'] * 1000:,.1f}"
            f" | {result['second_read'] * 1000:,.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
