"""Headroom of the streaming monitor under CPU contention, mongocore against pymongo:
the time from a streamed hello reply's arrival to the monitor's deadline check.

A monitor reading streamed hello replies with connectTimeoutMS 250 and
heartbeatFrequencyMS 500 gives each reply up to 750 ms from the moment it starts to
wait (server-monitoring.md, "Streaming hello"); the server sends one every 500 ms,
so a reply arrives with 250 ms to spare. The monitor then has to run again (take
the GIL back, read the header, go on to the body) before it looks at its deadline:
what that takes under contention is eaten out of the 250 ms. If the deadline is
checked against the clock alone, a reply that arrived in time but was looked at
late counts as a timeout: the server is marked Unknown and its pool cleared.

This probe serves streamed hellos itself (every 500 ms, as a server does for
maxAwaitTimeMS 500) and records the moment each reply is sent; on loopback that is
the moment it arrives. In the client, every reading of the monotonic clock by the
module that checks a read's deadline (``mongocore.io.deadlines``,
``pymongo.network_layer``) on the monitor thread is recorded. For each reply:
``check - arrival``, the first such reading after the reply was sent. Reported per
driver: the median, 90th, 99th percentile and maximum, how many checks came more
than 250 ms after their reply (past the deadline of a reply that was on time), and
how many heartbeats failed.

The load: ``--threads`` busy threads in this process (default 3), ``--processes``
busy interpreters on the machine (default: one per core). The server runs in this
process by default (its thread competes with the busy threads, as a simulated
server in the test process does, so some replies leave late); ``--server-apart``
runs it in its own process. Rounds alternate between the drivers.

Run: python benchmarks/bench_monitor_headroom.py [--rounds 4] [--seconds 10]
     [--threads 3] [--processes N] [--server-apart] [--markdown]
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import itertools
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Callable

import pymongo
import pymongo.monitoring
import pymongo.network_layer
from bson import Int64, ObjectId

import mongocore
import mongocore.io.deadlines
import mongocore.monitoring
from contention import contended
from mongocore.core.wire import (
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    OpMsg,
    OpQuery,
    encode_op_msg,
    encode_op_reply,
    read_message,
)
from mongocore.io.counters import next_request_id

CONNECT_TIMEOUT_MS = 250
HEARTBEAT_MS = 500
OPTIONS: dict[str, Any] = {
    "connectTimeoutMS": CONNECT_TIMEOUT_MS,
    "heartbeatFrequencyMS": HEARTBEAT_MS,
    "serverMonitoringMode": "stream",
    "serverSelectionTimeoutMS": 30_000,
}

# --- the server ----------------------------------------------------------------------


class StreamingServer:
    """Answers hellos on 127.0.0.1: at once, or, for an awaitable hello that allows
    exhaust, with a reply every maxAwaitTimeMS (moreToCome) until the connection
    closes. ``on_sent(t)`` gets the monotonic time of each streamed reply's send."""

    def __init__(self, on_sent: Callable[[float], None]) -> None:
        self._on_sent = on_sent
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._process_id = ObjectId()
        self._connection_ids = itertools.count(1)
        self._stopped = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, name="probe-server", daemon=True)

    def start(self) -> None:
        self._accepting.start()

    def stop(self) -> None:
        self._stopped.set()
        self._accepting.join()
        self._listener.close()
        for sock in list(self._sockets):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join()

    def _accept(self) -> None:
        # (accept() is not woken by close() from another thread: poll for the stop.)
        self._listener.settimeout(0.1)
        while not self._stopped.is_set():
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sockets.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _hello(self, connection_id: int) -> dict[str, Any]:
        return {
            "isWritablePrimary": True,
            "ismaster": True,
            "helloOk": True,
            "topologyVersion": {"processId": self._process_id, "counter": Int64(0)},
            "maxBsonObjectSize": 16 * 1024 * 1024,
            "maxMessageSizeBytes": 48_000_000,
            "maxWriteBatchSize": 100_000,
            "localTime": datetime.datetime.now(datetime.timezone.utc),
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": connection_id,
            "minWireVersion": 0,
            "maxWireVersion": 21,
            "readOnly": False,
            "ok": 1.0,
        }

    def _serve(self, sock: socket.socket) -> None:
        connection_id = next(self._connection_ids)

        def recv_exactly(size: int) -> bytes:
            data = b""
            while len(data) < size:
                chunk = sock.recv(size - len(data))
                if not chunk:
                    break
                data += chunk
            return data

        try:
            while not self._stopped.is_set():
                header, message = read_message(recv_exactly, 48_000_000)
                if isinstance(message, OpQuery):
                    sock.sendall(
                        encode_op_reply(
                            [self._hello(connection_id)], next_request_id(), header.request_id
                        )
                    )
                    continue
                assert isinstance(message, OpMsg)
                body = message.body
                await_ms = body.get("maxAwaitTimeMS")
                if await_ms is None:
                    sock.sendall(
                        encode_op_msg(
                            self._hello(connection_id),
                            next_request_id(),
                            response_to=header.request_id,
                        )
                    )
                    continue
                streaming = bool(message.flag_bits & EXHAUST_ALLOWED)
                response_to = header.request_id
                due = time.monotonic()
                while not self._stopped.is_set():
                    due += int(await_ms) / 1000.0
                    if self._stopped.wait(max(0.0, due - time.monotonic())):
                        return
                    request_id = next_request_id()
                    data = encode_op_msg(
                        self._hello(connection_id),
                        request_id,
                        response_to=response_to,
                        flag_bits=MORE_TO_COME if streaming else 0,
                    )
                    sent = time.monotonic()
                    sock.sendall(data)
                    if streaming:
                        self._on_sent(sent)
                    response_to = request_id
                    if not streaming:
                        break
        except (OSError, Exception):
            return
        finally:
            sock.close()


