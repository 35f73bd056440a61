"""Runner for the CMAP spec's pool tests (connection-monitoring-and-pooling/tests/cmap-format).

Each JSON file is one test, run against mongocore.io.pool.Pool with a fake connection
factory, as the format's README allows for unit tests ("Drivers MAY use a mock connection
class"). Operations named with a ``thread`` run on real threads; ``waitForThread`` joins
the thread and re-raises its error on the main thread. ``wait`` sleeps: it is the
format's own operation (time passing is what those tests are about, e.g. maxIdleTimeMS),
never used here to synchronize. Tests of style "integration" (a ``failPoint`` on a live
server, ``runOn`` server versions) run against the simulated MongoDB 7.0 standalone
(``mongocore.sim``) with real connections and the test's fail point.

Matching follows the README's MATCH (42 means "any value"), with one reading: an
expected error ``message`` must begin the actual message, since mongocore's messages go
on to name the pool's address and what to do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import pytest

from mongocore.core.address import Address
from mongocore.core.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    ConnectionPoolListener,
    ConnectionReadyEvent,
    EventPublisher,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
)
from mongocore.errors import PoolClearedError, PoolClosedError, WaitQueueTimeoutError
from mongocore.io.connection import Connection, connect
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.establishment import Cancellation
from mongocore.io.pool import Pool
from mongocore.io.pool_options import pool_options_from_mapping
from mongocore.sim import Standalone
from tests.fake_connection import FakeConnection
from tests.spec import deviations, specdata
from tests.spec.format_keys import UncheckedKey, check_keys
from tests.spec.unified.cases import parse_version
from tests.spec.unified.deployments import SERVER_VERSION

SUITE = "connection-monitoring-and-pooling/tests/cmap-format"

#: How long waitForEvent waits when the test names no timeout, and how long a test
#: thread may take to finish: generous, since only a broken pool ever needs it.
DEFAULT_WAIT = 10.0

EVENT_NAMES: dict[type, str] = {
    PoolCreatedEvent: "ConnectionPoolCreated",
    PoolReadyEvent: "ConnectionPoolReady",
    PoolClearedEvent: "ConnectionPoolCleared",
    PoolClosedEvent: "ConnectionPoolClosed",
    ConnectionCreatedEvent: "ConnectionCreated",
    ConnectionReadyEvent: "ConnectionReady",
    ConnectionClosedEvent: "ConnectionClosed",
    ConnectionCheckOutStartedEvent: "ConnectionCheckOutStarted",
    ConnectionCheckOutFailedEvent: "ConnectionCheckOutFailed",
    ConnectionCheckedOutEvent: "ConnectionCheckedOut",
    ConnectionCheckedInEvent: "ConnectionCheckedIn",
}

ERROR_TYPES: dict[str, type[BaseException]] = {
    "WaitQueueTimeoutError": WaitQueueTimeoutError,
    "PoolClosedError": PoolClosedError,
    "PoolClearedError": PoolClearedError,
}

# The format's keys (the cmap-format README: "Common Test Format", "Unit Test Format",
# "Integration Test Format").
FILE_KEYS = (
    "version",
    "style",
    "description",
    "poolOptions",
    "operations",
    "error",
    "events",
    "ignore",
    "runOn",
    "failPoint",
)
ERROR_KEYS = ("type", "message", "address")
RUN_ON_KEYS = ("minServerVersion", "maxServerVersion")
#: Each operation's fields besides ``name`` and ``thread``, which all take.
OPERATION_KEYS: dict[str, tuple[str, ...]] = {
    "start": ("target",),
    "wait": ("ms",),
    "waitForThread": ("target",),
    "waitForEvent": ("event", "count", "timeout"),
    "checkOut": ("label",),
    "checkIn": ("connection",),
    "clear": ("interruptInUseConnections",),
    "close": (),
    "ready": (),
}

FIELD_NAMES = {
    "connection_id": "connectionId",
    "service_id": "serviceId",
    "interrupt_in_use_connections": "interruptInUseConnections",
}


def fake_connect(address: Address, generation: int, connection_id: int) -> FakeConnection:
    return FakeConnection(connection_id, generation)


class EventRecorder(ConnectionPoolListener):
    """Records every pool event in order; lets a thread wait for a count of one type."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self._cond = threading.Condition()

    def _record(self, event: object) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def snapshot(self) -> list[object]:
        with self._cond:
            return list(self.events)

    def count(self, name: str) -> int:
        return sum(1 for e in self.events if EVENT_NAMES[type(e)] == name)

    def wait_for(self, name: str, count: int, timeout: float) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self.count(name) >= count, timeout):
                seen = [EVENT_NAMES[type(e)] for e in self.events]
                pytest.fail(
                    f"waitForEvent: {count} {name} event(s) expected within {timeout:g} s, "
                    f"{self.count(name)} seen; all events: {seen}"
                )

    def pool_created(self, event: PoolCreatedEvent) -> None:
        self._record(event)

    def pool_ready(self, event: PoolReadyEvent) -> None:
        self._record(event)

    def pool_cleared(self, event: PoolClearedEvent) -> None:
        self._record(event)

    def pool_closed(self, event: PoolClosedEvent) -> None:
        self._record(event)

    def connection_created(self, event: ConnectionCreatedEvent) -> None:
        self._record(event)

    def connection_ready(self, event: ConnectionReadyEvent) -> None:
        self._record(event)

    def connection_closed(self, event: ConnectionClosedEvent) -> None:
        self._record(event)

    def connection_check_out_started(self, event: ConnectionCheckOutStartedEvent) -> None:
        self._record(event)

    def connection_check_out_failed(self, event: ConnectionCheckOutFailedEvent) -> None:
        self._record(event)

    def connection_checked_out(self, event: ConnectionCheckedOutEvent) -> None:
        self._record(event)

    def connection_checked_in(self, event: ConnectionCheckedInEvent) -> None:
        self._record(event)


