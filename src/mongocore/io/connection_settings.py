"""How to open and handshake a connection: :class:`ConnectionSettings`.

Specs: the connection options of the URI Options spec (connectTimeoutMS,
socketTimeoutMS, appname, loadBalanced, the TLS options, compressors and
zlibCompressionLevel) as a connection uses them; MongoDB Handshake, "Limitations" (the
appname limit); Wire Compression in Drivers, "Compressors" (a configured compressor
that is not installed is left out). The connection that uses them is
:mod:`mongocore.io.connection`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from mongocore._deferred_dataclass import dataclass
from mongocore.core.lazy_logger import get_logger
from mongocore.driver_info import DriverInfoList
from mongocore.errors import ConfigurationError

if TYPE_CHECKING:
    import ssl

    from mongocore.core.options import ClientOptions
    from mongocore.server_api import ServerApi

__all__ = ["MAX_APP_NAME_BYTES", "ConnectionSettings"]

_log = get_logger("mongocore.connection")

#: "The client.application.name cannot exceed 128 bytes."
MAX_APP_NAME_BYTES = 128


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
    #: The declared server API version (the Stable API): its fields go on every
    #: command, the handshake's included (see mongocore.core.stable_api).
    server_api: Optional[ServerApi] = None

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
        if self.compressors:
            # Compression loads for the clients that ask for it, not with every client.
            from mongocore.core.compression import compressor_for  # noqa: PLC0415

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
        available: tuple[str, ...] = ()
        if options.compressors:
            from mongocore.core.compression import available_compressors  # noqa: PLC0415

            available = available_compressors()
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


def _ms(value: Optional[int]) -> Optional[float]:
    return value / 1000.0 if value else None
