"""The expression language's core: operands, field paths, variables, arithmetic,
comparison, boolean and conditional operators, against the MongoDB manual's examples
and a 7.0 server's answers and errors (its jstests' expectations)."""

from __future__ import annotations

import datetime
import math
from typing import Any

import pytest
from bson import Decimal128, Int64, MaxKey, MinKey, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocore.sim.collation import parse_collation
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.expressions import (
    EXPRESSIONS,
    ExpressionContext,
    Scope,
    bind_let,
    compile_expression,
    not_implemented,
)
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING, UNDEFINED
from tests.unit.engine.expression_helpers import NOW, check, check_error, error, evaluate, same

D = Decimal128
DATE = datetime.datetime(2020, 1, 1, 0, 0, 0)


# -- operands and paths ------------------------------------------------------------------------

DOC = {
    "a": 1,
    "b": {"c": 2, "d": [1, 2]},
    "arr": [{"x": 1}, {"x": 2}, {"y": 3}, 4, [{"x": 5}]],
    "nested": [{"k": [{"v": 1}, {"v": 2}]}, {"k": {"v": 3}}],
    "n": {"0": "zero"},
    "list": [10, 20],
    "null": None,
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("$a", 1),
        ("$b.c", 2),
        ("$b.d", [1, 2]),
        ("$missing", MISSING),
        ("$a.b", MISSING),  # a scalar on the way
        ("$arr.x", [1, 2]),  # documents without x, scalars and inner arrays are left out
        ("$nested.k.v", [[1, 2], 3]),  # arrays of arrays as the path meets them
        ("$n.0", "zero"),  # a number is a field name
        ("$list.0", []),  # ... not an array index
        ("$null", None),
        ("$$ROOT.a", 1),
        ("$$CURRENT.b.c", 2),
        ("$$REMOVE", MISSING),
        ("abc", "abc"),  # a string without $ is a constant
        (5, 5),
        ([1, "$a", "$missing"], [1, 1, None]),  # an array literal: missing becomes null
        ({"x": "$a", "y": "$missing", "z": {"$literal": "$a"}}, {"x": 1, "z": "$a"}),
        ({}, {}),
        ({"$literal": {"$add": [1]}}, {"$add": [1]}),
        ({"$const": "$x"}, "$x"),
    ],
)
def test_operands(expression: Any, expected: Any) -> None:
    check(expression, DOC, expected)


def test_root_is_the_whole_document() -> None:
    assert evaluate("$$ROOT", DOC) is DOC
    assert evaluate("$$CURRENT", DOC) is DOC


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ("$", 16872, "'$' by itself is not a valid FieldPath"),
        ("$a..b", 15998, "FieldPath field names may not be empty strings."),
        ("$a.", 40353, "FieldPath must not end with a '.'."),
        (
            "$a.$b",
            16410,
            "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
        ),
        ("$$", 16869, "empty variable names are not allowed"),
        ("$$1x", 16870, "'1x' starts with an invalid character for a variable name"),
        ("$$a-b", 16871, "'a-b' contains an invalid character for a variable name: '-'"),
        ("$$undefinedVar", 17276, "Use of undefined variable: undefinedVar"),
        ({"$foo": 1}, 168, "Unrecognized expression '$foo'"),
        (
            {"$add": [1], "$sub": []},
            15983,
            "An object representing an expression must have exactly one field: "
            "{ $add: [ 1 ], $sub: [] }",
        ),
        (
            {"a": 1, "$b": 2},
            16410,
            "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
        ),
        (
            {"a.b": 1},
            16412,
            "FieldPath field names may not contain '.'. Consider using $getField or $setField.",
        ),
        ({"": 1}, 15998, "FieldPath field names may not be empty strings."),
        ({"$eq": [1]}, 16020, "Expression $eq takes exactly 2 arguments. 1 were passed in."),
        ({"$not": [1, 2]}, 16020, "Expression $not takes exactly 1 arguments. 2 were passed in."),
        (
            {"$round": [1, 2, 3]},
            28667,
            "Expression $round takes at least 1 arguments, and at most 2, but 3 were passed in.",
        ),
    ],
)
def test_parse_errors(expression: Any, code: int, message: str) -> None:
    check_error(expression, DOC, code, message)


