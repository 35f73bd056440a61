"""The pure core against pymongo's own description and selector code, side by side.

Scenarios, on replica sets of 3 and 50 members:
- select the primary (a write, or mode primary);
- select nearest with a tag set;
- apply one secondary's hello: parse it into a server description and apply it
  to the topology description.

Both libraries run in the same process, each timed as the best of several
repeats, the repeats alternating between the two. Selection is timed "warm" (the
same description, as for every operation between two heartbeats) and "cold" (the
first selection on a new description). Ratios are mongocore / pymongo: below 1
means mongocore is faster.

Run: python benchmarks/bench_core.py [--markdown]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import random
import sys
import time
from typing import Any, Callable

import pymongo
from bson import ObjectId
from pymongo.hello import Hello
from pymongo.read_preferences import Nearest
from pymongo.read_preferences import Primary as PyPrimary
from pymongo.server_description import ServerDescription as PyServerDescription
from pymongo.topology_description import TOPOLOGY_TYPE, updated_topology_description
from pymongo.topology_description import TopologyDescription as PyTopologyDescription

try:  # pymongo >= 4.9 keeps the synchronous settings here
    from pymongo.synchronous.settings import TopologySettings as PyTopologySettings
except ImportError:  # pragma: no cover
    from pymongo.settings import TopologySettings as PyTopologySettings  # type: ignore

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.core.selection.selectors import select_server

NOW = datetime.datetime(2026, 1, 1)


def hello(i: int, n: int, primary: int = 0) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "ok": 1,
        "isWritablePrimary": i == primary,
        "secondary": i != primary,
        "setName": "rs",
        "setVersion": 1,
        "hosts": [f"h{j}:27017" for j in range(n)],
        "me": f"h{i}:27017",
        "primary": f"h{primary}:27017",
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "lastWrite": {"lastWriteDate": NOW},
        "logicalSessionTimeoutMinutes": 30,
        "tags": {"dc": "ny" if i % 2 else "sf", "rack": str(i % 5)},
        "topologyVersion": {"processId": ObjectId("6" * 24), "counter": i},
    }
    if i == primary:
        reply["electionId"] = ObjectId("7fffffff0000000000000001")
    return reply


def rtt(i: int) -> float:
    return 0.001 + (i % 7) * 0.004


def build_mongocore(n: int) -> TopologyDescription:
    seeds = tuple(Address(f"h{i}", 27017) for i in range(n))
    td = TopologyDescription.initial(TopologySettings(seeds=seeds, replica_set="rs"))
    for i in range(n):
        sd = ServerDescription.from_hello(seeds[i], hello(i, n), rtt(i), last_update_time=1.0)
        td = apply(td, sd).description
    return td


def build_pymongo(n: int) -> PyTopologyDescription:
    seeds = [(f"h{i}", 27017) for i in range(n)]
    settings = PyTopologySettings(seeds=seeds, replica_set_name="rs")
    td = PyTopologyDescription(
        TOPOLOGY_TYPE.ReplicaSetNoPrimary,
        {address: PyServerDescription(address) for address in seeds},
        "rs",
        None,
        None,
        settings,
    )
    for i in range(n):
        sd = PyServerDescription(seeds[i], Hello(hello(i, n)), rtt(i))
        td = updated_topology_description(td, sd)
    return td


REPEAT = 7


def best_per_call(fn: Callable[[], object], number: int, repeat: int = REPEAT) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def run(number: int) -> list[tuple[str, float, float]]:
    rng = random.Random(1)
    results: list[tuple[str, float, float]] = []
    for n in (3, 50):
        results.extend(run_size(n, number if n == 3 else max(number // 10, 100), rng))
    return results


def run_size(n: int, count: int, rng: random.Random) -> list[tuple[str, float, float]]:
    results = []
    ours, theirs = build_mongocore(n), build_pymongo(n)
    assert ours.primary is not None and ours.primary.address.host == "h0"
    primary, nearest = ReadPreference(), ReadPreference(Mode.NEAREST, [{"dc": "ny"}])
    py_primary, py_nearest = PyPrimary(), Nearest(tag_sets=[{"dc": "ny"}])

    def py_select(selector: Any, td: PyTopologyDescription = theirs) -> Any:
        # pymongo's description and selector code: the servers in the window,
        # then a random pick among them.
        return rng.choice(td.apply_selector(selector))

    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        (
            f"select primary, {n} members (warm)",
            lambda: select_server(ours, primary, rng),
            lambda: py_select(py_primary),
        ),
        (
            f"select nearest+tags, {n} members (warm)",
            lambda: select_server(ours, nearest, rng),
            lambda: py_select(py_nearest),
        ),
    ]
    address = Address("h1", 27017)
    reply = hello(1, n)
    py_reply_address = ("h1", 27017)

    def ours_apply(td: TopologyDescription = ours) -> TopologyDescription:
        sd = ServerDescription.from_hello(address, reply, 0.005, last_update_time=2.0)
        return apply(td, sd).description

    def theirs_apply(td: PyTopologyDescription = theirs) -> PyTopologyDescription:
        sd = PyServerDescription(py_reply_address, Hello(reply), 0.005)
        return updated_topology_description(td, sd)

    cases.append((f"apply a secondary's hello, {n} members", ours_apply, theirs_apply))

    # Cold: a new description (one secondary's heartbeat applied), then one selection.
    def ours_cold(rp: ReadPreference) -> object:
        return select_server(ours_apply(), rp, rng)

    def theirs_cold(selector: Any) -> object:
        return py_select(selector, theirs_apply())

    cases.append(
        (
            f"apply + select nearest+tags, {n} members (cold)",
            lambda: ours_cold(nearest),
            lambda: theirs_cold(py_nearest),
        )
    )
    for name, ours_fn, theirs_fn in cases:
        # Repeats alternate between the libraries, so that both see the same load.
        ours_time = theirs_time = float("inf")
        for _ in range(REPEAT):
            ours_time = min(ours_time, best_per_call(ours_fn, count, repeat=1))
            theirs_time = min(theirs_time, best_per_call(theirs_fn, count, repeat=1))
        results.append((name, ours_time, theirs_time))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="calls per repeat")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    results = run(args.number)
    print(
        f"python {platform.python_version()}, pymongo {pymongo.version}, "
        f"{platform.machine()}, best of 7 repeats"
    )
    if args.markdown:
        print("| scenario | mongocore µs | pymongo µs | ratio |")
        print("| --- | ---: | ---: | ---: |")
        for name, ours, theirs in results:
            print(f"| {name} | {ours * 1e6:.2f} | {theirs * 1e6:.2f} | {ours / theirs:.2f} |")
    else:
        for name, ours, theirs in results:
            print(
                f"{name:50s} mongocore {ours * 1e6:8.2f} µs  pymongo {theirs * 1e6:8.2f} µs  "
                f"ratio {ours / theirs:.2f}"
            )
    worst = max(ours / theirs for _, ours, theirs in results)
    print(f"worst ratio {worst:.2f} (target: at most 0.50)")
    sys.exit(0)


if __name__ == "__main__":
    main()
