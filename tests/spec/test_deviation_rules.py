"""The rules of specs/deviations.toml hold for files they have never seen.

An entry selects tests by what they do, never by their ids. These tests take every
visible upstream file of the suites the rules cover, rename it and rewrite every
description, and check that each rule selects exactly the same tests, and that each
seed transformation turns them into exactly the same expectations. A rule written as
a list of ids or file names would select nothing in the renamed copies and fail here.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.spec import deviations, specdata
from tests.spec.unified import seed

#: Suites in the unified format whose folder is not named "unified".
UNIFIED_FORMAT_FOLDERS = frozenset({"sessions/tests", "load-balancers/tests"})


def _runner_suites() -> set[str]:
    """The suites the unified runners run: each tests/spec/unified/test_*.py names its
    SUITE (the suites an entry with ``suite = "unified"`` covers)."""
    found = set()
    for module in (Path(__file__).parent / "unified").glob("test_*.py"):
        text = module.read_text(encoding="utf-8")
        named = re.search(r'^SUITE = "([^"]+)"$', text, re.M)
        if named:
            found.add(named.group(1))
        # A module running several suites names each in a SUITES tuple of constants.
        listed = re.search(r"^SUITES = \(([^)]*)\)$", text, re.M)
        for constant in listed.group(1).split(",") if listed else ():
            value = re.search(rf'^{constant.strip()} = "([^"]+)"$', text, re.M)
            if value:
                found.add(value.group(1))
    return found


_LISTED = {
    listed
    for kind in deviations.KINDS
    for entry in deviations.entries()[kind]
    for listed in deviations._suites(entry)
}
UNIFIED_SUITES = sorted(
    {s for s in _LISTED if s.endswith("/unified") or s in UNIFIED_FORMAT_FOLDERS}
    | (_runner_suites() if deviations.UNIFIED in _LISTED else set())
)


def _selected(suite: str, document: Mapping[str, Any], test: Mapping[str, Any]) -> list[int]:
    """Indexes of the entries (deviations, then not-applicable) whose rule selects it."""
    found = []
    for kind in deviations.KINDS:
        for index, entry in enumerate(deviations.entries()[kind]):
            if deviations.in_scope(entry, suite, document) and deviations.matches(
                entry, document, test
            ):
                found.append(index if kind == "deviation" else 1000 + index)
    return found


def _renamed(document: Mapping[str, Any]) -> dict[str, Any]:
    """The file as another name would hold it: new descriptions everywhere."""
    copied = copy.deepcopy(dict(document))
    copied["description"] = f"renamed file {copied.get('description', '')[::-1]}"
    for number, test in enumerate(copied.get("tests", [])):
        test["description"] = f"case {number}: {str(test.get('description', ''))[::-1]}"
    return copied


def _without_descriptions(test: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in test.items() if k != "description"}


def _files(suite: str) -> list[Any]:
    return specdata.json_files(suite)


@pytest.mark.parametrize(
    "suite_path",
    [
        pytest.param((suite, param.values[0]), id=f"{suite}/{param.id}")
        for suite in UNIFIED_SUITES
        for param in _files(suite)
    ],
)
def test_rules_select_the_same_tests_in_a_renamed_file(suite_path: tuple[str, Path]) -> None:
    suite, path = suite_path
    if path is None:
        pytest.skip("spec suite not available")
    original = specdata.load_extended(path)
    renamed = _renamed(original)
    for before, after in zip(original["tests"], renamed["tests"]):
        assert _selected(suite, original, before) == _selected(suite, renamed, after), (
            f"{path.name}: {before.get('description')!r} is selected differently once renamed"
        )
        for index in _selected(suite, original, before):
            if index >= 1000:
                continue  # not applicable: nothing to transform
            name = str(deviations.entries()["deviation"][index].get("transform", ""))
            if not name:
                continue
            expected = seed.transform(name, original, before)
            actual = seed.transform(name, renamed, after)
            assert _without_descriptions(expected) == _without_descriptions(actual)


def _case(operations: list[Any], uri_options: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    document = {
        "description": "a file no one has seen",
        "createEntities": [
            {"client": {"id": "c", "uriOptions": dict(uri_options)}},
            {"database": {"id": "d", "client": "c", "databaseName": "db"}},
            {"collection": {"id": "coll", "database": "d", "collectionName": "x"}},
        ],
        "tests": [{"description": "made up", "operations": operations}],
    }
    return document, document["tests"][0]


def _fail(commands: list[str], **data: Any) -> dict[str, Any]:
    return {
        "name": "failPoint",
        "object": "testRunner",
        "arguments": {
            "client": "c",
            "failPoint": {
                "configureFailPoint": "failCommand",
                "mode": {"times": data.pop("times", 1)},
                "data": {"failCommands": commands, **data},
            },
        },
    }


def test_a_new_shape_of_file_is_selected_by_what_it_does() -> None:
    """Made-up tests of the covered shapes, in no upstream file, are selected."""
    write = {"name": "updateOne", "object": "coll", "arguments": {"filter": {}, "update": {}}}
    document, test = _case([_fail(["update"], errorCode=112), write], {})
    assert seed.SHAPES[seed.WRITES_DEFAULT_OFF](document, test)
    assert not seed.SHAPES[seed.WRITES_SEED_ERRORS](document, test)
    document, test = _case([_fail(["update"], errorCode=112), write], {"retryWrites": True})
    assert not seed.SHAPES[seed.WRITES_DEFAULT_OFF](document, test)
    assert seed.SHAPES[seed.WRITES_SEED_ERRORS](document, test)
    read = {"name": "distinct", "object": "coll", "arguments": {"fieldName": "a", "filter": {}}}
    document, test = _case([_fail(["distinct"], errorCode=91, times=3), read], {})
    assert seed.SHAPES[seed.READS_SEED](document, test)
    document, test = _case([_fail(["distinct"], errorCode=91), read], {"retryReads": False})
    assert not seed.SHAPES[seed.READS_SEED](document, test)


def test_a_labeled_error_the_seed_does_not_retry_fails_at_the_first_attempt() -> None:
    write = {
        "name": "insertOne",
        "object": "coll",
        "arguments": {"document": {"_id": 1}},
        "expectResult": {"insertedId": 1},
    }
    document, test = _case(
        [_fail(["insert"], errorCode=112, errorLabels=["RetryableWriteError"]), write],
        {"retryWrites": True},
    )
    test["expectEvents"] = [
        {
            "client": "c",
            "events": [
                {"commandStartedEvent": {"commandName": "insert"}},
                {"commandStartedEvent": {"commandName": "insert"}},
            ],
        }
    ]
    changed = seed.transform(seed.WRITES_SEED_ERRORS, document, test)
    operation = changed["operations"][1]
    assert "expectResult" not in operation
    assert operation["expectError"]["errorCode"] == 112
    assert operation["expectError"]["errorLabelsContain"] == ["RetryableWriteError"]
    assert changed["expectEvents"][0]["events"] == [
        {"commandStartedEvent": {"commandName": "insert"}}
    ]


def test_an_unlabeled_recovering_error_is_retried_once_under_the_seed() -> None:
    write = {
        "name": "insertOne",
        "object": "coll",
        "arguments": {"document": {"_id": 1}},
        "expectError": {"isError": True},
    }
    document, test = _case([_fail(["insert"], errorCode=11600, errorLabels=[]), write], {})
    test["expectEvents"] = [
        {"client": "c", "events": [{"commandStartedEvent": {"commandName": "insert"}}]}
    ]
    test["outcome"] = [{"databaseName": "db", "collectionName": "x", "documents": []}]
    seed.opt_in_retry_writes(document, test)
    changed = seed.transform(seed.WRITES_SEED_ERRORS, document, test)
    operation = changed["operations"][1]
    assert "expectError" not in operation  # the retry succeeds
    assert changed[seed.OUTCOME_CHANGED_FROM_SNAPSHOT] is True
    assert len(changed["expectEvents"][0]["events"]) == 2


def test_a_read_failed_with_a_code_outside_the_seeds_list_is_not_retried() -> None:
    read = {
        "name": "find",
        "object": "coll",
        "arguments": {"filter": {}},
        "expectResult": [],
    }
    document, test = _case([_fail(["find"], errorCode=134), read], {})
    started = {"commandStartedEvent": {"commandName": "find"}}
    test["expectEvents"] = [{"client": "c", "events": [started, started]}]
    changed = seed.transform(seed.READS_SEED, document, test)
    operation = changed["operations"][1]
    assert operation["expectError"] == {"errorCode": 134}
    assert "expectResult" not in operation
    assert changed["expectEvents"][0]["events"] == [started]


def test_a_read_failed_n_times_with_a_seed_error_succeeds_on_attempt_n_plus_one() -> None:
    read = {
        "name": "find",
        "object": "coll",
        "arguments": {"filter": {}},
        "expectError": {"isError": True},
    }
    document, test = _case([_fail(["find"], errorCode=10107, times=3), read], {})
    started = {"commandStartedEvent": {"commandName": "find"}}
    test["expectEvents"] = [{"client": "c", "events": [started, started]}]
    changed = seed.transform(seed.READS_SEED, document, test)
    assert "expectError" not in changed["operations"][1]
    assert changed["expectEvents"][0]["events"] == [started] * 4


def test_the_argument_condition_matches_top_level_arguments_only() -> None:
    capped = {
        "name": "createCollection",
        "object": "d",
        "arguments": {"collection": "x", "capped": True, "size": 4096},
    }
    document, test = _case([capped], {})
    for value in (["capped"], ["viewOn", "capped"], ["createCollection.capped"]):
        assert deviations.matches({"when": {"argument": value}}, document, test), value
    for value in (["viewOn"], ["runCommand.capped"], ["createCollection.x"]):
        assert not deviations.matches({"when": {"argument": value}}, document, test), value
    # The same key in a document the operation is given is data, not an argument;
    # query_operator, which looks at every depth, still sees it.
    insert = {
        "name": "insertOne",
        "object": "coll",
        "arguments": {"document": {"_id": 1, "capped": True}},
    }
    document, test = _case([insert], {})
    assert not deviations.matches({"when": {"argument": ["capped"]}}, document, test)
    assert deviations.matches({"when": {"query_operator": ["capped"]}}, document, test)
    # An operation run on a thread is an operation of the test too.
    on_thread = {
        "name": "runOnThread",
        "object": "testRunner",
        "arguments": {"thread": "t", "operation": capped},
    }
    document, test = _case([on_thread], {})
    assert deviations.matches({"when": {"argument": ["createCollection.capped"]}}, document, test)
    assert not deviations.matches({"when": {"argument": ["operation.capped"]}}, document, test)


def test_entries_may_not_list_test_ids() -> None:
    for kind in deviations.KINDS:
        for entry in deviations.entries()[kind]:
            assert "tests" not in entry
            assert entry["when"], entry


def test_a_write_whose_connection_fails_its_handshake_is_not_retried_by_default() -> None:
    """A fail point on a handshake command fails the connection a later write opens;
    with retryWrites at the seed's default the write fails, sending no command."""
    ping = {
        "name": "runCommand",
        "object": "d",
        "arguments": {"commandName": "ping", "command": {"ping": 1}},
        "expectError": {"isError": True},
    }
    write = {
        "name": "insertOne",
        "object": "coll",
        "arguments": {"document": {"_id": 1}},
        "expectResult": {"insertedId": 1},
    }
    point = _fail(["ping", "saslContinue"], closeConnection=True, times=2)
    document, test = _case([point, ping, write], {})
    document["runOnRequirements"] = [{"auth": True}]
    checkout = {"connectionCheckOutStartedEvent": {}}
    test["expectEvents"] = [
        {"client": "c", "eventType": "cmap", "events": [checkout] * 4},
        {
            "client": "c",
            "events": [
                {"commandStartedEvent": {"commandName": "ping"}},
                {"commandFailedEvent": {"commandName": "ping"}},
                {"commandStartedEvent": {"commandName": "insert"}},
                {"commandSucceededEvent": {"commandName": "insert"}},
            ],
        },
    ]
    assert seed.SHAPES[seed.WRITES_DEFAULT_OFF](document, test)
    changed = seed.transform(seed.WRITES_DEFAULT_OFF, document, test)
    operation = changed["operations"][2]
    assert operation["expectError"] == {"isClientError": True}
    assert "expectResult" not in operation
    assert changed["expectEvents"][0]["events"] == [checkout] * 3
    assert [
        next(iter(e.values()))["commandName"] for e in changed["expectEvents"][1]["events"]
    ] == [
        "ping",
        "ping",
    ]
    # Without auth the SASL commands are never sent: the transformation refuses to guess.
    document["runOnRequirements"] = [{"auth": False}]
    with pytest.raises(seed.TransformError):
        seed.transform(seed.WRITES_DEFAULT_OFF, document, test)


