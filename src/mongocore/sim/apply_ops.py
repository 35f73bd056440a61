"""The oplog entry of a committed transaction: one ``applyOps`` command entry holding the
transaction's operations in order (the server's unprepared-transaction oplog format).

A 7.0 server logs a transaction that commits as one ``c`` entry on ``admin.$cmd`` whose
``o`` is ``{applyOps: [operation, ...]}``, with the session's ``lsid`` and
``txnNumber``. Each operation is shaped as an oplog entry of its own: ``op``, ``ns``
and ``o`` (plus ``o2`` for an update). The simulator keeps its own conventions inside
them: ``i`` holds the inserted document, ``u`` the document's full post-image (a
server logs a diff) with ``o2: {_id}``, ``d`` holds ``{_id}``, and ``c`` (on
``db.$cmd``) the catalog command (``create``, ``createIndexes``). An ``i`` or ``u``
operation may also carry ``update``: what the statement applied (an update document,
a pipeline or a replacement), as the simulator's own entries do for change streams.

:func:`operation` turns one of the simulator's :class:`~mongocore.sim.oplog.OplogEntry`
into such an operation and :func:`entries` turns an ``applyOps`` command back into
entries (all at the transaction's optime), which is how a member's copy replays it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Int64

from mongocore.sim.oplog import OplogEntry, OpTime

__all__ = ["apply_ops_command", "entries", "operation"]

Document = dict[str, Any]


def operation(entry: OplogEntry) -> Document:
    """One of a transaction's writes as an ``applyOps`` operation."""
    if entry.op == "c":
        return {"op": "c", "ns": f"{entry.db}.$cmd", "o": dict(entry.command or {})}
    ns = f"{entry.db}.{entry.coll}"
    if entry.op == "d":
        return {"op": "d", "ns": ns, "o": {"_id": entry.doc_id}}
    doc: Document = {"op": entry.op, "ns": ns, "o": dict(entry.doc or {})}
    if entry.op == "u":
        doc["o2"] = {"_id": entry.doc_id}
    if entry.update is not None:
        doc["update"] = entry.update
    return doc


def apply_ops_command(
    operations: list[Document], lsid: Mapping[str, Any], txn_number: int
) -> Document:
    """The command of a committed transaction's oplog entry."""
    return {"applyOps": operations, "lsid": dict(lsid), "txnNumber": Int64(txn_number)}


def entries(optime: OpTime, command: Mapping[str, Any]) -> list[OplogEntry]:
    """The operations of an ``applyOps`` command, as entries of the transaction's optime."""
    out: list[OplogEntry] = []
    for op in command.get("applyOps") or ():
        if not isinstance(op, Mapping):
            continue
        kind = str(op.get("op", ""))
        db, _, coll = str(op.get("ns", "")).partition(".")
        o = op.get("o")
        if kind == "c" and isinstance(o, Mapping):
            out.append(OplogEntry(optime, "c", db, "", command=dict(o)))
        elif kind == "d" and isinstance(o, Mapping):
            out.append(OplogEntry(optime, "d", db, coll, o.get("_id")))
        elif kind in ("i", "u") and isinstance(o, Mapping):
            out.append(
                OplogEntry(optime, kind, db, coll, o.get("_id"), dict(o), None, op.get("update"))
            )
    return out
