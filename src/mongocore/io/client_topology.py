"""One client's live topology, with a pool and a monitor for each server it learns of.

:class:`~mongocore.api.client.Client` builds its topology here, on construction. This
module is where the I/O shell meets a client: importing it loads the sockets, the wire
protocol, the handshake, the pools, the monitors and the topology, which is why the
client imports it in its constructor and not at the top of its module: a program that
imports mongocore and never connects (a command line's ``--help``, a test collection, a
library importing the names it annotates with) does not load any of that.

CMAP: a pool's connections are established (opened, handshaken and authenticated) by
:func:`mongocore.io.connection.connect`; SDAM ("MongoDB Handshake errors") hears of an
establishment that fails from the pool, before the pool publishes the close.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Optional

from mongocore import _deferred_dataclass as deferred_dataclass
from mongocore.io.connection import Connection, connect, handshake_service_id, in_authentication
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.establishment import Cancellation
from mongocore.io.monitor import Monitor
from mongocore.io.monitor_settings import MonitorSettings
from mongocore.io.pool import Pool
from mongocore.io.pool_options import PoolOptions
from mongocore.io.topology import Topology

if TYPE_CHECKING:
    from bson import ObjectId

    from mongocore.core.address import Address
    from mongocore.core.description.settings import TopologySettings
    from mongocore.core.events import EventPublisher
    from mongocore.core.options import ClientOptions
    from mongocore.driver_info import DriverInfoList
    from mongocore.io.auth import Authenticator
    from mongocore.server_api import ServerApi


class ClientTopology:
    """A client's topology and the settings its connections are made with.

    ``connection_settings`` is kept for the SRV poller (its lookups' timeout) and
    carries the client's ``DriverInfoList``, so that metadata appended later reaches
    the handshakes of connections created afterwards.
    """

    __slots__ = (
        "_authenticator",
        "_options",
        "_pool_options",
        "_publisher",
        "connection_settings",
        "monitor_settings",
        "topology",
    )

    def __init__(
        self,
        options: ClientOptions,
        settings: TopologySettings,
        *,
        driver_info: DriverInfoList,
        server_api: Optional[ServerApi],
        authenticator: Optional[Authenticator],
        publisher: EventPublisher,
        topology_id: ObjectId,
    ) -> None:
        self.connection_settings: ConnectionSettings = deferred_dataclass.replace(
            ConnectionSettings.from_options(options),
            driver_info=driver_info,
            server_api=server_api,
        )
        self.monitor_settings = MonitorSettings(
            heartbeat_frequency=settings.heartbeat_frequency,
            connection=self.connection_settings,
            server_monitoring_mode=options.server_monitoring_mode,
        )
        self._options = options
        self._authenticator = authenticator
        self._publisher = publisher
        self._pool_options = PoolOptions(
            max_pool_size=options.max_pool_size,
            min_pool_size=options.min_pool_size,
            max_idle_time_ms=options.max_idle_time_ms,
            wait_queue_timeout_ms=options.wait_queue_timeout_ms,
            max_connecting=options.max_connecting,
        )
        self.topology = Topology(
            settings,
            pool_factory=self._new_pool,
            monitor_factory=self._new_monitor,
            publisher=publisher,
            topology_id=topology_id,
        )

    def _new_pool(self, address: Address) -> Pool[Connection]:
        settings = self.connection_settings
        authenticator = self._authenticator
        # Weak, like a monitor's: a pool's background thread must not keep an unclosed
        # client's topology alive (mongocore.io.topology, the finalizer).
        topology_ref = weakref.ref(self.topology)

        def establish(
            address: Address,
            generation: int,
            connection_id: int,
            cancellation: Optional[Cancellation] = None,
        ) -> Connection:
            connection = connect(
                address,
                settings,
                generation=generation,
                connection_id=connection_id,
                cancellation=cancellation,
                authenticate=authenticator,
            )
            connection.take_hello()  # its authentication, the reply's last reader, is done
            return connection

        def establish_failed(error: BaseException, generation: int) -> None:
            # "MongoDB Handshake errors": the pool reports them (a checkOut's and
            # minPoolSize filling's alike) before it publishes the connection's close.
            topology = topology_ref()
            if topology is None:
                return  # freed: nobody left to tell
            topology.handle_error(
                address,
                error,
                generation=generation,
                completed_handshake=False,
                in_authentication=in_authentication(error),
                service_id=handshake_service_id(error),
            )

        pool: Pool[Connection] = Pool(
            address,
            establish,
            self._pool_options,
            self._publisher,
            load_balanced=self._options.load_balanced,
            on_establish_error=establish_failed,
            # A clear with interruptInUseConnections aborts connections being established.
            cancellation_factory=Cancellation,
        )
        return pool

    def _new_monitor(self, address: Address, topology: Topology) -> Monitor:
        return Monitor(address, topology, self.monitor_settings, self._publisher)
