"""Unified test format: "Entity Test Operations" on mongocore's API (client, database,
collection and session operations), with "Converting Returned Model Objects to
Documents" and "Iterating Returned Iterables".

Each operation takes its arguments by the format's (camelCase) names and calls the
mongocore method with the matching keyword; an argument the runner does not know is
an error, as the format asks. Iterables are read to the end; results come back as
documents (an iterable of documents is a :class:`Documents`, whose elements are
matched as root-level documents).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from mongocore.api.client_session import ClientSession, SessionOptions
from mongocore.api.collection import Collection
from mongocore.api.collection_writes import ReturnDocument
from mongocore.api.database import Database
from mongocore.api.operations import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from mongocore.api.results import BulkWriteResult, DeleteResult, UpdateResult
from mongocore.driver_info import DriverInfo
from tests.spec.unified import (
    change_stream_operations,
    cursor_operations,
    find_cursor_operations,
    gridfs_operations,
    index_operations,
    session_operations,
)
from tests.spec.unified.entities import (
    ClientEntity,
    EntityMap,
    InvalidTest,
    UnsupportedFeature,
    read_preference,
)


class Documents(list):  # type: ignore[type-arg]
    """The documents of an iterable result: each is matched as a root-level document."""


#: Operations the suites use that mongocore or the simulator does not offer, with why.
UNSUPPORTED: dict[str, str] = {
    "mapReduce": "mapReduce (not simulated, not in mongocore's API)",
    "clientBulkWrite": "the client-level bulkWrite command (MongoDB 8.0)",
}


class Arguments:
    """An operation's arguments: taken one by one, and any left over is an error."""

    def __init__(self, name: str, arguments: Optional[Mapping[str, Any]], entities: EntityMap):
        self._name = name
        self._left = dict(arguments or {})
        self._entities = entities

    def take(self, key: str, default: Any = None) -> Any:
        return self._left.pop(key, default)

    def has(self, key: str) -> bool:
        return key in self._left

    def require(self, key: str) -> Any:
        if key not in self._left:
            raise InvalidTest(f"{self._name} requires the argument {key!r}")
        return self._left.pop(key)

    def session(self) -> Optional[ClientSession]:
        name = self._left.pop("session", None)
        return None if name is None else self._entities.session(str(name))

    def keywords(self, names: Mapping[str, str]) -> dict[str, Any]:
        """Take the arguments named in ``names`` (format name -> keyword) that are given."""
        out: dict[str, Any] = {}
        for key, keyword in names.items():
            if key in self._left:
                out[keyword] = self._left.pop(key)
        return out

    def rest(self) -> dict[str, Any]:
        """Take every argument left (for operations that pass them on as they are)."""
        out, self._left = self._left, {}
        return out

    def done(self) -> None:
        if self._left:
            raise UnsupportedFeature(f"{self._name}: unsupported arguments {sorted(self._left)}")


# --- results as documents ----------------------------------------------------------------


def _keyed(ids: Mapping[int, Any]) -> dict[str, Any]:
    return {str(index): value for index, value in sorted(ids.items())}


def update_result(result: UpdateResult) -> dict[str, Any]:
    if not result.acknowledged:
        return {"acknowledged": False}
    doc: dict[str, Any] = {
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "upsertedCount": 1 if result.upserted_id is not None else 0,
    }
    if result.upserted_id is not None:
        doc["upsertedId"] = result.upserted_id
    return doc


def delete_result(result: DeleteResult) -> dict[str, Any]:
    if not result.acknowledged:
        return {"acknowledged": False}
    return {"deletedCount": result.deleted_count}


def bulk_write_result(result: BulkWriteResult) -> dict[str, Any]:
    if not result.acknowledged:
        return {"acknowledged": False}
    return {
        "deletedCount": result.deleted_count,
        "insertedCount": result.inserted_count,
        "insertedIds": _keyed(result.inserted_ids),
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "upsertedCount": result.upserted_count,
        "upsertedIds": _keyed(result.upserted_ids),
    }


def bulk_error_result(details: Mapping[str, Any]) -> dict[str, Any]:
    """The partial BulkWriteResult a BulkWriteError carries (its ``details``)."""
    upserted = {int(u["index"]): u["_id"] for u in details.get("upserted") or []}
    return {
        "deletedCount": details.get("nRemoved", 0),
        "insertedCount": details.get("nInserted", 0),
        "matchedCount": details.get("nMatched", 0),
        "modifiedCount": details.get("nModified", 0),
        "upsertedCount": details.get("nUpserted", 0),
        "upsertedIds": _keyed(upserted),
    }


