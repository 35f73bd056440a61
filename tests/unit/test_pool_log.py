"""The connection pool log messages of mongocore.io.pool_log: fields, text, reasons and
errors, what a pool and a client log, and that a disabled logger costs nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from bson import ObjectId

from mongocore.api.client import Client
from mongocore.core.address import Address
from mongocore.core.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    ConnectionReadyEvent,
    EventPublisher,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
)
from mongocore.errors import NetworkError, OperationFailure, PoolClearedError
from mongocore.io import pool_log as pl
from mongocore.io.pool import Pool
from mongocore.io.pool_options import PoolOptions
from tests.fake_connection import FakeConnection
from tests.log_capture import LogRecords, capture

ADDRESS = Address("db1.example.com", 27017)
TOPOLOGY_ID = ObjectId()


@pytest.fixture
def records() -> Iterator[LogRecords]:
    with capture("mongocore.connection.test-pool-log", propagate=False) as handler:
        yield handler


@pytest.fixture
def logger(records: LogRecords) -> logging.Logger:
    return records.logger


COMMON = {"topologyId": TOPOLOGY_ID, "serverHost": "db1.example.com", "serverPort": 27017}


def test_pool_messages(logger: logging.Logger, records: LogRecords) -> None:
    clog = pl.ConnectionLogger(TOPOLOGY_ID, logger=logger)
    options = {"maxPoolSize": 5, "minPoolSize": 1, "maxIdleTimeMS": 10000}
    clog.pool_created(PoolCreatedEvent(ADDRESS, options))
    clog.pool_ready(PoolReadyEvent(ADDRESS))
    clog.pool_cleared(PoolClearedEvent(ADDRESS))
    service_id = ObjectId()
    clog.pool_cleared(PoolClearedEvent(ADDRESS, service_id))
    clog.pool_closed(PoolClosedEvent(ADDRESS))
    assert records.data == [
        {"message": pl.POOL_CREATED, **COMMON, **options},
        {"message": pl.POOL_READY, **COMMON},
        {"message": pl.POOL_CLEARED, **COMMON},
        {"message": pl.POOL_CLEARED, **COMMON, "serviceId": str(service_id)},
        {"message": pl.POOL_CLOSED, **COMMON},
    ]
    assert all(r.levelno == logging.DEBUG for r in records.records)
    texts = [r.getMessage() for r in records.records]
    assert texts[0] == (
        "Connection pool created for db1.example.com:27017 using options maxIdleTimeMS=10000,"
        " minPoolSize=1, maxPoolSize=5"
    )
    assert texts[1] == "Connection pool ready for db1.example.com:27017"
    assert (
        texts[3] == f"Connection pool for db1.example.com:27017 cleared for serviceId {service_id}"
    )
    assert texts[4] == "Connection pool closed for db1.example.com:27017"


def test_connection_and_checkout_messages(logger: logging.Logger, records: LogRecords) -> None:
    clog = pl.ConnectionLogger(TOPOLOGY_ID, logger=logger)
    clog.connection_check_out_started(ConnectionCheckOutStartedEvent(ADDRESS))
    clog.connection_created(ConnectionCreatedEvent(ADDRESS, 1))
    clog.connection_ready(ConnectionReadyEvent(ADDRESS, 1, 0.0025))
    clog.connection_checked_out(ConnectionCheckedOutEvent(ADDRESS, 1, 0.004))
    clog.connection_checked_in(ConnectionCheckedInEvent(ADDRESS, 1))
    clog.connection_closed(ConnectionClosedEvent(ADDRESS, 1, "idle"))
    assert records.data == [
        {"message": pl.CHECKOUT_STARTED, **COMMON},
        {"message": pl.CONNECTION_CREATED, **COMMON, "driverConnectionId": 1},
        {"message": pl.CONNECTION_READY, **COMMON, "driverConnectionId": 1, "durationMS": 2.5},
        {"message": pl.CHECKED_OUT, **COMMON, "driverConnectionId": 1, "durationMS": 4.0},
        {"message": pl.CHECKED_IN, **COMMON, "driverConnectionId": 1},
        {
            "message": pl.CONNECTION_CLOSED,
            **COMMON,
            "driverConnectionId": 1,
            "reason": "Connection has been available but unused for longer than the "
            "configured max idle time",
        },
    ]
    texts = [r.getMessage() for r in records.records]
    assert texts == [
        "Checkout started for connection to db1.example.com:27017",
        "Connection created: address=db1.example.com:27017, driver-generated ID=1",
        "Connection ready: address=db1.example.com:27017, driver-generated ID=1, "
        "established in=2.5 ms",
        "Connection checked out: address=db1.example.com:27017, driver-generated ID=1, "
        "duration=4.0 ms",
        "Connection checked in: address=db1.example.com:27017, driver-generated ID=1",
        "Connection closed: address=db1.example.com:27017, driver-generated ID=1. Reason: "
        "Connection has been available but unused for longer than the configured max idle time",
    ]


@pytest.mark.parametrize(
    ("reason", "text"),
    [
        ("stale", "Connection became stale because the pool was cleared"),
        ("error", "An error occurred while using the connection"),
        ("poolClosed", "Connection pool was closed"),
    ],
)
def test_closed_reasons(
    logger: logging.Logger, records: LogRecords, reason: str, text: str
) -> None:
    clog = pl.ConnectionLogger(TOPOLOGY_ID, logger=logger)
    clog.connection_closed(ConnectionClosedEvent(ADDRESS, 2, reason))
    assert records.data[0]["reason"] == text
    assert "error" not in records.data[0]


def test_errors_appear_with_their_reasons_only(logger: logging.Logger, records: LogRecords) -> None:
    clog = pl.ConnectionLogger(TOPOLOGY_ID, logger=logger, max_document_length=10)
    failure = OperationFailure("Authentication failed.", 18, {"ok": 0, "errmsg": "x" * 50})
    clog.connection_closed(ConnectionClosedEvent(ADDRESS, 3, "error", failure))
    clog.connection_check_out_failed(
        ConnectionCheckOutFailedEvent(ADDRESS, "connectionError", 0.01, NetworkError("reset"))
    )
    # An error given with another reason is not the reason's error: left out.
    clog.connection_check_out_failed(
        ConnectionCheckOutFailedEvent(ADDRESS, "timeout", 0.5, NetworkError("ignored"))
    )
    clog.connection_check_out_failed(ConnectionCheckOutFailedEvent(ADDRESS, "poolClosed", 0))
    closed, failed, timeout, pool_closed = records.data
    assert closed["reason"] == "An error occurred while using the connection"
    # The server's response is truncated to the max document length.
    assert closed["error"].startswith("OperationFailure: Authentication failed.")
    assert closed["error"].endswith('Server response: {"ok": 0, ...')
    assert failed == {
        "message": pl.CHECKOUT_FAILED,
        **COMMON,
        "reason": "An error occurred while trying to establish a new connection",
        "error": "NetworkError: reset",
        "durationMS": 10.0,
    }
    assert timeout["reason"] == (
        "Wait queue timeout elapsed without a connection becoming available"
    )
    assert "error" not in timeout and "error" not in pool_closed
    assert pool_closed["reason"] == "Connection pool was closed"
    assert records.records[1].getMessage() == (
        "Checkout failed for connection to db1.example.com:27017. Reason: An error occurred "
        "while trying to establish a new connection. Error: NetworkError: reset. "
        "Duration: 10.0 ms"
    )


def test_unix_socket_has_no_port(logger: logging.Logger, records: LogRecords) -> None:
    clog = pl.ConnectionLogger(TOPOLOGY_ID, logger=logger)
    clog.pool_ready(PoolReadyEvent(Address("/tmp/mongodb-27017.sock", None)))
    assert records.data == [
        {
            "message": pl.POOL_READY,
            "topologyId": TOPOLOGY_ID,
            "serverHost": "/tmp/mongodb-27017.sock",
        }
    ]


def test_disabled_logger_builds_nothing(
    logger: logging.Logger, records: LogRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    clog = pl.ConnectionLogger(TOPOLOGY_ID, logger=logger)
    logger.setLevel(logging.INFO)

    def forbidden(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("a message was built for a disabled logger")

    monkeypatch.setattr(pl, "server_fields", forbidden)
    monkeypatch.setattr(pl, "failure_text", forbidden)
    clog.pool_created(PoolCreatedEvent(ADDRESS, {"maxPoolSize": 5}))
    clog.connection_closed(ConnectionClosedEvent(ADDRESS, 1, "error", NetworkError("x")))
    clog.connection_check_out_failed(
        ConnectionCheckOutFailedEvent(ADDRESS, "connectionError", 0.1, NetworkError("x"))
    )
    assert records.records == []
    assert pl.connection_log_listeners(TOPOLOGY_ID, logger) == []
    logger.setLevel(logging.DEBUG)
    assert len(pl.connection_log_listeners(TOPOLOGY_ID, logger)) == 1


def test_a_pool_logs_an_establishment_error(logger: logging.Logger, records: LogRecords) -> None:
    error = NetworkError("connection closed during authentication")

    def connect(address: Address, generation: int, connection_id: int) -> FakeConnection:
        raise error

    cleared: list[BaseException] = []
    pool: Pool[FakeConnection] = Pool(
        ADDRESS,
        connect,
        PoolOptions(max_pool_size=5),
        EventPublisher([pl.ConnectionLogger(TOPOLOGY_ID, logger=logger)]),
        maintenance_interval=None,
        on_establish_error=lambda exc, generation: cleared.append(exc),
    )
    try:
        pool.ready()
        with pytest.raises(NetworkError):
            pool.check_out()
        pool.clear()
        with pytest.raises(PoolClearedError):
            pool.check_out()
    finally:
        pool.close()
    assert cleared == [error]
    messages = [(d["message"], d.get("reason"), d.get("error")) for d in records.data]
    establish_error = "An error occurred while trying to establish a new connection"
    assert messages == [
        (pl.POOL_CREATED, None, None),
        (pl.POOL_READY, None, None),
        (pl.CHECKOUT_STARTED, None, None),
        (pl.CONNECTION_CREATED, None, None),
        (
            pl.CONNECTION_CLOSED,
            "An error occurred while using the connection",
            "NetworkError: connection closed during authentication",
        ),
        (
            pl.CHECKOUT_FAILED,
            establish_error,
            "NetworkError: connection closed during authentication",
        ),
        (pl.POOL_CLEARED, None, None),
        (pl.CHECKOUT_STARTED, None, None),
        # A paused pool refuses the checkout with its PoolClearedError.
        (pl.CHECKOUT_FAILED, establish_error, messages[-2][2]),
        (pl.POOL_CLOSED, None, None),
    ]
    assert str(messages[-2][2]).startswith("PoolClearedError: Connection pool for ")
    assert records.data[0]["maxPoolSize"] == 5


def test_client_subscribes_only_when_enabled() -> None:
    uri = "mongodb://127.0.0.1:1/?connectTimeoutMS=100&maxPoolSize=7"
    with capture(pl.CONNECTION_LOGGER, logging.WARNING) as handler:
        connection_logger = handler.logger
        # No server is reachable here; the client never waits for one.
        with Client(uri, heartbeatFrequencyMS=500):
            pass
        assert handler.data == []
        connection_logger.setLevel(logging.DEBUG)
        with Client(uri, heartbeatFrequencyMS=500) as client:
            topology_id = client.topology.topology_id
        messages = [d["message"] for d in handler.data]
        assert messages[0] == pl.POOL_CREATED and messages[-1] == pl.POOL_CLOSED
        assert handler.data[0]["maxPoolSize"] == 7
        assert {d["topologyId"] for d in handler.data} == {topology_id}
