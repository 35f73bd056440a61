"""mongocore's own Python work per operation: the socket answered from a table.

The client connects to a simulated standalone (in its own process) as usual; then
the socket of its one pooled connection is swapped for an object that answers each
command at once with a fixed reply. What is left is the work of mongocore itself,
from the API call to the decoded reply, in a tight loop: no system call, no wait
for a server, no cache gone cold while the thread slept. The stand-in socket's own
cost (measured first, and printed) is included in the figures.

With ``--cold``, 8 MiB of memory are written before each call (and that writing's
own cost, measured alone, is subtracted): the caches hold none of the client's code
and data when the call starts, as after a wait for a real server. The figures then
come close to what a client spends above the floor of ``bench_cpu.py``, without a
server's timing in them, so they move less between runs.

mongocore only: pymongo's connections are not built on the same socket calls.

Run: python benchmarks/bench_canned.py [--rounds 7] [--cold]
"""

from __future__ import annotations

import argparse
import gc
import struct
import time
from typing import Any, Callable

import bson

import mongocore
from mongocore.io.connection import Connection
from simulated import simulated

DOCUMENT = {
    "_id": 500,
    "name": "user500",
    "email": "user500@example.com",
    "age": 20,
    "score": 750.0,
    "active": True,
    "address": {"street": "500 Main St", "city": "Springfield", "zip": "00500"},
    "tags": ["a", "b", "c"],
}
REPLIES: dict[bytes, dict[str, Any]] = {
    b"ping": {"ok": 1.0},
    b"find": {"cursor": {"firstBatch": [DOCUMENT], "id": 0, "ns": "bench.docs"}, "ok": 1.0},
    b"insert": {"n": 1, "ok": 1.0},
}
_HEADER = struct.Struct("<iiii")


class CannedSocket:
    """Answers every OP_MSG command with the reply of its name, at once."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._pending = b""

    def gettimeout(self) -> None:
        return None

    def sendall(self, data: Any) -> None:
        data = bytes(data)
        request_id = _HEADER.unpack_from(data)[1]
        # The command's name: the first key of the body, after header, flags and kind.
        name = data[26 : data.index(b"\x00", 26)]
        body = bson.encode(REPLIES[name])
        self._pending = _HEADER.pack(21 + len(body), 1, request_id, 2013) + bytes(5) + body

    def send(self, data: Any) -> int:
        self.sendall(data)
        return len(data)

    def recv(self, size: int) -> bytes:
        chunk, self._pending = self._pending[:size], self._pending[size:]
        return chunk

    def recv_into(self, buffer: Any) -> int:
        chunk = self.recv(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


#: Written before each call with --cold: larger than this machine's caches.
_EVICTION = bytearray(8 * 1024 * 1024)
_ONE_BYTE_PER_LINE = b"\x01" * (len(_EVICTION) // 64)


def evict_caches() -> None:
    """Write one byte of every 64 (a cache line each) of 8 MiB."""
    _EVICTION[::64] = _ONE_BYTE_PER_LINE


def best_per_call(
    op: Callable[[], object], rounds: int, calls: int = 5000, cold: bool = False
) -> float:
    for _ in range(500):
        op()
    best = float("inf")
    for _ in range(rounds):
        begin = time.thread_time()
        if cold:
            for _ in range(calls):
                evict_caches()
                op()
        else:
            for _ in range(calls):
                op()
        best = min(best, (time.thread_time() - begin) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cold", action="store_true", help="evict the caches before each call")
    args = parser.parse_args()
    with simulated("--standalone") as uri:
        client: Any = mongocore.MongoClient(uri, maxPoolSize=1)
        client.admin.command("ping")
        (connection,) = [
            o
            for o in gc.get_objects()
            if isinstance(o, Connection) and not o.monitoring and not o.closed
        ]
        real = connection._sock
        canned = CannedSocket(real)
        connection._sock = canned  # type: ignore[assignment]
        try:
            admin, docs, inserts = client.admin, client.bench.docs, client.bench.inserts
            ping = bson.encode({"ping": 1, "$db": "admin"})
            message = _HEADER.pack(21 + len(ping), 1, 0, 2013) + bytes(5) + ping

            def socket_only() -> None:
                canned.sendall(message)
                canned.recv(65536)

            operations: list[tuple[str, Callable[[], object]]] = [
                ("the stand-in socket alone", socket_only),
                ("ping", lambda: admin.command("ping")),
                ("find_one by _id", lambda: docs.find_one({"_id": 500})),
                ("insert_one", lambda: inserts.insert_one({"x": 1})),
            ]
            # With --cold, the eviction's own cost (measured alone) is taken off.
            evicting = best_per_call(lambda: None, args.rounds, cold=True) if args.cold else 0.0
            rows = [
                (label, best_per_call(op, args.rounds, cold=args.cold) - evicting)
                for label, op in operations
            ]
        finally:
            connection._sock = real
            client.close()
    caches = "caches evicted before each call" if args.cold else "in a tight loop"
    print(
        f"mongocore {mongocore.__version__}, best of {args.rounds} rounds, CPU µs per call,"
        f" {caches}"
    )
    for label, seconds in rows:
        print(f"{label:28s} {seconds * 1e6:6.1f} µs")


if __name__ == "__main__":
    main()
