"""``python -m mongocore sim``: a simulated deployment on 127.0.0.1 until interrupted.

The shape (``--replset N``, ``--sharded``, ``--standalone``, ``--load-balanced``,
ports, names), and what a client must bring (``--auth``, ``--tls``,
``--compressors``) or may use (``--tags``): the first line printed is the connection
string with all of it, alone, so a script can read it; then a line per process and
per setting, then a line per member state change while it runs. Failovers are driven
from another terminal with ``python -m mongocore sim-control`` (cli/sim_control.py).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import itertools
import shlex
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, TextIO

from mongocore.cli.arguments import port, positive_int, seconds
from mongocore.cli.signals import Stopper, stop_on_signals
from mongocore.cli.sim_options import (
    TlsFiles,
    client_uri,
    make_tls_files,
    parse_compressors,
    parse_tags,
    parse_user,
)

__all__ = [
    "DEPLOYMENT_KINDS",
    "add_sim_parser",
    "build_deployment",
    "describe_deployment",
    "run_sim",
    "sim_main",
]

DEPLOYMENT_KINDS = ("replset", "sharded", "standalone", "load-balanced")


def _sim() -> Any:
    # The sim extra (pyuca, dukpy) is imported only when a deployment is asked for.
    return importlib.import_module("mongocore.sim")


def build_deployment(
    kind: str,
    *,
    members: int = 3,
    mongoses: int = 2,
    port_base: Optional[int] = None,
    election_delay: float = 0.2,
    name: Optional[str] = None,
    users: Sequence[tuple[str, str]] = (),
    tls: Any = None,
    tags: Optional[Sequence[Mapping[str, str]]] = None,
    compressors: Sequence[str] = (),
) -> Any:
    """A deployment of ``mongocore.sim``, not yet started (ports from ``port_base`` on;
    ``name``: the replica set's name, of the replica set or of the shard; ``users``:
    (name, password) pairs, SCRAM users in admin; ``tls``: a server ``ssl.SSLContext``;
    ``tags``: the replica set members' tags, in order).

    Ports are handed out in order: the mongos routers first, then the mongods.
    """
    sim = _sim()
    ports = itertools.count(port_base) if port_base is not None else itertools.repeat(0)
    security: dict[str, Any] = {
        "tls": tls,
        "users": [sim.User(user, password) for user, password in users],
        "compressors": tuple(compressors),
    }
    if tags is not None and kind != "replset":
        raise ValueError("tags are for the members of a replica set (--replset)")
    if name is not None and kind not in ("replset", "sharded"):
        raise ValueError(f"a {kind} deployment has no replica set to name")
    if kind == "standalone":
        return sim.Standalone(port=next(ports), **security)
    if kind == "replset":
        tag_sets = list(tags or ())
        if len(tag_sets) > members:
            raise ValueError(f"{len(tag_sets)} tag sets for {members} members")
        tag_sets += [{}] * (members - len(tag_sets))
        configs = [sim.MemberConfig(port=next(ports), tags=dict(t)) for t in tag_sets]
        named = {"name": name} if name is not None else {}
        return sim.ReplicaSet(configs, election_delay=election_delay, **named, **security)
    if kind in ("sharded", "load-balanced"):
        cluster: Any
        if kind == "sharded":
            named = {"shard_name": name} if name is not None else {}
            cluster = sim.ShardedCluster(
                mongoses, shard_members=members, election_delay=election_delay, **named, **security
            )
        else:
            cluster = sim.LoadBalanced(
                shard_members=members, election_delay=election_delay, **security
            )
        # The cluster takes no ports: set them on the listeners before they bind.
        for process in [*cluster.mongoses, *cluster.shard.members]:
            process.server.port = next(ports)
        return cluster
    raise ValueError(f"unknown deployment kind {kind!r}: expected one of {DEPLOYMENT_KINDS}")


def describe_deployment(deployment: Any) -> list[str]:
    """A line per process: its address, what it is, its state (and its tags)."""
    sim = _sim()
    if isinstance(deployment, sim.ShardedCluster):
        lines = [f"  {m.host}  mongos" for m in deployment.mongoses]
        shard = deployment.shard
        return lines + [f"  {m.host}  {shard.name} {_member_state(m)}" for m in shard.members]
    if isinstance(deployment, sim.ReplicaSet):
        return [
            f"  {m.host}  {deployment.name} {_member_state(m)}{_tags(m.tags)}"
            for m in deployment.members
        ]
    return [f"  {m.host}  standalone" for m in deployment.members]


def _tags(tags: Mapping[str, str]) -> str:
    return "  tags " + ",".join(f"{k}={v}" for k, v in tags.items()) if tags else ""


def _member_state(member: Any) -> str:
    if not member.alive:
        return "DOWN"
    if member.partition_mode is not None:
        return f"{member.role} (partitioned: {member.partition_mode})"
    return str(member.role)


def _settings_lines(
    deployment: Any,
    uri: str,
    users: Sequence[tuple[str, str]],
    tls_files: Optional[TlsFiles],
    compressors: Sequence[str],
) -> list[str]:
    lines = [f"  user {user} in admin (SCRAM-SHA-256, SCRAM-SHA-1)" for user, _ in users]
    if tls_files is not None:
        lines.append(f"  TLS CA file: {tls_files.ca_file}")
        lines.append(f"  TLS server certificate and key: {tls_files.server_file}")
    if compressors:
        lines.append(f"  compressors: {', '.join(compressors)}")
    first = deployment.members[0].port
    target = f"--uri {shlex.quote(uri)}" if users or tls_files else f"--port {first}"
    lines.append(f"  control: python -m mongocore sim-control status {target}")
    return lines


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


def run_sim(
    kind: str = "replset",
    *,
    members: int = 3,
    mongoses: int = 2,
    port_base: Optional[int] = None,
    election_delay: float = 0.2,
    name: Optional[str] = None,
    users: Sequence[tuple[str, str]] = (),
    tls: bool = False,
    tls_dir: Optional[str] = None,
    tags: Optional[Sequence[Mapping[str, str]]] = None,
    compressors: Sequence[str] = (),
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
    stopper: Optional[Stopper] = None,
) -> int:
    """Run a simulated deployment until SIGINT/SIGTERM (or ``stopper.stop()``); 0 when stopped.

    The first line written to ``out`` is the connection string, alone, flushed at
    once so a script can read it: with the first user's credentials, ``tls=true`` and
    ``tlsCAFile`` (with ``tls``: a CA and a server certificate made now, in ``tls_dir``
    or in a temporary directory deleted at the end), and ``compressors``. Then a line
    per process, per setting, and per member state change while it runs. 1 when the
    deployment cannot be built or cannot listen.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    tls_files: Optional[TlsFiles] = None
    try:
        context = None
        if tls:
            tls_files = make_tls_files(tls_dir)
            context = _sim().server_tls_context(str(tls_files.server_file))
        deployment = build_deployment(
            kind,
            members=members,
            mongoses=mongoses,
            port_base=port_base,
            election_delay=election_delay,
            name=name,
            users=users,
            tls=context,
            tags=tags,
            compressors=compressors,
        )
    except ImportError as exc:
        if tls_files is not None:
            tls_files.remove()
        print(
            f"mongocore sim: the simulator needs the sim extra ({exc});"
            " install it with: pip install 'mongocore[sim]'",
            file=err,
        )
        return 1
    except (ValueError, OSError) as exc:
        if tls_files is not None:
            tls_files.remove()
        print(f"mongocore sim: {exc}", file=err)
        return 1
    try:
        return _serve(
            deployment,
            port_base=port_base,
            users=users,
            tls_files=tls_files,
            compressors=compressors,
            out=out,
            err=err,
            stopper=stopper,
        )
    finally:
        if tls_files is not None:
            tls_files.remove()


def _serve(
    deployment: Any,
    *,
    port_base: Optional[int],
    users: Sequence[tuple[str, str]],
    tls_files: Optional[TlsFiles],
    compressors: Sequence[str],
    out: TextIO,
    err: TextIO,
    stopper: Optional[Stopper],
) -> int:
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
            uri = client_uri(
                deployment.uri,
                user=users[0] if users else None,
                ca_file=tls_files.ca_file if tls_files is not None else None,
                compressors=compressors,
            )
            print(uri, file=out, flush=True)
            for text in describe_deployment(deployment):
                print(text, file=out)
            for text in _settings_lines(deployment, uri, users, tls_files, compressors):
                print(text, file=out)
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


# --- arguments -----------------------------------------------------------------------


def add_sim_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``sim`` subcommand and its options, on the top parser's subparsers."""
    sim: argparse.ArgumentParser = commands.add_parser(
        "sim",
        help="run a simulated deployment until interrupted",
        description="Run a simulated deployment on 127.0.0.1 until Ctrl-C (SIGINT) or "
        "SIGTERM. The first line printed is its connection string, with the credentials, "
        "TLS and compressor options a client needs.",
    )
    kind = sim.add_mutually_exclusive_group()
    kind.add_argument(
        "--replset",
        type=positive_int,
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
        type=port,
        metavar="P",
        help="listen on ports P, P+1, ... (mongos routers first); default: free ports",
    )
    sim.add_argument(
        "--name",
        metavar="NAME",
        help="the replica set's name, with --replset (default: rs0), or the shard's, with"
        " --sharded (default: shard01)",
    )
    sim.add_argument(
        "--mongoses", type=positive_int, default=2, metavar="N", help="with --sharded (2)"
    )
    sim.add_argument(
        "--shard-members",
        type=positive_int,
        default=3,
        metavar="N",
        help="members of the shard, with --sharded or --load-balanced (3)",
    )
    sim.add_argument(
        "--election-delay",
        type=seconds,
        default=0.2,
        metavar="SECONDS",
        help="how long an election takes (0.2)",
    )
    sim.add_argument(
        "--auth",
        type=parse_user,
        action="append",
        default=[],
        metavar="USER:PASSWORD",
        help="require authentication; a SCRAM-SHA-256 and SCRAM-SHA-1 user in admin"
        " (repeat for more users; the first one is in the printed URI)",
    )
    sim.add_argument(
        "--tls",
        action="store_true",
        help="require TLS, with a CA and a server certificate made at start (their files"
        " are printed; the URI carries tlsCAFile)",
    )
    sim.add_argument(
        "--tls-dir",
        metavar="DIR",
        help="write the certificates to DIR and keep them (default: a temporary"
        " directory, deleted at the end)",
    )
    sim.add_argument(
        "--tags",
        type=parse_tags,
        metavar="TAGS",
        help="the members' tags, with --replset: 'dc=ny;dc=sf,rack=2;dc=la' (';' between"
        " members, ',' between tags) or a JSON array of objects",
    )
    sim.add_argument(
        "--compressors",
        type=parse_compressors,
        default=(),
        metavar="LIST",
        help="the compressors the servers offer, e.g. zstd,zlib,snappy (default: none)",
    )
    sim.set_defaults(sim_error=sim.error)
    return sim


def sim_main(args: argparse.Namespace) -> int:
    """Run ``sim`` with parsed arguments; usage errors exit 2."""
    error: Callable[[str], Any] = args.sim_error
    if args.sharded or args.load_balanced:
        kind = "sharded" if args.sharded else "load-balanced"
        members = args.shard_members
    else:
        kind = "standalone" if args.standalone else "replset"
        members = args.replset if args.replset is not None else 3
    if args.name is not None and kind not in ("replset", "sharded"):
        error("argument --name: only with --replset or --sharded")
    if args.tags is not None:
        if kind != "replset":
            error("argument --tags: only with --replset")
        if len(args.tags) > members:
            error(f"argument --tags: {len(args.tags)} tag sets for {members} members")
    if args.tls_dir is not None and not args.tls:
        error("argument --tls-dir: only with --tls")
    return run_sim(
        kind,
        members=members,
        mongoses=args.mongoses,
        port_base=args.port_base,
        election_delay=args.election_delay,
        name=args.name,
        users=args.auth,
        tls=args.tls,
        tls_dir=args.tls_dir,
        tags=args.tags,
        compressors=args.compressors,
    )
