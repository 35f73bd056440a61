from __future__ import annotations

import datetime
import io
import signal
import threading
import time

import pytest

from mongocore.cli import view as cli_view
from mongocore.cli.main import build_deployment, build_parser, main, replay, stop_on_signals, watch
from mongocore.cli.view import (
    EventFeed,
    ServerRow,
    change_line,
    format_rtt,
    plain_lines,
    rich_table,
    server_rows,
    want_rich,
)
from mongocore.core.address import parse_address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import apply
from mongocore.core.description.types import TopologyType
from mongocore.core.events import (
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerListener,
    ServerOpeningEvent,
    TopologyDescriptionChangedEvent,
    TopologyListener,
)
from mongocore.core.options import ClientOptions


def test_replay_walks_through_discovery_step_down_and_election() -> None:
    out = io.StringIO()
    assert replay(out) == 0
    text = out.getvalue()
    assert "db1.example.net:27017: Unknown -> RSPrimary" in text
    assert "monitoring db3.example.net:27017" in text
    assert "db1.example.net:27017: RSPrimary -> Unknown (not primary (code 10107))" in text
    assert "select a write                                -> no suitable server" in text
    assert text.rstrip().endswith(
        "<ServerDescription db3.example.net:27017 RSSecondary rtt=30.0ms setName='rs'>]>"
    )
    last_write = [line for line in text.splitlines() if "select a write" in line][-1]
    assert last_write.endswith("db2.example.net:27017")


def test_version(capsys: object) -> None:
    assert main(["version"]) == 0


# --- the topology view (mongocore.cli.view) -----------------------------------------


def _replica_set_view() -> TopologyDescription:
    """A replica set as the pure core describes it: a primary, a secondary, one down."""
    options = ClientOptions.from_uri("mongodb://a:1,b:2,c:3/?replicaSet=rs")
    td = TopologyDescription.initial(options.topology_settings)
    hosts = ["a:1", "b:2", "c:3"]
    for host, primary, rtt in (("a:1", True, 0.004), ("b:2", False, 0.0125)):
        reply = {
            "ok": 1,
            "isWritablePrimary": primary,
            "secondary": not primary,
            "setName": "rs",
            "hosts": hosts,
            "me": host,
            "minWireVersion": 0,
            "maxWireVersion": 21,
        }
        td = apply(td, ServerDescription.from_hello(parse_address(host), reply, rtt)).description
    down = ServerDescription.from_error(parse_address("c:3"), "connection refused")
    return apply(td, down).description


def test_server_rows_sorted_with_type_rtt_set_name_and_error() -> None:
    rows = server_rows(_replica_set_view())
    assert rows == [
        ServerRow("a:1", "RSPrimary", "4.0 ms", "rs", ""),
        ServerRow("b:2", "RSSecondary", "12.5 ms", "rs", ""),
        ServerRow("c:3", "Unknown", "-", "", "connection refused"),
    ]


def test_format_rtt() -> None:
    assert format_rtt(None) == "-"
    assert format_rtt(0.00042) == "0.4 ms"


def test_plain_lines_heading_then_one_aligned_line_per_server() -> None:
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)
    assert plain_lines(_replica_set_view(), when=when) == [
        "07:08:09.123 topology ReplicaSetWithPrimary setName=rs",
        "  a:1  RSPrimary    rtt 4.0 ms  setName rs",
        "  b:2  RSSecondary  rtt 12.5 ms  setName rs",
        "  c:3  Unknown      rtt -  error: connection refused",
    ]


def test_plain_lines_of_an_empty_topology() -> None:
    options = ClientOptions.from_uri("mongodb://a:1")
    empty = TopologyDescription(TopologyType.UNKNOWN, {}, options.topology_settings)
    assert plain_lines(empty) == ["topology Unknown", "  (no servers)"]


