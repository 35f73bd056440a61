"""The live Topology with fake monitors and pools: locking, selection loop, error effects."""

from __future__ import annotations

import threading
from typing import Any, Optional

import pytest
from bson import ObjectId

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.events import EventPublisher, ServerListener, TopologyListener
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import (
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    PoolClearedError,
    ServerSelectionTimeoutError,
)
from mongocore.io.topology import Topology

A, B, C = (Address(h, 27017) for h in "abc")


class FakeMonitor:
    def __init__(self, address: Address, log: list[tuple[str, Address]]) -> None:
        self.address = address
        self.log = log
        self.check_requested = threading.Event()

    def open(self) -> None:
        self.log.append(("open", self.address))

    def request_check(self) -> None:
        self.check_requested.set()

    def cancel_check(self) -> None:
        self.log.append(("cancel", self.address))

    def close(self) -> None:
        self.log.append(("close", self.address))


class FakePool:
    def __init__(self, address: Address, log: list[tuple[str, Address]]) -> None:
        self.address = address
        self.log = log
        self.generation = 0
        self.is_ready = False
        #: interrupt_in_use_connections of each clear(), in order.
        self.interrupts: list[bool] = []
        self.closed_interrupting: Optional[bool] = None

    def generation_for(self, service_id: Optional[object]) -> int:
        return self.generation

    def check_out(self, timeout: Optional[float] = None) -> Any:
        raise AssertionError("not used")

    def check_in(self, conn: Any) -> None:
        raise AssertionError("not used")

    def ready(self) -> None:
        self.is_ready = True

    def clear(
        self, service_id: Optional[object] = None, interrupt_in_use_connections: bool = False
    ) -> None:
        self.generation += 1
        self.is_ready = False
        self.interrupts.append(interrupt_in_use_connections)
        self.log.append(("clear", self.address))

    def close(self, interrupt_in_use_connections: bool = False) -> None:
        self.closed_interrupting = interrupt_in_use_connections
        self.log.append(("pool-close", self.address))


