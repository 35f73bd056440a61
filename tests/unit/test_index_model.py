"""IndexModel: the createIndexes index specification, with pymongo's generated names."""

from __future__ import annotations

from typing import Any

import pymongo
import pytest
from pymongo.collation import Collation

import mongocore
from mongocore.api.index_model import IndexModel, index_key_document, index_name

SPECS: list[tuple[Any, dict[str, Any]]] = [
    ("sku", {}),
    ([("sku", pymongo.ASCENDING), ("at", pymongo.DESCENDING)], {}),
    ([("sku", 1), ("at", -1)], {"unique": True, "sparse": True}),
    ({"loc": pymongo.GEOSPHERE}, {"name": "geo"}),
    ({"a": 1, "b": pymongo.TEXT}, {"default_language": "english"}),
    (["a", "b"], {}),
    ((("a", pymongo.HASHED),), {}),
    ([("pos", pymongo.GEO2D)], {"min": -100, "max": 100}),
    ("created", {"expireAfterSeconds": 3600}),
    ([("status", 1)], {"partialFilterExpression": {"status": {"$exists": True}}}),
    ("$**", {"wildcardProjection": {"a": 1}}),
    ("hidden_field", {"hidden": True, "name": None}),
]


@pytest.mark.parametrize(("keys", "options"), SPECS)
def test_document_matches_pymongo(keys: Any, options: dict[str, Any]) -> None:
    ours = IndexModel(keys, **options).document
    theirs = pymongo.IndexModel(keys, **options).document
    assert ours == theirs
    assert list(ours["key"].items()) == list(theirs["key"].items())  # order matters


def test_generated_names() -> None:
    assert IndexModel("a").document["name"] == "a_1"
    assert IndexModel([("a", 1), ("b", -1)]).name == "a_1_b_-1"
    assert IndexModel({"loc": "2dsphere", "t": "text"}).name == "loc_2dsphere_t_text"
    assert IndexModel("a", name="by_a").name == "by_a"
    assert index_name({"x": 1, "y": "hashed"}) == "x_1_y_hashed"


def test_key_document_forms() -> None:
    assert index_key_document("a") == {"a": 1}
    assert index_key_document(["a", ("b", -1)]) == {"a": 1, "b": -1}
    assert index_key_document({"a": -1}) == {"a": -1}
    assert index_key_document([["a", 1]]) == {"a": 1}
    assert index_key_document([("p", {"custom": 1})]) == {"p": {"custom": 1}}


def test_document_is_a_copy() -> None:
    model = IndexModel([("a", 1)], unique=True)
    document = model.document
    document["key"]["b"] = 1
    document["unique"] = False
    assert model.document == {"key": {"a": 1}, "name": "a_1", "unique": True}


def test_collation_objects_become_documents() -> None:
    model = IndexModel("name", collation=Collation(locale="fr", strength=2))
    assert model.document["collation"] == {"locale": "fr", "strength": 2}
    assert IndexModel("n", collation={"locale": "en"}).document["collation"] == {"locale": "en"}
    with pytest.raises(TypeError, match="collation"):
        IndexModel("n", collation="fr")


def test_repr_names_keys_and_options() -> None:
    assert (
        repr(IndexModel([("a", 1)], unique=True)) == "IndexModel({'a': 1}, name='a_1', unique=True)"
    )


@pytest.mark.parametrize("keys", [[], {}, ()])
def test_no_keys_is_a_value_error(keys: Any) -> None:
    with pytest.raises(ValueError, match="at least one field"):
        IndexModel(keys)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (5, "index keys must be"),
        (None, "index keys must be"),
        ([("a",)], "pair"),
        ([("a", 1, 2)], "pair"),
        ([(1, 1)], "field name must be a string"),
        ({"a": None}, "direction of index field 'a'"),
        ({"a": 1.5}, "direction of index field 'a'"),
        ({"a": True}, "direction of index field 'a'"),
        ([("a", [1])], "direction of index field 'a'"),
    ],
)
def test_bad_keys_are_type_errors(keys: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        IndexModel(keys)


def test_name_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="name"):
        IndexModel("a", name=5)


def test_directions_are_pymongos() -> None:
    for constant in ("ASCENDING", "DESCENDING", "GEO2D", "GEOSPHERE", "HASHED", "TEXT"):
        assert getattr(mongocore, constant) == getattr(pymongo, constant)
    assert mongocore.IndexModel is IndexModel
