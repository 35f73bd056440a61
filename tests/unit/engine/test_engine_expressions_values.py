"""String, array, set, object, type, bitwise, trigonometry and miscellaneous expressions
against the MongoDB manual's examples and a 7.0 server's answers and errors."""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

import pytest
from bson import Binary, Decimal128, Int64, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocore.sim.collation import parse_collation
from mongocore.sim.engine.expressions import compile_expression
from mongocore.sim.engine.expressions.misc import hash_key
from mongocore.sim.engine.values import MISSING
from tests.unit.engine.expression_helpers import check, check_error, error, evaluate

D = Decimal128
OID = ObjectId("0123456789abcdef01234567")
DATE = datetime.datetime(2018, 3, 27, 5, 4, 47, 890000)


# -- strings ----


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$concat": ["a", "-", "$s"]}, "a-héllo"),
        ({"$concat": ["a", None]}, None),
        ({"$concat": ["a", "$missing"]}, None),
        ({"$concat": []}, ""),
        ({"$toUpper": "$s"}, "HéLLO"),  # ASCII letters only, as the server's C locale
        ({"$toLower": "ABC Ü"}, "abc Ü"),
        ({"$toUpper": 1.5}, "1.5"),  # a number is coerced to its text
        ({"$toUpper": None}, ""),
        ({"$toUpper": DATE}, "2018-03-27T05:04:47.890Z"),
        ({"$strLenBytes": "$s"}, 6),
        ({"$strLenCP": "$s"}, 5),
        ({"$strcasecmp": ["ABC", "abc"]}, 0),
        ({"$strcasecmp": ["abd", "ABC"]}, 1),
        ({"$substrBytes": ["$s", 0, 3]}, "hé"),
        ({"$substrBytes": ["abc", 5, 1]}, ""),
        ({"$substrBytes": ["abc", 1, -1]}, "bc"),
        ({"$substr": ["abcdef", 2, 2]}, "cd"),
        ({"$substrCP": ["$s", 1, 2]}, "él"),
        ({"$substrCP": ["abc", 10, 2]}, ""),
        ({"$split": ["June-15-2013", "-"]}, ["June", "15", "2013"]),
        ({"$split": ["abc", "x"]}, ["abc"]),
        ({"$split": ["", "-"]}, [""]),
        ({"$split": [None, "-"]}, None),
        ({"$indexOfBytes": ["cafeteria", "e"]}, 3),
        ({"$indexOfBytes": ["$s", "l"]}, 3),  # é takes two bytes
        ({"$indexOfBytes": ["abc", "c", 0, 2]}, -1),
        ({"$indexOfBytes": ["abc", "", 3]}, 3),
        ({"$indexOfCP": ["$s", "l"]}, 2),
        ({"$indexOfCP": ["abc", "", 3]}, -1),
        ({"$indexOfCP": ["", ""]}, 0),
        ({"$indexOfCP": [None, "a"]}, None),
        ({"$trim": {"input": "  \t hi \n\u2000"}}, "hi"),
        ({"$ltrim": {"input": "xxhixx", "chars": "x"}}, "hixx"),
        ({"$rtrim": {"input": "xxhixx", "chars": "x"}}, "xxhi"),
        ({"$trim": {"input": "abcba", "chars": "ab"}}, "c"),
        ({"$trim": {"input": None}}, None),
        (
            {"$replaceOne": {"input": "blue paint", "find": "blue", "replacement": "red"}},
            "red paint",
        ),
        ({"$replaceAll": {"input": "a.b.c", "find": ".", "replacement": "-"}}, "a-b-c"),
        ({"$replaceOne": {"input": "abc", "find": None, "replacement": "x"}}, None),
        ({"$regexMatch": {"input": "$s", "regex": "^H", "options": "i"}}, True),
        ({"$regexMatch": {"input": None, "regex": "a"}}, False),
        (
            {"$regexFind": {"input": "a1b22", "regex": "([a-z])(\\d+)"}},
            {"match": "a1", "idx": 0, "captures": ["a", "1"]},
        ),
        ({"$regexFind": {"input": "xyz", "regex": "a"}}, None),
        (
            {"$regexFind": {"input": "éa", "regex": "a(b)?"}},
            {"match": "a", "idx": 1, "captures": [None]},  # a code point index; no capture: null
        ),
        (
            {"$regexFindAll": {"input": "a1b22", "regex": Regex("\\d+")}},
            [{"match": "1", "idx": 1, "captures": []}, {"match": "22", "idx": 3, "captures": []}],
        ),
        (
            {"$regexFindAll": {"input": "ab", "regex": "x*"}},
            [{"match": "", "idx": 0, "captures": []}, {"match": "", "idx": 1, "captures": []}],
        ),
        ({"$regexFindAll": {"input": None, "regex": "a"}}, []),
        (
            {"$regexFind": {"input": "2024-05", "regex": "(?<year>\\d{4})"}},
            {"match": "2024", "idx": 0, "captures": ["2024"]},
        ),
    ],
)
def test_strings(expression: Any, expected: Any) -> None:
    check(expression, {"s": "héllo"}, expected)


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ({"$concat": ["a", 1]}, 16702, "$concat only supports strings, not int"),
        (
            {"$toUpper": {"$literal": {"a": 1}}},
            16007,
            "can't convert from BSON type object to String",
        ),
        ({"$strLenBytes": 1}, 34473, "$strLenBytes requires a string argument, found: int"),
        ({"$strLenCP": None}, 34471, "$strLenCP requires a string argument, found: null"),
        (
            {"$substrBytes": ["héllo", 2, 1]},
            28656,
            "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.",
        ),
        (
            {"$substrBytes": ["héllo", 0, 2]},
            28657,
            "$substrBytes:  Invalid range, ending index is in the middle of a UTF-8 character.",
        ),
        (
            {"$substrBytes": ["a", -1, 1]},
            50752,
            "$substrBytes:  starting index must be non-negative (got: -1)",
        ),
        (
            {"$substrCP": ["a", 0.5, 1]},
            34451,
            "$substrCP: starting index cannot be represented as a 32-bit integral value: 0.5",
        ),
        ({"$substrCP": ["a", 0, -1]}, 34454, "$substrCP: length must be a nonnegative integer."),
        ({"$split": ["a", ""]}, 40087, "$split requires a non-empty separator"),
        ({"$split": [1, "a"]}, 40085, None),
        (
            {"$indexOfBytes": ["abc", "b", 1.5]},
            40096,
            "$indexOfBytesrequires an integral starting index, found a value of type: double,"
            " with value: 1.5",
        ),
        (
            {"$indexOfCP": ["abc", "b", -1]},
            40097,
            "$indexOfCP requires a nonnegative starting index, found: -1",
        ),
        (
            {"$indexOfCP": ["abc", 1]},
            40094,
            "$indexOfCP requires a string as the second argument, found: int",
        ),
        ({"$trim": {"chars": "a"}}, 50695, "$trim requires an 'input' field"),
        ({"$trim": {"input": "a", "x": 1}}, 50694, "$trim found an unknown argument: x"),
        ({"$ltrim": "a"}, 50696, "$ltrim only supports an object as an argument, found string"),
        (
            {"$trim": {"input": 1}},
            50699,
            "$trim requires its input to be a string, got 1 (of type int) instead.",
        ),
        (
            {"$replaceAll": {"input": "a", "find": "a"}},
            51747,
            "$replaceAll requires 'replacement' to be specified",
        ),
        (
            {"$replaceOne": {"input": 1, "find": "a", "replacement": "b"}},
            51746,
            "$replaceOne requires that 'input' be a string, found: 1",
        ),
        ({"$regexMatch": {"regex": "a"}}, 31022, "$regexMatch requires 'input' parameter"),
        (
            {"$regexMatch": {"input": "a", "regex": "a", "options": "z"}},
            51108,
            "$regexMatch invalid flag in regex options: z",
        ),
        (
            {"$regexMatch": {"input": "a", "regex": 1}},
            51105,
            "$regexMatch needs 'regex' to be of type string or regex",
        ),
        (
            {"$regexMatch": {"input": "a", "regex": Regex("a", "i"), "options": "m"}},
            51107,
            "$regexMatch: found regex option(s) specified in both 'regex' and 'option' fields",
        ),
        (
            {"$regexFind": {"input": 1, "regex": "a"}},
            51104,
            "$regexFind needs 'input' to be of type string",
        ),
        ({"$regexFind": {"input": "a", "regex": "("}}, 51111, None),
        (
            {"$regexFind": 1},
            51103,
            "$regexFind expects an object of named arguments but found: int",
        ),
    ],
)
def test_string_errors(expression: Any, code: int, message: Any) -> None:
    check_error(expression, {}, code, message)


