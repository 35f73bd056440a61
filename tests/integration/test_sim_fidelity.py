"""The simulator answers as a MongoDB 7.0 server does, or refuses: pymongo, an independent
client, checks collations, validators, let variables, projections, error codes and
command defaults against it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")
pytest.importorskip("pyuca")

from bson import Code, Decimal128, Timestamp
from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError

from mongocore.sim import ReplicaSet, Standalone

FAST = {"serverSelectionTimeoutMS": 20_000}
CASE_INSENSITIVE = {"locale": "en", "strength": 2}


@pytest.fixture
def client() -> Iterator[MongoClient[dict[str, Any]]]:
    with Standalone() as server:
        mongo: MongoClient[dict[str, Any]] = MongoClient(server.uri, **FAST)
        try:
            yield mongo
        finally:
            mongo.close()


@pytest.fixture
def db(client: MongoClient[dict[str, Any]], request: pytest.FixtureRequest) -> Database[Any]:
    name = "fidelity_" + request.node.name.replace("[", "_").replace("]", "")[:40]
    client.drop_database(name)
    return client[name]


@pytest.fixture
def words(db: Database[Any]) -> Collection[Any]:
    """100 documents whose names differ from "ping" by case or accents only."""
    names = ["Ping", "PING", "pIng", "píng", "Píng"]
    db.words.insert_many([{"_id": i, "name": names[i % 5], "n": i} for i in range(100)])
    return db.words


# -- collation ---------------------------------------------------------------------------


def test_strength_2_ignores_case_not_accents(words: Collection[Any]) -> None:
    assert words.count_documents({"name": "ping"}) == 0
    assert words.count_documents({"name": "ping"}, collation=CASE_INSENSITIVE) == 60
    assert len(list(words.find({"name": "PÍNG"}, collation=CASE_INSENSITIVE))) == 40


def test_strength_1_ignores_case_and_accents(words: Collection[Any]) -> None:
    primary = {"locale": "en_US", "strength": 1}
    assert words.count_documents({"name": "ping"}, collation=primary) == 100
    assert words.distinct("name", collation=primary) == ["Ping"]
    assert sorted(words.distinct("name", collation=CASE_INSENSITIVE)) == ["Ping", "píng"]


def test_collation_applies_to_writes_and_aggregation(words: Collection[Any]) -> None:
    matched = words.update_many(
        {"name": "ping"}, {"$set": {"hit": True}}, collation=CASE_INSENSITIVE
    )
    assert (matched.matched_count, matched.modified_count) == (60, 60)
    pipeline = [{"$match": {"name": "PING"}}, {"$count": "n"}]
    assert list(words.aggregate(pipeline, collation=CASE_INSENSITIVE)) == [{"n": 60}]
    assert words.delete_one({"name": "PÍNG"}, collation=CASE_INSENSITIVE).deleted_count == 1
    deleted = words.delete_many({"name": "ping"}, collation={"locale": "en", "strength": 1})
    assert deleted.deleted_count == 99


def test_collated_sort_orders_as_icu(db: Database[Any]) -> None:
    db.s.insert_many([{"_id": i, "w": w} for i, w in enumerate(["b", "B", "a", "é", "f", "E"])])
    ordered = [d["w"] for d in db.s.find({}, sort=[("w", 1)], collation={"locale": "en"})]
    assert ordered == ["a", "b", "B", "E", "é", "f"]
    binary = [d["w"] for d in db.s.find({}, sort=[("w", 1)])]
    assert binary == ["B", "E", "a", "b", "f", "é"]


def test_collection_default_collation_and_collated_unique_index(db: Database[Any]) -> None:
    db.create_collection("ci", collation=CASE_INSENSITIVE)
    db.ci.create_index("k", unique=True)
    db.ci.insert_one({"k": "Abc"})
    with pytest.raises(DuplicateKeyError) as caught:
        db.ci.insert_one({"k": "aBC"})
    assert caught.value.details is not None
    assert caught.value.details["keyValue"] == {"k": "aBC"}
    assert db.ci.count_documents({"k": "ABC"}) == 1
    assert db.ci.count_documents({"k": "ABC"}, collation={"locale": "simple"}) == 0
    index = next(i for i in db.ci.list_indexes() if i["name"] == "k_1")
    assert index["collation"]["strength"] == 2
    options = next(db.list_collections(filter={"name": "ci"}))["options"]
    assert options["collation"]["locale"] == "en"


@pytest.mark.parametrize(
    "collation",
    [
        {"locale": "en", "numericOrdering": True},
        {"locale": "en", "caseFirst": "upper"},
        {"locale": "en", "alternate": "shifted"},
        {"locale": "sv"},
    ],
)
def test_collations_it_cannot_honour_are_refused(
    words: Collection[Any], collation: dict[str, Any]
) -> None:
    with pytest.raises(OperationFailure) as caught:
        words.find_one({"name": "ping"}, collation=collation)
    assert caught.value.code == 238
    assert caught.value.details is not None
    assert caught.value.details["codeName"] == "NotImplemented"


def test_invalid_collation_is_a_server_error(words: Collection[Any]) -> None:
    with pytest.raises(OperationFailure) as caught:
        words.find_one({}, collation={"locale": "en", "strength": 7})
    assert caught.value.code == 9
    assert "1 through 5" in str(caught.value)


# -- validation --------------------------------------------------------------------------

SCHEMA = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["name", "age"],
        "properties": {
            "name": {"bsonType": "string", "minLength": 2},
            "age": {"bsonType": "int", "minimum": 0, "maximum": 150},
            "tags": {"bsonType": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
        },
        "additionalProperties": True,
    }
}


def test_json_schema_validator_refuses_invalid_documents(db: Database[Any]) -> None:
    db.create_collection("people", validator=SCHEMA)
    db.people.insert_one({"name": "Ann", "age": 30, "tags": ["a"]})
    bad: list[dict[str, Any]] = [
        {"name": "Bob"},
        {"name": "B", "age": 3},
        {"name": "Bob", "age": -1},
        {"name": "Bob", "age": 3.5},
        {"name": "Bob", "age": 3, "tags": ["a", "a"]},
        {"name": "Bob", "age": 3, "tags": ["c"]},
    ]
    for doc in bad:
        with pytest.raises(WriteError) as caught:
            db.people.insert_one(doc)
        assert caught.value.code == 121, doc
        info = caught.value.details["errInfo"]
        assert info["failingDocumentId"] == doc["_id"]
        assert info["details"]["operatorName"] == "$jsonSchema"
        assert info["details"]["schemaRulesNotSatisfied"], doc
    assert db.people.count_documents({}) == 1


def test_update_validation_error_info(db: Database[Any]) -> None:
    db.create_collection("t", validator=SCHEMA)
    db.t.insert_one({"_id": 7, "name": "Ann", "age": 30})
    with pytest.raises(WriteError) as caught:
        db.t.update_one({"_id": 7}, {"$set": {"age": "old"}})
    details = caught.value.details["errInfo"]["details"]
    rule = details["schemaRulesNotSatisfied"][0]
    assert rule["operatorName"] == "properties"
    failing = rule["propertiesNotSatisfied"][0]
    assert failing["propertyName"] == "age"
    assert failing["details"][0]["operatorName"] == "bsonType"
    assert failing["details"][0]["consideredValue"] == "old"
    assert db.t.find_one({"_id": 7}) == {"_id": 7, "name": "Ann", "age": 30}


def test_query_validator_through_coll_mod_and_validation_action(db: Database[Any]) -> None:
    db.q.insert_one({"_id": 1, "x": "foo"})
    db.command("collMod", "q", validator={"x": {"$type": "string"}})
    with pytest.raises(OperationFailure) as caught:
        db.q.find_one_and_update({"_id": 1}, {"$set": {"x": 1}})
    assert caught.value.code == 121
    assert caught.value.details is not None
    assert caught.value.details["errInfo"]["failingDocumentId"] == 1
    assert caught.value.details["errInfo"]["details"]["operatorName"] == "$type"
    db.command("collMod", "q", validationAction="warn")
    db.q.update_one({"_id": 1}, {"$set": {"x": 2}})
    assert db.q.find_one({"_id": 1}) == {"_id": 1, "x": 2}


def test_bypass_document_validation_and_moderate_level(db: Database[Any]) -> None:
    db.create_collection("m", validator={"x": {"$gte": 0}})
    with pytest.raises(WriteError):
        db.m.insert_one({"_id": 1, "x": -1})
    db.m.insert_one({"_id": 1, "x": -1}, bypass_document_validation=True)
    with pytest.raises(WriteError):
        db.m.update_one({"_id": 1}, {"$set": {"y": 1}})
    db.command("collMod", "m", validationLevel="moderate")
    db.m.update_one({"_id": 1}, {"$set": {"y": 1}})  # was invalid already: allowed
    assert db.m.find_one({"_id": 1}) == {"_id": 1, "x": -1, "y": 1}


def test_unsupported_schema_keyword_is_refused(db: Database[Any]) -> None:
    with pytest.raises(OperationFailure) as caught:
        db.create_collection("f", validator={"$jsonSchema": {"format": "email"}})
    assert caught.value.code == 9


# -- let, projection, write shapes -------------------------------------------------------


def test_find_and_update_with_let(db: Database[Any]) -> None:
    db.l.insert_many([{"_id": 1, "name": "a"}, {"_id": 2, "name": "b"}, {"_id": 3}])
    found = list(db.l.find({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 2}))
    assert found == [{"_id": 2, "name": "b"}]
    result = db.l.update_many(
        {"$expr": {"$eq": ["$name", "$$n"]}},
        [{"$set": {"x": "$$v"}}],
        let={"n": "a", "v": {"$literal": "$lit"}},
    )
    assert result.modified_count == 1
    assert db.l.find_one({"_id": 1}) == {"_id": 1, "name": "a", "x": "$lit"}


def test_undefined_variable_is_a_server_error_not_a_python_one(db: Database[Any]) -> None:
    db.u.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as caught:
        db.u.find_one({"$expr": {"$eq": ["$_id", "$$nope"]}})
    assert caught.value.code == 17276
    assert "Use of undefined variable: nope" in str(caught.value)


def test_projection_keeps_id_first(db: Database[Any]) -> None:
    db.p.insert_one({"_id": 1, "a": 1, "b": 2, "c": 3})
    assert list(db.p.find_one({}, {"c": 1, "a": 1}) or {}) == ["_id", "a", "c"]
    found = db.p.find_one_and_update({"_id": 1}, {"$set": {"d": 4}}, projection={"b": 1})
    assert list(found or {}) == ["_id", "b"]


def test_dollar_prefixed_fields_and_ids(db: Database[Any]) -> None:
    db.d.insert_one({"_id": 1, "$a": 1})
    assert db.d.find_one({"_id": 1}) == {"_id": 1, "$a": 1}
    with pytest.raises(WriteError) as caught:
        db.d.insert_one({"_id": {"$a": 1}})
    assert caught.value.code == 52


def test_upsert_of_a_null_id_stores_null(db: Database[Any]) -> None:
    db.n.update_one({"_id": None}, {"$unset": {"a": ""}}, upsert=True)
    assert list(db.n.find()) == [{"_id": None}]


def test_duplicate_key_carries_key_pattern_and_value(db: Database[Any]) -> None:
    db.k.insert_one({"_id": 1, "x": "foo"})
    db.k.create_index("x", unique=True)
    with pytest.raises(DuplicateKeyError) as caught:
        db.k.find_one_and_update({"_id": 2}, {"$set": {"x": "foo"}}, upsert=True)
    assert caught.value.details is not None
    assert caught.value.details["keyPattern"] == {"x": 1}
    assert caught.value.details["keyValue"] == {"x": "foo"}
    assert caught.value.details["codeName"] == "DuplicateKey"


# -- commands ----------------------------------------------------------------------------


def test_get_parameter_of_an_unknown_parameter_fails(client: MongoClient[dict[str, Any]]) -> None:
    with pytest.raises(OperationFailure) as caught:
        client.admin.command("getParameter", 1, noSuchParameter=1)
    assert caught.value.code == 72
    assert caught.value.details is not None
    assert caught.value.details["codeName"] == "InvalidOptions"
    reply = client.admin.command("getParameter", 1, featureCompatibilityVersion=1)
    assert reply["featureCompatibilityVersion"] == {"version": "7.0"}


def test_not_implemented_has_its_code_name(db: Database[Any]) -> None:
    with pytest.raises(OperationFailure) as caught:
        db.command("find", "x", tailable=True)
    assert caught.value.code == 238
    assert caught.value.details is not None
    assert caught.value.details["codeName"] == "NotImplemented"


def test_forced_step_down_needs_no_catch_up_period() -> None:
    with ReplicaSet(3, election_delay=0.05) as rs:
        mongo: MongoClient[dict[str, Any]] = MongoClient(rs.uri, **FAST)
        try:
            # secondaryCatchUpPeriodSecs defaults to 0 when forced: a 5-second step-down
            # is valid (with the unforced default of 10 it would be refused).
            mongo.admin.command("replSetStepDown", 5, force=True)
        finally:
            mongo.close()


def test_empty_timestamps_are_filled_only_in_top_level_fields_of_an_insert(
    db: Database[Any],
) -> None:
    """A server fills an empty timestamp in a top-level field of an inserted document,
    never in ``_id``, in a nested document, or in a query. The broken variant this
    catches replaces every empty timestamp, the ``_id`` and the filters included (so
    that ``find({"_id": Timestamp(0, 0)})`` found nothing)."""
    empty = Timestamp(0, 0)
    db.ts.insert_one({"_id": empty, "top": empty, "nested": {"t": empty}, "list": [empty]})
    stored = db.ts.find_one({"_id": empty})
    assert stored is not None
    assert stored["_id"] == empty
    assert stored["nested"] == {"t": empty} and stored["list"] == [empty]
    assert stored["top"].time > 0
    assert db.ts.count_documents({"nested.t": empty}) == 1


@pytest.mark.parametrize(
    ("doc_id", "same"),
    [
        (Decimal128("1.5"), 1.5),
        (Code("function () {}"), Code("function () {}")),
        (Code("x", {"a": 1}), Code("x", {"a": 1})),
        (float("nan"), Decimal128("NaN")),
    ],
    ids=["decimal", "javascript", "javascriptWithScope", "nan"],
)
def test_ids_python_cannot_hash_are_stored_and_unique(
    db: Database[Any], doc_id: Any, same: Any
) -> None:
    """Any BSON value but an array, a regex or undefined may be an ``_id``; the ``_id``
    index compares them as BSON does (1.5 and decimal 1.5 are one value, NaN is NaN).
    The broken variant this catches is the document store keying documents by the
    Python value: a decimal or a code ``_id`` was refused (unhashable), and a second
    NaN ``_id`` was a new document."""
    db.ids.insert_one({"_id": doc_id})
    with pytest.raises(DuplicateKeyError):
        db.ids.insert_one({"_id": same})
    assert db.ids.count_documents({}) == 1
    if isinstance(doc_id, float):
        # A NaN query matches the NaN, as on a server.
        found = db.ids.find_one({"_id": doc_id})
        assert found is not None and math.isnan(found["_id"])
        return
    assert db.ids.update_one({"_id": doc_id}, {"$set": {"x": 1}}).modified_count == 1
    assert db.ids.find_one({"_id": doc_id}) == {"_id": doc_id, "x": 1}
    assert db.ids.delete_one({"_id": doc_id}).deleted_count == 1


def test_a_nan_id_is_upserted_and_replaced_as_stored(db: Database[Any]) -> None:
    """An upsert whose replacement carries a NaN ``_id`` stores it, and replacing the
    document by a NaN ``_id`` keeps it (NaN is NaN in BSON). The broken variant this
    catches is Python's comparison: 'The _id field cannot be changed from nan to nan'."""
    nan = float("nan")
    db.nan.replace_one({}, {"_id": nan, "a": 1}, upsert=True)
    db.nan.replace_one({}, {"_id": nan, "a": 2})
    stored = list(db.nan.find({}, {"_id": 0}))
    assert stored == [{"a": 2}]
    with pytest.raises(WriteError) as changed:
        db.nan.update_one({"a": 2}, {"$set": {"_id": 5}})
    assert changed.value.code == 66  # the _id is immutable, NaN or not


