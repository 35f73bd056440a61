"""The document store of a simulated deployment: mongomock, an oplog, and lagging replicas.

One ``DataStore`` holds a replica set's data (or a standalone's). Writes go to its
mongomock client, and each document-level change is appended to its oplog (oplog.py)
as a full post-image (or a deletion, or a catalog command) stamped with an optime and
the wall-clock time it was written. Each data-bearing member has a ``ReplicaView``
(replication.py): its own mongomock copy that applies oplog entries in order once
they are ``lag`` seconds old. A secondary serves reads from its view, so it sees the
primary's writes after its lag, and reports the optime it has applied as its
lastWrite. The oplog keeps the entries some copy has not applied yet.

This is not MongoDB's replication protocol: the store is the set's single source of
truth, so a newly elected primary always has every acknowledged write (nothing is
ever rolled back), and a lagging member's copy catches up as writes complete and
before it is read.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import mongomock
import mongomock.filtering
from bson import ObjectId, Timestamp
from bson import errors as bson_errors
from pymongo import errors as pymongo_errors

from mongocore.sim import by_id
from mongocore.sim.catalog import CollectionOptions
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, parse_collation
from mongocore.sim.oplog import (
    OPLOG_HISTORY,
    ZERO_OPTIME,
    Checkpoint,
    Oplog,
    OplogEntry,
    OplogObserver,
    OpTime,
)
from mongocore.sim.query import id_first, project, select
from mongocore.sim.sessions import SessionRecords
from mongocore.sim.unique_index import UniqueIndexes
from mongocore.sim.variables import Variables
from mongocore.sim.writes import (
    check_storable,
    check_update,
    has_positional,
    is_replacement,
    post_image,
    same_document,
)

__all__ = [
    "OPLOG_HISTORY",
    "ZERO_OPTIME",
    "Checkpoint",
    "DataStore",
    "OpTime",
    "OplogEntry",
    "OplogObserver",
    "translate_store_errors",
]

Document = dict[str, Any]
_NO_OPTIONS = CollectionOptions()
_log = logging.getLogger("mongocore.sim")

# mongomock knows {$type: "null"} but leaves it unimplemented; a server matches null.
if mongomock.filtering.TYPE_MAP.get("null", 0) is None:
    mongomock.filtering.TYPE_MAP["null"] = lambda value: value is None


def translate_store_errors(exc: BaseException, namespace: str) -> CommandError:
    """Turn what mongomock raises into the server's error. Its own query errors carry
    server-like messages; anything else is a request the document store could not
    process, refused without the Python exception's text."""
    if isinstance(exc, CommandError):
        return exc
    if isinstance(exc, pymongo_errors.DuplicateKeyError):
        return CommandError(11000, f"E11000 duplicate key error collection: {namespace}")
    if isinstance(exc, pymongo_errors.OperationFailure):
        code = exc.code if exc.code is not None else 2
        if code == 2 and "(immutable) field '_id'" in str(exc):
            code = 66  # ImmutableField, as a server answers an update that changes _id
        return CommandError(code, str(exc))
    _log.debug("document store failure on %s", namespace, exc_info=exc)
    if isinstance(exc, NotImplementedError):
        return CommandError(
            238, "this operation is not supported by the simulator's document store (mongomock)"
        )
    if isinstance(exc, bson_errors.InvalidDocument):
        return CommandError(2, "the document is not valid for storage")
    return CommandError(
        238, "the simulator's document store (mongomock) could not execute this request"
    )


def _sort_spec(sort: Optional[Mapping[str, Any]]) -> Optional[list[tuple[str, Any]]]:
    if not sort:
        return None
    return [(key, value) for key, value in sort.items()]