def test_a_constant_pattern_is_checked_before_any_document() -> None:
    with pytest.raises(Exception) as raised:
        compile_expression({"$regexMatch": {"input": "$a", "regex": "("}})
    assert getattr(raised.value, "code", None) == 51111


# -- arrays ----

ARRAYS = {"a": [1, 2, 3, 4], "docs": [{"x": 1}, {"x": 2}], "empty": []}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$arrayElemAt": ["$a", 0]}, 1),
        ({"$arrayElemAt": ["$a", -1]}, 4),
        ({"$arrayElemAt": ["$a", 15]}, MISSING),
        ({"$arrayElemAt": ["$a", -5]}, MISSING),
        ({"$arrayElemAt": ["$a", 1.0]}, 2),
        ({"$arrayElemAt": [None, 1]}, None),
        ({"$first": "$a"}, 1),
        ({"$last": "$a"}, 4),
        ({"$first": "$empty"}, MISSING),
        ({"$first": "$missing"}, None),
        ({"$concatArrays": ["$a", [5], []]}, [1, 2, 3, 4, 5]),
        ({"$concatArrays": ["$a", None]}, None),
        ({"$filter": {"input": "$a", "cond": {"$gt": ["$$this", 2]}}}, [3, 4]),
        ({"$filter": {"input": "$a", "as": "n", "cond": {"$gt": ["$$n", 1]}, "limit": 2}}, [2, 3]),
        ({"$filter": {"input": "$a", "cond": True, "limit": None}}, [1, 2, 3, 4]),
        ({"$filter": {"input": None, "cond": True}}, None),
        ({"$map": {"input": "$a", "as": "n", "in": {"$multiply": ["$$n", 10]}}}, [10, 20, 30, 40]),
        ({"$map": {"input": "$docs", "in": "$$this.y"}}, [None, None]),  # missing becomes null
        (
            {
                "$map": {
                    "input": "$a",
                    "in": {"$map": {"input": [1], "as": "i", "in": ["$$this", "$$i"]}},
                }
            },
            [[[1, 1]], [[2, 1]], [[3, 1]], [[4, 1]]],
        ),
        (
            {"$reduce": {"input": "$a", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}},
            10,
        ),
        ({"$reduce": {"input": [], "initialValue": "init", "in": "x"}}, "init"),
        ({"$in": [2, "$a"]}, True),
        ({"$in": [2.0, "$a"]}, True),
        ({"$in": ["2", "$a"]}, False),
        ({"$indexOfArray": ["$a", 3]}, 2),
        ({"$indexOfArray": ["$a", 3, 0, 2]}, -1),
        ({"$indexOfArray": [None, 3]}, None),
        ({"$isArray": ["$a"]}, True),
        ({"$isArray": "$missing"}, False),
        ({"$range": [0, 5]}, [0, 1, 2, 3, 4]),
        ({"$range": [0, 10, 3]}, [0, 3, 6, 9]),
        ({"$range": [5, 0, -2]}, [5, 3, 1]),
        ({"$range": [0, 5, -1]}, []),
        ({"$reverseArray": "$a"}, [4, 3, 2, 1]),
        ({"$reverseArray": None}, None),
        ({"$size": "$a"}, 4),
        ({"$slice": ["$a", 2]}, [1, 2]),
        ({"$slice": ["$a", -2]}, [3, 4]),
        ({"$slice": ["$a", 1, 2]}, [2, 3]),
        ({"$slice": ["$a", -3, 2]}, [2, 3]),
        ({"$slice": ["$a", 10, 2]}, []),
        ({"$zip": {"inputs": [["a", "b"], [1, 2, 3]]}}, [["a", 1], ["b", 2]]),
        (
            {"$zip": {"inputs": [["a"], [1, 2]], "useLongestLength": True, "defaults": ["x", 0]}},
            [["a", 1], ["x", 2]],
        ),
        ({"$zip": {"inputs": [["a"], [1, 2]], "useLongestLength": True}}, [["a", 1], [None, 2]]),
        ({"$arrayToObject": [[["a", 1], ["b", 2]]]}, {"a": 1, "b": 2}),
        ({"$arrayToObject": [[{"k": "a", "v": 1}, {"k": "a", "v": 2}]]}, {"a": 2}),
        ({"$arrayToObject": [[]]}, {}),
        (
            {"$objectToArray": {"$literal": {"a": 1, "b": {"c": 2}}}},
            [{"k": "a", "v": 1}, {"k": "b", "v": {"c": 2}}],
        ),
        ({"$sortArray": {"input": [3, "a", 1, None, [0]], "sortBy": 1}}, [None, 1, 3, "a", [0]]),
        ({"$sortArray": {"input": [3, 1, 2], "sortBy": -1}}, [3, 2, 1]),
        (
            {"$sortArray": {"input": [{"n": 2}, {"n": 1}, {"m": 0}], "sortBy": {"n": 1}}},
            [{"m": 0}, {"n": 1}, {"n": 2}],
        ),
        ({"$firstN": {"n": 2, "input": "$a"}}, [1, 2]),
    ],
)
def test_arrays(expression: Any, expected: Any) -> None:
    check(expression, ARRAYS, expected)


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        (
            {"$arrayElemAt": [1, 0]},
            28689,
            "$arrayElemAt's first argument must be an array, but is int",
        ),
        ({"$first": 1}, 28689, "$first's argument must be an array, but is int"),
        (
            {"$arrayElemAt": ["$a", "x"]},
            28690,
            "$arrayElemAt's second argument must be a numeric value, but is string",
        ),
        (
            {"$arrayElemAt": ["$a", 1.5]},
            28691,
            "$arrayElemAt's second argument must be representable as a 32-bit integer: 1.5",
        ),
        ({"$concatArrays": [1]}, 28664, "$concatArrays only supports arrays, not int"),
        ({"$filter": 1}, 28646, "$filter only supports an object as its argument"),
        ({"$filter": {"input": "$a"}}, 28650, "Missing 'cond' parameter to $filter"),
        ({"$filter": {"input": 1, "cond": 1}}, 28651, "input to $filter must be an array not int"),
        (
            {"$filter": {"input": "$a", "cond": 1, "limit": 0}},
            327392,
            "$filter: limit must be greater than 0: 0",
        ),
        ({"$map": {"input": "$a", "as": "N", "in": 1}}, 16867, None),
        ({"$map": {"input": 1, "in": 1}}, 16883, "input to $map must be an array not int"),
        (
            {"$reduce": {"input": "$a", "initialValue": 0}},
            40079,
            "$reduce requires 'in' to be specified",
        ),
        (
            {"$reduce": {"input": 1, "initialValue": 0, "in": 1}},
            40080,
            "$reduce requires that 'input' be an array, found: 1",
        ),
        ({"$in": [1, 2]}, 40081, "$in requires an array as a second argument, found: int"),
        (
            {"$in": [1, "$missing"]},
            40081,
            "$in requires an array as a second argument, found: missing",
        ),
        (
            {"$size": "$missing"},
            17124,
            "The argument to $size must be an array, but was of type: missing",
        ),
        ({"$range": [0, "a"]}, 34445, None),
        ({"$range": [0, 1, 0]}, 34449, "$range requires a non-zero step value"),
        ({"$slice": ["$a", 1, 0]}, 28729, "Third argument to $slice must be positive: 0"),
        ({"$zip": {"inputs": []}}, 34465, "$zip requires at least one input array"),
        (
            {"$zip": {"inputs": [[1]], "defaults": [1]}},
            34466,
            "cannot specify defaults unless useLongestLength is true",
        ),
        ({"$zip": {"inputs": [1]}}, 34468, "$zip found a non-array expression in input: 1"),
        (
            {"$arrayToObject": [[1]]},
            40398,
            "Unrecognised input type format for $arrayToObject: int",
        ),
        ({"$arrayToObject": [[["a"]]]}, 40397, None),
        ({"$arrayToObject": [[{"k": 1, "v": 1}]]}, 40394, None),
        ({"$objectToArray": 1}, 40390, "$objectToArray requires a document input, found: int"),
        ({"$sortArray": {"input": [1]}}, 2942503, "$sortArray requires 'sortBy' to be specified"),
        ({"$sortArray": {"input": 1, "sortBy": 1}}, 2942504, None),
        (
            {"$sortArray": {"input": [1], "sortBy": 2}},
            2942506,
            "The $sort element value must be either 1 or -1",
        ),
    ],
)
def test_array_errors(expression: Any, code: int, message: Any) -> None:
    check_error(expression, ARRAYS, code, message)