def test_a_refused_write_followed_by_more_operations_keeps_them() -> None:
    """Under retryable-writes-default-off a write failed by a closed connection is not
    retried; operations after it are asserted as upstream wrote them, only the
    retry's event goes, and a later write keeps the outcome but for the refused
    insert's documents."""
    first = {"name": "insertOne", "object": "coll", "arguments": {"document": {"_id": 2}}}
    later = {"name": "insertOne", "object": "coll", "arguments": {"document": {"_id": 3}}}
    document, test = _case([_fail(["insert"], closeConnection=True), first, later], {})
    started = [
        {"commandStartedEvent": {"command": {"insert": "x", "documents": [{"_id": n}]}}}
        for n in (2, 2, 3)
    ]
    test["expectEvents"] = [{"client": "c", "events": started}]
    test["outcome"] = [
        {"databaseName": "db", "collectionName": "x", "documents": [{"_id": 2}, {"_id": 3}]}
    ]
    changed = seed.transform(seed.WRITES_DEFAULT_OFF, document, test)
    assert changed["operations"][1]["expectError"]["isClientError"] is True
    assert "expectError" not in changed["operations"][2]
    assert changed["expectEvents"][0]["events"] == [started[0], started[2]]
    assert changed["outcome"][0]["documents"] == [{"_id": 3}]
    assert seed.OUTCOME_FROM_SNAPSHOT not in changed


