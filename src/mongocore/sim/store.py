"""The document store of a simulated deployment: mongomock, an oplog, and lagging replicas.

One ``DataStore`` holds a replica set's data (or a standalone's). Writes go to its
mongomock client, and each document-level change is appended to an oplog as a
full post-image (or a deletion, or a catalog command) stamped with an optime and
the wall-clock time it was written. Each data-bearing member has a ``ReplicaView``:
its own mongomock copy that applies oplog entries in order once they are ``lag``
seconds old. A secondary serves reads from its view, so it sees the primary's writes
after its lag, and reports the optime it has applied as its lastWrite.

This is not MongoDB's replication protocol: the store is the set's single source of
truth, so a newly elected primary always has every acknowledged write (nothing is
ever rolled back), and a lagging member's copy catches up lazily, when it is read.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Optional

import mongomock
import mongomock.filtering
from bson import Int64, ObjectId, Timestamp
from pymongo import errors as pymongo_errors

from mongocore.sim.codes import CommandError
from mongocore.sim.sessions import SessionRecords

__all__ = [
    "Checkpoint",
    "DataStore",
    "OpTime",
    "OplogEntry",
    "ReplicaView",
    "translate_store_errors",
]

Document = dict[str, Any]

# mongomock knows {$type: "null"} but leaves it unimplemented; a server matches null.
if mongomock.filtering.TYPE_MAP.get("null", 0) is None:
    mongomock.filtering.TYPE_MAP["null"] = lambda value: value is None


class OpTime(NamedTuple):
    """An operation time: the oplog timestamp, the election term, and the wall clock."""

    ts: Timestamp
    term: int
    wall: float

    def to_document(self) -> dict[str, Any]:
        return {"ts": self.ts, "t": Int64(self.term)}

    @property
    def wall_datetime(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.wall, datetime.timezone.utc)


ZERO_OPTIME = OpTime(Timestamp(0, 0), -1, 0.0)


class OplogEntry(NamedTuple):
    """One change: "u" (a document's full post-image), "d" (a deletion) or "c" (a command)."""

    optime: OpTime
    op: str
    db: str
    coll: str
    doc_id: Any = None
    doc: Optional[Document] = None
    command: Optional[Document] = None


class Checkpoint(NamedTuple):
    """One collection's content and the oplog's end, to undo a statement that must not commit."""

    db: str
    coll: str
    existed: bool
    documents: list[Document]
    oplog_end: int
    last_optime: OpTime


def translate_store_errors(exc: BaseException, namespace: str) -> CommandError:
    """Turn what mongomock raises into the server's error."""
    if isinstance(exc, pymongo_errors.DuplicateKeyError):
        return CommandError(11000, f"E11000 duplicate key error collection: {namespace}")
    if isinstance(exc, pymongo_errors.OperationFailure):
        code = exc.code if exc.code is not None else 2
        return CommandError(code, str(exc))
    if isinstance(exc, NotImplementedError):
        return CommandError(238, f"not supported by the simulator's document store: {exc}")
    if isinstance(exc, (ValueError, TypeError, KeyError)):
        return CommandError(2, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, pymongo_errors.PyMongoError):
        return CommandError(2, str(exc))
    return CommandError(1, f"{type(exc).__name__}: {exc}")


def _sort_spec(sort: Optional[Mapping[str, Any]]) -> Optional[list[tuple[str, Any]]]:
    if not sort:
        return None
    return [(key, value) for key, value in sort.items()]


def _is_replacement(update: Any) -> bool:
    return isinstance(update, Mapping) and not any(str(k).startswith("$") for k in update)


class DataStore:
    """A deployment's data, its oplog and its session records. The owner serializes access."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.client: Any = mongomock.MongoClient()
        self.sessions = SessionRecords()
        self.term = 1
        self._oplog: list[OplogEntry] = []
        self._oplog_base = 0  # absolute index of _oplog[0]
        self._views: list[ReplicaView] = []
        self.last_optime = ZERO_OPTIME

    # -- oplog ---------------------------------------------------------------------

    @property
    def oplog_end(self) -> int:
        return self._oplog_base + len(self._oplog)

    def entry(self, index: int) -> OplogEntry:
        return self._oplog[index - self._oplog_base]

    def next_optime(self) -> OpTime:
        """A new optime, strictly after the last one (timestamps are seconds + increment)."""
        wall = self.clock()
        last = self.last_optime.ts
        seconds = max(int(wall), last.time)
        increment = last.inc + 1 if seconds == last.time else 1
        optime = OpTime(Timestamp(seconds, increment), self.term, max(wall, self.last_optime.wall))
        self.last_optime = optime
        return optime

    def noop(self) -> OpTime:
        """Advance the optime without changing data (a new term's first entry)."""
        return self.next_optime()

    def _append(
        self,
        op: str,
        db: str,
        coll: str,
        doc_id: Any = None,
        *,
        doc: Optional[Document] = None,
        command: Optional[Document] = None,
    ) -> None:
        entry = OplogEntry(self.next_optime(), op, db, coll, doc_id, doc, command)
        if self._views:
            self._oplog.append(entry)
            self._trim()
        else:
            self._oplog_base += 1

    def _trim(self) -> None:
        keep_from = min(view.applied for view in self._views)
        drop = keep_from - self._oplog_base
        if drop > 0:
            del self._oplog[:drop]
            self._oplog_base = keep_from

    def new_view(self, lag: float = 0.0, *, initial_sync: bool = True) -> ReplicaView:
        """A member's copy; with ``initial_sync`` it starts as a copy of the current data."""
        view = ReplicaView(self, lag)
        if initial_sync:
            view.copy_from(self.client)
        view.applied = self.oplog_end
        view.applied_optime = self.last_optime
        self._views.append(view)
        return view

    def drop_view(self, view: ReplicaView) -> None:
        if view in self._views:
            self._views.remove(view)
        if self._views:
            self._trim()
        else:
            self._oplog_base += len(self._oplog)
            self._oplog.clear()

    def checkpoint(self, db: str, coll: str) -> Checkpoint:
        """Remember ``db.coll`` as it is, for :meth:`rollback` (the owner holds the lock)."""
        existed = self.collection_exists(db, coll)
        documents = copy.deepcopy(list(self.collection(db, coll).find())) if existed else []
        return Checkpoint(db, coll, existed, documents, self.oplog_end, self.last_optime)

    def rollback(self, checkpoint: Checkpoint) -> None:
        """Undo the writes to the checkpoint's collection since it was taken, and forget
        their oplog entries (no member can have applied them: the lock was held)."""
        db, coll = checkpoint.db, checkpoint.coll
        if not checkpoint.existed:
            self.client[db].drop_collection(coll)
        else:
            collection = self.collection(db, coll)
            collection.delete_many({})
            if checkpoint.documents:
                collection.insert_many(copy.deepcopy(checkpoint.documents))
        written = self.oplog_end - checkpoint.oplog_end
        if written > 0:
            if self._views:
                del self._oplog[len(self._oplog) - written :]
            else:
                self._oplog_base -= written
        self.last_optime = checkpoint.last_optime

    # -- collections -----------------------------------------------------------------

    def collection(self, db: str, coll: str) -> Any:
        return self.client[db][coll]

    def collection_exists(self, db: str, coll: str) -> bool:
        return coll in self.client[db].list_collection_names()

    # -- writes ----------------------------------------------------------------------

    def insert(self, db: str, coll: str, document: Mapping[str, Any]) -> None:
        """Insert one document (an ObjectId ``_id`` is added if missing, as the server does)."""
        doc = dict(document)
        if "_id" not in doc:
            doc = {"_id": ObjectId(), **doc}
        created = not self.collection_exists(db, coll)
        collection = self.collection(db, coll)
        if collection.find_one({"_id": doc["_id"]}, {"_id": 1}) is not None:
            raise CommandError(
                11000,
                f"E11000 duplicate key error collection: {db}.{coll} index: _id_"
                f" dup key: {{ _id: {doc['_id']!r} }}",
                extra={"keyPattern": {"_id": 1}, "keyValue": {"_id": doc["_id"]}},
            )
        try:
            collection.insert_one(doc)
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        if created:
            self._append("c", db, coll, command={"create": coll})
        self._append("u", db, coll, doc["_id"], doc=copy.deepcopy(doc))

    def update(
        self,
        db: str,
        coll: str,
        query: Mapping[str, Any],
        update: Any,
        *,
        multi: bool = False,
        upsert: bool = False,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
    ) -> tuple[int, int, Any]:
        """Apply one update statement; returns (matched, modified, upserted _id or None)."""
        created = not self.collection_exists(db, coll)
        collection = self.collection(db, coll)
        try:
            ids = [d["_id"] for d in collection.find(query, {"_id": 1}, limit=0 if multi else 1)]
            if multi and _is_replacement(update):
                raise CommandError(9, "multi update is not supported for replacement-style update")
            kwargs: dict[str, Any] = {"upsert": upsert}
            if array_filters:
                kwargs["array_filters"] = list(array_filters)
            if _is_replacement(update):
                # Replace the matched document by its _id: mongomock would copy a
                # filter's _id condition ({_id: {$gt: 1}}) into the replacement.
                target = {"_id": ids[0]} if ids else query
                if not ids and upsert and "_id" in update and update["_id"] is None:
                    # mongomock refuses an upserted replacement's own _id when it is
                    # null; the server inserts the replacement as it is.
                    target = {"_id": update["_id"]}
                result = collection.replace_one(target, update, upsert=upsert)
            elif multi:
                result = collection.update_many(query, update, **kwargs)
            else:
                result = collection.update_one(query, update, **kwargs)
        except CommandError:
            raise
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        upserted = result.upserted_id
        if upserted is not None:
            ids = [upserted]
        changed = upserted is not None or result.modified_count > 0
        if changed and created:
            self._append("c", db, coll, command={"create": coll})
        if changed:
            for doc_id in ids:
                image = collection.find_one({"_id": doc_id})
                if image is not None:
                    self._append("u", db, coll, doc_id, doc=image)
        matched = 0 if upserted is not None else int(result.matched_count)
        return matched, int(result.modified_count), upserted

    def delete(self, db: str, coll: str, query: Mapping[str, Any], limit: int) -> int:
        """Delete the matching documents (at most one if ``limit`` is 1); returns how many."""
        if not self.collection_exists(db, coll):
            return 0
        collection = self.collection(db, coll)
        try:
            ids = [d["_id"] for d in collection.find(query, {"_id": 1}, limit=1 if limit else 0)]
            for doc_id in ids:
                collection.delete_one({"_id": doc_id})
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        for doc_id in ids:
            self._append("d", db, coll, doc_id)
        return len(ids)

    def find_and_modify(
        self,
        db: str,
        coll: str,
        *,
        query: Mapping[str, Any],
        sort: Optional[Mapping[str, Any]],
        remove: bool,
        update: Any,
        new: bool,
        fields: Optional[Mapping[str, Any]],
        upsert: bool,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
    ) -> tuple[Optional[Document], dict[str, Any]]:
        """The findAndModify command: (value, lastErrorObject)."""
        collection = self.collection(db, coll)
        try:
            targets = list(collection.find(query, {"_id": 1}, sort=_sort_spec(sort), limit=1))
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        projection = dict(fields) if fields else None
        if remove:
            if not targets:
                return None, {"n": 0}
            doc_id = targets[0]["_id"]
            before = collection.find_one({"_id": doc_id}, projection)
            self.delete(db, coll, {"_id": doc_id}, 1)
            return before, {"n": 1}
        if not targets:
            if not upsert:
                return None, {"n": 0, "updatedExisting": False}
            _, _, upserted = self.update(
                db, coll, query, update, upsert=True, array_filters=array_filters
            )
            value = collection.find_one({"_id": upserted}, projection) if new else None
            return value, {"n": 1, "updatedExisting": False, "upserted": upserted}
        doc_id = targets[0]["_id"]
        before = collection.find_one({"_id": doc_id}, projection)
        target_query: dict[str, Any] = dict(query)
        if "_id" in target_query:
            target_query = {"$and": [dict(query), {"_id": doc_id}]}
        else:
            target_query["_id"] = doc_id
        self.update(db, coll, target_query, update, array_filters=array_filters)
        value = collection.find_one({"_id": doc_id}, projection) if new else before
        return value, {"n": 1, "updatedExisting": True}

    def create_collection(self, db: str, coll: str) -> None:
        if self.collection_exists(db, coll):
            raise CommandError(48, f"Collection {db}.{coll} already exists.")
        self.client[db].create_collection(coll)
        self._append("c", db, coll, command={"create": coll})

    def drop_collection(self, db: str, coll: str) -> Optional[int]:
        """Drop a collection; returns how many indexes it had, None if it did not exist."""
        if not self.collection_exists(db, coll):
            return None
        count = len(self.collection(db, coll).index_information())
        self.client[db].drop_collection(coll)
        self._append("c", db, coll, command={"drop": coll})
        return count

    def drop_database(self, db: str) -> None:
        self.client.drop_database(db)
        self._append("c", db, "", command={"dropDatabase": 1})

    def create_indexes(self, db: str, coll: str, indexes: Sequence[Mapping[str, Any]]) -> None:
        created = not self.collection_exists(db, coll)
        try:
            _create_indexes(self.client, db, coll, indexes)
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        if created:
            self._append("c", db, coll, command={"create": coll})
        self._append(
            "c", db, coll, command={"createIndexes": coll, "indexes": [dict(i) for i in indexes]}
        )

    def drop_index(self, db: str, coll: str, name: str) -> None:
        try:
            self.collection(db, coll).drop_index(name)
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        self._append("c", db, coll, command={"dropIndexes": coll, "index": name})

    def replace_collection(self, db: str, coll: str, documents: Sequence[Document]) -> None:
        """Record what an aggregation's $out wrote: the target's new content."""
        self._append("c", db, coll, command={"drop": coll})
        self._append("c", db, coll, command={"create": coll})
        for document in documents:
            self._append("u", db, coll, document.get("_id"), doc=copy.deepcopy(document))


def _create_indexes(client: Any, db: str, coll: str, indexes: Sequence[Mapping[str, Any]]) -> None:
    collection = client[db][coll]
    if coll not in client[db].list_collection_names():
        client[db].create_collection(coll)
    for spec in indexes:
        key = spec["key"]
        keys = [(k, v) for k, v in key.items()]
        options = {k: v for k, v in spec.items() if k not in ("key", "v", "ns")}
        if keys == [("_id", 1)]:
            continue
        collection.create_index(keys, **options)


class ReplicaView:
    """A member's own copy of the data, ``lag`` seconds behind the oplog."""

    def __init__(self, store: DataStore, lag: float) -> None:
        self.store = store
        self.lag = lag
        self.client: Any = mongomock.MongoClient()
        self.applied = 0  # absolute oplog index of the next entry to apply
        self.applied_optime = ZERO_OPTIME

    def copy_from(self, source: Any) -> None:
        """Initial sync: copy every collection, its documents and its indexes."""
        for db_name in source.list_database_names():
            for coll_name in source[db_name].list_collection_names():
                src = source[db_name][coll_name]
                self.client[db_name].create_collection(coll_name)
                docs = list(src.find())
                if docs:
                    self.client[db_name][coll_name].insert_many(docs)
                specs = [
                    {"key": dict(info["key"]), "name": name, **_index_options(info)}
                    for name, info in src.index_information().items()
                ]
                _create_indexes(self.client, db_name, coll_name, specs)

    def catch_up(self, now: float) -> None:
        """Apply every entry written at least ``lag`` seconds before ``now``."""
        cutoff = now - self.lag
        store = self.store
        while self.applied < store.oplog_end:
            entry = store.entry(self.applied)
            if entry.optime.wall > cutoff:
                break
            self._apply(entry)
            self.applied += 1
            self.applied_optime = entry.optime
        if self.applied >= store.oplog_end and store.last_optime.wall <= cutoff:
            # Entries that were never logged (no-ops) still advance the applied optime.
            self.applied_optime = max(self.applied_optime, store.last_optime)

    def next_apply_time(self, after: Timestamp) -> Optional[float]:
        """When the first entry with a timestamp >= ``after`` will be applied, if logged."""
        store = self.store
        for index in range(self.applied, store.oplog_end):
            entry = store.entry(index)
            if entry.optime.ts >= after:
                return entry.optime.wall + self.lag
        return None

    def _apply(self, entry: OplogEntry) -> None:
        client = self.client
        try:
            if entry.op == "u":
                client[entry.db][entry.coll].replace_one(
                    {"_id": entry.doc_id}, copy.deepcopy(entry.doc), upsert=True
                )
            elif entry.op == "d":
                client[entry.db][entry.coll].delete_one({"_id": entry.doc_id})
            elif entry.command is not None:
                self._apply_command(entry.db, entry.command)
        except pymongo_errors.PyMongoError:
            # A transient conflict of full images (a unique index) cannot stop replication.
            pass

    def _apply_command(self, db: str, command: Mapping[str, Any]) -> None:
        client = self.client
        if "create" in command:
            if command["create"] not in client[db].list_collection_names():
                client[db].create_collection(command["create"])
        elif "drop" in command:
            client[db].drop_collection(command["drop"])
        elif "dropDatabase" in command:
            client.drop_database(db)
        elif "createIndexes" in command:
            _create_indexes(client, db, command["createIndexes"], command["indexes"])
        elif "dropIndexes" in command:
            client[db][command["dropIndexes"]].drop_index(command["index"])


def _index_options(info: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in ("key", "v", "ns")}
