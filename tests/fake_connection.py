"""A pool connection that does no I/O, for the pool's unit tests and the CMAP runner."""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass(eq=False)
class FakeConnection:
    """All a pool needs of a connection (``PoolConnection``); ``close`` records why."""

    id: int
    generation: int
    service_id: Optional[object] = None
    last_checkin_time: float = 0.0
    closed: bool = False
    close_reasons: list[str] = dataclasses.field(default_factory=list)

    def close(self, reason: str) -> None:
        self.closed = True
        self.close_reasons.append(reason)
