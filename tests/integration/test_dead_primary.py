"""A dead server is not an overloaded one; a garbled reply is a network error.

Raw-socket members (:class:`FakeMember`, on :class:`WireServer`) answer hellos with a
reply the test sets and every other command as the test says. "Dead" is a member
whose listening socket is closed, as a killed process's is: new connections are
refused while the monitor's open connection is still served, so what SDAM does
comes from the application's error alone, never from a monitor check.

SDAM seed, "Network error when reading or writing" and "MongoDB Handshake errors":
an establishment error without the backpressure label marks the server Unknown and
clears its pool. A refused TCP connect carries no such label (nothing listens, so
nothing is overloaded), so the retry of a write waits for a selectable primary
instead of going back to the dead one.
"""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Union

import pytest
from bson import ObjectId

from mongocore.api.client import Client
from mongocore.core.description.types import ServerType
from mongocore.core.events import (
    ConnectionCreatedEvent,
    ConnectionPoolListener,
    PoolClearedEvent,
    ServerDescriptionChangedEvent,
    ServerListener,
)
from mongocore.core.wire import encode_op_msg
from mongocore.core.wire.legacy import OpQuery
from mongocore.errors import (
    NetworkError,
    NotPrimaryError,
    ProtocolError,
    ServerSelectionTimeoutError,
)
from mongocore.io.counters import next_request_id
from tests.integration.mock_servers import DEADLINE, WirePeer, WireServer, hello_reply
from tests.integration.sim_client import wait_for_topology

#: What a member does with a command: a reply document, raw bytes, or None to hang up.
Answer = Callable[[WirePeer, Any, Mapping[str, Any]], Union[Mapping[str, Any], bytes, None]]


def _ok(peer: WirePeer, header: Any, command: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"ok": 1.0, "n": 1}


class FakeMember:
    """A replica set member (or standalone) on a raw-socket server."""

    def __init__(self, factory: Callable[..., WireServer]) -> None:
        self._lock = threading.Lock()
        self._hello: dict[str, Any] = hello_reply()
        self._answers: list[Answer] = []
        self.commands: queue.Queue[dict[str, Any]] = queue.Queue()
        self.server = factory(self._serve)
        self.address = self.server.address
        self.host = f"{self.address.host}:{self.address.port}"

    def set_hello(self, reply: Mapping[str, Any]) -> None:
        with self._lock:
            self._hello = dict(reply)

    def answer(self, *answers: Answer) -> None:
        """Answer the next commands with these, in order; then with ``{ok: 1, n: 1}``."""
        with self._lock:
            self._answers.extend(answers)

    def received(self) -> list[dict[str, Any]]:
        found = []
        while not self.commands.empty():
            found.append(self.commands.get_nowait())
        return found

    def _serve(self, peer: WirePeer) -> None:
        while True:
            header, message = peer.read()
            command = dict(message.query if isinstance(message, OpQuery) else message.body)
            if next(iter(command)).lower() in ("hello", "ismaster"):
                with self._lock:
                    reply: Any = dict(self._hello)
                peer.reply(header, reply)
                continue
            self.commands.put(command)
            with self._lock:
                answer = self._answers.pop(0) if self._answers else _ok
            reply = answer(peer, header, command)
            if reply is None:
                return  # hang up: the server shuts the socket down
            if isinstance(reply, bytes):
                peer.send(reply)
            else:
                peer.reply(header, reply)


def hang_up(peer: WirePeer, header: Any, command: Mapping[str, Any]) -> None:
    return None


def not_writable_primary(
    peer: WirePeer, header: Any, command: Mapping[str, Any]
) -> Mapping[str, Any]:
    return {"ok": 0.0, "code": 10107, "codeName": "NotWritablePrimary", "errmsg": "not primary"}


def garbled(peer: WirePeer, header: Any, command: Mapping[str, Any]) -> bytes:
    """A well-formed OP_MSG answering some other request: a reply that cannot be this
    command's (responseTo does not match)."""
    return encode_op_msg({"ok": 1.0}, next_request_id(), response_to=header.request_id + 7)


