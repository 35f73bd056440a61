"""Fail points meet the commands a test aims them at, not a monitor's first hellos.

A client's monitors reach their steady state within milliseconds of their first
check: the server's monitor waits in an awaitable hello (the streaming protocol) and
its round-trip-time monitor holds an open connection. On a loaded machine the test's
own operations may run first, and a fail point on ``hello`` configured then meets the
monitors' first hellos rather than the command the test aims it at. (Seen in a
transactions test: a targetedFailPoint failing the next seven inserts and hellos,
then an insert that must fail. The monitor's awaitable hello, sent late, met the fail
point; the monitor marked the mongos Unknown and checked it again until the seven
were used up; the insert, waiting for its pinned mongos, then succeeded.)

So before configuring a fail point the runner waits, up to SETTLE_TIMEOUT, until
every monitor of the test's open clients whose server streams is waiting in an
awaitable hello on that server (the simulated process says so) and its RTT monitor
is connected. Monitors of servers that are Unknown or do not stream are not waited
for: nothing can make them steady, and the tests that fail their hellos mean them to.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from mongocore.core.description.types import ServerType
from tests.spec.unified.entities import ClientEntity

#: Seconds: a generous bound (monitors get there in milliseconds); past it the test
#: goes on as it would have without waiting.
SETTLE_TIMEOUT = 5.0
#: Seconds between looks at the client's side (its RTT connection), which notifies
#: nothing; the server's side notifies its condition.
_POLL = 0.01


def settle_monitoring(clients: Iterable[ClientEntity], processes: Sequence[Any]) -> None:
    """Wait until the streaming monitors of ``clients`` are steady (see the module)."""
    by_address = {tuple(process.address): process for process in processes}
    deadline = time.monotonic() + SETTLE_TIMEOUT
    for entity in clients:
        if entity.closed:
            continue
        topology = entity.client.topology
        for address in list(topology.description.servers):
            server = topology.get_server(address)
            process = by_address.get((address.host, address.port))
            if server is None or server.monitor is None or process is None:
                continue
            _wait_until_steady(server.monitor, process, deadline)


def _wait_until_steady(monitor: Any, process: Any, deadline: float) -> None:
    with process.cond:
        while not _steady_locked(monitor, process):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            process.cond.wait(min(remaining, _POLL))


def _steady_locked(monitor: Any, process: Any) -> bool:
    """Whether ``monitor`` waits in an awaitable hello on ``process`` with its RTT
    monitor connected, or has no steady state to reach (the process's lock is held)."""
    description = monitor._description
    if (
        not monitor.streaming
        or description.type is ServerType.UNKNOWN
        or description.topology_version is None
    ):
        return True
    connection = monitor._slot.connection
    rtt = monitor._rtt_monitor
    return (
        connection is not None
        and connection.server_connection_id in process.awaiting_hellos
        and rtt is not None
        and rtt._slot.connection is not None
    )
