"""A simulated load balancer in front of several mongos routers.

A real load balancer forwards each TCP connection it accepts to one of its backends
and keeps it there for the connection's life; the driver sees one address, and
learns from each connection's hello (its ``serviceId``) which mongos it reached.
:class:`Balancer` does the same in-process: its own listener hands every connection,
round robin, to one backend :class:`~mongocore.sim.sharded.Mongos`, whose message
handler then serves it as if the client had connected to it directly. Fail points
set over a connection therefore act on that connection's mongos only, and a pool
cleared for one ``serviceId`` keeps the connections to the others, as the Load
Balancer spec's tests expect of a deployment with several mongoses.

A connection whose mongos is down (killed, or partitioned away) is closed.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from mongocore.core.wire import Message, MsgHeader
from mongocore.sim.codes import CloseConnection
from mongocore.sim.security import Security
from mongocore.sim.server import Connection, WireServer

if TYPE_CHECKING:
    from mongocore.sim.sharded import Mongos

__all__ = ["Balancer"]

#: How many connections the balancer remembers before it forgets the closed ones.
_PRUNE_AT = 256


class Balancer:
    """One address in front of ``backends``: each new connection goes to the next one."""

    def __init__(self, label: str, backends: Sequence[Mongos], security: Security) -> None:
        if not backends:
            raise ValueError("a load balancer needs at least one mongos behind it")
        self.backends = list(backends)
        self._lock = threading.Lock()
        self._turn = itertools.cycle(range(len(self.backends)))
        self._assigned: dict[int, Mongos] = {}
        self.server = WireServer(
            label,
            self._handle,
            ssl_context=security.tls,
            tls_optional=security.tls_optional,
            compressors=security.compressors,
        )

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``: the one address clients connect to."""
        return f"{self.server.host}:{self.server.port}"

    def backend_of(self, connection_id: int) -> Mongos:
        """The mongos a connection (by the balancer's connection id) was sent to."""
        with self._lock:
            return self._assigned[connection_id]

    def _handle(self, conn: Connection, header: MsgHeader, message: Message) -> Iterator[bytes]:
        with self._lock:
            backend = self._assigned.get(conn.id)
            if backend is None:
                if len(self._assigned) >= _PRUNE_AT:
                    # Forget connections that have closed since.
                    self._assigned = {
                        cid: b
                        for cid, b in self._assigned.items()
                        if self.server.connection(cid) is not None
                    }
                backend = self.backends[next(self._turn)]
                self._assigned[conn.id] = backend
        if not backend.reachable:
            raise CloseConnection
        yield from backend._handle(conn, header, message)

    def start(self) -> None:
        self.server.open_listener()

    def stop(self) -> None:
        self.server.stop()
