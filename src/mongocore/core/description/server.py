"""ServerDescription: the client's view of one server, built from a hello outcome.

Seed: server-discovery-and-monitoring.md, sections "ServerDescription" (its fields
and defaults), "Server Description Equality" and "Parsing a hello or legacy hello
response". Field types are checked by hello_fields; this module decides the
ServerType and fills in the fields, on the fast path a monitor takes once per
heartbeat. topologyVersion is topology_version.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Callable, Optional

from bson import DatetimeMS, Int64, ObjectId

from mongocore.core.address import Address, parse_address
from mongocore.core.description.hello_fields import (
    document_field,
    flag_field,
    int_field,
    object_id_field,
    optional_int_field,
    string_field,
    string_list_field,
    tags_field,
)
from mongocore.core.description.topology_version import TopologyVersion
from mongocore.core.description.types import DATA_BEARING, ServerType

__all__ = ["NO_ADDRESSES", "NO_TAGS", "ServerDescription"]

#: The values of absent host lists and tags, shared by every description.
NO_ADDRESSES: frozenset[Address] = frozenset()
NO_TAGS: Mapping[str, str] = {}
_EMPTY = NO_ADDRESSES
_NO_TAGS = NO_TAGS
_set = object.__setattr__
_new_object = object.__new__


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
            return _parse_hello(
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


# --- parsing a hello or legacy hello response -----------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
# Plain names: looking a member up on an Enum class goes through EnumType.__getattr__
# on Python 3.11 (about 0.9 thousand instructions), and every reply has a type.
_RS_GHOST = ServerType.RS_GHOST
_RS_OTHER = ServerType.RS_OTHER
_RS_PRIMARY = ServerType.RS_PRIMARY
_RS_SECONDARY = ServerType.RS_SECONDARY
_RS_ARBITER = ServerType.RS_ARBITER
_MONGOS = ServerType.MONGOS
_STANDALONE = ServerType.STANDALONE


#: Every ServerDescription attribute, with the value a parsed reply has when its field is
#: absent: those of a description made with every default, so that the template cannot
#: fall out of step with __init__.
_FIELDS_TEMPLATE: dict[str, Any] = dict(vars(ServerDescription(Address("template", 0))))
_FIELDS_TEMPLATE["address"] = None


_Get = Callable[[str], Any]


def _flag(get: _Get, hello: Mapping[str, Any], field: str) -> bool:
    value = get(field)
    if value is True:
        return True
    if value is None or value is False:
        return False
    return flag_field(hello, field)  # a number (legacy servers), or the type error


def _topology_version(value: Any) -> Optional[TopologyVersion]:
    return TopologyVersion.parse(value)


def _addresses(get: _Get, hello: Mapping[str, Any], field: str) -> frozenset[Address]:
    values = get(field)
    if values is None:
        return NO_ADDRESSES
    if type(values) is list:
        try:
            # The cache holds lists already validated (every member reports the same
            # list on each heartbeat); a miss, or an unhashable item, checks them.
            # (A tuple of the strings: a list and a tuple never compare equal.)
            return _VALIDATED_ADDRESS_SETS[tuple(values)]
        except (KeyError, TypeError):
            pass
    checked = string_list_field(hello, field)
    assert checked is not None
    try:
        result = _address_set(checked)
    except ValueError as exc:
        raise ValueError(f"{field!r} holds an invalid host: {exc}") from None
    if len(_VALIDATED_ADDRESS_SETS) >= 256:
        _VALIDATED_ADDRESS_SETS.clear()
    _VALIDATED_ADDRESS_SETS[checked] = result
    return result


#: Host lists already checked and parsed, by their exact strings.
_VALIDATED_ADDRESS_SETS: dict[tuple[str, ...], frozenset[Address]] = {}
_new_tuple = tuple.__new__
_ABSENT: Any = object()
#: What BSON int32 and int64 decode to.
_INTEGERS = (int, Int64)


@lru_cache(maxsize=256)
def _address_set(values: tuple[str, ...]) -> frozenset[Address]:
    # Members report the same list on every heartbeat: parse it once.
    return frozenset(parse_address(v.lower()) for v in values)


def _address(get: _Get, hello: Mapping[str, Any], field: str) -> Optional[Address]:
    value = get(field)
    if value is None:
        return None
    if type(value) is not str:
        value = string_field(hello, field)
        assert value is not None
    try:
        address = parse_address(value.lower())
    except ValueError as exc:
        raise ValueError(f"{field!r} is not a host name: {exc}") from None
    if len(_KNOWN_ADDRESSES) >= 1024:
        _KNOWN_ADDRESSES.clear()
    _KNOWN_ADDRESSES[value] = address
    return address


#: The fields parse_hello reads only when a reply has one of them.
_RARE_FIELDS = frozenset(
    {"isreplicaset", "hidden", "serviceId", "passives", "arbiters", "iscryptd"}
)

#: Host strings already parsed (``me``, ``primary``), as servers sent them.
_KNOWN_ADDRESSES: dict[str, Address] = {}


def _epoch_seconds(value: Any) -> Optional[float]:
    """A BSON datetime (or, in test data, milliseconds) as seconds since the epoch."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        epoch = _EPOCH if value.tzinfo is None else _EPOCH_AWARE
        return (value - epoch).total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / 1000.0
    if isinstance(value, DatetimeMS):  # decoded outside the datetime range
        return float(int(value)) / 1000.0
    raise TypeError(f"lastWriteDate must be a date, not {type(value).__name__}")


