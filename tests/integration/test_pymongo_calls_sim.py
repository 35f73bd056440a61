"""The same call, the same commands: each call below, written as a pymongo user writes it
(positional parameters where pymongo has them, pymongo's ``**kwargs`` spellings such as
``maxTimeMS=`` and ``batchSize=``, pymongo's ``Collation`` objects, ``return_document=True``,
objects where pymongo takes objects), runs against the same simulated MongoDB 7.0 with
pymongo and with mongocore, on the same data. pymongo is the judge: the commands each
sends (as command listeners see them, less the session, cluster time, transaction and
``$db`` fields) and what the call returns or raises must be the same.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

import pytest

pymongo = pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from bson.code import Code  # noqa: E402
from bson.codec_options import CodecOptions  # noqa: E402
from bson.dbref import DBRef  # noqa: E402
from pymongo.collation import Collation  # noqa: E402

import mongocore  # noqa: E402
import mongocore.monitoring  # noqa: E402
from mongocore.sim import Standalone  # noqa: E402
from tests.integration.sim_client import FAST  # noqa: E402

#: Fields the two drivers legitimately send differently: sessions, cluster time,
#: transaction numbers (pymongo retries writes by default, mongocore does not, as its
#: seed asks) and the database, which the events carry on their own.
_DRIVER_FIELDS = frozenset({"lsid", "$clusterTime", "txnNumber", "$db", "$readPreference"})
#: Commands a driver sends on its own (monitoring, sessions, handshakes).
_OWN_COMMANDS = frozenset({"hello", "ismaster", "isMaster", "endSessions", "saslStart"})

FRENCH = Collation(locale="fr", strength=2)
DOCS = [{"_id": i, "x": i % 3, "name": f"n{i % 4}", "age": i} for i in range(1, 9)]


class Commands:
    """The commands a client sends, in order (made a listener of either driver by
    _listener)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def started(self, event: Any) -> None:
        if event.command_name in _OWN_COMMANDS:
            return
        with self.lock:
            self.sent.append((event.database_name, _normalized(dict(event.command))))

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


def _listener(module: Any) -> Commands:
    listener_class = type("Listener", (Commands, module.monitoring.CommandListener), {})
    listener: Commands = listener_class()
    return listener


def _normalized(command: dict[str, Any]) -> dict[str, Any]:
    body = {key: value for key, value in command.items() if key not in _DRIVER_FIELDS}
    # pymongo sends some commands with ``comment: None`` (dropDatabase), which servers
    # take as no comment.
    if "comment" in body and body["comment"] is None:
        del body["comment"]
    # An update statement's multi and upsert default to false: pymongo leaves them out
    # where mongocore sends false (docs/from-pymongo.md).
    for statement in body.get("updates", ()):
        for flag in ("multi", "upsert"):
            if statement.get(flag) is False:
                del statement[flag]
    # Cursor ids differ from run to run.
    if "getMore" in body:
        body["getMore"] = "<cursor id>"
    if "killCursors" in body:
        body["cursors"] = ["<cursor id>"]
    return body


def _outcome(value: Any) -> Any:
    """What a call returned, comparable between the drivers."""
    # (Before any hasattr: every attribute of a Collection is a sub-collection.)
    if type(value).__name__ == "Collection":
        return ("collection", value.full_name, type(value.codec_options).__name__)
    if hasattr(value, "bulk_api_result"):
        return ("bulk", value.bulk_api_result)
    if hasattr(value, "raw_result"):
        return ("result", value.acknowledged, value.raw_result)
    if hasattr(value, "inserted_ids"):
        return ("inserted", value.acknowledged, list(value.inserted_ids))
    if hasattr(value, "inserted_id"):
        return ("inserted", value.acknowledged, value.inserted_id)
    if hasattr(value, "alive") and hasattr(value, "close"):  # a cursor
        with value:
            return ("cursor", list(value))
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in ("$clusterTime", "operationTime")}
    return value


def _raised(error: BaseException) -> Any:
    return ("raised", type(error).__name__, getattr(error, "code", None))


@dataclass(frozen=True)
class Call:
    """One call on ``t`` (``t.client``, ``t.db``, ``t.coll``, ``t.m`` the driver's
    module), after ``DOCS`` were inserted into ``t.coll`` unless ``seed`` is False."""

    name: str
    run: Callable[[Any], Any]
    seed: bool = True


def _bulk(t: Any) -> Any:
    m = t.m
    requests = [
        m.InsertOne({"_id": 100, "x": 1}),
        m.UpdateOne({"name": "N1"}, {"$set": {"y": 1}}, False, FRENCH),
        m.UpdateMany({"x": 1}, {"$inc": {"age": 1}}, None, FRENCH, None, "_id_"),
        m.ReplaceOne({"_id": 2}, {"x": 9}, True, FRENCH),
        m.DeleteOne({"name": "N3"}, FRENCH),
        m.DeleteMany({"x": 9}, FRENCH, "_id_"),
    ]
    return t.coll.bulk_write(requests, True, True, None, "bulk", {"v": 1})