def _aggregate(target: Any, args: Arguments, session: Any) -> Documents:
    """A collection's or a database's aggregate, its cursor read to the end."""
    pipeline = args.require("pipeline")
    batch_size = args.take("batchSize")
    options = args.keywords(_AGGREGATE_OPTIONS)
    args.done()
    with target.aggregate(pipeline, session, batch_size=batch_size, **options) as cursor:
        return Documents(cursor.to_list())


# --- write models ------------------------------------------------------------------------

_UPDATE_OPTIONS = {"arrayFilters": "array_filters", "hint": "hint", "collation": "collation"}
_UPDATE_ONE_OPTIONS = dict(_UPDATE_OPTIONS, sort="sort")


def write_model(request: Mapping[str, Any], entities: EntityMap) -> Any:
    if not isinstance(request, Mapping):
        raise ValueError(f"a write model is a document with one key, not {request!r}")
    if len(request) != 1:
        raise ValueError(f"a write model has one key: {dict(request)!r}")
    kind, fields = next(iter(request.items()))
    args = Arguments(kind, fields, entities)
    model: Any
    if kind == "insertOne":
        model = InsertOne(args.require("document"))
    elif kind in ("updateOne", "updateMany"):
        cls = UpdateOne if kind == "updateOne" else UpdateMany
        model = cls(
            args.require("filter"),
            args.require("update"),
            bool(args.take("upsert", False)),
            **args.keywords(_UPDATE_OPTIONS if kind == "updateMany" else _UPDATE_ONE_OPTIONS),
        )
    elif kind == "replaceOne":
        model = ReplaceOne(
            args.require("filter"),
            args.require("replacement"),
            bool(args.take("upsert", False)),
            **args.keywords({"hint": "hint", "collation": "collation", "sort": "sort"}),
        )
    elif kind in ("deleteOne", "deleteMany"):
        cls_d = DeleteOne if kind == "deleteOne" else DeleteMany
        model = cls_d(
            args.require("filter"), **args.keywords({"hint": "hint", "collation": "collation"})
        )
    else:
        raise UnsupportedFeature(f"write model {kind!r}")
    args.done()
    return model


def _return_document(value: Any) -> ReturnDocument:
    if value is None:
        return ReturnDocument.BEFORE
    text = str(value).lower()
    if text == "before":
        return ReturnDocument.BEFORE
    if text == "after":
        return ReturnDocument.AFTER
    raise InvalidTest(f"returnDocument must be Before or After, not {value!r}")


# --- collection operations -------------------------------------------------------------

_FIND = {
    "projection": "projection",
    "sort": "sort",
    "skip": "skip",
    "limit": "limit",
    "batchSize": "batch_size",
    "hint": "hint",
    "maxTimeMS": "max_time_ms",
    "comment": "comment",
    "collation": "collation",
    "allowDiskUse": "allow_disk_use",
    "let": "let",
    "min": "min",
    "max": "max",
    "returnKey": "return_key",
    "showRecordId": "show_record_id",
    "timeoutMS": "timeout_ms",
}
_AGGREGATE_OPTIONS = {
    "allowDiskUse": "allowDiskUse",
    "let": "let",
    "comment": "comment",
    "maxTimeMS": "maxTimeMS",
    "hint": "hint",
    "collation": "collation",
    "bypassDocumentValidation": "bypassDocumentValidation",
    "timeoutMS": "timeout_ms",
}
_WRITE = {
    "bypassDocumentValidation": "bypass_document_validation",
    "comment": "comment",
    "timeoutMS": "timeout_ms",
}
_UPDATE = {
    "arrayFilters": "array_filters",
    "hint": "hint",
    "collation": "collation",
    "bypassDocumentValidation": "bypass_document_validation",
    "let": "let",
    "comment": "comment",
    "timeoutMS": "timeout_ms",
}
_DELETE = {
    "hint": "hint",
    "collation": "collation",
    "let": "let",
    "comment": "comment",
    "timeoutMS": "timeout_ms",
}
_FIND_AND_MODIFY = {
    "projection": "projection",
    "sort": "sort",
    "hint": "hint",
    "collation": "collation",
    "let": "let",
    "comment": "comment",
    "maxTimeMS": "max_time_ms",
    "timeoutMS": "timeout_ms",
}