# -- sets ----


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$setEquals": [[1, 2], [2, 1, 1.0]]}, True),
        ({"$setEquals": [[1], [1], [2]]}, False),
        ({"$setIntersection": [[3, 1, 2], [2.0, 3]]}, [2, 3]),  # BSON order, first seen kept
        ({"$setIntersection": [[1], None]}, None),
        ({"$setIntersection": []}, []),
        ({"$setUnion": [["b", 1], [2, "a", 1]]}, [1, 2, "a", "b"]),
        ({"$setDifference": [[3, 1, 3, 2], [2]]}, [3, 1]),
        ({"$setIsSubset": [[1, 1], [1, 2]]}, True),
        ({"$setIsSubset": [["$a"], [1]]}, False),
        ({"$allElementsTrue": [[1, "a", []]]}, True),
        ({"$allElementsTrue": [[]]}, True),
        ({"$anyElementTrue": [[0, None, False]]}, False),
    ],
)
def test_sets(expression: Any, expected: Any) -> None:
    check(expression, {"a": 5}, expected)


def test_set_errors_and_collation() -> None:
    check_error({"$setEquals": [[1]]}, {}, 17045, "$setEquals needs at least two arguments had: 1")
    check_error(
        {"$setUnion": [[1], 1]},
        {},
        17043,
        "All operands of $setUnion must be arrays. One argument is of type: int",
    )
    check_error({"$setIsSubset": ["$a", [1]]}, {"a": 1}, 17310, None)
    check_error(
        {"$allElementsTrue": 1},
        {},
        17040,
        "$allElementsTrue's argument must be an array, but is int",
    )
    with pytest.raises(Exception) as raised:
        compile_expression({"$setIsSubset": ["$a", 1]})
    assert getattr(raised.value, "code", None) == 17311
    collation = parse_collation({"locale": "en", "strength": 1})
    assert evaluate({"$setUnion": [["a"], ["A"]]}, collation=collation) == ["a"]


