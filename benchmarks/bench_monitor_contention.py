"""The streaming monitor under CPU contention, mongocore against pymongo: runs of the
SDAM unified test "hello-timeout: Driver extends timeout while streaming".

Each run does what that test does, with a client of each driver in turn: a client
with connectTimeoutMS 250 and heartbeatFrequencyMS 500 (so every streamed hello reply
is due 500 ms after the one before it, and the monitor gives up on it 750 ms after it
began to wait), an insert of two documents, two seconds of waiting (four streamed
replies), an insert of two more. The test passes when the monitor never reported the
server Unknown and no pool was cleared; a run also fails when an insert fails (a
monitor that times out clears the pool with interruptInUseConnections, which ends an
insert in flight: "closed (stale) while in use").

The load, for the whole run of both drivers: ``--threads`` busy threads in this
process (default 3: each runs bytecode without pause and holds the GIL until the
switch interval takes it away) and ``--processes`` busy interpreters on the machine
(default: one per core). The simulated server runs in its own process by default
(``python -m mongocore sim --standalone``), so what is measured is the client's
monitor; ``--sim-here`` runs it in this process instead, as the unified test runner
does (its threads then compete with the busy threads too).

Runs alternate between the drivers (which goes first alternates too). Reported: per
driver, the runs with a spurious Unknown, with a cleared pool, with a failed insert,
and the heartbeats that failed.

Run: python benchmarks/bench_monitor_contention.py [--runs 20] [--threads 3]
     [--processes N] [--sim-here] [--markdown]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

import pymongo
import pymongo.monitoring
import pymongo.server_type

import mongocore
import mongocore.monitoring
from contention import contended
from mongocore.sim import Standalone
from simulated import simulated

#: The client options of the unified test.
OPTIONS: dict[str, Any] = {
    "connectTimeoutMS": 250,
    "heartbeatFrequencyMS": 500,
    "retryWrites": False,
    "appname": "extendsTimeoutTest",
    "serverMonitoringMode": "stream",
    "serverSelectionTimeoutMS": 30_000,
}
#: The test's wait between the two inserts.
WAIT = 2.0


@dataclass
class Run:
    """What one run of one driver saw."""

    unknown: int = 0
    pool_cleared: int = 0
    heartbeats_failed: int = 0
    insert_errors: list[str] = field(default_factory=list)
    #: The failed heartbeats' errors.
    heartbeat_errors: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.unknown or self.pool_cleared or self.insert_errors)


class _Counts:
    """Counts the events the test asserts on, for either driver's listeners."""

    def __init__(self, is_unknown: Callable[[Any], bool]) -> None:
        self.run = Run()
        self._is_unknown = is_unknown
        self._lock = threading.Lock()
        #: Set before the client is closed: a check cancelled by close() is no failure.
        self.closing = False

    def description_changed(self, event: Any) -> None:
        if self._is_unknown(event.new_description):
            with self._lock:
                self.run.unknown += 1

    def pool_cleared(self, event: Any) -> None:
        with self._lock:
            self.run.pool_cleared += 1

    def heartbeat_failed(self, event: Any) -> None:
        if self.closing:
            return
        # pymongo's failed heartbeat carries its error as ``reply``, mongocore's as
        # ``failure`` (it also answers to ``reply``).
        error = getattr(event, "failure", None) or getattr(event, "reply", None)
        with self._lock:
            self.run.heartbeats_failed += 1
            self.run.heartbeat_errors.append(f"{type(error).__name__}: {error}")


#: pymongo's pool listener methods other than pool_cleared.
_POOL_EVENTS = (
    "pool_created",
    "pool_ready",
    "pool_closed",
    "connection_created",
    "connection_ready",
    "connection_closed",
    "connection_check_out_started",
    "connection_check_out_failed",
    "connection_checked_out",
    "connection_checked_in",
)


def _pymongo_listeners(counts: _Counts) -> list[Any]:
    class Servers(pymongo.monitoring.ServerListener):
        def opened(self, event: Any) -> None:
            pass

        def description_changed(self, event: Any) -> None:
            counts.description_changed(event)

        def closed(self, event: Any) -> None:
            pass

    class Pools(pymongo.monitoring.ConnectionPoolListener):
        def pool_cleared(self, event: Any) -> None:
            counts.pool_cleared(event)

    # pymongo's listener methods raise NotImplementedError: the others do nothing.
    for name in _POOL_EVENTS:
        setattr(Pools, name, lambda self, event: None)

    class Heartbeats(pymongo.monitoring.ServerHeartbeatListener):
        def started(self, event: Any) -> None:
            pass

        def succeeded(self, event: Any) -> None:
            pass

        def failed(self, event: Any) -> None:
            counts.heartbeat_failed(event)

    return [Servers(), Pools(), Heartbeats()]


