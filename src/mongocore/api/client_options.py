"""``client.options``: a client's options as pymongo shows them.

pymongo's ``MongoClient.options`` is a read-only ``ClientOptions`` (``codec_options``,
``read_preference``, ``write_concern``, ``server_selection_timeout`` in seconds, ...)
whose ``pool_options`` is a ``PoolOptions`` (``max_pool_size``, ``connect_timeout`` in
seconds, ``driver``, ``metadata``, ...). These classes show a mongocore client's
settings (:class:`mongocore.core.options.ClientOptions`, ``client.settings``) under
those names and in those units; they hold no state of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from mongocore.driver_info import DriverInfo, DriverInfoList
from mongocore.read_concern import ReadConcern
from mongocore.read_preferences import _ServerMode, from_read_preference
from mongocore.server_api import ServerApi
from mongocore.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongocore.core.codec import AnyCodecOptions
    from mongocore.core.events import Listener
    from mongocore.core.options import ClientOptions as Settings
    from mongocore.core.selection.read_preference import ReadPreference

__all__ = ["ClientOptions", "PoolOptions", "any_server_selector"]


def any_server_selector(selection: Any) -> Any:
    """The server selector of a client given none: every server is acceptable (pymongo's
    ``any_server_selector``; mongocore takes no custom selector)."""
    return selection


def _seconds(milliseconds: Optional[float]) -> Optional[float]:
    return None if milliseconds is None else milliseconds / 1000.0


class PoolOptions:
    """A client's connection pool options, read only (pymongo's ``PoolOptions``)."""

    def __init__(
        self,
        settings: Settings,
        driver_info: DriverInfoList,
        server_api: Optional[ServerApi],
    ) -> None:
        self._settings = settings
        self._driver_info = driver_info
        self._server_api = server_api

    @property
    def non_default_options(self) -> dict[str, Any]:
        """The pool options given other values than their defaults, as pymongo lists
        them (for the pool's log messages)."""
        settings = self._settings
        options: dict[str, Any] = {}
        if settings.max_pool_size != 100:
            options["maxPoolSize"] = settings.max_pool_size
        if settings.min_pool_size:
            options["minPoolSize"] = settings.min_pool_size
        if settings.max_idle_time_ms is not None:
            options["maxIdleTimeMS"] = float(settings.max_idle_time_ms)
        if settings.wait_queue_timeout_ms is not None:
            options["waitQueueTimeoutMS"] = float(settings.wait_queue_timeout_ms)
        if settings.max_connecting != 2:
            options["maxConnecting"] = settings.max_connecting
        return options

    @property
    def max_pool_size(self) -> float:
        """The most connections a pool opens to one server (``maxPoolSize``)."""
        return self._settings.max_pool_size

    @property
    def min_pool_size(self) -> int:
        """The connections a pool keeps open to each server (``minPoolSize``)."""
        return self._settings.min_pool_size

    @property
    def max_connecting(self) -> int:
        """The most connections a pool establishes at once (``maxConnecting``)."""
        return self._settings.max_connecting

    @property
    def pause_enabled(self) -> bool:
        """Pools are paused when their server is marked Unknown (CMAP): always."""
        return True

    @property
    def max_idle_time_seconds(self) -> Optional[float]:
        """How long an idle connection is kept, in seconds (``maxIdleTimeMS``), or None."""
        return _seconds(self._settings.max_idle_time_ms)

    @property
    def connect_timeout(self) -> Optional[float]:
        """The connect timeout in seconds (``connectTimeoutMS``), or None."""
        return _seconds(self._settings.connect_timeout_ms)

    @property
    def socket_timeout(self) -> Optional[float]:
        """The socket timeout in seconds (``socketTimeoutMS``), or None."""
        return _seconds(self._settings.socket_timeout_ms)

    @property
    def wait_queue_timeout(self) -> Optional[float]:
        """How long a checkout waits for a connection, in seconds
        (``waitQueueTimeoutMS``), or None."""
        return _seconds(self._settings.wait_queue_timeout_ms)

    @property
    def tls_allow_invalid_hostnames(self) -> bool:
        return self._settings.tls_allow_invalid_hostnames

    @property
    def appname(self) -> Optional[str]:
        """The application name sent in the handshake (``appname``)."""
        return self._settings.app_name

    @property
    def driver(self) -> Optional[DriverInfo]:
        """The wrapping library's DriverInfo given to the client (``driver=``), or None."""
        infos = self._driver_info.snapshot()
        return infos[0] if infos else None

    @property
    def metadata(self) -> dict[str, Any]:
        """The ``client`` document of the handshake (MongoDB Handshake), with what
        wrapping libraries appended."""
        # The handshake is part of the I/O shell, loaded by then with the client.
        from mongocore.io.handshake import client_metadata  # noqa: PLC0415

        return client_metadata(self._settings.app_name, driver_info=self._driver_info.snapshot())

    @property
    def server_api(self) -> Optional[ServerApi]:
        """The declared server API version (the Stable API), or None."""
        return self._server_api

    @property
    def load_balanced(self) -> Optional[bool]:
        """True in load-balanced mode, else None (pymongo's for an option not given)."""
        return self._settings.load_balanced or None


class ClientOptions:
    """A client's options, read only, as pymongo's ``client.options`` shows them.

    Times are in seconds where pymongo gives seconds (``server_selection_timeout``,
    ``heartbeat_frequency``, ``timeout``) and in milliseconds where it gives
    milliseconds (``local_threshold_ms``). Every option, typed and in mongocore's
    names, is ``client.settings``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        codec_options: AnyCodecOptions,
        read_preference: ReadPreference,
        write_concern: WriteConcern,
        read_concern: ReadConcern,
        pool_options: PoolOptions,
        event_listeners: Sequence[Listener],
        connect: Optional[bool],
    ) -> None:
        self._settings = settings
        self._codec_options = codec_options
        self._read_preference = read_preference
        self._write_concern = write_concern
        self._read_concern = read_concern
        self._pool_options = pool_options
        self._event_listeners = list(event_listeners)
        self._connect = connect
        self._pymongo_read_preference: Optional[_ServerMode] = None

    @property
    def connect(self) -> Optional[bool]:
        """What ``connect=`` was given (mongocore always connects in the background)."""
        return self._connect

    @property
    def codec_options(self) -> AnyCodecOptions:
        """How documents are encoded and decoded (bson's CodecOptions)."""
        return self._codec_options

    @property
    def direct_connection(self) -> Optional[bool]:
        return self._settings.direct_connection

    @property
    def local_threshold_ms(self) -> int:
        """The latency window of server selection, in milliseconds."""
        return self._settings.local_threshold_ms

    @property
    def server_selection_timeout(self) -> float:
        """How long server selection waits, in seconds (``serverSelectionTimeoutMS``)."""
        return self._settings.server_selection_timeout_ms / 1000.0

    @property
    def server_selector(self) -> Any:
        """The custom server selector: mongocore takes none, so every server is
        acceptable (:func:`any_server_selector`)."""
        return any_server_selector

    @property
    def heartbeat_frequency(self) -> float:
        """The interval of server checks, in seconds (``heartbeatFrequencyMS``)."""
        return self._settings.heartbeat_frequency_ms / 1000.0

    @property
    def pool_options(self) -> PoolOptions:
        return self._pool_options

    @property
    def read_preference(self) -> _ServerMode:
        """The default read preference, as pymongo's classes show it."""
        if self._pymongo_read_preference is None:
            self._pymongo_read_preference = from_read_preference(self._read_preference)
        return self._pymongo_read_preference

    @property
    def replica_set_name(self) -> Optional[str]:
        return self._settings.replica_set

    @property
    def write_concern(self) -> WriteConcern:
        return self._write_concern

    @property
    def read_concern(self) -> ReadConcern:
        return self._read_concern

    @property
    def timeout(self) -> Optional[float]:
        """The client's operation timeout in seconds (``timeoutMS``), or None."""
        return _seconds(self._settings.timeout_ms)

    @property
    def retry_writes(self) -> bool:
        """Whether supported writes are retried (``retryWrites``: false by default,
        as the retryable-writes specification mongocore follows asks)."""
        return self._settings.retry_writes

    @property
    def retry_reads(self) -> bool:
        return self._settings.retry_reads

    @property
    def auto_encryption_opts(self) -> None:
        """Client-side field level encryption is not provided: always None."""
        return None

    @property
    def load_balanced(self) -> Optional[bool]:
        """True in load-balanced mode, else None (pymongo's for an option not given)."""
        return self._settings.load_balanced or None

    @property
    def event_listeners(self) -> list[Listener]:
        """The listeners given to the client (``event_listeners=``), in order."""
        return list(self._event_listeners)

    @property
    def server_monitoring_mode(self) -> str:
        return self._settings.server_monitoring_mode

    @property
    def max_adaptive_retries(self) -> int:
        """Client backpressure's retries: 0, the only value mongocore takes."""
        return self._settings.max_adaptive_retries

    @property
    def enable_overload_retargeting(self) -> bool:
        return self._settings.enable_overload_retargeting