def rs_hello(
    me: FakeMember, hosts: list[FakeMember], *, primary: bool, term: int
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "setName": "rs",
        "setVersion": 1,
        "hosts": [m.host for m in hosts],
        "me": me.host,
        "ismaster": primary,
        "isWritablePrimary": primary,
        "secondary": not primary,
    }
    if primary:
        fields["primary"] = me.host
        fields["electionId"] = ObjectId(f"{term:024x}")
    return hello_reply(**fields)


class Events(ServerListener, ConnectionPoolListener):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Any] = []

    def description_changed(self, event: ServerDescriptionChangedEvent) -> None:
        with self._lock:
            self.events.append(event)

    def pool_cleared(self, event: PoolClearedEvent) -> None:
        with self._lock:
            self.events.append(event)

    def connection_created(self, event: ConnectionCreatedEvent) -> None:
        with self._lock:
            self.events.append(event)

    def of(self, kind: type, member: FakeMember) -> list[Any]:
        with self._lock:
            return [e for e in self.events if isinstance(e, kind) and e.address == member.address]


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def members(wire_server_factory: Callable[..., WireServer]) -> Callable[[], FakeMember]:
    return lambda: FakeMember(wire_server_factory)


@pytest.fixture
def client_for(events: Events) -> Iterator[Callable[..., Client]]:
    clients: list[Client] = []

    def make(*hosts: FakeMember, **options: Any) -> Client:
        settings: dict[str, Any] = {
            # Monitors check at start and when selection asks, never on their own.
            "serverMonitoringMode": "poll",
            "heartbeatFrequencyMS": 600_000,
            "serverSelectionTimeoutMS": int(DEADLINE * 1000),
            **options,
        }
        uri = "mongodb://" + ",".join(m.host for m in hosts)
        client = Client(uri, event_listeners=[events], **settings)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def _type_of(client: Client, member: FakeMember) -> ServerType:
    return client.topology.description.servers[member.address].type


def test_a_refused_connection_sends_the_retry_to_the_new_primary(
    members: Callable[[], FakeMember], client_for: Callable[..., Client], events: Events
) -> None:
    """Catches: a refused connection labeled SystemOverloadedError (SDAM ignores it, the
    dead primary stays selectable and the one retry goes straight back to it, so the
    caller gets the error), or a retry that does not wait for the new primary."""
    a, b = members(), members()
    a.set_hello(rs_hello(a, [a, b], primary=True, term=1))
    b.set_hello(rs_hello(b, [a, b], primary=False, term=1))
    client = client_for(a, b, replicaSet="rs", retryWrites=True)
    wait_for_topology(
        client,
        lambda d: (
            d.servers[a.address].type is ServerType.RS_PRIMARY
            and d.servers[b.address].type is ServerType.RS_SECONDARY
        ),
    )
    # The primary dies (its monitor connection is still served) and b is elected.
    a.server.refuse_connections()
    b.set_hello(rs_hello(b, [a, b], primary=True, term=2))

    client["db"]["c"].insert_one({"_id": 1})

    assert [c["insert"] for c in b.received()] == ["c"]
    assert a.received() == []
    unknown = [
        e
        for e in events.of(ServerDescriptionChangedEvent, a)
        if e.new_description.type is ServerType.UNKNOWN
    ]
    assert unknown and "could not connect" in str(unknown[0].new_description.error)
    assert events.of(PoolClearedEvent, a)
    assert len(events.of(ConnectionCreatedEvent, a)) == 1, "the retry never went back to a"


def test_a_refused_connection_is_no_backpressure_and_marks_the_server_unknown(
    members: Callable[[], FakeMember], client_for: Callable[..., Client], events: Events
) -> None:
    """Catches: connection refused carrying SystemOverloadedError (the standalone stays
    selectable, its pool untouched); an error that claims the write may have happened
    when no connection was ever made."""
    a = members()
    client = client_for(a, retryWrites=False, serverSelectionTimeoutMS=300)
    wait_for_topology(client, lambda d: d.servers[a.address].type is ServerType.STANDALONE)
    a.server.refuse_connections()

    with pytest.raises(NetworkError) as info:
        client["db"]["c"].insert_one({"_id": 1})

    error = info.value
    assert "SystemOverloadedError" not in error.error_labels
    assert "RetryableError" not in error.error_labels
    assert _type_of(client, a) is ServerType.UNKNOWN
    assert events.of(PoolClearedEvent, a)
    assert error.write_may_have_been_applied is False
    assert "[the write was not applied]" in str(error)


