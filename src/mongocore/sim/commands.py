"""Command handlers of a simulated mongod: CRUD, cursors, catalog and diagnostic commands.

Each handler takes a ``CommandContext`` and returns the reply document shaped like a
MongoDB 7.0 server's (``n``, ``nModified``, ``upserted``, ``writeErrors`` with
``index``/``code``/``errmsg``, ``cursor`` with ``id``/``ns``/``firstBatch`` or
``nextBatch``), or raises ``CommandError``. Whether the member may run the command at
all (primary, secondary with secondaryOk, arbiter) is decided by the member before;
``COMMANDS`` tells it each command's kind.
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

from bson import Binary, Int64
from bson.son import SON
from mongomock import filtering

from mongocore.sim.codes import CommandError
from mongocore.sim.sessions import RetryableWrite
from mongocore.sim.store import DataStore, translate_store_errors

__all__ = [
    "BUILD_VERSION",
    "COMMANDS",
    "MAX_BSON_OBJECT_SIZE",
    "MAX_MESSAGE_SIZE_BYTES",
    "MAX_WIRE_VERSION",
    "MAX_WRITE_BATCH_SIZE",
    "CommandContext",
    "CommandSpec",
    "Cursor",
    "CursorTable",
    "build_info",
]

MAX_WIRE_VERSION = 21
MIN_WIRE_VERSION = 0
BUILD_VERSION = "7.0.12"
MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE_BYTES = 48_000_000
MAX_WRITE_BATCH_SIZE = 100_000
DEFAULT_FIRST_BATCH = 101

Reply = dict[str, Any]
T = TypeVar("T")


def _matches(flt: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    return bool(filtering.filter_applies(flt, doc))  # type: ignore[no-untyped-call]


# -- cursors ---------------------------------------------------------------------------


@dataclass
class Cursor:
    id: int
    ns: str
    docs: list[Any]
    position: int = 0


class CursorTable:
    """The open cursors of one process (cursors do not move between members)."""

    def __init__(self) -> None:
        self._cursors: dict[int, Cursor] = {}

    def __len__(self) -> int:
        return len(self._cursors)

    def open(
        self, ns: str, docs: list[Any], batch_size: Optional[int], single_batch: bool = False
    ) -> Reply:
        """A reply's ``cursor`` document for a new result set, keeping the rest open."""
        size = DEFAULT_FIRST_BATCH if batch_size is None else batch_size
        first = docs[:size]
        if single_batch or len(first) >= len(docs):
            return {"firstBatch": first, "id": Int64(0), "ns": ns}
        cursor_id = random.randint(1, 2**63 - 1)
        self._cursors[cursor_id] = Cursor(cursor_id, ns, docs, len(first))
        return {"firstBatch": first, "id": Int64(cursor_id), "ns": ns}

    def get_more(self, cursor_id: int, ns: str, batch_size: Optional[int]) -> Reply:
        cursor = self._cursors.get(cursor_id)
        if cursor is None:
            raise CommandError(43, f"cursor id {cursor_id} not found")
        if cursor.ns != ns:
            raise CommandError(
                13, f"Requested getMore on namespace '{ns}', but cursor belongs to '{cursor.ns}'"
            )
        end = len(cursor.docs) if not batch_size else cursor.position + batch_size
        batch = cursor.docs[cursor.position : end]
        cursor.position += len(batch)
        if cursor.position >= len(cursor.docs):
            del self._cursors[cursor_id]
            cursor_id = 0
        return {"nextBatch": batch, "id": Int64(cursor_id), "ns": ns}

    def has(self, cursor_id: int) -> bool:
        return cursor_id in self._cursors

    def kill(self, cursor_ids: Sequence[int]) -> tuple[list[int], list[int]]:
        killed, not_found = [], []
        for cursor_id in cursor_ids:
            if self._cursors.pop(int(cursor_id), None) is not None:
                killed.append(int(cursor_id))
            else:
                not_found.append(int(cursor_id))
        return killed, not_found

    def clear(self) -> None:
        self._cursors.clear()