class DataStore(Oplog):
    """A deployment's data, its oplog and its session records. The owner serializes access."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__(clock)
        self.client: Any = mongomock.MongoClient()
        self.sessions = SessionRecords()
        #: Collection options (default collation, validator) and index collations.
        self.catalog: dict[tuple[str, str], CollectionOptions] = {}
        self.index_collations: dict[tuple[str, str, str], Collation] = {}
        #: Unique indexes' keys, kept up to date from the oplog (sim/unique_index.py).
        self.unique_indexes = UniqueIndexes(self.client)
        self.observers.append(self.unique_indexes)

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
        self._forget_since(checkpoint)

    # -- collections -----------------------------------------------------------------

    def collection(self, db: str, coll: str) -> Any:
        return self.client[db][coll]

    def collection_exists(self, db: str, coll: str) -> bool:
        return coll in self.client[db].list_collection_names()

    # -- writes ----------------------------------------------------------------------

    def options(self, db: str, coll: str) -> CollectionOptions:
        """The collection's options (its default collation, its validator)."""
        return self.catalog.get((db, coll), _NO_OPTIONS)

    def set_options(self, db: str, coll: str, options: CollectionOptions) -> None:
        self.catalog[(db, coll)] = options

    def modify_collection(
        self, db: str, coll: str, options: CollectionOptions, changes: Mapping[str, Any]
    ) -> None:
        """collMod: set the options and log the change (a change stream's modify event)."""
        self.set_options(db, coll, options)
        self._append("c", db, coll, command={"collMod": coll, **changes})

    def collation_for(self, db: str, coll: str, spec: Any) -> Optional[Collation]:
        """The collation an operation uses: its own (``spec``), else the collection's."""
        if spec is None:
            return self.options(db, coll).collation
        return parse_collation(spec)

    def index_collation(self, db: str, coll: str, name: str) -> Optional[Collation]:
        return self.index_collations.get((db, coll, name))

    def indexes(self, db: str, coll: str) -> list[tuple[str, Any, Optional[Collation]]]:
        """(name, index information, collation) of the collection's indexes."""
        if not self.collection_exists(db, coll):
            return []
        default = self.options(db, coll).collation
        info = self.collection(db, coll).index_information()
        return [
            (
                name,
                spec,
                self.index_collations.get((db, coll, name), default if name == "_id_" else None),
            )
            for name, spec in info.items()
        ]

    def insert(
        self,
        db: str,
        coll: str,
        document: Mapping[str, Any],
        *,
        bypass_validation: bool = False,
    ) -> None:
        """Insert one document (an ObjectId ``_id`` is added if missing, and ``_id`` is made
        the first field, as the server does)."""
        doc = id_first(document) if "_id" in document else {"_id": ObjectId(), **document}
        self._fill_empty_timestamps(doc)
        check_storable(doc)
        created = not self.collection_exists(db, coll)
        self.options(db, coll).check_document(doc, bypass=bypass_validation)
        self.unique_indexes.check(db, coll, doc, self.indexes(db, coll))
        self._insert_checked(db, coll, doc, created)
        self._append("i", db, coll, doc["_id"], doc=copy.deepcopy(doc))

    def _fill_empty_timestamps(self, doc: Document) -> None:
        """A server gives an empty timestamp (``Timestamp(0, 0)``) in a top-level field of
        an inserted document the current time, except in ``_id``, which it stores as
        given ("BSON Types", "Timestamps"); nested ones stay as they are."""
        for key, value in doc.items():
            if key != "_id" and type(value) is Timestamp and value.time == 0 and value.inc == 0:
                doc[key] = self.next_optime().ts

    def _insert_checked(self, db: str, coll: str, doc: Document, created: bool) -> None:
        """Store a document whose unique keys were checked. A collection an insert
        creates is created explicitly (and logged), as a server does: it stays once its
        documents are deleted, where mongomock would forget it."""
        if created:
            self.client[db].create_collection(coll)
        try:
            by_id.insert(self.client, db, coll, doc)
        except Exception as exc:
            if created:
                self.client[db].drop_collection(coll)
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        if created:
            self._append("c", db, coll, command={"create": coll})

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
        collation: Optional[Collation] = None,
        variables: Optional[Variables] = None,
        bypass_validation: bool = False,
    ) -> tuple[int, int, Optional[tuple[Any]]]:
        """Apply one update statement; returns (matched, modified, upserted), upserted
        being None or a 1-tuple of the inserted ``_id`` (which may itself be None).

        Each matched document's post-image is computed apart, checked (``_id``, the
        validator, unique indexes) and only then written, one document at a time, as a
        server does: a multi-update failing on its third document keeps the first two."""
        namespace = f"{db}.{coll}"
        if variables:
            query = variables.in_query(query)
            update = variables.in_pipeline(update)
        if multi and is_replacement(update):
            raise CommandError(9, "multi update is not supported for replacement-style update")
        check_update(update, array_filters)
        if collation is not None and has_positional(update):
            raise CommandError(
                238, "the positional $ operator with a collation is not supported by the simulator"
            )
        created = not self.collection_exists(db, coll)
        collection = self.collection(db, coll)
        options = self.options(db, coll)
        indexes = self.indexes(db, coll)
        unique = self.unique_indexes
        matched = modified = 0
        upserted: Optional[tuple[Any]] = None
        try:
            targets = select(collection, query, collation=collation, limit=0 if multi else 1)
            if not targets and upsert:
                image = post_image(
                    None, query, update, array_filters=array_filters, collation=collation
                )
                if "_id" not in image:
                    image = {"_id": ObjectId(), **image}
                check_storable(image)
                options.check_document(image, bypass=bypass_validation)
                unique.check(db, coll, image, indexes)
                self._insert_checked(db, coll, copy.deepcopy(image), created)
                upserted = (image["_id"],)
                self._append("u", db, coll, image["_id"], doc=copy.deepcopy(image), update=update)
            # Under a collation the scratch copy is matched by {} (its only document):
            # the binary query might not match it.
            scratch_query = query if collation is None else {}
            for pre in targets:
                matched += 1
                image = post_image(
                    pre, scratch_query, update, array_filters=array_filters, collation=collation
                )
                if same_document(pre, image):
                    continue
                options.check_document(image, pre, bypass=bypass_validation)
                unique.check(db, coll, image, indexes, replacing=pre["_id"])
                by_id.put(self.client, db, coll, pre["_id"], copy.deepcopy(image))
                modified += 1
                # Logged at once: the next document's unique keys are checked against it.
                self._append("u", db, coll, image["_id"], doc=copy.deepcopy(image), update=update)
        except CommandError:
            raise
        except Exception as exc:
            raise translate_store_errors(exc, namespace) from exc
        return matched, modified, upserted

    def delete(
        self,
        db: str,
        coll: str,
        query: Mapping[str, Any],
        limit: int,
        *,
        collation: Optional[Collation] = None,
        variables: Optional[Variables] = None,
    ) -> int:
        """Delete the matching documents (at most one if ``limit`` is 1); returns how many."""
        if variables:
            query = variables.in_query(query)
        if not self.collection_exists(db, coll):
            return 0
        collection = self.collection(db, coll)
        try:
            ids = [
                d["_id"]
                for d in select(collection, query, collation=collation, limit=1 if limit else 0)
            ]
            for doc_id in ids:
                by_id.remove(self.client, db, coll, doc_id)
        except CommandError:
            raise
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
        collation: Optional[Collation] = None,
        variables: Optional[Variables] = None,
        bypass_validation: bool = False,
    ) -> tuple[Optional[Document], dict[str, Any]]:
        """The findAndModify command: (value, lastErrorObject)."""
        collection = self.collection(db, coll)
        if variables:
            query = variables.in_query(query)
            update = variables.in_pipeline(update)
        if not remove:
            check_update(update, array_filters)
        try:
            targets = select(collection, query, collation=collation, sort=_sort_spec(sort), limit=1)
        except CommandError:
            raise
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        projection = dict(fields) if fields else None

        def image(doc_id: Any) -> Optional[Document]:
            found = list(collection.find({"_id": {"$eq": doc_id}}))
            return project(found, projection)[0] if found else None

        if remove:
            if not targets:
                return None, {"n": 0}
            doc_id = targets[0]["_id"]
            before = image(doc_id)
            self.delete(db, coll, {"_id": {"$eq": doc_id}}, 1)
            return before, {"n": 1}
        if not targets:
            if not upsert:
                return None, {"n": 0, "updatedExisting": False}
            _, _, upserted = self.update(
                db,
                coll,
                query,
                update,
                upsert=True,
                array_filters=array_filters,
                collation=collation,
                bypass_validation=bypass_validation,
            )
            upserted_id = upserted[0] if upserted is not None else None
            return image(upserted_id) if new else None, {
                "n": 1,
                "updatedExisting": False,
                "upserted": upserted_id,
            }
        doc_id = targets[0]["_id"]
        before = image(doc_id)
        target_query: dict[str, Any] = dict(query)
        if "_id" in target_query:
            target_query = {"$and": [dict(query), {"_id": doc_id}]}
        else:
            target_query["_id"] = doc_id
        self.update(
            db,
            coll,
            target_query,
            update,
            array_filters=array_filters,
            collation=collation,
            bypass_validation=bypass_validation,
        )
        return image(doc_id) if new else before, {"n": 1, "updatedExisting": True}

    def create_collection(
        self, db: str, coll: str, options: Optional[CollectionOptions] = None
    ) -> None:
        if self.collection_exists(db, coll):
            raise CommandError(48, f"Collection {db}.{coll} already exists.")
        self.client[db].create_collection(coll)
        if options is not None:
            self.catalog[(db, coll)] = options
        self._append("c", db, coll, command={"create": coll})

    def _forget(self, db: str, coll: Optional[str] = None) -> None:
        """Forget the options and index collations of a dropped collection (or database)."""
        for key in [k for k in self.catalog if k[0] == db and coll in (None, k[1])]:
            del self.catalog[key]
        for ikey in [k for k in self.index_collations if k[0] == db and coll in (None, k[1])]:
            del self.index_collations[ikey]

    def drop_collection(self, db: str, coll: str) -> Optional[int]:
        """Drop a collection; returns how many indexes it had, None if it did not exist."""
        if not self.collection_exists(db, coll):
            return None
        count = len(self.collection(db, coll).index_information())
        self.client[db].drop_collection(coll)
        self._forget(db, coll)
        self._append("c", db, coll, command={"drop": coll})
        return count

    def drop_database(self, db: str) -> None:
        self.client.drop_database(db)
        self._forget(db)
        self._append("c", db, "", command={"dropDatabase": 1})

    def create_indexes(self, db: str, coll: str, indexes: Sequence[Mapping[str, Any]]) -> None:
        created = not self.collection_exists(db, coll)
        # An index without a collation of its own takes the collection's default.
        default = self.options(db, coll).collation
        collations = {
            str(spec["name"]): (
                parse_collation(spec["collation"]) if spec.get("collation") is not None else default
            )
            for spec in indexes
        }
        try:
            _create_indexes(self.client, db, coll, indexes)
        except Exception as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        for name, collation in collations.items():
            if collation is not None:
                self.index_collations[(db, coll, name)] = collation
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
        self.index_collations.pop((db, coll, name), None)
        self._append("c", db, coll, command={"dropIndexes": coll, "index": name})

    def rename_collection(self, source: str, target: str, *, drop_target: bool) -> None:
        """renameCollection from ``db.coll`` to ``db.coll`` (the caller checked both names;
        an existing target is dropped first with ``drop_target``)."""
        target_db, _, target_coll = target.partition(".")
        if drop_target and self.collection_exists(target_db, target_coll):
            self.drop_collection(target_db, target_coll)
        _rename(self.client, source, target)
        source_db, _, source_coll = source.partition(".")
        self._move_catalog((source_db, source_coll), (target_db, target_coll))
        self._append(
            "c",
            source_db,
            source_coll,
            command={"renameCollection": source, "to": target, "dropTarget": drop_target},
        )

    def _move_catalog(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        """A renamed collection keeps its options (validator, collation, pre- and
        post-images) and its indexes' collations under its new name."""
        options = self.catalog.pop(source, None)
        if options is not None:
            self.catalog[target] = options
        for key in [k for k in self.index_collations if (k[0], k[1]) == source]:
            self.index_collations[(target[0], target[1], key[2])] = self.index_collations.pop(key)

    def replace_collection(self, db: str, coll: str, documents: Sequence[Document]) -> None:
        """Record what an aggregation's $out wrote: the target's new content (the target
        exists afterwards, empty or not, as on a server)."""
        if not self.collection_exists(db, coll):
            self.client[db].create_collection(coll)
        self._append("c", db, coll, command={"drop": coll})
        self._append("c", db, coll, command={"create": coll})
        for document in documents:
            self._append("u", db, coll, document.get("_id"), doc=copy.deepcopy(document))

    def log_apply_ops(self, command: Document) -> None:
        """Log a committed transaction: one ``applyOps`` entry (sim/apply_ops.py shapes
        it; sim/transactions.py applied its operations to the data already)."""
        self._append("c", "admin", "$cmd", command=command)


def _rename(client: Any, source: str, target: str) -> None:
    """Move a collection, its documents and indexes; across databases by copying them."""
    source_db, _, source_coll = source.partition(".")
    target_db, _, target_coll = target.partition(".")
    if source_db == target_db:
        client[source_db][source_coll].rename(target_coll)
        return
    src = client[source_db][source_coll]
    client[target_db].create_collection(target_coll)
    docs = list(src.find())
    if docs:
        client[target_db][target_coll].insert_many(docs)
    specs = [
        {"key": dict(info["key"]), "name": name, **_index_options(info)}
        for name, info in src.index_information().items()
    ]
    _create_indexes(client, target_db, target_coll, specs)
    client[source_db].drop_collection(source_coll)


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


def _index_options(info: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in ("key", "v", "ns")}