# -- objects ----


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$getField": "price.usd"}, 45),
        ({"$getField": {"field": {"$literal": "$price"}, "input": "$doc"}}, 1),
        ({"$getField": {"field": "x", "input": "$missing"}}, MISSING),
        ({"$getField": {"field": "x", "input": None}}, None),
        ({"$getField": {"field": "x", "input": 5}}, MISSING),
        (
            {"$setField": {"field": "a.b", "input": {"$literal": {"c": 1}}, "value": 2}},
            {"c": 1, "a.b": 2},
        ),
        (
            {"$setField": {"field": "c", "input": {"$literal": {"c": 1, "d": 2}}, "value": 3}},
            {"c": 3, "d": 2},
        ),
        ({"$setField": {"field": "c", "input": {"$literal": {"c": 1}}, "value": "$$REMOVE"}}, {}),
        ({"$setField": {"field": "c", "input": None, "value": 1}}, None),
        ({"$unsetField": {"field": "$x", "input": "$doc"}}, MISSING),
        ({"$unsetField": {"field": {"$literal": "$price"}, "input": "$doc"}}, {"other": 2}),
    ],
)
def test_objects(expression: Any, expected: Any) -> None:
    doc = {"price.usd": 45, "doc": {"$price": 1, "other": 2}}
    if expected is MISSING and "$unsetField" in expression:
        check_error(expression, doc, 4161108, None)
        return
    check(expression, doc, expected)


