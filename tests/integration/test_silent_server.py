"""No operation hangs on a server that stops answering.

Specs: server-monitoring.md, "Network or command error during server check" (a check
that fails with a network timeout clears the pool with interruptInUseConnections:
true), connection-monitoring-and-pooling.md, "Clearing a connection pool" (the
connections checked out then are closed, and their operations fail with a network
error that follows the retry rules). Closing the client closes the connections in
use too: an operation in flight ends with an error instead of outliving the client,
even on a server that left the topology meanwhile (its pool was closed then, its
in-use connections left alone, as the spec closes a removed server's pool).

Every wait is bounded by a generous deadline; nothing here measures time.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from mongocore.api.client import Client
from mongocore.core.address import Address
from mongocore.core.events import (
    ConnectionPoolListener,
    PoolClearedEvent,
    ServerClosedEvent,
    ServerListener,
)
from mongocore.core.wire.legacy import OpQuery
from mongocore.core.wire.op_msg import OpMsg
from mongocore.errors import ConnectionFailure, InvalidOperation
from mongocore.sim import ReplicaSet
from tests.integration.mock_servers import Background, WirePeer, WireServer, hello_reply

#: Bounds a failing test only (a hang is what these tests catch).
DEADLINE = 30.0
#: Defaults everywhere but the heartbeat and connect timeouts, which make the
#: monitor's check time out (connectTimeoutMS + heartbeatFrequencyMS) in seconds.
SHORT_CHECKS: dict[str, Any] = {"heartbeatFrequencyMS": 500, "connectTimeoutMS": 1000}


class PoolClears(ConnectionPoolListener):
    def __init__(self) -> None:
        self.events: queue.Queue[PoolClearedEvent] = queue.Queue()

    def pool_cleared(self, event: PoolClearedEvent) -> None:
        self.events.put(event)

    def wait_for_interrupting(self, address: Address) -> PoolClearedEvent:
        while True:
            event = self.events.get(timeout=DEADLINE)
            if event.address == address and event.interrupt_in_use_connections:
                return event


class ServerCloses(ServerListener):
    def __init__(self) -> None:
        self.addresses: queue.Queue[Address] = queue.Queue()

    def closed(self, event: ServerClosedEvent) -> None:
        self.addresses.put(event.address)

    def wait_for(self, address: Address) -> None:
        while self.addresses.get(timeout=DEADLINE) != address:
            pass


@pytest.mark.parametrize("retry_writes", [False, True], ids=["no-retry", "retryWrites"])
def test_a_write_in_flight_when_the_primary_goes_silent_returns(
    rs: ReplicaSet, retry_writes: bool
) -> None:
    """Catches a heartbeat timeout that clears the pool without interrupting the
    connections in use: the insert, blocked reading a reply the partitioned primary
    never sends (default socketTimeoutMS: none), would wait for ever, even after the
    monitor marked the server Unknown. With the interrupt it fails with a network
    error, or, with retryWrites, succeeds on the new primary."""
    clears = PoolClears()
    with Client(
        rs.uri, retryWrites=retry_writes, event_listeners=[clears], **SHORT_CHECKS
    ) as client:
        items = client["app"]["items"]
        items.insert_one({"_id": "warm-up"})
        old_primary = rs.primary
        assert old_primary is not None
        old_address = Address(*old_primary.address)
        old_primary.fail_command("insert", block_time_ms=120_000, mode={"times": 1})
        write = Background(lambda: items.insert_one({"_id": "x"}), name="silent-write")
        try:
            assert rs.wait_for(lambda: old_primary.blocked_operations == 1, DEADLINE)
            rs.partition(old_primary, mode="drop")
            if retry_writes:
                assert write.result(DEADLINE).inserted_id == "x"
            else:
                error = write.error(DEADLINE)
                assert isinstance(error, ConnectionFailure), repr(error)
            # The monitor's check timed out, and the clear interrupted the insert.
            cleared = clears.wait_for_interrupting(old_address)
            assert cleared.interrupt_in_use_connections is True
        finally:
            rs.heal(old_primary)
            with contextlib.suppress(BaseException):
                write.result(DEADLINE)  # joined whatever happened


def test_close_ends_a_write_blocked_on_a_member_that_left_the_set(rs: ReplicaSet) -> None:
    """Catches a Client.close() that interrupts only the pools of servers still in the
    topology: the insert, blocked on a primary that went silent, then stepped down and
    was removed from the set (its pool closed, the insert's connection left open, as
    the spec closes a removed server's pool), would outlive the client. The monitor's
    check of the silent member cannot time out first (connectTimeoutMS of two
    minutes), so only close() can end the insert, and it does, with a network error."""
    closes = ServerCloses()
    client = Client(
        rs.uri,
        retryWrites=False,
        heartbeatFrequencyMS=500,
        connectTimeoutMS=120_000,
        event_listeners=[closes],
    )
    old_primary = rs.primary
    assert old_primary is not None
    try:
        items = client["app"]["items"]
        items.insert_one({"_id": "warm-up"})
        old_address = Address(*old_primary.address)
        old_primary.fail_command("insert", block_time_ms=120_000, mode={"times": 1})
        write = Background(lambda: items.insert_one({"_id": "x"}), name="removed-write")
        assert rs.wait_for(lambda: old_primary.blocked_operations == 1, DEADLINE)
        rs.partition(old_primary, mode="drop")  # its replies are lost: it steps down
        rs.wait_for_primary(DEADLINE)
        rs.reconfig(remove=[old_primary])
        closes.wait_for(old_address)  # the client removed it, and closed its pool
        assert not write.done(), "the insert ended before close()"
    finally:
        client.close()
        rs.heal(old_primary)
    error = write.error(DEADLINE)
    assert isinstance(error, (ConnectionFailure, InvalidOperation)), repr(error)


def _silent_after_hellos(received: threading.Event) -> Callable[[WirePeer], None]:
    """A server that answers every hello, then never answers anything else."""

    def handler(peer: WirePeer) -> None:
        while True:
            header, message = peer.read()
            if isinstance(message, OpQuery):
                command = message.query
            elif isinstance(message, OpMsg):
                command = message.body
            else:
                return
            name = next(iter(command), "").lower()
            if name in ("hello", "ismaster"):
                peer.reply(header, hello_reply())
                continue
            received.set()
            peer.wait_closed()  # silent until the client hangs up
            return

    return handler


def test_close_ends_an_operation_blocked_on_a_silent_server(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    """Catches a Client.close() that closes pools but leaves in-use connections open
    until checked in: the command, blocked reading a reply that never comes (the
    monitor sees a healthy server), would outlive the client. It ends promptly with a
    network-class error (or InvalidOperation)."""
    received = threading.Event()
    server = wire_server_factory(_silent_after_hellos(received))
    client = Client(f"mongodb://{server.address}/?directConnection=true")
    try:
        command = Background(lambda: client.command("admin", {"ping": 1}), name="silent-ping")
        assert received.wait(DEADLINE), "the command never reached the server"
    finally:
        client.close()
    error = command.error(DEADLINE)
    assert isinstance(error, (ConnectionFailure, InvalidOperation)), repr(error)
