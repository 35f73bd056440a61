"""What the shell keeps for server selection: the RTT averager the monitor threads
share, and the facts and latency windows of the current description
(:mod:`mongocore.io.selection_cache`), computed once per description and never
written onto it."""

from __future__ import annotations

import random
import threading

import pytest

from mongocore.core.selection.read_preference import (
    NEAREST,
    PRIMARY,
    SECONDARY,
    Mode,
    ReadPreference,
)
from mongocore.core.selection.rtt import RoundTripTime
from mongocore.core.selection.selectors import SelectionFacts, choose, latency_window
from mongocore.io.rtt_monitor import RoundTripTimeAverager
from mongocore.io.selection_cache import MAX_CACHED_WINDOWS, SelectionCache
from tests.unit.test_selection import addr, replica_set


def test_rtt_averager_is_shared_by_threads() -> None:
    averager = RoundTripTimeAverager()

    def feed() -> None:
        for _ in range(200):
            averager.add(0.005)

    threads = [threading.Thread(target=feed) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert averager.average == pytest.approx(0.005)
    assert averager.minimum == 0.005
    averager.reset()
    assert averager.average is None and averager.value == RoundTripTime()


def test_the_shell_computes_a_window_once_per_description() -> None:
    td = replica_set()
    cache = SelectionCache(td)
    assert cache.windows == {}
    first = cache.window(NEAREST)
    assert choose(first, random.Random(1)) is not None
    cached = dict(cache.windows)
    assert len(cached) == 1
    for _ in range(20):
        # An equal read preference reuses the entry, the same tuple, instead of adding one.
        assert cache.window(ReadPreference("nearest")) is first
    assert cache.windows.keys() == cached.keys()
    # A new description starts afresh.
    assert SelectionCache(replica_set()).windows == {}


def test_the_shell_keeps_at_most_so_many_windows() -> None:
    td = replica_set()
    cache = SelectionCache(td)
    for i in range(MAX_CACHED_WINDOWS + 5):
        rp = ReadPreference(Mode.NEAREST, [{"dc": str(i)}, {}])
        assert cache.window(rp) == latency_window(SelectionFacts(td), rp)
    assert len(cache.windows) == MAX_CACHED_WINDOWS


def test_primary_reads_and_writes_share_one_window() -> None:
    """Mode primary selects what a write selects: one cache entry serves both, and
    it never serves another mode (a key of None for every mode would hand a
    secondary read the primary)."""
    td = replica_set()
    cache = SelectionCache(td)
    assert cache.window(PRIMARY) == (td.servers[addr("p")],)
    entries = dict(cache.windows)
    assert list(entries) == [None]
    assert cache.window(None) == (td.servers[addr("p")],)
    assert cache.window(ReadPreference("primary")) == (td.servers[addr("p")],)
    assert cache.windows == entries
    secondary = choose(cache.window(SECONDARY), random.Random(1))
    assert secondary is not None and secondary.address in {addr("s1"), addr("s2")}
    assert SECONDARY in cache.windows
