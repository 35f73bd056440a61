"""The simulator's ``ReplicaSet.kill_after_write``: the primary dies right after it
applied a write, before replying; a retry of the same retryable write on the next
primary is answered from the session's record, not applied again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bson import ObjectId

from mongocore.sim import DOWN, SECONDARY, ReplicaSet
from tests.unit.sim_wire import connect


@pytest.fixture
def rs() -> Iterator[ReplicaSet]:
    with ReplicaSet(3, election_delay=0.02) as replica_set:
        yield replica_set


def _counter(rs: ReplicaSet) -> Any:
    with rs.cond:
        found = rs.store.latest.find("db", "c", {"_id": 1})
        return found[0] if found else None


def test_the_write_is_applied_the_reply_lost_and_a_retry_not_applied_again(
    rs: ReplicaSet,
) -> None:
    old = rs.wait_for_primary()
    lsid = {"id": ObjectId().binary}
    with connect(old) as client:
        client.command("db", {"insert": "c", "documents": [{"_id": 1, "n": 0}]})
    rs.kill_after_write(old)
    inc = {
        "update": "c",
        "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}],
        "lsid": lsid,
        "txnNumber": 1,
    }
    with connect(old) as client:
        client.send_msg("db", inc)
        assert client.closed_by_peer()
    assert old.role == DOWN and not old.alive
    assert _counter(rs) == {"_id": 1, "n": 1}
    new = rs.wait_for_primary()
    assert new is not old
    with connect(new) as client:
        retry = client.command("db", inc)
        assert retry["ok"] == 1.0 and retry["n"] == 1 and retry["nModified"] == 1
        assert _counter(rs) == {"_id": 1, "n": 1}
        # A new txnNumber is a new write: applied.
        again = client.command("db", {**inc, "txnNumber": 2})
        assert again["nModified"] == 1
    assert _counter(rs) == {"_id": 1, "n": 2}
    rs.restart(old)
    assert old.role == SECONDARY and old.after_write is None


def test_commands_that_change_nothing_do_not_trigger_it_and_disarming_works(
    rs: ReplicaSet,
) -> None:
    primary = rs.wait_for_primary()
    rs.kill_after_write(primary)
    with connect(primary) as client:
        client.command("db", {"find": "c", "filter": {}})
        nothing = client.command(
            "db", {"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$set": {"a": 1}}}]}
        )
        assert nothing["n"] == 0
        assert primary.alive and primary.after_write is not None
        rs.kill_after_write(primary, armed=False)
        assert client.command("db", {"insert": "c", "documents": [{"_id": 1}]})["n"] == 1
    assert primary.alive and rs.primary is primary


def test_a_plain_write_kills_it_too_and_a_down_member_cannot_be_armed(rs: ReplicaSet) -> None:
    primary = rs.wait_for_primary()
    rs.kill_after_write(primary)
    with connect(primary) as client:
        client.send_msg("db", {"insert": "c", "documents": [{"_id": 7}]})
        assert client.closed_by_peer()
    assert not primary.alive
    with rs.cond:
        assert len(rs.store.latest.find("db", "c", {"_id": 7})) == 1
    with pytest.raises(RuntimeError, match="down"):
        rs.kill_after_write(primary)


def test_a_commit_kills_it_after_applying_the_transaction(rs: ReplicaSet) -> None:
    """The primary dies after applying a commit: the transaction's writes are in the
    set's data, the reply is lost, and the retried commit on the next primary succeeds."""
    old = rs.wait_for_primary()
    lsid = {"id": ObjectId().binary}
    txn = {"lsid": lsid, "txnNumber": 1, "autocommit": False}
    commit = {"commitTransaction": 1, **txn}
    with connect(old) as client:
        client.command("db", {"create": "c"})
        started = client.command(
            "db",
            {"insert": "c", "documents": [{"_id": 1, "n": 0}], **txn, "startTransaction": True},
        )
        assert started["ok"] == 1.0
        rs.kill_after_write(old)
        client.send_msg("admin", commit)
        assert client.closed_by_peer()
    assert old.role == DOWN and not old.alive
    assert _counter(rs) == {"_id": 1, "n": 0}
    new = rs.wait_for_primary()
    with connect(new) as client:
        assert client.command("admin", commit)["ok"] == 1.0
    assert _counter(rs) == {"_id": 1, "n": 0}


def test_a_transaction_statement_or_an_abort_does_not_trigger_it(rs: ReplicaSet) -> None:
    primary = rs.wait_for_primary()
    lsid = {"id": ObjectId().binary}
    txn = {"lsid": lsid, "txnNumber": 1, "autocommit": False}
    with connect(primary) as client:
        client.command("db", {"create": "c"})
        rs.kill_after_write(primary)
        statement = {"insert": "c", "documents": [{"_id": 1}], **txn, "startTransaction": True}
        assert client.command("db", statement)["ok"] == 1.0  # written to its workspace
        assert client.command("admin", {"abortTransaction": 1, **txn})["ok"] == 1.0
    assert primary.alive and primary.after_write is not None