def collection_operation(
    collection: Collection, name: str, args: Arguments, entities: EntityMap
) -> Any:
    session = args.session()
    if name == "find":
        filter_ = args.take("filter", {})
        with collection.find(filter_, session=session, **args.keywords(_FIND)) as cursor:
            args.done()
            return Documents(cursor.to_list())
    if name == "findOne":
        filter_ = args.take("filter", {})
        keywords = args.keywords(
            {k: v for k, v in _FIND.items() if k not in ("limit", "batchSize")}
        )
        args.done()
        return collection.find_one(filter_, session=session, **keywords)
    if name == "aggregate":
        return _aggregate(collection, args, session)
    if name == "count":
        filter_ = args.take("filter", {})
        keywords = args.keywords(
            {
                "skip": "skip",
                "limit": "limit",
                "hint": "hint",
                "collation": "collation",
                "maxTimeMS": "max_time_ms",
                "timeoutMS": "timeout_ms",
            }
        )
        args.done()
        return collection.count(filter_, session=session, **keywords)
    if name == "countDocuments":
        filter_ = args.take("filter", {})
        keywords = args.keywords(
            {
                "skip": "skip",
                "limit": "limit",
                "hint": "hint",
                "collation": "collation",
                "maxTimeMS": "max_time_ms",
                "comment": "comment",
                "timeoutMS": "timeout_ms",
            }
        )
        args.done()
        return collection.count_documents(filter_, session=session, **keywords)
    if name == "estimatedDocumentCount":
        if session is not None:
            raise UnsupportedFeature("estimatedDocumentCount takes no session")
        keywords = args.keywords(
            {"maxTimeMS": "max_time_ms", "comment": "comment", "timeoutMS": "timeout_ms"}
        )
        args.done()
        return collection.estimated_document_count(**keywords)
    if name == "distinct":
        key = args.require("fieldName")
        filter_ = args.take("filter")
        keywords = args.keywords(
            {
                "collation": "collation",
                "comment": "comment",
                "maxTimeMS": "max_time_ms",
                "timeoutMS": "timeout_ms",
            }
        )
        args.done()
        return collection.distinct(key, filter_, session=session, **keywords)
    if name in ("listIndexes", "listIndexNames"):
        keywords = args.keywords(
            {"batchSize": "batch_size", "comment": "comment", "timeoutMS": "timeout_ms"}
        )
        args.done()
        if name == "listIndexNames":
            return collection.list_index_names(session, **keywords)
        with collection.list_indexes(session, **keywords) as cursor:
            return Documents(cursor.to_list())
    if name == "insertOne":
        document = args.require("document")
        keywords = args.keywords(_WRITE)
        args.done()
        inserted = collection.insert_one(document, session=session, **keywords)
        return {"insertedId": inserted.inserted_id}
    if name == "insertMany":
        documents = args.require("documents")
        ordered = bool(args.take("ordered", True))
        keywords = args.keywords(_WRITE)
        args.done()
        many = collection.insert_many(documents, ordered, session=session, **keywords)
        return {"insertedIds": {str(i): v for i, v in enumerate(many.inserted_ids)}}
    if name in ("updateOne", "updateMany"):
        filter_ = args.require("filter")
        update = args.require("update")
        upsert = bool(args.take("upsert", False))
        keywords = args.keywords(_UPDATE if name == "updateMany" else dict(_UPDATE, sort="sort"))
        args.done()
        method = collection.update_one if name == "updateOne" else collection.update_many
        return update_result(method(filter_, update, upsert, session=session, **keywords))
    if name == "replaceOne":
        filter_ = args.require("filter")
        replacement = args.require("replacement")
        upsert = bool(args.take("upsert", False))
        keywords = args.keywords(
            {k: v for k, v in dict(_UPDATE, sort="sort").items() if k != "arrayFilters"}
        )
        args.done()
        return update_result(
            collection.replace_one(filter_, replacement, upsert, session=session, **keywords)
        )
    if name in ("deleteOne", "deleteMany"):
        filter_ = args.require("filter")
        keywords = args.keywords(_DELETE)
        args.done()
        method_d = collection.delete_one if name == "deleteOne" else collection.delete_many
        return delete_result(method_d(filter_, session=session, **keywords))
    if name == "findOneAndDelete":
        filter_ = args.require("filter")
        keywords = args.keywords(_FIND_AND_MODIFY)
        args.done()
        return collection.find_one_and_delete(filter_, session=session, **keywords)
    if name in ("findOneAndReplace", "findOneAndUpdate"):
        filter_ = args.require("filter")
        change = args.require("replacement" if name == "findOneAndReplace" else "update")
        upsert = bool(args.take("upsert", False))
        returned = _return_document(args.take("returnDocument"))
        more = dict(_FIND_AND_MODIFY, bypassDocumentValidation="bypass_document_validation")
        if name == "findOneAndUpdate":
            more["arrayFilters"] = "array_filters"
        keywords = args.keywords(more)
        args.done()
        method_f = (
            collection.find_one_and_replace
            if name == "findOneAndReplace"
            else collection.find_one_and_update
        )
        return method_f(
            filter_, change, upsert=upsert, return_document=returned, session=session, **keywords
        )
    if name == "bulkWrite":
        requests = [write_model(r, entities) for r in args.require("requests")]
        ordered = bool(args.take("ordered", True))
        keywords = args.keywords(
            {
                "bypassDocumentValidation": "bypass_document_validation",
                "let": "let",
                "comment": "comment",
                "timeoutMS": "timeout_ms",
            }
        )
        args.done()
        return bulk_write_result(
            collection.bulk_write(requests, ordered, session=session, **keywords)
        )
    if name == "drop":
        args.done()
        collection.drop(session)
        return None
    if name in {"rename", "renameCollection"}:  # the latter: newer files' name
        to = args.require("to")
        keywords = args.keywords({"dropTarget": "dropTarget"})
        args.done()
        collection.rename(to, session, **keywords)
        return None
    raise UnsupportedFeature(f"collection operation {name!r}")