def test_change_lines() -> None:
    td = _replica_set_view()
    a, c = parse_address("a:1"), parse_address("c:3")
    primary = td.servers[a]
    assert change_line(ServerOpeningEvent(1, a)) == "+ a:1 added to the topology"
    assert change_line(ServerClosedEvent(1, a)) == "- a:1 removed from the topology"
    unknown = ServerDescription(a)
    assert change_line(ServerDescriptionChangedEvent(1, a, unknown, primary)) == (
        "~ a:1 Unknown -> RSPrimary"
    )
    failed = td.servers[c]
    assert change_line(ServerDescriptionChangedEvent(1, a, primary, failed)) == (
        "~ a:1 RSPrimary -> Unknown (connection refused)"
    )
    newer = primary.replace(set_version=2)
    assert change_line(ServerDescriptionChangedEvent(1, a, primary, newer)) == (
        "~ a:1 RSPrimary -> RSPrimary (hello changed)"
    )
    assert change_line(TopologyDescriptionChangedEvent(1, td, td)) is None


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rich_only_on_a_terminal_with_rich_and_without_plain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert want_rich(io.StringIO(), plain=False) is None
    monkeypatch.setattr(cli_view, "load_rich", lambda: None)
    assert want_rich(_Terminal(), plain=False) is None  # rich is not installed
    sentinel = object()
    monkeypatch.setattr(cli_view, "load_rich", lambda: sentinel)
    assert want_rich(_Terminal(), plain=True) is None
    assert want_rich(_Terminal(), plain=False) is sentinel


def test_rich_table_names_every_server() -> None:
    pytest.importorskip("rich", reason="rendering the live table needs rich (the sim extra)")
    rich = cli_view.load_rich()
    assert rich is not None
    out = io.StringIO()
    console = rich.console.Console(file=out, width=120, color_system=None)
    console.print(rich_table(rich, _replica_set_view(), ["~ a:1 Unknown -> RSPrimary"]))
    text = out.getvalue()
    assert "topology ReplicaSetWithPrimary setName=rs" in text
    for expected in ("a:1", "RSPrimary", "4.0 ms", "RSSecondary", "connection refused"):
        assert expected in text
    assert "~ a:1 Unknown -> RSPrimary" in text


def test_event_feed_delivers_events_then_stops() -> None:
    feed = EventFeed()
    topology_feed, server_feed = feed.listeners
    opened = ServerOpeningEvent(1, parse_address("a:1"))
    assert isinstance(server_feed, ServerListener)
    server_feed.opened(opened)
    assert feed.next_event(deadline=None) is opened
    feed.stop()
    assert feed.next_event(deadline=None) is None
    # A deadline already past: what had arrived is handed out, nothing is waited for.
    server_feed.opened(opened)
    past = time.monotonic() - 1
    assert feed.next_event(deadline=past) is opened
    assert feed.next_event(deadline=past) is None
    assert isinstance(topology_feed, TopologyListener)


# --- arguments and signals -----------------------------------------------------------


def test_sim_arguments() -> None:
    parser = build_parser()
    args = parser.parse_args(["sim"])
    assert (args.replset, args.sharded, args.standalone, args.load_balanced) == (
        None,
        False,
        False,
        False,
    )
    args = parser.parse_args(["sim", "--sharded", "--port-base", "40000", "--mongoses", "3"])
    assert (args.sharded, args.port_base, args.mongoses) == (True, 40000, 3)
    assert parser.parse_args(["sim", "--replset", "5"]).replset == 5
    assert parser.parse_args(["sim", "--name", "rs"]).name == "rs"
    assert parser.parse_args(["sim"]).name is None


def test_a_named_replica_set() -> None:
    deployment = build_deployment("replset", members=2, name="shop")
    assert deployment.name == "shop"
    assert build_deployment("replset", members=2).name == "rs0"


@pytest.mark.parametrize(
    "argv",
    [
        ["sim", "--replset", "0"],
        ["sim", "--replset", "3", "--sharded"],
        ["sim", "--standalone", "--load-balanced"],
        ["sim", "--port-base", "70000"],
        ["watch"],
        ["watch", "mongodb://a", "--duration", "-1"],
    ],
)
def test_bad_arguments_exit_with_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "usage: mongocore" in capsys.readouterr().err


def test_watch_refuses_an_invalid_uri() -> None:
    err = io.StringIO()
    assert watch("bogus://host", duration=0, out=io.StringIO(), err=err) == 1
    assert err.getvalue().startswith("mongocore watch: ")


def test_watch_for_no_time_prints_the_initial_view() -> None:
    out = io.StringIO()
    # Nothing listens on port 1: the seed stays Unknown; the client is closed on return.
    assert watch("mongodb://127.0.0.1:1/?connectTimeoutMS=100", duration=0, out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(" topology Unknown")
    assert lines[1].split() == ["127.0.0.1:1", "Unknown", "rtt", "-"]
    assert "+ 127.0.0.1:1 added to the topology" in lines


def test_signals_call_stop_instead_of_raising() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers can only be installed in the main thread")
    stopped = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with stop_on_signals(stopped.set):
        signal.raise_signal(signal.SIGINT)
        assert stopped.wait(10)
    assert signal.getsignal(signal.SIGINT) is before