def test_an_operator_the_server_has_and_the_simulator_does_not_is_not_implemented() -> None:
    name = not_implemented()[0]
    assert error({name: []}).code == 238


def test_now_is_the_commands_and_cluster_time_needs_a_cluster() -> None:
    assert evaluate("$$NOW") == NOW
    stamp = Timestamp(1700000000, 5)
    assert evaluate("$$CLUSTER_TIME", cluster_time=stamp) == stamp
    raised = error("$$CLUSTER_TIME")  # a standalone has no cluster time
    assert (raised.code, raised.errmsg) == (
        51144,
        "Builtin variable '$$CLUSTER_TIME' is not available",
    )


def test_constant_operands_are_folded_at_parse_time_with_their_errors() -> None:
    # The server's optimize() evaluates a constant expression before any document is read.
    context = ExpressionContext()
    with pytest.raises(Exception) as raised:
        compile_expression({"$divide": [1, 0]}, context)
    assert getattr(raised.value, "code", None) == 2
    compiled = compile_expression({"$divide": ["$a", 0]}, context)
    assert not compiled.is_constant
    assert compile_expression({"$add": [1, {"$multiply": [2, 3]}]}, context).is_constant
    assert error({"$divide": ["$a", 0]}, {"a": 1}).code == 2


# -- variables ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$let": {"vars": {"x": 2, "y": "$a"}, "in": {"$add": ["$$x", "$$y"]}}}, 3),
        ({"$let": {"vars": {}, "in": "$a"}}, 1),
        # An inner definition shadows; the outer one comes back after it.
        (
            {
                "$let": {
                    "vars": {"x": 1},
                    "in": [{"$let": {"vars": {"x": 2}, "in": "$$x"}}, "$$x"],
                }
            },
            [2, 1],
        ),
        # The values see the outer variables, not each other.
        (
            {
                "$let": {
                    "vars": {"x": 1},
                    "in": {"$let": {"vars": {"x": 5, "y": "$$x"}, "in": "$$y"}},
                }
            },
            1,
        ),
        # CURRENT may be rebound: "$c" reads it.
        ({"$let": {"vars": {"CURRENT": "$b"}, "in": "$c"}}, 2),
        ({"$let": {"vars": {"doc": "$b"}, "in": "$$doc.d"}}, [1, 2]),
        ({"$let": {"vars": {"ä": 1}, "in": "$$ä"}}, 1),
    ],
)
def test_let(expression: Any, expected: Any) -> None:
    check(expression, DOC, expected)


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ({"$let": 1}, 16874, "$let only supports an object as its argument"),
        ({"$let": {"vars": {}, "in": 1, "x": 1}}, 16875, "Unrecognized parameter to $let: x"),
        ({"$let": {"in": 1}}, 16876, "Missing 'vars' parameter to $let"),
        ({"$let": {"vars": {}}}, 16877, "Missing 'in' parameter to $let"),
        ({"$let": {"vars": {"": 1}, "in": 1}}, 16866, "empty variable names are not allowed"),
        (
            {"$let": {"vars": {"X": 1}, "in": 1}},
            16867,
            "'X' starts with an invalid character for a user variable name",
        ),
        (
            {"$let": {"vars": {"ROOT": 1}, "in": 1}},
            16867,
            "'ROOT' starts with an invalid character for a user variable name",
        ),
        (
            {"$let": {"vars": {"a.b": 1}, "in": 1}},
            16868,
            "'a.b' contains an invalid character for a variable name: '.'",
        ),
        ({"$let": {"vars": {"x": 1}, "in": "$$y"}}, 17276, "Use of undefined variable: y"),
    ],
)
def test_let_errors(expression: Any, code: int, message: str) -> None:
    check_error(expression, DOC, code, message)


def test_a_commands_let_is_evaluated_once_as_constants() -> None:
    context = ExpressionContext(now=NOW)
    scope = Scope(context)
    assert bind_let({"x": {"$add": [1, 2]}, "y": {"$multiply": ["$$x", 2]}}, scope) == {
        "x": 3,
        "y": 6,
    }
    compiled = compile_expression({"$add": ["$a", "$$y"]}, context, scope)
    assert compiled.evaluate({"a": 1}) == 7
    assert compile_expression("$$x", context, scope).is_constant
    with pytest.raises(Exception) as raised:
        bind_let({"z": "$a"}, Scope(ExpressionContext()))
    assert getattr(raised.value, "code", None) == 4890500


