"""Unique indexes of the simulated store (the engine's indexes behind DataStore):
checked by lookup, not by reading the collection, with a 7.0 server's key rules
(multikey, sparse, partial, numbers compared by value, collations) and kept right
through updates, deletes, catalog changes and rollbacks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca")

from bson import Decimal128, Int64

from mongocore.sim.catalog import CollectionOptions
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import parse_collation
from mongocore.sim.engine import store as engine_store
from mongocore.sim.store import DataStore

CASE_INSENSITIVE = {"locale": "en", "strength": 2}
LARGE = 3_000


class Examined:
    """Counts the documents the engine's collections yield to anyone scanning them."""

    def __init__(self) -> None:
        self.count = 0


@pytest.fixture
def examined(monkeypatch: pytest.MonkeyPatch) -> Examined:
    counter = Examined()
    original = engine_store.Collection.scan

    def scan(self: Any, as_of: Any = None) -> Iterator[Any]:
        for record in original(self, as_of):
            counter.count += 1
            yield record

    monkeypatch.setattr(engine_store.Collection, "scan", scan)
    return counter


@pytest.fixture
def store() -> DataStore:
    return DataStore(clock=lambda: 1_700_000_000.0)


def index(store: DataStore, name: str, key: dict[str, Any], **options: Any) -> None:
    store.create_indexes("db", "c", [{"key": key, "name": name, "unique": True, **options}])


def duplicate(store: DataStore, doc: dict[str, Any]) -> CommandError:
    with pytest.raises(CommandError) as caught:
        store.insert("db", "c", doc)
    assert caught.value.code == 11000
    return caught.value


# -- the cost ------------------------------------------------------------------------------


@pytest.mark.parametrize("setup", ["id only", "secondary unique", "collated"])
def test_an_insert_into_a_large_collection_reads_no_document(
    store: DataStore, examined: Examined, setup: str
) -> None:
    if setup == "collated":
        store.create_collection(
            "db", "c", CollectionOptions(collation=parse_collation(CASE_INSENSITIVE))
        )
    if setup != "id only":
        index(store, "k_1", {"k": 1})
    else:
        store.create_collection("db", "c")
    for i in range(LARGE):
        store.insert("db", "c", {"_id": i, "k": f"key{i}"})
    examined.count = 0
    inserts = 200
    for i in range(LARGE, LARGE + inserts):
        store.insert("db", "c", {"_id": i, "k": f"key{i}"})
    # A scan would read the whole collection for every insert (LARGE * inserts).
    duplicate(store, {"_id": 5, "k": "new"})
    if setup != "id only":
        duplicate(store, {"k": "KEY7" if setup == "collated" else "key7"})
    assert examined.count == 0


# -- the keys ------------------------------------------------------------------------------


def test_a_duplicate_reports_the_key_pattern_and_the_colliding_value(store: DataStore) -> None:
    index(store, "a_1_b_1", {"a": 1, "b": 1})
    store.insert("db", "c", {"_id": 1, "a": [1, 2], "b": "x"})
    error = duplicate(store, {"_id": 2, "a": 2, "b": "x"})
    assert error.extra["keyPattern"] == {"a": 1, "b": 1}
    assert error.extra["keyValue"] == {"a": 2, "b": "x"}
    assert 'index: a_1_b_1 dup key: { a: 2, b: "x" }' in error.errmsg
    store.insert("db", "c", {"_id": 3, "a": 2, "b": "y"})
    error = duplicate(store, {"_id": 1})
    assert error.extra["keyValue"] == {"_id": 1}


def test_numbers_compare_by_value_and_booleans_apart(store: DataStore) -> None:
    index(store, "x_1", {"x": 1})
    store.insert("db", "c", {"_id": 1, "x": 1})
    for same in (1.0, Int64(1), Decimal128("1.0")):
        duplicate(store, {"x": same})
    store.insert("db", "c", {"_id": 2, "x": True})
    store.insert("db", "c", {"_id": 3, "x": 1.5})
    duplicate(store, {"x": Decimal128("1.5")})
    store.insert("db", "c", {"_id": 4, "x": "1"})


def test_missing_null_sparse_and_partial(store: DataStore) -> None:
    index(store, "m_1", {"m": 1})
    store.insert("db", "c", {"_id": 1})
    error = duplicate(store, {"_id": 2, "m": None})  # a missing field is indexed as null
    assert error.extra["keyValue"] == {"m": None}
    index(store, "s_1", {"s": 1}, sparse=True)
    index(store, "p_1", {"p": 1}, partialFilterExpression={"live": True})
    store.insert("db", "c", {"_id": 3, "m": 3, "p": 1})
    store.insert("db", "c", {"_id": 4, "m": 4, "p": 1})  # neither is live
    store.insert("db", "c", {"_id": 5, "m": 5, "p": 1, "live": True})
    duplicate(store, {"_id": 6, "m": 6, "p": 1, "live": True})
    store.insert("db", "c", {"_id": 7, "m": 7, "s": None})
    duplicate(store, {"_id": 8, "m": 8, "s": None})  # sparse indexes a present null