def test_a_refused_update_followed_by_another_write_is_refused_by_the_rule() -> None:
    update = {"name": "updateOne", "object": "coll", "arguments": {"filter": {}, "update": {}}}
    later = {"name": "insertOne", "object": "coll", "arguments": {"document": {"_id": 3}}}
    document, test = _case([_fail(["update"], closeConnection=True), update, later], {})
    test["outcome"] = [{"databaseName": "db", "collectionName": "x", "documents": []}]
    with pytest.raises(seed.TransformError):
        seed.transform(seed.WRITES_DEFAULT_OFF, document, test)


def test_skip_reason_condition_selects_what_upstream_skips() -> None:
    document, test = _case([], {})
    entry = {"when": {"skip_reason": True}}
    assert not deviations.matches(entry, document, test)
    test["skipReason"] = "servers do not do this yet"
    assert deviations.matches(entry, document, test)
    assert not deviations.matches({"when": {"skip_reason": False}}, document, test)


def test_the_fail_point_label_condition_reads_the_fail_points_error_labels() -> None:
    insert = {"name": "insertOne", "object": "coll", "arguments": {"document": {}}}
    overloaded = _fail(["insert"], errorCode=112, errorLabels=["SystemOverloadedError"])
    document, test = _case([overloaded, insert], {})
    entry = {"when": {"fail_point_label": ["SystemOverloadedError"]}}
    assert deviations.matches(entry, document, test)
    targeted = copy.deepcopy(overloaded)
    targeted["name"] = "targetedFailPoint"
    document, test = _case([targeted, insert], {})
    assert deviations.matches(entry, document, test)
    document, test = _case([_fail(["insert"], errorCode=112), insert], {})
    assert not deviations.matches(entry, document, test)
    # The label as data of an operation is no fail point's label.
    labeled = {"name": "insertOne", "object": "coll", "arguments": {"document": {"l": "x"}}}
    document, test = _case([labeled], {})
    assert not deviations.matches(entry, document, test)


