"""Replication in the simulated replica set: each member's copy of the data, and how
the oplog reaches it.

A copy (``ReplicaView``) has two positions in the oplog:

- ``applied``, what the member has applied as far as anyone can observe: every entry
  written at least ``lag`` seconds ago (every entry, while the member is primary:
  it wrote them). Hello's lastWrite, elections and the majority commit point read
  it. Moving it is a binary search over the oplog's wall times, so it costs the same
  after ten writes as after a hundred thousand, and never touches documents.
- ``replayed``, the entries whose effect is in the copy's own documents. An entry is
  a document (inserted, or an update's full post-image), a deletion or a catalog
  command; documents and deletions are stored by ``_id`` in constant time (see
  ``by_id``), never through a filter that scans the collection.

Replays never hold the deployment lock while applying: a batch of entries is taken
under the lock, applied under the copy's own mutex, and its end recorded under the
lock again. The thread that completed a write replays every copy nobody else is
replaying (so the work is spread over the writes and the oplog stays short); a read
on a secondary first replays its copy up to ``applied`` that way, then, holding the
deployment lock and the copy's mutex, applies the few entries written meanwhile and
reads. Lock order: the deployment lock, then a copy's mutex; nothing waits for the
deployment lock while holding a mutex, and a reader holding the deployment lock
waits for a mutex at most one batch (``REPLAY_CHUNK`` entries).

The oplog keeps only the entries some copy has not replayed (``DataStore.trim``):
what a member's lag holds back, not the history.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import mongomock
from bson import Timestamp
from pymongo import errors as pymongo_errors

from mongocore.sim import apply_ops, by_id
from mongocore.sim.store import (
    ZERO_OPTIME,
    DataStore,
    OplogEntry,
    OpTime,
    _create_indexes,
    _index_options,
    _rename,
)

__all__ = ["REPLAY_CHUNK", "ReplicaView", "apply_entry", "new_view", "replay"]

#: Entries applied per hold of a copy's mutex.
REPLAY_CHUNK = 256


class ReplicaView:
    """A member's own copy of the data, ``lag`` seconds behind the oplog."""

    def __init__(self, store: DataStore, lag: float) -> None:
        self.store = store
        self.lag = lag
        self.client: Any = mongomock.MongoClient()
        #: Held while the copy's documents change, and by a read of them.
        self.mutex = threading.Lock()
        self.attached = False  # in the store's list of copies (whose oplog it keeps)
        self.applied = 0  # absolute oplog index of the next entry to apply (observable)
        self.applied_optime = ZERO_OPTIME
        self.replayed = 0  # entries known to be in the documents (deployment lock)
        self._done = 0  # entries in the documents (the mutex)
        self._follows_end = False

    def start_at(self, index: int, optime: OpTime) -> None:
        """The copy holds the data up to oplog ``index`` (nothing else uses it yet)."""
        self.applied = self.replayed = self._done = index
        self.applied_optime = optime

    # -- the observable position (the deployment lock is held) -------------------------

    def follow_end(self, follows: bool) -> None:
        """While its member is primary every entry counts as applied; a member that
        stops being primary keeps that position and lags from there."""
        if follows or self._follows_end:
            self._to_end()
        self._follows_end = follows

    def _to_end(self) -> None:
        self.applied = self.store.oplog_end
        self.applied_optime = max(self.applied_optime, self.store.last_optime)

    def advance(self, now: float) -> None:
        """Count as applied every entry at least ``lag`` seconds old at ``now``."""
        store = self.store
        if self._follows_end:
            self._to_end()
            return
        cutoff = now - self.lag
        end = store.first_index(self.applied, lambda entry: entry.optime.wall > cutoff)
        if end > self.applied:
            self.applied = end
            self.applied_optime = max(self.applied_optime, store.entry(end - 1).optime)
        if self.applied >= store.oplog_end and store.last_optime.wall <= cutoff:
            # Optimes that were never logged (a new term's no-op) still advance it.
            self.applied_optime = max(self.applied_optime, store.last_optime)

    def forget_after(self, index: int, optime: OpTime) -> None:
        """The entries from ``index`` on were rolled back (none was replayed)."""
        if self.applied > index:
            self.applied = index
            self.applied_optime = min(self.applied_optime, optime)

    def next_apply_time(self, after: Timestamp) -> Optional[float]:
        """When the first entry with a timestamp >= ``after`` will be applied, if logged."""
        store = self.store
        index = store.first_index(self.applied, lambda entry: entry.optime.ts >= after)
        if index >= store.oplog_end:
            return None
        return store.entry(index).optime.wall + self.lag

    # -- the documents -----------------------------------------------------------------

    def catch_up(self, now: float) -> None:
        """Advance, and apply what is not replayed yet. The deployment lock and the
        mutex are held: a read on a secondary, whose copy was replayed just before."""
        self.advance(now)
        store = self.store
        if self._done < self.applied:
            self._apply_batch(self._done, store.entries(self._done, self.applied))
        self._commit(self._done)

    def _apply_batch(self, start: int, batch: Sequence[OplogEntry]) -> int:
        """Apply the entries of ``batch`` (from oplog index ``start``) that another
        thread has not applied already (the mutex is held); returns the new end."""
        for entry in batch[max(self._done - start, 0) :]:
            apply_entry(self.client, entry)
        self._done = max(self._done, start + len(batch))
        return self._done

    def _commit(self, reached: int) -> None:
        # The deployment lock is held.
        if reached > self.replayed:
            self.replayed = reached
            if self.attached:
                self.store.trim()

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