def test_arrays_index_each_element_and_an_empty_array_once(store: DataStore) -> None:
    index(store, "t_1", {"t": 1})
    store.insert("db", "c", {"_id": 1, "t": ["a", "b", "a"]})  # one document repeats itself
    duplicate(store, {"_id": 2, "t": "b"})
    duplicate(store, {"_id": 3, "t": ["z", "a"]})
    store.insert("db", "c", {"_id": 4, "t": []})
    duplicate(store, {"_id": 5, "t": []})
    store.insert("db", "c", {"_id": 6, "t": [["a"]]})  # a nested array is one value
    index(store, "d_1", {"d.e": 1}, sparse=True)
    store.insert("db", "c", {"_id": 7, "t": 7, "d": [{"e": 1}, {"e": 2}]})
    duplicate(store, {"_id": 8, "t": 8, "d": {"e": 2}})


def test_a_collated_index_compares_strings_under_its_collation(store: DataStore) -> None:
    index(store, "n_1", {"n": 1}, collation=CASE_INSENSITIVE)
    store.insert("db", "c", {"_id": 1, "n": "Abc", "o": {"p": "Q"}})
    error = duplicate(store, {"_id": 2, "n": "aBC"})
    assert error.extra["keyValue"] == {"n": "aBC"}
    store.insert("db", "c", {"_id": 3, "n": "ábc"})  # strength 2 tells accents apart
    index(store, "o_1", {"o": 1}, collation=CASE_INSENSITIVE)
    duplicate(store, {"_id": 4, "n": "x", "o": {"p": "q"}})


def test_the_id_index_takes_the_collection_default_collation(store: DataStore) -> None:
    store.create_collection(
        "db", "c", CollectionOptions(collation=parse_collation(CASE_INSENSITIVE))
    )
    store.insert("db", "c", {"_id": "Key"})
    error = duplicate(store, {"_id": "KEY"})
    assert error.extra["keyPattern"] == {"_id": 1}


# -- keeping the tables right --------------------------------------------------------------


def test_updates_move_keys_and_deletes_free_them(store: DataStore) -> None:
    index(store, "x_1", {"x": 1})
    store.insert("db", "c", {"_id": 1, "x": 1})
    store.update("db", "c", {"_id": 1}, {"$set": {"x": 5}})
    store.insert("db", "c", {"_id": 2, "x": 1})
    duplicate(store, {"_id": 3, "x": 5})
    store.update("db", "c", {"_id": 1}, {"$set": {"y": 1}})  # keeps its own key
    store.delete("db", "c", {"_id": 1}, 1)
    store.insert("db", "c", {"_id": 3, "x": 5})


def test_a_multi_update_checks_each_document_against_those_updated_before(
    store: DataStore,
) -> None:
    index(store, "x_1", {"x": 1})
    store.insert("db", "c", {"_id": 1, "x": 1})
    store.insert("db", "c", {"_id": 2, "x": 2})
    with pytest.raises(CommandError) as caught:
        store.update("db", "c", {}, {"$set": {"x": 7}}, multi=True)
    assert caught.value.code == 11000
    assert sorted(d["x"] for d in store.documents("db", "c")) == [2, 7]


def test_an_upsert_is_checked_and_then_holds_its_key(store: DataStore) -> None:
    index(store, "x_1", {"x": 1})
    store.update("db", "c", {"_id": 1}, {"$set": {"x": 1}}, upsert=True)
    with pytest.raises(CommandError) as caught:
        store.update("db", "c", {"_id": 2}, {"$set": {"x": 1}}, upsert=True)
    assert caught.value.code == 11000
    duplicate(store, {"_id": 3, "x": 1})


def test_dropped_and_recreated_indexes_and_collections_start_afresh(store: DataStore) -> None:
    index(store, "x_1", {"x": 1})
    store.insert("db", "c", {"_id": 1, "x": 1})
    store.drop_index("db", "c", "x_1")
    store.insert("db", "c", {"_id": 2, "x": 1})
    store.drop_collection("db", "c")
    index(store, "x_1", {"x": 1}, sparse=True)
    store.insert("db", "c", {"_id": 1, "x": 1})
    duplicate(store, {"_id": 2, "x": 1})
    store.rename_collection("db.c", "db.d", drop_target=False)
    store.insert("db", "c", {"_id": 1, "x": 1})
    with pytest.raises(CommandError) as caught:
        store.insert("db", "d", {"_id": 2, "x": 1})  # the index moved with its collection
    assert caught.value.code == 11000


def test_a_rolled_back_statement_frees_its_keys(store: DataStore) -> None:
    index(store, "x_1", {"x": 1})
    store.insert("db", "c", {"_id": 1, "x": 1})
    checkpoint = store.checkpoint("db", "c")
    store.insert("db", "c", {"_id": 2, "x": 2})
    store.rollback(checkpoint)
    store.insert("db", "c", {"_id": 3, "x": 2})
    duplicate(store, {"_id": 4, "x": 1})
