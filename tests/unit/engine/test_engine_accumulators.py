"""The accumulators of $group and friends as objects, and their expression forms,
against the MongoDB manual's examples and a 7.0 server's answers and errors."""

from __future__ import annotations

import math
from typing import Any, Optional

import pytest
from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import parse_collation
from mongocore.sim.engine.expressions import (
    ExpressionContext,
    Scope,
    parse_accumulator,
    parse_accumulator_field,
)
from mongocore.sim.engine.values import MISSING
from tests.unit.engine.expression_helpers import check, check_error, same

D = Decimal128


def accumulate(
    name: str,
    argument: Any,
    docs: list[dict[str, Any]],
    group: Optional[dict[str, Any]] = None,
    collation: Any = None,
) -> Any:
    """The accumulator's value over ``docs``, as a $group computes it for one group."""
    context = ExpressionContext(collation)
    scope = Scope(context)
    spec = parse_accumulator(name, argument, scope)
    initial = MISSING
    if spec.initializer is not None:
        initial = spec.initializer(context.frame(group or {}))
    state = spec.create(initial)
    for doc in docs:
        state.process(spec.argument(context.frame(doc)))
    return state.result()


def values(*items: Any, field: str = "v") -> list[dict[str, Any]]:
    return [{field: item} if item is not MISSING else {} for item in items]


@pytest.mark.parametrize(
    ("name", "argument", "docs", "expected"),
    [
        ("$sum", "$v", values(1, 2, 3), 6),
        ("$sum", "$v", values(1, Int64(2)), Int64(3)),
        ("$sum", "$v", values(1, 2.5), 3.5),
        ("$sum", "$v", values(2**31 - 1, 1), Int64(2**31)),
        ("$sum", "$v", values(Int64(2**63 - 1), 1), float(2**63)),
        ("$sum", "$v", values(1, "a", None, MISSING, True), 1),  # not numbers: ignored
        ("$sum", "$v", [], 0),
        ("$sum", 1, values(1, 2, 3), 3),  # counting
        ("$sum", "$v", values(0.1, 0.2, 0.3), 0.6),  # summed exactly, rounded once
        ("$sum", "$v", values(1e16, 1.0, -1e16), 1.0),
        ("$sum", "$v", values(D("1.1"), 2), D("3.1")),
        ("$sum", "$v", values(math.inf, -math.inf), math.nan),
        ("$count", {}, values(1, "a", MISSING), 3),
        ("$avg", "$v", values(1, 2), 1.5),
        ("$avg", "$v", values(1, 2, 3), 2.0),
        ("$avg", "$v", values("a", None), None),
        ("$avg", "$v", values(D("1"), D("2")), D("1.5")),
        ("$min", "$v", values(3, 1, 2), 1),
        ("$min", "$v", values(None, MISSING, 5), 5),  # null and missing ignored
        ("$min", "$v", values(None), None),
        ("$min", "$v", values("a", 1), 1),  # BSON order: numbers before strings
        ("$max", "$v", values("a", 1, [0]), [0]),  # arrays after strings
        ("$max", "$v", values(1, 1.0), 1),  # the first of equal values
        ("$max", "$v", values(1.0, 1), 1.0),
        ("$first", "$v", values(MISSING, 2), None),
        ("$first", "$v", values(1, 2), 1),
        ("$last", "$v", values(1, MISSING), None),
        ("$last", "$v", values(1, 2), 2),
        ("$push", "$v", values(1, MISSING, None, [2]), [1, None, [2]]),
        ("$addToSet", "$v", values(1, 1.0, 2, MISSING, 1), [1, 2]),
        ("$stdDevPop", "$v", values(1, 2, 3, 4), 1.118033988749895),
        ("$stdDevSamp", "$v", values(1, 2, 3, 4), 1.2909944487358056),
        ("$stdDevSamp", "$v", values(1), None),
        ("$stdDevPop", "$v", values("a"), None),
        (
            "$mergeObjects",
            "$v",
            values({"a": 1, "b": 1}, None, {"b": 2, "c": 3}),
            {"a": 1, "b": 2, "c": 3},
        ),
        ("$mergeObjects", "$v", [], {}),
        ("$firstN", {"n": 2, "input": "$v"}, values(1, MISSING, 3), [1, None]),
        ("$lastN", {"n": 2, "input": "$v"}, values(1, 2, 3), [2, 3]),
        ("$lastN", {"n": 5, "input": "$v"}, values(1, 2), [1, 2]),
        ("$minN", {"n": 2, "input": "$v"}, values(5, None, 1, 3), [1, 3]),
        ("$maxN", {"n": 2, "input": "$v"}, values(5, None, 1, 3), [5, 3]),
        ("$maxN", {"n": 3, "input": "$v"}, values(1, 1.0, 2), [2, 1.0, 1]),
        ("$median", {"input": "$v", "method": "approximate"}, values(1, 2, 3, 4, "x"), 2.0),
        ("$median", {"input": "$v", "method": "approximate"}, values("x"), None),
        (
            "$percentile",
            {"input": "$v", "p": [0, 0.5, 0.75, 1], "method": "approximate"},
            values(*range(1, 11)),
            [1.0, 5.0, 8.0, 10.0],
        ),
        (
            "$percentile",
            {"input": "$v", "p": [0.5], "method": "approximate"},
            [],
            [None],
        ),
    ],
)
def test_accumulators(name: str, argument: Any, docs: list[dict[str, Any]], expected: Any) -> None:
    result = accumulate(name, argument, docs)
    assert same(result, expected), f"{name}: {result!r}, expected {expected!r}"


