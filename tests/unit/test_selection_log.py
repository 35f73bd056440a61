"""The server selection log messages of mongocore.io.selection_log: fields, text, levels,
the once-per-operation waiting message, what the live topology logs, and that a
disabled logger costs nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from bson import ObjectId

from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import TopologyType
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import ConfigurationError, ServerSelectionTimeoutError
from mongocore.io import selection_log as sl
from tests.log_capture import LogRecords, capture
from tests.unit.test_io_topology import A, B, make, primary

TOPOLOGY_ID = ObjectId()


@pytest.fixture
def records() -> Iterator[LogRecords]:
    with capture("mongocore.serverSelection.test-selection-log", propagate=False) as handler:
        yield handler


@pytest.fixture
def logger(records: LogRecords) -> logging.Logger:
    return records.logger


@pytest.fixture
def selection_records() -> Iterator[LogRecords]:
    """Records of the real mongocore.serverSelection logger, enabled for DEBUG."""
    with capture(sl.SERVER_SELECTION_LOGGER) as handler:
        yield handler


def single() -> TopologyDescription:
    return TopologyDescription(TopologyType.SINGLE, {}, TopologySettings((A,)))


def new_log(logger: logging.Logger, **kwargs: Any) -> sl.SelectionLog:
    log = sl.selection_log(
        TOPOLOGY_ID, kwargs.pop("read_preference", None), logger=logger, **kwargs
    )
    assert log is not None
    return log


def test_selector_names_every_component_of_the_read_preference() -> None:
    assert sl.describe_selector(None) == "writable server"
    rp = ReadPreference(Mode.SECONDARY, [{"dc": "ny"}, {}], 120)
    text = sl.describe_selector(rp)
    assert "secondary" in text and "'dc': 'ny'" in text and "120" in text
    assert sl.describe_selector(None, (A, B)) == (
        "writable server (deprioritized: a:27017, b:27017)"
    )


def test_started_and_succeeded(logger: logging.Logger, records: LogRecords) -> None:
    log = new_log(logger, operation="insert", operation_id=7)
    description = single()
    log.started(description)
    log.succeeded(description, A)
    common = {
        "topologyId": TOPOLOGY_ID,
        "selector": "writable server",
        "operationId": 7,
        "operation": "insert",
        "topologyDescription": repr(description),
    }
    assert records.data == [
        {"message": sl.SERVER_SELECTION_STARTED, **common},
        {
            "message": sl.SERVER_SELECTION_SUCCEEDED,
            **common,
            "serverHost": "a",
            "serverPort": 27017,
        },
    ]
    assert [r.levelno for r in records.records] == [logging.DEBUG, logging.DEBUG]
    texts = [r.getMessage() for r in records.records]
    assert texts[0] == (
        "Server selection started for operation insert with ID 7. Selector: writable server,"
        f" topology description: {description!r}"
    )
    assert texts[1].startswith(
        "Server selection succeeded for operation insert with ID 7. Selected server: a:27017."
    )


def test_waiting_is_logged_once_at_info(logger: logging.Logger, records: LogRecords) -> None:
    log = new_log(logger, read_preference=ReadPreference(Mode.NEAREST), operation="find")
    log.waiting(single(), 1.5)
    log.waiting(single(), 0.5)
    assert len(records.records) == 1
    assert records.records[0].levelno == logging.INFO
    data = records.data[0]
    assert data["message"] == sl.WAITING_FOR_SUITABLE_SERVER
    assert data["remainingTimeMS"] == 1500
    # No operation id was given: the key is left out, never None.
    assert "operationId" not in data
    assert "Remaining time: 1500 ms." in records.records[0].getMessage()


def test_failed_with_a_summary_or_the_whole_error(
    logger: logging.Logger, records: LogRecords
) -> None:
    log = new_log(logger, operation="find", operation_id=3)
    error = ServerSelectionTimeoutError("No server matched ...; Servers:\n  a:27017: Unknown")
    log.failed(single(), error, "No server matched a writable server within 2 s")
    log.failed(single(), ConfigurationError("bad read preference"))
    first, second = records.data
    assert first["failure"] == (
        "ServerSelectionTimeoutError: No server matched a writable server within 2 s"
    )
    assert second["failure"] == "ConfigurationError: bad read preference"
    assert (
        records.records[0]
        .getMessage()
        .startswith(
            "Server selection failed for operation find with ID 3. Failure: "
            "ServerSelectionTimeoutError: No server matched"
        )
    )


def test_info_logger_logs_only_the_waiting_message(
    logger: logging.Logger, records: LogRecords
) -> None:
    logger.setLevel(logging.INFO)
    log = new_log(logger)
    log.started(single())
    log.waiting(single(), 1.0)
    log.failed(single(), ServerSelectionTimeoutError("x"))
    assert [d["message"] for d in records.data] == [sl.WAITING_FOR_SUITABLE_SERVER]


def test_disabled_logger_builds_nothing(
    logger: logging.Logger, records: LogRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    logger.setLevel(logging.WARNING)

    def forbidden(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("built for a disabled logger")

    monkeypatch.setattr(sl, "describe_selector", forbidden)
    assert sl.selection_log(TOPOLOGY_ID, None, logger=logger) is None


def test_topology_logs_a_successful_selection(selection_records: LogRecords) -> None:
    topology, _ = make()
    try:
        topology.on_server_check(ServerDescription.from_hello(A, primary(), 0.001))
        topology.select_server(None, operation="insert", operation_id=11)
        topology.select_server(ReadPreference(Mode.PRIMARY))  # no operation: keys left out
    finally:
        topology.close()
    data = [d for d in selection_records.data if d["topologyId"] == topology.topology_id]
    assert [d["message"] for d in data] == [
        sl.SERVER_SELECTION_STARTED,
        sl.SERVER_SELECTION_SUCCEEDED,
        sl.SERVER_SELECTION_STARTED,
        sl.SERVER_SELECTION_SUCCEEDED,
    ]
    assert data[0]["operation"] == "insert" and data[0]["operationId"] == 11
    assert data[1]["serverHost"] == "a" and data[1]["serverPort"] == 27017
    assert "operation" not in data[2] and "operationId" not in data[2]
    assert data[3]["selector"] == "ReadPreference(mode='primary')"


def test_topology_logs_a_selection_timeout(selection_records: LogRecords) -> None:
    topology, _ = make((A, B), replica_set="rs", server_selection_timeout_ms=50)
    try:
        topology.on_server_check(ServerDescription.from_error(A, "connection refused"))
        with pytest.raises(ServerSelectionTimeoutError):
            topology.select_server(ReadPreference(Mode.SECONDARY), operation="find")
    finally:
        topology.close()
    data = [d for d in selection_records.data if d["topologyId"] == topology.topology_id]
    assert [d["message"] for d in data] == [
        sl.SERVER_SELECTION_STARTED,
        sl.WAITING_FOR_SUITABLE_SERVER,
        sl.SERVER_SELECTION_FAILED,
    ]
    assert 0 <= data[1]["remainingTimeMS"] <= 50
    # The failure says what failed; the servers are in topologyDescription, not repeated.
    assert data[2]["failure"] == (
        "ServerSelectionTimeoutError: No server matched read preference secondary within 0.05 s"
    )
    assert "connection refused" in data[2]["topologyDescription"]


def test_selection_on_a_closed_topology_is_logged_as_failed(selection_records: LogRecords) -> None:
    topology, _ = make()
    topology.close()
    with pytest.raises(ServerSelectionTimeoutError):
        topology.select_server(None, timeout=5)
    data = [d for d in selection_records.data if d["topologyId"] == topology.topology_id]
    assert [d["message"] for d in data][-1] == sl.SERVER_SELECTION_FAILED
    assert data[-1]["failure"] == "ServerSelectionTimeoutError: the client is closed"
