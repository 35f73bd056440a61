"""One socket connection to a server: connecting, the MongoDB handshake, and commands.

Specs: MongoDB Handshake ("Connection handshake", "Hello Command", "client.env",
"Limitations", "Speculative Authentication"); Connection Monitoring and Pooling
("Establishing a Connection"); Load Balancer Support ("Connection Establishment");
Authentication ("Authentication Handshake"); Wire Compression in Drivers ("MongoDB
Handshake Amendment", "Messages not allowed to be compressed"); OP_MSG (document
sequences, moreToCome and exhaustAllowed) through :mod:`mongocore.core.wire`.

Establishing a connection (:func:`connect`):

1. Open the socket: TCP to each address ``getaddrinfo`` returns, in order, until one
   connects (IPv4 and IPv6 alike), or a Unix domain socket when the address has no
   port. TCP_NODELAY and SO_KEEPALIVE are set.
   With an ``ssl_context`` the socket is wrapped in TLS: the server name is sent (SNI)
   and, unless the context says otherwise, the certificate must name the host.
2. The handshake: legacy hello (``isMaster``) as OP_QUERY with ``helloOk: true`` and the
   client metadata, or, in load-balanced mode, ``hello`` as OP_MSG with
   ``loadBalanced: true``; ``compression`` lists the configured compressors, and an
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

Threads: a connection is used by one thread at a time, but :meth:`Connection.close` may
be called from any thread (a monitor being closed, a pool interrupting in-use
connections). It shuts the socket down, which makes a blocked read or write fail at
once; the file descriptor itself is released by whichever thread finishes last, so it
is never reused while another thread may still touch it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Protocol, TypeVar, Union, runtime_checkable

import bson

from mongocore._version import DRIVER_NAME, __version__
from mongocore.core.address import Address
from mongocore.core.compression import (
    Compressor,
    available_compressors,
    compressor_for,
    is_compressible,
    negotiate,
)
from mongocore.core.deferred_dataclass import dataclass
from mongocore.core.description.errors import RETRYABLE_ERROR_LABEL, SYSTEM_OVERLOADED_LABEL
from mongocore.core.wire import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    EXHAUST_ALLOWED,
    HEADER_SIZE,
    MORE_TO_COME,
    QUERY_SECONDARY_OK,
    MsgHeader,
    OpMsg,
    OpReply,
    SizeLimits,
    bounded_max_message_size,
    check_header,
    decode_body,
    encode_handshake_query,
    encode_op_compressed,
    encode_op_msg,
    encode_op_query,
    max_reply_size,
    next_request_id,
    unpack_header,
)
from mongocore.driver_info import DriverInfo, DriverInfoList, append_driver_info
from mongocore.errors import (
    ConfigurationError,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
    ProtocolError,
    command_error_from_reply,
)
from mongocore.io.deadlines import (
    deadline_after,
    earliest,
    recv_exactly,
    send_all,
    tls_handshake,
)

if TYPE_CHECKING:
    import ssl
    from types import EllipsisType

    from mongocore.core.options import ClientOptions

__all__ = [
    "MAX_APP_NAME_BYTES",
    "MAX_METADATA_SIZE",
    "OP_MSG_WIRE_VERSION",
    "Cancellation",
    "Connection",
    "ConnectionSettings",
    "HandshakeAuthenticator",
    "client_metadata",
    "connect",
    "detect_faas",
    "in_authentication",
]

_log = logging.getLogger("mongocore.connection")

#: "The entire client metadata BSON document MUST NOT exceed 512 bytes."
MAX_METADATA_SIZE = 512
#: "The client.application.name cannot exceed 128 bytes."
MAX_APP_NAME_BYTES = 128
#: Servers with this maxWireVersion or newer (MongoDB 3.6+) speak OP_MSG.
OP_MSG_WIRE_VERSION = 6

_LB_NOT_SUPPORTED = (
    "Driver attempted to initialize in load balancing mode, but the server does not"
    " support this mode."
)

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


# --- settings ------------------------------------------------------------------


@dataclass(frozen=True)
class ConnectionSettings:
    """How to open and handshake a connection. Times are in seconds; None = no limit.

    ``connect_timeout`` is one deadline for opening the socket (every address tried),
    the TLS and MongoDB handshakes and authentication together; ``socket_timeout`` is
    the default bound on sending each later message and on reading each whole reply
    (monitoring connections use ``connect_timeout`` instead, as server-monitoring
    asks). ``ssl_context`` turns TLS on; ``server_hostname``, if set, replaces the
    address's host for SNI and certificate matching. ``compressors`` are
    offered in the handshake in this order (each must be available here);
    ``zlib_compression_level`` applies to what is sent with zlib.
    """

    connect_timeout: Optional[float] = 20.0
    socket_timeout: Optional[float] = None
    app_name: Optional[str] = None
    load_balanced: bool = False
    ssl_context: Optional[ssl.SSLContext] = None
    server_hostname: Optional[str] = None
    compressors: tuple[str, ...] = ()
    zlib_compression_level: int = -1
    #: What wrapping libraries appended to the client metadata; shared by all the
    #: settings of one client, so connections created after an append carry it.
    driver_info: Optional[DriverInfoList] = None

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "socket_timeout"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0
            ):
                raise ConfigurationError(
                    f"{name} must be a positive number of seconds or None (no limit), not {value!r}"
                )
        if self.app_name is not None:
            if not isinstance(self.app_name, str):
                raise ConfigurationError(f"appname must be a string, not {self.app_name!r}")
            size = len(self.app_name.encode("utf-8"))
            if size > MAX_APP_NAME_BYTES:
                raise ConfigurationError(
                    f"appname is {size} bytes in UTF-8; the handshake allows at most"
                    f" {MAX_APP_NAME_BYTES}"
                )
        compressors: Any = self.compressors
        if isinstance(compressors, str) or len(set(compressors)) != len(compressors):
            raise ConfigurationError(
                f"compressors must be a sequence of distinct names, not {self.compressors!r}"
            )
        for name in self.compressors:
            # Unknown or not installed: the error says which, and what to install.
            compressor_for(name, self.zlib_compression_level)

    @classmethod
    def from_options(cls, options: ClientOptions) -> ConnectionSettings:
        """The settings a client's options ask for: timeouts, appname, load balancing,
        TLS (see :func:`mongocore.io.tls.ssl_context_for`) and compression.

        A configured compressor that is not installed here (zstd without
        ``zstandard``, snappy without ``python-snappy``) is left out of the handshake
        with a warning, as the compression spec treats compressors it cannot use.
        """
        available = available_compressors() if options.compressors else ()
        compressors = []
        for name in options.compressors:
            if name in available:
                compressors.append(name)
            else:
                _log.warning(
                    "compressor %r is not available (install mongocore[%s]); not offered",
                    name,
                    name,
                )
        return cls(
            connect_timeout=_ms(options.connect_timeout_ms),
            socket_timeout=_ms(options.socket_timeout_ms),
            app_name=options.app_name,
            load_balanced=options.load_balanced,
            ssl_context=_ssl_context_for(options) if options.tls else None,
            compressors=tuple(compressors),
            zlib_compression_level=options.zlib_compression_level,
        )


def _ssl_context_for(options: ClientOptions) -> Optional[ssl.SSLContext]:
    # TLS (and the ssl module) load only for clients that use it.
    from mongocore.io.tls import ssl_context_for  # noqa: PLC0415

    return ssl_context_for(options)


def _is_ssl_error(exc: BaseException) -> bool:
    # No TLS error can exist while the ssl module was never imported.
    ssl_module = sys.modules.get("ssl")
    return ssl_module is not None and isinstance(exc, ssl_module.SSLError)


def _ms(value: Optional[int]) -> Optional[float]:
    return value / 1000.0 if value else None


# --- client metadata (MongoDB Handshake, "Hello Command", "client.env") -----------------


def detect_faas(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The FaaS platform ``client.env.name`` names, or None ("client.env", "FaaS").

    Exactly one platform must be detected, except that Vercel wins over AWS Lambda
    (Vercel functions run on Lambda); any other combination detects nothing.
    """
    env = os.environ if environ is None else environ
    found = []
    if env.get("AWS_EXECUTION_ENV", "").startswith("AWS_Lambda_") or env.get(
        "AWS_LAMBDA_RUNTIME_API"
    ):
        found.append("aws.lambda")
    if env.get("FUNCTIONS_WORKER_RUNTIME"):
        found.append("azure.func")
    if env.get("K_SERVICE") or env.get("FUNCTION_NAME"):
        found.append("gcp.func")
    if env.get("VERCEL"):
        found.append("vercel")
    if len(found) == 1:
        return found[0]
    if sorted(found) == ["aws.lambda", "vercel"]:
        return "vercel"
    return None


