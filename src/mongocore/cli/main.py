"""The ``mongocore`` command line.

- ``python -m mongocore demo`` replays a replica-set failover through the pure core:
  the same functions the live client calls on every heartbeat and every error,
  driven by a script of hello replies, so it runs anywhere without a server.
- ``python -m mongocore sim [--replset N | --sharded | --standalone | --load-balanced]``
  runs a simulated deployment (``mongocore.sim``, the ``sim`` extra) until
  interrupted; the first line it prints is the connection string, alone.
- ``python -m mongocore watch URI`` shows the live topology of any deployment as the
  Client sees it, refreshed on every SDAM event (see ``mongocore.cli.view``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import importlib
import itertools
import queue
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any, Callable, Optional, TextIO

from bson import ObjectId

from mongocore._version import __version__
from mongocore.api.client import Client
from mongocore.cli.demo import live_demo
from mongocore.cli.view import (
    SIGNAL_LATENCY,
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
from mongocore.core.description.topology import TopologyDescription, Transition, apply
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


# --- signals ------------------------------------------------------------------------

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """While in the block, SIGINT (Ctrl-C) and SIGTERM call ``stop()`` instead of raising.

    The handlers stay installed until the block ends, so a second Ctrl-C while
    closing does not cut the clean shutdown short. Outside the main thread (where
    Python cannot install handlers) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        stop()

    previous = {sig: signal.signal(sig, handler) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# --- sim ----------------------------------------------------------------------------

DEPLOYMENT_KINDS = ("replset", "sharded", "standalone", "load-balanced")


def _sim() -> Any:
    # The sim extra (mongomock) is imported only when a deployment is asked for.
    return importlib.import_module("mongocore.sim")


def build_deployment(
    kind: str,
    *,
    members: int = 3,
    mongoses: int = 2,
    port_base: Optional[int] = None,
    election_delay: float = 0.2,
    name: Optional[str] = None,
) -> Any:
    """A deployment of ``mongocore.sim``, not yet started (ports from ``port_base`` on;
    ``name``: the replica set's name, of the replica set or of the shard).

    Ports are handed out in order: the mongos routers first, then the mongods.
    """
    sim = _sim()
    ports = itertools.count(port_base) if port_base is not None else itertools.repeat(0)
    if kind == "standalone":
        return sim.Standalone(port=next(ports))
    if kind == "replset":
        configs = [sim.MemberConfig(port=next(ports)) for _ in range(members)]
        if name is not None:
            return sim.ReplicaSet(configs, election_delay=election_delay, name=name)
        return sim.ReplicaSet(configs, election_delay=election_delay)
    if kind in ("sharded", "load-balanced"):
        cluster: Any
        if kind == "sharded":
            cluster = sim.ShardedCluster(
                mongoses, shard_members=members, election_delay=election_delay
            )
        else:
            cluster = sim.LoadBalanced(shard_members=members, election_delay=election_delay)
        # The cluster takes no ports: set them on the listeners before they bind.
        for process in [*cluster.mongoses, *cluster.shard.members]:
            process.server.port = next(ports)
        return cluster
    raise ValueError(f"unknown deployment kind {kind!r}: expected one of {DEPLOYMENT_KINDS}")


def describe_deployment(deployment: Any) -> list[str]:
    """A line per process: its address, what it is, and its state."""
    sim = _sim()
    if isinstance(deployment, sim.ShardedCluster):
        lines = [f"  {m.host}  mongos" for m in deployment.mongoses]
        shard = deployment.shard
        return lines + [f"  {m.host}  {shard.name} {_member_state(m)}" for m in shard.members]
    if isinstance(deployment, sim.ReplicaSet):
        return [f"  {m.host}  {deployment.name} {_member_state(m)}" for m in deployment.members]
    return [f"  {m.host}  standalone" for m in deployment.members]


def _member_state(member: Any) -> str:
    if not member.alive:
        return "DOWN"
    if member.partition_mode is not None:
        return f"{member.role} (partitioned: {member.partition_mode})"
    return str(member.role)


class _StateReporter:
    """A line for every change of a replica set member's state, from its own thread.

    It waits on the set's condition variable, which every state change notifies.
    """

    def __init__(self, replica_set: Any, report: Callable[[str], None]) -> None:
        self._rs = replica_set
        self._report = report
        self._stopping = False
        self._thread = threading.Thread(
            target=self._run, name="mongocore-cli-sim-states", daemon=True
        )

    def _snapshot(self) -> dict[str, str]:
        rs = self._rs
        states = {m.host: _member_state(m) for m in rs.members}
        states.update({m.host: "REMOVED" for m in rs.removed})
        return states

    def _changed_since(self, seen: dict[str, str]) -> bool:
        return self._stopping or self._snapshot() != seen

    def _run(self) -> None:
        cond = self._rs.cond
        with cond:
            last = self._snapshot()
            while True:
                cond.wait_for(functools.partial(self._changed_since, last))
                if self._stopping:
                    return
                now = self._snapshot()
                for host, state in now.items():
                    before = last.get(host)
                    if before is None:
                        self._report(f"{host} added: {state}")
                    elif before != state:
                        self._report(f"{host} {before} -> {state}")
                last = now

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._rs.cond:
            self._stopping = True
            self._rs.cond.notify_all()
        self._thread.join()


class Stopper:
    """Lines to print and the request to stop, handed to the thread running ``run_sim``.

    ``stop()`` may be called from any thread or from a signal handler
    (``queue.SimpleQueue.put`` is reentrant).
    """

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[Optional[str]] = queue.SimpleQueue()

    def stop(self) -> None:
        self._inbox.put(None)

    def say(self, line: str) -> None:
        self._inbox.put(line)

    def next_line(self) -> Optional[str]:
        """The next line to print; None once stopping was asked for."""
        while True:
            try:
                # A timeout, so that a signal handler gets to run (see SIGNAL_LATENCY).
                return self._inbox.get(timeout=SIGNAL_LATENCY)
            except queue.Empty:
                continue


def run_sim(
    kind: str = "replset",
    *,
    members: int = 3,
    mongoses: int = 2,
    port_base: Optional[int] = None,
    election_delay: float = 0.2,
    name: Optional[str] = None,
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
    stopper: Optional[Stopper] = None,
) -> int:
    """Run a simulated deployment until SIGINT/SIGTERM (or ``stopper.stop()``); 0 when stopped.

    The first line written to ``out`` is the connection string, alone, flushed at
    once so a script can read it; then a line per process, then a line per member
    state change while it runs.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        deployment = build_deployment(
            kind,
            members=members,
            mongoses=mongoses,
            port_base=port_base,
            election_delay=election_delay,
            name=name,
        )
    except ImportError as exc:
        print(
            f"mongocore sim: the simulator needs the sim extra ({exc});"
            " install it with: pip install 'mongocore[sim]'",
            file=err,
        )
        return 1
    control = stopper or Stopper()
    with stop_on_signals(control.stop):
        try:
            deployment.start()
        except OSError as exc:
            deployment.stop()
            where = f" on the ports from {port_base} on" if port_base is not None else ""
            print(f"mongocore sim: cannot listen{where}: {exc}", file=err)
            return 1
        reporter: Optional[_StateReporter] = None
        try:
            print(deployment.uri, file=out, flush=True)
            for process in describe_deployment(deployment):
                print(process, file=out)
            print("(Ctrl-C to stop)", file=out, flush=True)
            replica_set = getattr(deployment, "shard", deployment)
            if hasattr(replica_set, "removed"):
                reporter = _StateReporter(replica_set, control.say)
                reporter.start()
            while True:
                line = control.next_line()
                if line is None:
                    break
                print(line, file=out, flush=True)
        finally:
            if reporter is not None:
                reporter.stop()
            deployment.stop()
    print("stopped", file=out, flush=True)
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


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {value}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mongocore", description="mongocore " + __version__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser(
        "demo",
        help="retryable writes through failovers of an embedded simulated replica set",
    )
    demo_parser.add_argument("--step-downs", type=_positive_int, default=3)
    demo_parser.add_argument("--writers", type=_positive_int, default=4)
    commands.add_parser("replay", help="replay a replica-set failover through the pure core")
    commands.add_parser("version", help="print the version")

    sim = commands.add_parser(
        "sim",
        help="run a simulated deployment until interrupted",
        description="Run a simulated deployment on 127.0.0.1 until Ctrl-C (SIGINT) or "
        "SIGTERM. The first line printed is its connection string.",
    )
    kind = sim.add_mutually_exclusive_group()
    kind.add_argument(
        "--replset",
        type=_positive_int,
        metavar="N",
        help="a replica set of N members (the default: 3)",
    )
    kind.add_argument(
        "--sharded", action="store_true", help="mongos routers in front of a replica-set shard"
    )
    kind.add_argument("--standalone", action="store_true", help="one mongod")
    kind.add_argument(
        "--load-balanced", action="store_true", help="one mongos behind a load balancer"
    )
    sim.add_argument(
        "--port-base",
        type=_port,
        metavar="P",
        help="listen on ports P, P+1, ... (mongos routers first); default: free ports",
    )
    sim.add_argument(
        "--name",
        metavar="NAME",
        help="the replica set's name, with --replset (default: rs0)",
    )
    sim.add_argument(
        "--mongoses", type=_positive_int, default=2, metavar="N", help="with --sharded (2)"
    )
    sim.add_argument(
        "--shard-members",
        type=_positive_int,
        default=3,
        metavar="N",
        help="members of the shard, with --sharded or --load-balanced (3)",
    )
    sim.add_argument(
        "--election-delay",
        type=_seconds,
        default=0.2,
        metavar="SECONDS",
        help="how long an election takes (0.2)",
    )

    watch = commands.add_parser(
        "watch",
        help="show the live topology of a deployment",
        description="Show the topology of a deployment as mongocore sees it, refreshed "
        "on every SDAM event, until Ctrl-C or --duration.",
    )
    watch.add_argument("uri", help="a connection string, e.g. mongodb://localhost:27017")
    watch.add_argument(
        "--duration",
        type=_seconds,
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
        if args.sharded or args.load_balanced:
            kind = "sharded" if args.sharded else "load-balanced"
            members = args.shard_members
        else:
            kind = "standalone" if args.standalone else "replset"
            members = args.replset if args.replset is not None else 3
        return run_sim(
            kind,
            members=members,
            mongoses=args.mongoses,
            port_base=args.port_base,
            election_delay=args.election_delay,
            name=args.name,
        )
    if args.command == "watch":
        return watch(args.uri, duration=args.duration, plain=args.plain)
    if args.command == "replay":
        return replay()
    return live_demo(step_downs=args.step_downs, writers=args.writers)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
