"""The simulated primary's answer to a commit or abort whose write concern it cannot
satisfy (sim/write_concern.py): the transaction is committed (or aborted) all the same,
and the reply carries the writeConcernError a 7.0 server gives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bson import ObjectId

from mongocore.sim import ReplicaSet
from tests.unit.sim_wire import RawClient, connect


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[RawClient]:
    with connect(rs.wait_for_primary()) as raw:
        raw.command("db", {"create": "c"})
        yield raw
        raw.command("db", {"drop": "c"})


@pytest.mark.parametrize("end", ["commitTransaction", "abortTransaction"])
@pytest.mark.parametrize(
    ("write_concern", "unsatisfiable"),
    [
        ({"w": 10}, True),
        ({"w": 4, "wtimeout": 5}, True),
        ({"w": 3}, False),
        ({"w": "majority"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_more_members_than_data_bearing_ones_cannot_be_satisfied(
    client: RawClient, end: str, write_concern: Any, unsatisfiable: bool
) -> None:
    txn = {"lsid": {"id": ObjectId().binary}, "txnNumber": 1, "autocommit": False}
    first = {"insert": "c", "documents": [{"_id": 1}], "startTransaction": True, **txn}
    assert client.command("db", first)["ok"] == 1.0
    cmd: dict[str, Any] = {end: 1, **txn}
    if write_concern is not None:
        cmd["writeConcern"] = write_concern
    reply = client.command("admin", cmd)
    assert reply["ok"] == 1.0  # the commit (or abort) is done either way
    committed = end == "commitTransaction"
    assert client.command("db", {"count": "c"})["n"] == (1 if committed else 0)
    if unsatisfiable:
        assert reply["writeConcernError"] == {
            "code": 100,
            "codeName": "UnsatisfiableWriteConcern",
            "errmsg": "Not enough data-bearing nodes",
            "errInfo": {
                "writeConcern": {
                    "w": write_concern["w"],
                    "wtimeout": write_concern.get("wtimeout", 0),
                    "provenance": "clientSupplied",
                }
            },
        }
    else:
        assert "writeConcernError" not in reply
