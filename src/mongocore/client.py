"""The Client: options, the live topology, and the generic command method.

Seeds: server-discovery-and-monitoring.md ("Client construction": no I/O in the
constructor except the SRV lookup; "Client closing") and server-selection.rst
("Use of read preferences with commands": the generic command method).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Optional, Union

from mongocore.address import Address
from mongocore.description.server import ServerDescription
from mongocore.description.topology import TopologyDescription
from mongocore.description.types import TopologyType
from mongocore.errors import (
    ConfigurationError,
    NetworkError,
    OperationFailure,
    WriteConcernError,
)
from mongocore.events import EventPublisher, Listener
from mongocore.io.connection import Connection, ConnectionSettings, connect
from mongocore.io.monitor import Monitor, MonitorSettings
from mongocore.io.pool import Pool, PoolOptions
from mongocore.io.srv import DnsPythonResolver, Resolver, SrvPoller, options_with_seedlist
from mongocore.io.topology import Server, Topology
from mongocore.options import ClientOptions
from mongocore.selection.read_preference import Mode, ReadPreference, read_preference_for_server

DEFAULT_URI = "mongodb://localhost:27017"


class Client:
    """A client for one MongoDB deployment.

    ``Client(uri)`` or ``Client(["host1:27017", "host2:27017"], replicaSet="rs")``;
    keyword options override the connection string's (same names, any case).
    Monitoring starts at once, in background threads; nothing here waits for a
    server. ``close()`` (or leaving a ``with`` block) stops and joins every thread.
    """

    def __init__(
        self,
        uri_or_hosts: Union[str, Sequence[str], None] = None,
        *,
        event_listeners: Iterable[Listener] = (),
        srv_resolver: Optional[Resolver] = None,
        **options: Any,
    ) -> None:
        uri = _uri_of(uri_or_hosts)
        self._publisher = EventPublisher(event_listeners)
        self._srv_poller: Optional[SrvPoller] = None
        # The one I/O the seed allows in a constructor: the initial SRV lookup
        # (nothing is looked up for a mongodb:// URI).
        srv = options_with_seedlist(uri, resolver=srv_resolver, **options)
        self._options = srv.options
        settings = srv.topology_settings
        self._read_preference = ReadPreference.from_options(
            self._options.read_preference,
            self._options.read_preference_tags or None,
            self._options.max_staleness_seconds,
        )
        self._connection_settings = ConnectionSettings.from_options(self._options)
        self._pool_options = PoolOptions(
            max_pool_size=self._options.max_pool_size,
            min_pool_size=self._options.min_pool_size,
            max_idle_time_ms=self._options.max_idle_time_ms,
            wait_queue_timeout_ms=self._options.wait_queue_timeout_ms,
            max_connecting=self._options.max_connecting,
        )
        self._monitor_settings = MonitorSettings(
            heartbeat_frequency=settings.heartbeat_frequency,
            connection=self._connection_settings,
            server_monitoring_mode=self._options.server_monitoring_mode,
        )
        self._topology = Topology(
            settings,
            pool_factory=self._new_pool,
            monitor_factory=self._new_monitor,
            publisher=self._publisher,
        )
        self._close_lock = threading.Lock()
        self._closed = False
        self._topology.open()
        if srv.seedlist is not None:
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

    # --- parts for one server ---------------------------------------------------------

    def _new_pool(self, address: Address) -> Pool[Connection]:
        settings = self._connection_settings

        def establish(address: Address, generation: int, connection_id: int) -> Connection:
            return connect(address, settings, generation=generation, connection_id=connection_id)

        return Pool(
            address,
            establish,
            self._pool_options,
            self._publisher,
            load_balanced=self._options.load_balanced,
        )

    def _new_monitor(self, address: Address, topology: Topology) -> Monitor:
        return Monitor(address, topology, self._monitor_settings, self._publisher)

    # --- public API ------------------------------------------------------------------

    @property
    def options(self) -> ClientOptions:
        return self._options

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

    def command(
        self,
        database: str,
        document: Mapping[str, Any],
        read_preference: Optional[ReadPreference] = None,
    ) -> dict[str, Any]:
        """Run one command, as the generic command method: never retried.

        Server selection treats it as a read with read preference primary unless one
        is given here; the client's default read preference is ignored, as the seed
        requires. An ``ok: 0`` reply raises OperationFailure; a reply carrying a
        writeConcernError is returned as it is, after SDAM has looked at it.
        """
        if self._closed:
            raise ConfigurationError("this Client is closed; create a new one")
        rp = read_preference if read_preference is not None else ReadPreference(Mode.PRIMARY)
        server, sd = self._topology.select_server(rp)
        command = dict(document)
        _apply_read_preference(command, rp, self._topology.description.type, sd)
        return self.run_on(server, database, command)

    def run_on(self, server: Server, database: str, command: dict[str, Any]) -> dict[str, Any]:
        """Check out a connection to ``server``, run ``command``, hand SDAM any error."""
        pool = server.pool
        generation = pool.generation
        try:
            connection: Connection = pool.check_out()
        except (NetworkError, OperationFailure) as exc:
            self._topology.handle_error(
                server.address, exc, generation=generation, completed_handshake=False
            )
            raise
        try:
            reply = connection.command(database, command)
        except (NetworkError, OperationFailure) as exc:
            self._topology.handle_error(
                server.address,
                exc,
                generation=connection.generation,
                completed_handshake=True,
                max_wire_version=connection.max_wire_version,
                service_id=connection.service_id,
            )
            raise
        finally:
            pool.check_in(connection)
        wce = reply.get("writeConcernError")
        if isinstance(wce, Mapping):
            self._topology.handle_error(
                server.address,
                WriteConcernError(str(wce.get("errmsg", "")), wce.get("code"), reply),
                generation=connection.generation,
                completed_handshake=True,
                max_wire_version=connection.max_wire_version,
                service_id=connection.service_id,
            )
        return reply

    def close(self) -> None:
        """Stop monitoring, close every pool, and join every thread the client started."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self._srv_poller is not None:
            self._srv_poller.close()
        self._topology.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Client {self._topology.description!r}>"


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


def _apply_read_preference(
    command: dict[str, Any],
    read_preference: ReadPreference,
    topology_type: TopologyType,
    server: ServerDescription,
) -> None:
    """Express the read preference in an OP_MSG command.

    OP_MSG has no secondaryOk bit: a mongos (or load balancer) gets the document the
    "Passing read preference to mongos" rules call for; any other server that must
    accept a non-primary read is told so with ``$readPreference``.
    """
    if "$readPreference" in command:
        return
    needed = read_preference_for_server(read_preference, topology_type, server.type)
    if needed.document is not None:
        command["$readPreference"] = needed.document
    elif needed.secondary_ok:
        if read_preference.mode is Mode.PRIMARY:
            # A direct connection reads from any member (Topology type: Single).
            command["$readPreference"] = {"mode": "primaryPreferred"}
        else:
            command["$readPreference"] = read_preference.document()
