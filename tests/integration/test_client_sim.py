"""mongocore's own Client against the simulated deployment (mongocore.sim).

Discovery of every topology type, then the failovers SDAM exists for: a step-down,
a killed and restarted member, a partition, a reconfig, a lagging secondary and
maxStalenessSeconds, fail points sent over the wire, and at-most-once writes with an
explicit session id and transaction number. Every wait is on SDAM events (server
description changes, topology changes, heartbeats) with a generous deadline; the
Client and the deployment are closed, and their threads joined, in teardown.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any, Callable, Optional

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from bson import Binary, Int64

from mongocore.api.client import Client
from mongocore.core.address import Address, parse_address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.events import (
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatListener,
    ServerHeartbeatSucceededEvent,
    ServerListener,
    ServerOpeningEvent,
    TopologyDescriptionChangedEvent,
    TopologyListener,
)
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.core.selection.selectors import select_servers, staleness
from mongocore.errors import NetworkError, OperationFailure
from mongocore.sim import (
    LoadBalanced,
    Member,
    ReplicaSet,
    ShardedCluster,
    Standalone,
)
from tests.integration.sim_client import configure_fail_point

FAST: dict[str, Any] = {"heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 20_000}
DEADLINE = 20.0
ELECTION_DELAY = 0.05

Changed = ServerDescriptionChangedEvent


# --- waiting on SDAM events ------------------------------------------------------------


class Sdam:
    """Records a Client's SDAM events, and waits on them (never on a sleep).

    Pass ``sdam.listeners`` to the Client. ``wait_until`` re-checks the Client's
    description on every topology change and every heartbeat, so it also sees
    changes that are not events (a secondary's lastWriteDate, for staleness).
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.changes: list[Changed] = []
        self.opened: list[Address] = []
        self.closed: list[Address] = []
        self.listeners = (_Topology(self), _Servers(self), _Heartbeats(self))

    def record(self, action: Callable[[], None]) -> None:
        with self.cond:
            action()
            self.cond.notify_all()

    def mark(self) -> int:
        """A position in the change log: ``wait_for_change`` looks at changes after it."""
        with self.cond:
            return len(self.changes)

    def wait_for_change(self, predicate: Callable[[Changed], bool], since: int = 0) -> Changed:
        """The first server description change after ``since`` that satisfies ``predicate``."""
        found: list[Changed] = []

        def seen() -> bool:
            found[:] = [e for e in self.changes[since:] if predicate(e)]
            return bool(found)

        with self.cond:
            if not self.cond.wait_for(seen, DEADLINE):
                log = "\n".join(_describe_change(e) for e in self.changes[since:])
                raise AssertionError(f"no such server description change; saw:\n{log}")
        return found[0]

    def wait(self, predicate: Callable[[], bool]) -> None:
        """Until ``predicate()`` holds (checked on every event)."""
        with self.cond:
            if not self.cond.wait_for(predicate, DEADLINE):
                raise AssertionError("never happened")

    def wait_until(
        self, client: Client, predicate: Callable[[TopologyDescription], bool]
    ) -> TopologyDescription:
        """The Client's description, once ``predicate`` holds for it."""
        with self.cond:
            if not self.cond.wait_for(lambda: predicate(client.topology_description), DEADLINE):
                raise AssertionError(f"never reached; last: {client.topology_description!r}")
        return client.topology_description


class _Topology(TopologyListener):
    def __init__(self, sdam: Sdam) -> None:
        self.sdam = sdam

    def description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        self.sdam.record(lambda: None)


class _Servers(ServerListener):
    def __init__(self, sdam: Sdam) -> None:
        self.sdam = sdam

    def opened(self, event: ServerOpeningEvent) -> None:
        self.sdam.record(lambda: self.sdam.opened.append(event.address))

    def description_changed(self, event: ServerDescriptionChangedEvent) -> None:
        self.sdam.record(lambda: self.sdam.changes.append(event))

    def closed(self, event: ServerClosedEvent) -> None:
        self.sdam.record(lambda: self.sdam.closed.append(event.address))


class _Heartbeats(ServerHeartbeatListener):
    def __init__(self, sdam: Sdam) -> None:
        self.sdam = sdam

    def succeeded(self, event: ServerHeartbeatSucceededEvent) -> None:
        self.sdam.record(lambda: None)

    def failed(self, event: ServerHeartbeatFailedEvent) -> None:
        self.sdam.record(lambda: None)


def _describe_change(event: Changed) -> str:
    new = event.new_description
    return f"{event.address}: {event.previous_description.type.value} -> {new.type.value}" + (
        f" ({new.error})" if new.error else ""
    )


def became(address: Address, server_type: ServerType) -> Callable[[Changed], bool]:
    return lambda e: e.address == address and e.new_description.type is server_type


def server(td: TopologyDescription, member: Member) -> Optional[ServerDescription]:
    return td.servers.get(parse_address(member.host))


def is_type(member: Member, server_type: ServerType) -> Callable[[TopologyDescription], bool]:
    def check(td: TopologyDescription) -> bool:
        sd = server(td, member)
        return sd is not None and sd.type is server_type

    return check


def fully_discovered(rs: ReplicaSet) -> Callable[[TopologyDescription], bool]:
    """The client sees every member of ``rs`` with the role the set gives it."""

    def check(td: TopologyDescription) -> bool:
        expected = {
            parse_address(m.host): ServerType.RS_PRIMARY
            if m.is_primary
            else ServerType.RS_SECONDARY
            for m in rs.members
        }
        actual = {address: sd.type for address, sd in td.servers.items()}
        return actual == expected

    return check


def insert(client: Client, *ids: int, **fields: Any) -> dict[str, Any]:
    command = {"insert": "items", "documents": [{"_id": i} for i in ids], **fields}
    return client.command("app", command)


def count(client: Client, read_preference: Optional[ReadPreference] = None) -> int:
    reply = client.command("app", {"count": "items"}, read_preference=read_preference)
    return int(reply["n"])


# --- fixtures ------------------------------------------------------------------------


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(3, election_delay=ELECTION_DELAY) as replica_set:
        yield replica_set


@pytest.fixture
def sdam() -> Sdam:
    return Sdam()


@pytest.fixture
def client(rs: ReplicaSet, sdam: Sdam) -> Iterator[Client]:
    with Client(rs.uri, event_listeners=sdam.listeners, **FAST) as mongo:
        sdam.wait_until(mongo, fully_discovered(rs))
        yield mongo


# --- discovery ---------------------------------------------------------------------


def test_discovers_a_replica_set_from_one_seed(rs: ReplicaSet, sdam: Sdam) -> None:
    seed = rs.members[1]
    with Client(seed.host, replicaSet=rs.name, event_listeners=sdam.listeners, **FAST) as client:
        td = sdam.wait_until(client, fully_discovered(rs))
        assert td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
        assert td.set_name == "rs0"
        primary = rs.primary
        assert primary is not None
        assert td.primary is not None and str(td.primary.address) == primary.host
        # The other members came from the seed's hosts list, not from the seed list.
        assert set(sdam.opened) == {parse_address(m.host) for m in rs.members}
        assert client.command("admin", {"ping": 1})["ok"] == 1


def test_discovers_a_sharded_cluster(sdam: Sdam) -> None:
    with (
        ShardedCluster(2, election_delay=ELECTION_DELAY) as cluster,
        Client(cluster.uri, event_listeners=sdam.listeners, **FAST) as client,
    ):
        mongoses = {parse_address(m.host) for m in cluster.mongoses}
        td = sdam.wait_until(
            client,
            lambda td: (
                set(td.servers) == mongoses
                and all(sd.type is ServerType.MONGOS for sd in td.servers.values())
            ),
        )
        assert td.type is TopologyType.SHARDED
        assert insert(client, 1, 2)["n"] == 2
        assert count(client) == 2


def test_discovers_a_standalone(sdam: Sdam) -> None:
    with (
        Standalone() as standalone,
        Client(standalone.uri, event_listeners=sdam.listeners, **FAST) as client,
    ):
        td = sdam.wait_until(client, lambda td: td.type is TopologyType.SINGLE)
        (sd,) = td.servers.values()
        assert sd.type is ServerType.STANDALONE
        assert str(sd.address) == standalone.member.host
        assert insert(client, 1)["n"] == 1


def test_connects_to_a_load_balanced_deployment(sdam: Sdam) -> None:
    with (
        LoadBalanced(election_delay=ELECTION_DELAY) as lb,
        Client(lb.uri, event_listeners=sdam.listeners, **FAST) as client,
    ):
        td = client.topology_description
        assert td.type is TopologyType.LOAD_BALANCED
        (sd,) = td.servers.values()
        assert sd.type is ServerType.LOAD_BALANCER
        assert str(sd.address) == lb.mongoses[0].host
        # The handshake said loadBalanced: true, or the mongos would have refused it.
        assert insert(client, 1)["n"] == 1
        assert count(client) == 1


# --- failovers -----------------------------------------------------------------------


def test_step_down_the_client_sees_the_new_primary(
    rs: ReplicaSet, client: Client, sdam: Sdam
) -> None:
    since = sdam.mark()
    old = rs.step_down()
    old_address = parse_address(old.host)
    new_primary = sdam.wait_for_change(
        lambda e: e.address != old_address and e.new_description.type is ServerType.RS_PRIMARY,
        since,
    )
    sdam.wait_for_change(
        lambda e: e.address == old_address and e.new_description.type is not ServerType.RS_PRIMARY,
        since,
    )
    td = sdam.wait_until(client, fully_discovered(rs))
    assert td.primary is not None and td.primary.address == new_primary.address
    assert rs.primary is not None and rs.primary.host == str(new_primary.address)
    assert insert(client, 1)["n"] == 1


def test_a_write_to_the_old_primary_fails_and_marks_it_unknown(rs: ReplicaSet) -> None:
    # The monitors poll, seldom: the client still believes the old primary is primary
    # when the write reaches it, whatever the timing. (With 500 ms heartbeats, or the
    # streaming protocol, the monitor could learn of the step-down first.)
    sdam = Sdam()
    options = dict(FAST, heartbeatFrequencyMS=60_000, serverMonitoringMode="poll")
    with Client(rs.uri, event_listeners=sdam.listeners, **options) as client:
        sdam.wait_until(client, fully_discovered(rs))
        since = sdam.mark()
        old = rs.step_down()
        old_address = parse_address(old.host)
        assert client.topology_description.servers[old_address].type is ServerType.RS_PRIMARY

        with pytest.raises(OperationFailure) as failure:
            insert(client, 1)
        assert failure.value.code == 10107  # NotWritablePrimary

        unknown = sdam.wait_for_change(became(old_address, ServerType.UNKNOWN), since)
        assert unknown.previous_description.type is ServerType.RS_PRIMARY
        assert unknown.new_description.error is not None
        assert "10107" in unknown.new_description.error
        # The error asked for a check of the old primary: it is a secondary now.
        sdam.wait_for_change(became(old_address, ServerType.RS_SECONDARY), since)
        # Selection asks for checks while no primary is known: the election is found.
        assert insert(client, 1)["n"] == 1
        td = sdam.wait_until(client, fully_discovered(rs))
        assert td.primary is not None and td.primary.address != old_address


def test_kill_and_restart_a_new_process_id(rs: ReplicaSet, client: Client, sdam: Sdam) -> None:
    member = rs.secondaries[0]
    address = parse_address(member.host)
    before = client.topology_description.servers[address].topology_version
    assert before is not None

    since = sdam.mark()
    rs.kill(member)
    down = sdam.wait_for_change(became(address, ServerType.UNKNOWN), since)
    assert down.new_description.error

    since = sdam.mark()
    rs.restart(member)
    back = sdam.wait_for_change(became(address, ServerType.RS_SECONDARY), since)
    after = back.new_description.topology_version
    assert after is not None
    assert after.process_id != before.process_id
    assert after.process_id == member.process_id


def test_kill_the_primary_an_election_follows(rs: ReplicaSet, client: Client, sdam: Sdam) -> None:
    old = rs.primary
    assert old is not None
    address = parse_address(old.host)
    since = sdam.mark()
    rs.kill(old)
    sdam.wait_for_change(became(address, ServerType.UNKNOWN), since)
    new = sdam.wait_for_change(
        lambda e: e.address != address and e.new_description.type is ServerType.RS_PRIMARY, since
    )
    assert insert(client, 7)["n"] == 1
    rs.restart(old)
    sdam.wait_for_change(became(address, ServerType.RS_SECONDARY), since)
    assert client.topology_description.primary is not None
    assert client.topology_description.primary.address == new.address


@pytest.mark.parametrize("mode", ["refuse", "drop"])
def test_partition_then_heal(rs: ReplicaSet, mode: str) -> None:
    sdam = Sdam()
    # A dropped request is never answered: the monitor learns of it by a timeout.
    options = dict(FAST, connectTimeoutMS=1000)
    with Client(rs.uri, event_listeners=sdam.listeners, **options) as client:
        sdam.wait_until(client, fully_discovered(rs))
        member = rs.secondaries[0]
        address = parse_address(member.host)
        since = sdam.mark()
        rs.partition(member, mode)
        cut = sdam.wait_for_change(became(address, ServerType.UNKNOWN), since)
        assert cut.new_description.error

        since = sdam.mark()
        rs.heal(member)
        healed = sdam.wait_for_change(became(address, ServerType.RS_SECONDARY), since)
        assert healed.new_description.set_name == "rs0"
        sdam.wait_until(client, fully_discovered(rs))


def test_reconfig_adds_and_removes_members(rs: ReplicaSet, client: Client, sdam: Sdam) -> None:
    (added,) = rs.reconfig(add=1)
    added_address = parse_address(added.host)
    td = sdam.wait_until(client, fully_discovered(rs))
    assert td.servers[added_address].type is ServerType.RS_SECONDARY
    sdam.wait(lambda: added_address in sdam.opened)
    assert td.max_set_version == rs.set_version

    removed = rs.secondaries[0]
    removed_address = parse_address(removed.host)
    rs.reconfig(remove=[removed])
    td = sdam.wait_until(client, lambda td: removed_address not in td.servers)
    sdam.wait(lambda: removed_address in sdam.closed)
    assert set(td.servers) == {parse_address(m.host) for m in rs.members}
    assert td.max_set_version == rs.set_version


class FakeClock:
    """The replica set's wall clock (lag and lastWriteDate), moved by the test."""

    def __init__(self) -> None:
        self.offset = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.offset += seconds


def test_a_lagging_secondary_is_excluded_by_max_staleness() -> None:
    # Staleness is measured from lastWriteDate, which the set stamps with its clock:
    # moving that clock forward two minutes makes a lag of minutes real at once.
    clock = FakeClock()
    sdam = Sdam()
    rp = ReadPreference(Mode.SECONDARY, max_staleness_seconds=90)
    with (
        ReplicaSet(3, election_delay=ELECTION_DELAY, clock=clock) as rs,
        Client(rs.uri, event_listeners=sdam.listeners, **FAST) as client,
    ):
        sdam.wait_until(client, fully_discovered(rs))
        lagging, fresh = rs.secondaries
        lagging_address = parse_address(lagging.host)
        fresh_address = parse_address(fresh.host)

        def eligible(td: TopologyDescription) -> set[Address]:
            return {sd.address for sd in select_servers(td, rp)}

        def eligible_without_max_staleness(td: TopologyDescription) -> set[Address]:
            return {sd.address for sd in select_servers(td, ReadPreference(Mode.SECONDARY))}

        sdam.wait_until(client, lambda td: eligible(td) == {lagging_address, fresh_address})

        lagging.lag = 600.0
        clock.advance(120.0)
        assert insert(client, 1)["n"] == 1  # on the primary, stamped two minutes later

        td = sdam.wait_until(client, lambda td: eligible(td) == {fresh_address})
        lagging_staleness = staleness(td, td.servers[lagging_address])
        assert lagging_staleness is not None and lagging_staleness > 90
        fresh_staleness = staleness(td, td.servers[fresh_address])
        assert fresh_staleness is not None and fresh_staleness <= 90
        # Without maxStalenessSeconds the lagging member is still eligible.
        assert eligible_without_max_staleness(td) == {lagging_address, fresh_address}
        # It has not applied the insert, so a read that counts one document was served
        # by the fresh secondary.
        lagging_server = client.topology.get_server(lagging_address)
        assert lagging_server is not None
        on_lagging = {"count": "items", "$readPreference": {"mode": "secondary"}}
        assert client.run_on(lagging_server, "app", on_lagging)["n"] == 0
        for _ in range(10):
            assert count(client, rp) == 1


# --- fail points ---------------------------------------------------------------------


def test_fail_command_error_code(rs: ReplicaSet, client: Client) -> None:
    reply = configure_fail_point(
        client, {"times": 1}, {"failCommands": ["insert"], "errorCode": 2, "errmsg": "injected"}
    )
    assert reply["ok"] == 1
    with pytest.raises(OperationFailure) as failure:
        insert(client, 1)
    assert failure.value.code == 2
    assert "injected" in str(failure.value)
    # Not a state change: the primary is still the primary, and the next insert works.
    assert client.topology_description.primary is not None
    assert insert(client, 1)["n"] == 1
    assert count(client) == 1


def test_fail_command_close_connection(rs: ReplicaSet, client: Client, sdam: Sdam) -> None:
    primary = rs.primary
    assert primary is not None
    address = parse_address(primary.host)
    configure_fail_point(
        client, {"times": 1}, {"failCommands": ["insert"], "closeConnection": True}
    )
    since = sdam.mark()
    with pytest.raises(NetworkError):
        insert(client, 1)
    unknown = sdam.wait_for_change(became(address, ServerType.UNKNOWN), since)
    assert unknown.previous_description.type is ServerType.RS_PRIMARY
    sdam.wait_for_change(became(address, ServerType.RS_PRIMARY), since)
    assert insert(client, 1)["n"] == 1
    assert count(client) == 1


# --- at-most-once writes -------------------------------------------------------------


def new_lsid() -> dict[str, Any]:
    return {"id": Binary(uuid.uuid4().bytes, 4)}


def test_a_repeated_transaction_number_is_applied_once(client: Client) -> None:
    lsid = new_lsid()
    first = insert(client, 1, lsid=lsid, txnNumber=Int64(1))
    second = insert(client, 1, lsid=lsid, txnNumber=Int64(1))
    assert first["n"] == 1
    assert second == first
    assert count(client) == 1

    assert insert(client, 2, lsid=lsid, txnNumber=Int64(2))["n"] == 1
    with pytest.raises(OperationFailure) as failure:
        insert(client, 3, lsid=lsid, txnNumber=Int64(1))
    assert failure.value.code == 225  # TransactionTooOld
    assert count(client) == 2


def test_a_standalone_refuses_transaction_numbers() -> None:
    with Standalone() as standalone, Client(standalone.uri, **FAST) as client:
        with pytest.raises(OperationFailure) as failure:
            insert(client, 1, lsid=new_lsid(), txnNumber=Int64(1))
        assert failure.value.code == 20  # IllegalOperation
        assert count(client) == 0