def serve_forever() -> None:
    """``--serve``: a StreamingServer in its own process; prints its port, then
    ``sent <time>`` for every streamed reply, until stdin closes."""
    server = StreamingServer(lambda t: print(f"sent {t!r}", flush=True))
    server.start()
    print(f"port {server.port}", flush=True)
    sys.stdin.read()
    server.stop()


@contextmanager
def streaming_server(apart: bool) -> Iterator[tuple[int, list[float]]]:
    """The server's port and the (growing) list of the streamed replies' send times."""
    sent: list[float] = []
    if not apart:
        server = StreamingServer(sent.append)
        server.start()
        try:
            yield server.port, sent
        finally:
            server.stop()
        return
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    port = int(process.stdout.readline().split()[1])
    stdout = process.stdout

    def read() -> None:
        for line in stdout:
            sent.append(float(line.split()[1]))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield port, sent
    finally:
        process.stdin.close()
        process.wait(timeout=30)
        reader.join()


# --- the clients ----------------------------------------------------------------------


class RecordingClock(types.ModuleType):
    """Stands in for the ``time`` module in a driver's module: the same functions, and
    every ``monotonic()`` read on a thread whose name starts with ``prefix`` recorded."""

    def __init__(self, prefix: str) -> None:
        super().__init__("time")
        self.__dict__.update({k: v for k, v in vars(time).items() if not k.startswith("__")})
        self.readings: list[float] = []
        self._prefix = prefix
        self.monotonic = self._monotonic

    def _monotonic(self) -> float:
        now = time.monotonic()
        if threading.current_thread().name.startswith(self._prefix):
            self.readings.append(now)
        return now


@dataclass(frozen=True)
class Driver:
    name: str
    client: Callable[..., Any]
    module: types.ModuleType  # where a read's deadline is checked
    thread_prefix: str  # the monitor thread's name
    heartbeat_listener: type


class _FailedHeartbeats:
    def __init__(self) -> None:
        self.count = 0
        self.closing = False
        self.errors: list[str] = []

    def started(self, event: Any) -> None:
        pass

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        if not self.closing:
            self.count += 1
            # pymongo's failed heartbeat carries its error as ``reply``, mongocore's as
            # ``failure``.
            error = getattr(event, "failure", None) or getattr(event, "reply", None)
            self.errors.append(f"{type(error).__name__}: {error}")


DRIVERS = (
    Driver(
        "mongocore",
        mongocore.MongoClient,
        mongocore.io.deadlines,
        "mongocore-monitor-",
        mongocore.monitoring.ServerHeartbeatListener,
    ),
    Driver(
        "pymongo",
        pymongo.MongoClient,
        pymongo.network_layer,
        "pymongo_server_monitor_thread",
        pymongo.monitoring.ServerHeartbeatListener,
    ),
)


