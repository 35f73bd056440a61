"""Parsing a hello (or legacy hello) reply into a ServerDescription.

Seed: server-discovery-and-monitoring.md, "Parsing a hello or legacy hello response"
and the field list of "ServerDescription". Field types are checked by hello_fields;
this module decides the ServerType and fills in the fields, on the fast path a
monitor takes once per heartbeat.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Optional

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
from mongocore.core.description.types import ServerType

if TYPE_CHECKING:
    from mongocore.core.description.server import ServerDescription

_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
#: The values of absent host lists and tags, shared by every description.
NO_ADDRESSES: frozenset[Address] = frozenset()
NO_TAGS: Mapping[str, str] = {}
_set = object.__setattr__
_new_object = object.__new__
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
#: absent (keep in step with ServerDescription.__init__).
_FIELDS_TEMPLATE: dict[str, Any] = {
    "address": None,
    "type": ServerType.UNKNOWN,
    "error": None,
    "round_trip_time": None,
    "min_round_trip_time": None,
    "last_write_date": None,
    "op_time": None,
    "min_wire_version": 0,
    "max_wire_version": 0,
    "me": None,
    "hosts": NO_ADDRESSES,
    "passives": NO_ADDRESSES,
    "arbiters": NO_ADDRESSES,
    "tags": NO_TAGS,
    "set_name": None,
    "election_id": None,
    "set_version": None,
    "primary": None,
    "last_update_time": -math.inf,
    "logical_session_timeout_minutes": None,
    "topology_version": None,
    "iscryptd": False,
    "service_id": None,
    "_eq_key": None,
}


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


def parse_hello(  # noqa: PLR0917 - positional: one call per heartbeat
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