# Per platform: (field, environment variable, int32?).
_FAAS_FIELDS: Mapping[str, Sequence[tuple[str, str, bool]]] = {
    "aws.lambda": (
        ("region", "AWS_REGION", False),
        ("memory_mb", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", True),
    ),
    "gcp.func": (
        ("memory_mb", "FUNCTION_MEMORY_MB", True),
        ("timeout_sec", "FUNCTION_TIMEOUT_SEC", True),
        ("region", "FUNCTION_REGION", False),
    ),
    "vercel": (("region", "VERCEL_REGION", False),),
    "azure.func": (),
}


def _env_document(environ: Mapping[str, str], dockerenv: str) -> dict[str, Any]:
    env: dict[str, Any] = {}
    name = detect_faas(environ)
    if name is not None:
        env["name"] = name
        for field, variable, is_int in _FAAS_FIELDS[name]:
            raw = environ.get(variable)
            if not raw:
                continue
            if is_int:
                # A value of the wrong type is left out, never an error.
                try:
                    number = int(raw)
                except ValueError:
                    continue
                if _INT32_MIN <= number <= _INT32_MAX:
                    env[field] = number
            else:
                env[field] = raw
    container: dict[str, str] = {}
    if os.path.exists(dockerenv):
        container["runtime"] = "docker"
    if environ.get("KUBERNETES_SERVICE_HOST"):
        container["orchestrator"] = "kubernetes"
    if container:
        env["container"] = container
    return env


@functools.lru_cache(maxsize=1)
def _os_document() -> dict[str, str]:
    import platform  # noqa: PLC0415 - read once per process, at the first handshake

    system = platform.system()
    name = system
    version = platform.release()
    if system == "Linux":
        # No os-release file, or Python < 3.10: the system name will do.
        with contextlib.suppress(OSError, AttributeError):
            name = platform.freedesktop_os_release().get("PRETTY_NAME", system)
    elif system == "Darwin":
        name = "macOS"
        version = platform.mac_ver()[0] or version
    elif system == "Windows":
        version = platform.version() or version
    document = {
        "type": system or "unknown",
        "name": name,
        "architecture": platform.machine(),
        "version": version,
    }
    return {key: value for key, value in document.items() if value}


def _platform_string() -> str:
    import platform  # noqa: PLC0415 - as in _os_document

    return f"{platform.python_implementation()} {platform.python_version()}"


def _metadata_size(document: Mapping[str, Any]) -> int:
    return len(bson.encode(document))


def client_metadata(
    app_name: Optional[str] = None,
    *,
    environ: Optional[Mapping[str, str]] = None,
    dockerenv: str = "/.dockerenv",
    platform_info: Optional[str] = None,
    os_info: Optional[Mapping[str, str]] = None,
    driver_info: Sequence[DriverInfo] = (),
) -> dict[str, Any]:
    """The handshake's ``client`` document, kept within 512 bytes of BSON.

    ``driver_info`` is appended to the driver's name and version and the platform
    ("Supporting Wrapping Libraries"). When the document is too large, the spec's steps
    are applied cumulatively until it fits: keep only ``env.name``; keep only
    ``os.type``; drop ``env``; truncate ``platform``. The other keyword arguments
    replace what is detected (for tests).
    """
    document: dict[str, Any] = {}
    if app_name is not None:
        document["application"] = {"name": app_name}
    document["driver"] = {"name": DRIVER_NAME, "version": __version__}
    document["os"] = dict(_os_document() if os_info is None else os_info)
    document["platform"] = _platform_string() if platform_info is None else platform_info
    document = append_driver_info(document, driver_info)
    env = _env_document(os.environ if environ is None else environ, dockerenv)
    if env:
        document["env"] = env

    if _metadata_size(document) <= MAX_METADATA_SIZE:
        return document
    if "env" in document:
        name = document["env"].get("name")
        if name is None:
            del document["env"]
        else:
            document["env"] = {"name": name}
        if _metadata_size(document) <= MAX_METADATA_SIZE:
            return document
    document["os"] = {"type": document["os"].get("type", "unknown")}
    if _metadata_size(document) <= MAX_METADATA_SIZE:
        return document
    document.pop("env", None)
    overflow = _metadata_size(document) - MAX_METADATA_SIZE
    if overflow > 0:
        encoded = document["platform"].encode("utf-8")
        keep = max(0, len(encoded) - overflow)
        # Cutting may split a character; drop the partial bytes.
        document["platform"] = encoded[:keep].decode("utf-8", "ignore")
    return document


@functools.lru_cache(maxsize=16)
def _cached_metadata(
    app_name: Optional[str], driver_info: tuple[DriverInfo, ...] = ()
) -> dict[str, Any]:
    # The environment is read once per process, like the OS and platform details.
    return client_metadata(app_name, driver_info=driver_info)


def _handshake_command(settings: ConnectionSettings) -> dict[str, Any]:
    command: dict[str, Any]
    if settings.load_balanced:
        command = {"hello": 1, "helloOk": True}
    else:
        command = {"isMaster": 1, "helloOk": True}
    infos = settings.driver_info.snapshot() if settings.driver_info is not None else ()
    command["client"] = _cached_metadata(settings.app_name, infos)
    # Sent only when compressors are configured: the spec's empty list is a SHOULD,
    # and an absent field means the same to every server.
    if settings.compressors:
        command["compression"] = list(settings.compressors)
    if settings.load_balanced:
        command["loadBalanced"] = True
    return command


# --- authentication during establishment --------------------------------------------

_E = TypeVar("_E", bound=BaseException)

_IN_AUTHENTICATION = "_mongocore_in_authentication"
_NOT_SENT = "_mongocore_request_not_sent"
_HANDSHAKE_SERVICE_ID = "_mongocore_handshake_service_id"


def request_not_sent(error: BaseException) -> bool:
    """Did ``error`` end a command before its request was handed to the socket in
    full? Then the server cannot have run it (a server never runs part of a message,
    and the connection is closed)."""
    return bool(getattr(error, _NOT_SENT, False))


def _unless_sent(error: _E, sent: bool) -> _E:
    if not sent:
        setattr(error, _NOT_SENT, True)
    return error


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


# --- cancelling connection establishment -----------------------------------------------


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
                _shutdown(sock)

    def _attach(self, sock: Optional[socket.socket]) -> bool:
        """Attach (or, with None, detach) a socket; False if already cancelled."""
        with self._lock:
            self._sock = sock
            return not self._cancelled


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # not connected, or already closed
        sock.shutdown(socket.SHUT_RDWR)


# --- the connection ----------------------------------------------------------------------


class Connection:
    """An established connection to one server (the CMAP "Connection").

    Made by :func:`connect`. ``hello`` is this connection's own handshake reply, and
    ``max_wire_version`` and ``limits`` come from it, never from a monitor's reply
    (see SDAM, "Warning about the maxWireVersion from a monitor's hello response").
    ``generation`` and ``last_checkin_time`` belong to the pool.
    """

    address: Address
    generation: int
    last_checkin_time: float
    hello: Mapping[str, Any]
    hello_ok: bool
    max_wire_version: int
    limits: SizeLimits
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
        self._sock = sock
        self.address = address
        self._id = connection_id
        self.generation = generation
        self.last_checkin_time = 0.0
        self.monitoring = monitoring
        self._settings = settings
        # Monitoring sockets read with connectTimeoutMS ("Socket timeout for monitoring").
        self._default_timeout = settings.connect_timeout if monitoring else settings.socket_timeout
        #: Set by connect() while establishing: every exchange ends by then.
        self._establishment_deadline: Optional[float] = None
        self._lock = threading.Lock()
        self._closed = False
        self._close_reason: Optional[str] = None
        self._busy = False
        self._more_to_come = False
        self._stream_ids: tuple[int, int] = (0, 0)
        self._service_id: Optional[Any] = None
        self.hello = {}
        self.hello_ok = False
        self.max_wire_version = 0
        self.limits = SizeLimits()
        # max_reply_size(self.limits...), computed again only when limits change.
        self._reply_size_limits: Optional[SizeLimits] = None
        self._max_reply_size = 0
        self.server_connection_id = None
        self.handshake_duration = 0.0
        self.speculative_authentication = None
        self._speculative_reply: Optional[dict[str, Any]] = None
        self._compressor: Optional[Compressor] = None

    # --- what the pool reads ---------------------------------------------------------

    @property
    def id(self) -> int:
        return self._id

    @property
    def service_id(self) -> Optional[Any]:
        """The serviceId of the handshake reply (load-balanced mode only)."""
        return self._service_id

    @property
    def closed(self) -> bool:
        return self._closed

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

    def __repr__(self) -> str:
        state = f"closed ({self._close_reason})" if self._closed else "open"
        return f"<Connection {self._id} to {self.address}, {state}>"

    # --- closing -----------------------------------------------------------------------

    def close(self, reason: str = "error") -> None:
        """Close the connection; safe from any thread, idempotent.

        A read or write blocked in another thread fails at once with NetworkError.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_reason = reason
            _shutdown(self._sock)
            if not self._busy:
                self._sock.close()

    def _begin_io(self) -> None:
        with self._lock:
            if self._closed:
                raise NetworkError(
                    f"connection {self._id} to {self.address} is closed ({self._close_reason})",
                    address=self.address,
                )
            self._busy = True

    def _end_io(self) -> None:
        with self._lock:
            self._busy = False
            if self._closed:
                # close() ran during our I/O and left the descriptor to us.
                self._sock.close()

    # --- the handshake -----------------------------------------------------------------

    def _handshake(self, extra: Optional[Mapping[str, Any]] = None) -> None:
        settings = self._settings
        command = _handshake_command(settings)
        if extra:
            command.update(extra)
        request_id = next_request_id()
        if settings.load_balanced:
            # "If loadBalanced=true is specified then the OP_MSG protocol MUST be used
            # for all steps of the connection handshake."
            command["$db"] = "admin"
            data = encode_op_msg(command, request_id)
        else:
            data = encode_handshake_query(command, request_id)
        start = time.monotonic()
        header, message = self._exchange(data, request_id, settings.connect_timeout)
        reply = self._unpack_reply(
            header, message, request_id, expect_op_msg=settings.load_balanced
        )
        self.handshake_duration = time.monotonic() - start
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
        self.limits = limits
        self.server_connection_id = _optional_int(connection_id)
        if self._settings.load_balanced:
            self._service_id = reply.get("serviceId")
        server_compressors = reply.get("compression")
        if self._settings.compressors and isinstance(server_compressors, list):
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

        Network errors and timeouts close the connection and raise NetworkError or
        NetworkTimeout; a malformed, oversized or mismatched reply closes it and raises
        ProtocolError.
        """
        if self._more_to_come:
            raise MongoCoreError(
                f"connection {self._id} to {self.address} is streaming replies; read them"
                " with receive() before sending another command"
            )
        if request_id is None:
            request_id = next_request_id()
        op_msg = self.max_wire_version >= OP_MSG_WIRE_VERSION  # supports_op_msg
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
        if self._compressor is not None and is_compressible(next(iter(command), "")):
            data = encode_op_compressed(data, self._compressor)
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

    def more_to_come(self) -> bool:
        """True when the last reply had moreToCome: the server will send another."""
        return self._more_to_come

    def receive(self, timeout: Optional[float]) -> dict[str, Any]:
        """Read the next reply of a stream (after a reply with moreToCome); ``timeout``
        bounds reading the whole reply.

        The reply is returned as is (no ``ok`` check); errors close the connection as
        in :meth:`command`.
        """
        if not self._more_to_come:
            raise MongoCoreError(
                f"connection {self._id} to {self.address} expects no further reply;"
                " receive() is only for replies after one with moreToCome"
            )
        header, message = self._exchange(None, 0, timeout)
        return self._unpack_reply(header, message, 0, expect_op_msg=True, exhaust_allowed=True)

    # --- I/O -----------------------------------------------------------------------------

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
            now = time.monotonic()
            if (timeout is not None and timeout <= 0) or (deadline is not None and deadline <= now):
                # Nothing is sent: the connection stays as it was.
                raise _unless_sent(
                    NetworkTimeout(
                        f"no time left for an operation on connection {self._id} to {self.address}",
                        address=self.address,
                    ),
                    False,
                )
            limit = earliest(deadline_after(timeout, now), deadline)
        step = "sending a message"
        try:
            self._begin_io()
        except NetworkError as exc:
            _unless_sent(exc, False)  # the connection was closed: nothing went out
            raise
        sent = data is None
        try:
            sock = self._sock
            if data is not None:
                send_all(sock, data, limit)
                sent = True
            step = "reading a reply"
            if bounded:
                limit = earliest(deadline_after(timeout), deadline)
            raw_header = self._recv_exactly(HEADER_SIZE, limit)
            header = unpack_header(raw_header)
            limits = self.limits
            if limits is not self._reply_size_limits:
                self._max_reply_size = max_reply_size(limits.max_message_size_bytes)
                self._reply_size_limits = limits
            max_size = self._max_reply_size
            check_header(header, max_size)
            body = self._recv_exactly(header.message_length - HEADER_SIZE, limit)
            message = decode_body(header, body, raw_header=raw_header, max_message_size=max_size)
        except socket.timeout as exc:
            self.close("error")
            error: NetworkError = NetworkTimeout(
                f"timed out {step} on connection {self._id} to {self.address}:"
                f" {self._what_ran_out(timeout, limit, deadline)}",
                address=self.address,
            )
            raise _unless_sent(error, sent) from exc
        except OSError as exc:
            self.close("error")
            error = self._network_error(f"{exc.__class__.__name__}: {exc}")
            raise _unless_sent(error, sent) from exc
        except ProtocolError as exc:
            self.close("error")
            raise ProtocolError(
                f"invalid reply from {self.address} (connection {self._id}): {exc.message}",
                address=self.address,
            ) from exc
        except NetworkError as exc:
            self.close("error")
            raise _unless_sent(self._network_error(exc.message), sent) from exc
        except BaseException as exc:
            # Whatever else happened, the stream position is unknown: never reuse it.
            self.close("error")
            if isinstance(exc, MongoCoreError):
                _unless_sent(exc, sent)
            raise
        finally:
            self._end_io()
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
            f"connection {self._id} to {self.address} failed: {detail}", address=self.address
        )

    def _recv_exactly(self, size: int, deadline: Optional[float]) -> memoryview:
        if not size:
            return memoryview(b"")
        buffer = recv_exactly(self._sock, size, deadline)
        received = len(buffer)
        if received < size:
            if self._closed:
                raise NetworkError(f"closed ({self._close_reason}) during a read")
            raise NetworkError(
                f"the server closed the connection after {received} of {size} bytes"
                f" of a {'header' if size == HEADER_SIZE else 'message'}"
            )
        return buffer

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
                f"invalid reply from {self.address} (connection {self._id}): {problem}",
                address=self.address,
            )
        return reply  # type: ignore[no-any-return]


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


