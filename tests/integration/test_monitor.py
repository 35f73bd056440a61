"""mongocore.io.monitor against mockupdb: polling, streaming, retries, cancellation, faults."""

from __future__ import annotations

import itertools
import logging
import queue
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest
from bson import ObjectId
from bson.int64 import Int64
from mockupdb import OP_MSG_FLAGS, Command, MockupDB, OpMsg, OpMsgReply

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology_version import TopologyVersion
from mongocore.core.description.types import ServerType
from mongocore.core.events import (
    EventPublisher,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatListener,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from mongocore.core.options import ClientOptions
from mongocore.core.wire import encode_op_msg
from mongocore.errors import NetworkError, NetworkTimeout
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.monitor import Monitor
from mongocore.io.monitor_settings import MonitorSettings, streaming_enabled
from tests.integration.mock_servers import (
    DEADLINE,
    Background,
    HelloResponder,
    RawReply,
    address_of,
    hello_reply,
    receive_request,
    topology_version,
)

MORE_TO_COME = OP_MSG_FLAGS["moreToCome"]
EXHAUST_ALLOWED = OP_MSG_FLAGS["exhaustAllowed"]

HeartbeatEvent = Any  # one of the three heartbeat event classes


class Target:
    """A fake topology: collects reported descriptions in order."""

    def __init__(self, on_report: Optional[Callable[[ServerDescription], None]] = None) -> None:
        self.reports: queue.Queue[ServerDescription] = queue.Queue()
        self._on_report = on_report
        #: The descriptions reported with interrupt_in_use_connections (timeouts).
        self.interrupting: list[ServerDescription] = []

    def on_server_check(
        self, description: ServerDescription, *, interrupt_in_use_connections: bool = False
    ) -> None:
        if interrupt_in_use_connections:
            self.interrupting.append(description)
        self.reports.put(description)
        if self._on_report is not None:
            self._on_report(description)

    def next(self) -> ServerDescription:
        return self.reports.get(timeout=DEADLINE)


class Heartbeats(ServerHeartbeatListener):
    """Records heartbeat events with the monotonic time each was delivered."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.events: list[tuple[float, HeartbeatEvent]] = []

    def _add(self, event: HeartbeatEvent) -> None:
        with self._cond:
            self.events.append((time.monotonic(), event))
            self._cond.notify_all()

    started = succeeded = failed = _add

    def wait_for(self, count: int) -> list[HeartbeatEvent]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.events) >= count, DEADLINE), (
                f"expected {count} heartbeat events, got {self.kinds()}"
            )
            return [event for _, event in self.events]

    def kinds(self) -> list[str]:
        names = {
            ServerHeartbeatStartedEvent: "started",
            ServerHeartbeatSucceededEvent: "succeeded",
            ServerHeartbeatFailedEvent: "failed",
        }
        with self._cond:
            return [
                f"{names[type(event)]}{'(awaited)' if event.awaited else ''}"
                for _, event in self.events
            ]

    def times(self, kind: type[Any], awaited: Optional[bool] = None) -> list[float]:
        with self._cond:
            return [
                at
                for at, event in self.events
                if type(event) is kind and (awaited is None or event.awaited == awaited)
            ]


def settings(
    mode: str = "poll",
    heartbeat: float = 600.0,
    minimum: float = 0.05,
    connect_timeout: Optional[float] = 10.0,
) -> MonitorSettings:
    return MonitorSettings(
        heartbeat_frequency=heartbeat,
        min_heartbeat_frequency=minimum,
        connection=ConnectionSettings(connect_timeout=connect_timeout),
        server_monitoring_mode=mode,
    )


MonitorFactory = Callable[..., tuple[Monitor, Target, Heartbeats]]


@pytest.fixture
def start_monitor() -> Iterator[MonitorFactory]:
    monitors: list[Monitor] = []
    # The monitors hold their targets weakly (as a topology is held): the fixture keeps
    # them alive, as a client keeps its topology.
    targets: list[Target] = []

    def start(
        address: Address,
        monitor_settings: Optional[MonitorSettings] = None,
        target: Optional[Target] = None,
        **kwargs: Any,
    ) -> tuple[Monitor, Target, Heartbeats]:
        target = target or Target()
        targets.append(target)
        heartbeats = Heartbeats()
        monitor = Monitor(
            address,
            target,
            monitor_settings or settings(),
            EventPublisher([heartbeats]),
            **kwargs,
        )
        monitors.append(monitor)
        monitor.open()
        return monitor, target, heartbeats

    yield start
    for monitor in monitors:
        monitor.close()


def rtt_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mongocore-rtt-")]


# --- polling -------------------------------------------------------------------------


def test_polling_reports_checks_and_publishes_heartbeats(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    clock = itertools.count(1000.0)
    monitor, target, heartbeats = start_monitor(address_of(hello_server), clock=lambda: next(clock))
    first = target.next()
    assert first.type is ServerType.STANDALONE
    assert first.error is None
    assert first.round_trip_time is not None and first.round_trip_time >= 0
    assert first.last_update_time >= 1000.0
    handshake = hello_responder.next_seen()
    assert isinstance(handshake, Command)  # legacy hello over OP_QUERY, with metadata
    assert "client" in handshake.doc

    monitor.request_check()
    second = target.next()
    assert second.type is ServerType.STANDALONE
    assert second.last_update_time > first.last_update_time
    hello = hello_responder.next_seen()
    assert isinstance(hello, OpMsg)  # helloOk was returned: hello over OP_MSG
    assert next(iter(hello.doc)) == "hello"
    assert hello.doc["helloOk"] is True
    assert "client" not in hello.doc  # no handshake arguments after the handshake
    assert "maxAwaitTimeMS" not in hello.doc
    assert hello.client_port == handshake.client_port  # the same monitoring connection

    events = heartbeats.wait_for(4)
    assert heartbeats.kinds() == ["started", "succeeded", "started", "succeeded"]
    assert all(event.address == address_of(hello_server) for event in events)
    assert events[1].reply["ok"] == 1
    assert events[3].duration >= 0


def test_legacy_hello_is_used_when_the_server_does_not_say_hello_ok(
    mockupdb_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    reply = hello_reply()
    del reply["helloOk"]
    responder = HelloResponder.install(mockupdb_server, reply)
    monitor, target, _ = start_monitor(address_of(mockupdb_server))
    target.next()
    monitor.request_check()
    target.next()
    responder.next_seen()
    hello = responder.next_seen()
    assert isinstance(hello, OpMsg)
    assert next(iter(hello.doc)) == "isMaster"


def test_checks_repeat_every_heartbeat_frequency(
    hello_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    _, target, heartbeats = start_monitor(
        address_of(hello_server), settings(heartbeat=0.2, minimum=0.05)
    )
    for _ in range(3):
        assert target.next().type is ServerType.STANDALONE
    starts = heartbeats.times(ServerHeartbeatStartedEvent)
    # Each check starts heartbeat_frequency after the previous one ended.
    assert all(later - earlier >= 0.2 for earlier, later in zip(starts[:2], starts[1:3]))


def test_request_check_wakes_the_monitor_but_not_before_the_minimum(
    hello_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    monitor, target, heartbeats = start_monitor(
        address_of(hello_server), settings(heartbeat=600.0, minimum=0.3)
    )
    target.next()
    for _ in range(5):
        monitor.request_check()
    target.next()  # heartbeat_frequency is 600 s: only the request can explain this check
    first, second = heartbeats.times(ServerHeartbeatStartedEvent)[:2]
    assert second - first >= 0.3


def test_requests_during_a_check_are_ignored(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    """server-monitoring.md, "Requesting an immediate check": "If a hello call is
    already in progress, the request MUST be ignored". Kept instead, a request would
    start one more check right after the held one (the broken variant this catches)."""
    monitor, target, heartbeats = start_monitor(
        address_of(hello_server), settings(heartbeat=600.0, minimum=0.05)
    )
    target.next()
    hello_responder.then(HelloResponder.hold)
    monitor.request_check()
    held = receive_request(hello_server)  # the second check waits for this reply
    for _ in range(3):
        monitor.request_check()
    held.replies(hello_reply())
    target.next()
    # heartbeat_frequency is 600 s: a third check could only come from a kept request.
    # Give it ten times the minimum pause to show up.
    with heartbeats._cond:
        third = heartbeats._cond.wait_for(
            lambda: len(heartbeats.times(ServerHeartbeatStartedEvent)) >= 3, 0.5
        )
    assert not third, heartbeats.kinds()


def test_a_request_ignored_during_a_cancelled_check_is_honoured(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    """A cancelled check reports nothing, so a request it made the monitor ignore is
    still owed: without it the monitor would wait a whole heartbeat (600 s here)."""
    monitor, target, _ = start_monitor(
        address_of(hello_server), settings(heartbeat=600.0, minimum=0.05)
    )
    target.next()
    hello_responder.then(HelloResponder.hold)
    monitor.request_check()
    receive_request(hello_server)
    monitor.request_check()  # ignored: a check is in progress
    monitor.cancel_check()
    after = target.next()  # only the owed request can start this check
    assert after.type is ServerType.STANDALONE


def test_cancel_check_abandons_the_check_in_progress(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    monitor, target, heartbeats = start_monitor(address_of(hello_server))
    assert target.next().type is ServerType.STANDALONE
    first_port = hello_responder.next_seen().client_port
    hello_responder.then(HelloResponder.hold)
    monitor.request_check()
    receive_request(hello_server)  # the check is now waiting for this reply
    monitor.cancel_check()
    events = heartbeats.wait_for(4)
    assert heartbeats.kinds()[:4] == ["started", "succeeded", "started", "failed"]
    assert "cancelled" in str(events[3].failure)

    monitor.request_check()
    after = target.next()
    # The cancelled check was never reported: the next report is the new check's.
    assert after.type is ServerType.STANDALONE
    hello_responder.next_seen()  # the held hello
    new_handshake = hello_responder.next_seen()
    assert isinstance(new_handshake, Command)  # on a new connection
    assert new_handshake.client_port != first_port


def test_a_network_error_of_a_known_server_is_reported_then_retried_at_once(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    monitor, target, heartbeats = start_monitor(address_of(hello_server))
    assert target.next().type is ServerType.STANDALONE
    hello_responder.then(HelloResponder.hang_up)
    monitor.request_check()
    assert target.next().type is ServerType.UNKNOWN  # reported at once: the pool is cleared
    # The retry comes at once (no request, no heartbeat: the heartbeat is 600 s here).
    assert target.next().type is ServerType.STANDALONE
    events = heartbeats.wait_for(6)
    assert heartbeats.kinds() == [
        "started",
        "succeeded",
        "started",
        "failed",
        "started",  # the retry, on a new connection
        "succeeded",
    ]
    assert isinstance(events[3].failure, NetworkError)
    # Each monitoring connection has its own id, in the events of its heartbeats.
    assert [e.driver_connection_id for e in events] == [1, 1, 1, 1, 2, 2]
    assert events[0].server_connection_id is None  # its handshake has not answered yet
    assert events[1].server_connection_id == events[1].reply.get("connectionId")


def test_a_second_failure_marks_the_server_unknown_and_monitoring_goes_on(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    monitor, target, heartbeats = start_monitor(address_of(hello_server))
    assert target.next().type is ServerType.STANDALONE
    hello_responder.then(HelloResponder.hang_up, HelloResponder.hang_up)
    monitor.request_check()
    unknown = target.next()
    assert unknown.type is ServerType.UNKNOWN
    assert unknown.round_trip_time is None
    assert str(address_of(hello_server)) in (unknown.error or "")
    assert "connection closed by the server" in (unknown.error or "")
    assert target.next().type is ServerType.UNKNOWN  # the immediate retry failed too
    assert heartbeats.kinds() == ["started", "succeeded", "started", "failed", "started", "failed"]
    assert monitor.round_trip_time.average is None  # reset by the failure

    monitor.request_check()
    assert target.next().type is ServerType.STANDALONE


def test_an_unknown_server_is_not_retried(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    hello_responder.then(HelloResponder.hang_up)
    monitor, target, heartbeats = start_monitor(address_of(hello_server))
    assert target.next().type is ServerType.UNKNOWN
    # The report follows a single attempt: a retry would have come before it.
    assert heartbeats.kinds() == ["started", "failed"]
    monitor.request_check()
    assert target.next().type is ServerType.STANDALONE


def test_a_server_that_refuses_connections_is_unknown(start_monitor: MonitorFactory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _, target, heartbeats = start_monitor(Address("127.0.0.1", port))
    unknown = target.next()
    assert unknown.type is ServerType.UNKNOWN
    assert f"127.0.0.1:{port}" in (unknown.error or "")
    events = heartbeats.wait_for(2)
    assert isinstance(events[1].failure, NetworkError)


# --- hostile servers -----------------------------------------------------------------


def _reply_with(make: Callable[[Any], bytes], hang_up: bool = False) -> Callable[[Any], bool]:
    def action(request: Any) -> bool:
        request.replies(RawReply(make(request)))
        if hang_up:
            request.hangup()
        return True

    return action


def _header(length: int, response_to: int, op_code: int = 1) -> bytes:
    return struct.pack("<iiii", length, 99, response_to, op_code)


def _bad_hello() -> dict[str, Any]:
    return hello_reply(hosts=5)


FAULTS = [
    pytest.param(
        _reply_with(lambda r: b"garbage!" * 8), "exceeds the maximum message size", id="garbage"
    ),
    pytest.param(
        _reply_with(lambda r: _header(2**31 - 1, r.request_id)),
        "exceeds the maximum message size",
        id="2GiB-length",
    ),
    pytest.param(
        _reply_with(lambda r: _header(200, r.request_id) + b"\x00" * 30, hang_up=True),
        "connection closed by the server",
        id="closed-mid-reply",
    ),
    pytest.param(
        _reply_with(lambda r: encode_op_msg(hello_reply(), 5, response_to=r.request_id)),
        "expected an OP_REPLY",
        id="wrong-opcode",
    ),
    pytest.param(
        HelloResponder.answer({"ok": 0, "errmsg": "node is recovering", "code": 91}),
        "node is recovering",
        id="ok-0",
    ),
    pytest.param(HelloResponder.answer(_bad_hello()), "hosts", id="invalid-hello-fields"),
    pytest.param(HelloResponder.hold, "timed out", id="never-answers"),
]


@pytest.mark.parametrize(("fault", "expected"), FAULTS)
def test_hostile_servers_give_unknown_with_a_readable_error(
    hello_server: MockupDB,
    hello_responder: HelloResponder,
    start_monitor: MonitorFactory,
    fault: Callable[[Any], bool],
    expected: str,
) -> None:
    hello_responder.then(fault)
    # A short timeout only where the server never answers; elsewhere a generous one.
    connect_timeout = 0.5 if expected == "timed out" else 10.0
    monitor, target, heartbeats = start_monitor(
        address_of(hello_server), settings(connect_timeout=connect_timeout)
    )
    unknown = target.next()
    assert unknown.type is ServerType.UNKNOWN
    assert expected in (unknown.error or ""), unknown.error
    # Only a timeout clears the pool interrupting the connections in use.
    assert any(d is unknown for d in target.interrupting) == (expected == "timed out")
    events = heartbeats.wait_for(2)
    assert isinstance(events[1], ServerHeartbeatFailedEvent)
    if expected == "timed out":
        assert isinstance(events[1].failure, NetworkTimeout)
    # The thread lives on: the next check succeeds.
    monitor.request_check()
    assert target.next().type is ServerType.STANDALONE


def test_a_failing_target_does_not_stop_the_monitor(
    hello_server: MockupDB, start_monitor: MonitorFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Catches a monitor that only logs (at DEBUG) an outcome its topology could not
    take: the topology would keep its last description for good. The failure is
    logged at ERROR with its traceback and the server reported Unknown with it."""
    calls: list[ServerDescription] = []

    def explode(description: ServerDescription) -> None:
        calls.append(description)
        if len(calls) == 1:
            raise RuntimeError("topology bug")

    with caplog.at_level(logging.ERROR, logger="mongocore.monitor"):
        monitor, target, _ = start_monitor(address_of(hello_server), target=Target(explode))
        assert target.next().type is ServerType.STANDALONE
        unknown = target.next()
    assert unknown.type is ServerType.UNKNOWN
    assert "could not be applied" in (unknown.error or "") and "topology bug" in (
        unknown.error or ""
    )
    records = [r for r in caplog.records if r.name == "mongocore.monitor"]
    assert records and records[0].levelno == logging.ERROR and records[0].exc_info is not None
    monitor.request_check()
    assert target.next().type is ServerType.STANDALONE


def test_a_bug_in_the_check_is_logged_loudly_and_reports_unknown(
    hello_server: MockupDB, caplog: pytest.LogCaptureFixture
) -> None:
    """Catches a monitor loop whose catch-all logs at DEBUG and leaves the topology on
    the last description: the error is logged at ERROR with its traceback, the server
    reported Unknown with it, and monitoring goes on."""
    target = Target()
    monitor = Monitor(address_of(hello_server), target, settings())
    real_check = monitor._check
    failures = iter([RuntimeError("check bug")])

    def check_with_a_bug(previous: ServerDescription) -> Any:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_check(previous)

    monitor._check = check_with_a_bug  # type: ignore[method-assign]
    try:
        with caplog.at_level(logging.ERROR, logger="mongocore.monitor"):
            monitor.open()
            unknown = target.next()
        assert unknown.type is ServerType.UNKNOWN
        assert "internal error in the monitor" in (unknown.error or "")
        assert "check bug" in (unknown.error or "")
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert errors and errors[0].exc_info is not None
        monitor.request_check()
        assert target.next().type is ServerType.STANDALONE
    finally:
        monitor.close()


# --- closing -------------------------------------------------------------------------


def test_close_is_prompt_while_a_handshake_is_blocked(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    hello_responder.then(HelloResponder.hold)
    monitor, target, heartbeats = start_monitor(
        address_of(hello_server),
        settings(connect_timeout=None),  # no timeout at all
    )
    receive_request(hello_server)  # the handshake is waiting, forever
    Background(monitor.close).result()
    assert not any(t.name.startswith("mongocore-monitor-") for t in threading.enumerate())
    assert heartbeats.kinds() == ["started", "failed"]
    assert target.reports.empty()  # a cancelled check is not reported


def test_close_from_the_target_callback(
    hello_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    holder: list[Monitor] = []
    closed = threading.Event()

    def close_monitor(description: ServerDescription) -> None:
        holder[0].close()  # the topology removed this server
        closed.set()

    monitor, _, _ = start_monitor(address_of(hello_server), target=Target(close_monitor))
    holder.append(monitor)
    assert closed.wait(DEADLINE)
    monitor.close()  # joins the thread, which stops by itself


def test_close_before_open_and_open_after_close(hello_server: MockupDB) -> None:
    monitor = Monitor(address_of(hello_server), Target(), settings())
    monitor.close()
    monitor.open()  # nothing happens after close()
    monitor.close()
    assert not any(t.name.startswith("mongocore-monitor-") for t in threading.enumerate())


# --- streaming -----------------------------------------------------------------------


def test_streaming_protocol_reads_more_to_come_replies(
    mockupdb_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    process = ObjectId()
    responder = HelloResponder.install(
        mockupdb_server, hello_reply(topologyVersion=topology_version(process, 0))
    )
    address = address_of(mockupdb_server)
    monitor, target, heartbeats = start_monitor(address, settings(mode="stream"))
    first = target.next()
    assert first.topology_version == TopologyVersion(process, 0)

    awaitable = receive_request(mockupdb_server)
    assert isinstance(awaitable, OpMsg)
    assert awaitable.flags & EXHAUST_ALLOWED
    assert next(iter(awaitable.doc)) == "hello"
    assert awaitable.doc["topologyVersion"] == {"processId": process, "counter": 0}
    assert awaitable.doc["maxAwaitTimeMS"] == 600_000
    assert isinstance(awaitable.doc["maxAwaitTimeMS"], Int64)
    assert "client" not in awaitable.doc

    for counter in (1, 2):
        streamed = hello_reply(topologyVersion=topology_version(process, counter))
        awaitable.replies(OpMsgReply(streamed, flags=MORE_TO_COME))
        assert target.next().topology_version == TopologyVersion(process, counter)
    awaitable.replies(OpMsgReply(hello_reply(topologyVersion=topology_version(process, 3))))
    streamed_last = target.next()
    assert streamed_last.topology_version == TopologyVersion(process, 3)
    assert streamed_last.round_trip_time is not None

    # The stream ended without moreToCome: a new awaitable hello from the last version.
    next_awaitable = receive_request(mockupdb_server)
    assert next_awaitable.doc["topologyVersion"] == {"processId": process, "counter": 3}
    assert next_awaitable.client_port == awaitable.client_port

    heartbeats.wait_for(9)
    assert heartbeats.kinds() == [
        "started",
        "succeeded",
        *["started(awaited)", "succeeded(awaited)"] * 3,
        "started(awaited)",
    ]

    # The RTT thread measures on a connection of its own.
    handshakes = [responder.next_seen(), responder.next_seen()]
    assert all("client" in request.doc for request in handshakes)
    assert handshakes[0].client_port != handshakes[1].client_port
    assert [t.name for t in rtt_threads()] == [f"mongocore-rtt-{address}"]

    # Closing interrupts the monitor blocked on the awaitable hello, and joins the RTT thread.
    Background(monitor.close).result()
    assert rtt_threads() == []


def test_streaming_error_is_retried_and_streaming_resumes(
    mockupdb_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    process = ObjectId()
    HelloResponder.install(mockupdb_server, hello_reply(topologyVersion=topology_version(process)))
    _, target, heartbeats = start_monitor(address_of(mockupdb_server), settings(mode="stream"))
    target.next()
    receive_request(mockupdb_server).hangup()
    assert target.next().type is ServerType.UNKNOWN  # reported at once
    after = target.next()
    assert after.type is ServerType.STANDALONE  # the immediate retry succeeded
    resumed = receive_request(mockupdb_server)
    assert "maxAwaitTimeMS" in resumed.doc
    kinds = heartbeats.kinds()
    assert kinds[:6] == [
        "started",
        "succeeded",
        "started(awaited)",
        "failed(awaited)",
        "started",
        "succeeded",
    ]


def test_awaitable_hello_times_out_after_connect_timeout_plus_heartbeat(
    mockupdb_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    process = ObjectId()
    HelloResponder.install(mockupdb_server, hello_reply(topologyVersion=topology_version(process)))
    _, target, heartbeats = start_monitor(
        address_of(mockupdb_server),
        settings(mode="stream", heartbeat=0.5, minimum=0.05, connect_timeout=2.0),
    )
    target.next()
    receive_request(mockupdb_server)  # never answered: times out after 2.5 s
    events = heartbeats.wait_for(4)
    assert isinstance(events[3], ServerHeartbeatFailedEvent)
    assert events[3].awaited
    assert isinstance(events[3].failure, NetworkTimeout)
    assert target.next().type is ServerType.UNKNOWN  # reported at once
    assert target.next().type is ServerType.STANDALONE  # retried on a new connection


def test_a_server_answering_awaitable_hellos_at_once_cannot_make_the_monitor_spin(
    mockupdb_server: MockupDB, start_monitor: MonitorFactory
) -> None:
    process = ObjectId()
    same = hello_reply(topologyVersion=topology_version(process))
    HelloResponder.install(mockupdb_server, same)
    _, target, heartbeats = start_monitor(
        address_of(mockupdb_server), settings(mode="stream", minimum=0.2)
    )
    target.next()
    for _ in range(3):
        receive_request(mockupdb_server).replies(dict(same))
        target.next()
    starts = heartbeats.times(ServerHeartbeatStartedEvent, awaited=True)
    assert all(later - earlier >= 0.2 for earlier, later in zip(starts[:2], starts[1:3]))


def test_poll_mode_never_streams(mockupdb_server: MockupDB, start_monitor: MonitorFactory) -> None:
    responder = HelloResponder.install(
        mockupdb_server, hello_reply(topologyVersion=topology_version())
    )
    monitor, target, heartbeats = start_monitor(address_of(mockupdb_server), settings(mode="poll"))
    target.next()
    monitor.request_check()
    target.next()
    responder.next_seen()
    hello = responder.next_seen()
    assert "maxAwaitTimeMS" not in hello.doc
    assert not hello.flags & EXHAUST_ALLOWED
    assert rtt_threads() == []
    assert heartbeats.kinds() == ["started", "succeeded", "started", "succeeded"]


def test_stream_mode_polls_a_server_without_topology_version(
    hello_server: MockupDB, hello_responder: HelloResponder, start_monitor: MonitorFactory
) -> None:
    monitor, target, _ = start_monitor(address_of(hello_server), settings(mode="stream"))
    target.next()
    monitor.request_check()
    target.next()
    hello_responder.next_seen()
    assert "maxAwaitTimeMS" not in hello_responder.next_seen().doc
    assert rtt_threads() == []


def test_auto_mode_polls_on_faas_platforms(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_EXECUTION_ENV", "AWS_LAMBDA_RUNTIME_API", "FUNCTIONS_WORKER_RUNTIME"):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("K_SERVICE", "FUNCTION_NAME", "VERCEL"):
        monkeypatch.delenv(variable, raising=False)
    address = Address("127.0.0.1", 1)
    assert Monitor(address, Target(), settings(mode="auto")).streaming
    monkeypatch.setenv("AWS_EXECUTION_ENV", "AWS_Lambda_python3.12")
    assert not Monitor(address, Target(), settings(mode="auto")).streaming
    assert Monitor(address, Target(), settings(mode="stream")).streaming
    assert not Monitor(address, Target(), settings(mode="poll")).streaming
    assert not streaming_enabled("auto", {"FUNCTIONS_WORKER_RUNTIME": "python"})
    assert streaming_enabled("auto", {"AWS_EXECUTION_ENV": "EC2"})


# --- settings ------------------------------------------------------------------------


def test_monitor_settings() -> None:
    options = ClientOptions.from_uri(
        "mongodb://h/?heartbeatFrequencyMS=2500&connectTimeoutMS=1000&serverMonitoringMode=poll"
    )
    monitor_settings = MonitorSettings.from_options(options)
    assert monitor_settings.heartbeat_frequency == 2.5
    assert monitor_settings.server_monitoring_mode == "poll"
    assert monitor_settings.connection.connect_timeout == 1.0
    assert monitor_settings.streaming_timeout == 3.5
    assert settings(connect_timeout=None).streaming_timeout is None
    with pytest.raises(ValueError, match="serverMonitoringMode"):
        MonitorSettings(server_monitoring_mode="push")
    with pytest.raises(ValueError, match="min_heartbeat_frequency"):
        MonitorSettings(heartbeat_frequency=0.1)
