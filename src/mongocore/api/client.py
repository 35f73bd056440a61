"""The Client: options, the live topology, sessions, and the generic command method.

Seeds: server-discovery-and-monitoring.md ("Client construction": no I/O in the
constructor except the SRV lookup; "Client closing") and server-selection.rst
("Use of read preferences with commands": the generic command method). Driver
Sessions: the client owns the server session pool and the highest cluster time
seen ("MongoClient changes", "endSessions" when the client closes). The commands
(the generic command method, listDatabases, dropDatabase) are
:mod:`mongocore.api.client_commands`.

``client["db"]["coll"]`` reaches the CRUD API (:mod:`mongocore.api.collection`); every
operation runs through the executor of :mod:`mongocore.io.executor`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, NoReturn, Optional, Union

from bson import ObjectId, Timestamp

from mongocore.api.client_commands import ClientCommands
from mongocore.api.client_info import DeploymentInfo
from mongocore.api.listener_registry import registered_listeners
from mongocore.api.types import _DocumentType
from mongocore.api.watch import ClientWatch
from mongocore.core import codec
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.events import EventPublisher, Listener
from mongocore.core.lazy_logger import get_logger
from mongocore.core.options import ClientOptions
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.driver_info import DriverInfo, DriverInfoList, driver_info_of
from mongocore.errors import (
    ConfigurationError,
    InvalidOperation,
    MongoCoreError,
    NetworkError,
    OperationFailure,
    ProtocolError,
    write_concern_error_from_reply,
)
from mongocore.read_concern import ReadConcern
from mongocore.read_preferences import expand_read_preference_keyword
from mongocore.server_api import ServerApi
from mongocore.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongocore.api.client_options import ClientOptions as PymongoClientOptions
    from mongocore.api.client_session import ClientSession
    from mongocore.api.database import Database
    from mongocore.api.transaction_options import TransactionOptions
    from mongocore.core.description.settings import TopologySettings
    from mongocore.io.auth import Authenticator
    from mongocore.io.connection import Connection
    from mongocore.io.dns_resolver import Resolver
    from mongocore.io.executor import Executor
    from mongocore.io.sessions import ClusterClock, ServerSessionPool
    from mongocore.io.srv import SrvConfiguration
    from mongocore.io.srv_polling import SrvPoller
    from mongocore.io.topology import Server, Topology

_log = get_logger("mongocore.client")

DEFAULT_URI = "mongodb://localhost:27017"
#: endSessions at close: at most this many ids per command ("10,000 sessions at a time").
END_SESSIONS_BATCH = 10_000
#: endSessions at close waits at most this long for a connection and for its reply.
END_SESSIONS_TIMEOUT = 2.0


class Client(DeploymentInfo, ClientWatch, ClientCommands, Generic[_DocumentType]):
    """A client for one MongoDB deployment.

    ``Client(uri)`` or ``Client(["host1:27017", "host2:27017"], replicaSet="rs")``;
    keyword options override the connection string's (same names, any case).
    Monitoring starts at once, in background threads; nothing here waits for a
    server. ``close()`` (or leaving a ``with`` block) ends the pooled server sessions
    (``endSessions``, best effort) and stops and joins every thread.

    ``client["db"]`` is a :class:`~mongocore.api.database.Database`; ``start_session()``
    starts an explicit session. ``retryWrites`` defaults to false (the
    retryable-writes seed): pass ``retryWrites=True`` to retry supported writes once
    after a failover or a network error. ``retryReads`` defaults to true.

    A library wrapping mongocore names itself in the handshake with ``driver_info``
    (or later with :meth:`append_metadata`).

    ``server_api`` (a :class:`~mongocore.server_api.ServerApi`) declares the server
    API version (the Stable API) every command of this client runs under.
    """

    def __init__(
        self,
        uri_or_hosts: Union[str, Sequence[str], None] = None,
        *,
        event_listeners: Iterable[Listener] = (),
        srv_resolver: Optional[Resolver] = None,
        driver_info: Optional[DriverInfo] = None,
        server_api: Optional[ServerApi] = None,
        **options: Any,
    ) -> None:
        if server_api is not None and not isinstance(server_api, ServerApi):
            raise TypeError(f"server_api must be an instance of ServerApi, not {type(server_api)}")
        uri = _uri_of(uri_or_hosts)
        #: What ``connect=`` was given (a MongoClient's; shown by ``options.connect``).
        self._connect: Optional[bool] = None
        self._shown_options: Optional[PymongoClientOptions] = None
        self._server_api = server_api
        self._event_listeners = list(event_listeners)
        # Known before the topology exists: the pools' log messages carry it.
        topology_id = ObjectId()
        # SDAM and CMAP log messages (mongocore.io.log_messages, mongocore.io.pool_log):
        # subscribed only if their logger is enabled for DEBUG when the client is created.
        self._publisher = EventPublisher(
            [*registered_listeners(), *self._event_listeners, *_log_listeners(topology_id)]
        )
        self._srv_poller: Optional[SrvPoller] = None
        # document_class, tzinfo, type_registry, codec_options: Python objects, never
        # connection-string options.
        codec_keywords = codec.pop_codec_keywords(options)
        # A read preference object stands for readPreference and its tags and staleness.
        options = expand_read_preference_keyword(options)
        # The one I/O the seed allows in a constructor: the initial SRV lookup
        # (nothing is looked up for a mongodb:// URI).
        srv = _configuration(uri, srv_resolver, options)
        self._settings = srv.options
        self._codec_options = codec.codec_options_for_client(self._settings, codec_keywords)
        settings = srv.topology_settings
        self._read_preference = ReadPreference.from_options(
            self._settings.read_preference,
            self._settings.read_preference_tags or None,
            self._settings.max_staleness_seconds,
        )
        # The I/O shell (sockets, the wire protocol, pools, monitors, the live
        # topology) and server sessions load with the first client, not with the import
        # of mongocore: see mongocore.io.client_topology.
        from mongocore.io.client_topology import ClientTopology  # noqa: PLC0415
        from mongocore.io.sessions import ClusterClock, ServerSessionPool  # noqa: PLC0415

        # One list for every connection of this client: what append_metadata() adds
        # reaches the handshakes of pool and monitoring connections created afterwards.
        self._driver_info = DriverInfoList(
            [] if driver_info is None else [driver_info_of(driver_info)]
        )
        parts = ClientTopology(
            self._settings,
            settings,
            driver_info=self._driver_info,
            server_api=server_api,
            authenticator=_authenticator_for(self._settings),
            publisher=self._publisher,
            topology_id=topology_id,
        )
        self._connection_settings = parts.connection_settings
        self._monitor_settings = parts.monitor_settings
        self._topology: Topology = parts.topology
        self._close_lock = threading.Lock()
        self._closed = False
        self._write_concern = WriteConcern.from_options(
            self._settings.w, self._settings.w_timeout_ms, self._settings.journal
        )
        self._read_concern = ReadConcern(self._settings.read_concern_level)
        self._session_pool: ServerSessionPool = ServerSessionPool()
        self._cluster_clock: ClusterClock = ClusterClock()
        self._executor_instance: Optional[Executor] = None  # see _executor
        self._topology.open()
        if srv.seedlist is not None:
            from mongocore.io.dns_resolver import DnsPythonResolver  # noqa: PLC0415
            from mongocore.io.srv_polling import SrvPoller  # noqa: PLC0415

            self._srv_poller = SrvPoller(
                srv.options.srv_host or "",
                resolver=srv_resolver
                or DnsPythonResolver(self._connection_settings.connect_timeout),
                on_hosts=self._topology.on_srv_hosts,
                description=lambda: self._topology.description,
                service_name=srv.options.srv_service_name,
                srv_max_hosts=srv.options.srv_max_hosts,
                heartbeat_frequency_ms=srv.options.heartbeat_frequency_ms,
                initial_ttl=srv.seedlist.min_ttl,
            )
            self._srv_poller.start()

    # --- public API ------------------------------------------------------------------

    @property
    def options(self) -> PymongoClientOptions:
        """The client's options as pymongo's ``client.options`` shows them
        (``codec_options``, ``read_preference``, ``pool_options``, ...); every option
        in mongocore's names is :attr:`settings`."""
        shown = self._shown_options
        if shown is None:
            from mongocore.api.client_options import (  # noqa: PLC0415 - on first use
                ClientOptions as Shown,
            )
            from mongocore.api.client_options import PoolOptions  # noqa: PLC0415

            shown = self._shown_options = Shown(
                self._settings,
                codec_options=self._codec_options,
                read_preference=self._read_preference,
                write_concern=self._write_concern,
                read_concern=self._read_concern,
                pool_options=PoolOptions(self._settings, self._driver_info, self._server_api),
                event_listeners=self._event_listeners,
                connect=self._connect,
            )
        return shown

    @property
    def settings(self) -> ClientOptions:
        """Every option of the client, typed, in mongocore's names (connection string
        options and keywords merged, validated, with their defaults)."""
        return self._settings

    @property
    def _options(self) -> PymongoClientOptions:
        # pymongo 4.9 and newer keep client.options here, and libraries read it
        # (MongoEngine's tests: client._options.replica_set_name).
        return self.options

    @property
    def topology_description(self) -> TopologyDescription:
        """The client's current view of the deployment (immutable)."""
        return self._topology.description

    @property
    def read_preference(self) -> ReadPreference:
        """The client's default read preference (from the URI or options)."""
        return self._read_preference

    @property
    def topology(self) -> Topology:
        return self._topology

    @property
    def codec_options(self) -> codec.AnyCodecOptions:
        """How documents are encoded and decoded (bson's CodecOptions), from the
        ``uuidRepresentation``, ``tz_aware``, ``document_class``, ... options."""
        return self._codec_options

    def append_metadata(self, driver_info: DriverInfo) -> None:
        """Append a wrapping library's name, version and platform to the client
        metadata (MongoDB Handshake, "Metadata updates after MongoClient
        initialization"). Connections created from now on send it in their
        handshake; established connections are kept as they are. Appending the same
        DriverInfo twice changes nothing."""
        self._driver_info.append(driver_info_of(driver_info))

    @property
    def write_concern(self) -> WriteConcern:
        """The default write concern (``w``, ``wTimeoutMS``, ``journal`` options)."""
        return self._write_concern

    @property
    def read_concern(self) -> ReadConcern:
        """The default read concern (``readConcernLevel`` option)."""
        return self._read_concern

    @property
    def cluster_time(self) -> Optional[Mapping[str, Any]]:
        """The highest ``$clusterTime`` received from the deployment (None before any)."""
        return self._cluster_clock.value

    # --- databases and sessions -----------------------------------------------------------

    # Database, Collection and the cursors load with the first database asked for:
    # constructing a client does not need them (nor importing mongocore).

    def __getitem__(self, name: str) -> Database[_DocumentType]:
        from mongocore.api.database import Database  # noqa: PLC0415

        return Database(self, name)  # checks the name

    def __getattr__(self, name: str) -> Database[_DocumentType]:
        """``client.name`` is ``client["name"]``, through ``__getitem__`` each time (as
        in pymongo: a subclass's ``__getitem__`` decides what it returns)."""
        if name.startswith("_"):
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}. To reach the database"
                f" {name!r}, use client[{name!r}]."
            )
        return self.__getitem__(name)

    # Iterating a client is a mistake: without these, Python would iterate it through
    # __getitem__ with 0, 1, 2, ...
    def __iter__(self) -> Client[_DocumentType]:
        return self

    def __next__(self) -> NoReturn:
        raise TypeError(f"'{type(self).__name__}' object is not iterable")

    next = __next__

    def get_database(
        self,
        name: Optional[str] = None,
        codec_options: Optional[codec.AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> Database:
        """The database ``name`` (the connection string's database when None); each
        option not given is the client's. ``timeout_ms``: its operations' timeoutMS
        (0: no limit; by default the client's)."""
        if name is None:
            name = self._settings.database
            if not name:
                raise ConfigurationError("No default database name defined or provided.")
        from mongocore.api.database import Database  # noqa: PLC0415
        from mongocore.api.target import _check_timeout_ms  # noqa: PLC0415

        database = Database(
            self,
            name,
            codec_options=codec_options,
            read_preference=read_preference,
            write_concern=write_concern,
            read_concern=read_concern,
        )
        database._timeout_ms = _check_timeout_ms(timeout_ms, None)
        return database

    def get_default_database(
        self,
        default: Optional[str] = None,
        codec_options: Optional[codec.AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
    ) -> Database:
        """The connection string's database, else ``default``; ConfigurationError if
        neither names one."""
        name = self._settings.database or default
        if not name:
            raise ConfigurationError("No default database name defined or provided.")
        return self.get_database(name, codec_options, read_preference, write_concern, read_concern)

    def start_session(
        self,
        causal_consistency: Optional[bool] = None,
        default_transaction_options: Optional[TransactionOptions] = None,
        snapshot: bool = False,
        *,
        snapshot_time: Optional[Timestamp] = None,
    ) -> ClientSession:
        """Start an explicit session; end it with ``end_session()`` or a ``with`` block.

        No I/O happens here, and whether the deployment supports sessions is checked
        on first use. A session is for one thread at a time; use it within a minute
        of starting it, or its server session may have gone stale. ``snapshot=True``
        starts a snapshot session (MongoDB 5.0+): its reads all see the data as of
        its first read, or as of ``snapshot_time`` (a ``bson.Timestamp``, e.g. another
        snapshot session's ``get_snapshot_time()``) when given; it cannot be causally
        consistent.
        ``default_transaction_options`` are the options of the session's transactions
        that ``start_transaction()`` does not give.
        """
        self._check_open()
        # Sessions and transactions load with the first session, not with the client.
        from mongocore.api.client_session import ClientSession, SessionOptions  # noqa: PLC0415

        options = SessionOptions(
            causal_consistency=causal_consistency,
            snapshot=snapshot,
            default_transaction_options=default_transaction_options,
            snapshot_time=snapshot_time,
        )
        return ClientSession(self, options)

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidOperation("Cannot use MongoClient after close")

    def run_on(self, server: Server, database: str, command: dict[str, Any]) -> dict[str, Any]:
        """Check out a connection to ``server``, run ``command``, hand SDAM any error.

        A low-level step with command events but no session, cluster time or retry.
        """
        # Loaded with the first command, not with the client.
        from mongocore.io.command_monitoring import run_command  # noqa: PLC0415

        pool = server.pool
        # Establishment errors reach SDAM through the pool (on_establish_error).
        connection: Connection = pool.check_out()
        try:
            reply = run_command(connection, database, command, self._publisher)
        except (NetworkError, ProtocolError, OperationFailure) as exc:
            self._topology.handle_connection_error(connection, exc)
            raise
        finally:
            pool.check_in(connection)
        concern_error = write_concern_error_from_reply(reply)
        if concern_error is not None:
            self._topology.handle_connection_error(connection, concern_error)
        return reply

    def _end_sessions(self) -> None:
        """Tell the deployment the pooled server sessions are over (best effort).

        Sent to the primary if there is one, else a secondary (or any mongos), only
        if such a server is known right now; errors are ignored, and the wait for a
        connection and for the reply is bounded.
        """
        ids = self._session_pool.drain()
        if not ids:
            return
        # Loaded by the operations that pooled the sessions: free by now.
        from mongocore.io.command_monitoring import run_command  # noqa: PLC0415
        from mongocore.io.operation import (  # noqa: PLC0415
            apply_read_preference as _apply_read_preference,
        )

        try:
            server, sd = self._topology.select_server(
                ReadPreference(Mode.PRIMARY_PREFERRED), timeout=0, operation="endSessions"
            )
        except MongoCoreError:
            return
        try:
            connection: Connection = server.pool.check_out(END_SESSIONS_TIMEOUT)
        except MongoCoreError:
            return
        try:
            for start in range(0, len(ids), END_SESSIONS_BATCH):
                command: dict[str, Any] = {"endSessions": ids[start : start + END_SESSIONS_BATCH]}
                cluster_time = self._cluster_clock.value
                if cluster_time is not None and connection.max_wire_version >= 6:
                    command["$clusterTime"] = cluster_time
                _apply_read_preference(
                    command,
                    ReadPreference(Mode.PRIMARY_PREFERRED),
                    self._topology.description.type,
                    sd,
                )
                run_command(
                    connection, "admin", command, self._publisher, timeout=END_SESSIONS_TIMEOUT
                )
        except MongoCoreError as exc:
            _log.debug("endSessions failed (ignored): %s", exc)
        finally:
            server.pool.check_in(connection)

    @property
    def _executor(self) -> Executor:
        """The retry executor, built with the first operation: it and the modules it
        runs operations with load then, not with the client (import time)."""
        executor = self._executor_instance
        if executor is None:
            from mongocore.io.executor import Executor  # noqa: PLC0415 - see above

            with self._close_lock:
                executor = self._executor_instance
                if executor is None:
                    executor = self._executor_instance = Executor(self, self._cluster_clock)
                    if self._closed:
                        executor.closing.set()
        return executor

    def close(self) -> None:
        """Stop monitoring, close every pool, and join every thread the client started."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            executor = self._executor_instance
        if executor is not None:
            executor.closing.set()  # wakes a read backing off between retries
        self._end_sessions()
        if self._srv_poller is not None:
            self._srv_poller.close()
        self._topology.close()

    def __enter__(self) -> Client[_DocumentType]:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_val: Optional[BaseException],
        exc_tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Client {self._topology.description!r}>"

    def eq_props(
        self,
    ) -> tuple[tuple[tuple[str, Optional[int]], ...], Optional[str], Optional[str], str]:
        """What two clients compare and hash by: the sorted seeds, the replica set name,
        the SRV host and the SRV service name (pymongo's ``eq_props``)."""
        options = self._settings
        return (
            tuple(sorted((address.host, address.port) for address in options.hosts)),
            options.replica_set,
            options.srv_host,
            options.srv_service_name,
        )

    def __eq__(self, other: object) -> bool:
        """Clients are equal when they were given the same seeds, replica set name and
        SRV name (as pymongo compares them)."""
        if not isinstance(other, Client):
            return NotImplemented
        return self.eq_props() == other.eq_props()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.eq_props())


class _PlainConfiguration(NamedTuple):
    """A mongodb:// URI's configuration: what options_with_seedlist gives, without it."""

    options: ClientOptions
    topology_settings: TopologySettings
    seedlist: None = None


def _configuration(
    uri: str, resolver: Optional[Resolver], options: dict[str, Any]
) -> Union[SrvConfiguration, _PlainConfiguration]:
    """The client's options and topology settings. The SRV module (and DNS) load only
    for a mongodb+srv:// URI; it parses the URI again, with the lookup."""
    base = ClientOptions.from_uri(uri, **options)
    if not base.is_srv:
        return _PlainConfiguration(base, base.topology_settings)
    from mongocore.io.srv import options_with_seedlist  # noqa: PLC0415

    return options_with_seedlist(uri, resolver=resolver, **options)


def _authenticator_for(options: ClientOptions) -> Optional[Authenticator]:
    """The authentication hook the options ask for. The mechanisms (SCRAM's hashing,
    X.509, ...) load only for a client given credentials."""
    if options.username is None and options.auth_mechanism is None and options.password is None:
        return None
    from mongocore.io.auth import authenticator_for  # noqa: PLC0415

    return authenticator_for(options)


def _log_listeners(topology_id: ObjectId) -> list[Listener]:
    """The structured loggers (SDAM, CMAP, command) enabled now, as listeners.

    Until something imports :mod:`logging` no logger can be enabled, so a program that
    never sets logging up loads neither it nor the message modules.
    """
    if "logging" not in sys.modules:
        return []
    # Loaded only once logging is (see above).
    from mongocore.io.command_log import command_log_listeners  # noqa: PLC0415
    from mongocore.io.log_messages import topology_log_listeners  # noqa: PLC0415
    from mongocore.io.pool_log import connection_log_listeners  # noqa: PLC0415

    return [
        *topology_log_listeners(),
        *connection_log_listeners(topology_id),
        *command_log_listeners(topology_id),
    ]


def _uri_of(uri_or_hosts: Union[str, Sequence[str], None]) -> str:
    if uri_or_hosts is None:
        return DEFAULT_URI
    if isinstance(uri_or_hosts, str):
        if "://" in uri_or_hosts:
            return uri_or_hosts
        return f"mongodb://{uri_or_hosts}"
    hosts = list(uri_or_hosts)
    if not hosts or not all(isinstance(h, str) for h in hosts):
        raise ConfigurationError("hosts must be a connection string or a list of 'host:port'")
    return "mongodb://" + ",".join(hosts)
