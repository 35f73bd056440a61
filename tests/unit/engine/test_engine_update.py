"""Update operators: results, field order and a 7.0 server's errors."""

from __future__ import annotations

import datetime
from typing import Any, Optional

import pytest
from bson import Decimal128, Int64, Timestamp

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.update import compile_update, upsert_seed
from mongocore.sim.engine.values import identical


def apply(
    spec: dict[str, Any], doc: dict[str, Any], filters: Optional[list[Any]] = None, **kw: Any
) -> dict[str, Any]:
    return compile_update(spec, filters).apply(doc, **kw)


def test_new_fields_are_added_in_lexicographic_order() -> None:
    assert list(apply({"$set": {"z": 1, "b": 1, "a.10": 1, "a.9": 1}}, {"_id": 1})) == [
        "_id",
        "a",
        "b",
        "z",
    ]
    assert list(apply({"$set": {"a.10": 1, "a.9": 2}}, {"_id": 1})["a"]) == ["9", "10"]


def test_the_given_document_is_left_as_it_was() -> None:
    doc = {"_id": 1, "a": {"b": [1]}}
    apply({"$push": {"a.b": 2}, "$set": {"c": 1}}, doc)
    assert doc == {"_id": 1, "a": {"b": [1]}}


@pytest.mark.parametrize(
    ("spec", "doc", "expected"),
    [
        ({"$inc": {"a": 1}}, {"a": 2**31 - 1}, Int64(2**31)),
        ({"$inc": {"a": 1}}, {"a": Int64(1)}, Int64(2)),
        ({"$inc": {"a": 0.5}}, {"a": 1}, 1.5),
        ({"$inc": {"a": Decimal128("0.1")}}, {"a": 1}, Decimal128("1.1")),
        ({"$mul": {"a": 2}}, {}, 0),
        ({"$min": {"a": 1}}, {"a": "x"}, 1),  # numbers sort before strings
        ({"$max": {"a": 1}}, {"a": "x"}, "x"),
        ({"$bit": {"a": {"and": 6}}}, {"a": 5}, 4),
        ({"$bit": {"a": {"xor": Int64(1)}}}, {"a": 5}, Int64(4)),
        ({"$addToSet": {"a": {"$each": [1, 3, 3]}}}, {"a": [1, 2]}, [1, 2, 3]),
        (
            {"$push": {"a": {"$each": [5, 0], "$position": 1, "$sort": 1, "$slice": 3}}},
            {"a": [2, 9]},
            [0, 2, 5],
        ),
        (
            {"$push": {"a": {"$each": [{"s": 1}], "$sort": {"s": -1}}}},
            {"a": [{"s": 2}, {"s": 0}]},
            [{"s": 2}, {"s": 1}, {"s": 0}],
        ),
        ({"$pull": {"a": {"$gte": 2}}}, {"a": [1, 2, 3]}, [1]),
        ({"$pull": {"a": {"b": 1}}}, {"a": [{"b": 1, "c": 1}, {"b": 2}]}, [{"b": 2}]),
        ({"$pullAll": {"a": [1, 2.0]}}, {"a": [1, 2, 3]}, [3]),
        ({"$pop": {"a": -1}}, {"a": [1, 2]}, [2]),
        ({"$unset": {"a.1": ""}}, {"a": [1, 2]}, [1, None]),
        ({"$set": {"a.3": 1}}, {"a": [0]}, [0, None, None, 1]),
    ],
)
def test_operators(spec: dict[str, Any], doc: dict[str, Any], expected: Any) -> None:
    result = apply(spec, {"_id": 1, **doc})
    assert identical(result.get("a"), expected), result


def test_positional_operators() -> None:
    doc = {"_id": 1, "a": [{"b": 1}, {"b": 5}, {"b": 7}]}
    assert apply({"$set": {"a.$.b": 0}}, doc, position=1)["a"][1] == {"b": 0}
    assert apply({"$inc": {"a.$[].b": 1}}, doc)["a"] == [{"b": 2}, {"b": 6}, {"b": 8}]
    result = apply({"$set": {"a.$[big].b": 0}}, doc, [{"big.b": {"$gt": 4}}])
    assert result["a"] == [{"b": 1}, {"b": 0}, {"b": 0}]


