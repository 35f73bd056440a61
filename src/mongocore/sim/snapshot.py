"""A transaction's own view of the data: its snapshot and its uncommitted writes
(MongoDB manual, "Transactions and Read Concern": a transaction reads from one snapshot
taken when it starts, and sees its own writes).

A :class:`Workspace` is a private :class:`~mongocore.sim.store.DataStore`. A
collection enters it, copied from the replica set's data (documents, indexes,
options), the first time the transaction's commands name it, or just before anything
else writes to it while the transaction is open, whichever comes first: either way
the copy is the collection as it was when the transaction started (copy on write).
The transaction's commands then run on the workspace with the ordinary command
handlers, so its reads see its own writes and nobody else's, and every write it makes
is an entry of the workspace's own oplog: the operations its commit applies and logs.

Costs: a collection is copied at most once per transaction, and only a collection the
transaction names or one written to while it is open; a commit applies and logs only
the transaction's own entries.

The workspace also remembers what conflict checks need: the documents the transaction
wrote (by collection and encoded ``_id``) and the collections it created or indexed;
and, as :meth:`Workspace.observe` learns of them, the documents others committed since
its snapshot and the collections whose catalog they changed. :func:`statement_namespaces`
and :func:`written_namespaces` tell which collections a command names, so that they
are copied in time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

import bson

from mongocore.sim.store import DataStore, OplogEntry

__all__ = [
    "Namespace",
    "Workspace",
    "document_key",
    "statement_namespaces",
    "written_namespaces",
]

Namespace = tuple[str, str]


def document_key(doc_id: Any) -> bytes:
    """A document's identity within its collection: its ``_id``, encoded (an ``_id`` may
    be a document or an array, which do not hash)."""
    return bytes(bson.encode({"_id": doc_id}))


class Workspace:
    """One transaction's copies of the collections it touched, with its own writes."""

    def __init__(self, live: DataStore) -> None:
        self.live = live
        # The workspace's oplog keeps every entry it logs: what its commit applies.
        self.store = DataStore(live.clock, keep_entries=True)
        self._examined = 0
        self._copied: set[Namespace] = set()
        #: Documents the transaction wrote, by collection.
        self.written: dict[Namespace, set[bytes]] = {}
        #: Collections the transaction created or indexed, and those it created.
        self.catalog: set[Namespace] = set()
        self.created: set[Namespace] = set()
        #: Documents others committed since the snapshot, by collection.
        self.changed: dict[Namespace, set[bytes]] = {}
        #: Collections others created, dropped, renamed or re-indexed since the snapshot.
        self.stale: set[Namespace] = set()
        #: Why the transaction can no longer commit, once a write of others hit its own.
        self.conflict: Optional[str] = None

    # -- the snapshot ------------------------------------------------------------------

    def namespaces(self) -> list[Namespace]:
        """The collections in the workspace (some may be absent from the snapshot)."""
        return list(self._copied)

    def copy(self, namespaces: Iterable[Namespace]) -> None:
        """Make sure these collections are in the workspace, as of the snapshot."""
        for ns in namespaces:
            if ns not in self._copied:
                self._copy(ns)

    def _copy(self, ns: Namespace) -> None:
        self._copied.add(ns)
        db, coll = ns
        live = self.live
        if not live.collection_exists(db, coll):
            return  # absent from the snapshot: the workspace does not have it either
        options = live.catalog.get(ns)
        if options is not None:
            self.store.set_options(db, coll, options)
        self.store.copy_collection(live, db, coll)

    # -- the transaction's writes --------------------------------------------------------

    def new_entries(self) -> list[OplogEntry]:
        """The entries the workspace logged since the last call."""
        end = self.store.oplog_end
        entries = self.store.entries(self._examined, end)
        self._examined = end
        return entries

    def operations(self) -> list[OplogEntry]:
        """Every write of the transaction, in order."""
        return self.store.entries(0, self.store.oplog_end)

    def record(self, entry: OplogEntry) -> None:
        """Count one of the transaction's own entries in its write set."""
        ns = (entry.db, entry.coll)
        if entry.op == "c":
            self.catalog.add(ns)
            if "create" in (entry.command or {}):
                self.created.add(ns)
        else:
            self.written.setdefault(ns, set()).add(document_key(entry.doc_id))

    def wrote(self, ns: Namespace, key: Optional[bytes] = None) -> bool:
        """Did the transaction write this document (or, without a key, in this collection)?"""
        keys = self.written.get(ns)
        if key is None:
            return bool(keys) or ns in self.catalog
        return keys is not None and key in keys

    def changed_since_snapshot(self, ns: Namespace, key: bytes) -> bool:
        keys = self.changed.get(ns)
        return keys is not None and key in keys

    def observe(self, entries: Iterable[OplogEntry]) -> None:
        """Writes others committed while the transaction is open: kept out of its
        snapshot (copied before them), and a conflict if they hit its own writes."""
        for entry in entries:
            if entry.op in ("i", "u", "d"):
                ns = (entry.db, entry.coll)
                key = document_key(entry.doc_id)
                if self.wrote(ns, key):
                    self.conflict = f"{entry.db}.{entry.coll} was written outside the transaction"
                else:
                    self.changed.setdefault(ns, set()).add(key)
            elif entry.op == "c":
                for ns in self._catalog_namespaces(entry):
                    if self.wrote(ns):
                        self.conflict = f"the collection {ns[0]}.{ns[1]} changed"
                    else:
                        self.stale.add(ns)

    def _catalog_namespaces(self, entry: OplogEntry) -> list[Namespace]:
        command = entry.command or {}
        if "dropDatabase" in command:
            return [ns for ns in self._copied if ns[0] == entry.db]
        if "renameCollection" in command:
            return [_split(str(command["renameCollection"])), _split(str(command.get("to", "")))]
        if "applyOps" in command:
            return []
        for field in ("create", "drop", "createIndexes", "dropIndexes", "collMod"):
            if isinstance(command.get(field), str):
                return [(entry.db, command[field])]
        return [(entry.db, entry.coll)] if entry.coll else []

    def publish_catalog(self, namespaces: Iterable[Namespace]) -> None:
        """Give the live data the options of the collections the transaction created
        (its commit applied the collections and their indexes themselves)."""
        for ns in namespaces:
            if ns in self.created and ns in self.store.catalog:
                self.live.set_options(ns[0], ns[1], self.store.catalog[ns])

    def close(self) -> None:
        """Drop the copies (the transaction committed or aborted)."""
        self._copied.clear()
        self.written.clear()
        self.changed.clear()


