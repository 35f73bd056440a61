"""The simulator's server-side JavaScript (sim/javascript.py): how a ``$where`` string
becomes a function, what the function sees, and how sleeps and limits end it."""

from __future__ import annotations

import datetime
import re
import threading
from typing import Any

import pytest

pytest.importorskip("dukpy")

from bson import Int64, ObjectId, Regex

from mongocore.sim.codes import CloseConnection, CommandError
from mongocore.sim.javascript import function_source, where_matches


class Recorder:
    """An interruption that records the waits and can be told to stop the operation."""

    def __init__(self, stop_after_waits: int | None = None) -> None:
        self.waits = 0
        self.stop_after_waits = stop_after_waits
        self._never = threading.Event()

    def check(self) -> None:
        if self.stop_after_waits is not None and self.waits >= self.stop_after_waits:
            raise CloseConnection

    def wait(self, timeout: float) -> None:
        self.waits += 1
        self._never.wait(timeout)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("this.a > 1", "function () { return this.a > 1\n}"),
        ("this.a > 1;", "function () { return this.a > 1;\n}"),
        ("var x = 1; return this.a > x", "function () { var x = 1; return this.a > x\n}"),
        ("return this.a", "function () { return this.a\n}"),
        ("this.a > 1\n|| this.b", "function () { this.a > 1\n|| this.b\n}"),
        ("  function () { return true }  ", "function () { return true }"),
        ("function named(){ return 1 }", "function named(){ return 1 }"),
    ],
)
def test_function_source(code: str, expected: str) -> None:
    assert function_source(code) == expected


def test_returned_variable_names_are_not_return() -> None:
    assert function_source("this.returned == 1").startswith("function () { return this.returned")


def test_documents_as_javascript_values() -> None:
    oid = ObjectId("5f0000000000000000000000")
    documents: list[dict[str, Any]] = [
        {"_id": oid, "when": datetime.datetime(2021, 1, 2), "n": Int64(7), "re": Regex("^ab", "i")},
        {"_id": 2, "n": 1.5},
    ]
    code = """function () {
        return this._id instanceof ObjectId && this._id.str == '5f0000000000000000000000'
            && this.when.getUTCFullYear() == 2021 && this.n === 7
            && this.re.test('ABC') && obj === this;
    }"""
    assert where_matches(code, documents, Recorder()) == [0]


def test_sleep_waits_through_the_interruption() -> None:
    interruption = Recorder()
    assert where_matches("sleep(20) || true", [{}, {}], interruption) == [0, 1]
    assert interruption.waits >= 2


def test_first_only_stops_at_the_first_match() -> None:
    code = "if (this.a == 3) { throw new Error('evaluated'); } return this.a >= 2;"
    documents = [{"a": 1}, {"a": 2}, {"a": 3}]
    assert where_matches(code, documents, Recorder(), first_only=True) == [1]
    with pytest.raises(CommandError):
        where_matches(code, documents, Recorder())


def test_an_interruption_ends_a_sleep() -> None:
    with pytest.raises(CloseConnection):
        where_matches("sleep(600000) || true", [{}], Recorder(stop_after_waits=2))


def test_errors_are_js_interpreter_failures() -> None:
    for code in ("this.a ===", "nothing.here", "throw new Error('bad')"):
        with pytest.raises(CommandError) as info:
            where_matches(code, [{"a": 1}], Recorder())
        assert info.value.code == 139


def test_compile_errors_need_no_document() -> None:
    with pytest.raises(CommandError) as info:
        where_matches("function (", [], Recorder())
    assert info.value.code == 139
    assert re.match(r"SyntaxError", info.value.errmsg)


def test_time_limits() -> None:
    runaway = "var i = 0; while (true) { i++; }"
    with pytest.raises(CommandError) as info:
        where_matches(runaway, [{}], Recorder(), time_limit=0.2)
    assert info.value.code == 139
    # The deadline of maxTimeMS, already passed: MaxTimeMSExpired.
    with pytest.raises(CommandError) as info:
        where_matches(runaway, [{}], Recorder(), deadline=0.0)
    assert info.value.code == 50


def test_the_script_sees_no_host_helpers() -> None:
    hidden = "typeof require == 'undefined' && typeof process == 'undefined'"
    assert where_matches(f"return {hidden}", [{}], Recorder()) == [0]
    with pytest.raises(CommandError) as info:
        where_matches("call_python('dukpy.load_module', 'fs')", [{}], Recorder())
    assert info.value.code == 139
