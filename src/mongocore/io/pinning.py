"""Connection pinning in load-balanced mode (Load Balancer spec, "Connection Pinning"
and "Behaviour With Cursors").

Behind a load balancer every connection may reach a different mongos, and a cursor
lives on one of them: its getMore and killCursors must go over the connection that
opened it. A :class:`PinnedConnection` keeps that connection out of the pool for as
long as something holds it, a cursor (until it is exhausted or closed) or a
transaction (until it ends), and checks it back in when the last holder lets go. One
connection may be held by both: a cursor opened inside a transaction runs on the
transaction's connection, which then stays out until both are done.

The pool learns how many connections each kind of holder keeps, for the message of
its WaitQueueTimeoutError ("connections in use by cursors: ...").

When the executor pins: :func:`pin_cursor` after a command that left a cursor open,
:func:`pin_transaction` on a transaction's first command ("Behaviour With
Transactions").
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from mongocore.core.address import Address
from mongocore.core.description.types import ServerType
from mongocore.core.transaction_state import END_COMMANDS

if TYPE_CHECKING:
    from mongocore.core.description.server import ServerDescription
    from mongocore.core.transaction_state import Transaction
    from mongocore.io.connection import Connection
    from mongocore.io.operation import Operation
    from mongocore.io.pool import Pool

__all__ = [
    "CURSOR",
    "TRANSACTION",
    "PinnedConnection",
    "cursor_id_of",
    "pin_cursor",
    "pin_transaction",
]

#: The holders of a pinned connection.
CURSOR = "cursor"
TRANSACTION = "transaction"


class PinnedConnection:
    """A checked-out connection held by cursors and transactions; back in the pool
    when the last of them releases it (thread-safe)."""

    def __init__(self, pool: Pool[Connection], connection: Connection) -> None:
        self._pool = pool
        self._connection = connection
        self._lock = threading.Lock()
        self._holders: Counter[str] = Counter()
        self._checked_in = False

    @property
    def connection(self) -> Connection:
        return self._connection

    @property
    def address(self) -> Address:
        return self._connection.address

    @property
    def checked_in(self) -> bool:
        """True once the connection went back to the pool (nothing may use it then)."""
        return self._checked_in

    def holders(self, kind: str) -> int:
        with self._lock:
            return self._holders[kind]

    def hold(self, kind: str) -> None:
        """One more holder of ``kind`` (CURSOR or TRANSACTION)."""
        with self._lock:
            if self._checked_in:
                raise RuntimeError("the pinned connection was already checked in")
            self._holders[kind] += 1
        self._pool.note_pinned(kind, 1)

    def release(self, kind: str) -> None:
        """One holder of ``kind`` is done; the last one checks the connection in (a
        connection closed meanwhile, by a network error, is discarded by the pool).
        Releasing a kind that holds nothing does nothing, so a release may repeat."""
        with self._lock:
            if self._holders[kind] <= 0:
                return
            self._holders[kind] -= 1
            last = sum(self._holders.values()) == 0
            if last:
                self._checked_in = True
        self._pool.note_pinned(kind, -1)
        if last:
            self._pool.check_in(self._connection)

    def __repr__(self) -> str:
        held = ", ".join(f"{k}={n}" for k, n in sorted(self._holders.items()) if n)
        return f"<PinnedConnection {self._connection.id} to {self.address} ({held or 'free'})>"


def cursor_id_of(reply: Mapping[str, Any]) -> int:
    """The id of the cursor a reply opened (0: none, or exhausted)."""
    cursor = reply.get("cursor")
    value = cursor.get("id") if isinstance(cursor, Mapping) else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def pin_cursor(
    op: Operation,
    sd: ServerDescription,
    pool: Any,
    connection: Connection,
    reply: Mapping[str, Any],
    *,
    held: Optional[PinnedConnection] = None,
) -> Optional[PinnedConnection]:
    """Behind a load balancer, a command that opened a cursor keeps its connection
    for the cursor's getMore and killCursors (Load Balancer spec, "Behaviour With
    Cursors"); elsewhere the connection goes back to the pool at once. ``held``: the
    connection of the transaction the command ran in, which the cursor shares."""
    if not op.opens_cursor or sd.type is not ServerType.LOAD_BALANCER:
        return None
    if cursor_id_of(reply) == 0:
        return None
    pinned = held if held is not None else PinnedConnection(pool, connection)
    pinned.hold(CURSOR)
    return pinned


def pin_transaction(
    op: Operation,
    transaction: Optional[Transaction],
    sd: ServerDescription,
    pool: Any,
    connection: Connection,
) -> Optional[PinnedConnection]:
    """Behind a load balancer a transaction keeps the connection of its first command
    for all the others (Load Balancer spec, "Behaviour With Transactions"), and lets
    it go by the Transactions spec's "When to unpin". A commit or abort that finds
    nothing pinned (a retry after an unpinning error) pins nothing."""
    if transaction is None or sd.type is not ServerType.LOAD_BALANCER or op.name in END_COMMANDS:
        return None
    held = PinnedConnection(pool, connection)
    held.hold(TRANSACTION)
    transaction.pin(connection.address)
    op.session._pin_connection(held)
    return held