def test_an_update_that_changes_the_id_is_immutable_field(db: Database[Any]) -> None:
    """ImmutableField (66), as a server answers; the document store's own error had
    code 2 (BadValue), which a client would not recognize."""
    db.imm.insert_one({"_id": 1, "a": 2})
    with pytest.raises(WriteError) as changed:
        db.imm.update_one({"a": 2}, {"$set": {"_id": 5}})
    assert changed.value.code == 66
    with pytest.raises(WriteError) as replaced:
        db.imm.replace_one({"a": 2}, {"_id": 5})
    assert replaced.value.code == 66
    assert list(db.imm.find()) == [{"_id": 1, "a": 2}]


def test_a_list_indexes_cursor_is_on_the_collection_namespace(db: Database[Any]) -> None:
    """A 7.0 server's listIndexes cursor names the collection (a getMore then says
    ``collection: <coll>``, which the load-balancers suite expects); servers before 4.4
    named it ``<db>.$cmd.listIndexes.<coll>``."""
    db.li.create_index("x")
    db.li.create_index("y")
    first = db.command({"listIndexes": "li", "cursor": {"batchSize": 1}})["cursor"]
    assert first["ns"] == f"{db.name}.li"
    more = db.command({"getMore": first["id"], "collection": "li"})["cursor"]
    names = [i["name"] for i in first["firstBatch"] + more["nextBatch"]]
    assert names == ["_id_", "x_1", "y_1"]