def _started(command: dict[str, Any]) -> dict[str, Any]:
    return {"commandStartedEvent": {"command": command}}


def test_writes_beside_transactions_take_no_txn_number_and_renumber_later_ones() -> None:
    session = {"$$sessionLsid": "s"}
    document, test = _case([], {})
    document["createEntities"].append({"session": {"id": "s", "client": "c"}})
    events = [
        _started({"insert": "x", "lsid": session, "txnNumber": 1, "autocommit": False}),
        _started({"commitTransaction": 1, "lsid": session, "txnNumber": 1, "autocommit": False}),
        _started({"insert": "x", "lsid": session, "txnNumber": 2}),
        _started({"update": "x", "lsid": session, "txnNumber": 3, "autocommit": False}),
        _started(
            {"delete": "x", "lsid": session, "txnNumber": 4, "autocommit": {"$$exists": False}}
        ),
        _started({"find": "x", "lsid": session, "txnNumber": 5, "autocommit": False}),
    ]
    test["expectEvents"] = [{"client": "c", "events": events}]
    assert seed.SHAPES[seed.WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS](document, test)
    changed = seed.transform(seed.WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS, document, test)
    numbers = [
        e["commandStartedEvent"]["command"]["txnNumber"]
        for e in changed["expectEvents"][0]["events"]
    ]
    absent = {"$$exists": False}
    assert numbers == [1, 1, absent, 2, absent, 3]
    # Upstream's expectations stay as they were; a client setting retryWrites is not
    # selected, nor a test whose writes outside transactions expect no txnNumber.
    assert test["expectEvents"][0]["events"][2]["commandStartedEvent"]["command"]["txnNumber"] == 2
    opted, opted_test = _case([], {"retryWrites": True})
    opted_test["expectEvents"] = copy.deepcopy(test["expectEvents"])
    assert not seed.SHAPES[seed.WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS](opted, opted_test)
    test["expectEvents"] = [{"client": "c", "events": events[:2]}]
    assert not seed.SHAPES[seed.WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS](document, test)
    with pytest.raises(seed.TransformError):
        seed.transform(seed.WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS, document, test)