def test_a_garbled_reply_is_a_network_error_for_sdam(
    members: Callable[[], FakeMember], client_for: Callable[..., Client], events: Events
) -> None:
    """Catches: a ProtocolError kept away from SDAM (the server keeps its type and its
    pool, whose other connections may read the same garbled stream), or a malformed
    reply retried (a reply arrived: the write may have run, and a server that garbles
    replies is no better on a second try)."""
    a = members()
    a.set_hello(rs_hello(a, [a], primary=True, term=1))  # a standalone never retries
    client = client_for(a, replicaSet="rs", retryWrites=True)
    wait_for_topology(client, lambda d: d.servers[a.address].type is ServerType.RS_PRIMARY)
    a.answer(garbled)

    with pytest.raises(ProtocolError) as info:
        client["db"]["c"].insert_one({"_id": 1})

    assert "responseTo" in str(info.value)
    assert len(a.received()) == 1, "a malformed reply is not retried"
    assert _type_of(client, a) is ServerType.UNKNOWN
    assert events.of(PoolClearedEvent, a)
    assert info.value.write_may_have_been_applied is True


# --- what the caller is told about its write -----------------------------------------


def test_a_reply_lost_after_sending_may_have_applied_the_write(
    members: Callable[[], FakeMember], client_for: Callable[..., Client]
) -> None:
    """Catches: a network error after the command was sent reported as "not applied"
    (the caller would write again and apply it twice)."""
    a = members()
    client = client_for(a, retryWrites=False)
    a.answer(hang_up)
    with pytest.raises(NetworkError) as info:
        client["db"]["c"].insert_one({"_id": 1})
    assert info.value.write_may_have_been_applied is True
    assert "the write may have been applied" in str(info.value)


def test_not_writable_primary_says_the_write_was_not_applied(
    members: Callable[[], FakeMember], client_for: Callable[..., Client]
) -> None:
    """Catches: a server's "not writable primary" (refused before running the write)
    reported as a possibly applied write."""
    a = members()
    client = client_for(a, retryWrites=False)
    a.answer(not_writable_primary)
    with pytest.raises(NotPrimaryError) as info:
        client["db"]["c"].insert_one({"_id": 1})
    assert info.value.code == 10107
    assert info.value.write_may_have_been_applied is False
    assert str(info.value).count("[the write was not applied]") == 1


def test_a_retry_refused_after_a_lost_reply_still_may_have_applied_it(
    members: Callable[[], FakeMember], client_for: Callable[..., Client]
) -> None:
    """Catches: the outcome taken from the last attempt only. The first attempt's
    reply was lost (it may have run); the retry's "not writable primary" says nothing
    of the first, so the write may have been applied."""
    a = members()
    a.set_hello(rs_hello(a, [a], primary=True, term=1))  # a standalone never retries
    client = client_for(a, replicaSet="rs", retryWrites=True)
    a.answer(hang_up, not_writable_primary)
    with pytest.raises(NotPrimaryError) as info:
        client["db"]["c"].insert_one({"_id": 1})
    assert info.value.code == 10107, "the retry's error is raised"
    assert len(a.received()) == 2
    assert info.value.write_may_have_been_applied is True


def test_no_server_to_select_means_not_applied() -> None:
    """Catches: a selection failure (nothing was ever sent) left without an outcome."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = Client(f"mongodb://127.0.0.1:{port}", serverSelectionTimeoutMS=200)
    try:
        with pytest.raises(ServerSelectionTimeoutError) as info:
            client["db"]["c"].insert_one({"_id": 1})
    finally:
        client.close()
    assert info.value.write_may_have_been_applied is False


def test_a_read_says_nothing_about_writes(
    members: Callable[[], FakeMember], client_for: Callable[..., Client]
) -> None:
    a = members()
    client = client_for(a, retryReads=False)
    a.answer(hang_up)
    with pytest.raises(NetworkError) as info:
        client["db"]["c"].find_one({})
    assert info.value.write_may_have_been_applied is None
    assert "write" not in str(info.value)
