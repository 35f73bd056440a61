"""The SDAM log messages of mongocore.io.log_messages: fields, text, truncation, and that a
disabled logger costs nothing."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from bson import ObjectId

from mongocore.api.client import Client
from mongocore.core.address import Address
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import TopologyType
from mongocore.core.events import (
    EventPublisher,
    ServerClosedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from mongocore.errors import NetworkError, OperationFailure
from mongocore.io import log_messages as lm
from mongocore.io import structured_log
from tests.log_capture import LogRecords, capture

ADDRESS = Address("db1.example.com", 27017)


@pytest.fixture
def records() -> Iterator[LogRecords]:
    # A private logger: the tests do not depend on the global logging configuration.
    with capture("mongocore.topology.test-log-messages", propagate=False) as handler:
        yield handler


@pytest.fixture
def logger(records: LogRecords) -> logging.Logger:
    return records.logger


def description(kind: TopologyType) -> TopologyDescription:
    return TopologyDescription(kind, {}, TopologySettings((ADDRESS,)))


def opened(tlog: lm.TopologyLogger) -> ObjectId:
    topology_id = ObjectId()
    publisher = EventPublisher(tlog.listeners())
    publisher.publish_sdam([TopologyOpeningEvent(topology_id)])
    return topology_id


def test_topology_and_server_messages(logger: logging.Logger, records: LogRecords) -> None:
    tlog = lm.TopologyLogger(logger=logger)
    publisher = EventPublisher(tlog.listeners())
    topology_id = ObjectId()
    unknown, single = description(TopologyType.UNKNOWN), description(TopologyType.SINGLE)
    publisher.publish_sdam(
        [
            TopologyOpeningEvent(topology_id),
            TopologyDescriptionChangedEvent(topology_id, unknown, single),
            ServerOpeningEvent(topology_id, ADDRESS),
            ServerClosedEvent(topology_id, ADDRESS),
            TopologyClosedEvent(topology_id),
        ]
    )
    assert records.data == [
        {"message": lm.STARTING_TOPOLOGY_MONITORING, "topologyId": topology_id},
        {
            "message": lm.TOPOLOGY_DESCRIPTION_CHANGED,
            "topologyId": topology_id,
            "previousDescription": repr(unknown),
            "newDescription": repr(single),
        },
        {
            "message": lm.STARTING_SERVER_MONITORING,
            "topologyId": topology_id,
            "serverHost": "db1.example.com",
            "serverPort": 27017,
        },
        {
            "message": lm.STOPPED_SERVER_MONITORING,
            "topologyId": topology_id,
            "serverHost": "db1.example.com",
            "serverPort": 27017,
        },
        {"message": lm.STOPPED_TOPOLOGY_MONITORING, "topologyId": topology_id},
    ]
    assert all(r.levelno == logging.DEBUG for r in records.records)
    texts = [r.getMessage() for r in records.records]
    assert texts[0] == f"Starting monitoring for topology with ID {topology_id}"
    assert texts[2] == (
        f"Starting monitoring for server db1.example.com:27017 in topology with ID {topology_id}"
    )
    assert texts[1].startswith(f"Description changed for topology with ID {topology_id}. ")


def test_unix_socket_has_no_port(logger: logging.Logger, records: LogRecords) -> None:
    tlog = lm.TopologyLogger(logger=logger)
    topology_id = opened(tlog)
    socket = Address("/tmp/mongodb-27017.sock", None)
    tlog.server_opened(ServerOpeningEvent(topology_id, socket))
    assert records.data[-1] == {
        "message": lm.STARTING_SERVER_MONITORING,
        "topologyId": topology_id,
        "serverHost": "/tmp/mongodb-27017.sock",
    }
    assert "/tmp/mongodb-27017.sock in topology" in records.records[-1].getMessage()


def test_heartbeat_messages(logger: logging.Logger, records: LogRecords) -> None:
    tlog = lm.TopologyLogger(logger=logger)
    topology_id = opened(tlog)
    reply = {"isWritablePrimary": True, "connectionId": 42, "ok": 1.0}
    # What a monitor publishes: a check on a new connection (1, its server id not yet
    # known), an awaited check on it, then after a failure a new connection (2).
    tlog.heartbeat_started(ServerHeartbeatStartedEvent(ADDRESS, False, 1, None))
    tlog.heartbeat_succeeded(ServerHeartbeatSucceededEvent(ADDRESS, 0.0125, reply, False, 1, 42))
    tlog.heartbeat_started(ServerHeartbeatStartedEvent(ADDRESS, True, 1, 42))
    tlog.heartbeat_failed(
        ServerHeartbeatFailedEvent(ADDRESS, 0.5, NetworkError("connection reset"), True, 1, 42)
    )
    tlog.heartbeat_started(ServerHeartbeatStartedEvent(ADDRESS, False, 2, None))
    common = {"topologyId": topology_id, "serverHost": "db1.example.com", "serverPort": 27017}
    started, succeeded, awaited, failed, reopened = records.data[1:]
    assert started == {
        "message": lm.SERVER_HEARTBEAT_STARTED,
        **common,
        "driverConnectionId": 1,
        "awaited": False,
    }
    assert succeeded["driverConnectionId"] == 1 and succeeded["serverConnectionId"] == 42
    assert succeeded["durationMS"] == 12.5
    assert json.loads(succeeded["reply"]) == reply
    assert awaited["awaited"] is True and awaited["serverConnectionId"] == 42
    assert failed == {
        "message": lm.SERVER_HEARTBEAT_FAILED,
        **common,
        "driverConnectionId": 1,
        "serverConnectionId": 42,
        "awaited": True,
        "durationMS": 500.0,
        "failure": "NetworkError: connection reset",
    }
    # An unknown server id is left out, never logged as null.
    assert reopened["driverConnectionId"] == 2 and "serverConnectionId" not in reopened
    texts = [r.getMessage() for r in records.records[1:]]
    assert texts[0] == (
        "Heartbeat started for db1.example.com:27017 on connection with driver-generated ID 1"
        f" in topology with ID {topology_id}. Awaited: False"
    )
    assert texts[1].startswith(
        "Heartbeat succeeded in 12.5 ms for db1.example.com:27017 on connection with "
        "driver-generated ID 1 and server-generated ID 42 in topology with ID "
    )
    assert texts[1].endswith(
        '. Awaited: False. Reply: {"isWritablePrimary": true, "connectionId": 42, "ok": 1.0}'
    )
    assert texts[3].endswith("Failure: NetworkError: connection reset")


def test_server_failure_includes_labels_and_truncated_response(
    logger: logging.Logger, records: LogRecords
) -> None:
    tlog = lm.TopologyLogger(logger=logger, max_document_length=20)
    opened(tlog)
    details = {"ok": 0, "errmsg": "x" * 100, "code": 91, "errorLabels": ["ResetPool"]}
    error = OperationFailure("shutting down", 91, details)
    tlog.heartbeat_started(ServerHeartbeatStartedEvent(ADDRESS, False))
    tlog.heartbeat_failed(ServerHeartbeatFailedEvent(ADDRESS, 0.001, error, False))
    failure = records.data[-1]["failure"]
    assert failure.startswith("OperationFailure: shutting down (code 91) (error labels: ResetPool)")
    assert failure.endswith(' Server response: {"ok": 0, "errmsg": ...')


def test_reply_is_truncated_to_max_document_length(
    logger: logging.Logger, records: LogRecords
) -> None:
    tlog = lm.TopologyLogger(logger=logger, max_document_length=10)
    opened(tlog)
    reply = {"ok": 1, "hosts": ["a.example.com:27017"] * 10}
    tlog.heartbeat_started(ServerHeartbeatStartedEvent(ADDRESS, False))
    tlog.heartbeat_succeeded(ServerHeartbeatSucceededEvent(ADDRESS, 0.001, reply, False))
    assert records.data[-1]["reply"] == '{"ok": 1, ...'


def test_truncate_counts_code_points_and_leaves_short_text() -> None:
    assert lm.truncate("abc", 3) == "abc"
    assert lm.truncate("abcd", 3) == "abc..."
    assert lm.truncate("ééééé", 2) == "éé..."
    assert lm.truncate("", 0) == ""
    assert lm.truncate("a", 0) == "..."


def test_document_json_is_relaxed_extended_json() -> None:
    oid = ObjectId("0123456789abcdef01234567")
    text = lm.document_json({"n": 1, "id": oid, "f": 1.5}, 1000)
    assert json.loads(text) == {"n": 1, "id": {"$oid": str(oid)}, "f": 1.5}


def test_max_document_length_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in lm.MAX_DOCUMENT_LENGTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert lm.max_document_length_from_environment() == lm.DEFAULT_MAX_DOCUMENT_LENGTH
    assert lm.max_document_length_from_environment({"MONGODB_LOG_MAX_DOCUMENT_LENGTH": "50"}) == 50
    assert lm.max_document_length_from_environment({"MONGOB_LOG_MAX_DOCUMENT_LENGTH": "7"}) == 7
    # Invalid values count as unset, and never raise.
    for bad in ("-1", "ten", ""):
        env = {"MONGODB_LOG_MAX_DOCUMENT_LENGTH": bad}
        assert lm.max_document_length_from_environment(env) == lm.DEFAULT_MAX_DOCUMENT_LENGTH
    monkeypatch.setenv("MONGODB_LOG_MAX_DOCUMENT_LENGTH", "30")
    assert lm.current_max_document_length() == 30
    # The programmatic setting wins over the environment, and None gives it back.
    previous = lm.set_max_document_length(5)
    try:
        assert previous is None
        assert lm.current_max_document_length() == 5
        assert lm.TopologyLogger().max_document_length == 5
    finally:
        lm.set_max_document_length(previous)
    assert lm.current_max_document_length() == 30
    with pytest.raises(ValueError):
        lm.set_max_document_length(-3)


def test_shared_names_are_the_same_from_either_module() -> None:
    # Code written against log_messages keeps working: one setting, one attribute.
    for name in ("structured_data", "set_max_document_length", "document_json", "truncate"):
        assert getattr(lm, name) is getattr(structured_log, name)
    assert lm.DATA_ATTRIBUTE == structured_log.DATA_ATTRIBUTE == "mongocore_data"
    assert issubclass(lm.TopologyLogger, structured_log.StructuredLogger)
    previous = lm.set_max_document_length(17)
    try:
        assert structured_log.current_max_document_length() == 17
    finally:
        lm.set_max_document_length(previous)


def test_disabled_logger_subscribes_nothing(logger: logging.Logger) -> None:
    logger.setLevel(logging.INFO)
    assert lm.topology_log_listeners(logger) == []
    logger.setLevel(logging.DEBUG)
    assert len(lm.topology_log_listeners(logger)) == 3


def test_disabled_logger_builds_no_message(
    logger: logging.Logger, records: LogRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    tlog = lm.TopologyLogger(logger=logger)
    topology_id = opened(tlog)
    logger.setLevel(logging.INFO)

    def forbidden(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("a message was built for a disabled logger")

    monkeypatch.setattr(lm, "document_json", forbidden)
    monkeypatch.setattr(lm, "failure_text", forbidden)
    before = len(records.records)
    tlog.heartbeat_started(ServerHeartbeatStartedEvent(ADDRESS, False))
    tlog.heartbeat_succeeded(ServerHeartbeatSucceededEvent(ADDRESS, 0.001, {"ok": 1}, False))
    tlog.heartbeat_failed(ServerHeartbeatFailedEvent(ADDRESS, 0.001, NetworkError("x"), False))
    tlog.server_opened(ServerOpeningEvent(topology_id, ADDRESS))
    tlog.topology_closed(TopologyClosedEvent(topology_id))
    assert len(records.records) == before


def test_client_subscribes_only_when_enabled() -> None:
    with capture(lm.TOPOLOGY_LOGGER, logging.WARNING) as handler:
        topology_logger = handler.logger
        # No server is reachable here; the client never waits for one.
        with Client("mongodb://127.0.0.1:1/?connectTimeoutMS=100", heartbeatFrequencyMS=500):
            pass
        assert handler.data == []
        topology_logger.setLevel(logging.DEBUG)
        with Client("mongodb://127.0.0.1:1/?connectTimeoutMS=100", heartbeatFrequencyMS=500) as c:
            topology_id = c.topology.topology_id
        assert isinstance(topology_id, ObjectId)
        messages = [d["message"] for d in handler.data]
        assert messages[0] == lm.STARTING_TOPOLOGY_MONITORING
        assert messages[-1] == lm.STOPPED_TOPOLOGY_MONITORING
        assert {d["topologyId"] for d in handler.data} == {topology_id}
