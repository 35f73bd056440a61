"""The document store of a simulated deployment: the engine's versioned collections, an
oplog, and the data as of any recent optime.

One ``DataStore`` holds a replica set's data (or a standalone's): its collections are
the engine's (:class:`mongocore.sim.engine.store.Collection`), each write stamped with
the optime of the oplog entry (oplog.py) that records it, as a full post-image (or a
deletion, or a catalog command) with the wall-clock time it was written. The catalog
keeps each collection's incarnations (created at one optime, dropped at a later one),
so that :meth:`DataStore.view` gives the data as of any optime within the history
window: what a lagging secondary reads (as of the optime it has applied,
replication.py) and what a snapshot read sees (as of its ``atClusterTime``), at a
cost that depends on the writes since then, never on the length of the history.

History is kept for ``HISTORY_WINDOW`` seconds (a 7.0 server's default
``minSnapshotHistoryWindowInSeconds``) and for as long as a member has not applied a
write; a read older than that is refused with SnapshotTooOld (239).

This is not MongoDB's replication protocol: the store is the set's single source of
truth, so a newly elected primary always has every acknowledged write (nothing is
ever rolled back).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from bson import ObjectId, Timestamp
from bson.son import SON

from mongocore.sim.catalog import CollectionOptions
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, parse_collation
from mongocore.sim.engine import capped, crud, timeseries
from mongocore.sim.engine.context import MatchContext, OperatorTable
from mongocore.sim.engine.indexes import IndexSpec, make_index
from mongocore.sim.engine.indexes import index_listing as listing
from mongocore.sim.engine.search import collection_operators, geo_near_parser
from mongocore.sim.engine.stages.registry import StageProvider
from mongocore.sim.engine.store import ID_INDEX, Collection, SnapshotTooOld
from mongocore.sim.oplog import (
    OPLOG_HISTORY,
    ZERO_OPTIME,
    Checkpoint,
    Oplog,
    OplogEntry,
    OplogObserver,
    OpTime,
)
from mongocore.sim.query import id_first, match_context, update_for_engine
from mongocore.sim.sessions import SessionRecords
from mongocore.sim.store_errors import snapshot_too_old, translate_store_errors
from mongocore.sim.variables import Variables
from mongocore.sim.writes import check_storable, check_update, is_replacement

__all__ = [
    "HISTORY_WINDOW",
    "OPLOG_HISTORY",
    "ZERO_OPTIME",
    "Checkpoint",
    "DataStore",
    "DataView",
    "OpTime",
    "OplogEntry",
    "OplogObserver",
    "stamp_of",
    "translate_store_errors",
]

Document = dict[str, Any]
Namespace = tuple[str, str]
_NO_OPTIONS = CollectionOptions()

#: Seconds of document history kept for reads in the past (minSnapshotHistoryWindowInSeconds).
HISTORY_WINDOW = 300.0
# History is trimmed at most this often (seconds of the deployment's clock).
_TRIM_INTERVAL = 1.0
# ... or when the oplog holds this many entries no member has applied.
_TRIM_ENTRIES = 4096


def stamp_of(ts: Timestamp) -> int:
    """The engine's stamp of an oplog timestamp: one integer, ordered as timestamps are."""
    return (ts.time << 32) | ts.inc


#: Each collection's operator table: the matcher's, with ``$text`` and the geo operators
#: over the collection's own indexes (read when a query compiles, so one table serves
#: while indexes come and go).
_OPERATORS: weakref.WeakKeyDictionary[Collection, OperatorTable] = weakref.WeakKeyDictionary()


def operators_of(collection: Collection) -> OperatorTable:
    """The collection's operator table: its queries can use ``$text``, ``$near``,
    ``$geoWithin``, ... over its own indexes, as a server's can."""
    table = _OPERATORS.get(collection)
    if table is None:
        table = collection_operators(collection.indexes.values, collection.namespace)
        _OPERATORS[collection] = table
    return table


def pipeline_providers(collection: Collection) -> dict[str, StageProvider]:
    """The stages a pipeline over ``collection`` has from its indexes: ``$geoNear``."""
    return {"$geoNear": geo_near_parser(collection.indexes.values, collection.namespace)}


