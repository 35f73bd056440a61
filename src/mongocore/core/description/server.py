"""ServerDescription: the client's view of one server, built from a hello outcome.

Seed: server-discovery-and-monitoring.md, sections "ServerDescription" and "Server
Description Equality". Parsing the reply is in hello_parsing, topologyVersion in
topology_version.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from mongocore.core.address import Address
from mongocore.core.description.hello_parsing import NO_ADDRESSES as _EMPTY
from mongocore.core.description.hello_parsing import NO_TAGS as _NO_TAGS
from mongocore.core.description.hello_parsing import parse_hello
from mongocore.core.description.topology_version import TopologyVersion
from mongocore.core.description.types import DATA_BEARING, ServerType

_set = object.__setattr__


class ServerDescription:
    """An immutable description of one server.

    Times are in seconds: ``round_trip_time`` and ``min_round_trip_time`` are
    durations, ``last_update_time`` is a reading of the caller's monotonic clock,
    ``last_write_date`` is seconds since the Unix epoch.
    """

    # Built with one __dict__ assignment (see _build): a monitor makes one of these
    # per heartbeat, and per-field object.__setattr__ calls cost more than parsing.
    _eq_key: Optional[tuple[Any, ...]]
    address: Address
    type: ServerType
    error: Optional[str]
    round_trip_time: Optional[float]
    min_round_trip_time: Optional[float]
    last_write_date: Optional[float]
    op_time: Optional[Any]
    min_wire_version: int
    max_wire_version: int
    me: Optional[Address]
    hosts: frozenset[Address]
    passives: frozenset[Address]
    arbiters: frozenset[Address]
    tags: Mapping[str, str]
    set_name: Optional[str]
    election_id: Optional[Any]
    set_version: Optional[int]
    primary: Optional[Address]
    last_update_time: float
    logical_session_timeout_minutes: Optional[int]
    topology_version: Optional[TopologyVersion]
    iscryptd: bool
    service_id: Optional[Any]

    def __init__(
        self,
        address: Address,
        type: ServerType = ServerType.UNKNOWN,
        *,
        error: Optional[str] = None,
        round_trip_time: Optional[float] = None,
        min_round_trip_time: Optional[float] = None,
        last_write_date: Optional[float] = None,
        op_time: Optional[Any] = None,
        min_wire_version: int = 0,
        max_wire_version: int = 0,
        me: Optional[Address] = None,
        hosts: Iterable[Address] = _EMPTY,
        passives: Iterable[Address] = _EMPTY,
        arbiters: Iterable[Address] = _EMPTY,
        tags: Optional[Mapping[str, str]] = None,
        set_name: Optional[str] = None,
        election_id: Optional[Any] = None,
        set_version: Optional[int] = None,
        primary: Optional[Address] = None,
        last_update_time: float = -math.inf,
        logical_session_timeout_minutes: Optional[int] = None,
        topology_version: Optional[TopologyVersion] = None,
        iscryptd: bool = False,
        service_id: Optional[Any] = None,
    ) -> None:
        # "while a server's type is Unknown its RTT is null"
        known = type is not ServerType.UNKNOWN
        _build(
            self,
            {
                "address": address,
                "type": type,
                "error": error,
                "round_trip_time": round_trip_time if known else None,
                "min_round_trip_time": min_round_trip_time if known else None,
                "last_write_date": last_write_date,
                "op_time": op_time,
                "min_wire_version": min_wire_version,
                "max_wire_version": max_wire_version,
                "me": me,
                "hosts": hosts if isinstance(hosts, frozenset) else frozenset(hosts),
                "passives": passives if isinstance(passives, frozenset) else frozenset(passives),
                "arbiters": arbiters if isinstance(arbiters, frozenset) else frozenset(arbiters),
                "tags": tags if tags is not None else _NO_TAGS,
                "set_name": set_name,
                "election_id": election_id,
                "set_version": set_version,
                "primary": primary,
                "last_update_time": last_update_time,
                "logical_session_timeout_minutes": logical_session_timeout_minutes,
                "topology_version": topology_version,
                "iscryptd": iscryptd,
                "service_id": service_id,
                "_eq_key": None,
            },
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ServerDescription is immutable; cannot set {name!r}")

    # --- construction from a hello outcome ------------------------------------

    @classmethod
    def from_hello(
        cls,
        address: Address,
        hello: Mapping[str, Any],
        round_trip_time: Optional[float],
        *,
        min_round_trip_time: Optional[float] = None,
        last_update_time: float = -math.inf,
    ) -> ServerDescription:
        """The description for a successful hello (or legacy hello) call.

        A reply without ``ok: 1`` gives an Unknown server. A reply whose fields have
        the wrong types also gives an Unknown server, with an error that says which
        field: a hostile or broken server must never break the monitor.
        """
        try:
            return parse_hello(
                cls, address, hello, round_trip_time, min_round_trip_time, last_update_time
            )
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
            return cls(
                address,
                error=f"invalid hello reply from {address}: {exc}",
                last_update_time=last_update_time,
            )

    @classmethod
    def from_error(
        cls,
        address: Address,
        error: object,
        *,
        topology_version: Optional[TopologyVersion] = None,
        last_update_time: float = -math.inf,
    ) -> ServerDescription:
        """A default Unknown description recording a failure (a failed check or an error)."""
        return cls(
            address,
            error=str(error) if error is not None else None,
            topology_version=topology_version,
            last_update_time=last_update_time,
        )

    @classmethod
    def load_balancer(cls, address: Address) -> ServerDescription:
        """TopologyType LoadBalanced: the one server is a LoadBalancer, never monitored."""
        return cls(address, ServerType.LOAD_BALANCER)

    def replace(self, **changes: Any) -> ServerDescription:
        """A copy with some fields changed."""
        fields = {name: getattr(self, name) for name in _INIT_FIELDS}
        fields.update(changes)
        address = fields.pop("address", self.address)
        server_type = fields.pop("type", self.type)
        return ServerDescription(address, server_type, **fields)

    # --- derived facts --------------------------------------------------------

    @property
    def is_server_type_known(self) -> bool:
        return self.type is not ServerType.UNKNOWN

    @property
    def is_data_bearing(self) -> bool:
        return self.type in DATA_BEARING

    @property
    def is_writable(self) -> bool:
        return self.type in _WRITABLE

    @property
    def is_readable(self) -> bool:
        return self.type in _READABLE

    @property
    def all_hosts(self) -> frozenset[Address]:
        """hosts, passives and arbiters: every member this server says the set has."""
        return self.hosts | self.passives | self.arbiters

    # --- equality: only the (=) fields ------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        key: Optional[tuple[Any, ...]] = self._eq_key
        if key is None:
            key = (
                self.address,
                self.type,
                self.error,
                self.min_wire_version,
                self.max_wire_version,
                self.me,
                self.hosts,
                self.passives,
                self.arbiters,
                tuple(sorted(self.tags.items())),
                self.set_name,
                self.election_id,
                self.set_version,
                self.primary,
                self.logical_session_timeout_minutes,
                self.topology_version,
                self.iscryptd,
            )
            self.__dict__["_eq_key"] = key
        return key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerDescription):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"<ServerDescription {self.address} {self.type.value}"]
        if self.round_trip_time is not None:
            parts.append(f"rtt={self.round_trip_time * 1000:.1f}ms")
        if self.set_name is not None:
            parts.append(f"setName={self.set_name!r}")
        if self.error:
            parts.append(f"error={self.error!r}")
        return " ".join(parts) + ">"


_INIT_FIELDS = [
    name
    for name in ServerDescription.__annotations__
    if not name.startswith("_") and name not in ("address", "type")
]


def _build(instance: object, fields: dict[str, Any]) -> None:
    _set(instance, "__dict__", fields)


_WRITABLE = frozenset(
    {
        ServerType.RS_PRIMARY,
        ServerType.STANDALONE,
        ServerType.MONGOS,
        ServerType.LOAD_BALANCER,
    }
)
_READABLE = _WRITABLE | {ServerType.RS_SECONDARY}
