"""The change log of a simulated replica set: what its change streams read from the oplog.

A 7.0 server builds change events from its oplog (change streams spec, "Response
Format"; the server's change stream stages). The simulator's oplog holds full
post-images, so the change log watches each entry as the store appends it and keeps
what an event needs that the entry does not carry: the document as it was before the
write (for ``updateDescription`` and pre-images), whether ``changeStreamPreAndPostImages``
was enabled when it was written, and the catalog (collection options, index specs) that
DDL events describe. Each oplog entry becomes zero or more :class:`ChangeRecord`, each
at its own stream position: one per operation of a transaction's ``applyOps`` entry, and
for a ``dropDatabase`` one drop per collection and then the dropDatabase itself.

The log keeps the newest ``retention`` records; resuming before the oldest one fails
with ChangeStreamHistoryLost, as resuming from a point that fell off a server's oplog.
"""

from __future__ import annotations

import threading
import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import bson
from bson import Binary, Int64

from mongocore.sim.catalog import PRE_AND_POST_IMAGES
from mongocore.sim.resume_token import Position, event_position
from mongocore.sim.store import Checkpoint, DataStore, OplogEntry, OpTime

__all__ = [
    "DEFAULT_RETENTION",
    "ChangeLog",
    "ChangeRecord",
    "attach_change_log",
    "change_log_of",
    "collection_uuid",
]

Document = dict[str, Any]
Namespace = tuple[str, str]

#: Records a change log keeps (a server's oplog is sized in bytes instead).
DEFAULT_RETENTION = 10_000

_ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}


def collection_uuid(db: str, coll: str) -> Binary:
    """The UUID the simulator gives ``db.coll`` (listCollections reports the same)."""
    value: Binary = Binary(uuid.uuid5(uuid.NAMESPACE_URL, f"mongocore-sim:{db}.{coll}").bytes, 4)
    return value


@dataclass(frozen=True)
class ChangeRecord:
    """One change event as the oplog gives it, before a stream's options shape it."""

    position: Position
    op: str  # the event's operationType
    db: str
    coll: str  # "" for dropDatabase
    optime: OpTime
    entry: int  # absolute oplog index of the entry it comes from
    uuid: Optional[Binary] = None
    key: Optional[Document] = None  # documentKey
    post: Optional[Document] = None  # the document after the write (insert, update, replace)
    pre: Optional[Document] = None  # the document before it (update, replace, delete)
    images: bool = False  # changeStreamPreAndPostImages was enabled when it was written
    update: Any = None  # the update an "update" event applied (operators or a pipeline)
    to: Optional[Namespace] = None  # a rename's target
    description: Optional[Document] = None  # operationDescription (expanded events)
    state_before: Optional[Document] = None  # a modify's stateBeforeChange
    txn: Optional[Document] = None  # lsid and txnNumber of an event from a transaction


@dataclass
class _Collection:
    uuid: Binary
    options: Document = field(default_factory=dict)  # as of its last create or collMod
    indexes: dict[str, Document] = field(default_factory=dict)
    documents: dict[bytes, Document] = field(default_factory=dict)  # by encoded _id


def _id_key(doc_id: Any) -> bytes:
    # _id values can be documents or arrays: their BSON is the exact, hashable identity.
    return bson.encode({"_id": doc_id})


def _is_replacement(update: Any) -> bool:
    return isinstance(update, Mapping) and not any(str(k).startswith("$") for k in update)


class _Batch:
    """The records one oplog entry produces, numbered in order (txnOpIndex)."""

    def __init__(self, entry: OplogEntry, index: int, txn: Optional[Document]) -> None:
        self.entry = entry
        self.index = index
        self.txn = txn
        self.records: list[ChangeRecord] = []

    def add(self, op: str, db: str, coll: str, **fields: Any) -> None:
        position = event_position(self.entry.optime.ts, len(self.records))
        self.records.append(
            ChangeRecord(
                position, op, db, coll, self.entry.optime, self.index, txn=self.txn, **fields
            )
        )