def _for_collection(context: MatchContext, collection: Collection) -> MatchContext:
    """``context`` with the collection's operator table (unless it has one)."""
    if context.operators is not None:
        return context
    return dataclasses.replace(context, operators=operators_of(collection))


@dataclass
class _Incarnation:
    """One life of a collection: created at one stamp, dropped (or renamed) at another."""

    collection: Collection
    created: int
    dropped: Optional[int] = None
    #: Index name -> (spec document, created, dropped): what listIndexes shows as of a stamp.
    indexes: dict[str, list[tuple[Document, int, Optional[int]]]] = field(default_factory=dict)

    def alive(self, as_of: Optional[int]) -> bool:
        if as_of is None:
            return self.dropped is None
        return self.created <= as_of and (self.dropped is None or as_of < self.dropped)


class DataView:
    """The data as one reader sees it: the store as of a stamp (None: the latest).

    The caller holds the deployment's lock while it reads."""

    def __init__(self, store: DataStore, as_of: Optional[int] = None) -> None:
        if as_of is not None and as_of >= store.latest_stamp:
            as_of = None  # nothing was written since: the latest data is the same
        if as_of is not None and as_of < store.history_horizon:
            raise snapshot_too_old(as_of)
        self.store = store
        self.as_of = as_of

    def _incarnation(self, db: str, coll: str) -> Optional[_Incarnation]:
        store = self.store
        live = store._live.get((db, coll))
        if live is not None and live.alive(self.as_of):
            return live
        if self.as_of is None:
            return None
        for ns, incarnation in reversed(store._retired):
            if ns == (db, coll) and incarnation.alive(self.as_of):
                return incarnation
        return None

    def collection(self, db: str, coll: str) -> Optional[Collection]:
        incarnation = self._incarnation(db, coll)
        return None if incarnation is None else incarnation.collection

    def exists(self, db: str, coll: str) -> bool:
        return self._incarnation(db, coll) is not None

    def pipeline_providers(self, db: str, coll: str) -> dict[str, StageProvider]:
        """The stages a pipeline over ``db.coll`` has from its indexes
        (:func:`pipeline_providers`); a collection that does not exist has none to use."""
        collection = self.collection(db, coll) or Collection(f"{db}.{coll}")
        return pipeline_providers(collection)

    def _namespaces(self) -> Iterator[Namespace]:
        store = self.store
        for ns, incarnation in store._live.items():
            if incarnation.alive(self.as_of):
                yield ns
        if self.as_of is not None:
            for ns, incarnation in store._retired:
                if incarnation.alive(self.as_of):
                    yield ns

    def collection_names(self, db: str) -> list[str]:
        return sorted({coll for d, coll in self._namespaces() if d == db})

    def database_names(self) -> list[str]:
        return sorted({db for db, _ in self._namespaces()})

    def documents(self, db: str, coll: str) -> list[Document]:
        """The collection's documents in record (natural) order."""
        collection = self.collection(db, coll)
        if collection is None:
            return []
        return [doc for _, doc in collection.scan(self.as_of)]

    def count(self, db: str, coll: str) -> int:
        collection = self.collection(db, coll)
        if collection is None:
            return 0
        if self.as_of is None:
            return len(collection)
        return sum(1 for _ in collection.scan(self.as_of))

    def find(
        self,
        db: str,
        coll: str,
        flt: Any,
        *,
        sort: Any = None,
        projection: Any = None,
        skip: int = 0,
        limit: int = 0,
        context: Optional[MatchContext] = None,
    ) -> list[Document]:
        context = context if context is not None else match_context(None)
        collection = self.collection(db, coll)
        if collection is None:
            collection = Collection(f"{db}.{coll}")  # parse the query all the same
        try:
            return crud.find(
                collection,
                flt,
                sort=sort,
                projection=projection,
                skip=skip,
                limit=limit,
                context=_for_collection(context, collection),
                as_of=self.as_of,
            )
        except SnapshotTooOld as exc:
            raise snapshot_too_old(int(exc.stamp)) from exc

    def index_documents(self, db: str, coll: str) -> list[Document]:
        """The collection's indexes as listIndexes shows them, ``_id_`` first."""
        incarnation = self._incarnation(db, coll)
        if incarnation is None:
            return []
        collection = incarnation.collection
        docs: list[Document] = [{"v": 2, "key": SON([("_id", 1)]), "name": ID_INDEX}]
        if collection.collation is not None:
            docs[0]["collation"] = collection.collation.spec()
        if self.store.options(db, coll).timeseries is not None:
            docs = []  # a time-series collection has no _id index
        for versions in incarnation.indexes.values():
            for spec, created, dropped in versions:
                if self.as_of is None:
                    shown = dropped is None
                else:
                    shown = created <= self.as_of and (dropped is None or self.as_of < dropped)
                if shown:
                    docs.append(spec)
        return docs

    def index_names(self, db: str, coll: str) -> list[str]:
        return [str(doc["name"]) for doc in self.index_documents(db, coll)]


