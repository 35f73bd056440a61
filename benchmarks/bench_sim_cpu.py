"""The simulator before and after, side by side in one run: its own CPU per command,
and a lagging secondary's first read after a long history.

Per command: the CPU of the serving thread of the primary of an
in-process three-member replica set (``time.thread_time`` around its request handler:
decoding the request, running the command, encoding the reply), median over
``--count`` requests, for ``ping``, ``find`` by ``_id`` (as ``find_one`` sends it),
``insert`` of one document, a ``find`` of 100 documents and ``update`` by ``_id``
(``$inc``), on a collection of 1,000 documents. Each tree is measured in a child
process of its own (``PYTHONPATH`` set to the tree's ``src``), the trees taking turns
``--rounds`` times so that both see the same machine; the figure is the median of the
rounds' medians.

Catch-up: a replica set whose secondaries lag by an hour on a fake
clock receives ``N`` inserts (batches of 1,000 into collections of 1,000); the clock
then moves past the lag and the secondary's first ``find`` (wall time) is measured,
while another connection pings the same member in a loop (the slowest ping is
reported: a command waiting behind the catch-up would show there).

Run (the baseline is the tree of an older commit, e.g. 6abec3a, the simulator before
its engine)::

    mkdir -p /tmp/baseline && git archive 6abec3a src | tar -x -C /tmp/baseline
    pip install --target /tmp/baseline-deps mongomock==4.3.0   # what 6abec3a ran on
    PYTHONPATH=/tmp/baseline-deps python benchmarks/bench_sim_cpu.py --baseline /tmp/baseline \
        [--rounds 3] [--count 2000]

``--child cpu|catchup`` runs one measurement in this process (what the parent runs in
its children) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

# The tree under test: a child's PYTHONPATH puts it first.
from mongocore.core.wire import OpMsg, encode_op_msg, read_message

try:
    from mongocore.io.counters import next_request_id
except ImportError:  # a tree from before the id counters left the wire codec
    from mongocore.core.wire import next_request_id  # type: ignore[attr-defined,no-redef]
from mongocore.sim import ReplicaSet

ROOT = Path(__file__).resolve().parents[1]
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
HISTORY = (50, 50_000)


class Raw:
    """One wire-protocol connection (the codec of the tree under test)."""

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

    def close(self) -> None:
        self.sock.close()


class FakeClock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _primary(rs: Any) -> Any:
    deadline = time.monotonic() + 30
    while rs.primary is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return rs.primary


def child_cpu(count: int) -> dict[str, float]:
    """Median CPU microseconds per command of the primary's serving thread."""
    rs = ReplicaSet(3)
    rs.start()
    try:
        member = _primary(rs)
        client = Raw(member.address)
        client.command({"hello": 1, "$db": "admin"})
        docs = [{"_id": n, "count": 0, "name": f"n{n}"} for n in range(1000)]
        client.command({"insert": "docs", "documents": docs, "$db": "bench"})
        server = member.server
        original = server._handler
        result: dict[str, float] = {}
        for name, build in COMMANDS.items():
            samples: list[float] = []

            def timed(*args: Any, samples: list[float] = samples) -> Iterator[bytes]:
                started = time.thread_time()
                replies = list(original(*args))
                samples.append(time.thread_time() - started)
                return iter(replies)

            server._handler = timed
            try:
                for n in range(count):
                    client.command(build(n + (10**6 if name == "insert_one" else 0)))
            finally:
                server._handler = original
            result[name] = statistics.median(samples) * 1e6
        client.close()
        return result
    finally:
        rs.stop()


def child_catchup(writes: int) -> dict[str, float]:
    """The lagging secondary's first read after ``writes`` inserts, and the slowest
    ping another connection got from that member meanwhile (milliseconds)."""
    clock = FakeClock()
    rs = ReplicaSet(3, lag=[0.0, 3600.0, 3600.0], clock=clock)
    rs.start()
    try:
        primary = _primary(rs)
        writer = Raw(primary.address)
        for start in range(0, writes, 1000):
            size = min(1000, writes - start)
            docs = [{"_id": start + n, "v": n} for n in range(size)]
            writer.command({"insert": f"c{start // 1000}", "documents": docs, "$db": "bench"})
        secondary = next(m for m in rs.members if m is not primary)
        reader, pinger = Raw(secondary.address), Raw(secondary.address)
        pinger.command({"ping": 1, "$db": "admin"})
        clock.now += 3600.0
        slowest = [0.0]
        done = threading.Event()

        def ping() -> None:
            while not done.is_set():
                started = time.perf_counter()
                pinger.command({"ping": 1, "$db": "admin"})
                slowest[0] = max(slowest[0], time.perf_counter() - started)

        thread = threading.Thread(target=ping)
        thread.start()
        try:
            started = time.perf_counter()
            reply = reader.command(
                {
                    "find": "c0",
                    "filter": {"_id": 0},
                    "$readPreference": {"mode": "secondaryPreferred"},
                    "$db": "bench",
                }
            )
            first = time.perf_counter() - started
        finally:
            done.set()
            thread.join()
        assert reply["cursor"]["firstBatch"] == [{"_id": 0, "v": 0}], reply
        for each in (writer, reader, pinger):
            each.close()
        return {"first_read_ms": first * 1e3, "slowest_ping_ms": slowest[0] * 1e3}
    finally:
        rs.stop()


def _run_child(tree: Path, kind: str, argument: int) -> dict[str, float]:
    # The tree first; a PYTHONPATH given to this script follows (a baseline's own
    # dependencies: 6abec3a's simulator needs mongomock 4.3.0).
    path = [str(tree / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    command = [sys.executable, str(Path(__file__)), "--child", kind, "--argument", str(argument)]
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(output.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="an older tree (holding src/mongocore)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--skip-catchup", action="store_true")
    parser.add_argument("--child", choices=["cpu", "catchup"])
    parser.add_argument("--argument", type=int, default=0)
    args = parser.parse_args()
    if args.child == "cpu":
        print(json.dumps(child_cpu(args.argument)))
        return
    if args.child == "catchup":
        print(json.dumps(child_catchup(args.argument)))
        return
    trees = {"now": ROOT}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), **trees}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            rounds[name].append(_run_child(tree, "cpu", args.count))
    medians = {
        name: {c: statistics.median(r[c] for r in runs) for c in COMMANDS}
        for name, runs in rounds.items()
    }
    header = f"{'command':16}" + "".join(f"{name + ' us':>14}" for name in trees)
    if "baseline" in trees:
        header += f"{'ratio':>8}"
    print(f"CPU per command, primary of a 3-member set, median of {args.rounds} rounds")
    print(header)
    for command in COMMANDS:
        line = f"{command:16}" + "".join(f"{medians[n][command]:14.1f}" for n in trees)
        if "baseline" in trees:
            line += f"{medians['now'][command] / medians['baseline'][command]:8.2f}"
        print(line)
    if args.skip_catchup:
        return
    print("\nA lagging secondary's first read after N writes (ms)")
    print(f"{'tree':10}{'writes':>8}{'first read':>12}{'slowest ping':>14}")
    for name, tree in trees.items():
        for writes in HISTORY:
            figures = _run_child(tree, "catchup", writes)
            print(
                f"{name:10}{writes:8}{figures['first_read_ms']:12.1f}"
                f"{figures['slowest_ping_ms']:14.1f}"
            )


if __name__ == "__main__":
    main()
