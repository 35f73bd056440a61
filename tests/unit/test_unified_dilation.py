"""tests.spec.unified.dilation on made-up unified tests: which numbers it scales (the
durations of options, arguments, fail points, expectations and the runner's wait) and
which it leaves (data, other numbers, timeoutMS 0)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.unified.dilation import dilate

DOCUMENT: dict[str, Any] = {
    "description": "made up",
    "schemaVersion": "1.9",
    "createEntities": [
        {"client": {"id": "c", "uriOptions": {"timeoutMS": 100, "socketTimeoutMS": 0}}},
        {"collection": {"id": "coll", "collectionOptions": {"timeoutMS": 50}}},
    ],
    "initialData": [{"collectionName": "coll", "documents": [{"_id": 1, "waitMS": 7}]}],
}
TEST: dict[str, Any] = {
    "description": "a block raced against a timeout",
    "operations": [
        {
            "name": "failPoint",
            "object": "testRunner",
            "arguments": {
                "failPoint": {
                    "mode": {"times": 2},
                    "data": {"failCommands": ["find"], "blockTimeMS": 125},
                }
            },
        },
        {"name": "wait", "object": "testRunner", "arguments": {"ms": 10}},
        {
            "name": "find",
            "object": "coll",
            "arguments": {"filter": {"durationMS": 3}, "maxTimeMS": 40, "batchSize": 2},
        },
    ],
    "expectEvents": [
        {
            "client": "c",
            "events": [
                {
                    "commandStartedEvent": {
                        "command": {
                            "maxTimeMS": {"$$lte": 450},
                            "writeConcern": {"wtimeout": 20},
                            "getMore": {"$$type": ["int", "long"]},
                        }
                    }
                }
            ],
        }
    ],
    "outcome": [{"collectionName": "coll", "documents": [{"_id": 1, "waitMS": 7}]}],
}


def test_every_duration_is_scaled_and_nothing_else() -> None:
    document, test = dilate(DOCUMENT, TEST, 3)
    client, collection = (next(iter(e.values())) for e in document["createEntities"])
    assert client["uriOptions"] == {"timeoutMS": 300, "socketTimeoutMS": 0}
    assert collection["collectionOptions"] == {"timeoutMS": 150}
    point, wait, find = test["operations"]
    assert point["arguments"]["failPoint"]["data"]["blockTimeMS"] == 375
    assert point["arguments"]["failPoint"]["mode"] == {"times": 2}
    assert wait["arguments"] == {"ms": 30}
    assert find["arguments"]["maxTimeMS"] == 120
    assert find["arguments"]["batchSize"] == 2
    assert find["arguments"]["filter"] == {"durationMS": 3}  # a document, not an option
    command = test["expectEvents"][0]["events"][0]["commandStartedEvent"]["command"]
    assert command["maxTimeMS"] == {"$$lte": 1350}
    assert command["writeConcern"] == {"wtimeout": 60}
    assert command["getMore"] == {"$$type": ["int", "long"]}
    # The data is not a duration: initialData and outcome stay as they are.
    assert document["initialData"] == DOCUMENT["initialData"]
    assert test["outcome"] == TEST["outcome"]


def test_the_originals_are_not_changed_and_a_factor_of_one_changes_nothing() -> None:
    before = repr((DOCUMENT, TEST))
    assert dilate(DOCUMENT, TEST, 1) == (DOCUMENT, TEST)
    dilate(DOCUMENT, TEST, 4)
    assert repr((DOCUMENT, TEST)) == before


def test_a_factor_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        dilate(DOCUMENT, TEST, 0)