# -- arithmetic --------------------------------------------------------------------------------


BIG = 2**31 - 1
LONG_MAX = 2**63 - 1


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$add": [1, 2]}, 3),
        ({"$add": [Int64(1), 2]}, Int64(3)),
        ({"$add": [1, 2.5]}, 3.5),
        ({"$add": [BIG, 1]}, Int64(2**31)),  # an int sum that overflows is a long
        ({"$add": [Int64(LONG_MAX), 1]}, float(LONG_MAX) + 1),  # ... and a long one a double
        ({"$add": [D("1.1"), 1]}, D("2.1")),
        ({"$add": [D("1"), 0.1]}, D("1.100000000000000")),  # a double has 15 digits
        ({"$add": [DATE, 1000]}, DATE + datetime.timedelta(seconds=1)),
        ({"$add": [1000, DATE, 2.5]}, DATE + datetime.timedelta(milliseconds=1003)),
        ({"$add": [None, 1]}, None),
        ({"$add": ["$missing", 1]}, None),
        ({"$add": [None, "a"]}, None),  # evaluation stops at the first null
        ({"$add": []}, 0),
        ({"$add": 5}, 5),
        ({"$subtract": [5, 3]}, 2),
        ({"$subtract": [Int64(5), 3]}, Int64(2)),
        ({"$subtract": [-(2**31), 1]}, Int64(-(2**31) - 1)),
        ({"$subtract": [DATE, DATE - datetime.timedelta(seconds=5)]}, Int64(5000)),
        ({"$subtract": [DATE, 1000]}, DATE - datetime.timedelta(seconds=1)),
        ({"$subtract": [1, None]}, None),
        ({"$multiply": [2, 3]}, 6),
        ({"$multiply": [2**30, 4]}, Int64(2**32)),
        ({"$multiply": [Int64(2**62), 4]}, float(2**64)),
        ({"$multiply": [2**30, 2**30, 2**30, 0]}, 0.0),  # a double once it overflowed
        ({"$multiply": [1.5, 2]}, 3.0),
        ({"$multiply": [D("1.5"), 2]}, D("3.0")),
        ({"$multiply": []}, 1),
        ({"$divide": [1, 2]}, 0.5),
        ({"$divide": [4, 2]}, 2.0),  # always a double
        ({"$divide": [D("1"), 3]}, D("0.3333333333333333333333333333333333")),
        ({"$divide": [None, 0]}, None),
        ({"$mod": [7, 3]}, 1),
        ({"$mod": [-7, 3]}, -1),  # the sign of the dividend
        ({"$mod": [7.5, 2]}, 1.5),
        ({"$mod": [Int64(7), 3]}, Int64(1)),
        ({"$mod": [D("7.5"), 2]}, D("1.5")),
        ({"$abs": -5}, 5),
        ({"$abs": [-(2**31)]}, Int64(2**31)),
        ({"$abs": -1.5}, 1.5),
        ({"$abs": D("-1.50")}, D("1.50")),
        ({"$abs": None}, None),
        ({"$ceil": 7.8}, 8.0),
        ({"$ceil": -2.8}, -2.0),
        ({"$ceil": D("1.1")}, D("2")),
        ({"$ceil": 1}, 1),
        ({"$floor": -2.8}, -3.0),
        ({"$floor": D("-1.1")}, D("-2")),
        ({"$exp": 0}, 1.0),
        ({"$ln": 1}, 0.0),
        ({"$log": [100, 10]}, 2.0),
        ({"$log10": 100}, 2.0),
        ({"$log10": D("100")}, D("2")),
        ({"$pow": [5, 0]}, 1),
        ({"$pow": [2, 10]}, 1024),
        ({"$pow": [2, 31]}, Int64(2**31)),
        ({"$pow": [2, 63]}, float(2**63)),  # does not fit a long
        ({"$pow": [Int64(2), 3]}, Int64(8)),
        ({"$pow": [2, -1]}, 0.5),
        ({"$pow": [-1, 3]}, -1),
        ({"$pow": [2.0, 2]}, 4.0),
        ({"$pow": [D("2"), 2]}, D("4")),
        ({"$sqrt": 25}, 5.0),
        ({"$sqrt": D("0.25")}, D("0.5")),
        ({"$round": [1234.5678, 2]}, 1234.57),
        ({"$round": [1234.5678, -2]}, 1200.0),
        ({"$round": [2.5]}, 2.0),  # ties to even
        ({"$round": [3.5]}, 4.0),
        ({"$round": [1234, -2]}, 1200),
        ({"$round": [1234, 1]}, 1234),
        ({"$round": [Int64(1234), -2]}, Int64(1200)),
        ({"$round": [D("1.25"), 1]}, D("1.2")),
        ({"$round": [D("Infinity"), 1]}, D("Infinity")),
        ({"$round": [1, None]}, None),
        ({"$trunc": [7.8]}, 7.0),
        ({"$trunc": [-7.8]}, -7.0),
        ({"$trunc": [1234.5678, 2]}, 1234.56),
        ({"$trunc": [D("-1.99"), 1]}, D("-1.9")),
    ],
)
def test_arithmetic(expression: Any, expected: Any) -> None:
    check(expression, {}, expected)


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ({"$add": [1, "a"]}, 14, "$add only supports numeric or date types, not string"),
        ({"$add": ["a", None]}, 14, "$add only supports numeric or date types, not string"),
        ({"$add": [DATE, DATE]}, 16612, "only one date allowed in an $add expression"),
        ({"$add": [DATE, 1e300]}, 15, "date overflow"),
        ({"$subtract": ["a", 1]}, 14, "can't $subtract int from string"),
        ({"$subtract": [1, DATE]}, 14, "can't $subtract date from int"),
        ({"$subtract": [DATE, "a"]}, 14, "can't $subtract string from Date"),
        ({"$multiply": [2, "a"]}, 14, "$multiply only supports numeric types, not string"),
        ({"$divide": [1, 0]}, 2, "can't $divide by zero"),
        ({"$divide": [1, D("0")]}, 2, "can't $divide by zero"),
        ({"$divide": ["a", 1]}, 14, "$divide only supports numeric types, not string and int"),
        ({"$mod": [7, 0]}, 16610, "can't $mod by zero"),
        ({"$mod": [7, D("0")]}, 5733415, "can't $mod by zero"),
        ({"$mod": ["a", 1]}, 16611, "$mod only supports numeric types, not string and int"),
        ({"$abs": [Int64(-(2**63))]}, 28680, "can't take $abs of long long min"),
        ({"$abs": "a"}, 28765, "$abs only supports numeric types, not string"),
        ({"$abs": [1, 2]}, 16020, "Expression $abs takes exactly 1 arguments. 2 were passed in."),
        ({"$ln": 0}, 28766, "$ln's argument must be a positive number, but is 0"),
        ({"$log10": -1}, 28761, "$log10's argument must be a positive number, but is -1"),
        ({"$log": [-1, 10]}, 28758, "$log's argument must be a positive number, but is -1"),
        (
            {"$log": [10, 1]},
            28759,
            "$log's base must be a positive number not equal to 1, but is 1",
        ),
        ({"$log": ["a", 10]}, 28756, "$log's argument must be numeric, not string"),
        ({"$pow": [0, -1]}, 28764, "$pow cannot take a base of 0 and a negative exponent"),
        ({"$pow": ["a", 1]}, 28762, "$pow's base must be numeric, not string"),
        ({"$sqrt": -1}, 28714, "$sqrt's argument must be greater than or equal to 0"),
        ({"$round": ["a"]}, 51081, "$round only supports numeric types, not string"),
        ({"$round": [1, 1.5]}, 51082, "precision argument to  $round must be a integral value"),
        (
            {"$round": [1, 101]},
            51083,
            "cannot apply $round with precision value 101 value must be in [-20, 100]",
        ),
    ],
)
def test_arithmetic_errors(expression: Any, code: int, message: str) -> None:
    check_error(expression, {}, code, message)


