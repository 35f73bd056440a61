"""Listeners written for pymongo's events work with mongocore's: the pymongo names.

mongocore's events keep the specifications' names (``address``, ``duration`` in
seconds, ``TopologyOpeningEvent``) and answer to pymongo's as well. The rule checked
here: every attribute pymongo's event of the same name has, and every public name of
``pymongo.monitoring``, exists in mongocore, but for the knowing differences of
docs/from-pymongo.md ("Monitoring events").
"""

from __future__ import annotations

import inspect

import pymongo.monitoring as pymongo_monitoring
import pytest

from mongocore import monitoring
from mongocore.api import listener_registry
from mongocore.api.client import Client
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from tests.unit.test_pymongo_surface import public_names

A = Address("a", 27017)

#: docs/from-pymongo.md, "Monitoring events": the name pymongo.monitoring has that
#: mongocore.monitoring does not.
NOT_PROVIDED = {"TopologyEvent"}


def pymongo_public_names() -> set[str]:
    # The surface test's rule: what the module defines, not what it imports for itself
    # (typing helpers, collections.abc, datetime: they differ from one Python to another).
    return set(public_names(pymongo_monitoring))


def test_every_public_name_of_pymongo_monitoring_is_provided_or_listed() -> None:
    missing = pymongo_public_names() - set(dir(monitoring))
    assert missing == NOT_PROVIDED


def pymongo_event_classes() -> list[str]:
    return sorted(
        name
        for name in pymongo_public_names()
        if name.endswith("Event") and name not in NOT_PROVIDED
    )


@pytest.mark.parametrize("name", pymongo_event_classes())
def test_each_event_has_every_attribute_of_pymongo_s(name: str) -> None:
    theirs = getattr(pymongo_monitoring, name)
    ours = getattr(monitoring, name)
    wanted = {attr for attr, value in inspect.getmembers(theirs) if isinstance(value, property)}
    fields = set(getattr(ours, "__annotations__", {}))
    for klass in ours.__mro__:
        fields |= set(getattr(klass, "__annotations__", {}))
    have = fields | {
        attr for attr, value in inspect.getmembers(ours) if isinstance(value, property)
    }
    assert wanted <= have, sorted(wanted - have)


def test_the_pymongo_names_give_the_same_values() -> None:
    error = OSError("refused")
    started = monitoring.ServerHeartbeatStartedEvent(A, False)
    succeeded = monitoring.ServerHeartbeatSucceededEvent(A, 0.25, {"ok": 1}, True)
    failed = monitoring.ServerHeartbeatFailedEvent(A, 0.5, error, False)
    assert started.connection_id == succeeded.connection_id == failed.connection_id == A
    assert failed.reply is error
    sd = ServerDescription(A)
    assert monitoring.ServerOpeningEvent(1, A).server_address == A
    assert monitoring.ServerClosedEvent(1, A).server_address == A
    assert monitoring.ServerDescriptionChangedEvent(1, A, sd, sd).server_address == A
    common = {"database_name": "db", "command_name": "ping", "request_id": 1}
    common.update(operation_id=1, address=A, connection_id=3)
    assert monitoring.CommandSucceededEvent(0.0012345, {"ok": 1}, **common).duration_micros == 1234
    assert monitoring.CommandFailedEvent(2.5, error, **common).duration_micros == 2_500_000
    cleared = monitoring.PoolClearedEvent(A, interrupt_in_use_connections=True)
    assert cleared.interrupt_connections is True
    assert monitoring.PoolClearedEvent(A).interrupt_connections is False
    failed_checkout = monitoring.ConnectionCheckOutFailedEvent(A, "timeout", 0.1)
    assert failed_checkout.connection_id == 0


def test_pymongo_s_names_for_the_reasons_and_the_opening_event() -> None:
    assert monitoring.TopologyOpenedEvent is monitoring.TopologyOpeningEvent
    for name in ("STALE", "IDLE", "ERROR", "POOL_CLOSED"):
        assert getattr(monitoring.ConnectionClosedReason, name) == getattr(
            pymongo_monitoring.ConnectionClosedReason, name
        )
    for name in ("TIMEOUT", "POOL_CLOSED", "CONN_ERROR"):
        assert getattr(monitoring.ConnectionCheckOutFailedReason, name) == getattr(
            pymongo_monitoring.ConnectionCheckOutFailedReason, name
        )


class Opened(monitoring.TopologyListener):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def opened(self, event: monitoring.TopologyOpeningEvent) -> None:
        self.log.append(self.name)


def test_register_gives_a_listener_to_every_client_created_afterwards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listener_registry, "_REGISTERED", [])  # the registry is the process's
    log: list[str] = []
    before = Client("mongodb://127.0.0.1:9", serverSelectionTimeoutMS=100)
    monitoring.register(Opened("registered", log))
    try:
        assert log == []  # a client that exists already is not changed
        after = Client(
            "mongodb://127.0.0.1:9",
            serverSelectionTimeoutMS=100,
            event_listeners=[Opened("own", log)],
        )
        after.close()
    finally:
        before.close()
    assert log == ["registered", "own"]  # pymongo's order: the registered ones first


def test_register_refuses_what_is_not_a_listener(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listener_registry, "_REGISTERED", [])
    with pytest.raises(TypeError, match="must subclass one of the listener classes"):
        monitoring.register(object())  # type: ignore[arg-type]
    assert listener_registry.registered_listeners() == ()