def test_an_entry_for_every_unified_suite_covers_a_folder_it_never_named() -> None:
    """``suite = "unified"`` is a rule: any file in the unified format (one with a
    schemaVersion), in any folder, less ``except_suites``. The broken variant this
    catches is a scope checked against a list of folders, which a suite added
    upstream would escape."""
    entry = {"suite": "unified", "except_suites": ["transactions/tests/unified"]}
    unified = {"schemaVersion": "1.0", "tests": []}
    assert deviations.in_scope(entry, "a-new-spec/tests/unified", unified)
    assert deviations.in_scope(entry, "sessions/tests", unified)
    assert not deviations.in_scope(entry, "transactions/tests/unified", unified)
    assert not deviations.in_scope(entry, "a-new-spec/tests", {"tests": []})  # not unified
    listed = {"suite": ["sessions/tests"]}
    assert deviations.in_scope(listed, "sessions/tests", unified)
    assert not deviations.in_scope(listed, "crud/tests/unified", unified)


def _overload(commands: list[str], mode: Any, code: int = 2) -> dict[str, Any]:
    point = _fail(commands, errorCode=code, errorLabels=["RetryableError", "SystemOverloadedError"])
    point["arguments"]["failPoint"]["mode"] = mode
    return point


def test_an_overload_error_is_attempted_once_whatever_the_command() -> None:
    """Made-up overload tests: a runCommand, a distinct, a write, each retried upstream,
    is attempted once under the seeds; the other seed rules leave them alone."""
    started = {"commandStartedEvent": {"commandName": "ping"}}
    failed = {"commandFailedEvent": {"commandName": "ping"}}
    succeeded = {"commandSucceededEvent": {"commandName": "ping"}}
    ping = {
        "name": "runCommand",
        "object": "d",
        "arguments": {"command": {"ping": 1}, "commandName": "ping"},
    }
    document, test = _case([_overload(["ping"], {"times": 1}), ping], {"retryWrites": True})
    test["expectEvents"] = [{"client": "c", "events": [started, failed, started, succeeded]}]
    assert seed.SHAPES[seed.OVERLOADED_ERRORS_SEED](document, test)
    changed = seed.transform(seed.OVERLOADED_ERRORS_SEED, document, test)
    assert changed["expectEvents"][0]["events"] == [started, failed]
    assert changed["operations"][1]["expectError"]["errorCode"] == 2

    read = {"name": "distinct", "object": "coll", "arguments": {"fieldName": "a", "filter": {}}}
    document, test = _case([_overload(["distinct"], "alwaysOn"), read], {})
    assert seed.SHAPES[seed.OVERLOADED_ERRORS_SEED](document, test)
    assert not seed.SHAPES[seed.READS_SEED](document, test)
    write = {"name": "insertOne", "object": "coll", "arguments": {"document": {"_id": 1}}}
    document, test = _case([_overload(["insert"], {"times": 2}), write], {"retryWrites": True})
    assert not seed.SHAPES[seed.WRITES_SEED_ERRORS](document, test)
    test["outcome"] = [{"databaseName": "db", "collectionName": "x", "documents": [{"_id": 1}]}]
    changed = seed.transform(seed.OVERLOADED_ERRORS_SEED, document, test)
    assert changed["operations"][1][seed.SNAPSHOT_BEFORE_COMMAND] == "insert"
    assert changed[seed.OUTCOME_FROM_SNAPSHOT] is True


