"""One socket connection to a server: connecting, the MongoDB handshake, and commands.

Specs: MongoDB Handshake ("Connection handshake", "Hello Command", "client.env",
"Limitations", "Speculative Authentication"); Stable API ("Handshake behavior");
Connection Monitoring and Pooling ("Establishing a Connection"); Load Balancer Support
("Connection Establishment"); Authentication ("Authentication Handshake"); Wire
Compression in Drivers ("MongoDB Handshake Amendment", "Messages not allowed to be
compressed"); OP_MSG (document sequences, moreToCome and exhaustAllowed) through
:mod:`mongocore.core.wire`.

Establishing a connection (:func:`connect`):

1. Open the socket: TCP to each address ``getaddrinfo`` returns, in order, until one
   connects (IPv4 and IPv6 alike), or a Unix domain socket when the address has no
   port. TCP_NODELAY and SO_KEEPALIVE are set.
   With an ``ssl_context`` the socket is wrapped in TLS: the server name is sent (SNI)
   and, unless the context says otherwise, the certificate must name the host.
2. The handshake: legacy hello (``isMaster``) as OP_QUERY with ``helloOk: true`` and the
   client metadata, or, in load-balanced mode, ``hello`` as OP_MSG with
   ``loadBalanced: true`` (and ``hello`` as OP_MSG too with a declared server API
   version, whose fields every command carries: Stable API, "Handshake behavior");
   ``compression`` lists the configured compressors, and an
   authenticator may add ``saslSupportedMechs`` and ``speculativeAuthenticate``. The
   reply is the connection's own: its wire version, its size limits, its server-side
   connectionId, the compressor to use and, behind a load balancer, its serviceId.
3. Authentication: the ``authenticate`` hook of :func:`connect` (see
   :mod:`mongocore.io.auth`). Monitoring connections never authenticate. An error raised
   there is marked (:func:`in_authentication`) for SDAM's error handling.

``connect_timeout`` is one deadline for all three steps together (every address
tried, the TLS handshake, hello, every authentication command): a server that answers
slowly but never stops answering cannot hold establishment longer.

Timeouts are deadlines (see :mod:`mongocore.io.deadlines`): a command's ``timeout``
bounds sending its message and, separately, reading its whole reply, and its
``deadline`` (the operation's timeoutMS) bounds both. A reply's header may claim at
most the server's maxMessageSizeBytes (capped to 48,000,000) plus a small overhead;
more is a ProtocolError before any of the body is read, and the body's buffer grows
only as its bytes arrive.

After the handshake, every message is compressed with the negotiated compressor
except hello and the authentication commands; replies are decompressed whatever
compressor they name.

Any failure closes the socket before the error propagates.

The parts: :mod:`mongocore.io.connection_settings` (:class:`ConnectionSettings`),
:mod:`mongocore.io.establishment` (opening the socket, :class:`Cancellation`, the
backpressure labels), :mod:`mongocore.io.handshake` (the client metadata and the
hello), :mod:`mongocore.io.connection_io` (the socket I/O under deadlines, and closing
from another thread); this module has the connection itself (the handshake's reply,
compression negotiation, commands) and :func:`connect`, which puts them together.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Protocol, Union, runtime_checkable

from mongocore.core.address import Address
from mongocore.core.lazy_logger import get_logger
from mongocore.core.retry_policy import RETRYABLE_WIRE_VERSION as SESSIONS_WIRE_VERSION
from mongocore.core.stable_api import add_api_fields, requires_op_msg
from mongocore.core.wire import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    EXHAUST_ALLOWED,
    QUERY_SECONDARY_OK,
    SizeLimits,
    bounded_max_message_size,
    encode_handshake_query,
    encode_op_compressed,
    encode_op_msg,
    encode_op_query,
)
from mongocore.errors import (
    ConfigurationError,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    ProtocolError,
    command_error_from_reply,
)
from mongocore.io import clock as _clock
from mongocore.io.connection_io import ConnectionIO

# ConnectionSettings is documented public as mongocore.io.connection.ConnectionSettings
# (docs/monitoring.md, docs/security.md): it lives in connection_settings and is
# re-exported here.
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.counters import next_request_id
from mongocore.io.deadlines import deadline_after, tls_handshake
from mongocore.io.establishment import (
    Cancellation,
    is_ssl_error,
    open_socket,
    overloaded,
    tls_io_error,
)
from mongocore.io.handshake import handshake_command

if TYPE_CHECKING:
    from types import EllipsisType

    from mongocore.core.compression import Compressor

__all__ = [
    "OP_MSG_WIRE_VERSION",
    "Connection",
    "ConnectionSettings",
    "HandshakeAuthenticator",
    "connect",
    "handshake_service_id",
    "in_authentication",
]

_log = get_logger("mongocore.connection")

#: Servers with this maxWireVersion or newer (MongoDB 3.6+) speak OP_MSG.
OP_MSG_WIRE_VERSION = 6

_LB_NOT_SUPPORTED = (
    "Driver attempted to initialize in load balancing mode, but the server does not"
    " support this mode."
)


# --- authentication during establishment --------------------------------------------

_IN_AUTHENTICATION = "_mongocore_in_authentication"
_HANDSHAKE_SERVICE_ID = "_mongocore_handshake_service_id"


def in_authentication(error: BaseException) -> bool:
    """Did ``error`` come from the authentication step of :func:`connect`?

    SDAM's error handling needs to know (a timeout while authenticating marks the
    server Unknown, one during hello does not): pass it as ``in_authentication`` to
    ``Topology.handle_error`` along with ``completed_handshake=False``.
    """
    return bool(getattr(error, _IN_AUTHENTICATION, False))


def handshake_service_id(error: BaseException) -> Optional[Any]:
    """The serviceId the hello of a connection that then failed to authenticate gave
    (load-balanced mode only; None otherwise): pass it as ``service_id`` to
    ``Topology.handle_error``, whose pool clear concerns that service alone."""
    return getattr(error, _HANDSHAKE_SERVICE_ID, None)


@runtime_checkable
class HandshakeAuthenticator(Protocol):
    """An ``authenticate`` hook that also takes part in the handshake: it adds fields
    to the hello (``saslSupportedMechs``, ``speculativeAuthenticate``) and may keep
    what it began in ``conn.speculative_authentication``."""

    def handshake_fields(self, conn: Connection) -> dict[str, Any]: ...

    def __call__(self, conn: Connection) -> None: ...


# --- the connection ----------------------------------------------------------------------


class Connection(ConnectionIO):
    """An established connection to one server (the CMAP "Connection").

    Made by :func:`connect`. ``hello`` is this connection's own handshake reply, and
    ``max_wire_version`` and ``limits`` come from it, never from a monitor's reply
    (see SDAM, "Warning about the maxWireVersion from a monitor's hello response").
    Whoever keeps the connection takes the reply with :meth:`take_hello` once it is
    established. ``generation`` and ``last_checkin_time`` belong to the pool.
    """

    generation: int
    last_checkin_time: float
    hello: Mapping[str, Any]
    hello_ok: bool
    max_wire_version: int
    #: "How to Tell Whether a Connection Supports Sessions": its handshake reply has a
    #: logicalSessionTimeoutMinutes (and the server speaks sessions' wire version).
    supports_sessions: bool
    server_connection_id: Optional[int]
    handshake_duration: float
    monitoring: bool
    #: Whatever the authenticator began in the handshake (see HandshakeAuthenticator).
    speculative_authentication: Any

    def __init__(
        self,
        sock: socket.socket,
        address: Address,
        settings: ConnectionSettings,
        *,
        generation: int = 0,
        connection_id: int = 0,
        monitoring: bool = False,
    ) -> None:
        super().__init__(
            sock, address, settings, connection_id=connection_id, monitoring=monitoring
        )
        self.generation = generation
        self.last_checkin_time = 0.0
        self.monitoring = monitoring
        self._service_id: Optional[Any] = None
        self.hello = {}
        self.hello_ok = False
        self.max_wire_version = 0
        self.supports_sessions = False
        self.server_connection_id = None
        self.handshake_duration = 0.0
        self.speculative_authentication = None
        self._speculative_reply: Optional[dict[str, Any]] = None
        self._compressor: Optional[Compressor] = None

    # --- what the pool reads ---------------------------------------------------------

    @property
    def service_id(self) -> Optional[Any]:
        """The serviceId of the handshake reply (load-balanced mode only)."""
        return self._service_id

    @property
    def close_reason(self) -> Optional[str]:
        return self._close_reason

    @property
    def supports_op_msg(self) -> bool:
        return self.max_wire_version >= OP_MSG_WIRE_VERSION

    @property
    def settings(self) -> ConnectionSettings:
        return self._settings

    @property
    def compressor(self) -> Optional[str]:
        """The compressor negotiated in the handshake (what this side sends), or None."""
        return self._compressor.name if self._compressor is not None else None

    @property
    def tls(self) -> bool:
        ssl_module = sys.modules.get("ssl")
        return ssl_module is not None and isinstance(self._sock, ssl_module.SSLSocket)

    @property
    def speculative_reply(self) -> Optional[dict[str, Any]]:
        """The handshake reply's ``speculativeAuthenticate`` document, if any.

        It is kept apart from :attr:`hello`, which is shown in places (events, logs)
        where the authentication conversation must not be.
        """
        return self._speculative_reply

    def take_hello(self) -> Mapping[str, Any]:
        """The handshake reply, handed over once; the connection keeps only what it
        read from it (wire version, size limits, ids, compressor).

        Pooled and monitoring connections live as long as the client: a reply kept on
        each of them would be a few KiB per connection held for nothing.
        """
        reply, self.hello = self.hello, {}
        return reply

    def __repr__(self) -> str:
        state = f"closed ({self._close_reason})" if self.closed else "open"
        return f"<Connection {self.id} to {self.address}, {state}>"

    # --- the handshake -----------------------------------------------------------------

    def _handshake(self, extra: Optional[Mapping[str, Any]] = None) -> None:
        settings = self._settings
        command = handshake_command(settings)
        if extra:
            command.update(extra)
        request_id = next_request_id()
        op_msg = requires_op_msg(settings.server_api, settings.load_balanced)
        if op_msg:
            # "If loadBalanced=true is specified then the OP_MSG protocol MUST be used
            # for all steps of the connection handshake"; so with a declared API version.
            command["$db"] = "admin"
            data = encode_op_msg(command, request_id)
        else:
            data = encode_handshake_query(command, request_id)
        start = _clock.monotonic()
        header, message = self._exchange(data, request_id, settings.connect_timeout)
        reply = self._unpack_reply(header, message, request_id, expect_op_msg=op_msg)
        self.handshake_duration = _clock.monotonic() - start
        if reply.get("ok") != 1:
            raise command_error_from_reply(reply)
        speculative = reply.pop("speculativeAuthenticate", None)
        self._speculative_reply = speculative if isinstance(speculative, dict) else None
        self._adopt_hello(reply)
        if settings.load_balanced and self._service_id is None:
            raise ConfigurationError(f"{_LB_NOT_SUPPORTED} (server {self.address})")

    def _adopt_hello(self, reply: dict[str, Any]) -> None:
        try:
            max_wire = _int_field(reply, "maxWireVersion", 0)
            limits = SizeLimits(
                _int_field(reply, "maxBsonObjectSize", DEFAULT_MAX_BSON_OBJECT_SIZE),
                # Capped, so a hostile announcement cannot license gigabyte replies.
                bounded_max_message_size(
                    _int_field(reply, "maxMessageSizeBytes", DEFAULT_MAX_MESSAGE_SIZE_BYTES)
                ),
                _int_field(reply, "maxWriteBatchSize", DEFAULT_MAX_WRITE_BATCH_SIZE),
            )
        except (TypeError, ValueError, OverflowError) as exc:
            raise ProtocolError(
                f"invalid handshake reply from {self.address}: {exc}", address=self.address
            ) from exc
        if min(limits) < 1:
            raise ProtocolError(
                f"invalid handshake reply from {self.address}: size limits must be"
                f" positive, got {limits}",
                address=self.address,
            )
        connection_id = reply.get("connectionId")
        self.hello = reply
        self.hello_ok = reply.get("helloOk") is True
        self.max_wire_version = max_wire
        self.supports_sessions = (
            max_wire >= SESSIONS_WIRE_VERSION
            and reply.get("logicalSessionTimeoutMinutes") is not None
        )
        self.limits = limits
        self.server_connection_id = _optional_int(connection_id)
        if self._settings.load_balanced:
            self._service_id = reply.get("serviceId")
        server_compressors = reply.get("compression")
        if self._settings.compressors and isinstance(server_compressors, list):
            # Compression loads for the clients that ask for it, not with every client.
            from mongocore.core.compression import (  # noqa: PLC0415
                compressor_for,
                negotiate,
            )

            name = negotiate(self._settings.compressors, server_compressors)
            if name is not None:
                self._compressor = compressor_for(name, self._settings.zlib_compression_level)

    # --- commands -----------------------------------------------------------------------

    def command(
        self,
        database: str,
        command: MutableMapping[str, Any],
        *,
        sequences: Optional[Mapping[str, Sequence[Any]]] = None,
        timeout: Union[float, EllipsisType, None] = ...,
        check: bool = True,
        exhaust_allowed: bool = False,
        request_id: Optional[int] = None,
        deadline: Optional[float] = None,
        before_send: Optional[Callable[[], object]] = None,
    ) -> dict[str, Any]:
        """Run one command and return its reply.

        Adds ``$db`` to ``command`` and sends it as OP_MSG, with each entry of
        ``sequences`` as a document sequence (kind 1 section). Size limits of this
        connection's server are checked before anything is sent (DocumentTooLarge).
        ``timeout`` (seconds, None = none) bounds sending the message, and then reading
        the whole reply; by default the settings' socket timeout applies. ``deadline``
        (a ``time.monotonic()`` value, e.g. the end of the operation's timeoutMS) bounds
        both together. With ``exhaust_allowed`` the server may stream
        further replies (see :meth:`more_to_come` and :meth:`receive`).

        ``check``: raise OperationFailure for a reply without ``ok: 1`` (the connection
        stays usable). Write concern errors are left to the caller.

        ``request_id``: the message's requestId, if the caller took one from
        ``next_request_id()`` already (command events report the wire's requestId).

        ``before_send``: called once the message is encoded, just before it is sent (a
        command that cannot be encoded, e.g. DocumentTooLarge, never calls it).

        Network errors and timeouts close the connection and raise NetworkError or
        NetworkTimeout; a malformed, oversized or mismatched reply closes it and raises
        ProtocolError.
        """
        if self._more_to_come:
            raise MongoCoreError(
                f"connection {self.id} to {self.address} is streaming replies; read them"
                " with receive() before sending another command"
            )
        if request_id is None:
            request_id = next_request_id()
        server_api = self._settings.server_api
        # supports_op_msg; a declared API version sends OP_MSG whatever the server said.
        op_msg = self.max_wire_version >= OP_MSG_WIRE_VERSION or server_api is not None
        if server_api is not None:
            add_api_fields(command, server_api)
        if op_msg:
            command["$db"] = database
            data = encode_op_msg(
                command,
                request_id,
                flag_bits=EXHAUST_ALLOWED if exhaust_allowed else 0,
                sequences=sequences,
                limits=self.limits,
            )
        else:
            # A server older than 3.6 (still worth monitoring): OP_QUERY on <db>.$cmd,
            # sequences as plain arrays, no $db, no exhaust.
            body = dict(command)
            for identifier, documents in (sequences or {}).items():
                body[identifier] = list(documents)
            data = encode_op_query(
                f"{database}.$cmd",
                body,
                request_id,
                flags=QUERY_SECONDARY_OK,
                number_to_return=-1,
                limits=self.limits,
            )
        compressor = self._compressor
        if compressor is not None and compressor.may_compress(next(iter(command), "")):
            data = encode_op_compressed(data, compressor)
        if before_send is not None:
            before_send()
        effective = self._default_timeout if timeout is ... else timeout
        header, message = self._exchange(data, request_id, effective, deadline)
        reply = self._unpack_reply(
            header,
            message,
            request_id,
            expect_op_msg=op_msg,
            exhaust_allowed=exhaust_allowed,
        )
        if check and reply.get("ok") != 1:
            raise command_error_from_reply(reply)
        return reply

    def receive(self, timeout: Optional[float]) -> dict[str, Any]:
        """Read the next reply of a stream (after a reply with moreToCome); ``timeout``
        bounds reading the whole reply.

        The reply is returned as is (no ``ok`` check); errors close the connection as
        in :meth:`command`.
        """
        if not self._more_to_come:
            raise MongoCoreError(
                f"connection {self.id} to {self.address} expects no further reply;"
                " receive() is only for replies after one with moreToCome"
            )
        header, message = self._exchange(None, 0, timeout)
        return self._unpack_reply(header, message, 0, expect_op_msg=True, exhaust_allowed=True)


def _int_field(reply: Mapping[str, Any], name: str, default: int) -> int:
    value = reply.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name!r} must be a number, not {type(value).__name__}")
    return int(value)


def _optional_int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


# --- establishing ------------------------------------------------------------------------


def connect(
    address: Address,
    settings: ConnectionSettings,
    *,
    generation: int = 0,
    connection_id: int = 0,
    monitoring: bool = False,
    cancellation: Optional[Cancellation] = None,
    authenticate: Optional[Callable[[Connection], None]] = None,
) -> Connection:
    """Open a socket to ``address`` and perform the handshake.

    ``monitoring``: a monitor's connection (reads use connect_timeout; never
    authenticates). ``cancellation`` lets another thread abort establishment.
    ``authenticate`` runs after a successful hello, for application connections only
    (e.g. :class:`mongocore.io.auth.Authenticator`); if it is a
    :class:`HandshakeAuthenticator`, its fields join the hello first.

    ``settings.connect_timeout`` is one deadline for the whole of it: TCP connect (every
    address tried), TLS handshake, hello and authentication. A ``monitoring``
    connection gives each step its own connect_timeout instead (the TCP connect, the
    TLS handshake, the hello), as it gives each of its later hellos: the
    server-monitoring spec's socket timeout, and what pymongo does (the TCP connect's
    from when each address is tried). A monitor then
    does not take a server for dead because its own thread waited for the GIL
    between two steps.

    Raises NetworkError (NetworkTimeout for timeouts) for socket errors, TLS failures
    included (an untrusted certificate, a host name the certificate does not name),
    OperationFailure for a handshake reply with ``ok: 0``, ProtocolError for a
    malformed one, ConfigurationError when a load-balanced handshake gets no
    serviceId, and whatever ``authenticate`` raises (AuthenticationError when the
    server refuses the credentials), marked so that :func:`in_authentication` is
    true. On any error the socket is closed.
    """
    deadline = deadline_after(settings.connect_timeout)
    sock = open_socket(address, settings, cancellation, deadline, each_attempt=monitoring)
    conn: Optional[Connection] = None
    try:
        if settings.ssl_context is not None:
            hostname = settings.server_hostname or (
                address.host if address.port is not None else None
            )
            sock = settings.ssl_context.wrap_socket(
                sock, server_hostname=hostname, do_handshake_on_connect=False
            )
            if cancellation is not None and not cancellation.attach(sock):
                raise NetworkError(f"connecting to {address} was cancelled", address=address)
            if monitoring:
                deadline = deadline_after(settings.connect_timeout)
            tls_handshake(sock, deadline)
        conn = Connection(
            sock,
            address,
            settings,
            generation=generation,
            connection_id=connection_id,
            monitoring=monitoring,
        )
        # (A monitoring connection's hello is bounded by its own connect_timeout.)
        conn._establishment_deadline = None if monitoring else deadline
        hook = None if monitoring else authenticate
        extra = None
        if isinstance(hook, HandshakeAuthenticator):
            extra = hook.handshake_fields(conn)
        conn._handshake(extra)
        if hook is not None:
            try:
                hook(conn)
            except MongoCoreError as exc:
                setattr(exc, _IN_AUTHENTICATION, True)
                # Behind a load balancer the hello gave the serviceId whose pool an
                # authentication error clears ("Error handling").
                setattr(exc, _HANDSHAKE_SERVICE_ID, conn.service_id)
                raise
            finally:
                conn.speculative_authentication = None
    except BaseException as exc:
        cancelled = cancellation is not None and cancellation.cancelled
        if cancellation is not None:
            cancellation.attach(None)
        if conn is not None:
            conn.close("error")
        else:
            sock.close()
        if cancelled and isinstance(exc, NetworkError):
            raise NetworkError(f"connecting to {address} was cancelled", address=address) from exc
        if is_ssl_error(exc):
            error = NetworkError(f"TLS handshake with {address} failed: {exc}", address=address)
            raise (overloaded(error) if tls_io_error(exc) else error) from exc
        if isinstance(exc, socket.timeout):
            raise overloaded(
                NetworkTimeout(f"TLS handshake with {address} timed out", address=address)
            ) from exc
        if isinstance(exc, OSError):
            raise overloaded(
                NetworkError(f"could not connect to {address}: {exc}", address=address)
            ) from exc
        if isinstance(exc, NetworkError) and not in_authentication(exc):
            overloaded(exc)  # the hello exchange failed on the network
        raise
    conn._establishment_deadline = None
    if cancellation is not None:
        cancellation.attach(None)
    _log.debug("connected %r (maxWireVersion %d)", conn, conn.max_wire_version)
    return conn
