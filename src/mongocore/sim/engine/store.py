"""A versioned collection: documents in the order a 7.0 server's collection scan gives
them, an ``_id`` index for constant-time lookup, secondary indexes, and every write
stamped with its optime so that a read can be made as of an earlier one (MongoDB
manual, "Read Concern 'snapshot'", ``minSnapshotHistoryWindowInSeconds``).

Each document lives in a record with a record id that grows with each insert; a scan
returns records in that order, and an update keeps a record where it is (WiredTiger's
record order). A write is given a stamp (any totally ordered value: the oplog's optime
in the simulator, integers in tests), later writes larger ones. The store keeps, for
the records written within the history window, their earlier versions, so that
:meth:`Collection.scan` and :meth:`Collection.get` can answer "as of" a stamp: what a
lagging secondary (reading at its last applied optime) and a snapshot read (at its
``atClusterTime``) see, with a cost that depends on the writes since then, never on the
length of the history. :meth:`Collection.trim` forgets versions older than the window;
a read older than that is refused with SnapshotTooOld (239).

Documents are not copied: the store keeps the document it is given and returns the
ones it holds, and neither side changes them afterwards (updates build a new document:
update.py). That is what makes reads cheap.
"""

from __future__ import annotations

import datetime
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.indexes import Index, IndexSpec, duplicate_key_error, make_index
from mongocore.sim.engine.matcher import Matcher
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.sort import sort_values
from mongocore.sim.engine.values import MISSING, key, millis

__all__ = ["ID_INDEX", "Collection", "SnapshotTooOld"]

Stamp = Any
ID_INDEX = "_id_"
_BASE: Any = None  # the stamp of a version older than the window


class SnapshotTooOld(CommandError):
    """A read older than the history kept (SnapshotTooOld, 239)."""

    def __init__(self, stamp: Stamp, oldest: Stamp) -> None:
        super().__init__(
            239, f"Read timestamp {stamp} is older than the oldest available timestamp."
        )
        self.stamp = stamp
        self.oldest = oldest


