"""Loopback servers for integration tests, and helpers to drive them.

Two kinds of server:

- mockupdb's ``MockupDB``, a wire-protocol server written independently of mongocore, is
  the main one: what mongocore sends is decoded by someone else's code. A
  :class:`HelloResponder` answers the handshakes and plain hellos of a MockupDB and can be
  told to fail the next ones; every other request (including awaitable hellos) is left in
  the server's queue for the test to ``receives()`` and answer. :class:`RawReply` sends
  arbitrary bytes as a reply, for hostile-server tests.
- :class:`WireServer`, a tiny threaded server built on ``mongocore.core.wire``, for what
  MockupDB cannot do: listening on IPv6, and seeing document sequences as sections.

Every server binds to loopback with an automatic port; the fixtures in ``conftest.py``
stop them (and join their threads) in teardown.
"""

from __future__ import annotations

import contextlib
import queue
import selectors
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Optional, TypeVar

from bson import ObjectId
from bson.int64 import Int64
from mockupdb import MockupDB, OpMsgReply

from mongocore.core.address import Address
from mongocore.core.wire import (
    OpCode,
    encode_op_msg,
    encode_op_reply,
    read_message,
)
from mongocore.core.wire.codec import Message
from mongocore.core.wire.header import MsgHeader
from mongocore.io.counters import next_request_id

T = TypeVar("T")

#: How long a test waits for something that should happen soon. Generous on purpose:
#: it only bounds a failing test, it never slows a passing one.
DEADLINE = 10.0


def hello_reply(**fields: Any) -> dict[str, Any]:
    """A standalone server's hello reply (MongoDB 7-like); ``fields`` override or add."""
    reply: dict[str, Any] = {
        "ismaster": True,
        "isWritablePrimary": True,
        "helloOk": True,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": 1,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "readOnly": False,
        "ok": 1.0,
    }
    reply.update(fields)
    return reply


def topology_version(process_id: Optional[ObjectId] = None, counter: int = 0) -> dict[str, Any]:
    return {"processId": process_id or ObjectId(), "counter": Int64(counter)}


def address_of(server: MockupDB) -> Address:
    """The mongocore Address of a running MockupDB (it listens on 127.0.0.1 or a path)."""
    if server.port == 0:  # a Unix domain socket
        return Address(server.host, None)
    return Address("127.0.0.1", server.port)


class RawReply(OpMsgReply):  # type: ignore[misc]
    """A MockupDB reply that sends exactly the given bytes."""

    def __init__(self, data: bytes) -> None:
        super().__init__({})
        self._data = data

    def reply_bytes(self, request: Any) -> bytes:
        return self._data


def is_hello(request: Any) -> bool:
    name = (request.command_name or "").lower()
    return name in ("ismaster", "hello")


def is_awaitable_hello(request: Any) -> bool:
    return is_hello(request) and "maxAwaitTimeMS" in request.doc


Action = Callable[[Any], bool]


class HelloResponder:
    """Answers handshakes and plain (not awaitable) hellos on a MockupDB.

    ``reply`` is the hello reply; ``handshake_reply``, if given, answers handshakes
    instead. ``then(*actions)`` queues one-shot actions for the next hellos, in order;
    an action returns True when it answered the request, False to leave it queued in
    the server for the test (see :meth:`hold`). Every hello this responder sees is put
    on ``seen`` (handshakes included), so tests can wait for them.
    """

    def __init__(
        self, reply: Mapping[str, Any], handshake_reply: Optional[Mapping[str, Any]] = None
    ) -> None:
        self._lock = threading.Lock()
        self._reply = dict(reply)
        self._handshake_reply = dict(handshake_reply) if handshake_reply is not None else None
        self._actions: deque[Action] = deque()
        self.seen: queue.Queue[Any] = queue.Queue()

    @classmethod
    def install(
        cls,
        server: MockupDB,
        reply: Optional[Mapping[str, Any]] = None,
        handshake_reply: Optional[Mapping[str, Any]] = None,
    ) -> HelloResponder:
        responder = cls(reply if reply is not None else hello_reply(), handshake_reply)
        server.autoresponds(responder.handle)
        return responder

    def set_reply(
        self, reply: Mapping[str, Any], handshake_reply: Optional[Mapping[str, Any]] = None
    ) -> None:
        with self._lock:
            self._reply = dict(reply)
            self._handshake_reply = dict(handshake_reply) if handshake_reply is not None else None

    def then(self, *actions: Action) -> None:
        with self._lock:
            self._actions.extend(actions)

    def handle(self, request: Any) -> bool:
        if not is_hello(request) or is_awaitable_hello(request):
            return False
        self.seen.put(request)
        with self._lock:
            action = self._actions.popleft() if self._actions else None
            handshake = "client" in request.doc
            reply = self._handshake_reply if handshake and self._handshake_reply else self._reply
        if action is not None:
            return action(request)
        request.replies(dict(reply))
        return True

    def next_seen(self) -> Any:
        return self.seen.get(timeout=DEADLINE)

    # One-shot actions.

    @staticmethod
    def hang_up(request: Any) -> bool:
        request.hangup()
        return True

    @staticmethod
    def hold(request: Any) -> bool:
        return False

    @staticmethod
    def answer(reply: Mapping[str, Any]) -> Action:
        def action(request: Any) -> bool:
            request.replies(dict(reply))
            return True

        return action

    @staticmethod
    def send_raw(data: bytes) -> Action:
        def action(request: Any) -> bool:
            request.replies(RawReply(data))
            return True

        return action