def test_object_errors() -> None:
    check_error(
        {"$getField": {"input": {}}}, {}, 3041702, "$getField requires 'field' to be specified"
    )
    # 7.0 takes a constant field name only (7.2 made it dynamic): the 7.0.8 answers of
    # jstests/aggregation/expressions/expression_get_field.js
    check_error(
        {"$getField": 5},
        {},
        5654602,
        "$getField requires 'field' to evaluate to type String, but got int",
    )
    check_error(
        {"$getField": {"$const": {"a": 1}}},
        {},
        5654602,
        "$getField requires 'field' to evaluate to type String, but got object",
    )
    for spec in ({"$add": [2, 3]}, {"field": {"a": 1}, "input": {"a": 1}}):
        check_error(
            {"$getField": spec},
            {},
            5654601,
            "$getField requires 'field' to evaluate to a constant, but got a non-constant argument",
        )
    check_error(
        {"$getField": "$foo"},
        {},
        5654600,
        "'$CURRENT.foo' is a field path reference which is not allowed in this context. Did you"
        " mean {$literal: '$CURRENT.foo'}?",
    )
    check_error({"$getField": {"field": "$$ROOT", "input": {}}}, {}, 5654600, None)
    check_error(
        {"$getField": {"field": "a", "input": {}, "unknown": True}},
        {},
        3041701,
        "$getField found an unknown argument: unknown",
    )
    check_error(
        {"$setField": {"field": "$field_path", "input": {}, "value": 0}},
        {},
        4161108,
        "'$CURRENT.field_path' is a field path reference which is not allowed in this context."
        " Did you mean {$literal: '$CURRENT.field_path'}?",
    )
    check_error(
        {"$unsetField": {"field": {"$concat": ["a.b", ".", "c"]}, "input": {}}},
        {},
        4161106,
        "$unsetField requires 'field' to evaluate to a constant, but got a non-constant argument",
    )
    check_error(
        {"$unsetField": {"field": "a", "input": True}},
        {},
        4161105,
        "$setField requires 'input' to evaluate to type Object",
    )
    check_error(
        {"$setField": {"field": None, "value": 0}},
        {},
        4161109,
        "$setField requires 'input' to be specified",
    )
    check_error(
        {"$unsetField": {"field": "a", "value": None, "input": {}}},
        {},
        4161101,
        "$unsetField found an unknown argument: value",
    )
    check_error(
        {"$setField": {"field": {"$concat": ["$a"]}, "input": {}, "value": 1}},
        {},
        4161106,
        "$setField requires 'field' to evaluate to a constant, but got a non-constant argument",
    )
    check_error({"$setField": {"field": "f", "input": 5, "value": 1}}, {}, 4161105, None)
    check_error(
        {"$setField": {"field": "f", "input": {}}},
        {},
        4161103,
        "$setField requires 'value' to be specified",
    )


