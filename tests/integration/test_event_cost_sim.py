"""Events cost nothing without listeners: no event object is ever built.

A client with no listeners discovers a simulated standalone, runs commands that
succeed, fail and page through a cursor, and closes: not one SDAM, heartbeat, pool
(CMAP) or command event is constructed on the way. With a command listener only
the command events are built, which shows the count sees constructions at all.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from mongocore import MongoClient
from mongocore.api.client import Client
from mongocore.core import events
from mongocore.core.events import CommandListener
from mongocore.errors import OperationFailure
from mongocore.sim import Standalone

EVENT_CLASSES = [
    value
    for name, value in vars(events).items()
    if isinstance(value, type) and name.endswith("Event") and value.__module__ == events.__name__
]


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts each event class's constructions while the test runs."""
    counts: Counter[str] = Counter()

    def counting_new(cls: type, *args: Any, **kwargs: Any) -> Any:
        counts[cls.__name__] += 1
        return object.__new__(cls)

    for cls in EVENT_CLASSES:
        monkeypatch.setattr(cls, "__new__", staticmethod(counting_new))
    return counts


@pytest.fixture
def deployment() -> Iterator[Standalone]:
    with Standalone() as standalone:
        yield standalone


@pytest.fixture(autouse=True)
def quiet_loggers(caplog: pytest.LogCaptureFixture) -> None:
    # Enabled DEBUG loggers subscribe listeners of their own (structured logging).
    caplog.set_level(logging.WARNING, logger="mongocore")


def _work(client: Client) -> None:
    client.admin.command("ping")
    collection = client.db.things
    collection.insert_many([{"_id": i} for i in range(5)])
    assert collection.find_one({"_id": 3}) == {"_id": 3}
    assert len(list(collection.find({}, batch_size=2))) == 5  # getMores too
    with pytest.raises(OperationFailure):
        client.admin.command("noSuchCommand")


def test_no_listener_builds_no_event(deployment: Standalone, built: Counter[str]) -> None:
    assert len(EVENT_CLASSES) >= 20  # every family is counted
    with MongoClient(deployment.uri, heartbeatFrequencyMS=500) as client:
        _work(client)
    assert built == Counter()


def test_a_command_listener_gets_command_events_only(
    deployment: Standalone, built: Counter[str]
) -> None:
    seen: list[object] = []

    class Commands(CommandListener):
        def started(self, event: events.CommandStartedEvent) -> None:
            seen.append(event)

    with MongoClient(deployment.uri, event_listeners=[Commands()]) as client:
        _work(client)
    assert seen and built["CommandStartedEvent"] == len(seen)
    assert built["CommandSucceededEvent"] >= 4 and built["CommandFailedEvent"] == 1
    families = {name for name in built if not name.startswith("Command")}
    assert families == set()