def test_an_overload_error_whose_code_a_seed_retries_is_refused() -> None:
    read = {"name": "find", "object": "coll", "arguments": {"filter": {}}}
    document, test = _case([_overload(["find"], {"times": 1}, code=91), read], {})
    assert seed.SHAPES[seed.OVERLOADED_ERRORS_SEED](document, test)
    with pytest.raises(seed.TransformError, match="the seed retries"):
        seed.transform(seed.OVERLOADED_ERRORS_SEED, document, test)


def test_a_failed_get_more_kills_its_cursor_under_the_seed() -> None:
    find = {"name": "find", "object": "coll", "arguments": {"filter": {}, "batchSize": 1}}
    document, test = _case([_overload(["getMore"], {"times": 1}), find], {})
    document["createEntities"][0]["client"]["observeEvents"] = [
        "commandStartedEvent",
        "commandSucceededEvent",
    ]
    get_more = {"commandStartedEvent": {"commandName": "getMore"}}
    test["expectEvents"] = [
        {
            "client": "c",
            "events": [{"commandStartedEvent": {"commandName": "find"}}, get_more, get_more],
        }
    ]
    changed = seed.transform(seed.OVERLOADED_ERRORS_SEED, document, test)
    assert changed["expectEvents"][0]["events"][1:] == [
        get_more,
        {"commandStartedEvent": {"commandName": "killCursors"}},
        {"commandSucceededEvent": {"commandName": "killCursors"}},
    ]


def test_a_read_bounded_by_timeout_ms_is_left_as_upstream_wrote_it() -> None:
    """Under timeoutMS a read retries until it expires, for CSOT as for the seed: a
    fail point failing it n >= 2 times changes nothing upstream expects, whether the
    client or the operation sets timeoutMS (0, no limit, included)."""
    started = {"commandStartedEvent": {"commandName": "find"}}
    for uri_options, arguments in (
        ({"timeoutMS": 100}, {"filter": {}}),
        ({}, {"filter": {}, "timeoutMS": 0}),
    ):
        read = {
            "name": "find",
            "object": "coll",
            "arguments": dict(arguments),
            "expectError": {"isTimeoutError": True},
        }
        document, test = _case([_fail(["find"], errorCode=7, times=4), read], uri_options)
        test["expectEvents"] = [{"client": "c", "events": [started, started]}]
        changed = seed.transform(seed.READS_SEED, document, test)
        assert changed["operations"][1]["expectError"] == {"isTimeoutError": True}
        assert changed["expectEvents"][0]["events"] == [started, started]


