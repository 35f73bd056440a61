"""A find cursor whose getMore fails, against a simulated standalone: after a command
error the server's cursor is killed (killCursors), unless the error says the server
no longer has it; the cursor is unusable either way."""

from __future__ import annotations

import pytest

pytest.importorskip("pyuca")

from mongocore.errors import OperationFailure
from mongocore.sim import Standalone
from tests.integration.sim_client import Recorder, configure_fail_point, sim_client


@pytest.mark.parametrize(("code", "killed"), [(7, True), (43, False), (237, False)])
def test_a_failed_get_more_kills_the_server_cursor(code: int, killed: bool) -> None:
    """The broken variants this catches: leaving the server's cursor open after a
    command error (it would live until the server times it out, and on a load
    balancer its pinned connection would be released without the killCursors the
    load-balancers suite expects), and sending killCursors for a cursor the error
    says is gone (CursorNotFound 43, CursorKilled 237)."""
    recorder = Recorder()
    with Standalone() as server, sim_client(server.uri, recorder) as client:
        coll = client["db"]["c"]
        coll.insert_many([{"_id": i} for i in range(5)])
        cursor = coll.find({}, batch_size=2)
        assert [next(cursor), next(cursor)] == [{"_id": 0}, {"_id": 1}]
        configure_fail_point(client, {"times": 1}, {"failCommands": ["getMore"], "errorCode": code})
        with pytest.raises(OperationFailure) as failed:
            next(cursor)
        assert failed.value.code == code
        with pytest.raises(StopIteration):
            next(cursor)
        kills = recorder.started_of("killCursors")
        assert bool(kills) is killed
        if killed:
            (cursor_id,) = kills[0].command["cursors"]
            with pytest.raises(OperationFailure) as gone:
                client["db"].command({"getMore": cursor_id, "collection": "c"})
            assert gone.value.code == 43  # the server has it no more
