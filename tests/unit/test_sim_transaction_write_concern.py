"""The simulated server's answer to a commit or abort whose write concern asks for more
members than the set has (sim/transaction_rules.py, with_write_concern)."""

from __future__ import annotations

from typing import Any

import pytest

from mongocore.sim.transaction_rules import with_write_concern


@pytest.mark.parametrize(
    ("write_concern", "unsatisfiable"),
    [
        ({"w": 10}, True),
        ({"w": 4, "wtimeout": 5}, True),
        ({"w": 3}, False),
        ({"w": "majority"}, False),
        ({"w": True}, False),
        ({}, False),
        (None, False),
    ],
)
def test_more_members_than_data_bearing_ones_cannot_be_satisfied(
    write_concern: Any, unsatisfiable: bool
) -> None:
    cmd: dict[str, Any] = {"commitTransaction": 1}
    if write_concern is not None:
        cmd["writeConcern"] = write_concern
    reply = with_write_concern({"ok": 1.0}, cmd, data_members=3)
    assert reply["ok"] == 1.0  # the commit is done either way
    if unsatisfiable:
        assert reply["writeConcernError"] == {
            "code": 100,
            "codeName": "UnsatisfiableWriteConcern",
            "errmsg": "Not enough data-bearing nodes",
        }
    else:
        assert "writeConcernError" not in reply
