"""Opening the socket of a new connection: TCP or a Unix socket, and its cancellation.

Spec: Connection Monitoring and Pooling, "Establishing a Connection" (the socket part:
every address ``getaddrinfo`` returns, IPv4 or IPv6, tried in turn; TCP_NODELAY and
SO_KEEPALIVE) and the interruption of establishment by a clear with
interruptInUseConnections or a monitor's cancellation (:class:`Cancellation`); SDAM's
backpressure labels ("SystemOverloadedError", "RetryableError") on the errors an
overloaded server can cause while a connection is established (:func:`overloaded`).
:func:`mongocore.io.connection.connect` runs the rest: TLS, the handshake and
authentication.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import sys
import threading
from typing import Any, Optional

from mongocore.core.address import Address
from mongocore.core.description.errors import RETRYABLE_ERROR_LABEL, SYSTEM_OVERLOADED_LABEL
from mongocore.errors import ConfigurationError, NetworkError, NetworkTimeout
from mongocore.io import clock as _clock
from mongocore.io.connection_io import shutdown_socket
from mongocore.io.connection_settings import ConnectionSettings

__all__ = [
    "Cancellation",
    "is_ssl_error",
    "open_socket",
    "overloaded",
    "release",
    "tls_io_error",
]


class Cancellation:
    """Lets another thread abort :func:`connect` promptly.

    While ``connect`` runs, the socket it is establishing is attached here; ``cancel()``
    shuts it down, which fails a blocked TCP connect (on Linux), a TLS handshake or
    the hello exchange at once. After ``cancel()``, ``connect`` raises NetworkError.
    """

    __slots__ = ("_cancelled", "_lock", "_sock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: Optional[socket.socket] = None
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            sock = self._sock
            if sock is not None:
                shutdown_socket(sock)

    def cancel_nowait(self) -> None:
        """cancel() without waiting for the lock, for a finalizer (which may run while
        this thread holds it): the mark, and a shutdown of the socket attached now.
        A socket attached at this very moment may be missed; its connect() then sees
        the mark at its next step."""
        self._cancelled = True
        sock = self._sock
        if sock is not None:
            shutdown_socket(sock)

    def attach(self, sock: Optional[socket.socket]) -> bool:
        """Attach (or, with None, detach) a socket; False if already cancelled."""
        with self._lock:
            self._sock = sock
            return not self._cancelled


def is_ssl_error(exc: BaseException) -> bool:
    """Is ``exc`` a TLS error (of the ssl module, if it was ever loaded)?"""
    # No TLS error can exist while the ssl module was never imported.
    ssl_module = sys.modules.get("ssl")
    return ssl_module is not None and isinstance(exc, ssl_module.SSLError)


def open_socket(
    address: Address,
    settings: ConnectionSettings,
    cancellation: Optional[Cancellation],
    deadline: Optional[float] = None,
    *,
    each_attempt: bool = False,
) -> socket.socket:
    """Connect to the first address that answers, all attempts before ``deadline``;
    with ``each_attempt`` (a monitoring connection), each attempt within
    connect_timeout of its own start instead, as pymongo's (resolving the host name
    then takes none of it)."""
    timeout = settings.connect_timeout

    def attempt_deadline() -> Optional[float]:
        if each_attempt and timeout is not None:
            return _clock.monotonic() + timeout
        return deadline

    if address.port is None:
        if not hasattr(socket, "AF_UNIX"):
            raise ConfigurationError(
                f"{address} is a Unix domain socket, which this platform does not support"
            )
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        return _connect_one(
            sock, address.host, address, timeout, cancellation, deadline=attempt_deadline()
        )
    try:
        infos = socket.getaddrinfo(address.host, address.port, 0, socket.SOCK_STREAM)
    except OSError as exc:  # socket.gaierror
        raise NetworkError(f"could not resolve {address.host!r}: {exc}", address=address) from exc
    last: Optional[BaseException] = None
    for family, socktype, proto, _, sockaddr in infos:
        try:
            sock = socket.socket(family, socktype, proto)
        except OSError as exc:  # e.g. IPv6 not available on this host
            last = exc
            continue
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            return _connect_one(
                sock, sockaddr, address, timeout, cancellation, deadline=attempt_deadline()
            )
        except NetworkError as exc:
            last = exc
            if cancellation is not None and cancellation.cancelled:
                raise
    if isinstance(last, NetworkError):
        raise last
    raise NetworkError(
        f"could not connect to {address}: {last or 'getaddrinfo returned no address'}",
        address=address,
    )


def _connect_one(
    sock: socket.socket,
    sockaddr: Any,
    address: Address,
    timeout: Optional[float],
    cancellation: Optional[Cancellation],
    *,
    deadline: Optional[float] = None,
) -> socket.socket:
    try:
        if cancellation is not None and not cancellation.attach(sock):
            raise NetworkError(f"connecting to {address} was cancelled", address=address)
        remaining: Optional[float] = None
        if deadline is not None:
            remaining = deadline - _clock.monotonic()
            if remaining <= 0:
                raise socket.timeout("connectTimeoutMS passed before this address was tried")
        if cancellation is None:
            sock.settimeout(remaining)
            sock.connect(sockaddr)
        else:
            _cancellable_connect(sock, sockaddr, remaining, cancellation)
        return sock
    except socket.timeout as exc:
        release(sock, cancellation)
        raise overloaded(
            NetworkTimeout(f"connecting to {address} timed out after {timeout}s", address=address)
        ) from exc
    except OSError as exc:
        release(sock, cancellation)
        if cancellation is not None and cancellation.cancelled:
            raise NetworkError(f"connecting to {address} was cancelled", address=address) from exc
        error = NetworkError(f"could not connect to {address}: {exc}", address=address)
        if exc.errno in _NOTHING_LISTENS:
            raise error from exc  # no server process there, so none that is overloaded
        raise overloaded(error) from exc
    except BaseException:
        release(sock, cancellation)
        raise


def _cancellable_connect(
    sock: socket.socket, sockaddr: Any, timeout: Optional[float], cancellation: Cancellation
) -> None:
    """``sock.connect(sockaddr)`` within ``timeout`` seconds, which ``cancel()`` ends.

    Shutting a socket down aborts a TCP connect in progress, but not one that has not
    begun: a ``cancel()`` between attaching the socket and calling ``connect()`` would
    be lost, and the connect would then wait for its whole timeout. So the connect is
    begun without blocking, the cancellation checked once it is in progress, and its
    end awaited.
    """
    sock.setblocking(False)
    err = sock.connect_ex(sockaddr)
    if cancellation.cancelled:
        raise OSError(errno.ECANCELED, "cancelled")
    if err in _IN_PROGRESS:
        _wait_writable(sock, timeout)
        if cancellation.cancelled:
            raise OSError(errno.ECANCELED, "cancelled")
        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if err:
        raise OSError(err, os.strerror(err))
    sock.settimeout(timeout)


def _wait_writable(sock: socket.socket, timeout: Optional[float]) -> None:
    """Wait until a connect in progress ends (socket.timeout after ``timeout``)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        ready = bool(poller.poll(None if timeout is None else max(0, int(timeout * 1000)) + 1))
    else:  # Windows: select() has no descriptor limit there
        ready = bool(select.select([], [sock], [sock], timeout)[1])
    if not ready:
        raise socket.timeout("timed out")