NUMBERS = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.decimals(
        allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6
    ).map(Decimal128),
)
_WIDTH = {"int": 0, "long": 1, "double": 2, "decimal": 3}


@settings(max_examples=300, deadline=None)
@given(NUMBERS, NUMBERS)
def test_add_is_commutative_with_the_widest_type(a: Any, b: Any) -> None:
    one, other = evaluate({"$add": [a, b]}), evaluate({"$add": [b, a]})
    assert same(one, other)
    widest = max(type_name(a), type_name(b), key=_WIDTH.__getitem__)
    kind = type_name(one)
    if widest == "int":
        assert kind == ("int" if -(2**31) <= int(a) + int(b) < 2**31 else "long")
    elif widest == "long":
        assert kind == ("long" if -(2**63) <= int(a) + int(b) < 2**63 else "double")
    else:
        assert kind == widest


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40))
def test_subtract_inverts_add_on_integers(a: int, b: int) -> None:
    total = evaluate({"$add": [a, b]})
    assert int(evaluate({"$subtract": [total, b]})) == a


# -- comparison --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$cmp": [1, 2]}, -1),
        ({"$cmp": ["b", "a"]}, 1),
        ({"$cmp": ["a", 1]}, 1),  # no type bracketing: strings after numbers
        ({"$eq": [1, 1.0]}, True),
        ({"$eq": [1, D("1.00")]}, True),
        ({"$eq": [math.nan, math.nan]}, True),
        ({"$lt": [math.nan, -math.inf]}, True),
        ({"$eq": ["$missing", None]}, False),  # missing ranks with undefined, below null
        ({"$lt": ["$missing", None]}, True),
        ({"$eq": ["$missing", UNDEFINED]}, True),
        ({"$gt": ["$missing", MinKey()]}, True),
        ({"$lt": [None, 0]}, True),
        ({"$gt": [[1, 2], "z"]}, True),
        ({"$eq": [[1, 2], [1, 2]]}, True),
        ({"$gt": [{"a": 1}, {"a": 0}]}, True),
        ({"$lt": [{"a": 1}, MaxKey()]}, True),
        ({"$gte": [True, 1]}, True),  # booleans rank after numbers
        ({"$ne": [DATE, DATE]}, False),
        ({"$lte": ["abc", "abd"]}, True),
    ],
)
def test_comparison(expression: Any, expected: Any) -> None:
    check(expression, {}, expected)


