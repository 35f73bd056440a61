"""renameCollection on a simulated mongod.

An admin command naming both collections in full (``db.coll``). Within a database the
collection keeps its documents and indexes and the oplog records one
``renameCollection`` entry; across databases the documents and indexes are copied, as
a server does. ``dropTarget`` drops an existing target first; without it an existing
target fails with NamespaceExists (48); a missing source with NamespaceNotFound (26).
"""

from __future__ import annotations

from typing import Any

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply

__all__ = ["cmd_rename_collection"]


def _namespace(value: Any, field: str, which: str) -> tuple[str, str]:
    if not isinstance(value, str):
        raise CommandError(
            14,
            f"BSON field 'renameCollection.{field}' is the wrong type"
            f" '{type(value).__name__}', expected type 'string'",
        )
    db, dot, coll = value.partition(".")
    if not db or not dot or not coll or "$" in db or " " in db:
        raise CommandError(73, f"Invalid {which} namespace: {value}")
    return db, coll


def cmd_rename_collection(ctx: CommandContext) -> Reply:
    if "to" not in ctx.cmd:
        raise CommandError(
            40414, "BSON field 'renameCollection.to' is missing but a required field"
        )
    source_db, source_coll = _namespace(ctx.target, "renameCollection", "source")
    target_db, target_coll = _namespace(ctx.cmd["to"], "to", "target")
    source, target = f"{source_db}.{source_coll}", f"{target_db}.{target_coll}"
    if source == target:
        raise CommandError(20, "Can't rename a collection to itself")
    if source_db in ("admin", "config", "local") or target_db in ("config", "local"):
        raise CommandError(20, f"Cannot rename {source} to {target}: an internal database")
    store = ctx.store
    if not store.collection_exists(source_db, source_coll):
        raise CommandError(26, "source namespace does not exist")
    drop_target = bool(ctx.cmd.get("dropTarget", False))
    if store.collection_exists(target_db, target_coll) and not drop_target:
        raise CommandError(48, "target namespace exists")
    store.rename_collection(source, target, drop_target=drop_target)
    return {"ok": 1.0}