#: connect_ex() of a connect that is under way (non-blocking sockets).
_IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN})


#: TCP connect errors that say no server process is there to be overloaded: nothing
#: listens on the port (the server is down or was killed), or the host cannot be
#: reached at all. An overloaded server still listens: it accepts and then drops or
#: stalls connections, or leaves connection attempts unanswered (a timeout).
_NOTHING_LISTENS = frozenset(
    {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN}
)


def overloaded(error: NetworkError) -> NetworkError:
    """Label a network error or timeout met while establishing a connection (TCP,
    the I/O of the TLS handshake, hello) with the backpressure labels.

    A server that sheds load drops or stalls new connections; the labels tell SDAM
    not to mark it Unknown nor clear its pool, and tell callers the operation may be
    tried again. Errors that cannot come from an overloaded server (DNS, a refused or
    unreachable TCP connect, certificate checks, authentication, a cancelled
    establishment) are not labelled: SDAM marks the server Unknown for them.
    """
    error.add_error_label(SYSTEM_OVERLOADED_LABEL)
    error.add_error_label(RETRYABLE_ERROR_LABEL)
    return error


def tls_io_error(exc: BaseException) -> bool:
    """Is this TLS failure the connection's I/O (dropped, reset, closed) rather than
    the TLS exchange itself (certificate, host name, protocol version)?"""
    import ssl  # noqa: PLC0415 - loaded already: exc is one of its errors

    return isinstance(exc, (ssl.SSLEOFError, ssl.SSLSyscallError, ssl.SSLZeroReturnError))


def release(sock: socket.socket, cancellation: Optional[Cancellation]) -> None:
    """Close a socket that establishment gives up, detaching it from ``cancellation``."""
    if cancellation is not None:
        cancellation.attach(None)
    sock.close()