def _mongocore_listeners(counts: _Counts) -> list[Any]:
    class Servers(mongocore.monitoring.ServerListener):
        def description_changed(self, event: Any) -> None:
            counts.description_changed(event)

    class Pools(mongocore.monitoring.ConnectionPoolListener):
        def pool_cleared(self, event: Any) -> None:
            counts.pool_cleared(event)

    class Heartbeats(mongocore.monitoring.ServerHeartbeatListener):
        def failed(self, event: Any) -> None:
            counts.heartbeat_failed(event)

    return [Servers(), Pools(), Heartbeats()]


@dataclass(frozen=True)
class Driver:
    name: str
    client: Callable[..., Any]
    listeners: Callable[[_Counts], list[Any]]
    is_unknown: Callable[[Any], bool]


DRIVERS = (
    Driver(
        "mongocore",
        mongocore.MongoClient,
        _mongocore_listeners,
        lambda description: str(description.type) == "Unknown",
    ),
    Driver(
        "pymongo",
        pymongo.MongoClient,
        _pymongo_listeners,
        lambda description: description.server_type == pymongo.server_type.SERVER_TYPE.Unknown,
    ),
)


def one_run(driver: Driver, uri: str, number: int) -> Run:
    """The unified test's operations with a new client of ``driver``."""
    counts = _Counts(driver.is_unknown)
    client = driver.client(uri, event_listeners=driver.listeners(counts), **OPTIONS)
    try:
        collection = client["sdam-tests"][f"hello-timeout-{driver.name}-{number}"]
        for first in (1, 3):
            if first == 3:
                time.sleep(WAIT)
            try:
                collection.insert_many([{"_id": first}, {"_id": first + 1}])
            except Exception as exc:
                counts.run.insert_errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        counts.closing = True
        client.close()
    return counts.run


@contextlib.contextmanager
def server(here: bool) -> Iterator[str]:
    if here:
        with Standalone() as standalone:
            yield standalone.uri
    else:
        with simulated("--standalone") as uri:
            yield uri


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each driver")
    parser.add_argument("--threads", type=int, default=3, help="busy threads in this process")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="busy processes")
    parser.add_argument("--sim-here", action="store_true", help="the server in this process")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--verbose", action="store_true", help="a line per run")
    args = parser.parse_args()

    print(
        f"Python {platform.python_version()}, pymongo {pymongo.version}, "
        f"{os.cpu_count()} cores, switch interval {sys.getswitchinterval() * 1000:g} ms; "
        f"{args.threads} busy threads, {args.processes} busy processes, "
        f"server {'in this process' if args.sim_here else 'in its own process'}",
        flush=True,
    )
    results: dict[str, list[Run]] = {driver.name: [] for driver in DRIVERS}
    with server(args.sim_here) as uri, contended(args.threads, args.processes):
        for number in range(args.runs):
            order = DRIVERS if number % 2 == 0 else DRIVERS[::-1]
            for driver in order:
                run = one_run(driver, uri, number)
                results[driver.name].append(run)
                if args.verbose:
                    print(
                        f"run {number + 1:2d} {driver.name:9s}"
                        f" unknown={run.unknown} pool_cleared={run.pool_cleared}"
                        f" heartbeats_failed={run.heartbeats_failed}"
                        f" insert_errors={run.insert_errors}"
                        f" heartbeat_errors={run.heartbeat_errors}",
                        flush=True,
                    )
    rows = []
    for name, runs in results.items():
        rows.append(
            (
                name,
                sum(run.failed for run in runs),
                sum(bool(run.unknown) for run in runs),
                sum(bool(run.pool_cleared) for run in runs),
                sum(bool(run.insert_errors) for run in runs),
                sum(run.heartbeats_failed for run in runs),
                len(runs),
            )
        )
    if args.markdown:
        print(
            "| driver | runs failed | with a spurious Unknown | with a pool cleared"
            " | with a failed insert | heartbeats failed |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, failed, unknown, cleared, inserts, heartbeats, total in rows:
            print(
                f"| {name} | {failed} of {total} | {unknown} | {cleared} | {inserts}"
                f" | {heartbeats} |"
            )
    else:
        for name, failed, unknown, cleared, inserts, heartbeats, total in rows:
            print(
                f"{name:9s} failed {failed} of {total} runs: a spurious Unknown in {unknown},"
                f" a pool cleared in {cleared}, a failed insert in {inserts};"
                f" {heartbeats} heartbeats failed"
            )


if __name__ == "__main__":
    main()
