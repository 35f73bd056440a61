"""The TCP side of a simulated process: a listener on 127.0.0.1 and one thread per connection.

A ``WireServer`` reads whole messages with the shared wire codec and hands each to a
handler, which yields the encoded replies (none for a fire-and-forget OP_MSG, several
for an exhaust stream) or raises ``CloseConnection``. With an ``ssl_context`` every
accepted connection is TLS (the handshake runs on the connection's own thread, so a
client that gives up on it blocks nobody); with ``tls_optional`` too, a connection
whose first bytes are not a TLS record is served in plain TCP. A request in
OP_COMPRESSED, with one of the enabled compressors, is unwrapped, and its replies are
compressed the same way, as a mongod does. The listener can be closed and reopened
on the same port (a killed or partitioned member, then a restart or heal), and
``stop()`` closes every socket and joins every thread it started. Thread names start
with ``mongocore-sim-`` so a leak check can find them.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import ssl
import threading
from collections import deque
from collections.abc import Callable, Collection, Iterable
from typing import Any, NamedTuple, Optional

from mongocore.core.compression import COMPRESSOR_NAMES as _COMPRESSOR_NAMES
from mongocore.core.compression import Compressor, compressor_for
from mongocore.core.wire import (
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    HEADER_SIZE,
    Message,
    MsgHeader,
    OpCode,
    OpMsg,
    OpQuery,
    check_header,
    decode_body,
    decode_op_compressed,
    encode_op_compressed,
    unpack_header,
)
from mongocore.errors import NetworkError, ProtocolError
from mongocore.sim.codes import CloseConnection
from mongocore.sim.security import rfc2253_subject

__all__ = ["Connection", "Handler", "RequestRecord", "WireServer"]

_log = logging.getLogger("mongocore.sim.server")

# A client that opens a TCP connection and never finishes the TLS handshake is dropped.
TLS_HANDSHAKE_TIMEOUT = 30.0
# How many requests WireServer.requests remembers.
REQUEST_LOG_SIZE = 1000


class RequestRecord(NamedTuple):
    """One request as it arrived: the command's name (first key), the connection's id,
    and the compressor it was wrapped with (None: not compressed)."""

    command: str
    connection_id: int
    compressor: Optional[str]


def _command_name(message: Message) -> str:
    if isinstance(message, OpMsg):
        document: Any = message.body
    elif isinstance(message, OpQuery):
        document = message.query
        if isinstance(document, dict) and isinstance(document.get("$query"), dict):
            document = document["$query"]
    else:
        return ""
    return str(next(iter(document), "")) if isinstance(document, dict) else ""


Handler = Callable[["Connection", MsgHeader, Message], Iterable[bytes]]

# A TLS connection begins with a handshake record: content type 22, then the record
# version, 3.1 to 3.4. A wire message beginning with those three bytes would announce
# a length of at least 0x010316 (66326) bytes, which no first message (a hello) has.
_TLS_RECORD_START = (0x16, 0x03)
_TLS_MINOR_VERSIONS = range(0x01, 0x05)


def _starts_with_tls(connection: Connection) -> bool:
    """Peek (without consuming) at the first bytes a client sent: is it TLS?"""
    sock = connection.sock
    sock.settimeout(TLS_HANDSHAKE_TIMEOUT)
    try:
        head = sock.recv(3, socket.MSG_PEEK | getattr(socket, "MSG_WAITALL", 0))
    finally:
        sock.settimeout(None)
    if len(head) < 3:
        # The peer closed, or the platform does not wait for all three bytes: decide
        # on what arrived (an empty read is served as plain TCP and ends at once).
        return bool(head) and head[0] == _TLS_RECORD_START[0]
    return (head[0], head[1]) == _TLS_RECORD_START and head[2] in _TLS_MINOR_VERSIONS


class Connection:
    """One accepted client connection and what the server remembers about it."""

    def __init__(self, server: WireServer, sock: socket.socket, connection_id: int) -> None:
        self.server = server
        self.sock = sock
        self.id = connection_id
        self.closed = False
        # Filled in by the handshake (the first hello on this connection).
        self.handshake_done = False
        self.app_name: Optional[str] = None
        self.client_metadata: Optional[dict[str, Any]] = None
        self.load_balanced = False
        # Authentication: (user, db) pairs logged in, the mechanism of each login, and
        # a SASL conversation under way.
        self.authenticated_users: list[tuple[str, str]] = []
        self.mechanisms: list[str] = []
        self.sasl_conversation: Any = None
        self.thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    @property
    def tls(self) -> bool:
        return isinstance(self.sock, ssl.SSLSocket)

    def peer_subject(self) -> Optional[str]:
        """The RFC 2253 subject of the client's verified certificate, if it sent one."""
        sock = self.sock
        if not isinstance(sock, ssl.SSLSocket):
            return None
        certificate = sock.getpeercert()
        if not certificate:  # none sent, or not verified
            return None
        return rfc2253_subject(certificate.get("subject", ()))

    def recv_exactly(self, size: int) -> bytes:
        """Read exactly ``size`` bytes; fewer only if the peer closed the stream."""
        buffer = bytearray()
        while len(buffer) < size:
            chunk = self.sock.recv(size - len(buffer))
            if not chunk:
                break
            buffer += chunk
        return bytes(buffer)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        """Shut the socket down (waking a thread blocked on it) and close it."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


class WireServer:
    """A listener on ``host:port`` serving each connection on its own thread."""

    def __init__(
        self,
        label: str,
        handler: Handler,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        on_close: Optional[Callable[[], None]] = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES,
        ssl_context: Optional[ssl.SSLContext] = None,
        tls_optional: bool = False,
        compressors: Collection[str] = (),
    ) -> None:
        self.label = label
        self.host = host
        self.port = port
        self._handler = handler
        self._on_close = on_close
        self._max_message_size = max_message_size
        self._ssl_context = ssl_context
        self._tls_optional = tls_optional
        self._compressors: dict[int, Compressor] = {}
        for name in compressors:
            compressor = compressor_for(name)
            self._compressors[compressor.id] = compressor
        self._requests: deque[RequestRecord] = deque(maxlen=REQUEST_LOG_SIZE)
        self._lock = threading.Lock()
        self._connections: set[Connection] = set()
        self._threads: set[threading.Thread] = set()
        #: Connections whose thread waits for something other than its socket (an
        #: awaitable hello): the accept loop watches their sockets for a hang-up.
        self._watched: set[Connection] = set()
        self._next_id = 0
        self._listener: Optional[socket.socket] = None
        self._accept_thread: Optional[threading.Thread] = None
        self._wake_r: Optional[socket.socket] = None
        self._wake_w: Optional[socket.socket] = None
        self._stopped = False

    @property
    def listening(self) -> bool:
        return self._listener is not None

    def open_listener(self) -> None:
        """Bind (the same port after the first time) and start accepting connections."""
        with self._lock:
            if self._listener is not None or self._stopped:
                return
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind((self.host, self.port))
                listener.listen(128)
            except OSError:
                listener.close()
                raise
            listener.setblocking(False)
            self.port = listener.getsockname()[1]
            self._wake_r, self._wake_w = socket.socketpair()
            self._listener = listener
            thread = threading.Thread(
                target=self._accept_loop,
                args=(listener, self._wake_r),
                name=f"mongocore-sim-accept-{self.label}-{self.port}",
                daemon=True,
            )
            self._accept_thread = thread
        thread.start()

    def close_listener(self) -> None:
        """Stop accepting: a connection attempt is refused until ``open_listener()``."""
        with self._lock:
            listener, thread = self._listener, self._accept_thread
            wake_r, wake_w = self._wake_r, self._wake_w
            self._listener = self._accept_thread = self._wake_r = self._wake_w = None
        if listener is None:
            return
        assert wake_w is not None and wake_r is not None and thread is not None
        with contextlib.suppress(OSError):
            wake_w.send(b"x")
        if thread is not threading.current_thread():
            thread.join()
        listener.close()
        wake_w.close()
        wake_r.close()

    def close_connections(self) -> None:
        """Close every open connection; their threads end on their own."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close()
        if self._on_close is not None:
            self._on_close()

    def reset_connection_ids(self) -> None:
        with self._lock:
            self._next_id = 0

    def connection_count(self) -> int:
        with self._lock:
            return len(self._connections)

    @property
    def connections_created(self) -> int:
        """Connections accepted since the listener's process (re)started."""
        with self._lock:
            return self._next_id

    def connection(self, connection_id: int) -> Optional[Connection]:
        """The open connection with this id (the hello's ``connectionId``), if any."""
        with self._lock:
            for connection in self._connections:
                if connection.id == connection_id:
                    return connection
        return None

    @property
    def requests(self) -> list[RequestRecord]:
        """The last requests received (up to REQUEST_LOG_SIZE), oldest first."""
        with self._lock:
            return list(self._requests)

    def _record(self, message: Message, connection: Connection, compressor: Optional[str]) -> None:
        with self._lock:
            self._requests.append(RequestRecord(_command_name(message), connection.id, compressor))

    def stop(self) -> None:
        """Close the listener and every connection, and join every thread."""
        with self._lock:
            self._stopped = True
        self.close_listener()
        self.close_connections()
        current = threading.current_thread()
        while True:
            with self._lock:
                threads = [t for t in self._threads if t is not current]
            if not threads:
                break
            for thread in threads:
                thread.join()
                with self._lock:
                    self._threads.discard(thread)

    def watch_hang_up(self, connection: Connection) -> None:
        """While ``connection``'s thread waits on something else than its socket (an
        awaitable hello waits for a change of the topology), the accept loop watches
        the socket: a client that hangs up then gets its connection closed at once,
        and ``on_close`` wakes the waiting thread, which ends. A client waiting for a
        reply sends nothing, so anything readable means it has gone."""
        with self._lock:
            self._watched.add(connection)
            wake = self._wake_w
        self._wake(wake)

    def unwatch_hang_up(self, connection: Connection) -> None:
        """The thread is done waiting: its socket is its own again."""
        with self._lock:
            self._watched.discard(connection)
            wake = self._wake_w
        self._wake(wake)

    @staticmethod
    def _wake(wake: Optional[socket.socket]) -> None:
        if wake is not None:
            # A full buffer means a wake-up is pending already.
            with contextlib.suppress(OSError):
                wake.send(b"w", socket.MSG_DONTWAIT)

    def _accept_loop(self, listener: socket.socket, wake: socket.socket) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            watching: dict[Connection, socket.socket] = {}
            self._sync_watched(selector, watching)
            while True:
                events = selector.select()
                for key, _ in events:
                    if key.fileobj is wake:
                        if b"x" in wake.recv(4096):
                            return
                        self._sync_watched(selector, watching)
                    elif key.fileobj is listener:
                        try:
                            sock, _peer = listener.accept()
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError:
                            return
                        self._start_connection(sock)
                    else:
                        self._hung_up(selector, watching, key.data)

    def _sync_watched(
        self, selector: selectors.BaseSelector, watching: dict[Connection, socket.socket]
    ) -> None:
        with self._lock:
            watched = {c for c in self._watched if not c.closed}
        for connection in [c for c in watching if c not in watched]:
            with contextlib.suppress(KeyError, ValueError, OSError):
                selector.unregister(watching[connection])
            del watching[connection]
        for connection in watched - set(watching):
            sock = connection.sock
            try:
                selector.register(sock, selectors.EVENT_READ, connection)
            except (KeyError, ValueError, OSError):
                continue  # closed meanwhile
            watching[connection] = sock

    def _hung_up(
        self,
        selector: selectors.BaseSelector,
        watching: dict[Connection, socket.socket],
        connection: Connection,
    ) -> None:
        sock = watching.pop(connection, None)
        if sock is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                selector.unregister(sock)
        with self._lock:
            # Still waiting (its thread unwatches before it replies, and only a reply
            # lets a client send again): the readable socket is a hang-up.
            still_waiting = connection in self._watched
        if still_waiting:
            connection.close()
            if self._on_close is not None:
                self._on_close()

    def _start_connection(self, sock: socket.socket) -> None:
        sock.setblocking(True)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            if self._stopped or self._listener is None:
                sock.close()
                return
            self._next_id += 1
            connection = Connection(self, sock, self._next_id)
            thread = threading.Thread(
                target=self._serve,
                args=(connection,),
                name=f"mongocore-sim-conn-{self.label}-{self.port}-{connection.id}",
                daemon=True,
            )
            connection.thread = thread
            self._connections.add(connection)
            # Forget threads that have already finished, so a long run stays small.
            self._threads = {t for t in self._threads if t.is_alive()}
            self._threads.add(thread)
        thread.start()

    def _serve(self, connection: Connection) -> None:
        try:
            context = self._ssl_context
            if context is not None and self._tls_optional and not _starts_with_tls(connection):
                context = None
            if context is not None and not self._start_tls(connection, context):
                return
            while not connection.closed:
                header, message, compressor = self._read(connection)
                self._record(message, connection, compressor.name if compressor else None)
                for reply in self._handler(connection, header, message):
                    if compressor is not None:
                        connection.send(encode_op_compressed(reply, compressor))
                    else:
                        connection.send(reply)
        except (OSError, NetworkError, ProtocolError, CloseConnection):
            pass
        except Exception:
            _log.exception("simulated server %s: error serving a connection", self.label)
        finally:
            connection.close()
            with self._lock:
                self._connections.discard(connection)

    def _start_tls(self, connection: Connection, context: ssl.SSLContext) -> bool:
        """Run the server side of the TLS handshake; False if it failed."""
        with connection._lock:
            if connection.closed:
                return False
            # No I/O yet: the socket is swapped under the lock, so close() from another
            # thread shuts down the TLS socket, failing a handshake in progress.
            tls_sock = context.wrap_socket(
                connection.sock, server_side=True, do_handshake_on_connect=False
            )
            connection.sock = tls_sock
        try:
            tls_sock.settimeout(TLS_HANDSHAKE_TIMEOUT)
            tls_sock.do_handshake()
            tls_sock.settimeout(None)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            _log.debug("simulated server %s: TLS handshake failed: %s", self.label, exc)
            return False
        return True

    def _read(self, connection: Connection) -> tuple[MsgHeader, Message, Optional[Compressor]]:
        """Read one request; an OP_COMPRESSED one is unwrapped, and its compressor kept
        for the replies."""
        raw_header = connection.recv_exactly(HEADER_SIZE)
        if len(raw_header) != HEADER_SIZE:
            raise NetworkError("connection closed while reading a message header")
        header = unpack_header(raw_header)
        check_header(header, self._max_message_size)
        length = header.message_length - HEADER_SIZE
        body = connection.recv_exactly(length) if length else b""
        if len(body) != length:
            raise NetworkError("connection closed while reading a message body")
        if header.op_code != OpCode.OP_COMPRESSED:
            message = decode_body(
                header, body, raw_header=raw_header, max_message_size=self._max_message_size
            )
            return header, message, None
        unwrapped = decode_op_compressed(header, body, max_message_size=self._max_message_size)
        compressor = self._compressors.get(unwrapped.compressor_id)
        if compressor is None:
            name = _COMPRESSOR_NAMES.get(unwrapped.compressor_id, "unknown")
            raise ProtocolError(f"compressor {name} is not enabled on this server")
        return header, unwrapped.message, compressor
