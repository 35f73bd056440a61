"""The command line around the simulator: ``mongocore sim`` and ``mongocore watch``.

``sim`` runs as a real subprocess (its URI read from the first line, stopped with
SIGINT or SIGTERM) and in-process (stopped through its Stopper); ``watch`` runs as a
subprocess against an in-process simulator, and in-process with plain and rich
output. Subprocesses are always killed in teardown; every wait has a deadline.
"""

from __future__ import annotations

import io
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any, Callable, Optional

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from mongocore.api.client import Client
from mongocore.cli import view as cli_view
from mongocore.cli.main import Stopper, build_deployment, run_sim, watch
from mongocore.cli.view import EventFeed
from mongocore.core.address import parse_address
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.events import TopologyDescriptionChangedEvent, TopologyListener
from mongocore.sim import ReplicaSet, ShardedCluster

DEADLINE = 30.0
FAST: dict[str, Any] = {"heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 20_000}
IS_POSIX = os.name == "posix"


# --- subprocesses ------------------------------------------------------------------


class Cli:
    """A ``python -m mongocore ...`` subprocess whose stdout is read line by line."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mongocore", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        assert self.proc.stdout is not None
        self._fd = self.proc.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._pending = b""
        self.lines: list[str] = []

    def readline(self) -> str:
        """The next line of stdout, waiting at most DEADLINE for it.

        Reads the pipe itself (no buffered reader): a buffer could hold lines that
        the selector no longer sees as readable.
        """
        while b"\n" not in self._pending:
            if not self._selector.select(DEADLINE):
                raise AssertionError(f"no output within {DEADLINE}s; so far: {self.lines}")
            chunk = os.read(self._fd, 65536)
            if not chunk:
                raise AssertionError(f"stdout closed; stderr: {self.stop_and_read_stderr()}")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        self.lines.append(line.decode())
        return self.lines[-1]

    def read_until(self, predicate: Callable[[str], bool]) -> str:
        while True:
            line = self.readline()
            if predicate(line):
                return line

    def finish(self) -> tuple[int, str, str]:
        """Wait for the exit: (exit code, the rest of stdout, stderr)."""
        out, err = self.proc.communicate(timeout=DEADLINE)
        rest = (self._pending + out).decode()
        self._pending = b""
        return self.proc.returncode, rest, err.decode()

    def stop_and_read_stderr(self) -> str:
        self.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=DEADLINE)

    def close(self) -> None:
        self.kill()
        self._selector.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def cli() -> Iterator[Callable[..., Cli]]:
    started: list[Cli] = []

    def start(*args: str) -> Cli:
        process = Cli(*args)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


class Discovery(TopologyListener):
    """Wakes a waiter on every topology change of a Client."""

    def __init__(self) -> None:
        self.cond = threading.Condition()

    def description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        with self.cond:
            self.cond.notify_all()

    def wait_until(self, client: Client, predicate: Callable[[Any], bool]) -> Any:
        with self.cond:
            if not self.cond.wait_for(lambda: predicate(client.topology_description), DEADLINE):
                raise AssertionError(f"never reached: {client.topology_description!r}")
        return client.topology_description


def refused(host: str) -> bool:
    address = parse_address(host)
    try:
        with socket.create_connection((address.host, address.port or 27017), timeout=DEADLINE):
            return False
    except ConnectionRefusedError:
        return True


def hosts_of(uri: str) -> list[str]:
    return uri.split("://", 1)[1].split("/", 1)[0].split(",")


# --- sim as a subprocess -------------------------------------------------------------


@pytest.mark.skipif(not IS_POSIX, reason="sends SIGINT to a child process (POSIX signals)")
def test_sim_replset_runs_until_sigint(cli: Callable[..., Cli]) -> None:
    sim = cli("sim", "--replset", "3")
    uri = sim.readline()
    assert uri.startswith("mongodb://") and uri.endswith("/?replicaSet=rs0")
    hosts = hosts_of(uri)
    assert len(hosts) == 3

    discovery = Discovery()
    with Client(uri, event_listeners=[discovery], **FAST) as client:
        td = discovery.wait_until(
            client,
            lambda td: (
                td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
                and sorted(sd.type.value for sd in td.servers.values())
                == ["RSPrimary", "RSSecondary", "RSSecondary"]
            ),
        )
        assert {str(a) for a in td.servers} == set(hosts)
        assert client.command("app", {"insert": "c", "documents": [{"_id": 1}]})["n"] == 1

        # A step-down over the wire: the simulator reports the state changes.
        primary = td.primary
        assert primary is not None
        client.command("admin", {"replSetStepDown": 60})
        sim.read_until(lambda line: line == f"{primary.address} PRIMARY -> SECONDARY")
        sim.read_until(lambda line: line.endswith("SECONDARY -> PRIMARY"))

    sim.proc.send_signal(signal.SIGINT)
    code, rest, err = sim.finish()
    assert code == 0, err
    assert rest.rstrip().endswith("stopped")
    assert "Traceback" not in err
    assert all(refused(host) for host in hosts)


@pytest.mark.skipif(not IS_POSIX, reason="sends SIGTERM to a child process (POSIX signals)")
def test_sim_sharded_stops_on_sigterm(cli: Callable[..., Cli]) -> None:
    sim = cli("sim", "--sharded", "--mongoses", "2", "--shard-members", "1")
    uri = sim.readline()
    hosts = hosts_of(uri)
    assert len(hosts) == 2
    assert sim.readline() == f"  {hosts[0]}  mongos"
    discovery = Discovery()
    with Client(uri, event_listeners=[discovery], **FAST) as client:
        td = discovery.wait_until(
            client,
            lambda td: (
                len(td.servers) == 2
                and all(sd.type is ServerType.MONGOS for sd in td.servers.values())
            ),
        )
        assert td.type is TopologyType.SHARDED
    sim.proc.send_signal(signal.SIGTERM)
    code, rest, err = sim.finish()
    assert code == 0, err
    assert rest.rstrip().endswith("stopped")
    assert all(refused(host) for host in hosts)


@pytest.mark.skipif(not IS_POSIX, reason="sends SIGINT to a child process (POSIX signals)")
def test_sim_standalone_on_a_given_port(cli: Callable[..., Cli]) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sim = cli("sim", "--standalone", "--port-base", str(port))
    assert sim.readline() == f"mongodb://127.0.0.1:{port}/"
    with Client(f"mongodb://127.0.0.1:{port}/", **FAST) as client:
        assert client.command("admin", {"ping": 1})["ok"] == 1
        assert client.topology_description.type is TopologyType.SINGLE
    sim.proc.send_signal(signal.SIGINT)
    code, _, err = sim.finish()
    assert code == 0, err
    assert refused(f"127.0.0.1:{port}")


def test_sim_on_a_port_in_use_fails(cli: Callable[..., Cli]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli("sim", "--replset", "2", "--port-base", str(port)).finish()
    assert code == 1
    assert out == ""
    assert err.startswith(f"mongocore sim: cannot listen on the ports from {port} on: ")


def test_sim_refuses_bad_arguments(cli: Callable[..., Cli]) -> None:
    code, out, err = cli("sim", "--replset", "3", "--standalone").finish()
    assert code == 2
    assert out == ""
    assert "not allowed with argument" in err


# --- sim in-process ------------------------------------------------------------------


class Sink(io.StringIO):
    """A text stream a test can wait on: every write wakes waiters."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.cond = threading.Condition()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty

    def write(self, text: str) -> int:
        with self.cond:
            written = super().write(text)
            self.cond.notify_all()
            return written

    def wait_for(self, predicate: Callable[[str], bool]) -> str:
        with self.cond:
            if not self.cond.wait_for(lambda: predicate(self.getvalue()), DEADLINE):
                raise AssertionError(f"never written; so far:\n{self.getvalue()}")
            return self.getvalue()


class Background:
    """Runs a function in a thread and keeps its result; always joined."""

    def __init__(self, target: Callable[[], int]) -> None:
        self.result: Optional[int] = None
        self._target = target
        self.thread = threading.Thread(target=self._run, name="test-cli-background")
        self.thread.start()

    def _run(self) -> None:
        self.result = self._target()

    def join(self) -> Optional[int]:
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive()
        return self.result


def test_run_sim_in_process_reports_state_changes() -> None:
    out = Sink()
    stopper = Stopper()
    running = Background(lambda: run_sim("replset", members=3, out=out, stopper=stopper))
    try:
        text = out.wait_for(lambda text: "(Ctrl-C to stop)" in text)
        uri = text.splitlines()[0]
        assert uri.startswith("mongodb://")
        discovery = Discovery()
        with Client(uri, event_listeners=[discovery], **FAST) as client:
            td = discovery.wait_until(client, lambda td: td.primary is not None)
            assert td.primary is not None
            old = str(td.primary.address)
            assert f"  {old}  rs0 PRIMARY" in text.splitlines()
            client.command("admin", {"replSetStepDown": 60})
            out.wait_for(lambda text: f"{old} PRIMARY -> SECONDARY" in text)
    finally:
        stopper.stop()
        code = running.join()
    assert code == 0
    assert out.getvalue().rstrip().endswith("stopped")
    assert all(refused(host) for host in hosts_of(uri))


def test_port_base_numbers_mongos_routers_first() -> None:
    cluster = build_deployment("sharded", members=2, mongoses=2, port_base=41000)
    # Not started: nothing is bound, the ports are only assigned.
    assert [m.server.port for m in cluster.mongoses] == [41000, 41001]
    assert [m.server.port for m in cluster.shard.members] == [41002, 41003]
    rs = build_deployment("replset", members=3, port_base=42000)
    assert [m.server.port for m in rs.members] == [42000, 42001, 42002]


# --- watch ---------------------------------------------------------------------------


def discovered(text: str) -> bool:
    """The plain output says the client found the primary and both secondaries."""
    return "-> RSPrimary" in text and text.count("-> RSSecondary") >= 2


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(3, election_delay=0.05) as replica_set:
        yield replica_set


def test_watch_subprocess_prints_plain_lines(rs: ReplicaSet, cli: Callable[..., Cli]) -> None:
    code, out, err = cli("watch", rs.uri, "--duration", "2").finish()
    assert code == 0, err
    lines = out.splitlines()
    # The last block is the client's view once discovery was done.
    last = max(i for i, line in enumerate(lines) if " topology " in line)
    assert lines[last].endswith(" topology ReplicaSetWithPrimary setName=rs0")
    rows = {line.split()[0]: line.split()[1:] for line in lines[last + 1 : last + 4]}
    primary = rs.primary
    assert primary is not None
    for member in rs.members:
        kind = "RSPrimary" if member is primary else "RSSecondary"
        assert rows[member.host][:3] == [kind, "rtt", rows[member.host][2]], out
        assert rows[member.host][-2:] == ["setName", "rs0"]
        # What changed is said too (a primary may be a PossiblePrimary first).
        assert any(
            line.startswith(f"~ {member.host} ") and line.endswith(f" -> {kind}") for line in lines
        ), out


def test_watch_subprocess_against_a_sharded_cluster(cli: Callable[..., Cli]) -> None:
    with ShardedCluster(2, shard_members=1, election_delay=0.05) as cluster:
        code, out, err = cli("watch", cluster.uri, "--duration", "2").finish()
    assert code == 0, err
    assert " topology Sharded" in out
    lines = out.splitlines()
    for mongos in cluster.mongoses:
        assert f"~ {mongos.host} Unknown -> Mongos" in lines
        assert any(line.split()[:2] == [mongos.host, "Mongos"] for line in lines)


def test_watch_in_process_stops_and_closes_the_client(rs: ReplicaSet) -> None:
    out = Sink()
    feed = EventFeed()
    running = Background(lambda: watch(rs.uri, out=out, feed=feed, **FAST))
    try:
        out.wait_for(discovered)
    finally:
        feed.stop()
        code = running.join()
    assert code == 0
    assert "RSPrimary" in out.getvalue()


def test_watch_uses_rich_on_a_terminal(rs: ReplicaSet) -> None:
    pytest.importorskip("rich", reason="the live table needs rich (the sim extra)")
    out = Sink(tty=True)
    feed = EventFeed()
    running = Background(lambda: watch(rs.uri, out=out, feed=feed, **FAST))
    try:
        out.wait_for(lambda text: text.count("RSSecondary") >= 2 and "RSPrimary" in text)
    finally:
        feed.stop()
        code = running.join()
    assert code == 0
    text = out.getvalue()
    assert "┃" in text  # a table, not plain lines
    assert "topology ReplicaSet" in text
    assert all(m.host in text for m in rs.members)


def test_watch_on_a_terminal_without_rich_prints_plain_lines(
    rs: ReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_view, "load_rich", lambda: None)
    out = Sink(tty=True)
    feed = EventFeed()
    running = Background(lambda: watch(rs.uri, out=out, feed=feed, **FAST))
    try:
        out.wait_for(discovered)
    finally:
        feed.stop()
        code = running.join()
    assert code == 0
    assert "┃" not in out.getvalue()
