"""Unique indexes of a simulated mongod, checked by lookup (MongoDB manual, "Unique
Indexes"; the server's DuplicateKey error, with its ``keyPattern`` and ``keyValue``).

A server refuses a write whose key an index already holds for another document by
looking the key up in the index: the cost does not grow with the collection. So does
the simulator. The ``_id`` index is looked up in mongomock's own dictionary
(sim/by_id.py). Every other unique index, and an ``_id`` index with a collation, has a
table from each key (sim/index_keys.py: multikey, sparse, partial, under the index's
collation) to the documents holding it. A table is built from the collection the
first time its index is checked and then kept up to date from the oplog: the store
hands every entry it appends to :meth:`UniqueIndexes.appended` (an insert or update
carries the document's full post-image, a deletion its ``_id``, a committed
transaction its operations), and a catalog change (drop, rename, index created or
dropped) or a rolled-back statement discards the collection's tables, rebuilt when
next needed.

Safety net, for a change that reaches mongomock without an oplog entry (the store
makes none): a table whose document count differs from the collection's is rebuilt,
and a duplicate is confirmed on the other document itself before it is reported; a
stale table costs a rebuild, never a false DuplicateKey.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from mongocore.sim import apply_ops, by_id
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.index_keys import Key, canonical, index_keys

if TYPE_CHECKING:
    from mongocore.sim.oplog import Checkpoint, OplogEntry

__all__ = ["IndexInfo", "UniqueIndexes", "duplicate_key"]

#: (name, index information as index_information gives it, collation) of one index.
IndexInfo = tuple[str, Mapping[str, Any], Optional[Collation]]
Namespace = tuple[str, str]
_ABSENT: Any = object()


def _format_key(values: Mapping[str, Any]) -> str:
    parts = ", ".join(
        f'{field}: "{value}"' if isinstance(value, str) else f"{field}: {value!r}"
        for field, value in values.items()
    )
    return "{ " + parts + " }"


def duplicate_key(
    namespace: str, name: str, info: Mapping[str, Any], values: Mapping[str, Any]
) -> CommandError:
    """The DuplicateKey (11000) error of a 7.0 server for a key of index ``name``."""
    return CommandError(
        11000,
        f"E11000 duplicate key error collection: {namespace} index: {name}"
        f" dup key: {_format_key(values)}",
        extra={"keyPattern": dict(info["key"]), "keyValue": dict(values)},
    )


class _Table:
    """One unique index's keys: which documents hold each key, and each document's keys."""

    def __init__(self, info: Mapping[str, Any], collation: Optional[Collation]) -> None:
        self.info = info
        self.collation = collation
        self.signature = _signature(info, collation)
        self.holders: dict[Key, set[Any]] = {}
        #: Every document of the collection (its canonical ``_id``): its keys, none if
        #: the index leaves it out; and its ``_id`` as stored.
        self.keys_of: dict[Any, tuple[Key, ...]] = {}
        self.ids: dict[Any, Any] = {}

    def keys(self, doc: Mapping[str, Any]) -> dict[Key, dict[str, Any]]:
        return index_keys(self.info, self.collation, doc) or {}

    def put(self, doc_id: Any, doc: Mapping[str, Any]) -> None:
        self.remove(doc_id)
        ident = canonical(doc_id)
        keys = tuple(self.keys(doc))
        self.keys_of[ident] = keys
        self.ids[ident] = doc_id
        for key in keys:
            self.holders.setdefault(key, set()).add(ident)

    def remove(self, doc_id: Any) -> None:
        ident = canonical(doc_id)
        for key in self.keys_of.pop(ident, ()):
            holders = self.holders.get(key)
            if holders is not None:
                holders.discard(ident)
                if not holders:
                    del self.holders[key]
        self.ids.pop(ident, None)


def _signature(info: Mapping[str, Any], collation: Optional[Collation]) -> tuple[Any, ...]:
    """What the keys depend on: a table built for another index of the same name is rebuilt."""
    partial = info.get("partialFilterExpression")
    return (
        tuple((str(f), d) for f, d in info["key"]),
        bool(info.get("sparse")),
        repr(partial) if partial is not None else None,
        collation,
    )


class UniqueIndexes:
    """The unique-index tables of one store's collections (the owner holds the lock)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._tables: dict[Namespace, dict[str, _Table]] = {}

    # -- checking --------------------------------------------------------------------------

    def check(
        self,
        db: str,
        coll: str,
        doc: Mapping[str, Any],
        indexes: Sequence[IndexInfo],
        *,
        replacing: Any = _ABSENT,
    ) -> None:
        """Refuse ``doc`` if a unique index already holds one of its keys for another
        document; ``replacing``: the ``_id`` of the document ``doc`` replaces."""
        own = canonical(replacing) if replacing is not _ABSENT else _ABSENT
        for index in indexes:
            name, info, collation = index
            if name == "_id_" and collation is None:
                self._check_id((db, coll), info, doc, own)
            elif name == "_id_" or info.get("unique"):
                self._check_table((db, coll), index, doc, own)

    def _check_id(
        self, ns: Namespace, info: Mapping[str, Any], doc: Mapping[str, Any], own: Any
    ) -> None:
        if "_id" not in doc or canonical(doc["_id"]) == own:
            return
        if by_id.get(self._client, ns[0], ns[1], doc["_id"]) is not None:
            raise duplicate_key(f"{ns[0]}.{ns[1]}", "_id_", info, {"_id": doc["_id"]})

    def _check_table(
        self, ns: Namespace, index: IndexInfo, doc: Mapping[str, Any], own: Any
    ) -> None:
        name, info, _ = index
        table = self._table(ns, index)
        keys = table.keys(doc)
        for attempt in (1, 2):
            for key, values in keys.items():
                others = table.holders.get(key, set()) - {own}
                if not others:
                    continue
                if attempt == 2 or self._holds(ns, table, next(iter(others)), key):
                    raise duplicate_key(f"{ns[0]}.{ns[1]}", name, info, values)
                break  # the table is stale: rebuild it and look again
            else:
                return
            table = self._build(ns, index)

    def _holds(self, ns: Namespace, table: _Table, ident: Any, key: Key) -> bool:
        """Does the stored document ``ident`` still have ``key``?"""
        stored = by_id.get(self._client, ns[0], ns[1], table.ids.get(ident))
        return stored is not None and key in table.keys(stored)

    def _table(self, ns: Namespace, index: IndexInfo) -> _Table:
        name, info, collation = index
        table = self._tables.get(ns, {}).get(name)
        if table is not None and table.signature == _signature(info, collation):
            count = by_id.count(self._client, ns[0], ns[1])
            if count is None or count == len(table.keys_of):
                return table
        return self._build(ns, index)

    def _build(self, ns: Namespace, index: IndexInfo) -> _Table:
        name, info, collation = index
        table = _Table(info, collation)
        for doc in by_id.documents(self._client, ns[0], ns[1]):
            table.put(doc["_id"], doc)
        self._tables.setdefault(ns, {})[name] = table
        return table

    # -- keeping the tables up to date -----------------------------------------------------

    def appended(self, entry: OplogEntry, index: int = 0) -> None:
        """The store appended (or a transaction's commit applied) ``entry``."""
        if entry.op in ("i", "u", "d"):
            tables = self._tables.get((entry.db, entry.coll))
            for table in tables.values() if tables else ():
                if entry.op == "d":
                    table.remove(entry.doc_id)
                elif entry.doc is not None:
                    table.put(entry.doc_id, entry.doc)
        elif entry.op == "c" and entry.command is not None:
            self._catalog_change(entry)

    def _catalog_change(self, entry: OplogEntry) -> None:
        command = entry.command or {}
        if "applyOps" in command:
            for operation in apply_ops.entries(entry.optime, command):
                self.appended(operation)
        elif "dropDatabase" in command:
            self.forget(entry.db)
        elif "renameCollection" in command:
            for ns in (command.get("renameCollection"), command.get("to")):
                db, _, coll = str(ns).partition(".")
                self.forget(db, coll)
        elif "collMod" not in command:
            # create, drop, createIndexes, dropIndexes: the tables are rebuilt when needed.
            names = [command[f] for f in ("create", "drop", "createIndexes", "dropIndexes")
                     if isinstance(command.get(f), str)]  # fmt: skip
            for coll in names or [entry.coll]:
                self.forget(entry.db, coll)

    def rolled_back(self, checkpoint: Checkpoint) -> None:
        """The store put a collection back as it was (without oplog entries)."""
        self.forget(checkpoint.db, checkpoint.coll)

    def forget(self, db: str, coll: Optional[str] = None) -> None:
        """Discard the tables of a collection (or of every collection of ``db``)."""
        for ns in [ns for ns in self._tables if ns[0] == db and coll in (None, ns[1])]:
            del self._tables[ns]
