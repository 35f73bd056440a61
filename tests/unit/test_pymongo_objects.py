"""MongoClient, Database and Collection objects behave as pymongo's, side by side: what
attribute access and ``[]`` return (through a subclass's hooks every time, as wrapping
libraries rely on), the names refused and how, truth testing, iteration.

No server is needed: both clients are built and closed without an operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymongo
import pymongo.errors
import pytest

import mongocore
from mongocore import errors
from mongocore.api.change_stream import (
    ChangeStream,
    ClusterChangeStream,
    CollectionChangeStream,
    DatabaseChangeStream,
)
from mongocore.api.client_session import ClientSession
from mongocore.api.collection import Collection
from mongocore.api.command_cursor import CommandCursor
from mongocore.api.cursor import Cursor
from mongocore.api.database import Database
from mongocore.api.operations import InsertOne, ReplaceOne

URI = "mongodb://localhost:1/?serverSelectionTimeoutMS=1"


@pytest.fixture
def clients() -> Iterator[tuple[Any, Any]]:
    theirs: Any = pymongo.MongoClient(URI, connect=False)
    ours: Any = mongocore.MongoClient(URI)
    try:
        yield theirs, ours
    finally:
        theirs.close()
        ours.close()


def _wrapping(module: Any) -> tuple[Any, Any]:
    """A wrapper's MongoClient and Database subclasses, written against ``module``
    the way libraries write them: ``__getitem__`` builds their own Database and
    Collection, and counts how often it runs."""
    client_class, database_class, collection_class = module

    class TracingDatabase(database_class):  # type: ignore[misc, valid-type]
        lookups: list[str] = []

        def __getitem__(self, name: str) -> Any:
            TracingDatabase.lookups.append(name)
            return TracingCollection(self, name)

    class TracingCollection(collection_class):  # type: ignore[misc, valid-type]
        pass

    class TracingClient(client_class):  # type: ignore[misc, valid-type]
        lookups: list[str] = []

        def __getitem__(self, name: str) -> Any:
            TracingClient.lookups.append(name)
            return TracingDatabase(self, name)

    return TracingClient, TracingDatabase


@pytest.mark.parametrize("driver", ["pymongo", "mongocore"])
def test_attribute_access_goes_through_a_subclass_every_time(driver: str) -> None:
    """``client.db`` and ``db.coll`` call the subclass's ``__getitem__`` on every access
    (pymongo builds a new object each time; nothing is cached in the instance)."""
    if driver == "pymongo":
        classes: Any = (
            pymongo.MongoClient,
            pymongo.database.Database,
            pymongo.collection.Collection,
        )
        options: dict[str, Any] = {"connect": False}
    else:
        classes = (mongocore.MongoClient, Database, Collection)
        options = {}
    client_class, database_class = _wrapping(classes)
    client = client_class(URI, **options)
    try:
        for _ in range(3):
            assert type(client.shop).__name__ == "TracingDatabase"
        database = client.shop
        for _ in range(3):
            assert type(database.orders).__name__ == "TracingCollection"
        assert client_class.lookups == ["shop"] * 4
        assert database_class.lookups == ["orders"] * 3
        # Equal objects, built anew each time, as pymongo's.
        assert client.shop == client.shop
        assert client.shop is not client.shop
        assert client["shop"]["orders"] == client.shop.orders
    finally:
        client.close()


def test_each_access_builds_a_new_equal_object(clients: tuple[Any, Any]) -> None:
    for client in clients:
        assert client.shop is not client.shop
        assert client.shop == client["shop"]
        assert client.shop.orders is not client.shop.orders
        assert client.shop.orders == client.shop["orders"]
        assert client.shop.orders.items.full_name == "shop.orders.items"


@pytest.mark.parametrize(
    "name", ["", "a b", "a.b", "a$b", "a/b", "a\\b", 'a"b', "a\x00b", "$external", "ok"]
)
def test_database_names_are_refused_as_pymongo_refuses_them(
    clients: tuple[Any, Any], name: str
) -> None:
    theirs, ours = clients
    try:
        theirs[name]
    except pymongo.errors.InvalidName:
        with pytest.raises(errors.InvalidName):
            ours[name]
    else:
        assert ours[name].name == name


@pytest.mark.parametrize(
    "name", ["", "a..b", "a$b", "$cmd", "oplog.$main", ".a", "a.", "a\x00b", "a.b", "ok"]
)
def test_collection_names_are_refused_as_pymongo_refuses_them(
    clients: tuple[Any, Any], name: str
) -> None:
    theirs, ours = clients
    try:
        theirs.shop[name]
    except pymongo.errors.InvalidName:
        with pytest.raises(errors.InvalidName):
            ours.shop[name]
    else:
        assert ours.shop[name].name == name


def test_a_name_that_is_no_string_is_a_type_error(clients: tuple[Any, Any]) -> None:
    for client in clients:
        with pytest.raises(TypeError):
            client[1]
        with pytest.raises(TypeError):
            client.shop[1]


def test_invalid_name_is_pymongo_error() -> None:
    assert issubclass(errors.InvalidName, errors.PyMongoError)
    assert issubclass(errors.CollectionInvalid, errors.PyMongoError)


def test_truth_testing_and_iteration_are_refused(clients: tuple[Any, Any]) -> None:
    for client in clients:
        for target in (client.shop, client.shop.orders):
            with pytest.raises(NotImplementedError, match="compare with None"):
                bool(target)
            with pytest.raises(TypeError, match="not iterable"):
                list(target)
        with pytest.raises(TypeError, match="not iterable"):
            list(client)
        with pytest.raises(TypeError, match="not iterable"):
            client.shop.next()


def test_underscore_names_are_attribute_errors(clients: tuple[Any, Any]) -> None:
    for client in clients:
        with pytest.raises(AttributeError, match="client\\["):
            client._private  # noqa: B018
        with pytest.raises(AttributeError, match="database\\["):
            client.shop._private  # noqa: B018
        with pytest.raises(AttributeError, match="database\\["):
            client.shop.orders._private  # noqa: B018


def test_the_classes_are_generic_as_pymongos() -> None:
    """``MongoClient[dict[str, Any]]`` and the others subscript as pymongo's, and a
    library may subclass the subscripted class (a TypeError before)."""
    for cls in (
        mongocore.MongoClient,
        Database,
        Collection,
        Cursor,
        CommandCursor,
        ChangeStream,
        CollectionChangeStream,
        DatabaseChangeStream,
        ClusterChangeStream,
        ClientSession,
        InsertOne,
        ReplaceOne,
    ):
        assert cls[dict[str, Any]] is not None, cls
        pymongo_class = getattr(pymongo, cls.__name__, None)
        if pymongo_class is not None:
            assert pymongo_class[dict[str, Any]] is not None

    class Client(mongocore.MongoClient[dict[str, Any]]):
        pass

    class Db(Database[dict[str, Any]]):
        pass

    with Client(URI) as client:
        assert isinstance(Db(client, "shop")["orders"], Collection)