# -- the collections a command names ---------------------------------------------------


def _split(ns: str) -> Namespace:
    db, _, coll = ns.partition(".")
    return db, coll


def statement_namespaces(name: str, db: str, cmd: Mapping[str, Any]) -> list[Namespace]:
    """The collections a statement reads or writes: its own, and an aggregation's
    $lookup, $graphLookup and $unionWith sources."""
    namespaces: list[Namespace] = []
    coll = cmd.get(name)
    if isinstance(coll, str) and name not in ("getMore", "killCursors"):
        namespaces.append((db, coll))
    if name == "aggregate":
        _pipeline_sources(db, cmd.get("pipeline"), namespaces)
    return namespaces


def _pipeline_sources(db: str, value: Any, out: list[Namespace]) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key in ("$lookup", "$graphLookup", "$unionWith"):
                source = (
                    inner.get("from", inner.get("coll")) if isinstance(inner, Mapping) else inner
                )
                if isinstance(source, str):
                    out.append((db, source))
                elif isinstance(source, Mapping) and isinstance(source.get("coll"), str):
                    out.append((str(source.get("db", db)), source["coll"]))
            _pipeline_sources(db, inner, out)
    elif isinstance(value, list):
        for item in value:
            _pipeline_sources(db, item, out)


def written_namespaces(
    store: DataStore, name: str, db: str, cmd: Mapping[str, Any]
) -> list[Namespace]:
    """The collections a write outside transactions may change (a whole database when
    the command is not one the simulator knows the target of)."""
    target = cmd.get(name)
    if name == "renameCollection" and isinstance(target, str):
        return [_split(target), _split(str(cmd.get("to", "")))]
    if name == "aggregate":
        pipeline = cmd.get("pipeline")
        last = pipeline[-1] if isinstance(pipeline, list) and pipeline else {}
        out = last.get("$out", last.get("$merge")) if isinstance(last, Mapping) else None
        if isinstance(out, Mapping):
            out = out.get("into", out)
        if isinstance(out, str):
            return [(db, out)]
        if isinstance(out, Mapping) and isinstance(out.get("coll"), str):
            return [(str(out.get("db", db)), out["coll"])]
    elif name != "dropDatabase" and isinstance(target, str):
        return [(db, target)]
    return [(db, coll) for coll in store.collection_names(db)]
