"""A client its owner drops without closing it is freed, threads and all, as pymongo's is.

pymongo's monitors hold their topology through a weak reference, so that a client
nobody references any more is collected and its threads end. mongocore's do too (and so
do the pools' background threads): once the client is unreachable and collected, the
topology's finalizer stops every monitor, RTT and pool thread, and each closes what it
held (its connections, its server's pool). A library that opens a client per test and
never closes it then piles up nothing.

Every wait is bounded by a generous deadline (a leak is what these tests catch);
nothing here measures time.
"""

from __future__ import annotations

import gc
import queue
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from mongocore.api.client import Client
from mongocore.core.events import ConnectionPoolListener, PoolClosedEvent
from mongocore.sim import LoadBalanced, Standalone

#: Bounds a failing test only.
DEADLINE = 30.0
#: The names of the client's threads (the others are the simulator's, serving them).
CLIENT_THREADS = ("mongocore-monitor-", "mongocore-rtt-", "mongocore-pool-")


class PoolCloses(ConnectionPoolListener):
    """Holds no client: the listener outlives the client it listens to."""

    def __init__(self) -> None:
        self.events: queue.Queue[PoolClosedEvent] = queue.Queue()

    def pool_closed(self, event: PoolClosedEvent) -> None:
        self.events.put(event)


@pytest.fixture(scope="module")
def standalone() -> Iterator[Standalone]:
    with Standalone() as server:
        yield server


def _dropped_client(uri: str, listener: PoolCloses, **options: Any) -> tuple[Any, list[Any]]:
    """Make a client, use it, and drop it without closing it: a weak reference to its
    topology, and the threads it started (the simulator's that serve it among them).

    A short heartbeat: the simulator ends the thread of a monitor's connection when its
    awaitable hello's wait (maxAwaitTimeMS, the heartbeat frequency) ends."""
    before = set(threading.enumerate())
    options.setdefault("heartbeatFrequencyMS", 500)
    client = Client(uri, event_listeners=[listener], **options)
    client.admin.command("ping")
    client["app"]["items"].find_one()
    threads = [
        t for t in threading.enumerate() if t not in before and t.name.startswith("mongocore-")
    ]
    return weakref.ref(client._topology), threads


def _assert_freed(topology: Any, threads: list[Any], listener: PoolCloses) -> None:
    gc.collect()
    assert topology() is None, "the topology of a dropped client is still referenced"
    for thread in threads:
        thread.join(DEADLINE)
    assert [t.name for t in threads if t.is_alive()] == []
    # The pool was closed on the way out, its connections with it.
    assert isinstance(listener.events.get(timeout=DEADLINE), PoolClosedEvent)


def test_a_dropped_client_is_freed_with_its_monitor_and_rtt_threads(
    standalone: Standalone,
) -> None:
    """Catches a monitor that holds its topology strongly: its thread (and the RTT
    thread, streaming) would keep the unreachable client alive, and run for ever."""
    listener = PoolCloses()
    topology, threads = _dropped_client(standalone.uri, listener)
    names = {t.name.split("-")[1] for t in threads}
    assert {"monitor", "rtt"} <= names, names  # what the test is about is running
    _assert_freed(topology, threads, listener)


def test_a_dropped_client_is_freed_with_its_pool_thread(standalone: Standalone) -> None:
    """minPoolSize: the pool's background thread must not keep the client alive
    either (it reaches the topology for establishment errors)."""
    listener = PoolCloses()
    topology, threads = _dropped_client(standalone.uri, listener, minPoolSize=1)
    assert any(t.name.startswith("mongocore-pool-") for t in threads)
    _assert_freed(topology, threads, listener)


def test_a_dropped_load_balanced_client_is_freed() -> None:
    """Behind a load balancer no monitor runs: the pool's background thread closes the
    pool itself once the topology is freed."""
    with LoadBalanced() as lb:
        listener = PoolCloses()
        topology, threads = _dropped_client(lb.uri, listener, minPoolSize=1)
        assert any(t.name.startswith("mongocore-pool-") for t in threads)
        _assert_freed(topology, threads, listener)


def test_thirty_dropped_clients_leave_no_thread(standalone: Standalone) -> None:
    """The issue's measure: 30 clients used and dropped unclosed, then one collection.
    With monitors holding their topologies strongly, each client left its monitor and
    RTT threads running (61 threads for 30 clients); now none is left."""
    listener = PoolCloses()
    topologies = []
    threads = []
    for _ in range(30):
        topology, started = _dropped_client(standalone.uri, listener)
        topologies.append(topology)
        threads += started
    # A monitor and an RTT thread per client: what the test is about ran.
    assert len([t for t in threads if t.name.startswith(CLIENT_THREADS)]) == 60
    gc.collect()
    assert [ref for ref in topologies if ref() is not None] == []
    for thread in threads:
        thread.join(DEADLINE)
    assert [t.name for t in threads if t.is_alive()] == []
    for _ in range(30):
        assert isinstance(listener.events.get(timeout=DEADLINE), PoolClosedEvent)