class Recorder(TopologyListener, ServerListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def opened(self, event: Any) -> None:
        self.names.append(type(event).__name__)

    def closed(self, event: Any) -> None:
        self.names.append(type(event).__name__)

    def description_changed(self, event: Any) -> None:
        self.names.append(type(event).__name__)


def make(seeds: tuple[Address, ...] = (A,), **kwargs: Any) -> tuple[Topology, dict[str, Any]]:
    log: list[tuple[str, Address]] = []
    monitors: dict[Address, FakeMonitor] = {}
    pools: dict[Address, FakePool] = {}
    recorder = Recorder()

    def new_monitor(address: Address, topology: Topology) -> FakeMonitor:
        monitors[address] = FakeMonitor(address, log)
        return monitors[address]

    def new_pool(address: Address) -> FakePool:
        pools[address] = FakePool(address, log)
        return pools[address]

    topology = Topology(
        TopologySettings(seeds=seeds, **kwargs),
        pool_factory=new_pool,
        monitor_factory=new_monitor,
        publisher=EventPublisher([recorder]),
    )
    topology.open()
    return topology, {"log": log, "monitors": monitors, "pools": pools, "events": recorder.names}


def primary(me: Address = A, hosts: tuple[Address, ...] = (A, B), **extra: Any) -> dict[str, Any]:
    reply = {
        "ok": 1,
        "isWritablePrimary": True,
        "setName": "rs",
        "hosts": [str(h) for h in hosts],
        "me": str(me),
        "maxWireVersion": 21,
    }
    reply.update(extra)
    return reply


def secondary(me: Address) -> dict[str, Any]:
    return {
        "ok": 1,
        "secondary": True,
        "setName": "rs",
        "hosts": ["a:27017", "b:27017"],
        "me": str(me),
        "maxWireVersion": 21,
    }


def test_discovery_starts_monitors_and_readies_pools() -> None:
    topology, parts = make()
    try:
        topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
        assert topology.description.type is TopologyType.REPLICA_SET_WITH_PRIMARY
        assert ("open", B) in parts["log"]
        assert parts["pools"][A].is_ready and not parts["pools"][B].is_ready
        server, sd = topology.select_server(None)
        assert server.address == A and sd.type is ServerType.RS_PRIMARY
    finally:
        topology.close()
    assert ("close", A) in parts["log"] and ("close", B) in parts["log"]
    assert parts["events"][0] == "TopologyOpeningEvent"
    assert parts["events"][-1] == "TopologyClosedEvent"


def test_selection_waits_for_a_check_then_returns() -> None:
    topology, parts = make()
    try:
        result: dict[str, Any] = {}

        def select() -> None:
            result["server"] = topology.select_server(ReadPreference(Mode.SECONDARY), timeout=30)

        thread = threading.Thread(target=select, name="selector")
        thread.start()
        # The waiting selector asks every monitor for an immediate check.
        assert parts["monitors"][A].check_requested.wait(10)
        topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
        assert parts["monitors"][B].check_requested.wait(10)
        topology.on_server_check(ServerDescription.from_hello(B, secondary(B), 0.001))
        thread.join(10)
        assert not thread.is_alive()
        assert result["server"][0].address == B
    finally:
        topology.close()


def test_selection_timeout_message_names_everything() -> None:
    topology, _ = make((A, B), replica_set="rs", server_selection_timeout_ms=50)
    try:
        topology.on_server_check(ServerDescription.from_error(A, "connection refused"))
        with pytest.raises(ServerSelectionTimeoutError) as info:
            topology.select_server(ReadPreference(Mode.SECONDARY, [{"dc": "ny"}]))
        message = str(info.value)
        assert "read preference" in message and "secondary" in message and "dc" in message
        assert "ReplicaSetNoPrimary" in message
        assert "a:27017: Unknown, last error: connection refused" in message
        assert "b:27017: Unknown" in message
    finally:
        topology.close()


def test_network_error_marks_unknown_clears_pool_and_cancels_check() -> None:
    topology, parts = make()
    try:
        topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
        decision = topology.handle_error(
            A, NetworkError("connection reset"), generation=0, completed_handshake=True
        )
        assert decision.mark_unknown is not None
        assert topology.description.servers[A].type is ServerType.UNKNOWN
        assert topology.description.type is TopologyType.REPLICA_SET_NO_PRIMARY
        assert parts["pools"][A].generation == 1
        assert ("cancel", A) in parts["log"]
        # A second error from a connection of the old generation is stale.
        stale = topology.handle_error(
            A, NetworkError("late"), generation=0, completed_handshake=True
        )
        assert stale.stale and parts["pools"][A].generation == 1
    finally:
        topology.close()


def test_timeout_and_pool_cleared_leave_sdam_alone() -> None:
    topology, parts = make()
    try:
        topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
        topology.handle_error(A, NetworkTimeout("slow"), generation=0, completed_handshake=True)
        topology.handle_error(
            A, PoolClearedError("cleared", A), generation=0, completed_handshake=True
        )
        assert topology.description.servers[A].type is ServerType.RS_PRIMARY
        assert parts["pools"][A].generation == 0
    finally:
        topology.close()


def test_state_change_error_requests_a_check() -> None:
    topology, parts = make()
    try:
        tv = {"processId": ObjectId(), "counter": 1}
        topology.on_server_check(
            ServerDescription.from_hello(A, primary(topologyVersion=tv), 0.001)
        )
        parts["monitors"][A].check_requested.clear()
        newer = {"processId": tv["processId"], "counter": 2}
        error = OperationFailure(
            "not primary", 10107, {"ok": 0, "code": 10107, "errmsg": "x", "topologyVersion": newer}
        )
        topology.handle_error(A, error, generation=0, completed_handshake=True, max_wire_version=21)
        assert topology.description.servers[A].type is ServerType.UNKNOWN
        assert topology.description.servers[A].topology_version.counter == 2  # type: ignore[union-attr]
        assert parts["monitors"][A].check_requested.is_set()
        assert parts["pools"][A].generation == 0  # 4.2+: keep the pool
    finally:
        topology.close()


def test_srv_hosts_update_a_sharded_topology() -> None:
    topology, parts = make((A, B))
    try:
        mongos = {"ok": 1, "msg": "isdbgrid", "maxWireVersion": 21}
        topology.on_server_check(ServerDescription.from_hello(A, mongos, 0.001))
        assert topology.description.type is TopologyType.SHARDED
        topology.on_srv_hosts([A, C])
        assert set(topology.description.servers) == {A, C}
        assert ("open", C) in parts["log"] and ("close", B) in parts["log"]
    finally:
        topology.close()


def test_load_balanced_topology_has_no_monitor_and_a_ready_pool() -> None:
    topology, parts = make((A,), load_balanced=True)
    try:
        assert topology.description.type is TopologyType.LOAD_BALANCED
        assert topology.description.servers[A].type is ServerType.LOAD_BALANCER
        assert parts["monitors"] == {}
        assert parts["pools"][A].is_ready
        server, _ = topology.select_server(None, timeout=1)
        assert server.address == A
    finally:
        topology.close()


def test_a_check_that_timed_out_clears_the_pool_interrupting_connections_in_use() -> None:
    """Catches a topology that clears the pool without interruptInUseConnections after a
    heartbeat timeout: operations blocked on a server that stopped answering would wait
    for ever ("Network or command error during server check")."""
    topology, parts = make()
    try:
        topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
        pool = parts["pools"][A]
        topology.on_server_check(ServerDescription.from_error(A, "connection refused"))
        topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
        topology.on_server_check(
            ServerDescription.from_error(A, "timed out"), interrupt_in_use_connections=True
        )
        assert pool.interrupts == [False, True]
        assert topology.description.servers[A].type is ServerType.UNKNOWN
    finally:
        topology.close()


def test_close_interrupts_the_connections_in_use() -> None:
    """Catches a client close that leaves operations in flight blocked on their sockets:
    the pools are closed with their in-use connections."""
    topology, parts = make()
    topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
    topology.close()
    assert {pool.closed_interrupting for pool in parts["pools"].values()} == {True}
