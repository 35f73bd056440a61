"""Socket reads and writes bounded by a deadline, and buffers that grow as bytes arrive.

Connection Monitoring and Pooling ("Establishing a Connection": connectTimeoutMS),
Client Side Operations Timeout (timeoutMS as a deadline for the whole operation) and
socketTimeoutMS, as this driver applies them: a timeout is a deadline for a whole
step, never a bound on each ``recv()``. A server that sends one byte every second
would otherwise keep a read alive forever while every single ``recv()`` stays
within its timeout.

Deadlines are ``time.monotonic()`` values; None means no deadline. A deadline that
passes raises ``socket.timeout`` (``TimeoutError``), which the connection turns into
NetworkTimeout, exactly as it does for a socket timeout.

A read whose deadline passed before it began is one read that does not wait: it
takes whatever the socket holds, and times out only if nothing has arrived. A thread
may run again well after its reply arrived (under CPU contention it waits for the
GIL, and the OS, each time it returns from a system call), and a reply that came in
time is still a reply: checked against the clock alone, it would be a timeout, and
to a monitor a server that stopped answering. A monitoring connection's read also
looks once more when its wait ran out (``look_again``): a monitor's thread, woken at
its deadline, may run only after the reply came. An application's wait that ran out
is final, so that a server slower than socketTimeoutMS or timeoutMS is a timeout
however late the thread runs. pymongo reads its sockets the same way.

A message's length comes from its peer and is not trusted with memory: a read
allocates at most :data:`FIRST_CHUNK` bytes before anything arrived, then at most
doubles what it already received, so memory follows the bytes that actually came.
"""

from __future__ import annotations

import socket
import sys
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, Union

from mongocore.io import clock as _clock

if TYPE_CHECKING:
    import ssl

__all__ = [
    "FIRST_CHUNK",
    "SEND_CHUNK",
    "deadline_after",
    "earliest",
    "recv_exactly",
    "recv_some",
    "send_all",
    "tls_handshake",
]

#: Bytes allocated for a read before any of them arrived.
FIRST_CHUNK = 256 * 1024
#: Bytes handed to one send(): a TLS socket writes all it is given before returning,
#: so smaller pieces let the deadline be checked between them.
SEND_CHUNK = 256 * 1024

_Buffer = Union[bytes, bytearray, memoryview]
_A = TypeVar("_A")
_T = TypeVar("_T")


def earliest(*deadlines: Optional[float]) -> Optional[float]:
    """The earliest of the deadlines that are set, or None if none is."""
    present = [deadline for deadline in deadlines if deadline is not None]
    return min(present) if present else None


def deadline_after(timeout: Optional[float], now: Optional[float] = None) -> Optional[float]:
    """The deadline ``timeout`` seconds from ``now`` (default: the monotonic clock)."""
    if timeout is None:
        return None
    return (_clock.monotonic() if now is None else now) + timeout


def _arm(sock: socket.socket, deadline: Optional[float]) -> None:
    """Give the next blocking call on ``sock`` only the time left before ``deadline``."""
    if deadline is None:
        if sock.gettimeout() is not None:
            sock.settimeout(None)
        return
    remaining = deadline - _clock.monotonic()
    if remaining <= 0:
        raise socket.timeout("deadline passed")
    sock.settimeout(remaining)


def send_all(sock: socket.socket, data: _Buffer, deadline: Optional[float]) -> None:
    """Send every byte of ``data`` before ``deadline`` (socket.timeout otherwise)."""
    view = memoryview(data)
    total = len(view)
    sent = 0
    while sent < total:
        if deadline is not None or sock.gettimeout() is not None:  # _arm's no-op inlined
            _arm(sock, deadline)
        sent += sock.send(view[sent : sent + SEND_CHUNK])


def _would_block(error: OSError) -> bool:
    """Did a read that must not wait find nothing to read?"""
    if isinstance(error, BlockingIOError):
        return True
    # A TLS socket says so with SSLWantReadError (ssl is loaded when one is in use).
    ssl_module: Any = sys.modules.get("ssl")
    return ssl_module is not None and isinstance(error, ssl_module.SSLWantReadError)


def _read(
    sock: socket.socket,
    deadline: Optional[float],
    read: Callable[[_A], _T],
    argument: _A,
    look_again: bool,
) -> _T:
    """``read(argument)`` (``sock.recv`` or ``sock.recv_into``), waiting until ``deadline``
    at most; once it has passed (and, with ``look_again``, once the wait ran out), one
    last read that does not wait (see the module docstring), and socket.timeout only
    if that finds nothing."""
    if deadline is None:
        if sock.gettimeout() is not None:
            sock.settimeout(None)
        return read(argument)
    remaining = deadline - _clock.monotonic()
    if remaining > 0:
        sock.settimeout(remaining)
        try:
            return read(argument)
        except socket.timeout:
            if not look_again:
                raise
            # The wait ran out: what arrived since still counts.
    sock.settimeout(0.0)
    try:
        return read(argument)
    except OSError as exc:
        if _would_block(exc):
            raise socket.timeout("deadline passed") from None
        raise


def recv_some(
    sock: socket.socket, size: int, deadline: Optional[float], look_again: bool = False
) -> bytes:
    """Read what has arrived, at most ``size`` bytes, waiting until ``deadline`` for the
    first; ``b""`` if the peer closed the stream. ``look_again``: a wait that ran out
    looks at the socket once more (a monitoring connection's reads)."""
    if deadline is None and sock.gettimeout() is None:  # as in send_all
        return sock.recv(size)
    return _read(sock, deadline, sock.recv, size, look_again)


def recv_exactly(
    sock: socket.socket,
    size: int,
    deadline: Optional[float],
    prefix: _Buffer = b"",
    look_again: bool = False,
) -> memoryview:
    """Read ``size`` bytes before ``deadline``; fewer if the peer closed the stream.
    ``prefix``: the first of them, already received; ``look_again`` as in recv_some.

    The buffer starts at most :data:`FIRST_CHUNK` bytes long and grows only as bytes
    arrive, so a peer that claims a large message and sends little costs little.
    """
    received = len(prefix)
    buffer = bytearray(max(received, min(size, FIRST_CHUNK)))
    buffer[:received] = prefix
    recv_into = sock.recv_into
    while received < size:
        if received == len(buffer):
            # Full: at most double, never past the size claimed.
            buffer.extend(bytes(min(size, 2 * received) - received))
        with memoryview(buffer) as view:
            if deadline is None and sock.gettimeout() is None:  # as in send_all
                count = recv_into(view[received:])
            else:
                count = _read(sock, deadline, recv_into, view[received:], look_again)
        if not count:
            del buffer[received:]
            break
        received += count
    return memoryview(buffer)


def tls_handshake(sock: ssl.SSLSocket, deadline: Optional[float]) -> None:
    """Run the TLS handshake of a socket wrapped with ``do_handshake_on_connect=False``,
    all of it before ``deadline``.

    The ssl module already treats a socket's timeout as one deadline for a whole
    ``do_handshake()`` call (each of its waits gets what is left), so the time left
    is handed over once.
    """
    _arm(sock, deadline)
    sock.do_handshake()
