"""A simulated standalone mongod: one process, no replica set, no cluster time."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Optional

from mongocore.sim.member import PRIMARY, Member, MemberConfig
from mongocore.sim.replset import _checked_hostname
from mongocore.sim.security import Security, User
from mongocore.sim.store import DataStore, OpTime
from mongocore.sim.ttl_monitor import TTLMonitor

__all__ = ["Standalone"]


class Standalone:
    """One mongod on 127.0.0.1 (``port=0`` picks a free port). A context manager.

    ``tls`` (a server ``ssl.SSLContext``), ``tls_mode``, ``users`` and ``compressors``
    configure its security (see :class:`~mongocore.sim.security.Security`);
    ``hostname`` is the name it advertises with its port (``"localhost"``).
    """

    is_replica_set = False
    transactions = None  # transactions need a replica set

    def __init__(
        self,
        *,
        port: int = 0,
        clock: Callable[[], float] = time.time,
        tls: Optional[ssl.SSLContext] = None,
        tls_mode: str = "requireTLS",
        users: Sequence[User] = (),
        compressors: Sequence[str] = (),
        hostname: Optional[str] = None,
    ) -> None:
        #: The name the server advertises with its port ("localhost"); None: 127.0.0.1.
        self.hostname = _checked_hostname(hostname)
        self.cond = threading.Condition(threading.RLock())
        self.stopping = False
        self._clock = clock
        self.security = Security(tls=tls, tls_mode=tls_mode, users=users, compressors=compressors)
        self.store = DataStore(clock)
        #: Deletes what TTL indexes expire (sim/ttl_monitor.py).
        self.ttl_monitor = TTLMonitor(clock)
        self.member = Member(self, 0, MemberConfig(port=port), "standalone")
        self.member.role = PRIMARY
        self._started = False

    def clock(self) -> float:
        return self._clock()

    def decorate(self, reply: dict[str, Any], optime: Optional[OpTime] = None) -> None:
        # A standalone has no cluster time: its replies carry neither field.
        return

    def data_bearing_count(self) -> int:
        return 1

    def replica_set_hello(self, member: Member) -> dict[str, Any]:
        return {}

    def last_write(self, member: Member) -> Optional[dict[str, Any]]:
        return None

    @property
    def members(self) -> list[Member]:
        return [self.member]

    @property
    def primary(self) -> Member:
        return self.member

    @property
    def uri(self) -> str:
        return f"mongodb://{self.member.host}/"

    def start(self) -> Standalone:
        with self.cond:
            if not self._started:
                self._started = True
                self.member._start_listening()
        return self

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.member._stop()

    def kill(self) -> None:
        with self.cond:
            self.member._go_down()

    def restart(self) -> None:
        with self.cond:
            self.member._come_up()

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout)

    def __enter__(self) -> Standalone:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
