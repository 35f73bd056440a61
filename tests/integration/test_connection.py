"""mongocore.io.connection against loopback servers: handshake, commands, hostile replies."""

from __future__ import annotations

import contextlib
import platform
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Optional

import bson
import pytest
from bson import ObjectId
from mockupdb import OP_MSG_FLAGS, Command, MockupDB, OpMsg, OpMsgReply

from mongocore import DRIVER_NAME, __version__
from mongocore.core.address import Address
from mongocore.core.events import (
    CommandFailedEvent,
    CommandListener,
    CommandStartedEvent,
    CommandSucceededEvent,
    EventPublisher,
)
from mongocore.core.options import ClientOptions
from mongocore.core.wire import OpMsg as WireOpMsg
from mongocore.core.wire import OpQuery as WireOpQuery
from mongocore.core.wire import encode_op_msg
from mongocore.errors import (
    ConfigurationError,
    DocumentTooLarge,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    ProtocolError,
)
from mongocore.io.command_monitoring import run_command as monitored_command
from mongocore.io.connection import Connection, connect
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.establishment import Cancellation
from tests.integration.mock_servers import (
    Background,
    HelloResponder,
    RawReply,
    WirePeer,
    WireServer,
    address_of,
    hello_reply,
    receive_request,
    serve_hellos,
)

MORE_TO_COME = OP_MSG_FLAGS["moreToCome"]
EXHAUST_ALLOWED = OP_MSG_FLAGS["exhaustAllowed"]
SETTINGS = ConnectionSettings(connect_timeout=10.0, socket_timeout=10.0)


BACKPRESSURE = frozenset({"SystemOverloadedError", "RetryableError"})


def open_connection(server: MockupDB, reply: dict[str, Any], **settings: Any) -> Connection:
    """Connect in the background, answer the handshake with ``reply``, return the connection."""
    options = {"connect_timeout": 10.0, "socket_timeout": 10.0, **settings}
    pending = Background(lambda: connect(address_of(server), ConnectionSettings(**options)))
    receive_request(server).replies(reply)
    conn: Connection = pending.result()
    return conn


@pytest.fixture
def conn(mockupdb_server: MockupDB) -> Any:
    connection = open_connection(mockupdb_server, hello_reply(connectionId=42))
    yield connection
    connection.close()


def run_command(conn: Connection, *args: Any, **kwargs: Any) -> Background:
    return Background(lambda: conn.command(*args, **kwargs))


# --- the handshake -------------------------------------------------------------------


def test_handshake_is_legacy_hello_over_op_query_with_client_metadata(
    mockupdb_server: MockupDB,
) -> None:
    settings = ConnectionSettings(connect_timeout=10.0, app_name="inventory-service")
    pending = Background(lambda: connect(address_of(mockupdb_server), settings))
    request = receive_request(mockupdb_server)
    assert isinstance(request, Command)  # OP_QUERY on admin.$cmd
    assert request.namespace == "admin"
    assert request.slave_ok  # any member answers, whatever its state
    doc = request.doc
    assert next(iter(doc)) == "isMaster"
    assert doc["helloOk"] is True
    assert "loadBalanced" not in doc
    assert "compression" not in doc  # no compressor is negotiated
    client = doc["client"]
    assert client["application"] == {"name": "inventory-service"}
    assert client["driver"] == {"name": DRIVER_NAME, "version": __version__}
    assert client["os"]["type"] == (platform.system() or "unknown")
    assert client["platform"] == f"{platform.python_implementation()} {platform.python_version()}"
    assert len(bson.encode(client)) <= 512
    request.replies(hello_reply(connectionId=7, maxWireVersion=21))
    conn: Connection = pending.result()
    try:
        assert conn.hello["connectionId"] == 7
        assert conn.server_connection_id == 7
        assert conn.max_wire_version == 21
        assert conn.hello_ok is True
        assert conn.handshake_duration >= 0
        assert not conn.closed
    finally:
        conn.close()


