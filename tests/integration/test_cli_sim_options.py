"""``mongocore sim`` with users, TLS, tags and compressors, and ``mongocore sim-control``,
checked with pymongo as the independent client.

``sim`` runs in-process (stopped through its Stopper, joined) or as a subprocess
(killed in teardown); every wait is on a condition with a generous deadline.
"""

from __future__ import annotations

import io
import os
import shlex
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

import pymongo
from pymongo import monitoring
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError
from pymongo.read_preferences import Nearest, Secondary

from mongocore.cli import sim_runner
from mongocore.cli.signals import Stopper
from mongocore.cli.sim_control import sim_control
from mongocore.cli.sim_runner import run_sim
from mongocore.sim import Standalone
from tests.integration.test_cli_sim import (
    DEADLINE,
    Background,
    Cli,
    Sink,
    cli,  # noqa: F401 - the fixture
)

IS_POSIX = os.name == "posix"
PYMONGO: dict[str, Any] = {"serverSelectionTimeoutMS": 20_000, "heartbeatFrequencyMS": 500}

Client = pymongo.MongoClient[dict[str, Any]]


@contextmanager
def running_sim(**options: Any) -> Iterator[tuple[Sink, list[str]]]:
    """``run_sim`` in a thread; yields its output once it is ready, and its first lines."""
    out = Sink()
    stopper = Stopper()
    options.setdefault("election_delay", 0.05)
    running = Background(lambda: run_sim(out=out, err=out, stopper=stopper, **options))
    try:
        text = out.wait_for(lambda text: "(Ctrl-C to stop)" in text)
        yield out, text.splitlines()
    finally:
        stopper.stop()
        assert running.join() == 0
    assert out.getvalue().rstrip().endswith("stopped")


@contextmanager
def pymongo_client(uri: str, **options: Any) -> Iterator[Client]:
    client: Client = pymongo.MongoClient(uri, **{**PYMONGO, **options})
    try:
        yield client
    finally:
        client.close()


def hosts_of(uri: str) -> list[str]:
    """The hosts of a connection string, without its credentials."""
    return uri.split("://", 1)[1].split("/", 1)[0].rpartition("@")[2].split(",")


def printed(lines: list[str], label: str) -> str:
    """The value of the ``  label: value`` line."""
    prefix = f"  {label}: "
    return next(line[len(prefix) :] for line in lines if line.startswith(prefix))


# --- auth ----------------------------------------------------------------------------


def test_auth_with_the_printed_user() -> None:
    with running_sim(kind="replset", members=2, users=[("app", "s3cret"), ("ops", "pw")]) as (
        _,
        lines,
    ):
        uri = lines[0]
        assert uri.startswith("mongodb://app:s3cret@")
        assert "  user app in admin (SCRAM-SHA-256, SCRAM-SHA-1)" in lines
        assert "  user ops in admin (SCRAM-SHA-256, SCRAM-SHA-1)" in lines
        with pymongo_client(uri) as client:
            client.app.items.insert_one({"_id": 1})
            assert client.app.items.find_one() == {"_id": 1}
        hosts = ",".join(hosts_of(uri))
        with pymongo_client(f"mongodb://ops:pw@{hosts}/?replicaSet=rs0") as client:
            assert client.app.items.count_documents({}) == 1
        with pymongo_client(f"mongodb://{hosts}/?replicaSet=rs0") as client:
            with pytest.raises(OperationFailure) as unauthorized:
                client.app.items.find_one()
            assert unauthorized.value.code == 13
        with pymongo_client(f"mongodb://app:wrong@{hosts}/?replicaSet=rs0") as client:
            with pytest.raises(OperationFailure) as failed:
                client.admin.command("ping")
            assert failed.value.code == 18
        # sim-control logs in with the URI's user.
        out = io.StringIO()
        assert sim_control("status", uri=uri, out=out) == 0
        assert out.getvalue().startswith("replicaSet rs0, primary: ")
        control = f"python -m mongocore sim-control status --uri {shlex.quote(uri)}"
        assert printed(lines, "control") == control


# --- TLS -----------------------------------------------------------------------------