# -- types and conversions ----


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # The server's own conversion table (jstests/aggregation/expressions/convert.js).
        ({"$convert": {"input": 1.9, "to": "string"}}, "1.9"),
        ({"$convert": {"input": 1.9, "to": "bool"}}, True),
        ({"$convert": {"input": 1.9, "to": "date"}}, datetime.datetime(1970, 1, 1, 0, 0, 0, 1000)),
        ({"$convert": {"input": 1.9, "to": "int"}}, 1),
        ({"$convert": {"input": 1.9, "to": "long"}}, Int64(1)),
        ({"$convert": {"input": 1.9, "to": "decimal"}}, D("1.90000000000000")),
        ({"$convert": {"input": "1.9", "to": "double"}}, 1.9),
        ({"$convert": {"input": "0123456789abcdef01234567", "to": "objectId"}}, OID),
        ({"$convert": {"input": "", "to": "bool"}}, True),
        (
            {"$convert": {"input": "1970-01-01T00:00:00.001Z", "to": "date"}},
            datetime.datetime(1970, 1, 1, 0, 0, 0, 1000),
        ),
        ({"$convert": {"input": "1", "to": "int"}}, 1),
        ({"$convert": {"input": "1", "to": "long"}}, Int64(1)),
        ({"$convert": {"input": "1.9", "to": "decimal"}}, D("1.9")),
        ({"$convert": {"input": OID, "to": "string"}}, "0123456789abcdef01234567"),
        ({"$convert": {"input": OID, "to": "date"}}, datetime.datetime(1970, 8, 9, 22, 25, 43)),
        ({"$convert": {"input": False, "to": "double"}}, 0.0),
        ({"$convert": {"input": False, "to": "string"}}, "false"),
        ({"$convert": {"input": False, "to": "decimal"}}, D("0")),
        (
            {"$convert": {"input": datetime.datetime(1970, 1, 1, 0, 0, 0, 123000), "to": "double"}},
            123.0,
        ),
        (
            {"$convert": {"input": datetime.datetime(1970, 1, 1, 0, 0, 0, 123000), "to": "string"}},
            "1970-01-01T00:00:00.123Z",
        ),
        (
            {"$convert": {"input": datetime.datetime(1970, 1, 1, 0, 0, 0, 123000), "to": "long"}},
            Int64(123),
        ),
        ({"$convert": {"input": 1, "to": "decimal"}}, D("1")),
        (
            {"$convert": {"input": Int64(1), "to": "date"}},
            datetime.datetime(1970, 1, 1, 0, 0, 0, 1000),
        ),
        ({"$convert": {"input": D("1.9"), "to": "int"}}, 1),
        ({"$convert": {"input": D("1.9"), "to": "string"}}, "1.9"),
        ({"$convert": {"input": MinKey(), "to": "bool"}}, True),
        ({"$convert": {"input": {"$literal": {"foo": 1}}, "to": "bool"}}, True),
        ({"$convert": {"input": Timestamp(1, 1), "to": "bool"}}, True),
        ({"$convert": {"input": 1, "to": 2}}, "1"),  # a type number
        ({"$convert": {"input": 1.9, "to": "objectId", "onError": "ERROR"}}, "ERROR"),
        ({"$convert": {"input": 1.9, "to": "objectId", "onError": "$$REMOVE"}}, MISSING),
        ({"$convert": {"input": "$missing", "to": "int", "onNull": "NULL"}}, "NULL"),
        ({"$convert": {"input": None, "to": None, "onNull": "NULL"}}, "NULL"),
        ({"$convert": {"input": 1, "to": None}}, None),
        ({"$toString": 1e20}, "1e+20"),
        ({"$toString": 0.1}, "0.1"),
        ({"$toString": -0.0}, "-0"),
        ({"$toString": math.inf}, "Infinity"),
        ({"$toInt": "  1"}, "ERR"),
        ({"$toDouble": "Infinity"}, math.inf),
        ({"$toLong": 2**40 + 0.5}, Int64(2**40)),
        ({"$toBool": 0}, False),
        ({"$toBool": D("0")}, False),
        ({"$toBool": "false"}, True),
        ({"$toDate": Timestamp(100, 1)}, datetime.datetime(1970, 1, 1, 0, 1, 40)),
        ({"$type": "$missing"}, "missing"),
        ({"$type": 1}, "int"),
        ({"$type": Int64(1)}, "long"),
        ({"$type": [[1]]}, "array"),
        ({"$type": Binary(b"x", 4)}, "binData"),
        ({"$isNumber": D("1")}, True),
        ({"$isNumber": "1"}, False),
    ],
)
def test_conversions(expression: Any, expected: Any) -> None:
    if expected == "ERR":
        assert error(expression).code == 241
        return
    check(expression, {}, expected)


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ({"$convert": {"input": 1}}, 9, "Missing 'to' parameter to $convert"),
        (
            {"$convert": {"input": 1, "to": "int", "format": "x"}},
            9,
            "$convert found an unknown argument: format",
        ),
        ({"$convert": {"input": 1, "to": "foo"}}, 2, "Unknown type name: foo"),
        (
            {"$convert": {"input": 1, "to": 100}},
            9,
            "In $convert, numeric value for 'to' does not correspond to a BSON type: 100",
        ),
        (
            {"$convert": {"input": 1, "to": "objectId"}},
            241,
            "Unsupported conversion from int to objectId in $convert with no onError value",
        ),
        (
            {"$convert": {"input": 1, "to": "date"}},
            241,
            "Unsupported conversion from int to date in $convert with no onError value",
        ),
        (
            {"$convert": {"input": 1.9, "to": "missing"}},
            241,
            "Unsupported conversion from double to missing in $convert with no onError value",
        ),
        (
            {"$toInt": math.nan},
            241,
            "Attempt to convert NaN value to integer type in $convert with no onError value",
        ),
        (
            {"$toInt": 3e9},
            241,
            "Conversion would overflow target type in $convert with no onError value: 3e+09",
        ),
        (
            {"$toInt": Int64(2**40)},
            241,
            "Conversion would overflow target type in $convert with no onError value: ",
        ),
        ({"$toInt": "abc"}, 241, None),
        (
            {"$toInt": "0x1A"},
            241,
            "Illegal hexadecimal input in $convert with no onError value: 0x1A",
        ),
        ({"$toObjectId": "abc"}, 241, None),
        ({"$toInt": [1, 2]}, 50723, "$toInt requires a single argument, got 2"),
        ({"$convert": {"input": {"$divide": ["$a", 0]}, "to": "string", "onError": "E"}}, 2, None),
    ],
)
def test_conversion_errors(expression: Any, code: int, message: Any) -> None:
    check_error(expression, {"a": 1}, code, message)