def test_a_block_outlasting_the_socket_timeout_fails_a_write_under_the_seed() -> None:
    """A fail point that only blocks fails the command when it outlasts the client's
    socketTimeoutMS: a write of a client without retryWrites is then not retried."""
    write = {"name": "insertOne", "object": "coll", "arguments": {"document": {"x": 1}}}
    started = {"commandStartedEvent": {"commandName": "insert"}}
    blocking = _fail(["insert"], blockConnection=True, blockTimeMS=125)
    document, test = _case([blocking, write], {"socketTimeoutMS": 100})
    test["expectEvents"] = [{"client": "c", "events": [started, started]}]
    changed = seed.transform(seed.WRITES_DEFAULT_OFF, document, test)
    assert changed["operations"][1]["expectError"] == {
        "isError": True,
        "isClientError": True,
        "errorLabelsOmit": ["RetryableWriteError"],
    }
    assert changed["expectEvents"][0]["events"] == [started]
    assert seed.SNAPSHOT_BEFORE_COMMAND not in changed["operations"][1]  # it lands later
    # A shorter block, or none of the client's socketTimeoutMS, fails nothing.
    for options, block in (({"socketTimeoutMS": 200}, 125), ({}, 125)):
        blocking = _fail(["insert"], blockConnection=True, blockTimeMS=block)
        document, test = _case([blocking, dict(write)], options)
        test["expectEvents"] = [{"client": "c", "events": [started, started]}]
        changed = seed.transform(seed.WRITES_DEFAULT_OFF, document, test)
        assert "expectError" not in changed["operations"][1]
        assert changed["expectEvents"][0]["events"] == [started, started]


def test_a_blocked_error_racing_timeout_ms_is_any_error_of_the_first_attempt() -> None:
    write = {
        "name": "deleteOne",
        "object": "coll",
        "arguments": {"filter": {}},
        "expectError": {"isTimeoutError": True},
    }
    started = {"commandStartedEvent": {"commandName": "delete"}}
    point = _fail(
        ["delete"],
        times=4,
        blockConnection=True,
        blockTimeMS=60,
        errorCode=7,
        errorLabels=["RetryableWriteError"],
    )
    document, test = _case([point, write], {"timeoutMS": 100})
    test["expectEvents"] = [{"client": "c", "events": [started, started]}]
    changed = seed.transform(seed.WRITES_DEFAULT_OFF, document, test)
    assert changed["operations"][1]["expectError"] == {"isError": True}
    assert changed["expectEvents"][0]["events"] == [started]


def test_the_entity_option_and_create_option_conditions() -> None:
    session = {"session": {"id": "s", "client": "c", "sessionOptions": {"defaultTimeoutMS": 5}}}
    document, test = _case([], {})
    assert not deviations.CONDITIONS["entity_option"](["session.defaultTimeoutMS"], document, test)
    document["createEntities"].append(session)
    assert deviations.CONDITIONS["entity_option"](["session.defaultTimeoutMS"], document, test)
    assert not deviations.CONDITIONS["entity_option"](["client.defaultTimeoutMS"], document, test)
    capped = {"collectionName": "x", "databaseName": "db", "createOptions": {"capped": True}}
    document, test = _case([], {})
    assert not deviations.CONDITIONS["create_option"](["capped"], document, test)
    document["initialData"] = [capped]
    assert deviations.CONDITIONS["create_option"](["capped"], document, test)
    create = {"name": "createCollection", "object": "d", "arguments": {"capped": True}}
    document, test = _case([create], {})
    assert deviations.CONDITIONS["create_option"](["capped"], document, test)
    other = {"name": "find", "object": "coll", "arguments": {"capped": True}}
    document, test = _case([other], {})
    assert not deviations.CONDITIONS["create_option"](["capped"], document, test)
