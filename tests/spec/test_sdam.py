"""Runner for the official SDAM suites: single, rs, sharded, errors, monitoring, load-balanced.

The pure core is driven directly with the JSON inputs: hello replies become
ServerDescriptions applied with ``apply``; application errors go through
``classify``; pool generations are tracked as the transitions and decisions say.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import pytest

from mongocore.core.address import Address, parse_address
from mongocore.core.description.errors import ApplicationError, ErrorKind, classify
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import Transition, apply
from mongocore.core.description.topology_version import TopologyVersion
from mongocore.core.description.types import TopologyType
from mongocore.core.events import (
    SdamEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
    events_for_opening,
    events_for_transition,
)
from mongocore.core.options import ClientOptions
from tests.spec import specdata
from tests.spec.format_keys import UncheckedKey, check_keys

SUITES = ["single", "rs", "sharded", "errors", "monitoring", "load-balanced"]
ROOT = "server-discovery-and-monitoring/tests"
TOPOLOGY_ID = "42"

# The keys of the suite's format (its README, "Format"), each checked where it appears.
FILE_KEYS = ("description", "uri", "phases")
PHASE_KEYS = ("description", "responses", "applicationErrors", "outcome")
APPLICATION_ERROR_KEYS = ("address", "generation", "maxWireVersion", "when", "type", "response")
OUTCOME_KEYS = (
    "topologyType",
    "setName",
    "servers",
    "logicalSessionTimeoutMinutes",
    "maxSetVersion",
    "maxElectionId",
    "compatible",
)
#: A "server" object; ``error`` (the description's error, as a substring) is asserted
#: too, which files of the errors folder give.
SERVER_KEYS = (
    "type",
    "setName",
    "setVersion",
    "electionId",
    "logicalSessionTimeoutMinutes",
    "minWireVersion",
    "maxWireVersion",
    "topologyVersion",
    "pool",
    "error",
)
#: The monitoring outcome's events, by name, and the fields each may give.
EVENT_KEYS = {
    "topology_opening_event": ("topologyId",),
    "server_opening_event": ("topologyId", "address"),
    "server_closed_event": ("topologyId", "address"),
    "server_description_changed_event": (
        "topologyId",
        "address",
        "previousDescription",
        "newDescription",
    ),
    "topology_description_changed_event": ("topologyId", "previousDescription", "newDescription"),
}
#: A server description inside an event.
EVENT_SERVER_KEYS = (
    "address",
    "type",
    "hosts",
    "passives",
    "arbiters",
    "primary",
    "setName",
    "setVersion",
    "electionId",
)


def _params() -> list[Any]:
    params = []
    for suite in SUITES:
        for p in specdata.json_files(f"{ROOT}/{suite}"):
            path = p.values[0]
            params.append(pytest.param(path, id=f"{suite}/{p.id}", marks=p.marks))
    return params


class Harness:
    """The minimal shell the pure core needs: a description, pool generations, events."""

    def __init__(self, uri: str) -> None:
        settings = ClientOptions.from_uri(uri).topology_settings
        self.description = TopologyDescription.initial(settings)
        self.generations: dict[Address, int] = dict.fromkeys(self.description.servers, 0)
        self.events: list[SdamEvent] = events_for_opening(TOPOLOGY_ID, self.description)
        if self.description.type is TopologyType.LOAD_BALANCED:
            # Load balancers are never monitored: the one server is a LoadBalancer at once.
            (address,) = self.description.servers
            self.apply(ServerDescription.load_balancer(address))

    def apply(self, sd: ServerDescription) -> Transition:
        transition = apply(self.description, sd)
        self.description = transition.description
        for address in transition.removed:
            del self.generations[address]
        for address in transition.added:
            self.generations[address] = 0
        for address in transition.clear_pools:
            self.generations[address] += 1
        self.events.extend(events_for_transition(TOPOLOGY_ID, transition))
        return transition

    def response(self, address: Address, hello: Mapping[str, Any]) -> None:
        if not hello:
            # The empty document stands for a network error during the check.
            sd = ServerDescription.from_error(address, "network error during hello")
        else:
            sd = ServerDescription.from_hello(address, hello, round_trip_time=0.0)
        self.apply(sd)

    def application_error(self, spec: Mapping[str, Any]) -> None:
        check_keys("applicationError", spec, APPLICATION_ERROR_KEYS)
        address = parse_address(spec["address"])
        pool_generation = self.generations.get(address, 0)
        error = ApplicationError(
            address=address,
            kind=ErrorKind(spec["type"]),
            generation=spec.get("generation", pool_generation),
            completed_handshake=spec["when"] == "afterHandshakeCompletes",
            max_wire_version=spec["maxWireVersion"],
            reply=spec.get("response"),
            message=f"application {spec['type']} error",
        )
        decision = classify(self.description, error, pool_generation)
        if decision.mark_unknown is not None:
            self.apply(decision.mark_unknown)
        if decision.clear_pool and address in self.generations:
            self.generations[address] += 1


@pytest.mark.parametrize("path", _params())
def test_sdam(path: Path) -> None:
    test = specdata.load_extended(path)
    check_keys(path.name, test, FILE_KEYS)
    harness = Harness(test["uri"])
    for number, phase in enumerate(test["phases"]):
        where = f"phase {number} ({phase.get('description', '')})"
        check_keys(where, phase, PHASE_KEYS)
        for address, hello in phase.get("responses", []):
            harness.response(parse_address(address), hello)
        for error in phase.get("applicationErrors", []):
            harness.application_error(error)
        check_outcome(harness, phase["outcome"], where)
        harness.events.clear()


def check_outcome(harness: Harness, outcome: Mapping[str, Any], where: str) -> None:
    td = harness.description
    if "events" in outcome:
        check_keys(f"{where}: outcome", outcome, ("events",))
        check_events(harness.events, outcome["events"], where)
        return
    check_keys(f"{where}: outcome", outcome, OUTCOME_KEYS)
    assert td.type.value == outcome["topologyType"], where
    assert td.set_name == outcome["setName"], where
    if "logicalSessionTimeoutMinutes" in outcome:
        assert td.logical_session_timeout_minutes == outcome["logicalSessionTimeoutMinutes"], where
    if "maxSetVersion" in outcome:
        assert td.max_set_version == outcome["maxSetVersion"], where
    if "maxElectionId" in outcome:
        assert td.max_election_id == outcome["maxElectionId"], where
    if "compatible" in outcome:
        assert td.compatible == outcome["compatible"], f"{where}: {td.compatibility_error}"
    expected_servers = {parse_address(a): s for a, s in outcome["servers"].items()}
    assert set(td.servers) == set(expected_servers), where
    for address, expected in expected_servers.items():
        check_server(td.servers[address], expected, harness.generations.get(address), where)


def check_server(
    sd: ServerDescription, expected: Mapping[str, Any], generation: Optional[int], where: str
) -> None:
    where = f"{where}, server {sd.address}"
    check_keys(where, expected, SERVER_KEYS)
    assert sd.type.value == expected["type"], f"{where}: {sd!r}"
    simple = {
        "setName": "set_name",
        "setVersion": "set_version",
        "electionId": "election_id",
        "logicalSessionTimeoutMinutes": "logical_session_timeout_minutes",
    }
    for key, attribute in simple.items():
        if key in expected:
            assert getattr(sd, attribute) == expected[key], f"{where}: {key}"
    for key, attribute in (
        ("minWireVersion", "min_wire_version"),
        ("maxWireVersion", "max_wire_version"),
    ):
        if key in expected:
            # The suites write null for "never reported"; our default is 0.
            assert getattr(sd, attribute) == (expected[key] or 0), f"{where}: {key}"
    if "topologyVersion" in expected:
        assert sd.topology_version == TopologyVersion.parse(expected["topologyVersion"]), where
    if "error" in expected:
        assert sd.error is not None and expected["error"] in sd.error, f"{where}: {sd.error}"
    if "pool" in expected:
        check_keys(f"{where}: pool", expected["pool"], ("generation",))
        assert generation == expected["pool"]["generation"], f"{where}: pool generation"


def check_events(actual: list[SdamEvent], expected: list[Mapping[str, Any]], where: str) -> None:
    assert len(actual) == len(expected), f"{where}: {[type(e).__name__ for e in actual]}"
    for event, spec in zip(actual, expected):
        ((name, fields),) = spec.items()
        if name not in EVENT_KEYS:
            raise UncheckedKey(f"{where}: unknown event {name}")
        check_keys(f"{where}: {name}", fields, EVENT_KEYS[name])
        if "topologyId" in fields:
            assert getattr(event, "topology_id", None) == fields["topologyId"], where
        if name == "topology_opening_event":
            assert isinstance(event, TopologyOpeningEvent), where
        elif name == "server_opening_event":
            assert isinstance(event, ServerOpeningEvent), where
            assert event.address == parse_address(fields["address"]), where
        elif name == "server_closed_event":
            assert isinstance(event, ServerClosedEvent), where
            assert event.address == parse_address(fields["address"]), where
        elif name == "server_description_changed_event":
            assert isinstance(event, ServerDescriptionChangedEvent), where
            assert event.address == parse_address(fields["address"]), where
            check_event_server(event.previous_description, fields["previousDescription"], where)
            check_event_server(event.new_description, fields["newDescription"], where)
        elif name == "topology_description_changed_event":
            assert isinstance(event, TopologyDescriptionChangedEvent), where
            check_event_topology(event.previous_description, fields["previousDescription"], where)
            check_event_topology(event.new_description, fields["newDescription"], where)


def check_event_server(sd: ServerDescription, expected: Mapping[str, Any], where: str) -> None:
    check_keys(f"{where}: server description", expected, EVENT_SERVER_KEYS)
    assert sd.address == parse_address(expected["address"]), where
    assert sd.type.value == expected["type"], where
    for key in ("hosts", "passives", "arbiters"):
        if key in expected:
            assert getattr(sd, key) == {parse_address(a) for a in expected[key]}, where
    if "primary" in expected:
        assert sd.primary == parse_address(expected["primary"]), where
    if "setName" in expected:
        assert sd.set_name == expected["setName"], where
    if "setVersion" in expected:
        assert sd.set_version == expected["setVersion"], where
    if "electionId" in expected:
        assert sd.election_id == expected["electionId"], where


def check_event_topology(td: TopologyDescription, expected: Mapping[str, Any], where: str) -> None:
    check_keys(f"{where}: topology description", expected, OUTCOME_KEYS)
    assert td.type.value == expected["topologyType"], where
    if "setName" in expected:
        assert td.set_name == expected["setName"], where
    if "logicalSessionTimeoutMinutes" in expected:
        minutes = expected["logicalSessionTimeoutMinutes"]
        assert td.logical_session_timeout_minutes == minutes, where
    if "maxSetVersion" in expected:
        assert td.max_set_version == expected["maxSetVersion"], where
    if "maxElectionId" in expected:
        assert td.max_election_id == expected["maxElectionId"], where
    if "compatible" in expected:
        assert td.compatible == expected["compatible"], where
    servers = {parse_address(s["address"]): s for s in expected["servers"]}
    assert set(td.servers) == set(servers), where
    for address, spec in servers.items():
        check_event_server(td.servers[address], spec, where)