def _open_socket(
    address: Address,
    settings: ConnectionSettings,
    cancellation: Optional[Cancellation],
    deadline: Optional[float] = None,
) -> socket.socket:
    """Connect to the first address that answers, all attempts before ``deadline``."""
    timeout = settings.connect_timeout
    if address.port is None:
        if not hasattr(socket, "AF_UNIX"):
            raise ConfigurationError(
                f"{address} is a Unix domain socket, which this platform does not support"
            )
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        return _connect_one(sock, address.host, address, timeout, cancellation, deadline=deadline)
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
            return _connect_one(sock, sockaddr, address, timeout, cancellation, deadline=deadline)
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
        if cancellation is not None and not cancellation._attach(sock):
            raise NetworkError(f"connecting to {address} was cancelled", address=address)
        if deadline is None:
            sock.settimeout(None)
        else:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("connectTimeoutMS passed before this address was tried")
            sock.settimeout(remaining)
        sock.connect(sockaddr)
        return sock
    except socket.timeout as exc:
        _release(sock, cancellation)
        raise _overloaded(
            NetworkTimeout(f"connecting to {address} timed out after {timeout}s", address=address)
        ) from exc
    except OSError as exc:
        _release(sock, cancellation)
        if cancellation is not None and cancellation.cancelled:
            raise NetworkError(f"connecting to {address} was cancelled", address=address) from exc
        error = NetworkError(f"could not connect to {address}: {exc}", address=address)
        if exc.errno in _NOTHING_LISTENS:
            raise error from exc  # no server process there, so none that is overloaded
        raise _overloaded(error) from exc
    except BaseException:
        _release(sock, cancellation)
        raise


