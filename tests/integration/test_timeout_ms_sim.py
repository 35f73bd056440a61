"""timeoutMS (Client Side Operations Timeout) against the simulated deployment: the
maxTimeMS it gives each command, what it replaces (a given maxTimeMS, socketTimeoutMS),
a cursor's lifetime, the database and collection levels, and the killCursors of a
cursor whose getMore timed out.

The tests assert what was sent and which error came, never durations. Where one
must outlast another, the fail points block for seconds, far longer than a command
needs on a busy machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from mongocore.errors import ExecutionTimeout, NetworkTimeout
from mongocore.sim import Standalone
from tests.integration.sim_client import Recorder, sim_client

#: A timeoutMS no command here comes near.
AMPLE = 20_000


@pytest.fixture
def standalone() -> Iterator[Standalone]:
    with Standalone() as server:
        yield server


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def max_time_ms(recorder: Recorder, name: str) -> list[object]:
    """The maxTimeMS of each ``name`` command sent (None where it had none)."""
    return [event.command.get("maxTimeMS") for event in recorder.started_of(name)]


def test_timeout_ms_gives_each_command_but_get_more_a_max_time_ms(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder, timeoutMS=AMPLE) as client:
        coll = client["app"]["items"]
        coll.insert_many([{"_id": i} for i in range(3)])
        with coll.find({}, batch_size=1) as cursor:
            assert next(cursor)["_id"] == 0
            assert next(cursor)["_id"] == 1  # a getMore
        for name in ("insert", "find", "killCursors"):
            (value,) = max_time_ms(recorder, name)
            assert isinstance(value, int) and 0 < value <= AMPLE, (name, value)
        # CSOT, "Non-tailable Cursors": a getMore never carries one.
        assert max_time_ms(recorder, "getMore") == [None]


def test_without_timeout_ms_no_max_time_ms_is_added(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 1})
        coll.find_one({})
        coll.find_one({}, max_time_ms=12_345)
    assert max_time_ms(recorder, "insert") == [None]
    assert max_time_ms(recorder, "find") == [None, 12_345]


def test_timeout_ms_replaces_a_given_max_time_ms(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder) as client:
        client["app"]["items"].find_one({}, max_time_ms=600_000, timeout_ms=AMPLE)
    (value,) = max_time_ms(recorder, "find")
    assert isinstance(value, int) and value <= AMPLE


def test_timeout_ms_replaces_socket_timeout_ms(standalone: Standalone, recorder: Recorder) -> None:
    """A find the server holds longer than socketTimeoutMS succeeds within timeoutMS,
    at its first attempt: socketTimeoutMS (deprecated) no longer bounds its reply."""
    with sim_client(standalone.uri, recorder, socketTimeoutMS=300) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 1})
        standalone.member.fail_command("find", block_time_ms=1_500, mode={"times": 1})
        recorder.clear()
        assert coll.find_one({}, timeout_ms=AMPLE) == {"_id": 1}
        assert len(recorder.started_of("find")) == 1
        assert recorder.failed_of("find") == []


def test_a_cursors_get_mores_share_the_timeout_ms_of_its_find(
    standalone: Standalone, recorder: Recorder
) -> None:
    """timeoutMS bounds a cursor's life, not each command: a find and a getMore that
    each take less than timeoutMS, and together more, end in a timeout."""
    with sim_client(standalone.uri, recorder) as client:
        coll = client["app"]["items"]
        coll.insert_many([{"_id": i} for i in range(4)])
        standalone.member.fail_command("find", "getMore", block_time_ms=3_000)
        try:
            with coll.find({}, batch_size=2, timeout_ms=5_000) as cursor:
                assert [next(cursor)["_id"], next(cursor)["_id"]] == [0, 1]
                with pytest.raises(NetworkTimeout):
                    next(cursor)
        finally:
            standalone.member.clear_fail_points()
    assert len(recorder.started_of("getMore")) == 1


def test_a_cursor_past_its_lifetime_returns_its_batch_then_times_out(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder) as client:
        coll = client["app"]["items"]
        coll.insert_many([{"_id": i} for i in range(4)])
        cursor = coll.find({}, batch_size=2, timeout_ms=AMPLE)
        assert next(cursor)["_id"] == 0
        cursor._expires = time.monotonic() - 1  # its timeoutMS ran out meanwhile
        assert next(cursor)["_id"] == 1  # still in the batch
        with pytest.raises(ExecutionTimeout) as caught:
            next(cursor)
        assert caught.value.timeout and caught.value.code == 50
    assert recorder.started_of("getMore") == []
    # The server's cursor is killed, with timeoutMS afresh.
    (value,) = max_time_ms(recorder, "killCursors")
    assert isinstance(value, int) and value > 0


def test_a_get_more_that_timed_out_kills_the_cursor(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder) as client:
        coll = client["app"]["items"]
        coll.insert_many([{"_id": i} for i in range(3)])
        cursor = coll.find({}, batch_size=1, timeout_ms=1_000)
        assert next(cursor)["_id"] == 0
        standalone.member.fail_command("getMore", block_time_ms=5_000, mode={"times": 1})
        with pytest.raises(NetworkTimeout):
            next(cursor)
        cursor.close()
    (kill,) = recorder.started_of("killCursors")
    assert kill.command["cursors"] == [recorder.started_of("getMore")[0].command["getMore"]]


def test_databases_and_collections_take_a_timeout_ms(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder, timeoutMS=AMPLE) as client:
        database = client.get_database("app", timeout_ms=5_000)
        inherited = database["items"]
        inherited.insert_one({"_id": 1})
        inherited.create_index("x")
        inherited.find_one({}, timeout_ms=3_000)  # the operation's own wins
        unlimited = database.get_collection("items", timeout_ms=0)
        unlimited.find_one({})
        again = unlimited.with_options(timeout_ms=4_000)
        assert again.find_one({}) == {"_id": 1}
        assert database.with_options(timeout_ms=0)["items"].find_one({}) == {"_id": 1}
    (insert,) = max_time_ms(recorder, "insert")
    (create_index,) = max_time_ms(recorder, "createIndexes")
    assert isinstance(insert, int) and 3_000 < insert <= 5_000
    assert isinstance(create_index, int) and 3_000 < create_index <= 5_000
    own, none, four, none_again = max_time_ms(recorder, "find")
    assert isinstance(own, int) and own <= 3_000
    assert isinstance(four, int) and 3_000 < four <= 4_000
    assert none is None and none_again is None  # 0: no limit, not the client's


@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), ("5", TypeError), (True, TypeError)]
)
def test_a_timeout_ms_that_is_no_number_of_milliseconds_is_refused(
    standalone: Standalone, value: object, error: type[Exception]
) -> None:
    with sim_client(standalone.uri) as client:
        with pytest.raises(error):
            client.get_database("app", timeout_ms=value)  # type: ignore[arg-type]
        with pytest.raises(error):
            client["app"].get_collection("items", timeout_ms=value)  # type: ignore[arg-type]
        with pytest.raises(error):
            client["app"]["items"].find_one({}, timeout_ms=value)  # type: ignore[arg-type]


def test_timeout_ms_replaces_the_write_concerns_wtimeout(
    standalone: Standalone, recorder: Recorder
) -> None:
    with sim_client(standalone.uri, recorder, w=1, wTimeoutMS=60_000) as client:
        coll = client["app"]["items"]
        coll.insert_one({"_id": 1})
        coll.insert_one({"_id": 2}, timeout_ms=AMPLE)
    concerns = [event.command.get("writeConcern") for event in recorder.started_of("insert")]
    assert concerns == [{"w": 1, "wtimeout": 60_000}, {"w": 1}]


def test_the_index_operations_take_a_timeout_ms(standalone: Standalone, recorder: Recorder) -> None:
    with sim_client(standalone.uri, recorder) as client:
        coll = client["app"]["items"]
        coll.create_index("x", timeout_ms=3_000)
        coll.drop_index("x_1", timeout_ms=3_000)
        coll.drop_indexes(timeout_ms=3_000)
        coll.create_index("y")
    values = max_time_ms(recorder, "createIndexes") + max_time_ms(recorder, "dropIndexes")
    given, unbounded, dropped_one, dropped_all = values[0], values[1], values[2], values[3]
    for value in (given, dropped_one, dropped_all):
        assert isinstance(value, int) and value <= 3_000
    assert unbounded is None