class Worker(threading.Thread):
    """A test thread ("start"): runs the operations given to it, in order, until stopped.
    After an operation raised, it keeps the error and runs nothing more."""

    def __init__(self, target: str, runner: Runner) -> None:
        super().__init__(name=f"cmap-test-{target}")
        self.runner = runner
        self.ops: queue.Queue[Optional[Mapping[str, Any]]] = queue.Queue()
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        while True:
            op = self.ops.get()
            if op is None:
                return
            if self.error is not None:
                continue
            try:
                self.runner.execute(op)
            except BaseException as exc:
                self.error = exc

    def stop(self) -> None:
        self.ops.put(None)


class Runner:
    def __init__(self, test: Mapping[str, Any], server: Optional[Standalone] = None) -> None:
        options = dict(test.get("poolOptions", {}))
        app_name = options.pop("appName", None)
        interval_ms = options.pop("backgroundThreadIntervalMS", None)
        if interval_ms is None:
            interval: Optional[float] = 1.0
        elif interval_ms < 0:
            interval = None  # "never begin a Run"
        else:
            interval = interval_ms / 1000.0
        self.recorder = EventRecorder()
        address: Address = Address("localhost", 27017)
        connect_fn: Any = fake_connect
        if server is not None:
            # Integration style: real connections (handshake included) to the simulator.
            address = Address(*server.member.address)
            settings = ConnectionSettings(connect_timeout=10.0, app_name=app_name)

            def connect_fn(
                address: Address,
                generation: int,
                connection_id: int,
                cancellation: Optional[Cancellation] = None,
            ) -> Connection:
                return connect(
                    address,
                    settings,
                    generation=generation,
                    connection_id=connection_id,
                    cancellation=cancellation,
                )

        self.pool = Pool(
            address,
            connect_fn,
            pool_options_from_mapping(options),
            EventPublisher([self.recorder]),
            maintenance_interval=interval,
            cancellation_factory=Cancellation if server is not None else None,
            # The pool's owner (SDAM) clears the pool when a background connection fails,
            # as the Client does ("MongoDB Handshake errors").
            on_establish_error=lambda exc, generation: self.pool.clear(),
        )
        self.threads: dict[str, Worker] = {}
        self.labels: dict[str, Any] = {}

    def execute(self, op: Mapping[str, Any]) -> None:
        name = op["name"]
        if name not in OPERATION_KEYS:
            raise UncheckedKey(f"unknown operation {name!r}")
        check_keys(f"operation {name}", op, ("name", "thread", *OPERATION_KEYS[name]))
        if name == "checkOut":
            conn = self.pool.check_out()
            if "label" in op:
                self.labels[op["label"]] = conn
        elif name == "checkIn":
            self.pool.check_in(self.labels[op["connection"]])
        elif name == "clear":
            self.pool.clear(interrupt_in_use_connections=op.get("interruptInUseConnections", False))
        elif name == "close":
            self.pool.close()
        elif name == "ready":
            self.pool.ready()
        elif name == "wait":
            time.sleep(op["ms"] / 1000.0)
        elif name == "waitForEvent":
            timeout = op["timeout"] / 1000.0 if "timeout" in op else DEFAULT_WAIT
            self.recorder.wait_for(op["event"], op["count"], timeout)
        elif name == "start":
            worker = Worker(op["target"], self)
            self.threads[op["target"]] = worker
            worker.start()
        elif name == "waitForThread":
            worker = self.threads[op["target"]]
            worker.stop()
            worker.join(DEFAULT_WAIT)
            if worker.is_alive():
                pytest.fail(f"thread {op['target']} did not finish within {DEFAULT_WAIT:g} s")
            if worker.error is not None:
                raise worker.error

    def run(self, operations: Sequence[Mapping[str, Any]]) -> Optional[Exception]:
        """Run the operations; return the main thread's error, if one stopped it."""
        for op in operations:
            try:
                if "thread" in op:
                    self.threads[op["thread"]].ops.put(op)
                else:
                    self.execute(op)
            except Exception as exc:
                return exc
        return None

    def shut_down(self) -> None:
        """Close the pool (which fails any checkOut still waiting) and join every thread."""
        self.pool.close()
        for worker in self.threads.values():
            worker.stop()
        for target, worker in self.threads.items():
            worker.join(DEFAULT_WAIT)
            assert not worker.is_alive(), f"thread {target} still running after the test"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def assert_matches(actual: object, expected: object, path: str) -> None:
    """The README's MATCH: ``expected`` is a subset of ``actual``; 42 means any value."""
    if expected in (42, "42"):
        assert actual is not None, f"{path}: expected a value, found none"
        return
    assert _json_type(actual) == _json_type(expected), (
        f"{path}: expected {expected!r}, found {actual!r}"
    )
    if isinstance(expected, list):
        assert isinstance(actual, (list, tuple))
        for i, value in enumerate(expected):
            assert i < len(actual), f"{path}[{i}]: missing"
            assert_matches(actual[i], value, f"{path}[{i}]")
    elif isinstance(expected, Mapping):
        assert isinstance(actual, Mapping)
        for key, value in expected.items():
            assert_matches(actual.get(key), value, f"{path}.{key}")
    else:
        assert actual == expected, f"{path}: expected {expected!r}, found {actual!r}"