PLAYERS = [
    {"player": "A", "score": 31, "game": "G1"},
    {"player": "B", "score": 33, "game": "G1"},
    {"player": "C", "score": 99, "game": "G2"},
    {"player": "D", "score": 1, "game": "G1"},
    {"player": "E", "score": 33, "game": "G1"},
    {"player": "F", "game": "G1"},
]


@pytest.mark.parametrize(
    ("name", "argument", "expected"),
    [
        ("$top", {"output": ["$player", "$score"], "sortBy": {"score": -1}}, ["C", 99]),
        ("$bottom", {"output": "$player", "sortBy": {"score": -1}}, "F"),  # missing sorts as null
        ("$topN", {"n": 3, "output": "$player", "sortBy": {"score": -1}}, ["C", "B", "E"]),
        ("$bottomN", {"n": 2, "output": "$player", "sortBy": {"score": 1}}, ["B", "C"]),
        (
            "$topN",
            {"n": 2, "output": "$player", "sortBy": {"game": 1, "score": -1}},
            ["B", "E"],
        ),
        ("$bottomN", {"n": 2, "output": "$missing", "sortBy": {"score": 1}}, [None, None]),
    ],
)
def test_top_and_bottom(name: str, argument: Any, expected: Any) -> None:
    assert accumulate(name, argument, PLAYERS) == expected


def test_top_orders_arrays_as_sort_does() -> None:
    docs = [{"k": "x", "v": [5, 1]}, {"k": "y", "v": 3}, {"k": "z", "v": [4]}]
    assert accumulate("$topN", {"n": 3, "output": "$k", "sortBy": {"v": 1}}, docs) == [
        "x",
        "y",
        "z",
    ]
    assert accumulate("$topN", {"n": 3, "output": "$k", "sortBy": {"v": -1}}, docs) == [
        "x",
        "z",
        "y",
    ]


def test_n_is_evaluated_per_group() -> None:
    argument = {"n": {"$cond": [{"$eq": ["$_id", "big"]}, 3, 1]}, "input": "$v"}
    docs = values(1, 2, 3)
    assert accumulate("$firstN", argument, docs, group={"_id": "big"}) == [1, 2, 3]
    assert accumulate("$firstN", argument, docs, group={"_id": "small"}) == [1]


def test_addtoset_and_min_use_the_collation() -> None:
    collation = parse_collation({"locale": "en", "strength": 1})
    assert accumulate("$addToSet", "$v", values("a", "A", "b"), collation=collation) == ["a", "b"]
    assert accumulate("$min", "$v", values("b", "A"), collation=collation) == "A"
    assert accumulate("$addToSet", "$v", values("a", "A")) == ["a", "A"]


@pytest.mark.parametrize(
    ("name", "argument", "group", "code", "message"),
    [
        ("$foo", 1, None, 15952, "unknown group operator '$foo'"),
        ("$count", 1, None, 14, "$count takes no arguments, i.e. $count:{}"),
        ("$firstN", 1, None, 5787801, "specification must be an object; found $firstN: 1"),
        ("$firstN", {"n": 1}, None, 5787907, "Missing value for 'input'"),
        ("$maxN", {"input": 1}, None, 5787906, "Missing value for 'n'"),
        (
            "$minN",
            {"n": 1, "input": 1, "x": 1},
            None,
            5787901,
            "Unknown argument for 'n' operator: x",
        ),
        (
            "$firstN",
            {"n": "a", "input": 1},
            None,
            5787902,
            "Value for 'n' must be of integral type, but found \"a\"",
        ),
        (
            "$firstN",
            {"n": 1.5, "input": 1},
            None,
            5787903,
            "Value for 'n' must be of integral type, but found 1.5",
        ),
        ("$firstN", {"n": 0, "input": 1}, None, 5787908, "'n' must be greater than 0, found 0"),
        (
            "$top",
            {"output": 1, "sortBy": {"a": 1}, "n": 1},
            None,
            5788002,
            "Unknown argument to $top 'n'",
        ),
        ("$topN", {"output": 1, "sortBy": {"a": 1}}, None, 5788003, "Missing value for 'n'"),
        ("$top", {"sortBy": {"a": 1}}, None, 5788004, "Missing value for 'output'"),
        ("$top", {"output": 1}, None, 5788005, "Missing value for 'sortBy'"),
        (
            "$top",
            {"output": 1, "sortBy": {"a": 2}},
            None,
            15975,
            "$sort key ordering must be 1 (for ascending) or -1 (for descending)",
        ),
        (
            "$median",
            {"input": 1},
            None,
            40414,
            "BSON field '$median.method' is missing but a required field",
        ),
        (
            "$median",
            {"input": 1, "method": "approximate", "p": 1},
            None,
            40415,
            "BSON field '$median.p' is an unknown field.",
        ),
        (
            "$percentile",
            {"input": 1, "p": [0.5], "method": "discrete"},
            None,
            2,
            "Currently only 'approximate' can be used as percentile 'method'.",
        ),
        (
            "$percentile",
            {"input": 1, "p": [1.5], "method": "approximate"},
            None,
            7750303,
            "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: 1.5",
        ),
        (
            "$percentile",
            {"input": 1, "p": "$x", "method": "approximate"},
            None,
            7750300,
            "The $percentile 'p' field must be an array of constant values, but found value:"
            ' "$x".',
        ),
        ("$accumulator", {}, None, 238, None),
    ],
)
def test_accumulator_errors(
    name: str, argument: Any, group: Any, code: int, message: Optional[str]
) -> None:
    with pytest.raises(CommandError) as raised:
        accumulate(name, argument, values(1), group=group)
    assert raised.value.code == code, raised.value.errmsg
    if message is not None:
        assert raised.value.errmsg == message


