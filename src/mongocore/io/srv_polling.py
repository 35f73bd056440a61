"""SRV polling: a ``mongodb+srv://`` client follows the SRV records of its mongoses.

Spec: Polling SRV Records for mongos Discovery, "Implementation" (when to rescan, the
host list after a rescan, srvMaxHosts) and "Multi-Threaded Drivers" (the polling
thread). The pure rules are :func:`updated_srv_hosts` and :func:`rescan_srv_interval`;
the I/O shell is the :class:`SrvPoller` thread. Initial discovery, which gives the
poller its first host list and TTL, is :mod:`mongocore.io.srv`.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Protocol

from mongocore.core.address import Address
from mongocore.core.description.types import TopologyType
from mongocore.io.dns_resolver import Resolver, lookup_srv
from mongocore.io.srv import (
    Shuffler,
    normalize_host,
    srv_domain_name,
    srv_query_name,
    verified_hosts,
)

__all__ = [
    "MIN_RESCAN_SRV_INTERVAL",
    "SRV_POLLING_TOPOLOGY_TYPES",
    "IntervalSource",
    "SrvPoller",
    "TopologyView",
    "rescan_srv_interval",
    "updated_srv_hosts",
]

_log = logging.getLogger("mongocore.srv")

#: Polling: "rescanSRVIntervalMS ... MUST NOT be lower than 60 seconds" (seconds here).
MIN_RESCAN_SRV_INTERVAL = 60.0

#: Polling: "only available when ... the TopologyType is Sharded, or Unknown".
SRV_POLLING_TOPOLOGY_TYPES: frozenset[TopologyType] = frozenset(
    {TopologyType.SHARDED, TopologyType.UNKNOWN}
)


def updated_srv_hosts(
    current: Sequence[Address],
    resolved: Sequence[Address],
    srv_max_hosts: int,
    rng: Shuffler,
) -> list[Address]:
    """The host list after a rescan (Polling, "Implementation").

    ``resolved`` are the verified hosts of the rescan (not empty: an empty rescan
    leaves the topology alone). Hosts of ``current`` that are still resolved are
    kept, in their order and unchanged; the others are removed. New hosts are all
    added when srvMaxHosts is 0 or not below the number of resolved hosts; otherwise
    new hosts are chosen at random, with the same shuffle as initial discovery, until
    there are srvMaxHosts hosts (kept hosts are never dropped to make room).
    """
    resolved_set = set(resolved)
    kept = [address for address in current if address in resolved_set]
    kept_set = set(kept)
    new = [address for address in resolved if address not in kept_set]
    if srv_max_hosts <= 0 or srv_max_hosts >= len(resolved):
        return kept + new
    rng.shuffle(new)
    return kept + new[: max(0, srv_max_hosts - len(kept))]


def rescan_srv_interval(
    min_ttl: Optional[float], *, succeeded: bool, heartbeat_frequency_ms: int
) -> float:
    """rescanSRVIntervalMS, in seconds (Polling, "Implementation").

    After a rescan with at least one verified host: the lowest TTL of its records, but
    not below 60 seconds, and 60 seconds when the TTL is unknown. After a failed or
    empty rescan: heartbeatFrequencyMS, until a rescan succeeds again.
    """
    if not succeeded:
        return heartbeat_frequency_ms / 1000.0
    if min_ttl is None:
        return MIN_RESCAN_SRV_INTERVAL
    return max(float(min_ttl), MIN_RESCAN_SRV_INTERVAL)


class TopologyView(Protocol):
    """What the poller reads from the topology: its type and its servers' addresses.
    A TopologyDescription is one."""

    @property
    def type(self) -> TopologyType: ...

    @property
    def servers(self) -> Mapping[Address, Any]: ...


#: (lowest TTL of the last rescan or None, whether it found verified hosts) -> seconds.
IntervalSource = Callable[[Optional[float], bool], float]


class SrvPoller:
    """The SRV polling thread of a ``mongodb+srv://`` client (Polling, "Multi-Threaded
    Drivers").

    Every rescanSRVIntervalMS, counted from the end of the previous lookup (the first
    from the end of initial discovery, whose TTL is ``initial_ttl``), while the
    topology is Sharded or Unknown, it queries the SRV records again, drops (and
    logs) targets outside the SRV host's domain, and computes the new host list with
    :func:`updated_srv_hosts` from the topology's current servers. When that list
    differs from the current servers it calls ``on_hosts(new_hosts)`` on this
    thread; applying it to the topology is the caller's work. A failed lookup or one
    with no verified host changes nothing; it is logged on ``mongocore.srv`` and the
    next rescan comes after heartbeatFrequencyMS.

    SDAM never turns a topology of another type back into Sharded or Unknown, so the
    thread ends once it sees one. ``interval`` replaces :func:`rescan_srv_interval`.
    """

    THREAD_NAME = "mongocore-srv-poller"

    def __init__(
        self,
        srv_host: str,
        *,
        resolver: Resolver,
        on_hosts: Callable[[list[Address]], None],
        description: Callable[[], TopologyView],
        service_name: str = "mongodb",
        srv_max_hosts: int = 0,
        heartbeat_frequency_ms: int,
        initial_ttl: Optional[float] = None,
        interval: Optional[IntervalSource] = None,
        rng: Shuffler = random,
    ) -> None:
        self._srv_host = normalize_host(srv_host)
        self._query = srv_query_name(self._srv_host, service_name)
        self._resolver = resolver
        self._on_hosts = on_hosts
        self._description = description
        self._srv_max_hosts = srv_max_hosts
        self._initial_ttl = initial_ttl
        if interval is None:

            def interval(min_ttl: Optional[float], succeeded: bool) -> float:
                return rescan_srv_interval(
                    min_ttl, succeeded=succeeded, heartbeat_frequency_ms=heartbeat_frequency_ms
                )

        self._interval: IntervalSource = interval
        self._rng = rng
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """Start the thread (once; a closed poller does not start again)."""
        with self._lock:
            if self._thread is not None or self._stopped.is_set():
                return
            self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the thread and join it. A lookup in progress is not interrupted: the
        join waits for it (at most the resolver's timeout)."""
        self._stopped.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    @property
    def is_alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def rescan(self) -> Optional[float]:
        """One rescan, now, on the calling thread: what the thread does each time.

        Returns the seconds until the next rescan, or None when the topology type
        no longer allows polling.
        """
        view = self._description()
        if view.type not in SRV_POLLING_TOPOLOGY_TYPES:
            _log.debug("SRV polling of %s stops: the topology is %s", self._query, view.type)
            return None
        try:
            records, min_ttl = lookup_srv(self._resolver, self._query)
        except Exception as exc:  # any resolver failure leaves the topology alone
            _log.warning(
                "SRV rescan of %s failed; the host list is unchanged: %s", self._query, exc
            )
            return self._interval(None, False)
        valid, rejected = verified_hosts(self._srv_host, records)
        for host in rejected:
            _log.warning(
                "SRV rescan of %s: ignoring %r, which is not in the domain %r",
                self._query,
                host,
                srv_domain_name(self._srv_host),
            )
        if not valid:
            _log.warning(
                "SRV rescan of %s found no %shosts; the host list is unchanged",
                self._query,
                "valid " if rejected else "",
            )
            return self._interval(None, False)
        current = list(view.servers)
        new_hosts = updated_srv_hosts(current, valid, self._srv_max_hosts, self._rng)
        if set(new_hosts) != set(current) and not self._stopped.is_set():
            _log.info("SRV rescan of %s: hosts are now %s", self._query, new_hosts)
            self._on_hosts(new_hosts)
        return self._interval(min_ttl, True)

    def _run(self) -> None:
        wait: Optional[float] = self._interval(self._initial_ttl, True)
        while wait is not None and not self._stopped.wait(wait):
            try:
                wait = self.rescan()
            except Exception:  # e.g. in on_hosts: log it, keep polling
                _log.exception("SRV rescan of %s failed", self._query)
                wait = self._interval(None, False)