# -- bitwise, trigonometry ----


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$bitAnd": [12, 10]}, 8),
        ({"$bitOr": [12, 10]}, 14),
        ({"$bitXor": [12, 10]}, 6),
        ({"$bitAnd": [12, Int64(10)]}, Int64(8)),
        ({"$bitAnd": []}, -1),
        ({"$bitOr": [1, None]}, None),
        ({"$bitNot": 5}, -6),
        ({"$bitNot": Int64(5)}, Int64(-6)),
        ({"$sin": 0}, 0.0),
        ({"$cos": 0}, 1.0),
        ({"$atan2": [1, 1]}, math.pi / 4),
        ({"$sin": D("1")}, D("0.8414709848078965066525023216302990")),
        ({"$acos": D("-1")}, D("3.141592653589793238462643383279503")),
        ({"$degreesToRadians": 180}, math.pi),
        (
            {"$radiansToDegrees": D("3.141592653589793238462643383279503")},
            D("180.0000000000000000000000000000000"),
        ),
        ({"$sin": math.nan}, math.nan),
        ({"$tanh": None}, None),
    ],
)
def test_bitwise_and_trigonometry(expression: Any, expected: Any) -> None:
    check(expression, {}, expected)


def test_bitwise_and_trigonometry_errors() -> None:
    check_error({"$bitAnd": [1, 1.5]}, {}, 14, "$bitAnd only supports int and long operands.")
    check_error({"$bitNot": 1.5}, {}, 14, "$bitNot only supports int and long, not: double.")
    check_error({"$acos": -2}, {}, 50989, "cannot apply $acos to -2, value must be in [-1,1]")
    check_error(
        {"$sin": math.inf}, {}, 50989, "cannot apply $sin to inf, value must be in (-inf,inf)"
    )
    check_error({"$acosh": 0}, {}, 50989, "cannot apply $acosh to 0, value must be in [1,inf)")
    check_error({"$cos": "a"}, {}, 28765, "$cos only supports numeric types, not string")


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=-10, max_value=10))
def test_decimal_trigonometry_agrees_with_doubles(x: float) -> None:
    for name in ("$sin", "$cos", "$atan", "$sinh", "$tanh"):
        as_double = evaluate({name: x})
        as_decimal = float(evaluate({name: D(repr(x))}).to_decimal())
        assert math.isclose(as_double, as_decimal, rel_tol=1e-12, abs_tol=1e-12), name


