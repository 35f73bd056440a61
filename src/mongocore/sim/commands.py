"""Command handlers of a simulated mongod: cursors, catalog and diagnostic commands (the
CRUD handlers are in :mod:`mongocore.sim.crud_commands`).

Each handler takes a ``CommandContext`` and returns the reply document shaped like a
MongoDB 7.0 server's (``n``, ``nModified``, ``upserted``, ``writeErrors`` with
``index``/``code``/``errmsg``, ``cursor`` with ``id``/``ns``/``firstBatch`` or
``nextBatch``), or raises ``CommandError``. Whether the member may run the command at
all (primary, secondary with secondaryOk, arbiter) is decided before, by the rules of
the command's entry in the registry (command_table.py).
"""

from __future__ import annotations

import datetime
import os
import platform
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, TypeVar

from bson import Binary, Int64

from mongocore.sim import change_streams
from mongocore.sim.catalog import PRE_AND_POST_IMAGES, create_options, modified_options
from mongocore.sim.change_log import collection_uuid
from mongocore.sim.codes import CommandError
from mongocore.sim.crud_commands import (
    aggregate_writes,
)
from mongocore.sim.engine.capped import ttl_refused as capped_ttl_refused
from mongocore.sim.engine.indexes import index_listing as listing
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.query import batch_size as _batch_size
from mongocore.sim.sessions import RetryableWrite
from mongocore.sim.store import DataStore, DataView

if TYPE_CHECKING:
    from mongocore.sim.member import Process

__all__ = [
    "BUILD_VERSION",
    "MAX_BSON_OBJECT_SIZE",
    "MAX_MESSAGE_SIZE_BYTES",
    "MAX_WIRE_VERSION",
    "MAX_WRITE_BATCH_SIZE",
    "CommandContext",
    "Cursor",
    "CursorTable",
    "Handler",
    "aggregate_writes",
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
    return compile_filter(flt).matches(dict(doc))


# -- cursors ---------------------------------------------------------------------------


@dataclass
class Cursor:
    id: int
    ns: str
    docs: list[Any]
    position: int = 0
    stream: Any = None  # a change stream (sim/change_streams.py): tailable, no docs


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

    def open_stream(self, ns: str, stream: Any) -> int:
        """Keep a change stream open as a cursor; returns its id."""
        cursor_id = random.randint(1, 2**63 - 1)
        self._cursors[cursor_id] = Cursor(cursor_id, ns, [], stream=stream)
        return cursor_id

    def find(self, cursor_id: int) -> Optional[Cursor]:
        return self._cursors.get(cursor_id)

    def discard(self, cursor_id: int) -> None:
        self._cursors.pop(cursor_id, None)

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
    reader: DataView  # the data reads see (the latest, or as of a secondary's optime)
    cursors: CursorTable
    data_members: int = 1  # data-bearing members, for write concern checks
    retryable: Optional[RetryableWrite] = None  # a retryable write's statements
    process: Optional[Process] = None  # the server running it, for what it reports of itself

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


# -- cursors ---------------------------------------------------------------------------


def cmd_get_more(ctx: CommandContext) -> Reply:
    cursor_id = ctx.target
    if not isinstance(cursor_id, int) or isinstance(cursor_id, bool):
        raise CommandError(14, "getMore requires a long cursor id")
    coll = ctx.cmd.get("collection")
    if not isinstance(coll, str):
        raise CommandError(40414, "BSON field 'getMore.collection' is missing but a required field")
    cursor = ctx.cursors.find(int(cursor_id))
    if cursor is not None and cursor.stream is not None:
        return change_streams.get_more(ctx, cursor, f"{ctx.db}.{coll}")
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
    return collection_uuid(db, coll)  # the UUID change events carry too


def cmd_list_collections(ctx: CommandContext) -> Reply:
    name_only = bool(ctx.cmd.get("nameOnly", False))
    flt = ctx.cmd.get("filter") or {}
    entries = []
    for name in ctx.reader.collection_names(ctx.db):
        entry: Reply
        options = ctx.store.options(ctx.db, name)
        # A time-series collection is listed as such, without a UUID or an _id index
        # (those are its buckets collection's, which the simulator does not model).
        kind = "timeseries" if options.timeseries is not None else "collection"
        if name_only:
            entry = {"name": name, "type": kind}
        elif options.timeseries is not None:
            entry = {
                "name": name,
                "type": kind,
                "options": options.to_document(),
                "info": {"readOnly": False},
            }
        else:
            entry = {
                "name": name,
                "type": kind,
                "options": options.to_document(),
                "info": {"readOnly": False, "uuid": _collection_uuid(ctx.db, name)},
                "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"},
            }
        if _matches(flt, entry):
            entries.append(entry)
    cursor = ctx.cmd.get("cursor") or {}
    batch = ctx.cursors.open(
        f"{ctx.db}.$cmd.listCollections", entries, _batch_size(cursor.get("batchSize"))
    )
    return {"cursor": batch, "ok": 1.0}