def test_rename_moves_a_field_to_the_end() -> None:
    assert list(apply({"$rename": {"a": "z"}}, {"_id": 1, "a": 1, "b": 2})) == ["_id", "b", "z"]


def test_set_on_insert_and_current_date() -> None:
    now = datetime.datetime(2024, 5, 1, 12, 0, 0, 123456)
    update = compile_update(
        {"$setOnInsert": {"a": 1}, "$currentDate": {"d": True, "t": {"$type": "timestamp"}}}
    )
    updated = update.apply({"_id": 1}, now=now, timestamp=Timestamp(5, 1))
    assert "a" not in updated
    assert updated["d"] == datetime.datetime(2024, 5, 1, 12, 0, 0, 123000)
    assert updated["t"] == Timestamp(5, 1)
    assert update.apply({"_id": 1}, inserting=True, now=now)["a"] == 1


def test_upsert_seed() -> None:
    assert upsert_seed({"a.b": 1, "_id": 3, "c": {"$gt": 1}, "$and": [{"d": {"$eq": 2}}]}) == {
        "_id": 3,
        "a": {"b": 1},
        "d": 2,
    }
    with pytest.raises(CommandError) as caught:
        upsert_seed({"a": 1, "$and": [{"a.b": 2}]})
    assert caught.value.code == 54


@pytest.mark.parametrize(
    ("spec", "doc", "filters", "code", "message"),
    [
        (
            {"$inc": {"a": "x"}},
            {},
            None,
            14,
            'Cannot increment with non-numeric argument: {a: "x"}',
        ),
        (
            {"$inc": {"a": 1}},
            {"a": "x"},
            None,
            14,
            "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a'"
            " of non-numeric type string",
        ),
        (
            {"$set": {"_id": 2}},
            {},
            None,
            66,
            "Performing an update on the path '_id' would modify the immutable field '_id'",
        ),
        (
            {"$set": {"a": 1}, "$unset": {"a.b": 1}},
            {},
            None,
            40,
            "Updating the path 'a.b' would create a conflict at 'a'",
        ),
        ({"$foo": {"a": 1}}, {}, None, 9, "Unknown modifier: $foo"),
        ({"$set": 1}, {}, None, 9, "Modifiers operate on fields but we found type int instead"),
        ({"$set": {"a..b": 1}}, {}, None, 56, "contains an empty field name"),
        ({"$set": {"a.b": 1}}, {"a": 1}, None, 28, "Cannot create field 'b' in element {a: 1}"),
        (
            {"$push": {"a": 1}},
            {"a": 1},
            None,
            2,
            "The field 'a' must be an array but is of type int in document {_id: 1}",
        ),
        ({"$pop": {"a": 2}}, {}, None, 9, "$pop expects 1 or -1, found: 2"),
        ({"$set": {"a.$[x]": 1}}, {"a": [1]}, None, 2, "No array filter found for identifier 'x'"),
        ({"$set": {"a": 1}}, {}, [{"x": 1}], 9, "The array filter for identifier 'x' was not used"),
        ({"$set": {"a.$[X]": 1}}, {"a": [1]}, [{"X": 1}], 2, "beginning with a lowercase letter"),
        (
            {"$set": {"a.$": 1}},
            {"a": [1]},
            None,
            2,
            "The positional operator did not find the match needed from the query.",
        ),
        (
            {"$rename": {"a": "a"}},
            {},
            None,
            2,
            "The source and target field for $rename must differ",
        ),
        (
            {"$bit": {"a": {"nand": 1}}},
            {},
            None,
            2,
            "The $bit modifier only supports 'and', 'or', and 'xor'",
        ),
    ],
)
def test_errors(
    spec: dict[str, Any], doc: dict[str, Any], filters: Any, code: int, message: str
) -> None:
    with pytest.raises(CommandError) as caught:
        apply(spec, {"_id": 1, **doc}, filters)
    assert caught.value.code == code
    assert message in caught.value.errmsg
