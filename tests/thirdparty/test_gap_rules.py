"""The third-party runners' machinery, without running a suite: the rules of
specs/thirdparty/*.toml, the comparison of two runs, the import-only port's rewrite,
and the harness's port check."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.thirdparty import gap_rules, harness
from tests.thirdparty.gap_rules import Outcome, RuleError, classify, parse_rules
from tests.thirdparty.harness import INJECT
from tests.thirdparty.port import port_source
from tests.thirdparty.suites import Run, lost
from tests.thirdparty.test_mongoengine import RULES, mongocore_only_report


def _error(command: str, code: int, operators: tuple[str, ...] = (), **more: Any) -> dict[str, Any]:
    return {"command": command, "code": code, "operators": list(operators), "errmsg": "", **more}


def _failed(test: str, **fields: Any) -> Outcome:
    return Outcome(test=test, outcome="failed", **fields)


def _rules(*whens: dict[str, Any]) -> list[gap_rules.Rule]:
    return parse_rules(
        {"gap": [{"name": f"r{i}", "cause": "c", "when": w} for i, w in enumerate(whens)]}, "t"
    )


def test_a_rule_selects_by_the_servers_error() -> None:
    rules = _rules({"command": "profile", "error_code": 59})
    profile = _failed("a", failed=(_error("profile", 59),))
    other = _failed("b", failed=(_error("profile", 2), _error("find", 59)))
    result = classify([profile, other], rules)
    assert result.by_rule[rules[0]] == [profile]
    # Code and command must hold for one same error: profile/2 plus find/59 is no match.
    assert result.unmatched == [other]


def test_operator_and_value_type_are_conditions_on_the_erring_command() -> None:
    rules = _rules({"error_code": 238, "operator": ["$gt", "$lt"], "value_type": "Decimal128"})
    decimal = _failed(
        "a", failed=(_error("aggregate", 238, ("$match", "$gt"), types=["Decimal128"]),)
    )
    geo = _failed("b", failed=(_error("find", 238, ("$near",), types=["float"]),))
    result = classify([decimal, geo], rules)
    assert result.by_rule[rules[0]] == [decimal]
    assert result.unmatched == [geo]


def test_sent_conditions_and_inner_lists() -> None:
    add_each = {"command": "update", "fields": ["updates"], "operators": ["$addToSet", "$each"]}
    add_only = {"command": "update", "fields": ["updates"], "operators": ["$addToSet"]}
    each_elsewhere = {"command": "find", "fields": ["filter"], "operators": ["$each"]}
    rules = _rules({"server_error": False, "sent_operator": [["$addToSet", "$each"]]})
    both = _failed("a", sent=(add_each,))
    split = _failed("b", sent=(add_only, each_elsewhere))
    result = classify([both, split], rules)
    # Every operator of an inner list must be in one command.
    assert result.by_rule[rules[0]] == [both]
    assert result.unmatched == [split]

    index = {"command": "createIndexes", "fields": ["indexes.key._id", "indexes.unique"]}
    by_field = _rules({"sent": [["createIndexes.indexes.key._id", "createIndexes.indexes.unique"]]})
    assert classify([_failed("c", sent=(index,))], by_field).unmatched == []
    assert classify([_failed("d", sent=({"command": "insert"},))], by_field).unmatched


def test_server_error_message_and_text() -> None:
    rules = _rules(
        {"server_error": False, "message": "DID NOT RAISE", "text": "hint"},
    )
    wrong_answer = _failed("a", message="Failed: DID NOT RAISE", text="x.hint('Bad')")
    refused = _failed(
        "b", message="Failed: DID NOT RAISE", text="hint", failed=(_error("find", 2),)
    )
    result = classify([wrong_answer, refused], rules)
    assert result.by_rule[rules[0]] == [wrong_answer]
    assert result.unmatched == [refused]


def test_each_failure_goes_to_the_first_rule_and_unused_rules_are_problems() -> None:
    rules = _rules({"error_code": 59}, {"command": "profile"}, {"error_code": 1})
    failure = _failed("a", failed=(_error("profile", 59),))
    result = classify([failure, Outcome("p", "passed"), Outcome("s", "skipped")], rules)
    assert result.by_rule[rules[0]] == [failure]
    assert result.unused == rules[1:]
    problems = result.problems()
    assert len(problems) == 2
    assert all("selects no failure" in p for p in problems)


def test_a_failure_no_rule_selects_is_a_problem_naming_it() -> None:
    result = classify([_failed("tests/x.py::T::test_y", message="KeyError: 'n'")], [])
    assert result.problems() == [
        "failure selected by no rule: tests/x.py::T::test_y: KeyError: 'n'"
    ]
    collection = Outcome("tests/z.py", "error", message="collection error: ImportError")
    assert classify([collection], []).unmatched == [collection]


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ({"name": "n", "cause": "c", "when": {"code": 59}}, "unknown condition"),
        ({"name": "n", "cause": "c", "when": {}}, "needs a `when`"),
        ({"name": "n", "when": {"error_code": 59}}, "no cause"),
        ({"cause": "c", "when": {"error_code": 59}}, "no name"),
        ({"name": "n", "cause": "c", "when": {"message": "("}}, "not a regular expression"),
        ({"name": "n", "cause": "c", "kind": "x", "when": {"error_code": 1}}, "kind 'x'"),
        ({"name": "n", "cause": "c", "tests": ["a"], "when": {"error_code": 1}}, "unknown field"),
    ],
)
def test_bad_rules_are_refused_with_the_reason(entry: dict[str, Any], error: str) -> None:
    with pytest.raises(RuleError, match=error):
        parse_rules({"gap": [entry]}, "t")


def test_the_mongoengine_rules_parse() -> None:
    document, rules = gap_rules.load_rules(RULES)
    assert rules
    for driver in ("mongocore", "port"):
        assert isinstance(document["driver"][driver]["required"], bool)
        assert document["driver"][driver]["reason"].strip()
    assert isinstance(document["driver"]["port"]["suite_required"], bool)


def _run(driver: str, **outcomes: str) -> Run:
    return Run(driver, [Outcome(t, o) for t, o in outcomes.items()], 1, 1.0, "")


def test_lost_lists_what_passes_in_the_reference_only() -> None:
    reference = _run("pymongo", a="passed", b="passed", c="failed", d="passed")
    reference.outcomes.append(Outcome("m.py::T::e", "passed"))
    other = _run("mongocore", a="passed", b="failed", c="passed")
    other.outcomes.append(Outcome("m.py", "error", message="collection error: ImportError"))
    assert [(t, o.outcome if o else None) for t, o in lost(reference, other)] == [
        ("b", "failed"),
        ("d", None),
        ("m.py::T::e", "error"),
    ]


def test_mongocore_only_failures_are_grouped_by_cause() -> None:
    text = (
        "src/mongocore/api/database.py:12: in x\n"
        "/v/site-packages/mongocore/api/database.py:99: AttributeError"
    )
    chained = (
        "E   mongocore.errors.ConfigurationError: unknown client option 'driver'\n"
        "During handling of the above exception, another exception occurred:\n"
        "E   ConnectionFailure: Cannot connect to database {} :\n"
    )
    losses = [
        ("t1", _failed("t1", message="AttributeError: no dereference at 0x7f00aa", text=text)),
        ("t2", _failed("t2", message="AttributeError: no dereference at 0x7f00bb", text=text)),
        ("t3", None),
        ("t4", _failed("t4", message="ConnectionFailure: db1", text=chained.format("db1"))),
        ("t5", _failed("t5", message="ConnectionFailure: db2", text=chained.format("db2"))),
    ]
    lines = mongocore_only_report(losses)
    assert lines[0].split()[0] == "2"
    assert "mongocore/api/database.py:99" in lines[0]
    # The root of a chain is the cause, whatever the library wrapped it in.
    assert lines[2].split()[0] == "2"
    assert "unknown client option 'driver'" in lines[2]
    assert "not run" in lines[4]


@pytest.mark.parametrize(
    ("line", "ported"),
    [
        ("import pymongo", "import mongocore as pymongo"),
        ("    import pymongo", "    import mongocore as pymongo"),
        ("import pymongo.errors", "import mongocore.errors; import mongocore as pymongo"),
        ("import gridfs", "import mongocore.gridfs as gridfs"),
        ("from pymongo import MongoClient", "from mongocore import MongoClient"),
        ("from pymongo.read_concern import X", "from mongocore.read_concern import X"),
        ("    from pymongo.database import _c", "    from mongocore.database import _c"),
        ("from gridfs.errors import NoFile", "from mongocore.gridfs.errors import NoFile"),
        ("from gridfs import GridFS", "from mongocore.gridfs import GridFS"),
        ("import pymongolike", "import pymongolike"),
        ("x = pymongo.ASCENDING  # import pymongo", "x = pymongo.ASCENDING  # import pymongo"),
    ],
)
def test_the_port_rewrites_import_lines_only(line: str, ported: str) -> None:
    assert port_source(f"a = 1\n{line}\nb = 2\n") == f"a = 1\n{ported}\nb = 2\n"


def test_the_harness_sees_a_port_in_use() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert "127.0.0.1" in (harness.port_in_use(port) or "")
    assert harness.port_in_use(port) is None


def test_the_port_cannot_reach_pymongo(tmp_path: Path) -> None:
    port, other = tmp_path / "port", tmp_path / "other"
    port.mkdir()
    other.mkdir()
    (port / "missed.py").write_text("import pymongo.errors\n")
    (port / "ported.py").write_text("import bson\nimport other_library\n")
    (other / "other_library.py").write_text("import pymongo\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=os.pathsep.join(map(str, (port, other, INJECT))))
    env.update(MONGOCORE_PORT_ROOT=str(port), PYTHONDONTWRITEBYTECODE="1")

    def run(module: str) -> subprocess.CompletedProcess[str]:
        code = f"import mongocore_no_pymongo, {module}"
        return subprocess.run(
            [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env
        )

    missed = run("missed")
    assert missed.returncode == 1
    assert "missed.py imports pymongo: the import-only port must not use pymongo" in missed.stderr
    # bson stays, and a library outside the port may use pymongo.
    assert run("ported").returncode == 0