def test_handshake_without_app_name_has_no_application(mockupdb_server: MockupDB) -> None:
    pending = Background(lambda: connect(address_of(mockupdb_server), SETTINGS))
    request = receive_request(mockupdb_server)
    assert "application" not in request.doc["client"]
    request.replies(hello_reply())
    pending.result().close()


def test_commands_after_the_handshake_use_op_msg_without_handshake_arguments(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    pending = run_command(conn, "admin", {"hello": 1})
    request = receive_request(mockupdb_server)
    assert isinstance(request, OpMsg)
    assert request.doc["$db"] == "admin"
    assert "client" not in request.doc
    request.replies(hello_reply())
    assert pending.result()["isWritablePrimary"] is True


def test_limits_and_ids_come_from_the_connections_own_hello(mockupdb_server: MockupDB) -> None:
    reply = hello_reply(
        maxBsonObjectSize=1000, maxMessageSizeBytes=5000, maxWriteBatchSize=3, connectionId=99
    )
    conn = open_connection(mockupdb_server, reply)
    try:
        assert conn.limits.max_bson_object_size == 1000
        assert conn.limits.max_message_size_bytes == 5000
        assert conn.limits.max_write_batch_size == 3
        assert conn.server_connection_id == 99
        assert conn.service_id is None
    finally:
        conn.close()


def test_connection_carries_pool_fields(mockupdb_server: MockupDB) -> None:
    pending = Background(
        lambda: connect(address_of(mockupdb_server), SETTINGS, generation=3, connection_id=17)
    )
    receive_request(mockupdb_server).replies(hello_reply())
    conn: Connection = pending.result()
    assert (conn.id, conn.generation, conn.address) == (17, 3, address_of(mockupdb_server))
    conn.last_checkin_time = 12.5  # the pool writes these two
    conn.generation = 4
    conn.close("stale")
    conn.close("error")  # idempotent; the first reason stays
    assert conn.closed
    assert conn.close_reason == "stale"


def test_handshake_ok_0_raises_operation_failure_and_closes(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    closed_by_client: list[bool] = []

    def handler(peer: WirePeer) -> None:
        header, _ = peer.read()
        peer.reply(header, {"ok": 0, "errmsg": "not today", "code": 18})
        closed_by_client.append(peer.wait_closed())

    server = wire_server_factory(handler)
    with pytest.raises(OperationFailure) as info:
        connect(server.address, SETTINGS)
    assert info.value.code == 18
    assert "not today" in str(info.value)
    server.stop()  # joins the handler, which waited for the client to hang up
    assert closed_by_client == [True]


def test_load_balanced_handshake_is_hello_over_op_msg_and_records_service_id(
    mockupdb_server: MockupDB,
) -> None:
    settings = ConnectionSettings(connect_timeout=10.0, load_balanced=True)
    pending = Background(lambda: connect(address_of(mockupdb_server), settings))
    request = receive_request(mockupdb_server)
    assert isinstance(request, OpMsg)
    assert next(iter(request.doc)) == "hello"
    assert request.doc["loadBalanced"] is True
    assert request.doc["$db"] == "admin"
    assert "client" in request.doc
    service_id = ObjectId()
    request.replies(hello_reply(msg="isdbgrid", serviceId=service_id))
    conn: Connection = pending.result()
    try:
        assert conn.service_id == service_id
    finally:
        conn.close()


def test_load_balanced_handshake_without_service_id_fails_clearly(
    mockupdb_server: MockupDB,
) -> None:
    settings = ConnectionSettings(connect_timeout=10.0, load_balanced=True)
    pending = Background(lambda: connect(address_of(mockupdb_server), settings))
    receive_request(mockupdb_server).replies(hello_reply(msg="isdbgrid"))
    error = pending.error()
    assert isinstance(error, ConfigurationError)
    assert "does not support this mode" in str(error)


def test_handshake_reply_with_invalid_limits_is_a_protocol_error(
    mockupdb_server: MockupDB,
) -> None:
    pending = Background(lambda: connect(address_of(mockupdb_server), SETTINGS))
    receive_request(mockupdb_server).replies(hello_reply(maxMessageSizeBytes="large"))
    error = pending.error()
    assert isinstance(error, ProtocolError)
    assert "maxMessageSizeBytes" in str(error)
    assert error.address == address_of(mockupdb_server)


def test_settings_from_options() -> None:
    options = ClientOptions.from_uri(
        "mongodb://h/?connectTimeoutMS=1500&socketTimeoutMS=0&appname=app&loadBalanced=true"
    )
    settings = ConnectionSettings.from_options(options)
    assert settings == ConnectionSettings(
        connect_timeout=1.5, socket_timeout=None, app_name="app", load_balanced=True
    )
    tls = ConnectionSettings.from_options(ClientOptions.from_uri("mongodb://h/?tls=true"))
    assert tls.ssl_context is not None  # TLS is built from options (see test_tls_auth.py)
    with pytest.raises(ConfigurationError, match="appname"):
        ConnectionSettings(app_name="x" * 129)
    with pytest.raises(ConfigurationError, match="connect_timeout"):
        ConnectionSettings(connect_timeout=0)


# --- commands ------------------------------------------------------------------------


def test_command_round_trip(conn: Connection, mockupdb_server: MockupDB) -> None:
    command: dict[str, Any] = {"find": "things", "filter": {"x": 1}}
    pending = run_command(conn, "shop", command)
    request = receive_request(mockupdb_server)
    assert request.doc == {"find": "things", "filter": {"x": 1}, "$db": "shop"}
    assert not request.flags  # no exhaustAllowed, no checksum
    request.replies({"cursor": {"id": 0, "firstBatch": [{"x": 1}], "ns": "shop.things"}})
    reply = pending.result()
    assert reply == {"cursor": {"id": 0, "firstBatch": [{"x": 1}], "ns": "shop.things"}, "ok": 1}
    assert command["$db"] == "shop"
    assert not conn.more_to_come()


def test_command_events_carry_the_wire_request_id(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    class Recorder(CommandListener):
        def __init__(self) -> None:
            self.ids: list[int] = []

        def started(self, event: CommandStartedEvent) -> None:
            self.ids.append(event.request_id)

        def succeeded(self, event: CommandSucceededEvent) -> None:
            self.ids.append(event.request_id)

    recorder = Recorder()
    publisher = EventPublisher([recorder])
    pending = Background(lambda: monitored_command(conn, "db", {"ping": 1}, publisher))
    request = receive_request(mockupdb_server)
    request.replies({"ok": 1})
    assert pending.result() == {"ok": 1}
    assert recorder.ids == [request.request_id, request.request_id]


def test_a_command_that_cannot_be_encoded_has_no_events(mockupdb_server: MockupDB) -> None:
    """Broken variant caught: the started event published before the message is
    encoded (a started and a failed event for a command never sent)."""
    events: list[str] = []

    class Recorder(CommandListener):
        def started(self, event: CommandStartedEvent) -> None:
            events.append("started")

        def succeeded(self, event: CommandSucceededEvent) -> None:
            events.append("succeeded")

        def failed(self, event: CommandFailedEvent) -> None:
            events.append("failed")

    publisher = EventPublisher([Recorder()])
    conn = open_connection(mockupdb_server, hello_reply(maxBsonObjectSize=1000))
    try:
        too_large = {"_id": 1, "pad": "x" * 1000}
        with pytest.raises(DocumentTooLarge):
            monitored_command(
                conn, "db", {"insert": "things"}, publisher, sequences={"documents": [too_large]}
            )
        with pytest.raises(bson.errors.InvalidDocument):
            monitored_command(conn, "db", {"ping": object()}, publisher)
        assert events == []
        assert not conn.closed  # nothing was sent: the connection stays usable
    finally:
        conn.close()


def test_document_sequences_reach_mockupdb(conn: Connection, mockupdb_server: MockupDB) -> None:
    documents = [{"_id": 1}, {"_id": 2, "tags": ["a"]}]
    pending = run_command(conn, "shop", {"insert": "things"}, sequences={"documents": documents})
    request = receive_request(mockupdb_server)
    assert request.doc["insert"] == "things"
    assert request.doc["documents"] == documents
    request.replies({"n": 2})
    assert pending.result() == {"n": 2, "ok": 1}


def _one_insert_as_received(
    wire_server_factory: Callable[..., WireServer], documents: list[Any], **hello: Any
) -> Any:
    """The OP_MSG a server receives for an insert of ``documents`` sent as a sequence."""
    seen: list[Any] = []

    def then(peer: WirePeer) -> None:
        header, message = peer.read()
        seen.append(message)
        peer.reply(header, {"ok": 1, "n": len(documents)})

    server = wire_server_factory(serve_hellos(hello_reply(**hello), then))
    conn = connect(server.address, SETTINGS)
    try:
        reply = conn.command("shop", {"insert": "things"}, sequences={"documents": documents})
    finally:
        conn.close()
    assert reply == {"ok": 1, "n": len(documents)}
    (message,) = seen
    assert isinstance(message, WireOpMsg)
    return message


def test_encoded_documents_go_as_kind_1_sections(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    documents = [{"_id": 1}, {"_id": 2}]
    encoded = [bson.encode(d) for d in documents]
    message = _one_insert_as_received(wire_server_factory, encoded)
    assert message.body == {"insert": "things", "$db": "shop"}
    assert message.sequences == {"documents": documents}


def test_documents_not_yet_encoded_travel_in_the_body_when_it_stays_small(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    documents = [{"_id": 1}, {"_id": 2, "tags": ["a"]}]
    message = _one_insert_as_received(wire_server_factory, documents)
    assert message.body == {"insert": "things", "$db": "shop", "documents": documents}
    assert message.sequences == {}


def test_documents_too_large_together_for_the_body_go_as_sequences(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    # Each fits maxBsonObjectSize (1,000 bytes); the body with both would not.
    documents = [{"_id": 1, "pad": "x" * 600}, {"_id": 2, "pad": "y" * 600}]
    message = _one_insert_as_received(wire_server_factory, documents, maxBsonObjectSize=1000)
    assert message.body == {"insert": "things", "$db": "shop"}
    assert message.sequences == {"documents": documents}


def test_ok_0_raises_operation_failure_and_keeps_the_connection(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    pending = run_command(conn, "shop", {"drop": "things"})
    receive_request(mockupdb_server).command_err(26, "ns not found", codeName="NamespaceNotFound")
    error = pending.error()
    assert isinstance(error, OperationFailure)
    assert error.code == 26
    assert error.details["codeName"] == "NamespaceNotFound"
    assert "ns not found" in str(error)
    assert not conn.closed
    pending = run_command(conn, "shop", {"drop": "things"}, check=False)
    receive_request(mockupdb_server).command_err(26, "ns not found")
    assert pending.result()["ok"] == 0


def test_size_limits_fail_before_anything_is_sent(mockupdb_server: MockupDB) -> None:
    reply = hello_reply(maxBsonObjectSize=1024, maxMessageSizeBytes=4096, maxWriteBatchSize=5)
    conn = open_connection(mockupdb_server, reply)
    try:
        with pytest.raises(DocumentTooLarge, match="maxBsonObjectSize"):
            conn.command("db", {"insert": "c"}, sequences={"documents": [{"x": "y" * 2000}]})
        with pytest.raises(DocumentTooLarge, match="maxWriteBatchSize"):
            conn.command("db", {"insert": "c"}, sequences={"documents": [{}] * 6})
        with pytest.raises(DocumentTooLarge, match="maxMessageSizeBytes"):
            conn.command("db", {"insert": "c"}, sequences={"documents": [{"x": "y" * 900}] * 5})
        with pytest.raises(DocumentTooLarge, match="command document"):
            conn.command("db", {"find": "c", "filter": {"x": "y" * 20_000}})
        assert not conn.closed
        # Nothing reached the server: the next request it sees is this one.
        pending = run_command(conn, "db", {"ping": 1})
        request = receive_request(mockupdb_server)
        assert request.doc == {"ping": 1, "$db": "db"}
        request.replies({})
        assert pending.result() == {"ok": 1}
    finally:
        conn.close()


def test_a_server_older_than_3_6_gets_op_query_commands(mockupdb_server: MockupDB) -> None:
    reply = hello_reply(maxWireVersion=5)
    del reply["helloOk"]
    conn = open_connection(mockupdb_server, reply)
    try:
        assert not conn.supports_op_msg
        assert conn.hello_ok is False
        pending = run_command(conn, "shop", {"insert": "c"}, sequences={"documents": [{"a": 1}]})
        request = receive_request(mockupdb_server)
        assert isinstance(request, Command)  # OP_QUERY on shop.$cmd
        assert request.namespace == "shop"
        assert request.doc == {"insert": "c", "documents": [{"a": 1}]}  # no $db
        request.replies({"n": 1})
        assert pending.result() == {"n": 1, "ok": 1}
        pending = run_command(conn, "shop", {"count": "c"})
        receive_request(mockupdb_server).fail("legacy failure", code=2)
        error = pending.error()
        assert isinstance(error, OperationFailure)
        assert error.code == 2
        assert not conn.closed
    finally:
        conn.close()


def test_exhaust_replies_are_read_with_receive(conn: Connection, mockupdb_server: MockupDB) -> None:
    pending = run_command(conn, "admin", {"hello": 1}, exhaust_allowed=True)
    request = receive_request(mockupdb_server)
    assert request.flags & EXHAUST_ALLOWED
    request.replies(OpMsgReply({"n": 1}, flags=MORE_TO_COME))
    assert pending.result() == {"n": 1, "ok": 1}
    assert conn.more_to_come()
    with pytest.raises(MongoCoreError, match="receive"):
        conn.command("admin", {"ping": 1})
    request.replies(OpMsgReply({"n": 2}, flags=MORE_TO_COME))
    assert conn.receive(timeout=10.0) == {"n": 2, "ok": 1}
    assert conn.more_to_come()
    request.replies(OpMsgReply({"n": 3}))
    assert conn.receive(timeout=10.0) == {"n": 3, "ok": 1}
    assert not conn.more_to_come()
    with pytest.raises(MongoCoreError, match="no further reply"):
        conn.receive(timeout=1.0)


def test_exhaust_replies_arriving_together_are_each_read_once(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    """A reply is read with up to 64 KiB of read-ahead, so replies of an exhaust
    stream that arrive together come in one read. The broken variant this catches:
    bytes read past the end of a reply being dropped instead of kept for the next
    read (receive() would then wait for replies already consumed), or being kept
    twice (the first reply returned again)."""
    pending = run_command(conn, "admin", {"hello": 1}, exhaust_allowed=True)
    request = receive_request(mockupdb_server)
    rid = request.request_id
    stream = b"".join(
        encode_op_msg({"n": n, "ok": 1}, 900 + n, response_to=rid, flag_bits=flags)
        for n, flags in ((1, MORE_TO_COME), (2, MORE_TO_COME), (3, 0))
    )
    request.replies(RawReply(stream))
    assert pending.result() == {"n": 1, "ok": 1}
    assert conn.receive(timeout=10.0) == {"n": 2, "ok": 1}
    assert conn.receive(timeout=10.0) == {"n": 3, "ok": 1}
    assert not conn.more_to_come()
    # The stream is over and nothing was left behind: the next command works.
    pending = run_command(conn, "admin", {"ping": 1})
    receive_request(mockupdb_server).ok(pong=True)
    assert pending.result() == {"pong": True, "ok": 1}


class _RecordingSocket:
    """A socket that records how many bytes each read asks for."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.sizes: list[int] = []

    def recv(self, size: int, *flags: int) -> bytes:
        self.sizes.append(size)
        return self._sock.recv(size, *flags)

    def recv_into(self, buffer: Any, *args: int) -> int:
        self.sizes.append(len(buffer))
        return self._sock.recv_into(buffer, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@pytest.mark.parametrize(("monitoring", "first_read"), [(True, 16), (False, 64 * 1024)])
def test_a_monitor_reads_a_header_first_other_connections_read_ahead(
    mockupdb_server: MockupDB, monitoring: bool, first_read: int
) -> None:
    """A read allocates the whole buffer it asks for before it blocks, and a monitor
    blocks in its read for up to heartbeatFrequencyMS: it asks for a header only,
    then the body. Broken variant caught: monitors reading 64 KiB ahead, which every
    client then holds per server while its monitors wait (tracemalloc counted 192 KiB
    per client of a 3-member set). Other connections still read 64 KiB ahead."""
    pending = Background(
        lambda: connect(address_of(mockupdb_server), SETTINGS, monitoring=monitoring)
    )
    receive_request(mockupdb_server).replies(hello_reply())
    conn: Connection = pending.result()
    try:
        recording = _RecordingSocket(conn._sock)
        conn._sock = recording  # type: ignore[assignment]
        command = run_command(conn, "admin", {"hello": 1})
        receive_request(mockupdb_server).ok(isWritablePrimary=True)
        assert command.result()["isWritablePrimary"] is True
        assert recording.sizes[0] == first_read
    finally:
        conn.close()


def test_more_to_come_without_exhaust_allowed_is_a_protocol_error(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    pending = run_command(conn, "admin", {"ping": 1})
    receive_request(mockupdb_server).replies(OpMsgReply({"n": 1}, flags=MORE_TO_COME))
    error = pending.error()
    assert isinstance(error, ProtocolError)
    assert "moreToCome" in str(error)
    assert conn.closed


def test_unix_domain_socket(mockupdb_factory: Callable[..., MockupDB], tmp_path: Path) -> None:
    if not hasattr(socket, "AF_UNIX"):
        pytest.skip("this platform has no Unix domain sockets")
    server = mockupdb_factory(uds_path=str(tmp_path / "mongodb-test.sock"))
    HelloResponder.install(server)
    address = address_of(server)
    assert address.port is None
    conn = connect(address, SETTINGS)
    try:
        pending = run_command(conn, "db", {"ping": 1})
        receive_request(server).replies({"pong": True})
        assert pending.result() == {"pong": True, "ok": 1}
    finally:
        conn.close()


@pytest.mark.usefixtures("ipv6_loopback")
def test_ipv6_loopback(wire_server_factory: Callable[..., WireServer]) -> None:
    seen: list[Any] = []

    def then(peer: WirePeer) -> None:
        header, message = peer.read()
        seen.append(message)
        peer.reply(header, {"ok": 1, "family": "inet6"})

    # mockupdb binds IPv4 only, hence mongocore's own small server here.
    server = wire_server_factory(serve_hellos(hello_reply(), then), socket.AF_INET6, "::1")
    conn = connect(Address("::1", server.address.port), SETTINGS)
    try:
        assert conn.command("db", {"ping": 1}) == {"ok": 1, "family": "inet6"}
    finally:
        conn.close()
    assert isinstance(seen[0], WireOpMsg)


def test_each_resolved_address_is_tried(hello_server: MockupDB) -> None:
    # "localhost" may resolve to ::1 first; mockupdb listens on 127.0.0.1 only.
    conn = connect(Address("localhost", hello_server.port), SETTINGS)
    try:
        assert conn.hello["ok"] == 1
    finally:
        conn.close()


def test_handshake_messages_decode_with_our_codec(
    wire_server_factory: Callable[..., WireServer],
) -> None:
    seen: list[Any] = []

    def handler(peer: WirePeer) -> None:
        header, message = peer.read()
        seen.append(message)
        peer.reply(header, hello_reply())
        peer.wait_closed()

    server = wire_server_factory(handler)
    connect(server.address, SETTINGS).close()
    server.stop()
    (query,) = seen
    assert isinstance(query, WireOpQuery)
    assert query.full_collection_name == "admin.$cmd"
    assert query.number_to_return == -1
    assert query.query["isMaster"] == 1


# --- failures: every one closes the connection and says what happened ----------------


def reply_header(length: int, response_to: int, op_code: int = 2013) -> bytes:
    return struct.pack("<iiii", length, 12345, response_to, op_code)


@pytest.mark.parametrize(
    ("make_bytes", "expected"),
    [
        pytest.param(
            lambda rid: reply_header(2**31 - 1, rid),
            "exceeds the maximum message size",
            id="2GiB-length-header",
        ),
        pytest.param(
            lambda rid: reply_header(-5, rid), "below the 16-byte header", id="negative-length"
        ),
        pytest.param(
            lambda rid: reply_header(40, rid, op_code=9999) + b"\x00" * 24,
            "unsupported opcode 9999",
            id="unknown-opcode",
        ),
        pytest.param(
            lambda rid: (
                reply_header(16 + 15, rid) + b"\x00" * 5 + b"\x0a\x00\x00\x00\x99x\x00\x01\x00\x00"
            ),
            "invalid BSON",
            id="garbage-body",
        ),
        pytest.param(
            lambda rid: encode_op_msg({"ok": 1}, 5, response_to=rid + 1),
            "does not match requestID",
            id="wrong-responseTo",
        ),
        pytest.param(
            lambda rid: b"garbage!" * 8, "exceeds the maximum message size", id="garbage-header"
        ),
    ],
)
def test_hostile_replies_raise_protocol_error_and_close(
    conn: Connection,
    mockupdb_server: MockupDB,
    make_bytes: Callable[[int], bytes],
    expected: str,
) -> None:
    pending = run_command(conn, "db", {"ping": 1})
    request = receive_request(mockupdb_server)
    request.replies(RawReply(make_bytes(request.request_id)))
    error = pending.error()
    assert isinstance(error, ProtocolError), error
    assert expected in str(error)
    assert str(conn.address) in str(error)
    assert error.address == conn.address
    assert conn.closed
    with pytest.raises(NetworkError, match="closed"):
        conn.command("db", {"ping": 1})


def test_server_closing_mid_reply_raises_network_error(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    pending = run_command(conn, "db", {"ping": 1})
    request = receive_request(mockupdb_server)
    whole = encode_op_msg({"ok": 1, "pad": "x" * 100}, 77, response_to=request.request_id)
    request.replies(RawReply(whole[: len(whole) // 2]))
    request.hangup()
    error = pending.error()
    assert isinstance(error, NetworkError)
    assert not isinstance(error, NetworkTimeout)
    assert "connection closed by the server" in str(error)
    assert error.address == conn.address
    assert conn.closed


def test_server_never_answering_times_out(mockupdb_server: MockupDB) -> None:
    conn = open_connection(mockupdb_server, hello_reply(), socket_timeout=0.3)
    pending = run_command(conn, "db", {"ping": 1})
    receive_request(mockupdb_server)  # received, never answered
    error = pending.error()
    assert isinstance(error, NetworkTimeout)
    assert "timed out" in str(error)
    assert error.address == conn.address
    assert conn.closed


def test_explicit_timeout_overrides_the_socket_timeout(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    pending = run_command(conn, "db", {"ping": 1}, timeout=0.2)
    receive_request(mockupdb_server)
    assert isinstance(pending.error(), NetworkTimeout)
    assert conn.closed


def test_handshake_never_answered_times_out(mockupdb_server: MockupDB) -> None:
    settings = ConnectionSettings(connect_timeout=0.3)
    pending = Background(lambda: connect(address_of(mockupdb_server), settings))
    receive_request(mockupdb_server)
    error = pending.error()
    assert isinstance(error, NetworkTimeout)
    assert error.address == address_of(mockupdb_server)
    # Backpressure (CMAP "Establishing a Connection"): an overloaded server may be slow.
    assert error.error_labels == BACKPRESSURE


def test_handshake_closed_by_the_server_carries_backpressure_labels(
    mockupdb_server: MockupDB,
) -> None:
    pending = Background(lambda: connect(address_of(mockupdb_server), SETTINGS))
    receive_request(mockupdb_server).hangup()
    error = pending.error()
    assert isinstance(error, NetworkError)
    assert error.error_labels == BACKPRESSURE


def test_connection_refused_is_a_network_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = Address("127.0.0.1", port)
    with pytest.raises(NetworkError) as info:
        connect(address, SETTINGS)
    assert info.value.address == address
    assert str(address) in str(info.value)
    # Nothing listens there: no server to be overloaded, so no backpressure labels
    # (with them SDAM would keep a dead server selectable).
    assert info.value.error_labels == frozenset()


def test_unresolvable_host_is_a_network_error() -> None:
    with pytest.raises(NetworkError, match="could not resolve") as info:
        connect(Address("host.invalid", 27017), SETTINGS)
    # No server was reached, so none can be overloaded: no backpressure labels.
    assert info.value.error_labels == frozenset()


def test_close_from_another_thread_interrupts_a_blocked_command(
    conn: Connection, mockupdb_server: MockupDB
) -> None:
    pending = run_command(conn, "db", {"ping": 1}, timeout=None)
    receive_request(mockupdb_server)  # the command is now blocked reading the reply
    conn.close("stale")
    error = pending.error()
    assert isinstance(error, NetworkError)
    assert "closed (stale)" in str(error)
    assert conn.closed
    assert conn.close_reason == "stale"


@contextlib.contextmanager
def _never_accepting_port() -> Iterator[int]:
    """A port whose listener never accepts, its backlog filled: on Linux the next
    connect to it blocks in the TCP handshake, elsewhere in the hello."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(4)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
            yield port
        finally:
            for filler in fillers:
                filler.close()


def test_cancellation_aborts_connection_establishment() -> None:
    # Wherever the connect blocks, cancel() must end it.
    settings = ConnectionSettings(connect_timeout=600.0)
    with _never_accepting_port() as port:
        cancellation = Cancellation()
        pending = Background(
            lambda: connect(Address("127.0.0.1", port), settings, cancellation=cancellation)
        )
        cancellation.cancel()
        error = pending.error()
    assert isinstance(error, NetworkError)
    assert "cancelled" in str(error)
    assert cancellation.cancelled
    assert error.error_labels == frozenset()


class _CancelledOnAttach(Cancellation):
    """Cancelled by "another thread" just after the socket is attached, before the
    connect begins: the moment a shutdown cannot abort anything yet."""

    def attach(self, sock: Optional[socket.socket]) -> bool:
        attached = super().attach(sock)
        if sock is not None:
            self.cancel()
        return attached


def test_cancellation_before_the_connect_begins_is_not_lost() -> None:
    """The broken variant this catches: a connect begun with a plain blocking
    ``sock.connect()`` after ``attach()``. ``cancel()`` then shuts down a socket that
    is not connecting yet (a no-op), and the connect to a listener whose backlog is
    full waits for its whole connectTimeoutMS (600 s here) instead of ending now."""
    settings = ConnectionSettings(connect_timeout=600.0)
    with _never_accepting_port() as port:
        cancellation = _CancelledOnAttach()
        error = Background(
            lambda: connect(Address("127.0.0.1", port), settings, cancellation=cancellation)
        ).error()
    assert isinstance(error, NetworkError)
    assert "cancelled" in str(error)