# -- context ---------------------------------------------------------------------------


@dataclass
class CommandContext:
    """Everything a handler needs: the command, its database, the data, the cursors."""

    name: str
    db: str
    cmd: Mapping[str, Any]
    store: DataStore
    reader: Any  # the mongomock client reads come from (the primary's or a lagging view)
    cursors: CursorTable
    data_members: int = 1  # data-bearing members, for write concern checks
    retryable: Optional[RetryableWrite] = None  # a retryable write's statements

    @property
    def target(self) -> Any:
        return self.cmd[self.name]

    def collection_name(self) -> str:
        value = self.cmd[self.name]
        if not isinstance(value, str) or not value:
            raise CommandError(
                73, f"collection name has invalid type {type(value).__name__}: {value!r}"
            )
        return value

    def namespace(self, coll: Optional[str] = None) -> str:
        return f"{self.db}.{coll if coll is not None else self.collection_name()}"

    def executed(self, stmt_id: int) -> Optional[Reply]:
        """A retryable write's statement an earlier attempt applied: its recorded result."""
        return None if self.retryable is None else self.retryable.executed(stmt_id)

    def write(
        self,
        stmt_id: int,
        coll: str,
        apply: Callable[[], T],
        result: Callable[[T], Mapping[str, Any]],
    ) -> T:
        """Apply one statement; a retryable write's statement is recorded (and may meet the
        ``onPrimaryTransactionalWrite`` fail point)."""
        if self.retryable is None:
            return apply()
        return self.retryable.write(stmt_id, self.db, coll, apply, result)


Handler = Callable[[CommandContext], Reply]


@dataclass(frozen=True)
class CommandSpec:
    """A command's handler and kind: "read", "write", "cursor" or "any"."""

    handler: Handler
    kind: str
    admin_only: bool = False
    retryable_write: bool = False


# -- writes ----------------------------------------------------------------------------


def _documents(ctx: CommandContext, field: str) -> list[Mapping[str, Any]]:
    docs = ctx.cmd.get(field)
    if not isinstance(docs, list):
        raise CommandError(9, f"BSON field '{ctx.name}.{field}' is missing but a required field")
    return docs


def _write_error(index: int, error: CommandError) -> Reply:
    entry: Reply = {"index": index, "code": error.code, "errmsg": error.errmsg}
    entry.update(error.extra)
    return entry


def _write_reply(n: int, errors: list[Reply], **extra: Any) -> Reply:
    reply: Reply = {"n": n}
    reply.update(extra)
    if errors:
        reply["writeErrors"] = errors
    reply["ok"] = 1.0
    return reply


