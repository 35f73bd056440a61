"""Turning the server-selection and max-staleness JSON files into our descriptions.

Shared by the server_selection, max-staleness and in_window runners. The files give
times in milliseconds; mongocore's descriptions hold seconds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Optional

import pytest

from mongocore.core.address import Address, parse_address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import DEFAULT_HEARTBEAT_FREQUENCY_MS, TopologySettings
from mongocore.core.description.topology import CLIENT_MIN_WIRE_VERSION, TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.core.selection.selectors import in_latency_window, select_server, select_servers
from mongocore.errors import InvalidReadPreference
from tests.spec.format_keys import UncheckedKey, check_keys

# A server whose entry names no maxWireVersion is one the client can speak to: the
# oldest wire version mongocore supports (>= 5, so maxStalenessSeconds is allowed).
DEFAULT_MAX_WIRE_VERSION = CLIENT_MIN_WIRE_VERSION

# The keys of the format (the server-selection suite's README, "Server Selection Logic
# Tests"; max-staleness adds heartbeatFrequencyMS and lastWrite, the newer suites
# deprioritized_servers), each checked where it appears.
FILE_KEYS = (
    "topology_description",
    "operation",
    "read_preference",
    "suitable_servers",
    "in_latency_window",
    "error",
    "heartbeatFrequencyMS",
    "deprioritized_servers",
)
TOPOLOGY_KEYS = ("type", "servers")
#: A server of the mocked cluster: the ServerDescription fields selection reads.
SERVER_KEYS = (
    "address",
    "type",
    "avg_rtt_ms",
    "tags",
    "lastUpdateTime",
    "lastWrite",
    "maxWireVersion",
    "minWireVersion",
)
READ_PREFERENCE_KEYS = ("mode", "tag_sets", "maxStalenessSeconds")


def _millis(value: Any) -> float:
    """A number of milliseconds (int, float, or bson Int64 from $numberLong) in seconds."""
    return float(int(value) if not isinstance(value, float) else value) / 1000.0


def server_description(server: Mapping[str, Any]) -> ServerDescription:
    """One entry of ``topology_description.servers``."""
    check_keys(f"server {server.get('address')}", server, SERVER_KEYS)
    address = parse_address(server["address"])
    rtt = server.get("avg_rtt_ms")
    last_write = server.get("lastWrite") or {}
    check_keys(f"server {address}: lastWrite", last_write, ("lastWriteDate",))
    last_write_date = last_write.get("lastWriteDate")
    return ServerDescription(
        address,
        ServerType(server["type"]),
        round_trip_time=None if rtt is None else _millis(rtt),
        last_update_time=_millis(server.get("lastUpdateTime", 0)),
        last_write_date=None if last_write_date is None else _millis(last_write_date),
        max_wire_version=int(server.get("maxWireVersion", DEFAULT_MAX_WIRE_VERSION)),
        min_wire_version=int(server.get("minWireVersion", 0)),
        tags=dict(server["tags"]) if server.get("tags") else None,
    )


def topology_description(test: Mapping[str, Any]) -> TopologyDescription:
    """The TopologyDescription a test describes, with its heartbeatFrequencyMS."""
    spec = test["topology_description"]
    check_keys("topology_description", spec, TOPOLOGY_KEYS)
    servers: dict[Address, ServerDescription] = {}
    for entry in spec["servers"]:
        sd = server_description(entry)
        servers[sd.address] = sd
    settings = TopologySettings(
        seeds=tuple(servers),
        heartbeat_frequency_ms=int(
            test.get("heartbeatFrequencyMS", DEFAULT_HEARTBEAT_FREQUENCY_MS)
        ),
    )
    return TopologyDescription(TopologyType(spec["type"]), servers, settings)


def read_preference(test: Mapping[str, Any]) -> ReadPreference:
    """The test's ``read_preference`` (mode names are capitalized in the files)."""
    spec = test.get("read_preference") or {}
    check_keys("read_preference", spec, READ_PREFERENCE_KEYS)
    return ReadPreference.from_options(
        spec.get("mode"), spec.get("tag_sets"), spec.get("maxStalenessSeconds")
    )


def addresses(servers: Any) -> set[Address]:
    return {
        s.address if isinstance(s, ServerDescription) else parse_address(s["address"])
        for s in servers
    }


def is_write(test: Mapping[str, Any]) -> bool:
    operation: Optional[str] = test.get("operation", "read")
    assert operation in ("read", "write"), f"unknown operation {operation!r}"
    return operation == "write"


def _check_listed_servers(test: Mapping[str, Any], key: str) -> None:
    """A list names servers of the mocked cluster by address ("the set of servers in
    topology_description that are ..."), each written as a server entry."""
    cluster = {s["address"] for s in test["topology_description"]["servers"]}
    for server in test.get(key) or []:
        check_keys(key, server, SERVER_KEYS)
        if server.get("address") not in cluster:
            raise UncheckedKey(f"{key}: {server!r} is no server of topology_description")


def check_selection(test: Mapping[str, Any]) -> None:
    """Run one server_selection / max-staleness file against the selectors.

    Asserts the error when ``error`` is true; otherwise ``suitable_servers`` and
    ``in_latency_window`` as sets of addresses, and that select_server picks from
    the window (None when it is empty).
    """
    check_keys("the file", test, FILE_KEYS)
    description = topology_description(test)
    for key in ("suitable_servers", "in_latency_window", "deprioritized_servers"):
        _check_listed_servers(test, key)
    deprioritized = [parse_address(s["address"]) for s in test.get("deprioritized_servers", [])]

    if test.get("error"):
        # The read preference may be refused when it is built (mode primary with
        # maxStalenessSeconds, maxStalenessSeconds 0) or when it meets this topology.
        with pytest.raises(InvalidReadPreference, match="maxStalenessSeconds"):
            rp = read_preference(test)
            select_servers(description, None if is_write(test) else rp, deprioritized=deprioritized)
        return

    rp = read_preference(test)
    selector = None if is_write(test) else rp
    suitable = select_servers(description, selector, deprioritized=deprioritized)
    window = in_latency_window(suitable, description.settings.local_threshold)
    assert "suitable_servers" in test or "in_latency_window" in test, "the file asserts nothing"
    if "suitable_servers" in test:
        assert addresses(suitable) == addresses(test["suitable_servers"])
    if "in_latency_window" in test:
        assert addresses(window) == addresses(test["in_latency_window"])

    rng = random.Random(0)
    for _ in range(20):
        chosen = select_server(description, selector, rng, deprioritized=deprioritized)
        if not window:
            assert chosen is None
        else:
            assert chosen is not None
            assert chosen.address in addresses(window)
    # The cached path (no deprioritized servers) agrees with the uncached one.
    if not deprioritized:
        for _ in range(20):
            chosen = select_server(description, selector, rng)
            assert (chosen is None) == (not window)
            if chosen is not None:
                assert chosen.address in addresses(window)