class Collection:
    """One collection's documents, indexes and recent history."""

    def __init__(self, namespace: str, collation: Optional[Collation] = None) -> None:
        self.namespace = namespace
        self.collation = collation
        self._next_rid = 1
        # Every record in record order: the document, or None once deleted (kept while
        # its deletion is within the history window).
        self._records: dict[int, Optional[Document]] = {}
        self._live = 0
        self._by_id: dict[Any, int] = {}
        # Deleted records by their _id's key, while their history is kept.
        self._tombstones: dict[Any, list[int]] = {}
        self._tombstone_keys: dict[int, Any] = {}
        # The versions of records written within the window: (stamp, document or None),
        # oldest first; a first version stamped _BASE is the one before the window.
        self._history: dict[int, list[tuple[Stamp, Optional[Document]]]] = {}
        self._writes: deque[tuple[Stamp, int]] = deque()
        self._oldest: Stamp = None
        self._latest: Stamp = None
        #: The secondary indexes by name (the _id index is the dictionary above).
        self.indexes: dict[str, Index] = {}
        self._id_spec = IndexSpec(
            name=ID_INDEX, key=(("_id", 1),), unique=True, collation=collation
        )

    # -- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._live

    def _id_key(self, value: Any) -> Any:
        return key(value, self.collation)

    def _check_stamp(self, as_of: Stamp) -> bool:
        """True when ``as_of`` needs the history (older than the newest write)."""
        if as_of is None or self._latest is None or as_of >= self._latest:
            return False
        if self._oldest is not None and as_of < self._oldest:
            raise SnapshotTooOld(as_of, self._oldest)
        return True

    def _version(self, rid: int, as_of: Stamp) -> Optional[Document]:
        chain = self._history.get(rid)
        if chain is None:
            return self._records.get(rid)
        for stamp, doc in reversed(chain):
            if stamp is _BASE or stamp <= as_of:
                return doc
        return None

    def scan(self, as_of: Stamp = None) -> Iterator[tuple[int, Document]]:
        """Every document (with its record id) in record order, as of ``as_of``."""
        if not self._check_stamp(as_of):
            for rid, doc in list(self._records.items()):
                if doc is not None:
                    yield rid, doc
            return
        for rid in list(self._records):
            version = self._version(rid, as_of)
            if version is not None:
                yield rid, version

    def get(self, doc_id: Any, as_of: Stamp = None) -> Optional[tuple[int, Document]]:
        """The document whose ``_id`` is ``doc_id`` (by the ``_id`` index), as of ``as_of``."""
        id_key = self._id_key(doc_id)
        rid = self._by_id.get(id_key)
        if not self._check_stamp(as_of):
            if rid is None:
                return None
            doc = self._records[rid]
            return None if doc is None else (rid, doc)
        for candidate in [*self._tombstones.get(id_key, ()), *([rid] if rid is not None else [])]:
            version = self._version(candidate, as_of)
            if version is not None and self._id_key(version.get("_id", MISSING)) == id_key:
                return candidate, version
        return None

    def find(
        self, matcher: Matcher, as_of: Stamp = None, collation: Optional[Collation] = None
    ) -> Iterator[tuple[int, Document]]:
        """The documents ``matcher`` matches: looked up by the ``_id`` index when the
        filter pins ``_id`` (in index order, as an IXSCAN returns them), else scanned."""
        ids = matcher.id_values
        if ids is not None and (collation == self.collation or not _has_strings(ids)):
            found = {}
            for value in ids:
                hit = self.get(value, as_of)
                if hit is not None:
                    found[self._id_key(hit[1]["_id"])] = hit
            for id_key in sorted(found):
                rid, doc = found[id_key]
                if matcher.matches(doc):
                    yield rid, doc
            return
        for rid, doc in self.scan(as_of):
            if matcher.matches(doc):
                yield rid, doc

    # -- writing ----------------------------------------------------------------------

    def _stamp(self, stamp: Stamp) -> None:
        if self._latest is not None and stamp < self._latest:
            raise ValueError(f"write stamped {stamp!r} after {self._latest!r}")
        self._latest = stamp

    def _remember(
        self,
        rid: int,
        stamp: Stamp,
        before: Optional[Document],
        after: Optional[Document],
        existed: bool,
    ) -> None:
        chain = self._history.get(rid)
        if chain is None:
            chain = [(_BASE, before)] if existed else []
            self._history[rid] = chain
        chain.append((stamp, after))
        self._writes.append((stamp, rid))

    def _check_unique(self, rid: int, doc: Document) -> None:
        id_key = self._id_key(doc["_id"])
        holder = self._by_id.get(id_key)
        if holder is not None and holder != rid:
            raise duplicate_key_error(self.namespace, self._id_spec, {"_id": doc["_id"]})
        for index in self.indexes.values():
            index.check(rid, doc)

    def check_insert(self, doc: Document) -> None:
        """Raise DuplicateKey if inserting ``doc`` would break a unique index."""
        self._check_unique(self._next_rid, doc)

    def check_replace(self, rid: int, doc: Document) -> None:
        """Raise DuplicateKey if ``doc`` replacing record ``rid`` would break one."""
        self._check_unique(rid, doc)

    def insert(self, doc: Document, stamp: Stamp) -> int:
        """Store a new document (it must have an ``_id``); its record id."""
        if "_id" not in doc:
            raise ValueError("a stored document has an _id")
        rid = self._next_rid
        self._check_unique(rid, doc)
        self._stamp(stamp)
        self._next_rid += 1
        self._records[rid] = doc
        self._live += 1
        self._by_id[self._id_key(doc["_id"])] = rid
        for index in self.indexes.values():
            index.add(rid, doc)
        self._remember(rid, stamp, None, doc, existed=False)
        return rid

    def replace(self, rid: int, doc: Document, stamp: Stamp) -> None:
        """Replace the document of record ``rid`` (an update's result)."""
        before = self._records.get(rid)
        if before is None:
            raise KeyError(rid)
        self._check_unique(rid, doc)
        self._stamp(stamp)
        old_key, new_key = self._id_key(before["_id"]), self._id_key(doc["_id"])
        if old_key != new_key:
            del self._by_id[old_key]
            self._by_id[new_key] = rid
        self._records[rid] = doc
        for index in self.indexes.values():
            index.remove(rid)
            index.add(rid, doc)
        self._remember(rid, stamp, before, doc, existed=True)

    def delete(self, rid: int, stamp: Stamp) -> Document:
        """Delete the document of record ``rid``; the document deleted."""
        before = self._records.get(rid)
        if before is None:
            raise KeyError(rid)
        self._stamp(stamp)
        id_key = self._id_key(before["_id"])
        del self._by_id[id_key]
        self._records[rid] = None
        self._live -= 1
        self._tombstones.setdefault(id_key, []).append(rid)
        self._tombstone_keys[rid] = id_key
        for index in self.indexes.values():
            index.remove(rid)
        self._remember(rid, stamp, before, None, existed=True)
        return before

    def trim(self, horizon: Stamp) -> None:
        """Forget the versions a read as of ``horizon`` or later does not need; reads
        older than ``horizon`` are refused from now on."""
        if self._oldest is not None and horizon <= self._oldest:
            return
        self._oldest = horizon
        while self._writes and self._writes[0][0] <= horizon:
            _, rid = self._writes.popleft()
            chain = self._history.get(rid)
            if chain is None:
                continue
            keep = 0
            for position, (stamp, _) in enumerate(chain):
                if stamp is _BASE or stamp <= horizon:
                    keep = position
            base = chain[keep][1]
            rest = chain[keep + 1 :]
            if rest:
                self._history[rid] = [(_BASE, base), *rest]
                continue
            del self._history[rid]
            if base is None:  # deleted before the horizon: the record is gone for good
                id_key = self._tombstone_keys.pop(rid)
                rids = self._tombstones[id_key]
                rids.remove(rid)
                if not rids:
                    del self._tombstones[id_key]
                self._records.pop(rid, None)

    def revert(self, stamp: Stamp) -> None:
        """Undo every write stamped after ``stamp``, newest first, as if it had never
        been made (a statement that fails before it commits, while nobody could read
        it): records return to their earlier versions, new ones disappear."""
        while self._writes and self._writes[-1][0] > stamp:
            _, rid = self._writes.pop()
            chain = self._history[rid]
            chain.pop()
            current = self._records.get(rid)
            earlier = chain[-1][1] if chain else None
            if not chain or (len(chain) == 1 and chain[0][0] is _BASE):
                del self._history[rid]
            self._restore(rid, current, earlier, keep_record=bool(chain))
        if self._latest is not None and self._latest > stamp:
            self._latest = self._writes[-1][0] if self._writes else stamp

    def _restore(
        self,
        rid: int,
        current: Optional[Document],
        earlier: Optional[Document],
        *,
        keep_record: bool,
    ) -> None:
        for index in self.indexes.values():
            index.remove(rid)
        if current is not None:
            del self._by_id[self._id_key(current["_id"])]
            self._live -= 1
        elif rid in self._tombstone_keys:
            id_key = self._tombstone_keys.pop(rid)
            rids = self._tombstones[id_key]
            rids.remove(rid)
            if not rids:
                del self._tombstones[id_key]
        if not keep_record:
            self._records.pop(rid, None)
            return
        self._records[rid] = earlier
        if earlier is not None:
            self._by_id[self._id_key(earlier["_id"])] = rid
            self._live += 1
            for index in self.indexes.values():
                index.add(rid, earlier)

    @property
    def history_size(self) -> int:
        """The number of versions kept for reads in the past."""
        return sum(len(chain) for chain in self._history.values())

    # -- indexes ----------------------------------------------------------------------

    def create_index(self, spec: IndexSpec) -> Index:
        """Build an index over the current documents (DuplicateKey if a unique one
        finds two records with one key: nothing is built then)."""
        if spec.name == ID_INDEX or spec.key == (("_id", 1),):
            return self.indexes.get(spec.name) or make_index(spec, self.namespace)
        index = make_index(spec, self.namespace)
        for rid, doc in self.scan():
            index.check(rid, doc)
            index.add(rid, doc)
        self.indexes[spec.name] = index
        return index

    def drop_index(self, name: str) -> None:
        if name == ID_INDEX:
            raise CommandError(72, "cannot drop _id index")
        if name not in self.indexes:
            raise CommandError(27, f"index not found with name [{name}]")
        del self.indexes[name]

    def expired(self, now: datetime.datetime) -> list[int]:
        """The records a TTL pass deletes at ``now``, by the server's rule: an index on
        one field with ``expireAfterSeconds``, whose value in the document is a date, or
        an array holding dates (the earliest counts), older than ``expireAfterSeconds``
        before ``now``. A document without a date there never expires, and neither does
        one a partial index leaves out. Indexes on more than one field are no TTL indexes."""
        records: set[int] = set()
        cutoff = millis(now)
        for index in self.indexes.values():
            seconds = index.spec.expire_after_seconds
            if seconds is None or len(index.fields) != 1:
                continue
            for rid, doc in self.scan():
                dates = [
                    millis(v)
                    for v in sort_values(doc, index.fields[0])
                    if isinstance(v, datetime.datetime)
                ]
                if not dates or min(dates) + seconds * 1000 > cutoff:
                    continue
                if index.keys(doc) is not None:  # in the index (a partial one may skip it)
                    records.add(rid)
        return sorted(records)


def _has_strings(values: list[Any]) -> bool:
    return any(isinstance(v, (str, Mapping, list)) for v in values)
