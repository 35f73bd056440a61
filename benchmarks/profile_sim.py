"""Where the simulator's CPU goes, command by command.

An in-process simulated deployment (a standalone, or the primary of a three-member
replica set) answers one raw wire-protocol connection. The connection's thread times
each request with ``time.thread_time`` (the CPU of the serving thread alone: decoding
the request, running the command, encoding the reply; not the client's) and, with
``--profile``, runs it under ``cProfile``; the statistics are then grouped by where
the time went: the simulator's own modules, its engine (``sim/engine/``), mongocore's
wire codec, the BSON codec, the standard library.

Commands: ``ping``, ``find`` by ``_id`` (``limit 1, singleBatch``, as ``find_one``
sends), ``insert`` of one document, a ``find`` of 100 documents (one batch), and
``update`` by ``_id`` with ``$inc``, on a collection of ``--docs`` documents.

The profile is taken by wrapping the member's own request handler (an attribute of
that one server object, restored afterwards); nothing process-wide is replaced.

Run: python benchmarks/profile_sim.py [--count 2000] [--docs 1000] [--replset]
     [--profile] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import socket
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any, Callable

from mongocore.core.wire import OpMsg, encode_op_msg, read_message
from mongocore.io.counters import next_request_id
from mongocore.sim import ReplicaSet, Standalone

Handler = Callable[..., Iterator[bytes]]

COMMANDS: dict[str, Callable[[int], dict[str, Any]]] = {
    "ping": lambda n: {"ping": 1, "$db": "admin"},
    "find_one_by_id": lambda n: {
        "find": "docs",
        "filter": {"_id": n % 1000},
        "limit": 1,
        "singleBatch": True,
        "$db": "bench",
    },
    "insert_one": lambda n: {
        "insert": "inserts",
        "documents": [{"_id": n, "count": 0, "name": f"n{n}"}],
        "$db": "bench",
    },
    "find_100": lambda n: {"find": "docs", "filter": {}, "limit": 100, "$db": "bench"},
    "update_by_id": lambda n: {
        "update": "docs",
        "updates": [{"q": {"_id": n % 1000}, "u": {"$inc": {"count": 1}}}],
        "$db": "bench",
    },
}


class Timed:
    """Wraps a server's request handler: CPU per request, and an optional profile."""

    def __init__(self, handler: Handler, profile: bool) -> None:
        self.handler = handler
        self.samples: list[float] = []
        # Timed by the thread's CPU clock: other processes on the machine do not inflate it.
        self.profiler = cProfile.Profile(time.thread_time) if profile else None

    def __call__(self, *args: Any) -> Iterator[bytes]:
        started = time.thread_time()
        if self.profiler is not None:
            self.profiler.enable()
        try:
            replies = list(self.handler(*args))
        finally:
            if self.profiler is not None:
                self.profiler.disable()
        self.samples.append(time.thread_time() - started)
        return iter(replies)


class Raw:
    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _recv(self, size: int) -> bytes:
        buffer = bytearray()
        while len(buffer) < size:
            chunk = self.sock.recv(size - len(buffer))
            if not chunk:
                raise EOFError
            buffer += chunk
        return bytes(buffer)

    def command(self, body: dict[str, Any]) -> dict[str, Any]:
        self.sock.sendall(encode_op_msg(body, next_request_id()))
        _, message = read_message(self._recv, 48_000_000)
        assert isinstance(message, OpMsg)
        reply = dict(message.body)
        if not reply.get("ok"):
            raise RuntimeError(reply)
        return reply


def _area(filename: str) -> str:
    if "/mongocore/sim/engine/" in filename:
        return "engine"
    if "/mongocore/sim/" in filename:
        return "sim"
    if "/mongocore/" in filename:
        return "mongocore codec"
    if "/bson/" in filename:
        return "bson"
    if filename.startswith("~") or "<" in filename:
        return "builtins"
    return "stdlib"


def _areas(stats: pstats.Stats) -> dict[str, float]:
    """Own (tottime) seconds per area, with the standard library's copy module apart."""
    totals: dict[str, float] = defaultdict(float)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, tottime, _, _) in raw.items():
        area = _area(filename)
        if filename.endswith("copy.py"):
            area = "copy.deepcopy"
        totals[area] += tottime
    return dict(totals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--replset", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()

    deployment: Any = ReplicaSet(3) if args.replset else Standalone()
    deployment.start()
    try:
        member = deployment.primary
        if args.replset:
            deadline = time.monotonic() + 30
            while member is None and time.monotonic() < deadline:
                time.sleep(0.05)
                member = deployment.primary
        client = Raw(member.address)
        client.command({"hello": 1, "$db": "admin"})
        docs = [{"_id": n, "count": 0, "name": f"n{n}"} for n in range(args.docs)]
        for start in range(0, len(docs), 500):
            client.command(
                {"insert": "docs", "documents": docs[start : start + 500], "$db": "bench"}
            )
        server = member.server
        original = server._handler
        print(f"{'replset primary' if args.replset else 'standalone'}, {args.docs} docs")
        print(f"{'command':16} {'median us':>10} {'mean us':>10}   where the time goes (own time)")
        for name, build in COMMANDS.items():
            timed = Timed(original, args.profile)
            server._handler = timed
            try:
                for n in range(args.count):
                    client.command(build(n + (10**6 if name == "insert_one" else 0)))
            finally:
                server._handler = original
            median = statistics.median(timed.samples) * 1e6
            mean = statistics.fmean(timed.samples) * 1e6
            line = f"{name:16} {median:10.0f} {mean:10.0f}"
            if timed.profiler is not None:
                stats = pstats.Stats(timed.profiler)
                areas = _areas(stats)
                total = sum(areas.values()) or 1.0
                parts = sorted(areas.items(), key=lambda kv: -kv[1])
                line += "   " + ", ".join(f"{a} {100 * t / total:.0f}%" for a, t in parts)
                print(line)
                stats.sort_stats("tottime").print_stats(args.top)
            else:
                print(line)
        client.sock.close()
    finally:
        deployment.stop()


if __name__ == "__main__":
    main()
