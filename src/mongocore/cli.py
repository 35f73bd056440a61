"""The ``mongocore`` command line.

``python -m mongocore demo`` replays a replica-set failover through the pure core:
the same functions the live client calls on every heartbeat and every error,
driven by a script of hello replies, so it runs anywhere without a server.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from typing import Any, Optional

from bson import ObjectId

from mongocore import __version__
from mongocore.address import parse_address
from mongocore.description.errors import ApplicationError, ErrorKind, classify
from mongocore.description.server import ServerDescription
from mongocore.description.topology import TopologyDescription, Transition, apply
from mongocore.events import (
    SdamEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
    events_for_opening,
    events_for_transition,
)
from mongocore.options import ClientOptions
from mongocore.selection.read_preference import Mode, ReadPreference
from mongocore.selection.selectors import select_server

MEMBERS = ("db1.example.net:27017", "db2.example.net:27017", "db3.example.net:27017")
TAGS = ({"dc": "ny"}, {"dc": "ny"}, {"dc": "sf"})
RTT = (0.004, 0.002, 0.030)
PROCESS = [ObjectId(f"{i:024x}") for i in range(1, 4)]


def _hello(member: int, primary: Optional[int], election: int, counter: int) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "ok": 1,
        "isWritablePrimary": member == primary,
        "secondary": member != primary,
        "setName": "rs",
        "setVersion": 1,
        "hosts": list(MEMBERS),
        "me": MEMBERS[member],
        "tags": TAGS[member],
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "logicalSessionTimeoutMinutes": 30,
        "topologyVersion": {"processId": PROCESS[member], "counter": counter},
    }
    if primary is not None:
        reply["primary"] = MEMBERS[primary]
    if member == primary:
        reply["electionId"] = ObjectId(f"7fffffff{election:016x}")
    return reply


class _Replay:
    def __init__(self, out: Any) -> None:
        self.out = out
        self.rng = random.Random(7)
        options = ClientOptions.from_uri(f"mongodb://{MEMBERS[0]}/?replicaSet=rs")
        self.td = TopologyDescription.initial(options.topology_settings)
        self.addresses = [parse_address(m) for m in MEMBERS]
        self.say("open a client with one seed: mongodb://db1.example.net:27017/?replicaSet=rs")
        self.show(events_for_opening("demo", self.td))

    def say(self, text: str) -> None:
        print(f"\n== {text}", file=self.out)

    def show(self, events: Sequence[SdamEvent]) -> None:
        for event in events:
            if isinstance(event, TopologyOpeningEvent):
                line = "topology opened"
            elif isinstance(event, ServerOpeningEvent):
                line = f"monitoring {event.address}"
            elif isinstance(event, ServerClosedEvent):
                line = f"stopped monitoring {event.address}"
            elif isinstance(event, ServerDescriptionChangedEvent):
                new = event.new_description
                why = f" ({new.error})" if new.error else ""
                line = (
                    f"{event.address}: {event.previous_description.type.value} -> "
                    f"{new.type.value}{why}"
                )
            elif isinstance(event, TopologyDescriptionChangedEvent):
                line = f"topology is now {event.new_description.type.value}"
            else:
                line = type(event).__name__
            print(f"   event  {line}", file=self.out)

    def check(self, member: int, reply: dict[str, Any]) -> None:
        sd = ServerDescription.from_hello(self.addresses[member], reply, RTT[member])
        self.step(apply(self.td, sd))

    def step(self, transition: Transition) -> None:
        self.td = transition.description
        self.show(events_for_transition("demo", transition))

    def select(self, label: str, read_preference: Optional[ReadPreference]) -> None:
        sd = select_server(self.td, read_preference, self.rng)
        chosen = str(sd.address) if sd else "no suitable server: the client would wait"
        print(f"   select {label:38s} -> {chosen}", file=self.out)


def demo(out: Any = sys.stdout) -> int:
    """Discovery, selection, a step-down and an election, as the core sees them."""
    r = _Replay(out)
    r.say("the seed answers hello: it is the primary, and names two more members")
    r.check(0, _hello(0, 0, election=1, counter=1))
    r.say("the monitors of the new members report secondaries")
    r.check(1, _hello(1, 0, election=1, counter=1))
    r.check(2, _hello(2, 0, election=1, counter=1))
    r.select("a write", None)
    r.select("secondary, tags [{dc: sf}]", ReadPreference(Mode.SECONDARY, [{"dc": "sf"}]))
    r.select("nearest (db1, db2 within 15 ms)", ReadPreference(Mode.NEAREST))

    r.say("db1 steps down: a write fails with NotWritablePrimary (10107)")
    reply = {
        "ok": 0,
        "code": 10107,
        "errmsg": "not primary",
        "topologyVersion": {"processId": PROCESS[0], "counter": 2},
    }
    error = ApplicationError(r.addresses[0], ErrorKind.COMMAND, 0, max_wire_version=21, reply=reply)
    decision = classify(r.td, error, pool_generation=0)
    print(
        f"   decide mark Unknown: {decision.mark_unknown is not None}, clear pool: "
        f"{decision.clear_pool} (4.2+ keeps connections), check now: {decision.request_check}",
        file=out,
    )
    if decision.mark_unknown is not None:
        r.step(apply(r.td, decision.mark_unknown))
    r.select("a write", None)
    r.select("primaryPreferred", ReadPreference(Mode.PRIMARY_PREFERRED))

    r.say("db2 wins the election; db1 comes back as a secondary")
    r.check(1, _hello(1, 1, election=2, counter=2))
    r.check(0, _hello(0, 1, election=2, counter=3))
    r.select("a write", None)
    print(f"\n{r.td!r}", file=out)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="mongocore", description="mongocore " + __version__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="replay a replica-set failover through the core")
    commands.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    return demo()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
