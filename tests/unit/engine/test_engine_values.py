"""BSON comparison: the server's type order and value order (MongoDB manual,
"Comparison/Sort Order"), as properties and as the manual's examples."""

from __future__ import annotations

import datetime
import math
from typing import Any

from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocore.sim.engine.sort import compile_sort
from mongocore.sim.engine.values import MISSING, compare, equal, identical, key

# One value of each type, in the manual's order.
ORDERED = [
    MinKey(),
    None,
    -math.inf,
    -5,
    Decimal128("-4.5"),
    0,
    Int64(3),
    3.5,
    "",
    "a",
    "b",
    {},
    {"a": 1},
    [],
    [1],
    Binary(b"", 0),
    Binary(b"\x00", 0),
    ObjectId("000000000000000000000000"),
    ObjectId("ffffffffffffffffffffffff"),
    False,
    True,
    datetime.datetime(1970, 1, 1),
    datetime.datetime(2024, 1, 1),
    Timestamp(0, 1),
    Timestamp(1, 0),
    Regex("a", 0),
    Regex("b", 0),
    MaxKey(),
]


def test_the_manual_type_order() -> None:
    for lower, higher in zip(ORDERED, ORDERED[1:]):
        assert compare(lower, higher) == -1, (lower, higher)
        assert compare(higher, lower) == 1, (lower, higher)


def test_numbers_are_equal_across_types() -> None:
    for a, b in [
        (1, 1.0),
        (1, Int64(1)),
        (1, Decimal128("1.0")),
        (0.5, Decimal128("0.5")),
        (-0.0, 0),
    ]:
        assert equal(a, b) and hash(key(a)) == hash(key(b)), (a, b)
    assert not equal(Decimal128("0.1"), 0.1)  # the double 0.1 is not one tenth
    assert not equal(True, 1) and not equal(False, 0)


def test_nan_equals_nan_and_sorts_below_every_number() -> None:
    assert equal(math.nan, Decimal128("NaN"))
    assert compare(math.nan, -math.inf) == -1
    assert compare(math.nan, None) == 1


def test_missing_sorts_as_null() -> None:
    assert equal(MISSING, None)


def test_documents_compare_field_by_field() -> None:
    assert compare({"a": 1, "b": 2}, {"a": 1, "c": 0}) == -1  # names at the second field
    assert compare({"a": 1}, {"a": "x"}) == -1  # the value's type first
    assert compare({"a": 1}, {"a": 1, "b": 1}) == -1  # a prefix first


def test_identical_tells_types_apart() -> None:
    assert identical({"a": 1}, {"a": 1})
    assert not identical({"a": 1}, {"a": 1.0})
    assert not identical({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert identical(math.nan, math.nan)


bson_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=4),
    st.builds(
        lambda n: Decimal128(str(n)),
        st.decimals(allow_nan=False, places=3, min_value=-1000, max_value=1000),
    ),
    st.builds(Timestamp, st.integers(0, 2**31), st.integers(0, 5)),
)
bson_values = st.recursive(
    bson_scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=300)
@given(bson_values, bson_values, bson_values)
def test_comparison_is_a_total_order(a: Any, b: Any, c: Any) -> None:
    assert compare(a, b) == -compare(b, a)
    assert compare(a, a) == 0
    if compare(a, b) <= 0 and compare(b, c) <= 0:
        assert compare(a, c) <= 0
    assert (compare(a, b) == 0) == equal(a, b) == (key(a) == key(b))
    if equal(a, b):
        assert hash(key(a)) == hash(key(b))


@settings(max_examples=200)
@given(st.lists(bson_scalars, max_size=8))
def test_sort_order_is_consistent_with_comparison(values: list[Any]) -> None:
    docs = [{"_id": i, "v": v} for i, v in enumerate(values)]
    ascending = compile_sort({"v": 1}).sort(docs)
    for first, second in zip(ascending, ascending[1:]):
        assert compare(first["v"], second["v"]) <= 0
        if compare(first["v"], second["v"]) == 0:
            assert first["_id"] < second["_id"]  # ties keep the scan's order
    descending = compile_sort({"v": -1}).sort(docs)
    for first, second in zip(descending, descending[1:]):
        assert compare(first["v"], second["v"]) >= 0
