"""The Client end to end against mockupdb servers on loopback (a server we did not write)."""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Optional

import pytest
from bson import Int64, ObjectId
from mockupdb import MockupDB

from mongocore.api.client import Client
from mongocore.core.address import Address
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.events import ServerDescriptionChangedEvent, ServerListener
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import (
    ConfigurationError,
    NetworkError,
    OperationFailure,
    ServerSelectionTimeoutError,
)
from mongocore.sim import Standalone
from tests.integration.mock_servers import DEADLINE, HelloResponder, address_of, hello_reply
from tests.integration.sim_client import sim_client
from tests.unit.test_srv import FakeResolver

FAST = {"heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 10_000}


class Changes(ServerListener):
    """Collects ServerDescriptionChangedEvents so tests wait on events, not sleeps."""

    def __init__(self) -> None:
        self.events: queue.Queue[ServerDescriptionChangedEvent] = queue.Queue()

    def description_changed(self, event: ServerDescriptionChangedEvent) -> None:
        self.events.put(event)

    def wait_for(
        self, predicate: Callable[[ServerDescriptionChangedEvent], bool]
    ) -> ServerDescriptionChangedEvent:
        while True:
            event = self.events.get(timeout=DEADLINE)
            if predicate(event):
                return event


def member_reply(
    i: int,
    addresses: Sequence[Address],
    primary: Optional[int],
    *,
    hidden: Sequence[int] = (),
    election: int = 1,
) -> dict[str, Any]:
    reply = hello_reply(
        setName="rs",
        hosts=[str(a) for j, a in enumerate(addresses) if j not in hidden],
        me=str(addresses[i]),
        isWritablePrimary=i == primary,
        ismaster=i == primary,
        secondary=i != primary,
        setVersion=1,
    )
    if primary is not None:
        reply["primary"] = str(addresses[primary])
    if i == primary:
        reply["electionId"] = ObjectId(f"7fffffff{election:016x}")
    if i in hidden:
        reply["hidden"] = True
    return reply


def replica_set(
    factory: Callable[..., MockupDB], n: int = 3, *, hidden: Sequence[int] = ()
) -> tuple[list[MockupDB], list[Address], list[HelloResponder]]:
    servers = [factory() for _ in range(n)]
    addresses = [address_of(s) for s in servers]
    responders = [
        HelloResponder.install(s, member_reply(i, addresses, 0, hidden=hidden))
        for i, s in enumerate(servers)
    ]
    return servers, addresses, responders


def reply_to(command: str, reply: dict[str, Any]) -> Callable[[Any], bool]:
    """A mockupdb responder for one command name (by the command's first key)."""

    def respond(request: Any) -> bool:
        if request.command_name != command:
            return False
        request.replies(dict(reply))
        return True

    return respond


def wait_until(client: Client, predicate: Callable[[Any], bool]) -> None:
    """Block on server selection's own condition until the description satisfies ``predicate``."""
    topology = client.topology
    with topology._condition:  # the condition monitors notify on every change
        if not topology._condition.wait_for(
            lambda: predicate(topology.description), timeout=DEADLINE
        ):
            raise AssertionError(f"never reached: {topology.description!r}")


def test_discovers_a_three_member_replica_set_from_one_seed(
    mockupdb_factory: Callable[..., MockupDB],
) -> None:
    servers, addresses, _ = replica_set(mockupdb_factory)
    for s in servers:
        s.autoresponds(reply_to("ping", {"ok": 1}))
    with Client(f"mongodb://{addresses[0]}/?replicaSet=rs", **FAST) as client:
        wait_until(
            client,
            lambda td: (
                len(td.servers) == 3
                and len([s for s in td.servers.values() if s.type is ServerType.RS_SECONDARY]) == 2
            ),
        )
        td = client.topology_description
        assert td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
        assert set(td.servers) == set(addresses)
        assert td.servers[addresses[0]].type is ServerType.RS_PRIMARY
        assert client.command("admin", {"ping": 1})["ok"] == 1
        reply = client.command("admin", {"ping": 1}, ReadPreference(Mode.SECONDARY))
        assert reply["ok"] == 1


def test_step_down_seen_through_a_not_writable_primary_reply(
    mockupdb_factory: Callable[..., MockupDB],
) -> None:
    servers, addresses, responders = replica_set(mockupdb_factory)
    servers[0].autoresponds(reply_to("insert", {"ok": 0, "code": 10107, "errmsg": "not primary"}))
    servers[1].autoresponds(reply_to("insert", {"ok": 1, "n": 1}))
    changes = Changes()
    with Client(
        f"mongodb://{addresses[0]}/?replicaSet=rs", event_listeners=[changes], **FAST
    ) as client:
        wait_until(client, lambda td: td.type is TopologyType.REPLICA_SET_WITH_PRIMARY)
        with pytest.raises(OperationFailure) as info:
            client.command("db", {"insert": "c", "documents": [{"x": 1}]})
        assert info.value.code == 10107
        event = changes.wait_for(
            lambda e: e.address == addresses[0] and e.new_description.type is ServerType.UNKNOWN
        )
        assert "not primary" in (event.new_description.error or "")
        # 4.2+ (wire 21): a state change error does not clear the pool.
        assert client.topology.get_server(addresses[0]).pool.generation == 0  # type: ignore[union-attr]
        # The election: member 1 is the new primary; the monitors find it.
        for i, responder in enumerate(responders):
            responder.set_reply(member_reply(i, addresses, 1, election=2))
        wait_until(
            client,
            lambda td: td.servers[addresses[1]].type is ServerType.RS_PRIMARY,
        )
        assert client.command("db", {"insert": "c", "documents": [{"x": 1}]})["n"] == 1


def test_a_network_error_marks_the_server_unknown_and_clears_its_pool(
    mockupdb_factory: Callable[..., MockupDB],
) -> None:
    server = mockupdb_factory()
    HelloResponder.install(server)

    def hang_up_on_find(request: Any) -> bool:
        if request.command_name == "find":
            request.hangup()
            return True
        return False

    server.autoresponds(hang_up_on_find)
    address = address_of(server)
    changes = Changes()
    with Client(f"mongodb://{address}/", event_listeners=[changes], **FAST) as client:
        with pytest.raises(NetworkError):
            client.command("db", {"find": "c"})
        event = changes.wait_for(lambda e: e.new_description.type is ServerType.UNKNOWN)
        assert event.previous_description.type is ServerType.STANDALONE
        assert str(address) in (event.new_description.error or "")
        pool = client.topology.get_server(address).pool  # type: ignore[union-attr]
        assert pool.generation == 1
        # The monitor finds the server again, and the pool serves new connections.
        wait_until(client, lambda td: td.servers[address].type is ServerType.STANDALONE)
        server.autoresponds(reply_to("ping", {"ok": 1}))
        assert client.command("admin", {"ping": 1})["ok"] == 1


def test_selection_timeout_names_the_read_preference_topology_and_servers() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    uri = f"mongodb://127.0.0.1:{port}/?replicaSet=rs&serverSelectionTimeoutMS=700"
    client = Client(uri, connectTimeoutMS=500, heartbeatFrequencyMS=500)
    try:
        with pytest.raises(ServerSelectionTimeoutError) as info:
            client.command("admin", {"ping": 1}, ReadPreference(Mode.NEAREST, [{"dc": "ny"}]))
    finally:
        client.close()
    message = str(info.value)
    assert "nearest" in message and "dc" in message
    assert "ReplicaSetNoPrimary" in message and "'rs'" in message
    assert f"127.0.0.1:{port}: Unknown, last error:" in message


def test_a_hidden_member_as_seed_finds_the_set_and_is_dropped(
    mockupdb_factory: Callable[..., MockupDB],
) -> None:
    _, addresses, _ = replica_set(mockupdb_factory, hidden=(2,))
    with Client(f"mongodb://{addresses[2]}/?replicaSet=rs", **FAST) as client:
        wait_until(
            client,
            lambda td: (
                td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
                and set(td.servers) == {addresses[0], addresses[1]}
            ),
        )
        assert client.topology.get_server(addresses[2]) is None  # no longer monitored


def test_a_set_of_mongoses(mockupdb_factory: Callable[..., MockupDB]) -> None:
    servers = [mockupdb_factory() for _ in range(2)]
    pings: queue.Queue[dict[str, Any]] = queue.Queue()

    def answer_ping(request: Any) -> bool:
        if request.command_name != "ping":
            return False
        pings.put(dict(request.doc))
        request.ok()
        return True

    for s in servers:
        HelloResponder.install(s, hello_reply(msg="isdbgrid"))
        s.autoresponds(answer_ping)
    uri = "mongodb://" + ",".join(str(address_of(s)) for s in servers)
    with Client(uri, **FAST) as client:
        wait_until(
            client,
            lambda td: (
                td.type is TopologyType.SHARDED
                and all(s.type is ServerType.MONGOS for s in td.servers.values())
            ),
        )
        assert client.command("admin", {"ping": 1}, ReadPreference(Mode.SECONDARY))["ok"] == 1
        # "Passing read preference to mongos": mode secondary goes as $readPreference.
        assert pings.get(timeout=DEADLINE)["$readPreference"] == {"mode": "secondary"}
        assert client.command("admin", {"ping": 1})["ok"] == 1
        assert "$readPreference" not in pings.get(timeout=DEADLINE)  # primary: nothing sent


def test_an_srv_uri_seeds_the_topology_from_the_resolver() -> None:
    resolver = FakeResolver(
        srv={
            "_mongodb._tcp.cluster0.example.com": [
                ("a.example.com", 27017),
                ("b.example.com", 27018),
            ]
        },
        txt={"cluster0.example.com": ["replicaSet=rs&authSource=admin"]},
    )
    # tls=false: TLS arrives with the security work; SRV itself needs none.
    client = Client(
        "mongodb+srv://cluster0.example.com/?tls=false&serverSelectionTimeoutMS=100",
        srv_resolver=resolver,
        connectTimeoutMS=100,
    )
    try:
        td = client.topology_description
        assert set(td.servers) == {Address("a.example.com", 27017), Address("b.example.com", 27018)}
        assert td.type is TopologyType.REPLICA_SET_NO_PRIMARY and td.set_name == "rs"
        assert ("SRV", "_mongodb._tcp.cluster0.example.com") in resolver.queries
    finally:
        client.close()


@pytest.mark.parametrize("left_open", [False, True])
def test_find_one_sends_a_single_batch_find_and_closes_what_the_server_left_open(
    mockupdb_factory: Callable[..., MockupDB], left_open: bool
) -> None:
    """find_one(filter) takes its document straight from the find's reply. The broken
    variant this catches: a cursor the server left open (a nonzero id despite
    singleBatch) not being killed, or a killCursors sent for a cursor already closed."""
    server = mockupdb_factory()
    HelloResponder.install(server)
    commands: queue.Queue[dict[str, Any]] = queue.Queue()

    def answer(request: Any) -> bool:
        name = request.command_name
        if name not in ("find", "killCursors", "ping"):
            return False
        commands.put(dict(request.doc))
        if name == "find":
            cursor_id = Int64(77 if left_open else 0)
            batch = [{"_id": 1, "x": 1}, {"_id": 2, "x": 1}]  # one too many: only one is used
            request.reply({"cursor": {"id": cursor_id, "ns": "db.c", "firstBatch": batch}})
        else:
            request.reply({"ok": 1})
        return True

    server.autoresponds(answer)
    with Client(f"mongodb://{address_of(server)}/", **FAST) as client:
        assert client.db.c.find_one({"x": 1}) == {"_id": 1, "x": 1}
        client.command("admin", {"ping": 1})  # marks the end of what find_one sent
        find = commands.get(timeout=DEADLINE)
        assert (find["find"], find["filter"], find["limit"], find["singleBatch"]) == (
            "c",
            {"x": 1},
            1,
            True,
        )
        following = commands.get(timeout=DEADLINE)
        if left_open:
            assert (following["killCursors"], following["cursors"]) == ("c", [77])
            following = commands.get(timeout=DEADLINE)
        assert "ping" in following
        # Its implicit session went back to the pool (the ping used the same one).
        assert following["lsid"] == find["lsid"]


def test_a_server_without_sessions_gets_no_lsid_and_refuses_an_explicit_session(
    mockupdb_factory: Callable[..., MockupDB],
) -> None:
    """A connection whose handshake reply has no logicalSessionTimeoutMinutes does not
    support sessions ("How to Tell Whether a Connection Supports Sessions"): implicit
    sessions send no ``lsid``, and an explicit session is refused before anything is
    sent. Broken variants caught: a connection
    taken to support sessions whatever its hello says (an ``lsid`` appears), or one
    taken never to support them when its hello has the field (the second server)."""
    without = hello_reply()
    del without["logicalSessionTimeoutMinutes"]
    seen: dict[str, queue.Queue[dict[str, Any]]] = {}
    for label, reply in (("without", without), ("with", hello_reply())):
        server = mockupdb_factory()
        HelloResponder.install(server, reply)
        commands: queue.Queue[dict[str, Any]] = queue.Queue()
        seen[label] = commands

        def answer(request: Any, commands: queue.Queue[dict[str, Any]] = commands) -> bool:
            if request.command_name not in ("insert", "ping"):
                return False
            commands.put(dict(request.doc))
            request.reply({"ok": 1, "n": 1} if request.command_name == "insert" else {"ok": 1})
            return True

        server.autoresponds(answer)
        with Client(f"mongodb://{address_of(server)}/", **FAST) as client:
            client.command("admin", {"ping": 1})
            client.db.c.insert_one({"_id": 1})
            if label == "without":
                session = client.start_session()
                with pytest.raises(ConfigurationError, match="does not support sessions"):
                    client.db.c.insert_one({"_id": 2}, session=session)
                session.end_session()
    for label, expect in (("without", False), ("with", True)):
        ping = seen[label].get(timeout=DEADLINE)
        insert = seen[label].get(timeout=DEADLINE)
        assert ("lsid" in ping, "lsid" in insert) == (expect, expect), label
        assert seen[label].empty(), label  # the refused insert was never sent


def test_the_connections_a_client_keeps_let_their_handshake_reply_go() -> None:
    """A pooled, a monitoring and an RTT connection keep no hello reply once established,
    only what they read from it.

    Fails if any of the three keepers (the client's pool factory, the monitor, the RTT
    monitor) stops calling ``take_hello()``: that connection's ``hello`` is then still
    the server's whole reply, a few KiB held for the life of the client.
    """
    with Standalone() as standalone, sim_client(standalone.uri) as client:
        client.admin.command("ping")
        (address,) = client.topology.description.servers
        server = client.topology.get_server(address)
        assert server is not None and server.monitor is not None
        monitor: Any = server.monitor

        def rtt_connection() -> Any:
            rtt = monitor._rtt_monitor
            return None if rtt is None else rtt._slot.connection

        deadline = time.monotonic() + DEADLINE
        while rtt_connection() is None and time.monotonic() < deadline:
            threading.Event().wait(0.01)
        pooled = server.pool.check_out(DEADLINE)
        server.pool.check_in(pooled)
        kept = {"pooled": pooled, "monitor": monitor._slot.connection, "rtt": rtt_connection()}
        for role, connection in kept.items():
            assert connection is not None, role
            assert connection.hello == {}, role
            assert connection.max_wire_version == 21, role
            assert connection.supports_sessions, role