def _index_document(spec: Mapping[str, Any], collation: Optional[Collation]) -> Document:
    """An index as listIndexes shows it: v, key, name, then its options (a collation in
    its full form)."""
    spec = listing(spec)
    doc: Document = {"v": 2, "key": SON(list(spec["key"].items())), "name": spec["name"]}
    for option, value in spec.items():
        if option not in ("v", "key", "name", "ns", "collation"):
            doc[option] = value
    if collation is not None:
        doc["collation"] = collation.spec()
    return doc


class _StoreWrites(crud.Writes):
    """How the store checks, stamps and logs each document a statement writes."""

    def __init__(
        self,
        store: DataStore,
        db: str,
        coll: str,
        *,
        bypass_validation: bool,
        update: Any = None,
    ) -> None:
        self.store = store
        self.db = db
        self.coll = coll
        self.options = store.options(db, coll)
        self.bypass = bypass_validation
        self.update = update
        self.optime = ZERO_OPTIME

    def check(self, new: Document, old: Optional[Document]) -> Document:
        if old is None:
            new = id_first(new) if "_id" in new else {"_id": ObjectId(), **new}
            if self.update is None:
                self.store._fill_empty_timestamps(new)
        check_storable(new)
        if old is None and self.options.timeseries is not None:
            timeseries.check_measurement(self.options.timeseries, new)
        self.options.check_document(new, old, bypass=self.bypass)
        return new

    def stamp(self) -> int:
        self.optime = self.store.next_optime()
        return stamp_of(self.optime.ts)

    def written(self, op: str, doc_id: Any, doc: Optional[Document], stamp: Any) -> None:
        store = self.store
        if op == "d":
            store._append("d", self.db, self.coll, doc_id, optime=self.optime)
        elif self.update is None:
            store._append("i", self.db, self.coll, doc_id, doc=doc, optime=self.optime)
        else:
            store._append(
                "u", self.db, self.coll, doc_id, doc=doc, update=self.update, optime=self.optime
            )