def _index_documents(ctx: CommandContext, coll: str) -> list[Reply]:
    return ctx.reader.index_documents(ctx.db, coll)


def cmd_list_indexes(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    if not ctx.reader.exists(ctx.db, coll):
        raise CommandError(26, f"ns does not exist: {ctx.db}.{coll}")
    docs = _index_documents(ctx, coll)
    options = ctx.cmd.get("cursor") or {}
    # The cursor is on the collection's namespace, as since MongoDB 4.4 (older servers
    # named it "<db>.$cmd.listIndexes.<coll>"); a getMore names the collection.
    batch = ctx.cursors.open(f"{ctx.db}.{coll}", docs, _batch_size(options.get("batchSize")))
    return {"cursor": batch, "ok": 1.0}


_SYSTEM_DATABASES = ("admin", "config", "local")


def cmd_list_databases(ctx: CommandContext) -> Reply:
    names = set(ctx.reader.database_names()) | set(_SYSTEM_DATABASES)
    databases: list[Reply] = []
    sizes: dict[str, int] = {}
    for name in sorted(names):
        count = sum(ctx.reader.count(name, c) for c in ctx.reader.collection_names(name))
        sizes[name] = 8192 + 64 * count
        databases.append({"name": name, "sizeOnDisk": Int64(sizes[name]), "empty": False})
    flt = ctx.cmd.get("filter") or {}
    databases = [d for d in databases if _matches(flt, d)]
    if ctx.cmd.get("nameOnly"):
        return {"databases": [{"name": d["name"]} for d in databases], "ok": 1.0}
    total = sum(sizes[str(d["name"])] for d in databases)
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
    ctx.store.create_collection(ctx.db, coll, create_options(ctx.cmd))
    return {"ok": 1.0}


def cmd_coll_mod(ctx: CommandContext) -> Reply:
    """collMod: the validator, validationLevel, validationAction and
    changeStreamPreAndPostImages (other options refused)."""
    coll = ctx.collection_name()
    if not ctx.store.collection_exists(ctx.db, coll):
        raise CommandError(26, f"ns does not exist: {ctx.db}.{coll}")
    options = modified_options(ctx.cmd, ctx.store.options(ctx.db, coll))
    changes = {name: ctx.cmd[name] for name in _COLL_MOD_LOGGED if name in ctx.cmd}
    ctx.store.modify_collection(ctx.db, coll, options, changes)
    return {"ok": 1.0}


# What a collMod's oplog entry records (a change stream's modify event describes it).
_COLL_MOD_LOGGED = (
    "validator",
    "validationLevel",
    "validationAction",
    PRE_AND_POST_IMAGES,
    "cappedSize",
    "cappedMax",
    "expireAfterSeconds",
)


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
    before = 0 if created else len(ctx.store.indexes(ctx.db, coll))
    _check_index_rules(ctx, coll, indexes)
    _check_index_conflicts(ctx.store.indexes(ctx.db, coll), indexes)
    ctx.store.create_indexes(ctx.db, coll, indexes)
    after = len(ctx.store.indexes(ctx.db, coll))
    reply: Reply = {
        "numIndexesBefore": before if not created else 1,
        "numIndexesAfter": after,
        "createdCollectionAutomatically": created,
    }
    if after == before:
        reply["note"] = "all indexes already exist"
    reply["ok"] = 1.0
    return reply


_INDEX_IDENTITY = ("v", "name", "key")
# What an _id index's specification may hold besides its key and name.
_ID_INDEX_FIELDS = ("key", "name", "v", "ns", "collation")


def _check_index_rules(ctx: CommandContext, coll: str, indexes: Sequence[Any]) -> None:
    """What a server refuses of an index for what it is: an option on the _id index
    (197), a TTL index on a capped collection (67), a unique index on a time-series
    collection."""
    options = ctx.store.options(ctx.db, coll)
    for spec in indexes:
        key = spec["key"]
        if list(key) == ["_id"] and key["_id"] == 1:
            for name in spec:
                if name not in _ID_INDEX_FIELDS:
                    raise CommandError(
                        197,
                        f"The field '{name}' is not valid for an _id index specification."
                        f" Specification: {dict(spec)}",
                    )
        if options.capped is not None and "expireAfterSeconds" in spec:
            raise capped_ttl_refused(ctx.namespace(coll))
        if options.timeseries is not None and spec.get("unique"):
            raise CommandError(
                238,
                "a unique index on a time-series collection is refused by a server; the "
                "simulator does not reproduce its error",
            )


def _index_options(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k not in _INDEX_IDENTITY and k != "ns"}


def _check_index_conflicts(
    existing: Sequence[Mapping[str, Any]], requested: Sequence[Mapping[str, Any]]
) -> None:
    """Refuse an index whose name or key an existing one has with another definition, as
    a server's createIndexes does (IndexKeySpecsConflict 86, IndexOptionsConflict 85)."""
    by_name = {str(doc["name"]): doc for doc in existing}
    for spec in (listing(s) for s in requested):
        key = list(spec["key"].items())
        name = str(spec["name"])
        current = by_name.get(name)
        if current is not None:
            if list(current["key"].items()) != key:
                raise CommandError(
                    86,
                    "An existing index has the same name as the requested index. When index"
                    " names are not specified, they are auto generated and can cause"
                    " conflicts. Please refer to our documentation. Requested index:"
                    f" {dict(spec)}, existing index: {dict(current)}",
                )
            options = {k: v for k, v in _index_options(spec).items() if k != "collation"}
            held = {k: v for k, v in _index_options(current).items() if k != "collation"}
            if options != held and name != "_id_":
                raise CommandError(
                    85,
                    "An existing index has the same name as the requested index but different"
                    f" options. Requested index: {dict(spec)}, existing index: {dict(current)}",
                )
            continue
        for other in existing:
            if list(other["key"].items()) == key and _index_options(other) == {
                k: v for k, v in _index_options(spec).items() if k != "collation"
            }:
                raise CommandError(
                    85, f"Index already exists with a different name: {other['name']}"
                )


def cmd_drop_indexes(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    if not ctx.store.collection_exists(ctx.db, coll):
        raise CommandError(26, f"ns not found {ctx.db}.{coll}")
    info = {str(doc["name"]): doc for doc in ctx.store.indexes(ctx.db, coll)}
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
        names = [name for name, spec in info.items() if list(spec["key"].items()) == wanted]
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


#: The server parameters the simulator knows the value of; any other is refused as a
#: server refuses a parameter it does not have, rather than answered empty.
_PARAMETERS: dict[str, Any] = {
    "featureCompatibilityVersion": {"version": BUILD_VERSION.rsplit(".", 1)[0]},
    # The mechanisms a community server offers (the simulator's users are SCRAM and
    # X.509 ones).
    "authenticationMechanisms": ["MONGODB-X509", "SCRAM-SHA-1", "SCRAM-SHA-256"],
    # A server with test commands (configureFailPoint, ...), started without the
    # test-only API version 2 and without requiring an API version.
    "enableTestCommands": True,
    "acceptApiVersion2": False,
    "requireApiVersion": False,
}
# getParameter's own fields, not parameter names.
_GET_PARAMETER_FIELDS = frozenset({"getParameter", "comment", "$db", "lsid", "$clusterTime"})


def cmd_get_parameter(ctx: CommandContext) -> Reply:
    target = ctx.target
    if target == "*" or (isinstance(target, Mapping) and target.get("allParameters")):
        names = list(_PARAMETERS)
    else:
        names = [
            name
            for name in ctx.cmd
            if name not in _GET_PARAMETER_FIELDS and not name.startswith("$")
        ]
        unknown = [name for name in names if name not in _PARAMETERS]
        if not names or unknown:
            raise CommandError(72, "no option found to get")
    reply: Reply = {name: _PARAMETERS[name] for name in names}
    reply["ok"] = 1.0
    return reply
