"""Retryable writes under chaos: step-downs and dropped connections while threads write.

Writers insert documents with unique keys through one Client with retryWrites on,
while a chaos thread steps the primary down (every ~300 ms, or sooner once enough
writes went through, so that failovers always land among the writes) and makes the
new primary drop the connection of its next insert. Afterwards every acknowledged
write must be there exactly once, and no key at all may be there twice: a write
whose error reached the application may or may not have been applied, but a
retry must never apply one twice (the retryable-writes seed: "at-most-once").

``run_chaos`` is shared with ``benchmarks/bench_chaos.py``, which runs it at full size.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("mongomock")

from mongocore.client import Client
from mongocore.errors import MongoCoreError
from mongocore.sim import ReplicaSet
from tests.integration.sim_client import Recorder

#: Client settings for chaos: fast rediscovery, and room to wait out an election.
CHAOS_OPTIONS: dict[str, Any] = {
    "retryWrites": True,
    "heartbeatFrequencyMS": 500,
    "serverSelectionTimeoutMS": 30_000,
}


@dataclass
class ChaosReport:
    writes: int
    acknowledged: int = 0
    failed: int = 0
    step_downs: int = 0
    dropped_connections: int = 0
    retried_commands: int = 0
    applied_despite_error: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    seconds: float = 0.0
    errors: Counter[str] = field(default_factory=Counter)

    def lines(self) -> list[str]:
        return [
            f"writes attempted:            {self.writes}",
            f"acknowledged:                {self.acknowledged}",
            f"failed (error to the caller): {self.failed}",
            f"  of which applied anyway:   {self.applied_despite_error}",
            f"step-downs:                  {self.step_downs}",
            f"dropped connections armed:   {self.dropped_connections}",
            f"commands that failed and were retried or reported: {self.retried_commands}",
            f"lost acknowledged writes:    {len(self.lost)}",
            f"duplicated writes:           {len(self.duplicates)}",
            f"seconds:                     {self.seconds:.2f}",
            *(f"  error {name}: {count}" for name, count in sorted(self.errors.items())),
        ]


class _Progress:
    """Acknowledged writes, counted under a condition the chaos thread waits on."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.acknowledged = 0
        self.finished_writers = 0


def run_chaos(
    *,
    writes: int,
    threads: int,
    interval: float = 0.3,
    writes_per_step_down: int = 40,
    drop_every: int = 2,
    collection_count: int = 32,
) -> ChaosReport:
    """Run ``writes`` inserts from ``threads`` threads against a 3-member replica set
    while the primary steps down every ``interval`` seconds (or after
    ``writes_per_step_down`` acknowledged writes), the new primary dropping one
    insert's connection after every ``drop_every``-th step-down. Writes are spread
    over ``collection_count`` collections: the simulator's inserts slow down as one
    collection grows, and the driver is what is being measured."""
    report = ChaosReport(writes=writes)
    progress = _Progress()
    acknowledged: set[str] = set()
    failed: set[str] = set()
    outcome_lock = threading.Lock()
    recorder = Recorder()
    started = time.monotonic()
    with ReplicaSet(3, election_delay=0.05) as rs:
        client = Client(rs.uri, event_listeners=[recorder], **CHAOS_OPTIONS)
        try:
            db = client["chaos"]
            colls = [db[f"writes{n}"] for n in range(collection_count)]

            def writer(first: int) -> None:
                for i in range(first, writes, threads):
                    key = f"w{i:06d}"
                    try:
                        colls[i % collection_count].insert_one({"k": key})
                    except MongoCoreError as exc:
                        with outcome_lock:
                            failed.add(key)
                            report.errors[type(exc).__name__] += 1
                        continue
                    with outcome_lock:
                        acknowledged.add(key)
                    with progress.cond:
                        progress.acknowledged += 1
                        progress.cond.notify_all()
                with progress.cond:
                    progress.finished_writers += 1
                    progress.cond.notify_all()

            def due(since: int) -> bool:
                return (
                    progress.finished_writers == threads
                    or progress.acknowledged - since >= writes_per_step_down
                )

            def chaos() -> None:
                last = 0
                while True:
                    with progress.cond:
                        progress.cond.wait_for(functools.partial(due, last), timeout=interval)
                        if progress.finished_writers == threads:
                            return
                        last = progress.acknowledged
                    rs.wait_for_primary(timeout=30)
                    # A short stepdown period lets every member take its turn.
                    rs.step_down(stepdown_secs=0.2)
                    report.step_downs += 1
                    if report.step_downs % drop_every == 0:
                        primary = rs.wait_for_primary(timeout=30)
                        primary.fail_command("insert", close_connection=True, mode={"times": 1})
                        report.dropped_connections += 1

            workers = [
                threading.Thread(target=writer, args=(n,), name=f"chaos-writer-{n}")
                for n in range(threads)
            ]
            chaos_thread = threading.Thread(target=chaos, name="chaos-monkey")
            for thread in [*workers, chaos_thread]:
                thread.start()
            for thread in [*workers, chaos_thread]:
                thread.join()
            report.seconds = time.monotonic() - started

            rs.wait_for_primary(timeout=30)
            for member in rs.members:
                member.clear_fail_points()
            counts: Counter[str] = Counter()
            for coll in colls:
                counts.update(str(d["k"]) for d in coll.find({}, {"k": 1, "_id": 0}))
        finally:
            client.close()
    report.acknowledged = len(acknowledged)
    report.failed = len(failed)
    report.lost = sorted(k for k in acknowledged if counts[k] != 1)
    report.duplicates = sorted(k for k, n in counts.items() if n > 1)
    report.applied_despite_error = sum(1 for k in failed if counts[k] == 1)
    report.retried_commands = len(recorder.failed_of("insert"))
    return report


def test_retryable_writes_survive_step_downs_and_dropped_connections() -> None:
    report = run_chaos(writes=300, threads=4)
    print("\n".join(report.lines()))
    assert report.acknowledged + report.failed == 300
    assert report.lost == [], "every acknowledged write is there exactly once"
    assert report.duplicates == [], "no write was applied twice"
    assert report.step_downs >= 2 and report.dropped_connections >= 1
    assert report.retried_commands >= 1, "the chaos made the driver retry"
    assert report.acknowledged > 0