def cmd_insert(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    ordered = bool(ctx.cmd.get("ordered", True))
    n = 0
    errors: list[Reply] = []
    for index, doc in enumerate(_documents(ctx, "documents")):
        prior = ctx.executed(index)
        if prior is not None:
            n += int(prior["n"])
            continue
        try:
            ctx.write(
                index, coll, functools.partial(ctx.store.insert, ctx.db, coll, doc), _inserted
            )
            n += 1
        except CommandError as exc:
            errors.append(_write_error(index, exc))
            if ordered:
                break
    return _write_reply(n, errors)


def _inserted(_: None) -> Reply:
    return {"n": 1}


def _updated(outcome: tuple[int, int, Any]) -> Reply:
    matched, changed, upserted_id = outcome
    if upserted_id is not None:
        return {"n": 1, "nModified": 0, "upserted": upserted_id}
    return {"n": matched, "nModified": changed}


def cmd_update(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    ordered = bool(ctx.cmd.get("ordered", True))
    n = modified = 0
    upserted: list[Reply] = []
    errors: list[Reply] = []
    for index, statement in enumerate(_documents(ctx, "updates")):
        if "sort" in statement:
            # An update statement's sort is MongoDB 8.0's; 7.0 parses it as unknown.
            raise CommandError(40415, "BSON field 'update.updates.sort' is an unknown field.")
        result = ctx.executed(index)
        if result is None:
            apply = functools.partial(
                ctx.store.update,
                ctx.db,
                coll,
                statement.get("q", {}),
                statement.get("u", {}),
                multi=bool(statement.get("multi", False)),
                upsert=bool(statement.get("upsert", False)),
                array_filters=statement.get("arrayFilters"),
            )
            try:
                result = _updated(ctx.write(index, coll, apply, _updated))
            except CommandError as exc:
                errors.append(_write_error(index, exc))
                if ordered:
                    break
                continue
        n += int(result["n"])
        modified += int(result["nModified"])
        if "upserted" in result:
            upserted.append({"index": index, "_id": result["upserted"]})
    extra: dict[str, Any] = {}
    if upserted:
        extra["upserted"] = upserted
    extra["nModified"] = modified
    return _write_reply(n, errors, **extra)


def _deleted(count: int) -> Reply:
    return {"n": count}


def cmd_delete(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    ordered = bool(ctx.cmd.get("ordered", True))
    n = 0
    errors: list[Reply] = []
    for index, statement in enumerate(_documents(ctx, "deletes")):
        limit = statement.get("limit", 0)
        if limit not in (0, 1):
            errors.append(
                _write_error(
                    index, CommandError(9, "The limit field in delete objects must be 0 or 1")
                )
            )
            if ordered:
                break
            continue
        prior = ctx.executed(index)
        if prior is not None:
            n += int(prior["n"])
            continue
        apply = functools.partial(
            ctx.store.delete, ctx.db, coll, statement.get("q", {}), int(limit)
        )
        try:
            n += ctx.write(index, coll, apply, _deleted)
        except CommandError as exc:
            errors.append(_write_error(index, exc))
            if ordered:
                break
    return _write_reply(n, errors)


def cmd_find_and_modify(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    cmd = ctx.cmd
    remove = bool(cmd.get("remove", False))
    if remove == ("update" in cmd):
        raise CommandError(9, "Either an update or remove=true must be specified")
    if remove and (cmd.get("new") or cmd.get("upsert")):
        raise CommandError(9, "Cannot specify both new=true and remove=true or upsert=true")
    prior = ctx.executed(0)
    if prior is not None:
        # A retried findAndModify is answered from the recorded images.
        return {**prior, "ok": 1.0}
    apply = functools.partial(
        ctx.store.find_and_modify,
        ctx.db,
        coll,
        query=cmd.get("query") or {},
        sort=cmd.get("sort"),
        remove=remove,
        update=cmd.get("update"),
        new=bool(cmd.get("new", False)),
        fields=cmd.get("fields"),
        upsert=bool(cmd.get("upsert", False)),
        array_filters=cmd.get("arrayFilters"),
    )
    value, last_error = ctx.write(0, coll, apply, _found_and_modified)
    return {"lastErrorObject": last_error, "value": value, "ok": 1.0}


def _found_and_modified(outcome: tuple[Optional[Reply], Reply]) -> Reply:
    value, last_error = outcome
    return {"lastErrorObject": dict(last_error), "value": value}


# -- reads -----------------------------------------------------------------------------


def _batch_size(value: Any) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise CommandError(
            51024, f"BSON field 'batchSize' value must be >= 0, actual value '{value}'"
        )
    return int(value)


def _sort_list(sort: Any) -> Optional[list[tuple[str, Any]]]:
    if not sort:
        return None
    return [(key, value) for key, value in dict(sort).items()]


def _index_keys(cmd: Mapping[str, Any], docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """returnKey: each document becomes the key of the index the query used. The
    simulator plans with the _id index only, when the sort or the hint is on _id;
    otherwise the query is a collection scan and the keys are empty (as a server's)."""
    used = [cmd.get(option) for option in ("hint", "sort")]
    if cmd.get("hint") == "_id_" or any(
        isinstance(spec, Mapping) and list(spec) == ["_id"] for spec in used
    ):
        return [{"_id": doc["_id"]} for doc in docs if "_id" in doc]
    return [{} for _ in docs]


def cmd_find(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    cmd = ctx.cmd
    if cmd.get("tailable") or cmd.get("awaitData"):
        raise CommandError(238, "tailable cursors are not supported by the simulator")
    limit = int(cmd.get("limit", 0) or 0)
    if limit < 0:
        raise CommandError(51024, f"BSON field 'limit' value must be >= 0, actual value '{limit}'")
    try:
        cursor = ctx.reader[ctx.db][coll].find(
            cmd.get("filter") or {}, cmd.get("projection") or None
        )
        sort = _sort_list(cmd.get("sort"))
        if sort:
            cursor = cursor.sort(sort)
        if cmd.get("skip"):
            cursor = cursor.skip(int(cmd["skip"]))
        if limit:
            cursor = cursor.limit(limit)
        docs = list(cursor)
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    if cmd.get("returnKey"):
        docs = _index_keys(cmd, docs)
    elif cmd.get("showRecordId"):
        docs = [{**doc, "$recordId": Int64(n)} for n, doc in enumerate(docs, 1)]
    batch = ctx.cursors.open(
        ctx.namespace(coll), docs, _batch_size(cmd.get("batchSize")), bool(cmd.get("singleBatch"))
    )
    return {"cursor": batch, "ok": 1.0}


_WRITE_STAGES = ("$out", "$merge")


def aggregate_writes(cmd: Mapping[str, Any]) -> bool:
    """Does the pipeline end in $out or $merge (a write that needs the primary)?"""
    pipeline = cmd.get("pipeline")
    return bool(
        isinstance(pipeline, list)
        and pipeline
        and isinstance(pipeline[-1], Mapping)
        and any(stage in pipeline[-1] for stage in _WRITE_STAGES)
    )


def cmd_aggregate(ctx: CommandContext) -> Reply:
    cmd = ctx.cmd
    if not isinstance(cmd.get("pipeline"), list):
        raise CommandError(14, "'pipeline' option must be specified as an array")
    if cmd.get("explain"):
        raise CommandError(238, "explain is not supported by the simulator")
    if "cursor" not in cmd:
        raise CommandError(
            9, "The 'cursor' option is required, except for aggregate with the explain argument"
        )
    if ctx.target == 1:
        raise CommandError(
            238, "database-level aggregation (aggregate: 1) is not supported by the simulator"
        )
    coll = ctx.collection_name()
    pipeline = list(cmd["pipeline"])
    writes = aggregate_writes(cmd)
    read_concern = cmd.get("readConcern")
    if writes and isinstance(read_concern, Mapping) and read_concern.get("level") == "linearizable":
        raise CommandError(
            72, "readConcern level 'linearizable' is not supported with an $out or $merge stage"
        )
    source = ctx.store.client if writes else ctx.reader
    try:
        docs = list(source[ctx.db][coll].aggregate(pipeline))
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    if writes:
        out = pipeline[-1]["$out"]
        out_db, out_coll = (
            (out.get("db", ctx.db), out["coll"]) if isinstance(out, Mapping) else (ctx.db, out)
        )
        ctx.store.replace_collection(
            out_db, out_coll, list(ctx.store.client[out_db][out_coll].find())
        )
        docs = []
    options = cmd.get("cursor") or {}
    batch = ctx.cursors.open(ctx.namespace(coll), docs, _batch_size(options.get("batchSize")))
    return {"cursor": batch, "ok": 1.0}


def cmd_count(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    cmd = ctx.cmd
    kwargs: dict[str, Any] = {}
    if cmd.get("skip"):
        kwargs["skip"] = int(cmd["skip"])
    if cmd.get("limit"):
        kwargs["limit"] = abs(int(cmd["limit"]))
    try:
        n = ctx.reader[ctx.db][coll].count_documents(cmd.get("query") or {}, **kwargs)
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    return {"n": n, "ok": 1.0}


def cmd_distinct(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    key = ctx.cmd.get("key")
    if not isinstance(key, str):
        raise CommandError(14, "BSON field 'distinct.key' is missing but a required field")
    try:
        values = ctx.reader[ctx.db][coll].distinct(key, ctx.cmd.get("query") or {})
    except Exception as exc:
        raise translate_store_errors(exc, ctx.namespace(coll)) from exc
    return {"values": sorted(values, key=filtering.BsonComparable), "ok": 1.0}


def cmd_get_more(ctx: CommandContext) -> Reply:
    cursor_id = ctx.target
    if not isinstance(cursor_id, int) or isinstance(cursor_id, bool):
        raise CommandError(14, "getMore requires a long cursor id")
    coll = ctx.cmd.get("collection")
    if not isinstance(coll, str):
        raise CommandError(40414, "BSON field 'getMore.collection' is missing but a required field")
    batch = ctx.cursors.get_more(
        int(cursor_id), f"{ctx.db}.{coll}", _batch_size(ctx.cmd.get("batchSize"))
    )
    return {"cursor": batch, "ok": 1.0}


def cmd_kill_cursors(ctx: CommandContext) -> Reply:
    ctx.collection_name()
    ids = ctx.cmd.get("cursors")
    if not isinstance(ids, list):
        raise CommandError(
            40414, "BSON field 'killCursors.cursors' is missing but a required field"
        )
    killed, not_found = ctx.cursors.kill(ids)
    return {
        "cursorsKilled": [Int64(i) for i in killed],
        "cursorsNotFound": [Int64(i) for i in not_found],
        "cursorsAlive": [],
        "cursorsUnknown": [],
        "ok": 1.0,
    }


# -- catalog ---------------------------------------------------------------------------


def _collection_uuid(db: str, coll: str) -> Binary:
    value: Binary = Binary(uuid.uuid5(uuid.NAMESPACE_URL, f"mongocore-sim:{db}.{coll}").bytes, 4)
    return value


def cmd_list_collections(ctx: CommandContext) -> Reply:
    name_only = bool(ctx.cmd.get("nameOnly", False))
    flt = ctx.cmd.get("filter") or {}
    entries = []
    for name in sorted(ctx.reader[ctx.db].list_collection_names()):
        entry: Reply
        if name_only:
            entry = {"name": name, "type": "collection"}
        else:
            entry = {
                "name": name,
                "type": "collection",
                "options": {},
                "info": {"readOnly": False, "uuid": _collection_uuid(ctx.db, name)},
                "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"},
            }
        if _matches(flt, entry):
            entries.append(entry)
    options = ctx.cmd.get("cursor") or {}
    batch = ctx.cursors.open(
        f"{ctx.db}.$cmd.listCollections", entries, _batch_size(options.get("batchSize"))
    )
    return {"cursor": batch, "ok": 1.0}


def _index_documents(collection: Any) -> list[Reply]:
    docs = []
    for name, info in collection.index_information().items():
        doc: Reply = {"v": info.get("v", 2), "key": SON(list(info["key"])), "name": name}
        for option, value in info.items():
            if option not in ("v", "key", "ns"):
                doc[option] = value
        docs.append(doc)
    return docs


def cmd_list_indexes(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    if coll not in ctx.reader[ctx.db].list_collection_names():
        raise CommandError(26, f"ns does not exist: {ctx.db}.{coll}")
    docs = _index_documents(ctx.reader[ctx.db][coll])
    options = ctx.cmd.get("cursor") or {}
    batch = ctx.cursors.open(
        f"{ctx.db}.$cmd.listIndexes.{coll}", docs, _batch_size(options.get("batchSize"))
    )
    return {"cursor": batch, "ok": 1.0}


_SYSTEM_DATABASES = ("admin", "config", "local")


def cmd_list_databases(ctx: CommandContext) -> Reply:
    names = set(ctx.reader.list_database_names()) | set(_SYSTEM_DATABASES)
    databases = []
    for name in sorted(names):
        count = sum(
            ctx.reader[name][c].estimated_document_count()
            for c in ctx.reader[name].list_collection_names()
        )
        databases.append({"name": name, "sizeOnDisk": Int64(8192 + 64 * count), "empty": False})
    flt = ctx.cmd.get("filter") or {}
    databases = [d for d in databases if _matches(flt, d)]
    if ctx.cmd.get("nameOnly"):
        return {"databases": [{"name": d["name"]} for d in databases], "ok": 1.0}
    total = sum(int(d["sizeOnDisk"]) for d in databases)
    return {
        "databases": databases,
        "totalSize": Int64(total),
        "totalSizeMb": Int64(total // (1024 * 1024)),
        "ok": 1.0,
    }


def cmd_create(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    if ctx.cmd.get("viewOn") is not None:
        raise CommandError(238, "views are not supported by the simulator")
    ctx.store.create_collection(ctx.db, coll)
    return {"ok": 1.0}


def cmd_drop(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    indexes = ctx.store.drop_collection(ctx.db, coll)
    if indexes is None:
        # Since 7.0, dropping a collection that does not exist succeeds.
        return {"ok": 1.0}
    return {"nIndexesWas": indexes, "ns": ctx.namespace(coll), "ok": 1.0}


def cmd_drop_database(ctx: CommandContext) -> Reply:
    ctx.store.drop_database(ctx.db)
    return {"dropped": ctx.db, "ok": 1.0}


def cmd_create_indexes(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    indexes = ctx.cmd.get("indexes")
    if not isinstance(indexes, list) or not indexes:
        raise CommandError(9, "Must specify at least one index to create")
    for spec in indexes:
        if not isinstance(spec, Mapping) or not isinstance(spec.get("key"), Mapping):
            raise CommandError(
                9, "The 'key' field is a required property of an index specification"
            )
        if not isinstance(spec.get("name"), str):
            raise CommandError(
                9, "The 'name' field is a required property of an index specification"
            )
    created = not ctx.store.collection_exists(ctx.db, coll)
    before = 0 if created else len(ctx.store.collection(ctx.db, coll).index_information())
    ctx.store.create_indexes(ctx.db, coll, indexes)
    after = len(ctx.store.collection(ctx.db, coll).index_information())
    reply: Reply = {
        "numIndexesBefore": before if not created else 1,
        "numIndexesAfter": after,
        "createdCollectionAutomatically": created,
    }
    if after == before:
        reply["note"] = "all indexes already exist"
    reply["ok"] = 1.0
    return reply


def cmd_drop_indexes(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    if not ctx.store.collection_exists(ctx.db, coll):
        raise CommandError(26, f"ns not found {ctx.db}.{coll}")
    info = ctx.store.collection(ctx.db, coll).index_information()
    index = ctx.cmd.get("index")
    names: list[str]
    if index == "*":
        names = [name for name in info if name != "_id_"]
    elif isinstance(index, str):
        names = [index]
    elif isinstance(index, list):
        names = [str(name) for name in index]
    elif isinstance(index, Mapping):
        wanted = list(index.items())
        names = [name for name, spec in info.items() if list(spec["key"]) == wanted]
        if not names:
            raise CommandError(27, f"can't find index with key: {dict(index)}")
    else:
        raise CommandError(14, "dropIndexes 'index' must be a string, an array or a document")
    for name in names:
        if name == "_id_":
            raise CommandError(72, "cannot drop _id index")
        if name not in info:
            raise CommandError(27, f"index not found with name [{name}]")
    for name in names:
        ctx.store.drop_index(ctx.db, coll, name)
    return {"nIndexesWas": len(info), "ok": 1.0}


# -- diagnostics and sessions ----------------------------------------------------------


def cmd_ping(ctx: CommandContext) -> Reply:
    return {"ok": 1.0}


def build_info() -> Reply:
    parts = [int(p) for p in BUILD_VERSION.split(".")]
    return {
        "version": BUILD_VERSION,
        "gitVersion": "0" * 40,
        "modules": [],
        "allocator": "tcmalloc",
        "javascriptEngine": "mozjs",
        "sysInfo": "deprecated",
        "versionArray": [*parts, 0],
        "bits": 64,
        "debug": False,
        "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
        "storageEngines": ["devnull", "inMemory", "wiredTiger"],
        "buildEnvironment": {
            "target_os": platform.system().lower(),
            "target_arch": platform.machine(),
        },
        "ok": 1.0,
    }


def cmd_build_info(ctx: CommandContext) -> Reply:
    return build_info()


def cmd_end_sessions(ctx: CommandContext) -> Reply:
    return {"ok": 1.0}


def cmd_whatsmyuri(ctx: CommandContext) -> Reply:
    return {"you": "127.0.0.1", "ok": 1.0}


def cmd_connection_status(ctx: CommandContext) -> Reply:
    return {"authInfo": {"authenticatedUsers": [], "authenticatedUserRoles": []}, "ok": 1.0}


def cmd_host_info(ctx: CommandContext) -> Reply:
    return {
        "system": {
            "currentTime": datetime.datetime.now(datetime.timezone.utc),
            "hostname": platform.node(),
            "cpuAddrSize": 64,
            "numCores": os.cpu_count() or 1,
        },
        "os": {"type": platform.system(), "name": platform.platform()},
        "extra": {},
        "ok": 1.0,
    }


def cmd_get_parameter(ctx: CommandContext) -> Reply:
    reply: Reply = {}
    if ctx.cmd.get("featureCompatibilityVersion") is not None or ctx.target == "*":
        reply["featureCompatibilityVersion"] = {"version": BUILD_VERSION.rsplit(".", 1)[0]}
    reply["ok"] = 1.0
    return reply


COMMANDS: dict[str, CommandSpec] = {
    "insert": CommandSpec(cmd_insert, "write", retryable_write=True),
    "update": CommandSpec(cmd_update, "write", retryable_write=True),
    "delete": CommandSpec(cmd_delete, "write", retryable_write=True),
    "findAndModify": CommandSpec(cmd_find_and_modify, "write", retryable_write=True),
    "create": CommandSpec(cmd_create, "write"),
    "drop": CommandSpec(cmd_drop, "write"),
    "dropDatabase": CommandSpec(cmd_drop_database, "write"),
    "createIndexes": CommandSpec(cmd_create_indexes, "write"),
    "dropIndexes": CommandSpec(cmd_drop_indexes, "write"),
    "find": CommandSpec(cmd_find, "read"),
    "aggregate": CommandSpec(cmd_aggregate, "read"),
    "count": CommandSpec(cmd_count, "read"),
    "distinct": CommandSpec(cmd_distinct, "read"),
    "listCollections": CommandSpec(cmd_list_collections, "read"),
    "listIndexes": CommandSpec(cmd_list_indexes, "read"),
    "listDatabases": CommandSpec(cmd_list_databases, "read", admin_only=True),
    "getMore": CommandSpec(cmd_get_more, "cursor"),
    "killCursors": CommandSpec(cmd_kill_cursors, "cursor"),
    "ping": CommandSpec(cmd_ping, "any"),
    "buildInfo": CommandSpec(cmd_build_info, "any"),
    "buildinfo": CommandSpec(cmd_build_info, "any"),
    "endSessions": CommandSpec(cmd_end_sessions, "any"),
    "killAllSessions": CommandSpec(cmd_end_sessions, "any"),
    "killSessions": CommandSpec(cmd_end_sessions, "any"),
    "refreshSessions": CommandSpec(cmd_end_sessions, "any"),
    "whatsmyuri": CommandSpec(cmd_whatsmyuri, "any"),
    "connectionStatus": CommandSpec(cmd_connection_status, "any"),
    "hostInfo": CommandSpec(cmd_host_info, "any"),
    "getParameter": CommandSpec(cmd_get_parameter, "any", admin_only=True),
}
"""The data and diagnostic commands of a mongod; hello, fail points and replica-set
commands are the member's own."""