class ChangeLog:
    """The change records of one replica set's oplog (the store's owner holds the lock)."""

    def __init__(
        self,
        store: DataStore,
        notify: Callable[[], None] = lambda: None,
        *,
        retention: int = DEFAULT_RETENTION,
    ) -> None:
        self.store = store
        self.retention = retention
        self._notify = notify
        self._records: list[ChangeRecord] = []
        self._positions: list[Position] = []
        self._lost: Optional[Position] = None  # the newest position trimmed away
        self._catalog: dict[Namespace, _Collection] = {}
        self._load(store)

    # -- reading -------------------------------------------------------------------------

    def after(self, position: Position) -> Iterator[ChangeRecord]:
        """The records after ``position``, in stream order."""
        start = bisect_right(self._positions, position)
        return iter(self._records[start:])

    def find(self, position: Position) -> Optional[ChangeRecord]:
        """The record of the event at ``position`` (the invalidate flag ignored)."""
        wanted = position._replace(event=True, invalidate=False)
        index = bisect_left(self._positions, wanted)
        if index < len(self._positions) and self._positions[index] == wanted:
            return self._records[index]
        return None

    def lost(self, position: Position) -> bool:
        """Have records after ``position`` been trimmed away?"""
        return self._lost is not None and position < self._lost

    def trim(self, keep: int = 0) -> None:
        """Forget all but the newest ``keep`` records (as a server's oplog rolls over)."""
        drop = len(self._records) - max(0, keep)
        if drop <= 0:
            return
        self._lost = self._positions[drop - 1]
        del self._records[:drop]
        del self._positions[:drop]

    # -- the store's observer ------------------------------------------------------------

    def appended(self, entry: OplogEntry, index: int) -> None:
        """The store appended ``entry`` at absolute oplog index ``index``."""
        batch = _Batch(entry, index, _transaction_of(entry))
        self._apply(batch, entry.op, entry.db, entry.coll, entry)
        if not batch.records:
            return
        self._records.extend(batch.records)
        self._positions.extend(record.position for record in batch.records)
        if len(self._records) > self.retention + max(1, self.retention // 8):
            self.trim(self.retention)
        self._notify()

    def rolled_back(self, checkpoint: Checkpoint) -> None:
        """The store undid the writes to one collection since ``checkpoint``."""
        while self._records and self._records[-1].entry >= checkpoint.oplog_end:
            self._records.pop()
            self._positions.pop()
        ns = (checkpoint.db, checkpoint.coll)
        if not checkpoint.existed:
            self._catalog.pop(ns, None)
            return
        collection = self._collection(ns)
        collection.documents = {
            _id_key(doc["_id"]): doc for doc in self.store.documents(ns[0], ns[1])
        }

    # -- building records ----------------------------------------------------------------

    def _load(self, store: DataStore) -> None:
        data = store.latest
        for db in data.database_names():
            for coll in data.collection_names(db):
                collection = self._collection((db, coll))
                for spec in data.index_documents(db, coll):
                    if spec["name"] != "_id_":
                        collection.indexes[str(spec["name"])] = _index_spec(spec)
                for doc in data.documents(db, coll):
                    collection.documents[_id_key(doc["_id"])] = doc

    def _images_enabled(self, ns: Namespace) -> bool:
        option = self.store.options(*ns).extra.get(PRE_AND_POST_IMAGES)
        return isinstance(option, Mapping) and bool(option.get("enabled"))

    def _options(self, ns: Namespace) -> Document:
        return dict(self.store.options(*ns).to_document())

    def _collection(self, ns: Namespace) -> _Collection:
        collection = self._catalog.get(ns)
        if collection is None:
            collection = self._catalog[ns] = _Collection(collection_uuid(*ns))
        return collection

    def _apply(self, batch: _Batch, op: str, db: str, coll: str, source: Any) -> None:
        if op == "c":
            command = _field(source, "command")
            if isinstance(command, Mapping):
                self._command(batch, db, coll, command)
            return
        if op not in ("i", "u", "d"):
            return  # no-ops and what the simulator does not log
        ns = (db, coll)
        collection = self._collection(ns)
        doc_id = _field(source, "doc_id")
        key = _id_key(doc_id)
        common = {"uuid": collection.uuid, "key": {"_id": doc_id}}
        images = self._images_enabled(ns)
        pre = collection.documents.get(key)
        if op == "d":
            collection.documents.pop(key, None)
            batch.add("delete", db, coll, pre=pre, images=images, **common)
            return
        post = _field(source, "doc")
        if not isinstance(post, Mapping):
            return
        collection.documents[key] = dict(post)
        update = _field(source, "update")
        if op == "i" or pre is None:
            batch.add("insert", db, coll, post=post, **common)
        elif _is_replacement(update):
            batch.add("replace", db, coll, post=post, pre=pre, images=images, **common)
        else:
            batch.add(
                "update", db, coll, post=post, pre=pre, images=images, update=update, **common
            )

    def _command(self, batch: _Batch, db: str, coll: str, command: Mapping[str, Any]) -> None:
        if isinstance(command.get("applyOps"), Sequence):
            self._unwind(batch, command["applyOps"])
        elif "renameCollection" in command:
            self._rename(batch, command)
        elif "dropDatabase" in command:
            for ns in sorted(n for n in self._catalog if n[0] == db):
                self._drop(batch, ns)
            batch.add("dropDatabase", db, "")
        elif "create" in command:
            ns = (db, str(command["create"]))
            collection = self._collection(ns)
            collection.options = self._options(ns)
            description = {**collection.options, "idIndex": dict(_ID_INDEX)}
            batch.add("create", *ns, uuid=collection.uuid, description=description)
        elif "drop" in command:
            self._drop(batch, (db, str(command["drop"])))
        elif "createIndexes" in command:
            ns = (db, str(command["createIndexes"]))
            collection = self._collection(ns)
            specs = [_index_spec(spec) for spec in command.get("indexes") or []]
            specs = [spec for spec in specs if spec.get("name") != "_id_"]
            for spec in specs:
                collection.indexes[str(spec.get("name"))] = spec
            if specs:
                description = {"indexes": specs}
                batch.add("createIndexes", *ns, uuid=collection.uuid, description=description)
        elif "dropIndexes" in command:
            ns = (db, str(command["dropIndexes"]))
            collection = self._collection(ns)
            name = str(command.get("index"))
            spec = collection.indexes.pop(name, {"v": 2, "name": name})
            description = {"indexes": [spec]}
            batch.add("dropIndexes", *ns, uuid=collection.uuid, description=description)
        elif "collMod" in command:
            ns = (db, str(command["collMod"]))
            collection = self._collection(ns)
            changes = {k: v for k, v in command.items() if k != "collMod"}
            before = {"uuid": collection.uuid, **collection.options}
            collection.options = self._options(ns)
            batch.add(
                "modify",
                *ns,
                uuid=collection.uuid,
                description=changes,
                state_before={"collectionOptions": before},
            )

    def _drop(self, batch: _Batch, ns: Namespace) -> None:
        collection = self._catalog.pop(ns, None)
        uuid_ = collection.uuid if collection is not None else collection_uuid(*ns)
        batch.add("drop", *ns, uuid=uuid_)

    def _rename(self, batch: _Batch, command: Mapping[str, Any]) -> None:
        source = _split(str(command["renameCollection"]))
        target = _split(str(command.get("to", "")))
        collection = self._catalog.pop(source, None) or _Collection(collection_uuid(*source))
        description: Document = {"to": {"db": target[0], "coll": target[1]}}
        if command.get("dropTarget"):
            dropped = self._catalog.pop(target, None)
            description["dropTarget"] = (
                dropped.uuid if dropped is not None else collection_uuid(*target)
            )
        self._catalog[target] = collection
        batch.add("rename", *source, uuid=collection.uuid, to=target, description=description)

    def _unwind(self, batch: _Batch, operations: Sequence[Any]) -> None:
        """A transaction's applyOps entry: one record per operation, in order."""
        for operation in operations:
            if isinstance(operation, OplogEntry):
                self._apply(batch, operation.op, operation.db, operation.coll, operation)
            elif isinstance(operation, Mapping):
                op = str(operation.get("op", ""))
                db, coll = _split(str(operation.get("ns", "")))
                self._apply(batch, op, db, coll, _MappedOperation(op, operation))


class _MappedOperation:
    """An applyOps operation in the server's shape: op, ns, o, o2 (and the update)."""

    def __init__(self, op: str, operation: Mapping[str, Any]) -> None:
        o = operation.get("o")
        o2 = operation.get("o2")
        self.command = o if op == "c" else None
        self.doc = o if op in ("i", "u") else None
        ident = o2 if isinstance(o2, Mapping) and "_id" in o2 else o
        self.doc_id = ident.get("_id") if isinstance(ident, Mapping) else None
        self.update = operation.get("update")


def _field(source: Any, name: str) -> Any:
    return getattr(source, name, None)


def _split(ns: str) -> Namespace:
    db, _, coll = ns.partition(".")
    return db, coll


def _index_spec(spec: Mapping[str, Any]) -> Document:
    """An index as a 7.0 server describes it in an event: v, key, name, then its options."""
    out: Document = {"v": int(spec.get("v", 2))}
    key = spec.get("key")
    out["key"] = dict(key) if isinstance(key, Mapping) else dict(key or [])
    out["name"] = spec.get("name")
    for option, value in spec.items():
        if option not in ("v", "key", "name", "ns"):
            out[option] = value
    return out


def _transaction_of(entry: OplogEntry) -> Optional[Document]:
    """lsid and txnNumber of a transaction's applyOps entry, as its events carry them."""
    command = entry.command
    if entry.op != "c" or not isinstance(command, Mapping) or "applyOps" not in command:
        return None
    lsid = command.get("lsid", _field(entry, "lsid"))
    txn_number = command.get("txnNumber", _field(entry, "txn_number"))
    if lsid is None or txn_number is None:
        return None
    return {"txnNumber": Int64(txn_number), "lsid": lsid}


def attach_change_log(store: DataStore, cond: threading.Condition) -> ChangeLog:
    """Give a replica set's store a change log; appends wake waiters on ``cond``."""

    def notify() -> None:
        with cond:
            cond.notify_all()

    log = ChangeLog(store, notify)
    store.observers.append(log)
    return log


def change_log_of(store: DataStore) -> Optional[ChangeLog]:
    """The store's change log; None for a standalone's store, which has none."""
    return next((o for o in store.observers if isinstance(o, ChangeLog)), None)
