"""The ``mongocore`` command line.

- ``python -m mongocore demo`` replays a replica-set failover through the pure core:
  the same functions the live client calls on every heartbeat and every error,
  driven by a script of hello replies, so it runs anywhere without a server.
- ``python -m mongocore sim [--replset N | --sharded | --standalone | --load-balanced]``
  runs a simulated deployment (``mongocore.sim``, the ``sim`` extra) until
  interrupted; the first line it prints is the connection string, alone
  (``cli/sim_runner.py``; users, TLS, tags and compressors in ``cli/sim_options.py``).
- ``python -m mongocore sim-control ACTION [MEMBER]`` drives a running simulator's
  failovers from another terminal (step down, kill, restart, partition, heal, ...).
- ``python -m mongocore watch URI`` shows the live topology of any deployment as the
  Client sees it, refreshed on every SDAM event (see ``mongocore.cli.view``).
"""

from __future__ import annotations

import argparse
import datetime
import random
import sys
import time
from collections.abc import Sequence
from typing import Any, Optional, TextIO

from bson import ObjectId

from mongocore._version import __version__
from mongocore.api.client import Client
from mongocore.cli.arguments import positive_int, seconds
from mongocore.cli.demo import live_demo
from mongocore.cli.signals import Stopper, stop_on_signals
from mongocore.cli.sim_control import add_control_parser, control_main
from mongocore.cli.sim_runner import add_sim_parser, build_deployment, run_sim, sim_main
from mongocore.cli.view import (
    EventFeed,
    RichModules,
    change_line,
    plain_lines,
    rich_table,
    want_rich,
)
from mongocore.core.address import parse_address
from mongocore.core.description.errors import ApplicationError, ErrorKind, classify
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import Transition, apply
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
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.core.selection.selectors import select_server
from mongocore.errors import ConfigurationError

__all__ = [
    "Stopper",
    "build_deployment",
    "build_parser",
    "main",
    "replay",
    "run_sim",
    "stop_on_signals",
    "watch",
]

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


def replay(out: Any = sys.stdout) -> int:
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


# --- watch --------------------------------------------------------------------------


def watch(
    uri: str,
    *,
    duration: Optional[float] = None,
    plain: bool = False,
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
    feed: Optional[EventFeed] = None,
    **client_options: Any,
) -> int:
    """Show the topology of ``uri`` as the Client sees it, until interrupted or ``duration``.

    Plain lines unless ``out`` is a terminal and rich is installed (and not ``plain``).
    The Client is closed, and its threads joined, before this returns 0. ``feed``
    lets a caller stop the watch (``feed.stop()``) from another thread.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    feed = EventFeed() if feed is None else feed
    rich = want_rich(out, plain)
    with stop_on_signals(feed.stop):
        try:
            client = Client(uri, event_listeners=feed.listeners, **client_options)
        except (ConfigurationError, ValueError) as exc:
            print(f"mongocore watch: {exc}", file=err)
            return 1
        try:
            deadline = None if duration is None else time.monotonic() + duration
            if rich is not None:
                _watch_rich(rich, client, feed, deadline, out)
            else:
                _watch_plain(feed, deadline, out)
        finally:
            client.close()
    return 0


def _watch_plain(feed: EventFeed, deadline: Optional[float], out: TextIO) -> None:
    while True:
        event = feed.next_event(deadline)
        if event is None:
            return
        if isinstance(event, TopologyDescriptionChangedEvent):
            now = datetime.datetime.now()
            for row in plain_lines(event.new_description, when=now):
                print(row, file=out)
            out.flush()
        else:
            line = change_line(event)
            if line is not None:
                print(line, file=out, flush=True)


def _watch_rich(
    rich: RichModules,
    client: Client,
    feed: EventFeed,
    deadline: Optional[float],
    out: TextIO,
) -> None:
    # Replaced, never mutated: the refresh thread renders it while this one appends.
    recent: tuple[str, ...] = ()

    def render() -> Any:
        return rich_table(rich, client.topology_description, recent)

    console = rich.console.Console(file=out)
    # Auto-refresh keeps round trip times current; every SDAM event refreshes at once.
    with rich.live.Live(get_renderable=render, console=console, refresh_per_second=2) as live:
        while True:
            event = feed.next_event(deadline)
            if event is None:
                return
            line = change_line(event)
            if line is not None:
                stamp = datetime.datetime.now().strftime("%H:%M:%S")
                recent = (*recent, f"{stamp} {line}")[-8:]
            live.refresh()


# --- main ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mongocore", description="mongocore " + __version__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser(
        "demo",
        help="retryable writes through failovers of an embedded simulated replica set",
    )
    demo_parser.add_argument("--step-downs", type=positive_int, default=3)
    demo_parser.add_argument("--writers", type=positive_int, default=4)
    commands.add_parser("replay", help="replay a replica-set failover through the pure core")
    commands.add_parser("version", help="print the version")

    add_sim_parser(commands)
    add_control_parser(commands)

    watch = commands.add_parser(
        "watch",
        help="show the live topology of a deployment",
        description="Show the topology of a deployment as mongocore sees it, refreshed "
        "on every SDAM event, until Ctrl-C or --duration.",
    )
    watch.add_argument("uri", help="a connection string, e.g. mongodb://localhost:27017")
    watch.add_argument(
        "--duration",
        type=seconds,
        metavar="SECONDS",
        help="stop by itself after this long",
    )
    watch.add_argument(
        "--plain", action="store_true", help="plain lines even on a terminal with rich"
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    if args.command == "sim":
        return sim_main(args)
    if args.command == "sim-control":
        return control_main(args)
    if args.command == "watch":
        return watch(args.uri, duration=args.duration, plain=args.plain)
    if args.command == "replay":
        return replay()
    return live_demo(step_downs=args.step_downs, writers=args.writers)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