def new_view(store: DataStore, lag: float = 0.0, *, initial_sync: bool = True) -> ReplicaView:
    """A member's copy, starting at the oplog's end (the deployment lock is held); with
    ``initial_sync`` it starts as a copy of the current data."""
    view = ReplicaView(store, lag)
    if initial_sync:
        view.copy_from(store.client)
    view.start_at(store.oplog_end, store.last_optime)
    store.attach_view(view)
    return view


def replay(
    store: DataStore,
    lock: threading.Condition,
    views: Optional[Sequence[ReplicaView]] = None,
    *,
    wait: bool,
) -> None:
    """Apply the entries ``views`` (default: every copy) count as applied, batch by
    batch, holding ``lock`` (the deployment's, not held by the caller) only to take a
    batch and record its end. With ``wait=False`` a copy another thread is replaying
    is left to that thread."""
    finished: list[tuple[ReplicaView, int]] = []
    while True:
        work: list[tuple[ReplicaView, int, list[OplogEntry]]] = []
        with lock:
            for view, reached in finished:
                view._commit(reached)
            now = store.clock()
            for view in store.views if views is None else views:
                if not view.attached:
                    continue  # removed from the set: nothing to keep it current for
                view.advance(now)
                start = view.replayed
                batch = store.entries(start, min(view.applied, start + REPLAY_CHUNK))
                if batch:
                    work.append((view, start, batch))
        finished = []
        for view, start, batch in work:
            if not view.mutex.acquire(blocking=wait):
                continue
            try:
                finished.append((view, view._apply_batch(start, batch)))
            finally:
                view.mutex.release()
        if not finished:
            return


def apply_entry(client: Any, entry: OplogEntry) -> None:
    """Apply one oplog entry to a copy: by ``_id`` for documents, in constant time."""
    try:
        if entry.op in ("i", "u") and entry.doc is not None:
            by_id.put(client, entry.db, entry.coll, entry.doc_id, entry.doc)
        elif entry.op == "d":
            by_id.remove(client, entry.db, entry.coll, entry.doc_id)
        elif entry.command is not None and "applyOps" in entry.command:
            # A committed transaction: its operations, in order.
            for operation in apply_ops.entries(entry.optime, entry.command):
                apply_entry(client, operation)
        elif entry.command is not None:
            _apply_command(client, entry.db, entry.command)
    except pymongo_errors.PyMongoError:
        # A catalog command that no longer applies (an index already dropped) cannot
        # stop replication.
        pass


def _apply_command(client: Any, db: str, command: Mapping[str, Any]) -> None:
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
    elif "renameCollection" in command:
        _rename(client, command["renameCollection"], command["to"])