#: TCP connect errors that say no server process is there to be overloaded: nothing
#: listens on the port (the server is down or was killed), or the host cannot be
#: reached at all. An overloaded server still listens: it accepts and then drops or
#: stalls connections, or leaves connection attempts unanswered (a timeout).
_NOTHING_LISTENS = frozenset(
    {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN}
)


def _overloaded(error: NetworkError) -> NetworkError:
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


def _tls_io_error(exc: BaseException) -> bool:
    """Is this TLS failure the connection's I/O (dropped, reset, closed) rather than
    the TLS exchange itself (certificate, host name, protocol version)?"""
    import ssl  # noqa: PLC0415 - loaded already: exc is one of its errors

    return isinstance(exc, (ssl.SSLEOFError, ssl.SSLSyscallError, ssl.SSLZeroReturnError))


def _release(sock: socket.socket, cancellation: Optional[Cancellation]) -> None:
    if cancellation is not None:
        cancellation._attach(None)
    sock.close()


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
    address tried), TLS handshake, hello and authentication.

    Raises NetworkError (NetworkTimeout for timeouts) for socket errors, TLS failures
    included (an untrusted certificate, a host name the certificate does not name),
    OperationFailure for a handshake reply with ``ok: 0``, ProtocolError for a
    malformed one, ConfigurationError when a load-balanced handshake gets no
    serviceId, and whatever ``authenticate`` raises (AuthenticationError when the
    server refuses the credentials), marked so that :func:`in_authentication` is
    true. On any error the socket is closed.
    """
    deadline = deadline_after(settings.connect_timeout)
    sock = _open_socket(address, settings, cancellation, deadline)
    conn: Optional[Connection] = None
    try:
        if settings.ssl_context is not None:
            hostname = settings.server_hostname or (
                address.host if address.port is not None else None
            )
            sock = settings.ssl_context.wrap_socket(
                sock, server_hostname=hostname, do_handshake_on_connect=False
            )
            if cancellation is not None and not cancellation._attach(sock):
                raise NetworkError(f"connecting to {address} was cancelled", address=address)
            tls_handshake(sock, deadline)
        conn = Connection(
            sock,
            address,
            settings,
            generation=generation,
            connection_id=connection_id,
            monitoring=monitoring,
        )
        conn._establishment_deadline = deadline
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
            cancellation._attach(None)
        if conn is not None:
            conn.close("error")
        else:
            sock.close()
        if cancelled and isinstance(exc, NetworkError):
            raise NetworkError(f"connecting to {address} was cancelled", address=address) from exc
        if _is_ssl_error(exc):
            error = NetworkError(f"TLS handshake with {address} failed: {exc}", address=address)
            raise (_overloaded(error) if _tls_io_error(exc) else error) from exc
        if isinstance(exc, socket.timeout):
            raise _overloaded(
                NetworkTimeout(f"TLS handshake with {address} timed out", address=address)
            ) from exc
        if isinstance(exc, OSError):
            raise _overloaded(
                NetworkError(f"could not connect to {address}: {exc}", address=address)
            ) from exc
        if isinstance(exc, NetworkError) and not in_authentication(exc):
            _overloaded(exc)  # the hello exchange failed on the network
        raise
    conn._establishment_deadline = None
    if cancellation is not None:
        cancellation._attach(None)
    _log.debug("connected %r (maxWireVersion %d)", conn, conn.max_wire_version)
    return conn