def _parse_hello(  # noqa: PLR0917 - positional: one call per heartbeat
    cls: type[ServerDescription],
    address: Address,
    hello: Mapping[str, Any],
    round_trip_time: Optional[float],
    min_round_trip_time: Optional[float],
    last_update_time: float,
) -> ServerDescription:
    # Every field is read through a type check (hello_fields): a value of the wrong
    # type raises, naming the field, and from_hello makes the server Unknown. A monitor
    # parses one reply per heartbeat, so each field first meets an inline check of the
    # type servers send (int, str, True/False, ObjectId, list, dict); only a value that
    # fails it goes to the hello_fields reader, which accepts the other valid spellings
    # (Int64, integral doubles, ``ismaster: 1``) or raises with the field's name.
    if type(hello) is not dict and not isinstance(hello, Mapping):
        raise TypeError("the reply is not a document")
    get = hello.get
    ok = get("ok")
    value = get("topologyVersion")
    topology_version: Optional[TopologyVersion] = None
    if value is not None:
        counter: Any = value.get("counter") if type(value) is dict else None
        if type(counter) in _INTEGERS and type(process_id := value.get("processId")) is ObjectId:
            topology_version = _new_tuple(TopologyVersion, (process_id, int(counter)))
        else:
            topology_version = _topology_version(value)
    if ok != 1:
        # "ok: 1" not in the response: Unknown.
        message = get("errmsg") or "the hello reply does not have ok: 1"
        return cls(
            address,
            error=f"{message!s:.500} (ok={ok!r:.40})",
            topology_version=topology_version,
            last_update_time=last_update_time,
        )

    set_name = get("setName")
    if set_name is not None and type(set_name) is not str:
        set_name = string_field(hello, "setName")
    # Fields most replies lack: one check for all of them instead of a get each.
    rare = not hello.keys().isdisjoint(_RARE_FIELDS)
    # Flags: True, or absent (None) / False, inline; anything else goes to _flag.
    value = get("isreplicaset") if rare else None
    if (
        value is not None
        and value is not False
        and (value is True or _flag(get, hello, "isreplicaset"))
    ):
        server_type = _RS_GHOST
    elif set_name is not None:
        # isWritablePrimary first; legacy ismaster only when it is absent.
        field = "isWritablePrimary"
        value = get(field, _ABSENT)
        if value is _ABSENT:
            field = "ismaster"
            value = get(field)
        writable = value is True or (
            value is not None and value is not False and _flag(get, hello, field)
        )
        value = get("hidden") if rare else None
        if (
            value is not None
            and value is not False
            and (value is True or _flag(get, hello, "hidden"))
        ):
            server_type = _RS_OTHER
        elif writable:
            server_type = _RS_PRIMARY
        elif (value := get("secondary")) is True or (
            value is not None and value is not False and _flag(get, hello, "secondary")
        ):
            server_type = _RS_SECONDARY
        elif _flag(get, hello, "arbiterOnly"):
            server_type = _RS_ARBITER
        else:
            server_type = _RS_OTHER
    elif get("msg") == "isdbgrid":
        server_type = _MONGOS
    else:
        server_type = _STANDALONE

    last_write = get("lastWrite")
    last_write_date = op_time = None
    if last_write is not None:
        if type(last_write) is not dict and not isinstance(last_write, Mapping):
            raise TypeError("'lastWrite' must be a document")
        value = last_write.get("lastWriteDate")
        if type(value) is datetime.datetime and value.tzinfo is None:
            last_write_date = (value - _EPOCH).total_seconds()
        else:
            last_write_date = _epoch_seconds(value)
        op_time = last_write.get("opTime")
        if op_time is not None and type(op_time) is not dict:
            op_time = document_field(last_write, "opTime")

    min_wire = get("minWireVersion")
    if type(min_wire) is not int:
        min_wire = int_field(hello, "minWireVersion", 0)
    max_wire = get("maxWireVersion")
    if type(max_wire) is not int:
        max_wire = int_field(hello, "maxWireVersion", 0)
    set_version = get("setVersion")
    if set_version is not None and type(set_version) is not int:
        set_version = optional_int_field(hello, "setVersion")
    session_minutes = get("logicalSessionTimeoutMinutes")
    if session_minutes is not None and type(session_minutes) is not int:
        session_minutes = optional_int_field(hello, "logicalSessionTimeoutMinutes")
    election_id = get("electionId")
    if election_id is not None and type(election_id) is not ObjectId:
        election_id = object_id_field(hello, "electionId")
    service_id = get("serviceId") if rare else None
    if service_id is not None and type(service_id) is not ObjectId:
        service_id = object_id_field(hello, "serviceId")
    tags = get("tags")
    if tags is None:
        tags = NO_TAGS
    elif type(tags) is dict:
        for tag in tags.values():
            if type(tag) is not str:
                tags = tags_field(hello) or NO_TAGS  # a str subclass, or the type error
                break
        else:
            tags = dict(tags) if tags else NO_TAGS  # a copy: the reply is the caller's
    else:
        tags = tags_field(hello) or NO_TAGS  # another mapping, or the type error

    # A copy of a template, filled in: a 24-key dict display costs several times more.
    fields = _FIELDS_TEMPLATE.copy()
    fields["address"] = address
    fields["type"] = server_type
    fields["round_trip_time"] = round_trip_time
    fields["min_round_trip_time"] = min_round_trip_time
    fields["last_write_date"] = last_write_date
    fields["op_time"] = op_time
    fields["min_wire_version"] = min_wire
    fields["max_wire_version"] = max_wire
    value = get("me")
    if value is not None:
        # A known host string maps straight to its Address; others are checked.
        known = _KNOWN_ADDRESSES.get(value) if type(value) is str else None
        fields["me"] = known or _address(get, hello, "me")
    value = get("hosts")
    if value is not None:
        try:
            hosts = _VALIDATED_ADDRESS_SETS.get(tuple(value)) if type(value) is list else None
        except TypeError:  # an unhashable item: _addresses says which
            hosts = None
        fields["hosts"] = hosts or _addresses(get, hello, "hosts")
    if rare:
        if get("passives") is not None:
            fields["passives"] = _addresses(get, hello, "passives")
        if get("arbiters") is not None:
            fields["arbiters"] = _addresses(get, hello, "arbiters")
        if get("iscryptd") is not None:
            fields["iscryptd"] = _flag(get, hello, "iscryptd")
    fields["tags"] = tags
    fields["set_name"] = set_name
    fields["election_id"] = election_id
    fields["set_version"] = set_version
    value = get("primary")
    if value is not None:
        known = _KNOWN_ADDRESSES.get(value) if type(value) is str else None
        fields["primary"] = known or _address(get, hello, "primary")
    fields["last_update_time"] = last_update_time
    fields["logical_session_timeout_minutes"] = session_minutes
    fields["topology_version"] = topology_version
    fields["service_id"] = service_id
    sd = _new_object(cls)
    _set(sd, "__dict__", fields)
    return sd