# --- database operations ---------------------------------------------------------------


def database_operation(database: Database, name: str, args: Arguments) -> Any:
    session = args.session()
    if name == "runCommand":
        command = args.require("command")
        args.take("commandName")  # Python keeps the command's key order
        rp = args.take("readPreference")
        timeout = args.take("timeoutMS")
        args.done()
        return database.command(
            dict(command),
            read_preference=None if rp is None else read_preference(rp),
            session=session,
            timeout_ms=timeout,
        )
    if name == "aggregate":
        return _aggregate(database, args, session)
    if name in ("listCollections", "listCollectionObjects", "listCollectionNames"):
        filter_ = args.take("filter")
        keywords = args.keywords(
            {
                "batchSize": "batch_size",
                "comment": "comment",
                "authorizedCollections": "authorized_collections",
                "timeoutMS": "timeout_ms",
            }
        )
        if name == "listCollectionNames":
            args.done()
            return database.list_collection_names(session, filter_, **keywords)
        if args.take("nameOnly"):
            keywords["name_only"] = True
        args.done()
        with database.list_collections(session, filter_, **keywords) as cursor:
            return Documents(cursor.to_list())
    if name == "createCollection":
        collection = args.require("collection")
        # The other arguments are the create command's options (viewOn, pipeline, ...).
        options = args.rest()
        # check_exists=False: the operation is the create command alone (a check would
        # add a listCollections the tests' expected events do not have).
        database.create_collection(collection, session=session, check_exists=False, **options)
        return None
    if name == "dropCollection":
        collection = args.require("collection")
        args.done()
        database.drop_collection(collection, session)
        return None
    if name == "modifyCollection":
        # The collMod command, with the operation's other arguments as its fields.
        command: dict[str, Any] = {"collMod": args.require("collection")}
        command.update(args.rest())
        return database.command(command, session=session)
    raise UnsupportedFeature(f"database operation {name!r}")


# --- client operations --------------------------------------------------------------------


def client_operation(entity: ClientEntity, name: str, args: Arguments) -> Any:
    client = entity.client
    if name == "close":
        args.done()
        entity.close()
        return None
    if name in ("appendMetadata", "appendClientMetadata"):
        # The format's operation has had both names.
        options = dict(args.require("driverInfoOptions"))
        args.done()
        unknown = set(options) - {"name", "version", "platform"}
        if unknown:
            raise UnsupportedFeature(f"driverInfoOptions {sorted(unknown)}")
        info = DriverInfo(options["name"], options.get("version"), options.get("platform"))
        client.append_metadata(info)
        return None
    session = args.session()
    if name == "dropDatabase":
        database = args.require("database")
        args.done()
        client.drop_database(str(database), session)
        return None
    if name in ("listDatabases", "listDatabaseObjects", "listDatabaseNames"):
        keywords = args.keywords(
            {
                "filter": "filter",
                "nameOnly": "name_only",
                "authorizedDatabases": "authorized_databases",
                "comment": "comment",
                "timeoutMS": "timeout_ms",
            }
        )
        args.done()
        if name == "listDatabaseNames":
            keywords["name_only"] = True
        with client.list_databases(session, **keywords) as cursor:
            documents = cursor.to_list()
        if name == "listDatabaseNames":
            return [str(d["name"]) for d in documents]
        return Documents(documents)
    raise UnsupportedFeature(f"client operation {name!r}")