def event_document(event: object) -> dict[str, Any]:
    """An event as the format spells it: its type name and camelCase fields."""
    doc: dict[str, Any] = {"type": EVENT_NAMES[type(event)]}
    for f in dataclasses.fields(event):  # type: ignore[arg-type]
        value = getattr(event, f.name)
        doc[FIELD_NAMES.get(f.name, f.name)] = str(value) if f.name == "address" else value
    return doc


def assert_error(error: Optional[Exception], expected: Mapping[str, Any]) -> None:
    assert error is not None, f"expected the main thread to raise {expected}, nothing raised"
    check_keys("error", expected, ERROR_KEYS)
    if expected.get("type") not in ERROR_TYPES:
        raise UncheckedKey(f"error type {expected.get('type')!r}; known: {sorted(ERROR_TYPES)}")
    kind = ERROR_TYPES[expected["type"]]
    if not isinstance(error, kind):
        raise AssertionError(f"expected {expected['type']}, got {error!r}") from error
    if "message" in expected:
        assert str(error).startswith(expected["message"]), (
            f"error message {str(error)!r} does not begin with {expected['message']!r}"
        )
    if "address" in expected:
        assert_matches(str(getattr(error, "address", None)), expected["address"], "error.address")


def run_on_satisfied(test: Mapping[str, Any]) -> bool:
    """``runOn``: one of its requirements holds for the simulated MongoDB 7.0 (none
    given: every server)."""
    requirements = test.get("runOn")
    if not requirements:
        return True
    for requirement in requirements:
        check_keys("runOn", requirement, RUN_ON_KEYS)
    return any(
        parse_version(r.get("minServerVersion", "0"))
        <= SERVER_VERSION
        <= parse_version(r.get("maxServerVersion", "99999"))
        for r in requirements
    )


def needs_server(test: Mapping[str, Any]) -> bool:
    return test.get("style") == "integration" or "failPoint" in test or "runOn" in test


@contextlib.contextmanager
def server_for(test: Mapping[str, Any]) -> Iterator[Optional[Standalone]]:
    """The simulated MongoDB 7.0 standalone for an integration test, its fail point set."""
    if not needs_server(test):
        yield None
        return
    with Standalone() as server:
        fail_point = test.get("failPoint")
        if fail_point is not None:
            server.member.configure_fail_point(
                fail_point["configureFailPoint"], fail_point["mode"], fail_point.get("data")
            )
        yield server


@pytest.mark.parametrize("path", specdata.json_files(SUITE))
def test_cmap(path: Path) -> None:
    test = specdata.load(path)
    check_keys(path.name, test, FILE_KEYS)
    test_id = path.stem
    not_applicable = deviations.not_applicable(SUITE, test, test, test_id)
    if not_applicable is not None:
        pytest.skip(not_applicable["reason"])
    if not run_on_satisfied(test):
        raise AssertionError(
            f"the simulated MongoDB 7.0 satisfies no runOn requirement {test['runOn']} and "
            "specs/deviations.toml has no [[not_applicable]] entry for the test"
        )

    with server_for(test) as server:
        runner = Runner(test, server)
        try:
            error = runner.run(test["operations"])
            events = runner.recorder.snapshot()
        finally:
            runner.shut_down()

    if "error" in test:
        assert_error(error, test["error"])
    elif error is not None:
        raise error

    ignore = set(test.get("ignore", ()))
    actual = [event_document(e) for e in events if EVENT_NAMES[type(e)] not in ignore]
    expected_events = test["events"]
    for i, expected in enumerate(expected_events):
        assert i < len(actual), (
            f"event {i}: expected {expected}, but only {len(actual)} events: {actual}"
        )
        try:
            assert_matches(actual[i], expected, f"events[{i}]")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nexpected: {expected_events}\nactual: {actual}") from None
