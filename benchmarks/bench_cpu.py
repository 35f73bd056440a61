"""Client CPU per operation, mongocore against pymongo, against one loopback server.

The server is the simulated standalone started with ``python -m mongocore sim
--standalone`` in its own process, so that its work is not counted: what is
measured is the CPU time of the client process (``time.process_time``: every
thread of it, so a client's monitor threads count too) divided by the number of
operations. Both clients talk to the same server in the same run, in alternating
rounds; the best round of each is reported, and its ratio: mongocore's CPU time
divided by pymongo's (below 1 means mongocore uses less). Each round also gives a
ratio of its own (the two clients measured back to back); the median of those is
reported too: it moves less from run to run than the ratio of two minimums.

Operations: ``ping``, ``find_one`` by ``_id``, ``insert_one``, and iterating a
``find`` over 1,000 documents (the whole cursor: the first batch and the getMores).

The ping rounds also time a plain socket sending a ready-made ping message and
decoding its reply (``bson.decode``), in the same process: the floor of CPU per
command that no Python client gets under (the kernel's work for a send and a
receive over loopback, the wake-up after the wait). The insert_one rounds time the
same for a ready-made insert of one document (without ``_id``: the server adds it),
into an empty collection of its own each round. Each floor is printed with what the
two clients spend above it, and the ratio of those: the clients' own work.

Run: python benchmarks/bench_cpu.py [--rounds 9] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import socket
import statistics
import struct
import time
from typing import Any, Callable

import bson
import pymongo

import mongocore
from simulated import simulated

DOCUMENTS = 1000


def document(i: int) -> dict[str, Any]:
    """A small, ordinary document: a few scalars, a subdocument, an array."""
    return {
        "_id": i,
        "name": f"user{i}",
        "email": f"user{i}@example.com",
        "age": 20 + i % 50,
        "score": i * 1.5,
        "active": i % 2 == 0,
        "address": {"street": f"{i} Main St", "city": "Springfield", "zip": f"{i:05d}"},
        "tags": ["a", "b", "c"],
    }


def cpu_per_op(op: Callable[[], object], count: int) -> float:
    """CPU seconds of this process per call of ``op``, over ``count`` calls."""
    begin = time.process_time()
    for _ in range(count):
        op()
    return (time.process_time() - begin) / count


class Driver:
    """The four operations of one client, on the same collections."""

    def __init__(self, name: str, client: Any) -> None:
        self.name = name
        self.client = client
        self.admin = client.admin
        self.docs = client.bench.docs
        self.inserts = client.bench[f"inserts_{name}"]
        self.next_id = 0

    def ping(self) -> object:
        return self.admin.command("ping")

    def find_one(self) -> object:
        return self.docs.find_one({"_id": 500})

    def insert_one(self) -> object:
        self.next_id += 1
        return self.inserts.insert_one({"_id": self.next_id, "x": 1, "name": "bench"})

    def iterate_find(self) -> object:
        return list(self.docs.find({}))

    def reset_inserts(self) -> None:
        self.inserts.drop()
        self.next_id = 0


class RawCommand:
    """The floor: a socket sending a prebuilt OP_MSG, reading and decoding its reply."""

    HEADER = struct.Struct("<iiii")

    def __init__(self, uri: str, command: dict[str, Any]) -> None:
        host, _, port = uri.removeprefix("mongodb://").rstrip("/").rpartition(":")
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        body = bson.encode(command)
        self.message = self.HEADER.pack(21 + len(body), 1, 0, 2013) + bytes(5) + body

    def run(self) -> object:
        self.sock.sendall(self.message)
        data = self.sock.recv(65536)
        length = self.HEADER.unpack_from(data)[0]
        while len(data) < length:
            data += self.sock.recv(65536)
        return bson.decode(data[21:length])

    def close(self) -> None:
        self.sock.close()


FLOOR_INSERTS = "inserts_floor"


def floor_commands(uri: str) -> dict[str, RawCommand]:
    """The plain sockets timed beside two of the operations (method -> its floor)."""
    return {
        "ping": RawCommand(uri, {"ping": 1, "$db": "admin"}),
        "insert_one": RawCommand(
            uri,
            {"insert": FLOOR_INSERTS, "documents": [{"x": 1, "name": "bench"}], "$db": "bench"},
        ),
    }


OPERATIONS: list[tuple[str, str, int]] = [
    # label, method, calls per round
    ("ping", "ping", 2000),
    ("find_one by _id", "find_one", 1000),
    ("insert_one", "insert_one", 300),
    (f"iterate a find of {DOCUMENTS:,} documents", "iterate_find", 20),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the calls per round")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with simulated("--standalone") as uri:
        theirs: Any = pymongo.MongoClient(uri)
        ours: Any = mongocore.MongoClient(uri)
        theirs.bench.docs.drop()
        theirs.bench.docs.insert_many([document(i) for i in range(DOCUMENTS)])
        drivers = [Driver("mongocore", ours), Driver("pymongo", theirs)]
        for driver in drivers:  # warm up: connections, sessions, code paths
            for _, method, _ in OPERATIONS:
                getattr(driver, method)()
        raws = floor_commands(uri)
        floors = dict.fromkeys(raws, float("inf"))
        rows = []
        for label, method, calls in OPERATIONS:
            count = max(1, int(calls * args.scale))
            best = {d.name: float("inf") for d in drivers}
            round_ratios = []
            for _ in range(args.rounds):
                if method in raws:
                    theirs.bench[FLOOR_INSERTS].drop()  # (the ping's floor writes nothing)
                    floors[method] = min(floors[method], cpu_per_op(raws[method].run, count))
                this_round = {}
                for driver in drivers:
                    # Each round inserts into an empty collection: the simulator's
                    # inserts slow down as a collection grows, and a client waiting
                    # longer for its reply spends more CPU waking up.
                    driver.reset_inserts()
                    this_round[driver.name] = cpu_per_op(getattr(driver, method), count)
                    best[driver.name] = min(best[driver.name], this_round[driver.name])
                round_ratios.append(this_round["mongocore"] / this_round["pymongo"])
            rows.append(
                (label, best["mongocore"], best["pymongo"], statistics.median(round_ratios))
            )
        for driver in drivers:
            driver.reset_inserts()
        theirs.bench[FLOOR_INSERTS].drop()
        for raw in raws.values():
            raw.close()
        ours.close()
        theirs.close()
    print(
        f"python {platform.python_version()}, pymongo {pymongo.version} "
        f"(C extensions: {pymongo.has_c()}), mongocore {mongocore.__version__}, "
        f"best of {args.rounds} rounds"
    )
    if args.markdown:
        print(
            "| operation | mongocore µs CPU | pymongo µs CPU | ratio of the best"
            " | median of the rounds' ratios |"
        )
        print("| --- | ---: | ---: | ---: | ---: |")
    for label, mine, other, median in rows:
        if args.markdown:
            print(
                f"| {label} | {mine * 1e6:.0f} | {other * 1e6:.0f} | {mine / other:.2f}"
                f" | {median:.2f} |"
            )
        else:
            print(
                f"{label:36s} mongocore {mine * 1e6:8.1f} µs   pymongo {other * 1e6:8.1f} µs"
                f"   ratio {mine / other:.2f}   median of rounds {median:.2f}"
            )
    by_method = {method: row for (_, method, _), row in zip(OPERATIONS, rows)}
    for method, floor in floors.items():
        label, mine, other, _ = by_method[method]
        print(
            f"the floor of {label}: a plain socket's ready-made command costs"
            f" {floor * 1e6:.1f} µs CPU (best round); above it: mongocore"
            f" {(mine - floor) * 1e6:.1f} µs, pymongo {(other - floor) * 1e6:.1f} µs,"
            f" ratio {(mine - floor) / (other - floor):.2f}"
        )


if __name__ == "__main__":
    main()
