"""The command log messages of mongocore.io.command_log: fields, text, redaction of
sensitive commands, and that a disabled logger costs nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from bson import ObjectId

from mongocore.core.address import Address
from mongocore.core.events import CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent
from mongocore.errors import NetworkError, OperationFailure
from mongocore.io import command_log as cl
from tests.log_capture import LogRecords, capture

ADDRESS = Address("db1.example.com", 27017)
TOPOLOGY = ObjectId()


@pytest.fixture
def records() -> Iterator[LogRecords]:
    with capture("mongocore.test.command") as handler:
        yield handler


@pytest.fixture
def logger(records: LogRecords) -> logging.Logger:
    return records.logger


def _common(name: str = "find", request_id: int = 7, **extra: Any) -> dict[str, Any]:
    return {
        "database_name": "db",
        "command_name": name,
        "request_id": request_id,
        "operation_id": 3,
        "address": ADDRESS,
        "connection_id": 2,
        **extra,
    }


def test_started_and_succeeded(logger: logging.Logger, records: LogRecords) -> None:
    command_logger = cl.CommandLogger(TOPOLOGY, logger=logger)
    service = ObjectId()
    common = _common(server_connection_id=41, service_id=service)
    command_logger.started(CommandStartedEvent(command={"find": "c", "$db": "db"}, **common))
    command_logger.succeeded(CommandSucceededEvent(duration=0.0125, reply={"ok": 1}, **common))
    started, succeeded = records.data
    assert started == {
        "message": "Command started",
        "topologyId": TOPOLOGY,
        "commandName": "find",
        "databaseName": "db",
        "requestId": 7,
        "operationId": 3,
        "driverConnectionId": 2,
        "serverHost": "db1.example.com",
        "serverPort": 27017,
        "serverConnectionId": 41,
        "serviceId": str(service),
        "command": '{"find": "c", "$db": "db"}',
    }
    assert succeeded["message"] == "Command succeeded"
    assert succeeded["durationMS"] == 12.5
    assert succeeded["reply"] == '{"ok": 1}'
    text = records.records[0].getMessage()
    assert text.startswith('Command "find" started on database "db" using a connection')
    assert "server-generated ID 41 to db1.example.com:27017" in text


def test_sensitive_command_is_redacted(logger: logging.Logger, records: LogRecords) -> None:
    command_logger = cl.CommandLogger(TOPOLOGY, logger=logger)
    # The events of a sensitive command carry {} (mongocore.monitoring redacts them).
    command_logger.started(CommandStartedEvent(command={}, **_common("saslStart", 1)))
    error = OperationFailure("(redacted)", 18, {"code": 18})
    command_logger.failed(
        CommandFailedEvent(duration=0.001, failure=error, **_common("saslStart", 1))
    )
    command_logger.started(CommandStartedEvent(command={}, **_common("saslContinue", 2)))
    command_logger.failed(
        CommandFailedEvent(
            duration=0.001, failure=NetworkError("reset"), **_common("saslContinue", 2)
        )
    )
    started, failed, _, network = records.data
    assert started["command"] == "{}"
    assert failed["failure"] == ""
    assert "reset" in network["failure"]


def test_no_server_connection_id_or_service_id(logger: logging.Logger, records: LogRecords) -> None:
    cl.CommandLogger(TOPOLOGY, logger=logger).started(
        CommandStartedEvent(command={"ping": 1}, **_common("ping"))
    )
    (data,) = records.data
    assert "serverConnectionId" not in data
    assert "serviceId" not in data


def test_document_is_truncated(logger: logging.Logger, records: LogRecords) -> None:
    command_logger = cl.CommandLogger(TOPOLOGY, logger=logger, max_document_length=10)
    command_logger.started(CommandStartedEvent(command={"insert": "x" * 50}, **_common("insert")))
    assert records.data[0]["command"] == '{"insert":...'


def test_disabled_logger_subscribes_nothing(logger: logging.Logger) -> None:
    logger.setLevel(logging.INFO)
    assert cl.command_log_listeners(TOPOLOGY, logger) == []
    logger.setLevel(logging.DEBUG)
    assert len(cl.command_log_listeners(TOPOLOGY, logger)) == 1


def test_disabled_logger_builds_no_message(logger: logging.Logger, records: LogRecords) -> None:
    command_logger = cl.CommandLogger(TOPOLOGY, logger=logger)
    logger.setLevel(logging.INFO)
    command_logger.started(CommandStartedEvent(command={"ping": 1}, **_common("ping")))
    assert records.records == []
