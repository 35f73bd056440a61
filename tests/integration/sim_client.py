"""Helpers for running the Client against the simulated deployment: event recorders and
a client factory. Tests wait on these recorders' conditions, never on sleeps."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable, Optional

from mongocore.api.client import Client
from mongocore.core.events import (
    CommandFailedEvent,
    CommandListener,
    CommandStartedEvent,
    CommandSucceededEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionPoolListener,
)

#: Generous: every wait ends as soon as its condition holds.
DEADLINE = 20.0
#: Short heartbeats keep rediscovery after an error quick.
FAST: dict[str, Any] = {"heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 20_000}

CommandEvent = Any


class Recorder(CommandListener, ConnectionPoolListener):
    """Records command events (and a few pool events) in order, under a condition."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.events: list[Any] = []
        self.checkouts_started = 0
        self.checkout_failures: list[ConnectionCheckOutFailedEvent] = []
        #: Called on the operation's thread for each failed event, before any retry.
        self.on_failed: Optional[Callable[[CommandFailedEvent], None]] = None
        #: Called on the operation's thread for each succeeded event.
        self.on_succeeded: Optional[Callable[[CommandSucceededEvent], None]] = None

    # --- listener methods ---------------------------------------------------------------

    def _add(self, event: CommandEvent) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def started(self, event: CommandStartedEvent) -> None:
        self._add(event)

    def succeeded(self, event: CommandSucceededEvent) -> None:
        self._add(event)
        if self.on_succeeded is not None:
            self.on_succeeded(event)

    def failed(self, event: CommandFailedEvent) -> None:
        self._add(event)
        if self.on_failed is not None:
            self.on_failed(event)

    def connection_check_out_started(self, event: ConnectionCheckOutStartedEvent) -> None:
        with self.cond:
            self.checkouts_started += 1
            self.cond.notify_all()

    def connection_check_out_failed(self, event: ConnectionCheckOutFailedEvent) -> None:
        with self.cond:
            self.checkout_failures.append(event)
            self.cond.notify_all()

    # --- queries ------------------------------------------------------------------------

    def clear(self) -> None:
        with self.cond:
            self.events.clear()

    def of(self, kind: type, name: Optional[str] = None) -> list[Any]:
        with self.cond:
            return [
                e
                for e in self.events
                if isinstance(e, kind)
                and (name is None or getattr(e, "command_name", None) == name)
            ]

    def started_of(self, name: str) -> list[CommandStartedEvent]:
        return self.of(CommandStartedEvent, name)

    def failed_of(self, name: str) -> list[CommandFailedEvent]:
        return self.of(CommandFailedEvent, name)

    def succeeded_of(self, name: str) -> list[CommandSucceededEvent]:
        return self.of(CommandSucceededEvent, name)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = DEADLINE) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                raise AssertionError("the awaited events never came")


@contextmanager
def sim_client(uri: str, recorder: Optional[Recorder] = None, **options: Any) -> Iterator[Client]:
    """A Client with fast heartbeats (and ``recorder`` as its listener), always closed."""
    settings = {**FAST, **options}
    listeners = [recorder] if recorder is not None else []
    client = Client(uri, event_listeners=listeners, **settings)
    try:
        yield client
    finally:
        client.close()


def wait_for_topology(client: Client, predicate: Callable[[Any], bool]) -> None:
    """Wait on the topology's own condition until its description satisfies ``predicate``."""
    topology = client.topology
    with topology._condition:
        if not topology._condition.wait_for(
            lambda: predicate(topology.description), timeout=DEADLINE
        ):
            raise AssertionError(f"never reached: {topology.description!r}")


def run_in_thread(target: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``target`` in a thread; the returned function joins it and returns its result
    (or raises its exception)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = target()
        except BaseException as exc:  # handed to the joining thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="test-operation")
    thread.start()

    def join() -> Any:
        thread.join(DEADLINE)
        if thread.is_alive():
            raise AssertionError("the operation did not finish")
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    return join


def configure_fail_point(client: Client, mode: Any, data: dict[str, Any]) -> dict[str, Any]:
    """Configure the simulated server's failCommand fail point through ``client``."""
    command = {"configureFailPoint": "failCommand", "mode": mode, "data": data}
    return client.command("admin", command)