def test_comparison_uses_the_collation() -> None:
    collation = parse_collation({"locale": "en", "strength": 2})
    assert evaluate({"$eq": ["a", "A"]}, collation=collation) is True
    assert evaluate({"$eq": ["a", "A"]}) is False
    assert evaluate({"$lt": ["B", "a"]}) is True  # code points without one
    assert evaluate({"$lt": ["B", "a"]}, collation=collation) is False


VALUES = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=True, width=64),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.lists(st.integers(-2, 2), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(VALUES, VALUES)
def test_cmp_is_antisymmetric_and_agrees_with_the_others(a: Any, b: Any) -> None:
    forward = evaluate({"$cmp": [{"$literal": a}, {"$literal": b}]})
    assert evaluate({"$cmp": [{"$literal": b}, {"$literal": a}]}) == -forward
    assert evaluate({"$eq": [{"$literal": a}, {"$literal": b}]}) is (forward == 0)
    assert evaluate({"$lt": [{"$literal": a}, {"$literal": b}]}) is (forward < 0)
    assert evaluate({"$gte": [{"$literal": a}, {"$literal": b}]}) is (forward >= 0)


# -- boolean and conditional -------------------------------------------------------------------


IF_NULL_DOC = {"zero": 0, "one": 1, "two": 2, "my_false": False, "my_str": "", "my_null": None}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$and": []}, True),
        ({"$and": [1, "a", [], {}]}, True),  # empty strings and arrays are true
        ({"$and": [1, 0]}, False),
        ({"$and": [True, "$missing"]}, False),
        ({"$and": ["$a", False]}, False),
        ({"$or": []}, False),
        ({"$or": [0, None, "$missing", D("0")]}, False),
        ({"$or": [0, D("0.1")]}, True),
        ({"$not": [0]}, True),
        ({"$not": [[]]}, False),  # the operand is an empty array: true
        ({"$not": "$missing"}, True),
        ({"$cond": {"if": {"$gte": ["$a", 1]}, "then": "yes", "else": "no"}}, "yes"),
        ({"$cond": [{"$lt": ["$a", 1]}, "yes", "no"]}, "no"),
        ({"$cond": [True, 1, {"$add": ["$x", "a"]}]}, 1),  # the other branch is not evaluated
        ({"$cond": [None, 1, 2]}, 2),
        ({"$ifNull": ["$one", "$two"]}, 1),
        ({"$ifNull": ["$my_false", "$one"]}, False),
        ({"$ifNull": ["$my_str", "$one"]}, ""),
        ({"$ifNull": ["$my_null", "$two"]}, 2),
        ({"$ifNull": ["$my_null", "$my_null", "$my_false"]}, False),
        ({"$ifNull": ["$missing", "$missing", None]}, None),
        ({"$ifNull": ["$my_null", "$missing"]}, MISSING),  # the last, whatever it is
        ({"$ifNull": [None, UNDEFINED]}, UNDEFINED),
        ({"$ifNull": ["$missing", {"$multiply": ["$two", 3]}]}, 6),
        (
            {
                "$switch": {
                    "branches": [
                        {"case": {"$eq": ["$one", 0]}, "then": "zero"},
                        {"case": {"$eq": ["$one", 1]}, "then": "one"},
                    ],
                    "default": "other",
                }
            },
            "one",
        ),
        ({"$switch": {"branches": [{"case": False, "then": 1}], "default": "d"}}, "d"),
    ],
)
def test_boolean_and_conditional(expression: Any, expected: Any) -> None:
    check(expression, {"a": 1, **IF_NULL_DOC}, expected)


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ({"$cond": {"if": 1, "then": 1}}, 17082, "Missing 'else' parameter to $cond"),
        ({"$cond": {"then": 1, "else": 1}}, 17080, "Missing 'if' parameter to $cond"),
        ({"$cond": {"if": 1, "else": 1}}, 17081, "Missing 'then' parameter to $cond"),
        (
            {"$cond": {"if": 1, "then": 1, "else": 1, "x": 1}},
            17083,
            "Unrecognized parameter to $cond: x",
        ),
        ({"$cond": [1, 2]}, 16020, "Expression $cond takes exactly 3 arguments. 2 were passed in."),
        ({"$ifNull": []}, 1257300, "$ifNull needs at least two arguments, had: 0"),
        ({"$ifNull": ["$one"]}, 1257300, "$ifNull needs at least two arguments, had: 1"),
        ({"$switch": 1}, 40060, "$switch requires an object as an argument, found: int"),
        (
            {"$switch": {"branches": 1}},
            40061,
            "$switch expected an array for 'branches', found: int",
        ),
        (
            {"$switch": {"branches": [1]}},
            40062,
            "$switch expected each branch to be an object, found: int",
        ),
        (
            {"$switch": {"branches": [{"case": 1, "then": 1, "x": 1}]}},
            40063,
            "$switch found an unknown argument to a branch: x",
        ),
        (
            {"$switch": {"branches": [{"then": 1}]}},
            40064,
            "$switch requires each branch have a 'case' expression",
        ),
        (
            {"$switch": {"branches": [{"case": 1}]}},
            40065,
            "$switch requires each branch have a 'then' expression.",
        ),
        (
            {"$switch": {"branches": [], "default": 1}},
            40068,
            "$switch requires at least one branch.",
        ),
        ({"$switch": {"x": 1}}, 40067, "$switch found an unknown argument: x"),
        (
            {"$switch": {"branches": [{"case": "$missing", "then": 1}]}},
            40066,
            "$switch could not find a matching branch for an input, and no default was specified.",
        ),
    ],
)
def test_conditional_errors(expression: Any, code: int, message: str) -> None:
    check_error(expression, IF_NULL_DOC, code, message)


# -- $expr through the matcher -----------------------------------------------------------------


def test_expr_in_a_query() -> None:
    context = MatchContext(expressions=EXPRESSIONS, variables={"limit": 3})
    matcher = compile_filter({"$expr": {"$gt": [{"$add": ["$a", "$b"]}, "$$limit"]}}, context)
    assert matcher.matches({"a": 1, "b": 3})
    assert not matcher.matches({"a": 1, "b": 2})
    assert not matcher.matches({"a": 1})  # null is false