def test_tls_with_the_printed_ca_file() -> None:
    pytest.importorskip("trustme")
    with running_sim(kind="replset", members=2, tls=True) as (_, lines):
        uri = lines[0]
        ca_file = Path(printed(lines, "TLS CA file"))
        server_file = Path(printed(lines, "TLS server certificate and key"))
        assert f"tls=true&tlsCAFile={ca_file}" in uri
        assert server_file.parent == ca_file.parent
        with pymongo_client(uri) as client:
            client.app.items.insert_one({"_id": 1})
        hosts = ",".join(hosts_of(uri))
        with pymongo_client(
            f"mongodb://{hosts}/?replicaSet=rs0", tls=True, tlsCAFile=str(ca_file)
        ) as client:
            assert client.app.items.count_documents({}) == 1
        # Without TLS, no server can be used (the servers only speak TLS).
        with (
            pymongo_client(
                hosts_of(uri)[0], directConnection=True, serverSelectionTimeoutMS=1000
            ) as client,
            pytest.raises(ServerSelectionTimeoutError),
        ):
            client.admin.command("ping")
        out = io.StringIO()
        assert sim_control("status", uri=uri, out=out) == 0
    # The temporary directory is gone with the deployment.
    assert not ca_file.parent.exists()


def test_tls_files_in_a_directory_are_kept(tmp_path: Path) -> None:
    pytest.importorskip("trustme")
    where = tmp_path / "certs"
    with running_sim(kind="standalone", tls=True, tls_dir=str(where)) as (_, lines):
        assert printed(lines, "TLS CA file") == str(where / "ca.pem")
        with pymongo_client(lines[0]) as client:
            assert client.admin.command("ping")["ok"] == 1.0
    assert (where / "ca.pem").exists() and (where / "server.pem").exists()


# --- tags ----------------------------------------------------------------------------


def watch_types(client: Client) -> dict[str, str]:
    """pymongo's view: {host: server type name}."""
    servers = client.topology_description.server_descriptions()
    return {f"{h}:{p}": sd.server_type_name for (h, p), sd in servers.items()}


class TopologyWatch(monitoring.TopologyListener):
    """Wakes a waiter on every change of pymongo's view of the topology."""

    def __init__(self) -> None:
        self.cond = threading.Condition()

    def opened(self, event: monitoring.TopologyOpenedEvent) -> None:
        return

    def closed(self, event: monitoring.TopologyClosedEvent) -> None:
        return

    def description_changed(self, event: monitoring.TopologyDescriptionChangedEvent) -> None:
        with self.cond:
            self.cond.notify_all()

    def wait_until(self, client: Client, predicate: Callable[[dict[str, str]], bool]) -> None:
        """Until ``predicate({host: server type})`` holds for the client's view."""

        with self.cond:
            if not self.cond.wait_for(lambda: predicate(watch_types(client)), DEADLINE):
                raise AssertionError(f"never reached; pymongo sees {watch_types(client)}")


def primary_of(types: dict[str, str]) -> str:
    return next((host for host, kind in types.items() if kind == "RSPrimary"), "")


def test_tags_in_hello_and_by_tag_set_read_preference() -> None:
    tags = [{"dc": "ny"}, {"dc": "sf", "rack": "2"}, {"dc": "la"}]
    with running_sim(kind="replset", members=3, tags=tags) as (_, lines):
        uri = lines[0]
        hosts = hosts_of(uri)
        assert lines[1:4] == [
            f"  {hosts[0]}  rs0 PRIMARY  tags dc=ny",
            f"  {hosts[1]}  rs0 SECONDARY  tags dc=sf,rack=2",
            f"  {hosts[2]}  rs0 SECONDARY  tags dc=la",
        ]
        for host, expected in zip(hosts, tags):
            with pymongo_client(host, directConnection=True) as client:
                assert client.admin.command("hello")["tags"] == expected
        watch = TopologyWatch()
        with pymongo_client(uri, event_listeners=[watch]) as client:
            client.app.items.insert_one({"_id": 1})
            watch.wait_until(client, lambda types: sorted(types.values()).count("RSSecondary") == 2)
            for read_preference, host in (
                (Secondary([{"dc": "sf", "rack": "2"}]), hosts[1]),
                (Secondary([{"dc": "tokyo"}, {"dc": "la"}]), hosts[2]),
                (Nearest([{"dc": "ny"}]), hosts[0]),
            ):
                items = client.app.get_collection("items", read_preference=read_preference)
                cursor = items.find({}, batch_size=1)
                list(cursor)
                assert cursor.address is not None
                assert "{}:{}".format(*cursor.address) == host, read_preference