@pytest.mark.parametrize(
    ("field", "spec", "code", "message"),
    [
        ("total", 1, 40234, "The field 'total' must be an accumulator object"),
        ("total", {}, 40234, "The field 'total' must be an accumulator object"),
        ("total", {"sum": 1}, 40234, "The field 'total' must be an accumulator object"),
        ("a.b", {"$sum": 1}, 40235, "The field name 'a.b' cannot contain '.'"),
        ("$total", {"$sum": 1}, 40236, "The field name '$total' cannot be an operator name"),
        ("total", {"$sum": 1, "$avg": 1}, 40238, "The field 'total' must specify one accumulator"),
        ("total", {"$sum": [1, 2]}, 40237, "The $sum accumulator is a unary operator"),
        ("total", {"$add": 1}, 15952, "unknown group operator '$add'"),
    ],
)
def test_group_field_errors(field: str, spec: Any, code: int, message: str) -> None:
    with pytest.raises(CommandError) as raised:
        parse_accumulator_field(field, spec, Scope(ExpressionContext()))
    assert (raised.value.code, raised.value.errmsg) == (code, message)


# -- the expression forms ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$sum": "$arr"}, 6),  # one array operand: its elements
        ({"$sum": [1, 2, "$arr"]}, 3),  # several operands: an array is not a number
        ({"$sum": "$x"}, 0),
        ({"$avg": "$arr"}, 2.0),
        ({"$avg": [1, 2, "a"]}, 1.5),
        ({"$avg": "$x"}, None),
        ({"$max": "$arr"}, 3),
        ({"$max": [[1, 2], [3]]}, [3]),
        ({"$min": [None, "$x", 4]}, 4),
        ({"$stdDevPop": "$arr"}, 0.816496580927726),
        ({"$stdDevSamp": [1]}, None),
        ({"$mergeObjects": [{"a": 1}, {"a": 2, "b": 3}, None]}, {"a": 2, "b": 3}),
        ({"$mergeObjects": "$docs"}, {"a": 2, "b": 1}),
        ({"$firstN": {"n": 2, "input": "$arr"}}, [1, 2]),
        ({"$lastN": {"n": 2, "input": [1, 2, 3]}}, [2, 3]),
        ({"$maxN": {"n": 2, "input": [3, None, 1, 2]}}, [3, 2]),
        ({"$minN": {"n": 2, "input": [3, None, 1, 2]}}, [1, 2]),
        ({"$median": {"input": "$arr", "method": "approximate"}}, 2.0),
        ({"$median": {"input": 5, "method": "approximate"}}, 5.0),
        ({"$median": {"input": "x", "method": "approximate"}}, None),
        ({"$percentile": {"input": "$arr", "p": [0.1, 0.9], "method": "approximate"}}, [1.0, 3.0]),
    ],
)
def test_expression_forms(expression: Any, expected: Any) -> None:
    check(expression, {"arr": [1, 2, 3], "docs": [{"a": 1, "b": 1}, {"a": 2}]}, expected)


def test_expression_form_errors() -> None:
    check_error({"$firstN": {"n": 2, "input": 5}}, {}, 5788200, "Input must be an array")
    check_error(
        {"$mergeObjects": [{"a": 1}, 5]},
        {},
        40400,
        "$mergeObjects requires object inputs, but input 5 is of type int",
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), max_size=30))
def test_sum_of_doubles_is_the_exact_sum_rounded(numbers: list[float]) -> None:
    result = accumulate("$sum", "$v", values(*numbers))
    if not numbers:
        assert result == 0
        return
    try:
        expected = math.fsum(numbers)
    except OverflowError:
        expected = math.copysign(math.inf, sum(numbers))
    assert result == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=30))
def test_sum_of_ints_keeps_the_narrowest_type(numbers: list[int]) -> None:
    result = accumulate("$sum", "$v", values(*numbers))
    total = sum(numbers)
    expected = total if -(2**31) <= total < 2**31 else Int64(total)
    assert same(result, expected)