@dataclass
class Round:
    delays: list[float]  # seconds from each reply's arrival to the next check
    failed_heartbeats: int
    errors: list[str]


def one_round(driver: Driver, port: int, sent: list[float], seconds: float) -> Round:
    clock = RecordingClock(driver.thread_prefix)
    listener = type("Heartbeats", (_FailedHeartbeats, driver.heartbeat_listener), {})()
    original = driver.module.time
    driver.module.time = clock  # type: ignore[attr-defined]
    try:
        client = driver.client(
            f"mongodb://127.0.0.1:{port}/", event_listeners=[listener], **OPTIONS
        )
        try:
            begin = time.monotonic()
            time.sleep(seconds)
            end = time.monotonic()
        finally:
            listener.closing = True
            client.close()
    finally:
        driver.module.time = original  # type: ignore[attr-defined]
    readings = sorted(clock.readings)
    delays = []
    for arrival in [t for t in sent if begin + 1.0 <= t <= end]:  # the first second settles
        index = bisect.bisect_left(readings, arrival)
        if index < len(readings):
            delays.append(readings[index] - arrival)
    return Round(delays, listener.count, listener.errors)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each driver")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per round")
    parser.add_argument("--threads", type=int, default=3, help="busy threads in this process")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="busy processes")
    parser.add_argument("--server-apart", action="store_true", help="the server in its own process")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--verbose", action="store_true", help="print each failed heartbeat")
    args = parser.parse_args()
    if args.serve:
        serve_forever()
        return

    print(
        f"Python {platform.python_version()}, pymongo {pymongo.version}, "
        f"{os.cpu_count()} cores, switch interval {sys.getswitchinterval() * 1000:g} ms; "
        f"{args.threads} busy threads, {args.processes} busy processes, "
        f"server {'in its own process' if args.server_apart else 'in this process'}; "
        f"headroom {CONNECT_TIMEOUT_MS} ms",
        flush=True,
    )
    delays: dict[str, list[float]] = {driver.name: [] for driver in DRIVERS}
    failed: dict[str, int] = {driver.name: 0 for driver in DRIVERS}
    with (
        streaming_server(args.server_apart) as (port, sent),
        contended(args.threads, args.processes),
    ):
        for number in range(args.rounds):
            for driver in DRIVERS if number % 2 == 0 else DRIVERS[::-1]:
                result = one_round(driver, port, sent, args.seconds)
                delays[driver.name].extend(result.delays)
                failed[driver.name] += result.failed_heartbeats
                if args.verbose:
                    for error in result.errors:
                        print(f"  {driver.name}: heartbeat failed: {error}", flush=True)
    headroom = CONNECT_TIMEOUT_MS / 1000.0
    rows: list[tuple[str, int, float, float, float, float, int, int]] = []
    for name, values in delays.items():
        ms = [v * 1000 for v in values]
        rows.append(
            (
                name,
                len(ms),
                statistics.median(ms) if ms else float("nan"),
                _percentile(ms, 0.9),
                _percentile(ms, 0.99),
                max(ms) if ms else float("nan"),
                sum(v > headroom for v in values),
                failed[name],
            )
        )
    if args.markdown:
        print(
            "| driver | replies | median ms | p90 ms | p99 ms | max ms"
            f" | checks > {CONNECT_TIMEOUT_MS} ms | heartbeats failed |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, count, median, p90, p99, worst, late, fails in rows:
            print(
                f"| {name} | {count} | {median:.1f} | {p90:.1f} | {p99:.1f} | {worst:.1f}"
                f" | {late} | {fails} |"
            )
    else:
        for name, count, median, p90, p99, worst, late, fails in rows:
            print(
                f"{name:9s} {count} replies: arrival to check median {median:.1f} ms,"
                f" p90 {p90:.1f}, p99 {p99:.1f}, max {worst:.1f};"
                f" {late} checks more than {CONNECT_TIMEOUT_MS} ms after arrival;"
                f" {fails} heartbeats failed"
            )


if __name__ == "__main__":
    main()
