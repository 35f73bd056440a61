"""``python -m mongocore demo``: retryable writes riding through failovers, live.

Starts an embedded three-member replica set (``mongocore.sim``), runs writer and
reader threads through a mongocore Client with retryWrites on, steps the primary
down a few times, shows the topology as the client sees it after each election,
and ends with what matters: every acknowledged write is there exactly once.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import Any, Optional, TextIO

from mongocore.api.client import Client
from mongocore.cli.view import plain_lines
from mongocore.core.description.types import ServerType
from mongocore.core.events import CommandListener, CommandStartedEvent
from mongocore.core.selection.read_preference import Mode, ReadPreference


class _Attempts(CommandListener):
    """Counts command attempts per operation: more than one is a retry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_operation: Counter[int] = Counter()

    def started(self, event: CommandStartedEvent) -> None:
        if event.command_name == "insert":
            with self._lock:
                self.by_operation[event.operation_id] += 1

    @property
    def retries(self) -> int:
        with self._lock:
            return sum(n - 1 for n in self.by_operation.values())


class _Workload:
    def __init__(self, client: Client) -> None:
        self.collection = client["demo"]["writes"]
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acknowledged: list[tuple[int, int]] = []
        self.failed: list[str] = []
        self.reads = 0
        self.longest_pause = 0.0

    def writer(self, number: int) -> None:
        seq = 0
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                self.collection.insert_one({"writer": number, "seq": seq})
            except Exception as exc:  # the demo reports, it does not crash
                with self.lock:
                    self.failed.append(f"{type(exc).__name__}: {exc}")
            else:
                pause = time.monotonic() - started
                with self.lock:
                    self.acknowledged.append((number, seq))
                    self.longest_pause = max(self.longest_pause, pause)
            seq += 1

    def reader(self) -> None:
        nearest = ReadPreference(Mode.SECONDARY_PREFERRED)
        while not self.stop.is_set():
            try:
                self.collection.find_one({}, read_preference=nearest)
                with self.lock:
                    self.reads += 1
            except Exception:
                pass  # reads retry on their own; a failure here is not the point


def live_demo(
    *,
    writers: int = 4,
    readers: int = 2,
    step_downs: int = 3,
    interval: float = 1.5,
    election_delay: float = 0.2,
    out: TextIO = sys.stdout,
) -> int:
    """Run the workload through ``step_downs`` failovers; 0 if nothing was lost or doubled."""
    try:
        # Imported here: the simulator is an optional extra.
        from mongocore.sim import ReplicaSet  # noqa: PLC0415
    except ImportError:
        print(
            "the demo needs the simulated deployment: python -m pip install 'mongocore[sim]'",
            file=sys.stderr,
        )
        return 1

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    attempts = _Attempts()
    with ReplicaSet(3, election_delay=election_delay) as deployment:
        say(f"started a simulated 3-member replica set: {deployment.uri}")
        client = Client(
            deployment.uri,
            retryWrites=True,
            heartbeatFrequencyMS=500,
            event_listeners=[attempts],
        )
        try:
            workload = _Workload(client)
            threads = [
                threading.Thread(target=workload.writer, args=(i,), name=f"demo-writer-{i}")
                for i in range(writers)
            ] + [
                threading.Thread(target=workload.reader, name=f"demo-reader-{i}")
                for i in range(readers)
            ]
            say(f"{writers} writers (retryWrites=true) and {readers} readers running")
            for thread in threads:
                thread.start()
            try:
                for number in range(1, step_downs + 1):
                    workload.stop.wait(interval)
                    old = deployment.step_down(stepdown_secs=interval)
                    stepped = time.monotonic()
                    say(f"\nstep-down {number}: {old.host} steps down")
                    _wait_for_new_primary(client, old.host)
                    with workload.lock:
                        done = len(workload.acknowledged)
                    say(
                        f"  the client sees a new primary after "
                        f"{(time.monotonic() - stepped) * 1000:.0f} ms; {done} writes so far"
                    )
                    for line in plain_lines(client.topology_description):
                        say("  " + line)
                workload.stop.wait(interval)
            finally:
                workload.stop.set()
                for thread in threads:
                    thread.join()
            documents = list(client["demo"]["writes"].find({}))
        finally:
            client.close()

    stored = Counter((d["writer"], d["seq"]) for d in documents)
    acknowledged = set(workload.acknowledged)
    lost = len([key for key in acknowledged if key not in stored])
    duplicates = sum(n - 1 for n in stored.values() if n > 1)
    say("\nsummary")
    say(f"  writes acknowledged      {len(acknowledged)}")
    say(f"  retries                  {attempts.retries}")
    say(f"  writes raised to callers {len(workload.failed)}")
    say(f"  reads                    {workload.reads}")
    say(f"  writes lost              {lost}")
    say(f"  duplicates               {duplicates}")
    say(f"  longest pause a caller saw: {workload.longest_pause * 1000:.0f} ms")
    if workload.failed:
        say(f"  (first raised: {workload.failed[0]})")
    return 0 if lost == 0 and duplicates == 0 else 1


def _wait_for_new_primary(client: Client, old_host: str, timeout: float = 30.0) -> None:
    """Wait on the topology's condition until a primary other than ``old_host`` is known."""
    topology = client.topology

    def elected() -> bool:
        primary: Optional[Any] = topology.description.primary
        return (
            primary is not None
            and primary.type is ServerType.RS_PRIMARY
            and str(primary.address) != old_host
        )

    with topology._condition:
        topology._condition.wait_for(elected, timeout)
