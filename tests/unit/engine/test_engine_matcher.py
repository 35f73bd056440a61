"""The query matcher against the manual's semantics and a 7.0 server's parse errors."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, Regex
from hypothesis import given, settings
from hypothesis import strategies as st

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import parse_collation
from mongocore.sim.engine.context import FieldOperator, MatchContext
from mongocore.sim.engine.matcher import DEFAULT_OPERATORS, compile_filter
from mongocore.sim.engine.values import equal


def matches(flt: dict[str, Any], doc: dict[str, Any], **context: Any) -> bool:
    return compile_filter(flt, MatchContext(**context)).matches(doc)


@pytest.mark.parametrize(
    ("flt", "doc", "expected"),
    [
        ({"a": 1}, {"a": [1, 2]}, True),
        ({"a": [1, 2]}, {"a": [1, 2]}, True),
        ({"a": 2}, {"a": [[2]]}, False),  # nested arrays are not opened
        ({"a": [2]}, {"a": [[2]]}, True),
        ({"a.b": 1}, {"a": [{"b": 1}, {"b": 2}]}, True),
        ({"a.1": 5}, {"a": [4, 5]}, True),
        ({"a.b": None}, {"a": [1, 2]}, False),  # scalars in an array yield nothing
        ({"a.b": None}, {"a": [{}]}, True),
        ({"a.b": None}, {"a": 4}, True),
        ({"a": None}, {}, True),
        ({"a": None}, {"a": []}, False),
        ({"a": {"$exists": False}}, {"a": None}, False),
        ({"a": Decimal128("1.5")}, {"a": 1.5}, True),
        ({"a": 1}, {"a": Int64(1)}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": math.nan}, {"a": Decimal128("NaN")}, True),
        ({"a": {"$gt": math.nan}}, {"a": math.nan}, False),
        ({"a": {"$gte": math.nan}}, {"a": math.nan}, True),
        ({"a": {"$lt": 5}}, {"a": math.nan}, False),
        ({"a": {"$gt": 5}}, {"a": "6"}, False),  # type bracketing
        ({"a": {"$gt": MinKey()}}, {"a": "x"}, True),
        ({"a": {"$lt": MaxKey()}}, {"a": {"b": 1}}, True),
        ({"a": {"$gte": None}}, {}, True),
        ({"a": {"$ne": 1}}, {"a": [1, 2]}, False),
        ({"a": {"$nin": [3]}}, {}, True),
        ({"a": {"$in": [None]}}, {}, True),
        ({"a": {"$in": [re.compile("^x")]}}, {"a": "xy"}, True),
        ({"a": {"$all": [1, 2]}}, {"a": [2, 3, 1]}, True),
        ({"a": {"$all": []}}, {"a": []}, False),
        ({"a": {"$size": 2}}, {"a": [1, [2, 3]]}, True),
        ({"a": {"$type": 16}}, {"a": 5}, True),
        ({"a": {"$type": "long"}}, {"a": Int64(5)}, True),
        ({"a": {"$type": "number"}}, {"a": Decimal128("1")}, True),
        ({"a": {"$type": "array"}}, {"a": []}, True),
        ({"a": {"$type": 2}}, {"a": ["x"]}, True),
        ({"a": {"$mod": [4, 1]}}, {"a": 5.9}, True),  # truncated toward zero
        ({"a": {"$mod": [4, -1]}}, {"a": -5}, True),
        ({"a": {"$regex": "^A", "$options": "i"}}, {"a": "abc"}, True),
        ({"a": Regex("b", "i")}, {"a": ["x", "B"]}, True),
        ({"a": {"$not": {"$gt": 2}}}, {"a": 1}, True),
        ({"a": {"$not": {"$gt": 2}}}, {}, True),
        ({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}}, {"a": [0, 2]}, True),
        ({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}}, {"a": [0, 4]}, False),
        ({"a": {"$elemMatch": {"b": 1, "c": 2}}}, {"a": [{"b": 1}, {"c": 2}]}, False),
        ({"a": {"$bitsAllSet": [0, 2]}}, {"a": 5}, True),
        ({"a": {"$bitsAnySet": 2}}, {"a": 5}, False),
        ({"a": {"$bitsAllClear": 2}}, {"a": Binary(b"\x05")}, True),
        ({"a": {"$bitsAllSet": [63]}}, {"a": -1}, True),
        ({"$or": [{"a": 1}, {"b": 1}]}, {"b": 1}, True),
        ({"$nor": [{"a": 1}, {"b": 1}]}, {"b": 1}, False),
        ({"$and": [{"a": {"$gt": 1}}, {"a": {"$lt": 3}}]}, {"a": [0, 4]}, True),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 1}}, False),  # an embedded document is compared whole
        ({"$comment": "x", "a": 1}, {"a": 1}, True),
    ],
)
def test_semantics(flt: dict[str, Any], doc: dict[str, Any], expected: bool) -> None:
    assert matches(flt, doc) is expected


def test_collation_compares_strings() -> None:
    collation = parse_collation({"locale": "en", "strength": 2})
    assert matches({"a": "CAFE"}, {"a": "cafe"}, collation=collation)
    assert not matches({"a": "CAFE"}, {"a": "cafe"})
    assert matches({"a": {"$in": ["X"]}}, {"a": "x"}, collation=collation)


def test_positional_index() -> None:
    matcher = compile_filter({"a.b": {"$gt": 1}})
    assert matcher.match_position({"a": [{"b": 0}, {"b": 2}]}) == (True, 1)
    assert compile_filter({"a": 3}).match_position({"a": [1, 3]}) == (True, 1)


@pytest.mark.parametrize(
    ("flt", "code", "message"),
    [
        ({"$foo": 1}, 2, "unknown top level operator: $foo"),
        ({"a": {"$foo": 1}}, 2, "unknown operator: $foo"),
        ({"$and": {}}, 2, "$and must be an array"),
        ({"$or": []}, 2, "$and/$or/$nor must be a nonempty array"),
        ({"$nor": [1]}, 2, "$or/$and/$nor entries need to be full objects"),
        ({"a": {"$in": 1}}, 2, "$in needs an array"),
        ({"a": {"$in": [{"$gt": 1}]}}, 2, "cannot nest $ under $in"),
        ({"a": {"$all": 1}}, 2, "$all needs an array"),
        ({"a": {"$size": "x"}}, 2, "$size needs a number"),
        ({"a": {"$type": "foo"}}, 2, "Unknown type name alias: foo"),
        ({"a": {"$type": 100}}, 2, "Invalid numerical type code: 100"),
        ({"a": {"$type": {}}}, 14, "type must be represented as a number or a string"),
        ({"a": {"$mod": 1}}, 2, "malformed mod, needs to be an array"),
        ({"a": {"$mod": [1]}}, 2, "malformed mod, not enough elements"),
        ({"a": {"$mod": [0, 1]}}, 2, "divisor cannot be 0"),
        ({"a": {"$regex": 1}}, 2, "$regex has to be a string"),
        ({"a": {"$options": "i"}}, 2, "$options needs a $regex"),
        ({"a": {"$regex": "(", "$options": ""}}, 51091, "Regular expression is invalid"),
        ({"a": {"$not": 1}}, 2, "$not needs a regex or a document"),
        ({"a": {"$not": {}}}, 2, "$not cannot be empty"),
        ({"a": {"$elemMatch": 1}}, 2, "$elemMatch needs an Object"),
        ({"$alwaysTrue": 0}, 9, "$alwaysTrue must be an integer value of 1"),
        ({"$text": {"$search": "x"}}, 238, "$text"),
        ({"a": {"$geoWithin": {}}}, 238, "$geoWithin"),
        ({"$expr": {"$eq": [1, 1]}}, 238, "$expr"),
        ({"$where": "true"}, 238, "$where"),
    ],
)
def test_parse_errors(flt: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(CommandError) as caught:
        compile_filter(flt)
    assert caught.value.code == code
    assert message in caught.value.errmsg


def test_plug_in_operators_and_languages() -> None:
    # A later module's operator comes in through an extended table.
    near_zero = FieldOperator(lambda arg, spec, ctx: lambda v: isinstance(v, list) and v == arg)
    table = DEFAULT_OPERATORS.extended(field={"$within": near_zero})
    flt = {"loc": {"$within": [0, 0]}}
    assert compile_filter(flt, MatchContext(operators=table)).matches({"loc": [0, 0]})

    class Expressions:
        def compile(self, expression: Any, variables: Any, collation: Any) -> Any:
            field = expression["$gt"][0][1:]
            return lambda doc: doc.get(field, 0) > expression["$gt"][1]

    context = MatchContext(expressions=Expressions())
    assert compile_filter({"$expr": {"$gt": ["$a", 1]}}, context).matches({"a": 2})
    assert not compile_filter({"$expr": {"$gt": ["$a", 1]}}, context).matches({"a": 0})


def test_json_schema() -> None:
    flt = {"$jsonSchema": {"required": ["a"], "properties": {"a": {"bsonType": "int"}}}}
    assert matches(flt, {"a": 1})
    assert not matches(flt, {"a": "x"})
    assert not matches(flt, {})


def test_json_schema_bson_type_names_code_as_javascript() -> None:
    def kind(name: str) -> dict[str, Any]:
        return {"$jsonSchema": {"properties": {"a": {"bsonType": name}}}}

    code, with_scope = {"a": Code("f()")}, {"a": Code("f()", {"x": 1})}
    assert not matches(kind("string"), code)
    assert matches(kind("javascript"), code)
    assert not matches(kind("javascript"), with_scope)
    assert matches(kind("javascriptWithScope"), with_scope)
    assert matches(kind("string"), {"a": "f()"})


ints = st.integers(-3, 3)
values = st.one_of(
    ints, st.lists(ints, max_size=3), st.none(), st.sampled_from(["x", 1.0, Int64(2)])
)


@settings(max_examples=300)
@given(values, values)
def test_equality_matches_iff_the_value_or_an_element_is_equal(stored: Any, wanted: Any) -> None:
    expected = equal(stored, wanted) or (
        isinstance(stored, list) and any(equal(element, wanted) for element in stored)
    )
    if wanted is None and isinstance(stored, list):
        expected = any(element is None for element in stored)
    assert matches({"a": wanted}, {"a": stored}) is expected
    assert matches({"a": {"$ne": wanted}}, {"a": stored}) is not expected


def test_a_path_goes_through_a_dbref() -> None:
    """MongoEngine's GenericReferenceField queries ref._ref.$id: a DBRef is the
    embedded document {$ref, $id} a server stores, and a path reads its fields."""
    from bson import ObjectId  # noqa: PLC0415
    from bson.dbref import DBRef  # noqa: PLC0415

    oid = ObjectId()
    doc = {"ref": {"_cls": "A", "_ref": DBRef("a", oid)}}
    assert matches({"ref._ref.$id": oid}, doc)
    assert matches({"ref._ref.$ref": "a"}, doc)
    assert not matches({"ref._ref.$id": ObjectId()}, doc)
    assert matches({"refs.$id": oid}, {"refs": [DBRef("b", 1), DBRef("a", oid)]})
    assert matches({"ref.$db": "other"}, {"ref": DBRef("a", 1, "other")})
