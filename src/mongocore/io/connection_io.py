"""The socket of one connection: messages out, replies in, every step under a deadline.

Specs: Client Side Operations Timeout and the socket timeouts of the URI Options spec
(connectTimeoutMS while establishing, socketTimeoutMS, an operation's timeoutMS), as
deadlines (:mod:`mongocore.io.deadlines`); OP_MSG ("moreToCome" and "exhaustAllowed":
replies streamed after one request) and the reply checks of :mod:`mongocore.core.wire`
(a header may claim at most the server's maxMessageSizeBytes, capped); Connection
Monitoring and Pooling ("Closing a Connection", and interruptInUseConnections: a
connection closed from another thread fails the I/O blocked on it at once).

:class:`ConnectionIO` is what :class:`~mongocore.io.connection.Connection` builds its
handshake and commands on. Any failure closes the socket before the error propagates,
and an error says whether the request went out in full (:func:`request_not_sent`).

Threads: a connection is used by one thread at a time, but :meth:`ConnectionIO.close`
may be called from any thread (a monitor being closed, a pool interrupting in-use
connections). It shuts the socket down, which makes a blocked read or write fail at
once; the file descriptor itself is released by whichever thread finishes last, so it
is never reused while another thread may still touch it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any, Optional, TypeVar

from mongocore.core.address import Address
from mongocore.core.wire import (
    HEADER_SIZE,
    MORE_TO_COME,
    MsgHeader,
    OpCode,
    OpMsg,
    OpReply,
    SizeLimits,
    check_header,
    decode_body,
    decode_op_msg,
    max_reply_size,
    unpack_header,
)
from mongocore.errors import (
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    ProtocolError,
)
from mongocore.io import clock as _clock
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.deadlines import deadline_after, earliest, recv_exactly, recv_some, send_all

__all__ = ["ConnectionIO", "request_not_sent", "shutdown_socket", "unless_sent"]

_E = TypeVar("_E", bound=BaseException)

_NOT_SENT = "_mongocore_request_not_sent"

_OP_MSG = int(OpCode.OP_MSG)

#: Bytes asked of the socket by the first read of a reply: most replies arrive whole
#: in one read, header and body. What follows a reply in the stream (the next reply of
#: an exhaust stream) is kept for the next read. Not for monitors (see __init__).
READ_AHEAD = 64 * 1024


def request_not_sent(error: BaseException) -> bool:
    """Did ``error`` end a command before its request was handed to the socket in
    full? Then the server cannot have run it (a server never runs part of a message,
    and the connection is closed)."""
    return bool(getattr(error, _NOT_SENT, False))


def unless_sent(error: _E, sent: bool) -> _E:
    """Mark ``error`` as ending a request that did not go out in full (unless ``sent``)."""
    if not sent:
        setattr(error, _NOT_SENT, True)
    return error


def shutdown_socket(sock: socket.socket) -> None:
    """Shut a socket down (both ways), failing any read or write blocked on it."""
    with contextlib.suppress(OSError):  # not connected, or already closed
        sock.shutdown(socket.SHUT_RDWR)


class ConnectionIO:
    """The socket of a connection and its message exchange (see the module docstring).

    ``settings`` give the default read timeout (socketTimeoutMS, or connectTimeoutMS
    for a ``monitoring`` connection); while ``_establishment_deadline`` is set (by
    :func:`~mongocore.io.connection.connect`), every exchange ends by then.
    """

    address: Address
    limits: SizeLimits
    #: The pool reads these two at every checkout and checkin: plain attributes, which
    #: only this class writes (``closed`` under its lock, once, in close()).
    id: int
    closed: bool

    def __init__(
        self,
        sock: socket.socket,
        address: Address,
        settings: ConnectionSettings,
        *,
        connection_id: int = 0,
        monitoring: bool = False,
    ) -> None:
        self._sock = sock
        self.address = address
        self.id = connection_id
        self._settings = settings
        # Monitoring sockets read with connectTimeoutMS ("Socket timeout for monitoring").
        self._default_timeout = settings.connect_timeout if monitoring else settings.socket_timeout
        #: Set by connect() while establishing: every exchange ends by then.
        self._establishment_deadline: Optional[float] = None
        self._lock = threading.Lock()
        self.closed = False
        self._close_reason: Optional[str] = None
        self._busy = False
        self._more_to_come = False
        self._stream_ids: tuple[int, int] = (0, 0)
        self.limits = SizeLimits()
        # max_reply_size(self.limits...), computed again only when limits change.
        self._reply_size_limits: Optional[SizeLimits] = None
        self._max_reply_size = 0
        #: Bytes received past the end of the last message (read ahead).
        self._received: bytes = b""
        # A read allocates its whole buffer before it blocks, and a monitor blocks in
        # its read for up to heartbeatFrequencyMS (an awaitable hello): with 64 KiB of
        # read-ahead, every client would hold 64 KiB per server for nothing. A monitor
        # reads a reply's header, then its body (one more system call per heartbeat).
        self._read_ahead = HEADER_SIZE if monitoring else READ_AHEAD
        # A monitor's read whose wait ran out looks at the socket once more (see
        # mongocore.io.deadlines): its thread may run only after the reply came.
        self._look_again = monitoring

    # --- closing -----------------------------------------------------------------------

    def close(self, reason: str = "error") -> None:
        """Close the connection; safe from any thread, idempotent.

        A read or write blocked in another thread fails at once with NetworkError.
        """
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._close_reason = reason
            shutdown_socket(self._sock)
            if not self._busy:
                self._sock.close()

    def shutdown_nowait(self) -> None:
        """Shut the socket down without the lock, for a finalizer (which may run while
        this thread holds it): a read or write blocked on it fails, and its thread then
        closes the connection. Harmless on a closed socket."""
        shutdown_socket(self._sock)

    def _closed_error(self) -> NetworkError:
        return NetworkError(
            f"connection {self.id} to {self.address} is closed ({self._close_reason})",
            address=self.address,
        )

    # --- I/O -----------------------------------------------------------------------------

    def more_to_come(self) -> bool:
        """True when the last reply had moreToCome: the server will send another."""
        return self._more_to_come

    def _exchange(
        self,
        data: Optional[bytes],
        request_id: int,
        timeout: Optional[float],
        deadline: Optional[float] = None,
    ) -> tuple[MsgHeader, Any]:
        """Send ``data`` (if any) and read one message; every failure closes.

        ``timeout`` bounds the sending, then the reading of the whole reply; ``deadline``
        (and, while establishing, the establishment deadline) bounds everything.
        """
        if self._establishment_deadline is not None:
            deadline = earliest(deadline, self._establishment_deadline)
        bounded = timeout is not None or deadline is not None
        limit: Optional[float] = None  # unbounded: the socket blocks (the common case)
        if bounded:
            now = _clock.monotonic()
            if data is not None and (
                (timeout is not None and timeout <= 0) or (deadline is not None and deadline <= now)
            ):
                # Nothing is sent: the connection stays as it was. (A read alone goes
                # on: a reply already there is taken, see mongocore.io.deadlines.)
                raise unless_sent(
                    NetworkTimeout(
                        f"no time left for an operation on connection {self.id} to {self.address}",
                        address=self.address,
                    ),
                    False,
                )
            limit = earliest(deadline_after(timeout, now), deadline)
        step = "sending a message"
        # The I/O begins: close() now leaves the descriptor to us. (acquire and release,
        # not a with block: the lock is taken twice per command, and a with block costs
        # twice as much.)
        lock = self._lock
        lock.acquire()
        try:
            # A local: mypy would take self.closed as False for the rest of the method,
            # though close() may set it during the I/O (see the end).
            closed = self.closed
            if closed:
                raise unless_sent(self._closed_error(), False)  # nothing went out
            self._busy = True
        finally:
            lock.release()
        sent = data is None
        try:
            sock = self._sock
            # No deadline to check between chunks or before a read: the socket's own
            # blocking calls, without the helpers that arm its timeout.
            blocking = limit is None and sock.gettimeout() is None
            if data is not None:
                if blocking:
                    sock.sendall(data)
                else:
                    send_all(sock, data, limit)
                sent = True
            step = "reading a reply"
            if bounded:
                limit = earliest(deadline_after(timeout), deadline)
            received = self._received
            self._received = b""
            while len(received) < HEADER_SIZE:
                more = (
                    sock.recv(self._read_ahead)
                    if blocking
                    else recv_some(sock, self._read_ahead, limit, self._look_again)
                )
                if not more:
                    raise NetworkError(self._closed_early(len(received), HEADER_SIZE))
                received = received + more if received else more
            raw_header = received[:HEADER_SIZE]
            header = unpack_header(raw_header)
            limits = self.limits
            if limits is not self._reply_size_limits:
                self._max_reply_size = max_reply_size(limits.max_message_size_bytes)
                self._reply_size_limits = limits
            max_size = self._max_reply_size
            end = header.message_length
            if not HEADER_SIZE <= end <= max_size:
                check_header(header, max_size)  # raises, saying which bound
            if len(received) >= end:
                body: Any = memoryview(received)[HEADER_SIZE:end]
                if len(received) > end:
                    self._received = received[end:]
            else:
                body = self._recv_exactly(
                    end - HEADER_SIZE, limit, memoryview(received)[HEADER_SIZE:]
                )
            message = (
                decode_op_msg(body, raw_header=raw_header)  # every command's reply
                if header.op_code == _OP_MSG
                else decode_body(header, body, raw_header=raw_header, max_message_size=max_size)
            )
        except socket.timeout as exc:
            self.close("error")
            error: NetworkError = NetworkTimeout(
                f"timed out {step} on connection {self.id} to {self.address}:"
                f" {self._what_ran_out(timeout, limit, deadline)}",
                address=self.address,
            )
            raise unless_sent(error, sent) from exc
        except OSError as exc:
            self.close("error")
            error = self._network_error(f"{exc.__class__.__name__}: {exc}")
            raise unless_sent(error, sent) from exc
        except ProtocolError as exc:
            self.close("error")
            raise ProtocolError(
                f"invalid reply from {self.address} (connection {self.id}): {exc.message}",
                address=self.address,
            ) from exc
        except NetworkError as exc:
            self.close("error")
            raise unless_sent(self._network_error(exc.message), sent) from exc
        except BaseException as exc:
            # Whatever else happened, the stream position is unknown: never reuse it.
            self.close("error")
            if isinstance(exc, MongoCoreError):
                unless_sent(exc, sent)
            raise
        finally:
            # The I/O is over (here, not in a method of its own: one call less per command).
            lock.acquire()  # as above
            try:
                self._busy = False
                if self.closed:
                    # close() ran during our I/O and left the descriptor to us.
                    self._sock.close()
            finally:
                lock.release()
        return header, message

    def _what_ran_out(
        self, timeout: Optional[float], limit: Optional[float], deadline: Optional[float]
    ) -> str:
        if limit is not None and limit == deadline:
            if deadline == self._establishment_deadline:
                return (
                    f"connectTimeoutMS ({self._settings.connect_timeout}s) for establishing"
                    " the connection passed"
                )
            return "the operation's deadline (timeoutMS) passed"
        return f"not done within {timeout}s"

    def _network_error(self, detail: str) -> NetworkError:
        if self._close_reason not in (None, "error"):
            detail = f"the connection was closed ({self._close_reason}) while in use"
        return NetworkError(
            f"connection {self.id} to {self.address} failed: {detail}", address=self.address
        )

    def _recv_exactly(self, size: int, deadline: Optional[float], prefix: memoryview) -> memoryview:
        """The rest of a message's body, after ``prefix`` (what arrived with its header)."""
        buffer = recv_exactly(self._sock, size, deadline, prefix, self._look_again)
        received = len(buffer)
        if received < size:
            raise NetworkError(self._closed_early(received, size))
        return buffer

    def _closed_early(self, received: int, size: int) -> str:
        if self.closed:
            return f"closed ({self._close_reason}) during a read"
        return (
            f"connection closed by the server after {received} of {size} bytes"
            f" of a {'header' if size == HEADER_SIZE else 'message'}"
        )

    def _unpack_reply(
        self,
        header: MsgHeader,
        message: Any,
        request_id: int,
        *,
        expect_op_msg: bool,
        exhaust_allowed: bool = False,
    ) -> dict[str, Any]:
        """Check a reply against its request; anything wrong closes the connection."""
        if request_id:
            expected: tuple[int, ...] = (request_id,)
        else:
            # In a stream, servers answer to the previous reply's requestID; some test
            # servers repeat the original requestID. Both are accepted, nothing else.
            expected = self._stream_ids
        problem: Optional[str] = None
        reply: Any = None
        if header.response_to not in expected:
            problem = f"responseTo {header.response_to} does not match requestID {expected[0]}"
        elif expect_op_msg:
            if not isinstance(message, OpMsg):
                problem = f"expected an OP_MSG reply, got opcode {header.op_code}"
            elif (more_to_come := bool(message.flag_bits & MORE_TO_COME)) and not exhaust_allowed:
                problem = "moreToCome is set on a reply to a request that did not allow it"
            else:
                reply = message.to_document() if message.sequences else message.body
                if more_to_come:
                    self._stream_ids = (expected[0], header.request_id)
                self._more_to_come = more_to_come
        elif not isinstance(message, OpReply):
            problem = f"expected an OP_REPLY, got opcode {header.op_code}"
        elif message.query_failure:
            self._more_to_come = False
            error = message.documents[0]
            raise OperationFailure(
                f"{error.get('$err')} (from {self.address})",
                error.get("code") if isinstance(error.get("code"), int) else None,
                error,
            )
        elif len(message.documents) != 1:
            problem = f"OP_REPLY to a command has {len(message.documents)} documents, expected 1"
        else:
            reply = message.documents[0]
        if problem is None and not isinstance(reply, dict):
            problem = "the reply is not a document"
        if problem is not None:
            self._more_to_come = False
            self.close("error")
            raise ProtocolError(
                f"invalid reply from {self.address} (connection {self.id}): {problem}",
                address=self.address,
            )
        return reply  # type: ignore[no-any-return]