# --- compressors ---------------------------------------------------------------------


def test_compressors_negotiated(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []
    build = sim_runner.build_deployment

    def keep(*args: Any, **kwargs: Any) -> Any:
        built.append(build(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(sim_runner, "build_deployment", keep)
    with running_sim(kind="standalone", compressors=("zlib",)) as (_, lines):
        uri = lines[0]
        assert uri.endswith("/?compressors=zlib")
        assert printed(lines, "compressors") == "zlib"
        with pymongo_client(uri) as client:
            client.app.items.insert_one({"_id": 1})
        with pymongo_client(uri.split("?")[0], compressors="zstd,snappy") as client:
            client.app.items.insert_one({"_id": 2})
        requests = built[0].member.server.requests
        inserts = [r.compressor for r in requests if r.command == "insert"]
        # The first client's insert was compressed with zlib; the second client offered
        # only compressors the server does not, so it sent plain messages.
        assert inserts == ["zlib", None]


# --- sim-control ---------------------------------------------------------------------


def test_sim_control_reports_a_server_that_is_no_simulator() -> None:
    with Standalone() as server:
        # A real server answers the command with CommandNotFound (59): so does this one.
        server.member.fail_command("simControl", error_code=59)
        err = io.StringIO()
        assert sim_control("status", uri=f"mongodb://{server.member.host}/", err=err) == 1
        assert f"{server.member.host} is not a mongocore simulator" in err.getvalue()
        port = server.member.port
    err = io.StringIO()
    assert sim_control("status", uri=f"mongodb://127.0.0.1:{port}/", err=err) == 1
    assert err.getvalue().startswith("mongocore sim-control: no process answered: 127.0.0.1:")


def run_control(start: Callable[..., Cli], *args: str) -> str:
    code, out, err = start("sim-control", *args).finish()
    assert code == 0, err
    return out


@pytest.mark.skipif(not IS_POSIX, reason="sends SIGINT to a child process (POSIX signals)")
def test_a_failover_driven_by_sim_control_is_seen_by_pymongo(
    cli: Callable[..., Cli],  # noqa: F811 - the fixture imported above
) -> None:
    sim = cli("sim", "--replset", "3", "--election-delay", "0.05")
    uri = sim.readline()
    hosts = hosts_of(uri)
    port = hosts[0].rsplit(":", 1)[1]
    control_line = sim.read_until(lambda line: line.startswith("  control: "))
    assert control_line == f"  control: python -m mongocore sim-control status --port {port}"

    watch = TopologyWatch()
    with pymongo_client(uri, event_listeners=[watch], retryWrites=True) as client:
        watch.wait_until(client, lambda types: primary_of(types) != "" and len(types) == 3)
        first = primary_of(watch_types(client))
        client.app.items.insert_one({"_id": 1})

        out = run_control(cli, "stepdown", "--port", port, "--secs", "30")
        assert out.startswith(f"stepdown {first}: done (sent to ")
        watch.wait_until(client, lambda types: primary_of(types) not in ("", first))
        sim.read_until(lambda line: line == f"{first} PRIMARY -> SECONDARY")
        second = primary_of(watch_types(client))
        client.app.items.insert_one({"_id": 2})

        # Kill the new primary, named by its port alone; the command goes to another member.
        out = run_control(cli, "kill", second.rsplit(":", 1)[1], "--uri", uri)
        assert out.startswith(f"kill {second}: done (sent to ")
        assert f"(sent to {second})" not in out
        sim.read_until(lambda line: line == f"{second} PRIMARY -> DOWN")
        watch.wait_until(
            client,
            lambda types: types[second] == "Unknown" and primary_of(types) not in ("", second),
        )
        client.app.items.insert_one({"_id": 3})

        status = run_control(cli, "status", "--uri", uri).splitlines()
        assert f"  {second}  mongod  DOWN" in status

        run_control(cli, "restart", second, "--uri", uri)
        watch.wait_until(client, lambda types: types[second] == "RSSecondary")
        assert client.app.items.count_documents({}) == 3

    sim.proc.send_signal(signal.SIGINT)
    code, rest, err = sim.finish()
    assert code == 0, err
    assert rest.rstrip().endswith("stopped")