class DataStore(Oplog):
    """A deployment's data, its oplog and its session records. The owner serializes access."""

    def __init__(self, clock: Callable[[], float], *, keep_entries: bool = False) -> None:
        super().__init__(clock, keep_entries=keep_entries)
        self.sessions = SessionRecords()
        #: Collection options (default collation, validator).
        self.catalog: dict[Namespace, CollectionOptions] = {}
        self._live: dict[Namespace, _Incarnation] = {}
        #: Dropped incarnations whose history a read may still need, oldest first.
        self._retired: list[tuple[Namespace, _Incarnation]] = []
        #: Reads as of an earlier stamp are refused (SnapshotTooOld).
        self.history_horizon = 0
        self._trimmed_at = 0.0

    @property
    def latest_stamp(self) -> int:
        return stamp_of(self.last_optime.ts)

    def view(self, as_of: Optional[Timestamp] = None) -> DataView:
        """The data as of ``as_of`` (None: the latest); SnapshotTooOld before the window."""
        return DataView(self, None if as_of is None else stamp_of(as_of))

    @property
    def latest(self) -> DataView:
        return DataView(self)

    def checkpoint(self, db: str, coll: str) -> Checkpoint:
        """Remember ``db.coll`` as it is, for :meth:`rollback` (the owner holds the lock)."""
        return Checkpoint(
            db, coll, self.collection_exists(db, coll), [], self.oplog_end, self.last_optime
        )

    def rollback(self, checkpoint: Checkpoint) -> None:
        """Undo the writes to the checkpoint's collection since it was taken, and forget
        their oplog entries (no member can have read them: the lock was held)."""
        ns = (checkpoint.db, checkpoint.coll)
        incarnation = self._live.get(ns)
        if incarnation is not None:
            if not checkpoint.existed:
                del self._live[ns]
            else:
                incarnation.collection.revert(stamp_of(checkpoint.last_optime.ts))
        self._forget_since(checkpoint)

    # -- collections -----------------------------------------------------------------

    def collection(self, db: str, coll: str) -> Optional[Collection]:
        """The collection as it is now, None if it does not exist."""
        incarnation = self._live.get((db, coll))
        return None if incarnation is None else incarnation.collection

    def documents(self, db: str, coll: str) -> list[Document]:
        return self.latest.documents(db, coll)

    def collection_exists(self, db: str, coll: str) -> bool:
        return (db, coll) in self._live

    def collection_names(self, db: str) -> list[str]:
        return sorted(coll for d, coll in self._live if d == db)

    def database_names(self) -> list[str]:
        return sorted({db for db, _ in self._live})

    def _create(self, db: str, coll: str, optime: Optional[OpTime] = None) -> _Incarnation:
        """Create the collection (its catalog entry logged)."""
        optime = optime if optime is not None else self.next_optime()
        collation = self.options(db, coll).collation
        incarnation = _Incarnation(Collection(f"{db}.{coll}", collation), stamp_of(optime.ts))
        self._live[(db, coll)] = incarnation
        self._append("c", db, coll, command={"create": coll}, optime=optime)
        return incarnation

    def _retire(self, db: str, coll: str, stamp: int) -> Optional[_Incarnation]:
        incarnation = self._live.pop((db, coll), None)
        if incarnation is not None:
            incarnation.dropped = stamp
            self._retired.append(((db, coll), incarnation))
        return incarnation

    # -- options ---------------------------------------------------------------------

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
        collection = self.collection(db, coll)
        if collection is None:
            return None
        if name == ID_INDEX:
            return collection.collation
        index = collection.indexes.get(name)
        return None if index is None else index.spec.collation

    def indexes(self, db: str, coll: str) -> list[Document]:
        """The collection's indexes as listIndexes shows them."""
        return self.latest.index_documents(db, coll)

    # -- writes ----------------------------------------------------------------------

    def _target(self, db: str, coll: str) -> Collection:
        incarnation = self._live.get((db, coll))
        if incarnation is None:
            incarnation = self._create(db, coll)
        return incarnation.collection

    def _fill_empty_timestamps(self, doc: Document) -> None:
        """A server gives an empty timestamp (``Timestamp(0, 0)``) in a top-level field of
        an inserted document the current time, except in ``_id``, which it stores as
        given ("BSON Types", "Timestamps"); nested ones stay as they are."""
        for key, value in doc.items():
            if key != "_id" and type(value) is Timestamp and value.time == 0 and value.inc == 0:
                doc[key] = self.next_optime().ts

    def _undo_create(self, db: str, coll: str, checkpoint: Checkpoint) -> None:
        """A collection a failed write created does not stay (nothing else was written)."""
        if not checkpoint.existed and self.oplog_end == checkpoint.oplog_end + 1:
            self.rollback(checkpoint)

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
        self._check_kind_writable(db, coll)
        checkpoint = self.checkpoint(db, coll)
        writes = _StoreWrites(self, db, coll, bypass_validation=bypass_validation)
        try:
            crud.insert(self._target(db, coll), document, writes)
        except BaseException as exc:
            self._undo_create(db, coll, checkpoint)
            error = translate_store_errors(exc, f"{db}.{coll}")
            if writes.options.timeseries is not None and error.code == 11000:
                # A server's buckets hold measurements with the same _id; the engine
                # keeps one document per _id.
                raise CommandError(
                    238,
                    "measurements with the same _id in a time-series collection are not "
                    "supported by the simulator",
                ) from exc
            raise error from exc
        bounds = writes.options.capped
        if bounds is not None:
            self._keep_within(db, coll, bounds)
        self._maybe_trim()

    def _check_kind_writable(self, db: str, coll: str) -> None:
        """A transaction does not write to a capped or a time-series collection (263)."""
        if not self.keep_entries:
            return  # not a transaction's workspace
        options = self.options(db, coll)
        if options.capped is not None:
            raise capped.transaction_refused(f"{db}.{coll}")
        if options.timeseries is not None:
            raise timeseries.transaction_refused(f"{db}.{coll}")

    def _keep_within(self, db: str, coll: str, bounds: capped.CappedOptions) -> None:
        """Remove the oldest documents of a capped collection past its bounds."""
        collection = self.collection(db, coll)
        if collection is None:
            return
        docs = [doc for _, doc in collection.scan()]
        excess = capped.overflow([capped.document_size(doc) for doc in docs], bounds)
        writes = _StoreWrites(self, db, coll, bypass_validation=True)
        for doc in docs[:excess]:
            crud.delete(collection, {"_id": doc["_id"]}, writes, limit=1)

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

        Each matched document's new version is computed apart, checked (``_id``, the
        validator, unique indexes) and only then written, one document at a time, as a
        server does: a multi-update failing on its third document keeps the first two."""
        if multi and is_replacement(update):
            raise CommandError(9, "multi update is not supported for replacement-style update")
        check_update(update, array_filters)
        self._check_kind_writable(db, coll)
        kind = self.options(db, coll).timeseries
        statement = {"q": query, "u": update, "multi": multi, "upsert": upsert}
        if kind is not None and not timeseries.update_allowed(kind, statement):
            raise timeseries.update_refused(f"{db}.{coll}")
        context = match_context(collation, variables)
        compiled = update_for_engine(update, variables)
        if variables:
            query = variables.in_query(query)
        checkpoint = self.checkpoint(db, coll)
        collection = self.collection(db, coll)
        if collection is None:
            # Nothing to match: the statement is still parsed, and an upsert creates it.
            collection = self._target(db, coll) if upsert else Collection(f"{db}.{coll}")
        writes = _StoreWrites(self, db, coll, bypass_validation=bypass_validation, update=update)
        try:
            result = crud.update(
                collection,
                query,
                compiled,
                writes,
                multi=multi,
                upsert=upsert,
                array_filters=array_filters,
                context=_for_collection(context, collection),
            )
        except BaseException as exc:
            self._undo_create(db, coll, checkpoint)
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        self._maybe_trim()
        upserted = (result.upserted_id,) if result.upserted else None
        return result.matched, result.modified, upserted

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
        self._check_kind_writable(db, coll)
        context = match_context(collation, variables)
        collection = self.collection(db, coll)
        writes = _StoreWrites(self, db, coll, bypass_validation=True)
        try:
            if collection is None:
                empty = Collection(f"{db}.{coll}")
                crud.count(empty, query, context=_for_collection(context, empty))  # parse it
                return 0
            n = crud.delete(
                collection,
                query,
                writes,
                limit=1 if limit else 0,
                context=_for_collection(context, collection),
            )
        except BaseException as exc:
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        self._maybe_trim()
        return n

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
        if not remove:
            check_update(update, array_filters)
        self._check_kind_writable(db, coll)
        if self.options(db, coll).timeseries is not None:
            raise CommandError(
                238, "findAndModify on a time-series collection is not supported by the simulator"
            )
        context = match_context(collation, variables)
        compiled = None if remove else update_for_engine(update, variables)
        if variables:
            query = variables.in_query(query)
        checkpoint = self.checkpoint(db, coll)
        collection = self.collection(db, coll)
        if collection is None:
            collection = self._target(db, coll) if upsert else Collection(f"{db}.{coll}")
        writes = _StoreWrites(
            self, db, coll, bypass_validation=bypass_validation, update=None if remove else update
        )
        try:
            value, last_error = crud.find_and_modify(
                collection,
                query,
                writes,
                update=compiled,
                remove=remove,
                new=new,
                upsert=upsert,
                sort=sort or None,
                fields=fields or None,
                array_filters=array_filters,
                context=_for_collection(context, collection),
            )
        except BaseException as exc:
            self._undo_create(db, coll, checkpoint)
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        self._maybe_trim()
        return value, last_error

    # -- the catalog -----------------------------------------------------------------

    def create_collection(
        self, db: str, coll: str, options: Optional[CollectionOptions] = None
    ) -> None:
        if self.collection_exists(db, coll):
            raise CommandError(48, f"Collection {db}.{coll} already exists.")
        if options is not None:
            self.catalog[(db, coll)] = options
        self._create(db, coll)
        kind = options.timeseries if options is not None else None
        index = timeseries.default_index(kind) if kind is not None else None
        if index is not None:
            self.create_indexes(db, coll, [index])

    def _forget(self, db: str, coll: Optional[str] = None) -> None:
        """Forget the options of a dropped collection (or database)."""
        for key in [k for k in self.catalog if k[0] == db and coll in (None, k[1])]:
            del self.catalog[key]

    def drop_collection(self, db: str, coll: str) -> Optional[int]:
        """Drop a collection; returns how many indexes it had, None if it did not exist."""
        incarnation = self._live.get((db, coll))
        if incarnation is None:
            return None
        count = 1 + len(incarnation.collection.indexes)
        optime = self.next_optime()
        self._retire(db, coll, stamp_of(optime.ts))
        self._forget(db, coll)
        self._append("c", db, coll, command={"drop": coll}, optime=optime)
        return count

    def drop_database(self, db: str) -> None:
        optime = self.next_optime()
        for ns in [ns for ns in self._live if ns[0] == db]:
            self._retire(ns[0], ns[1], stamp_of(optime.ts))
        self._forget(db)
        self._append("c", db, "", command={"dropDatabase": 1}, optime=optime)

    def create_indexes(self, db: str, coll: str, indexes: Sequence[Mapping[str, Any]]) -> None:
        """Build the indexes (those that exist already, same name and key, are kept)."""
        created = not self.collection_exists(db, coll)
        # An index without a collation of its own takes the collection's default.
        default = self.options(db, coll).collation
        plans: list[tuple[IndexSpec, Document]] = []
        collection = self.collection(db, coll)
        names = set(collection.indexes) if collection is not None else set()
        for document in indexes:
            spec = IndexSpec.from_document(document)
            collation = spec.collation if "collation" in document else default
            if collation is not spec.collation:
                spec = IndexSpec(
                    name=spec.name,
                    key=spec.key,
                    unique=spec.unique,
                    sparse=spec.sparse,
                    partial_filter=spec.partial_filter,
                    expire_after_seconds=spec.expire_after_seconds,
                    collation=collation,
                    options=spec.options,
                )
            if spec.key == (("_id", 1),):
                continue
            if spec.name in names:
                continue  # the caller refused a conflicting one; the same one is kept
            make_index(spec, f"{db}.{coll}")  # the server's error for a bad key pattern
            plans.append((spec, _index_document(document, collation)))
        target = self._target(db, coll)
        incarnation = self._live[(db, coll)]
        built: list[str] = []
        try:
            for spec, _ in plans:
                target.create_index(spec)
                built.append(spec.name)
        except BaseException as exc:
            for name in built:
                target.drop_index(name)
            if created:
                self.rollback(Checkpoint(db, coll, False, [], self.oplog_end - 1, self.last_optime))
            raise translate_store_errors(exc, f"{db}.{coll}") from exc
        optime = self.next_optime()
        for spec, document in plans:
            incarnation.indexes.setdefault(spec.name, []).append(
                (document, stamp_of(optime.ts), None)
            )
        self._append(
            "c",
            db,
            coll,
            command={"createIndexes": coll, "indexes": [dict(i) for i in indexes]},
            optime=optime,
        )

    def drop_index(self, db: str, coll: str, name: str) -> None:
        incarnation = self._live.get((db, coll))
        if incarnation is None:
            raise CommandError(26, f"ns not found {db}.{coll}")
        incarnation.collection.drop_index(name)
        optime = self.next_optime()
        versions = incarnation.indexes.get(name, [])
        if versions:
            spec, created, _ = versions[-1]
            versions[-1] = (spec, created, stamp_of(optime.ts))
        self._append("c", db, coll, command={"dropIndexes": coll, "index": name}, optime=optime)

    def rename_collection(self, source: str, target: str, *, drop_target: bool) -> None:
        """renameCollection from ``db.coll`` to ``db.coll`` (the caller checked both names;
        an existing target is dropped first with ``drop_target``)."""
        target_db, _, target_coll = target.partition(".")
        source_db, _, source_coll = source.partition(".")
        if drop_target and self.collection_exists(target_db, target_coll):
            self.drop_collection(target_db, target_coll)
        optime = self.next_optime()
        self._move(source_db, source_coll, target_db, target_coll, optime)
        options = self.catalog.pop((source_db, source_coll), None)
        if options is not None:
            self.catalog[(target_db, target_coll)] = options
        self._append(
            "c",
            source_db,
            source_coll,
            command={"renameCollection": source, "to": target, "dropTarget": drop_target},
            optime=optime,
        )

    def _move(
        self, source_db: str, source_coll: str, target_db: str, target_coll: str, optime: OpTime
    ) -> None:
        """The source's documents and indexes become a new incarnation under the target's
        name, at ``optime`` (a read as of an earlier optime still sees the source)."""
        stamp = stamp_of(optime.ts)
        old = self._retire(source_db, source_coll, stamp)
        if old is None:
            return
        moved = _Incarnation(
            Collection(f"{target_db}.{target_coll}", old.collection.collation), stamp
        )
        for name, index in old.collection.indexes.items():
            moved.collection.create_index(index.spec)
            versions = [v for v in old.indexes.get(name, []) if v[2] is None]
            moved.indexes[name] = [(spec, stamp, None) for spec, _, _ in versions[-1:]]
        for _, doc in old.collection.scan():
            moved.collection.insert(doc, stamp)
        self._live[(target_db, target_coll)] = moved

    def replace_collection(self, db: str, coll: str, documents: Sequence[Document]) -> None:
        """$out: the target's documents become ``documents`` (the target exists afterwards,
        empty or not, as on a server; its indexes and options stay)."""
        collection = self._target(db, coll)
        self._append("c", db, coll, command={"drop": coll})
        optime = self.next_optime()
        stamp = stamp_of(optime.ts)
        for rid, _ in list(collection.scan()):
            collection.delete(rid, stamp)
        self._append("c", db, coll, command={"create": coll}, optime=optime)
        for document in documents:
            doc = id_first(document) if "_id" in document else {"_id": ObjectId(), **document}
            check_storable(doc)
            optime = self.next_optime()
            try:
                collection.insert(doc, stamp_of(optime.ts))
            except BaseException as exc:
                raise translate_store_errors(exc, f"{db}.{coll}") from exc
            self._append("u", db, coll, doc["_id"], doc=doc, optime=optime)

    def log_apply_ops(self, command: Document, optime: Optional[OpTime] = None) -> None:
        """Log a committed transaction: one ``applyOps`` entry (sim/apply_ops.py shapes
        it; :meth:`apply` applied its operations to the data already, at ``optime``)."""
        self._append("c", "admin", "$cmd", command=command, optime=optime)

    def apply(self, entry: OplogEntry, optime: OpTime) -> None:
        """Apply another store's entry (a transaction's write) here, stamped ``optime``,
        without logging it (its applyOps entry is logged with :meth:`log_apply_ops`)."""
        stamp = stamp_of(optime.ts)
        ns = (entry.db, entry.coll)
        if entry.op in ("i", "u") and entry.doc is not None:
            incarnation = self._live.get(ns)
            if incarnation is None:
                incarnation = _Incarnation(
                    Collection(f"{entry.db}.{entry.coll}", self.options(*ns).collation), stamp
                )
                self._live[ns] = incarnation
            collection = incarnation.collection
            hit = collection.get(entry.doc_id)
            if hit is None:
                collection.insert(entry.doc, stamp)
            else:
                collection.replace(hit[0], entry.doc, stamp)
        elif entry.op == "d":
            target = self.collection(*ns)
            found = target.get(entry.doc_id) if target is not None else None
            if target is not None and found is not None:
                target.delete(found[0], stamp)
        elif entry.command is not None:
            self._apply_command(entry, optime)

    def _apply_command(self, entry: OplogEntry, optime: OpTime) -> None:
        command = entry.command or {}
        db = entry.db
        if "create" in command:
            coll = str(command["create"])
            if not self.collection_exists(db, coll):
                collation = self.options(db, coll).collation
                self._live[(db, coll)] = _Incarnation(
                    Collection(f"{db}.{coll}", collation), stamp_of(optime.ts)
                )
        elif "createIndexes" in command:
            coll = str(command["createIndexes"])
            incarnation = self._live.get((db, coll))
            if incarnation is None:
                return
            for document in command.get("indexes", []):
                spec = IndexSpec.from_document(document)
                if spec.key == (("_id", 1),) or spec.name in incarnation.collection.indexes:
                    continue
                incarnation.collection.create_index(spec)
                incarnation.indexes.setdefault(spec.name, []).append(
                    (_index_document(document, spec.collation), stamp_of(optime.ts), None)
                )

    def copy_collection(self, source: DataStore, db: str, coll: str) -> None:
        """Hold a copy of ``source``'s collection, its documents and indexes, without
        logging it (a transaction's workspace, sim/snapshot.py)."""
        original = source._live.get((db, coll))
        if original is None:
            return
        collection = Collection(f"{db}.{coll}", original.collection.collation)
        copy = _Incarnation(collection, 0)
        for name, index in original.collection.indexes.items():
            collection.create_index(index.spec)
            copy.indexes[name] = [
                (spec, 0, None) for spec, _, d in original.indexes.get(name, []) if d is None
            ]
        for _, doc in original.collection.scan():
            collection.insert(doc, 0)
        self._live[(db, coll)] = copy

    def load(self, db: str, coll: str, documents: Sequence[Mapping[str, Any]]) -> None:
        """Hold ``documents`` in ``db.coll`` without logging them (a throwaway store)."""
        incarnation = self._live.get((db, coll)) or _Incarnation(Collection(f"{db}.{coll}"), 0)
        self._live[(db, coll)] = incarnation
        for document in documents:
            try:
                incarnation.collection.insert(dict(document), 0)
            except BaseException as exc:
                raise translate_store_errors(exc, f"{db}.{coll}") from exc

    # -- history ---------------------------------------------------------------------

    def _maybe_trim(self) -> None:
        now = self.clock()
        if now - self._trimmed_at >= _TRIM_INTERVAL or self.oplog_kept >= _TRIM_ENTRIES:
            self._trimmed_at = now
            self.trim_history(now)

    def trim_history(self, now: float) -> None:
        """Move every member's position to ``now`` (forgetting the oplog entries all have
        applied), then forget the versions no read can need: older than the history
        window and than every member's applied optime (a read older is refused with
        SnapshotTooOld)."""
        for view in list(self._views):
            view.advance(now)
        horizon_time = int(now - HISTORY_WINDOW)
        horizon = stamp_of(Timestamp(max(horizon_time, 0), 0))
        for view in self._views:
            horizon = min(horizon, stamp_of(view.applied_optime.ts))
        if horizon <= self.history_horizon:
            return
        self.history_horizon = horizon
        for incarnation in self._live.values():
            incarnation.collection.trim(horizon)
        self._retired = [
            (ns, incarnation)
            for ns, incarnation in self._retired
            if incarnation.dropped is not None and incarnation.dropped > horizon
        ]
        for _, incarnation in self._retired:
            incarnation.collection.trim(horizon)