class Background:
    """Runs a function on a thread; ``result()`` joins it and returns or re-raises."""

    def __init__(self, fn: Callable[[], Any], name: str = "test-background") -> None:
        self._fn = fn
        self._result: Any = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name=name)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._fn()
        except BaseException as exc:
            self._error = exc

    def done(self) -> bool:
        """Has the function returned or raised already?"""
        return not self._thread.is_alive()

    def result(self, timeout: float = DEADLINE) -> Any:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"{self._fn!r} did not finish within {timeout}s")
        if self._error is not None:
            raise self._error
        return self._result

    def error(self, timeout: float = DEADLINE) -> BaseException:
        """Join, and return the exception the function raised (fail if it returned)."""
        try:
            value = self.result(timeout)
        except AssertionError:
            raise
        except BaseException as exc:
            return exc
        raise AssertionError(f"expected an exception, got {value!r}")


def receive_request(server: MockupDB) -> Any:
    """The next request queued in a MockupDB (one no responder answered)."""
    request = server.receives(timeout=DEADLINE)
    assert request is not None, "the server was stopped"
    return request


# --- a tiny server on mongocore's own codec -----------------------------------------


class WirePeer:
    """The server side of one client connection of a :class:`WireServer`."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def _recv_exactly(self, size: int) -> bytes:
        chunks = []
        remaining = size
        while remaining:
            chunk = self.sock.recv(remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def read(self) -> tuple[MsgHeader, Message]:
        return read_message(self._recv_exactly, 48_000_000)

    def reply(self, request: MsgHeader, document: Mapping[str, Any], flags: int = 0) -> None:
        request_id = next_request_id()
        if request.op_code == OpCode.OP_QUERY:
            data = encode_op_reply([document], request_id, request.request_id)
        else:
            data = encode_op_msg(
                document, request_id, response_to=request.request_id, flag_bits=flags
            )
        self.sock.sendall(data)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def wait_closed(self) -> bool:
        """Block until the client closes its end; True if it did (not a stop)."""
        try:
            return self.sock.recv(1) == b""
        except OSError:
            return False


Handler = Callable[[WirePeer], None]


def serve_hellos(reply: Mapping[str, Any], then: Optional[Handler] = None) -> Handler:
    """A WireServer handler: answer the handshake with ``reply``, then hand the peer to
    ``then`` (or keep answering hellos until the client leaves)."""

    def handler(peer: WirePeer) -> None:
        header, _ = peer.read()
        peer.reply(header, reply)
        if then is not None:
            then(peer)
            return
        while True:
            header, _ = peer.read()
            peer.reply(header, reply)

    return handler


class WireServer:
    """A threaded loopback server calling ``handler(peer)`` for each connection."""

    def __init__(
        self, handler: Handler, family: int = socket.AF_INET, host: str = "127.0.0.1"
    ) -> None:
        self._handler = handler
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, 0))
        self._listener.listen(16)
        self._listener.setblocking(False)
        self.address = Address(host, self._listener.getsockname()[1])
        self._wake_r, self._wake_w = socket.socketpair()
        self._lock = threading.Lock()
        self._stopped = False
        self._refusing = False
        self._refused = threading.Event()
        self._peers: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self._accept_thread = threading.Thread(target=self._accept_loop, name="wire-server")
        self._accept_thread.start()

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if self._wake_r in ready:
                    with self._lock:
                        if self._stopped:
                            return
                    self._wake_r.recv(1)
                    # refuse_connections(): nothing listens on the port any more.
                    selector.unregister(self._listener)
                    self._listener.close()
                    self._refused.set()
                    continue
                try:
                    sock, _ = self._listener.accept()
                except BlockingIOError:
                    continue
                sock.setblocking(True)
                thread = threading.Thread(target=self._serve, args=(sock,), name="wire-peer")
                with self._lock:
                    self._peers.append(sock)
                    self._threads.append(thread)
                thread.start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            self._handler(WirePeer(sock))
        except Exception as exc:  # the client left, or the test stopped the server
            self.errors.append(exc)
        finally:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def refuse_connections(self) -> None:
        """Close the listening socket, as a server process that died would: a new
        connection is refused, while the open ones keep being served."""
        with self._lock:
            if self._refusing or self._stopped:
                return
            self._refusing = True
        self._wake_w.send(b"r")
        assert self._refused.wait(DEADLINE), "the server kept listening"

    def stop(self) -> None:
        """Stop accepting, hang up on every client and join every thread; idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._wake_w.send(b"x")
        self._accept_thread.join()
        with self._lock:
            peers, threads = list(self._peers), list(self._threads)
        for sock in peers:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join()
        for sock in peers:
            sock.close()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()
