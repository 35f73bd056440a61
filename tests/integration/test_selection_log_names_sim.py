"""The operation name in server selection's log messages, against a simulated replica set.

Server Selection, "Logging", ``operation``: the name of the public method, from the
OpenTelemetry specification's list of operations, where it has one (``runCommand``,
``countDocuments``, ``createCollection``, ``dropCollection``, ``watch``, a mixed
``bulkWrite``); otherwise the command's name (``count`` for estimated_document_count,
``findAndModify``, ``insert`` for a bulk of inserts). A bulk write selects once: its
later commands go where its first ran (tests/integration/test_bulk_write_server_sim.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca")

from mongocore.api.client import Client
from mongocore.api.operations import DeleteOne, InsertOne, UpdateOne
from mongocore.io.selection_log import SERVER_SELECTION_LOGGER
from mongocore.sim import ReplicaSet
from tests.integration.sim_client import sim_client
from tests.log_capture import LogRecords, capture


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    """A client for each test: the threads it starts (a sim connection's, a pool's)
    end with it (the thread-leak check of tests/conftest.py)."""
    with sim_client(rs.uri) as mongocore_client:
        # Waits for the primary: no "waiting" message in the tests below.
        mongocore_client["db"]["c"].insert_one({"_id": 1, "x": 1})
        yield mongocore_client


def _names(client: Client, action: Callable[[Client], Any]) -> list[str]:
    """The operation names of the "Server selection started" messages ``action`` logs."""
    with capture(SERVER_SELECTION_LOGGER) as records:
        action(client)
    return _started(records)


def _started(records: LogRecords) -> list[str]:
    return [d["operation"] for d in records.data if d["message"] == "Server selection started"]


def _watch(client: Client) -> None:
    with client["db"]["c"].watch():
        pass


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (lambda c: c["db"].command("ping"), ["runCommand"]),
        (lambda c: c["db"].cursor_command("listCollections").close(), ["runCommand"]),
        (lambda c: c["db"]["c"].count_documents({}), ["countDocuments"]),
        (lambda c: c["db"]["c"].estimated_document_count(), ["count"]),
        # (check_exists first lists the collections, as pymongo does.)
        (lambda c: c["db"].create_collection("made"), ["listCollections", "createCollection"]),
        (lambda c: c["db"].drop_collection("made"), ["dropCollection"]),
        (lambda c: c["db"]["gone"].drop(), ["dropCollection"]),
        (lambda c: c.drop_database("other"), ["dropDatabase"]),
        (_watch, ["watch"]),
        (
            lambda c: c["db"]["c"].find_one_and_update({"_id": 1}, {"$set": {"x": 2}}),
            ["findAndModify"],
        ),
        (lambda c: list(c["db"]["c"].find({})), ["find"]),
        (
            lambda c: c["db"]["c"].bulk_write(
                [
                    InsertOne({"_id": 2}),
                    UpdateOne({"_id": 2}, {"$set": {"y": 1}}),
                    DeleteOne({"_id": 2}),
                ]
            ),
            ["bulkWrite"],
        ),
        (
            lambda c: c["db"]["c"].bulk_write([InsertOne({"_id": 3}), InsertOne({"_id": 4})]),
            ["insert"],
        ),
    ],
    ids=[
        "command",
        "cursor_command",
        "count_documents",
        "estimated_document_count",
        "create_collection",
        "drop_collection",
        "collection.drop",
        "drop_database",
        "watch",
        "find_one_and_update",
        "find",
        "mixed bulk_write",
        "bulk_write of inserts",
    ],
)
def test_selection_logs_the_public_method_name(
    client: Client, action: Callable[[Client], Any], expected: list[str]
) -> None:
    """The broken variants this catches: logging the command's name for a helper that
    has a name of its own (``aggregate`` for count_documents and watch, ``create`` and
    ``drop`` for the collection helpers, ``ping`` for runCommand), a helper's name for
    one that has none (estimated_document_count is ``count``), and ``bulkWrite`` for a
    bulk whose requests all run as one kind of command."""
    assert _names(client, action) == expected


def test_a_transaction_logs_its_operations_and_its_commit(client: Client) -> None:
    """withTransaction: the callback's insert, then commitTransaction (no selection is
    logged for withTransaction itself)."""

    def run(c: Client) -> None:
        with c.start_session() as session:
            session.with_transaction(lambda s: c["db"]["c"].insert_one({"_id": 10}, session=s))

    assert _names(client, run) == ["insert", "commitTransaction"]