def _array_filters(t: Any) -> Any:
    t.coll.insert_one({"_id": 60, "tags": [1, 2, 3]})
    return t.coll.update_one(
        {"_id": 60}, {"$set": {"tags.$[t]": 0}}, False, None, None, [{"t": {"$gt": 1}}]
    )


def _create_twice(t: Any) -> Any:
    t.db.create_collection(
        "created",
        CodecOptions(tz_aware=True),
        t.m.ReadPreference.PRIMARY,
        t.m.WriteConcern(w=1),
        None,
        None,
        True,
        validator={"x": {"$exists": True}},
    )
    return t.db.create_collection("created")  # exists: CollectionInvalid


def _drop_objects(t: Any) -> Any:
    t.coll.insert_one({"_id": 1})
    reply = t.db.drop_collection(t.coll)
    t.client.drop_database(t.db)
    return reply


CALLS = [
    # --- writes: pymongo's positional parameters ----------------------------------------
    Call("insert_one positional", lambda t: t.coll.insert_one({"_id": 50}, True, None, "c")),
    Call(
        "insert_many positional",
        lambda t: t.coll.insert_many([{"_id": 51}, {"_id": 52}], False, True, None, "c"),
    ),
    Call(
        "update_one positional",
        lambda t: t.coll.update_one(
            {"name": "N1"},
            {"$set": {"y": 1}},
            True,
            True,
            FRENCH,
            None,
            "_id_",
            None,
            {"v": 1},
            None,
            "c",
        ),
    ),
    Call("update_one array_filters positional", _array_filters),
    Call(
        "update_many positional",
        lambda t: t.coll.update_many(
            {"x": 1}, {"$inc": {"age": 1}}, False, None, True, FRENCH, "_id_", None, {"v": 1}, "c"
        ),
    ),
    Call(
        "replace_one positional",
        lambda t: t.coll.replace_one(
            {"name": "N2"}, {"x": 7}, True, True, FRENCH, "_id_", None, None, None, "c"
        ),
    ),
    Call("delete_one positional", lambda t: t.coll.delete_one({"name": "N0"}, FRENCH, "_id_")),
    Call(
        "delete_many positional",
        lambda t: t.coll.delete_many({"x": 2}, FRENCH, None, None, {"v": 1}, "c"),
    ),
    Call("bulk_write positional with Collation models", _bulk),
    # --- findAndModify: return_document as a bool, kwargs as pymongo spells them ---------
    Call(
        "find_one_and_update return_document=True",
        lambda t: t.coll.find_one_and_update(
            {"x": 1}, {"$inc": {"age": 1}}, {"age": 1}, [("age", -1)], True, True
        ),
    ),
    Call(
        "find_one_and_update kwargs",
        lambda t: t.coll.find_one_and_update(
            {"name": "N1"},
            {"$set": {"z": 1}},
            return_document=t.m.ReturnDocument.AFTER,
            collation=FRENCH,
            maxTimeMS=5000,
            hint="_id_",
            comment="c",
            let={"v": 1},
        ),
    ),
    Call(
        "find_one_and_replace positional",
        lambda t: t.coll.find_one_and_replace(
            {"_id": 3},
            {"x": 0},
            ["x"],
            ["x", ("age", -1)],
            False,
            True,
            None,
            None,
            None,
            "c",
            collation=FRENCH,
            maxTimeMS=5000,
        ),
    ),
    Call(
        "find_one_and_delete positional",
        lambda t: t.coll.find_one_and_delete(
            {"name": "N2"}, ["age"], {"age": -1}, "_id_", None, {"v": 1}, "c", collation=FRENCH
        ),
    ),
    # --- find and its cursor ---------------------------------------------------------------
    Call(
        "find positional",
        lambda t: t.coll.find({"x": {"$gte": 1}}, {"age": 1}, 1, 4, False, 0, [("age", -1)]),
    ),
    Call("find sort mixing names and pairs", lambda t: t.coll.find({}, sort=["name", ("age", -1)])),
    Call("cursor sort mixing names and pairs", lambda t: t.coll.find().sort(["x", ("age", -1)])),
    Call(
        "find keywords",
        lambda t: t.coll.find(
            {"name": "N1"},
            collation=FRENCH,
            hint=["name"],
            max_time_ms=5000,
            comment="c",
            allow_disk_use=True,
            let={"v": 1},
            batch_size=2,
            allow_partial_results=True,
            return_key=False,
            show_record_id=False,
        ),
    ),
    Call("find batch_size getMores", lambda t: t.coll.find({}, batch_size=3)),
    Call("cursor collation and hint", lambda t: t.coll.find().collation(FRENCH).hint("_id_")),
    # pymongo's find sends no collation for an empty one; its other commands send it.
    Call("cursor empty collation", lambda t: t.coll.find().collation({}).sort("name")),
    Call("find empty collation", lambda t: t.coll.find({}, collation={})),
    Call("count_documents empty collation", lambda t: t.coll.count_documents({}, collation={})),
    Call("cursor where", lambda t: t.coll.find({"x": 1}).where("this.age > 3")),
    Call("cursor where Code", lambda t: t.coll.find().where(Code("this.age < 3"))),
    Call("cursor add_option", lambda t: t.coll.find().add_option(16).add_option(128)),
    Call("cursor remove_option", lambda t: t.coll.find().add_option(144).remove_option(16)),
    Call("cursor max_await_time_ms", lambda t: t.coll.find().max_await_time_ms(100)),
    Call(
        "find_one sort and projection", lambda t: t.coll.find_one({}, ["age"], sort=[("age", -1)])
    ),
    # --- aggregate and the counts ----------------------------------------------------------
    Call(
        "aggregate batchSize",
        lambda t: t.coll.aggregate([{"$sort": {"_id": 1}}], batchSize=3),
    ),
    Call(
        "aggregate positional let and kwargs",
        lambda t: t.coll.aggregate(
            [{"$match": {"$expr": {"$gte": ["$x", "$$v"]}}}],
            None,
            {"v": 1},
            "c",
            allowDiskUse=True,
            maxTimeMS=5000,
            collation=FRENCH,
            batchSize=2,
        ),
    ),
    Call(
        "count_documents kwargs",
        lambda t: t.coll.count_documents(
            {"name": "N1"},
            None,
            "c",
            skip=0,
            limit=5,
            maxTimeMS=5000,
            collation=FRENCH,
            hint="_id_",
        ),
    ),
    Call("count_documents hint as keys", lambda t: t.coll.count_documents({}, hint=[("_id", 1)])),
    Call(
        "estimated_document_count kwargs",
        lambda t: t.coll.estimated_document_count("c", maxTimeMS=5000),
    ),
    Call(
        "distinct positional",
        lambda t: t.coll.distinct("x", {"age": {"$gt": 2}}, None, "c", "_id_", collation=FRENCH),
    ),
    # --- indexes -----------------------------------------------------------------------------
    Call(
        "create_index with Collation",
        lambda t: t.coll.create_index(
            [("name", 1)], None, "c", collation=FRENCH, name="by_name", maxTimeMS=5000
        ),
    ),
    Call("create_index mixed keys", lambda t: t.coll.create_index(["x", ("age", -1)])),
    Call(
        "create_indexes IndexModel with Collation",
        lambda t: t.coll.create_indexes([t.m.IndexModel([("name", 1)], collation=FRENCH)]),
    ),
    Call("list_indexes positional", lambda t: t.coll.list_indexes(None, "c")),
    # --- databases -----------------------------------------------------------------------------
    Call("command check=False", lambda t: t.db.command("noSuchCommand", 1, False)),
    Call(
        "command allowable_errors",
        lambda t: t.db.command({"noSuchCommand": 1}, allowable_errors=[59]),
    ),
    Call(
        "command allowable_errors refusing another code",
        lambda t: t.db.command("noSuchCommand", 1, True, [26]),
    ),
    Call("command comment", lambda t: t.db.command("ping", comment="c")),
    Call("create_collection options and check_exists", _create_twice, seed=False),
    Call(
        "create_collection Collation",
        lambda t: t.db.create_collection("fr", collation=FRENCH, check_exists=False),
        seed=False,
    ),
    Call("drop_collection and drop_database objects", _drop_objects, seed=False),
    Call("validate_collection", lambda t: t.db.validate_collection(t.coll, False, False)),
    Call("list_collection_names", lambda t: t.db.list_collection_names(None, None, "c")),
    Call(
        "list_collection_names name filter",
        lambda t: t.db.list_collection_names(filter={"name": "items"}),
    ),
    Call("list_collections kwargs", lambda t: t.db.list_collections(nameOnly=True)),
    Call("dereference", lambda t: t.db.dereference(DBRef("items", 3))),
    Call("dereference another database", lambda t: t.db.dereference(DBRef("items", 3, "other"))),
    Call("list_databases kwargs", lambda t: t.client.list_databases(None, "c", nameOnly=True)),
    Call("start_session positional", lambda t: t.client.start_session(True).end_session()),
]


@pytest.fixture(scope="module")
def server() -> Iterator[Standalone]:
    with Standalone() as standalone:
        yield standalone


def _run(module: Any, server: Standalone, call: Call, database: str) -> tuple[Any, list[Any]]:
    commands = _listener(module)
    client: Any = module.MongoClient(server.uri, event_listeners=[commands], **FAST)
    try:
        if call.seed:
            client[database].items.insert_many(DOCS)
        with commands.lock:
            commands.sent.clear()
        t = SimpleNamespace(
            m=module, client=client, db=client[database], coll=client[database].items
        )
        try:
            outcome = _outcome(call.run(t))
        except Exception as error:
            outcome = _raised(error)
        with commands.lock:
            sent = list(commands.sent)
        client.drop_database(database)
        return outcome, sent
    finally:
        client.close()


@pytest.mark.parametrize("call", CALLS, ids=[call.name for call in CALLS])
def test_the_same_call_sends_the_same_commands_as_pymongo(server: Standalone, call: Call) -> None:
    database = "calls"
    theirs, their_commands = _run(pymongo, server, call, database)
    ours, our_commands = _run(mongocore, server, call, database)
    assert our_commands == their_commands
    assert ours == theirs