# -- the rest ----


def test_misc() -> None:
    check({"$bsonSize": {"$literal": {"a": 1}}}, {}, 12)
    check({"$bsonSize": None}, {}, None)
    check({"$binarySize": "héllo"}, {}, 6)
    check({"$binarySize": Binary(b"abc")}, {}, 3)
    check({"$tsSecond": Timestamp(5, 7)}, {}, Int64(5))
    check({"$tsIncrement": Timestamp(5, 7)}, {}, Int64(7))
    check_error(
        {"$tsSecond": 1}, {}, 5687301, " Argument to $tsSecond must be a timestamp, but is int"
    )
    check_error({"$bsonSize": 1}, {}, 31393, "$bsonSize requires a document input, found: int")
    check_error({"$rand": {"a": 1}}, {}, 3040501, "$rand does not currently accept arguments")
    check_error({"$meta": "foo"}, {}, 17308, "Unsupported argument to $meta: foo")
    check_error({"$meta": 1}, {}, 17307, "$meta only supports string arguments")
    assert evaluate({"$rand": {}}, rng=lambda: 0.25) == 0.25
    assert not compile_expression({"$rand": {}}).is_constant
    compiled = compile_expression({"$meta": "textScore"})
    assert compiled.evaluate({}, {"textScore": 1.5}) == 1.5
    assert compiled.evaluate({}) is MISSING


def test_hashed_index_key_is_the_servers_hash() -> None:
    # The MongoDB manual's example ($toHashedIndexKey), and the well-known hash of null.
    assert hash_key("string to hash") == Int64(763543691661428748)
    assert evaluate({"$toHashedIndexKey": "$val"}, {"val": "string to hash"}) == Int64(
        763543691661428748
    )
    assert hash_key(None) == Int64(2338878944348059895)
    assert evaluate({"$toHashedIndexKey": "$missing"}) == hash_key(None)
    assert hash_key(1) == hash_key(1.0) == hash_key(Int64(1)) == hash_key(D("1"))


_ = re