def session_operation(session: ClientSession, name: str, args: Arguments) -> Any:
    if name == "endSession":
        args.done()
        session.end_session()
        return None
    raise UnsupportedFeature(f"session operation {name!r}")


def session_options(document: Optional[Mapping[str, Any]]) -> SessionOptions:
    """entity.session.sessionOptions: causalConsistency and snapshot."""
    document = dict(document or {})
    causal = document.pop("causalConsistency", None)
    snapshot = bool(document.pop("snapshot", False))
    transactions = session_operations.default_transaction_options(
        document.pop("defaultTransactionOptions", None)
    )
    if document:
        raise UnsupportedFeature(f"session options {sorted(document)}")
    return SessionOptions(
        causal_consistency=causal, snapshot=snapshot, default_transaction_options=transactions
    )


def run(
    entities: EntityMap,
    target: Any,
    name: str,
    arguments: Optional[Mapping[str, Any]],
    execute: Optional[session_operations.Execute] = None,
) -> Any:
    """Run entity operation ``name`` on ``target`` and return its result as documents.
    ``execute`` runs the operations of a withTransaction callback."""
    if name in UNSUPPORTED:
        raise UnsupportedFeature(UNSUPPORTED[name])
    args = Arguments(name, arguments, entities)
    if cursor_operations.handles(target, name):
        result = cursor_operations.run(target, name, args)
        return Documents(result) if isinstance(result, list) else result
    if index_operations.handles(target, name):
        return index_operations.run(target, name, args)
    if find_cursor_operations.handles(target, name):
        return find_cursor_operations.run(target, name, args)
    if gridfs_operations.handles(target, name):
        return gridfs_operations.run(target, name, args)
    if change_stream_operations.handles(target, name):
        return change_stream_operations.run(target, name, args)
    if session_operations.handles(target, name):
        if execute is None:
            raise UnsupportedFeature(f"{name} without a test run to execute its callback")
        return session_operations.run(target, name, args, execute)
    if isinstance(target, ClientEntity):
        return client_operation(target, name, args)
    if isinstance(target, Collection):
        return collection_operation(target, name, args, entities)
    if isinstance(target, Database):
        return database_operation(target, name, args)
    if isinstance(target, ClientSession):
        return session_operation(target, name, args)
    raise UnsupportedFeature(f"operation {name!r} on a {type(target).__name__}")


#: Which command each operation sends first (for the seed transformations and the
#: fail point model of :mod:`tests.spec.unified.seed`).
COMMAND_OF: dict[str, str] = {
    "find": "find",
    "findOne": "find",
    "aggregate": "aggregate",
    "count": "count",
    "countDocuments": "aggregate",
    "estimatedDocumentCount": "count",
    "distinct": "distinct",
    "listIndexes": "listIndexes",
    "listIndexNames": "listIndexes",
    "listCollections": "listCollections",
    "listCollectionObjects": "listCollections",
    "listCollectionNames": "listCollections",
    "listDatabases": "listDatabases",
    "listDatabaseObjects": "listDatabases",
    "listDatabaseNames": "listDatabases",
    "insertOne": "insert",
    "insertMany": "insert",
    "updateOne": "update",
    "updateMany": "update",
    "replaceOne": "update",
    "deleteOne": "delete",
    "deleteMany": "delete",
    "findOneAndDelete": "findAndModify",
    "findOneAndReplace": "findAndModify",
    "findOneAndUpdate": "findAndModify",
    "createFindCursor": "find",
    "modifyCollection": "collMod",
    "createChangeStream": "aggregate",
    "createIndex": "createIndexes",
    "createIndexes": "createIndexes",
    "dropIndex": "dropIndexes",
    "dropIndexes": "dropIndexes",
    "dropDatabase": "dropDatabase",
}


def commands_of(operation: Mapping[str, Any]) -> Sequence[str]:
    """The commands an operation may send (bulkWrite: one per kind of request)."""
    name = operation["name"]
    if name == "bulkWrite":
        kinds: list[str] = []
        for request in (operation.get("arguments") or {}).get("requests", []):
            kind = next(iter(request))
            sent = {"insertOne": "insert", "deleteOne": "delete", "deleteMany": "delete"}.get(
                kind, "update"
            )
            if sent not in kinds:
                kinds.append(sent)
        return kinds
    if name == "runCommand":
        return [str((operation.get("arguments") or {}).get("commandName", ""))]
    bucket_commands = gridfs_operations.commands_of(operation)
    if bucket_commands is not None:
        return bucket_commands
    command = COMMAND_OF.get(name)
    return [command] if command else []
