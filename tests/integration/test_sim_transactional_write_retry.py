"""A retrying client against the simulator's ``onPrimaryTransactionalWrite`` fail point:
each statement of a multi-statement write is applied exactly once."""

from __future__ import annotations

import pytest

pytest.importorskip("pyuca")

from mongocore.errors import NetworkError
from mongocore.sim import ReplicaSet
from tests.integration.sim_client import Recorder, sim_client


def test_a_cut_off_insert_many_is_retried_and_applied_once(rs: ReplicaSet) -> None:
    recorder = Recorder()
    with sim_client(rs.uri, recorder, retryWrites=True) as client:
        coll = client["db"]["c"]
        primary = rs.primary
        assert primary is not None
        primary.configure_fail_point("onPrimaryTransactionalWrite", {"times": 1})
        coll.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
        inserts = recorder.started_of("insert")
        assert len(inserts) == 2
        assert inserts[0].command["txnNumber"] == inserts[1].command["txnNumber"]
        replies = recorder.succeeded_of("insert")
        assert len(replies) == 1 and replies[0].reply["n"] == 3
        assert coll.count_documents({}) == 3


def test_without_retry_writes_the_fail_point_never_acts(rs: ReplicaSet) -> None:
    recorder = Recorder()
    with sim_client(rs.uri, recorder, retryWrites=False) as client:
        coll = client["db"]["c"]
        primary = rs.primary
        assert primary is not None
        primary.configure_fail_point(
            "onPrimaryTransactionalWrite", "alwaysOn", {"failBeforeCommitExceptionCode": 1}
        )
        coll.insert_one({"_id": 1})
        assert "txnNumber" not in recorder.started_of("insert")[0].command
        assert coll.count_documents({}) == 1
        assert primary.configure_fail_point("onPrimaryTransactionalWrite", "off") == 0


def test_a_write_failing_on_every_attempt_is_never_applied(rs: ReplicaSet) -> None:
    with sim_client(rs.uri, retryWrites=True) as client:
        coll = client["db"]["c"]
        primary = rs.primary
        assert primary is not None
        primary.configure_fail_point(
            "onPrimaryTransactionalWrite", {"times": 2}, {"failBeforeCommitExceptionCode": 1}
        )
        with pytest.raises(NetworkError):
            coll.insert_one({"_id": 1})
        assert coll.count_documents({}) == 0
