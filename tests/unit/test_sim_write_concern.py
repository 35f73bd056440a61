"""Write concern as a MongoDB 7.0 replica set and standalone answer it
(sim/write_concern.py; MongoDB manual, "Write Concern"): the write is applied, then the
primary waits for its write concern, and one it cannot satisfy is reported in
``writeConcernError`` beside the result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mongocore.sim import ReplicaSet, Standalone
from tests.unit.sim_wire import RawClient, connect


def _insert(client: RawClient, doc: dict[str, Any], **write_concern: Any) -> dict[str, Any]:
    cmd: dict[str, Any] = {"insert": "c", "documents": [doc]}
    if write_concern:
        cmd["writeConcern"] = write_concern
    reply: dict[str, Any] = client.command("db", cmd)
    return reply


def _count(client: RawClient) -> int:
    return int(client.command("db", {"count": "c"})["n"])


def _applied(w: Any, wtimeout: int = 0, **extra: Any) -> dict[str, Any]:
    return {"w": w, **extra, "wtimeout": wtimeout, "provenance": "clientSupplied"}


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(
        3,
        election_delay=0.02,
        tags=[{"dc": "east"}, {"dc": "west"}, {"dc": "west"}],
        write_concern_modes={"twoDCs": {"dc": 2}, "threeDCs": {"dc": 3}},
    ) as replica_set:
        yield replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[RawClient]:
    with connect(rs.wait_for_primary()) as raw:
        yield raw


def test_satisfiable_write_concerns_are_acknowledged(client: RawClient) -> None:
    for n, write_concern in enumerate(
        [
            {"w": 1},
            {"w": 3},
            {"w": "majority"},
            {"w": "majority", "j": True},
            {"w": 2, "j": 1, "wtimeout": 1000},
            {"w": "twoDCs"},
        ]
    ):
        reply = _insert(client, {"_id": n}, **write_concern)
        assert reply["ok"] == 1.0 and reply["n"] == 1, write_concern
        assert "writeConcernError" not in reply, write_concern


def test_more_members_than_the_set_has(client: RawClient) -> None:
    reply = _insert(client, {"_id": 1}, w=5)
    assert reply["ok"] == 1.0 and reply["n"] == 1  # applied all the same
    assert reply["writeConcernError"] == {
        "code": 100,
        "codeName": "UnsatisfiableWriteConcern",
        "errmsg": "Not enough data-bearing nodes",
        "errInfo": {"writeConcern": _applied(5)},
    }
    assert _count(client) == 1


def test_a_write_concern_the_set_cannot_satisfy_in_time(rs: ReplicaSet, client: RawClient) -> None:
    primary = rs.wait_for_primary()
    down = next(m for m in rs.members if m is not primary)
    rs.kill(down)
    assert rs.wait_for(lambda: rs.primary is primary)
    reply = _insert(client, {"_id": 1}, w=3, wtimeout=100)
    assert reply["ok"] == 1.0 and reply["n"] == 1
    assert reply["writeConcernError"] == {
        "code": 64,
        "codeName": "WriteConcernFailed",
        "errmsg": "waiting for replication timed out",
        "errInfo": {"wtimeout": True, "writeConcern": _applied(3, 100)},
    }
    # The two members left are a majority, and two members.
    assert "writeConcernError" not in _insert(client, {"_id": 2}, w="majority")
    assert "writeConcernError" not in _insert(client, {"_id": 3}, w=2, wtimeout=100)
    assert _count(client) == 3


def test_max_time_ms_ends_the_wait(rs: ReplicaSet, client: RawClient) -> None:
    primary = rs.wait_for_primary()
    rs.kill(next(m for m in rs.members if m is not primary))
    cmd = {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 3}, "maxTimeMS": 100}
    reply = client.command("db", cmd)
    assert reply["ok"] == 1.0
    error = reply["writeConcernError"]
    assert (error["code"], error["codeName"]) == (50, "MaxTimeMSExpired")


def test_a_lagging_member_is_waited_for() -> None:
    rs = ReplicaSet(2, election_delay=0.02, lag=[0.0, 0.2])
    with rs, connect(rs.wait_for_primary()) as client:
        reply = _insert(client, {"_id": 1}, w=2, wtimeout=30_000)
        assert "writeConcernError" not in reply
        lagging = rs.members[1]
        with rs.cond:
            assert lagging.applied_optime().ts >= rs.store.last_optime.ts


def test_tag_set_modes(rs: ReplicaSet, client: RawClient) -> None:
    config = client.command("admin", {"replSetGetConfig": 1})["config"]
    assert config["settings"]["getLastErrorModes"] == {
        "twoDCs": {"dc": 2},
        "threeDCs": {"dc": 3},
    }
    unsatisfiable = _insert(client, {"_id": 1}, w="threeDCs")
    assert unsatisfiable["writeConcernError"]["code"] == 100
    assert unsatisfiable["writeConcernError"]["errmsg"] == (
        'Not enough nodes match write concern mode "threeDCs"'
    )
    unknown = _insert(client, {"_id": 2}, w="nowhere")
    assert unknown["writeConcernError"] == {
        "code": 79,
        "codeName": "UnknownReplWriteConcern",
        "errmsg": "No write concern mode named 'nowhere' found in replica set configuration",
        "errInfo": {"writeConcern": _applied("nowhere")},
    }
    assert _count(client) == 2


def test_a_write_concern_a_server_cannot_parse_is_refused_before_the_write(
    client: RawClient,
) -> None:
    for write_concern in ({"j": "yes"}, {"w": -1}, {"wtimeout": "soon"}):
        reply = _insert(client, {"_id": 1}, **write_concern)
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0.0, 9, "FailedToParse")
    assert _count(client) == 0


def test_a_standalone_refuses_w_greater_than_one() -> None:
    with Standalone() as standalone, connect(standalone.member) as client:
        reply = _insert(client, {"_id": 1}, w=2)
        assert reply["ok"] == 1.0 and reply["n"] == 1
        assert reply["writeConcernError"] == {
            "code": 2,
            "codeName": "BadValue",
            "errmsg": "cannot use 'w' > 1 on a standalone",
            "errInfo": {"writeConcern": _applied(2)},
        }
        mode = _insert(client, {"_id": 2}, w="twoDCs")["writeConcernError"]
        assert (mode["code"], mode["errmsg"]) == (
            2,
            "cannot use non-majority 'w' mode twoDCs when a host is not a member of a replica set",
        )
        for n, write_concern in enumerate(({"w": 1}, {"w": "majority"}, {"j": True}), 3):
            assert "writeConcernError" not in _insert(client, {"_id": n}, **write_concern)
        assert _count(client) == 5
