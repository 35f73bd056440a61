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
from mongocore.core.description.topology import TopologyDescription, Transition, apply
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

SUITES = ["single", "rs", "sharded", "errors", "monitoring", "load-balanced"]
ROOT = "server-discovery-and-monitoring/tests"
TOPOLOGY_ID = "42"


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
    harness = Harness(test["uri"])
    for number, phase in enumerate(test["phases"]):
        where = f"phase {number} ({phase.get('description', '')})"
        for address, hello in phase.get("responses", []):
            harness.response(parse_address(address), hello)
        for error in phase.get("applicationErrors", []):
            harness.application_error(error)
        check_outcome(harness, phase["outcome"], where)
        harness.events.clear()


def check_outcome(harness: Harness, outcome: Mapping[str, Any], where: str) -> None:
    td = harness.description
    if "events" in outcome:
        check_events(harness.events, outcome["events"], where)
        return
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
        assert generation == expected["pool"]["generation"], f"{where}: pool generation"


def check_events(actual: list[SdamEvent], expected: list[Mapping[str, Any]], where: str) -> None:
    assert len(actual) == len(expected), f"{where}: {[type(e).__name__ for e in actual]}"
    for event, spec in zip(actual, expected):
        ((name, fields),) = spec.items()
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
        else:
            pytest.fail(f"{where}: unknown event {name}")


def check_event_server(sd: ServerDescription, expected: Mapping[str, Any], where: str) -> None:
    assert sd.address == parse_address(expected["address"]), where
    assert sd.type.value == expected["type"], where
    for key, attribute in (("hosts", "hosts"), ("passives", "passives"), ("arbiters", "arbiters")):
        assert sd.__getattribute__(attribute) == {parse_address(a) for a in expected[key]}, where
    if "primary" in expected:
        assert sd.primary == parse_address(expected["primary"]), where
    if "setName" in expected:
        assert sd.set_name == expected["setName"], where


def check_event_topology(td: TopologyDescription, expected: Mapping[str, Any], where: str) -> None:
    assert td.type.value == expected["topologyType"], where
    servers = {parse_address(s["address"]): s for s in expected["servers"]}
    assert set(td.servers) == set(servers), where
    for address, spec in servers.items():
        check_event_server(td.servers[address], spec, where)
