"""validate and fsync/fsyncUnlock on a simulated mongod (MongoDB manual, "validate",
"fsync", "fsyncUnlock").

- ``validate`` checks a collection's documents and indexes as a 7.0 server reports it:
  ``ns``, ``uuid``, ``nInvalidDocuments``, ``nNonCompliantDocuments``, ``nrecords``,
  ``nIndexes``, ``keysPerIndex`` (a multikey index has a key per array element; a
  sparse or partial one leaves documents out), ``indexDetails`` (each ``valid``),
  ``valid``, ``repaired``, ``warnings``, ``errors``, ``extraIndexEntries``,
  ``missingIndexEntries``, ``corruptRecords``. The simulator's storage cannot be
  corrupted, so a collection is always valid; a document the collection's validator
  does not accept (stored before the validator, or with ``validationAction: "warn"``) is
  counted in ``nNonCompliantDocuments``, with a warning, as a full validation of a 7.0
  server does. A missing collection: NamespaceNotFound (26); a view:
  CommandNotSupportedOnView (166); ``repair`` (which runs only on a standalone started
  for it) is refused (238).
- ``fsync`` answers ``numFiles``; with ``lock: true`` it blocks the member's writes
  (every command that would change its data waits) until as many ``fsyncUnlock`` as
  there were locks; ``fsyncUnlock`` without a lock fails (IllegalOperation, 20).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mongocore.sim.change_log import collection_uuid
from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.validation import failure_details

if TYPE_CHECKING:
    from mongocore.sim.member import Member

__all__ = ["FSYNC_SEE_ALSO", "cmd_fsync", "cmd_fsync_unlock", "cmd_validate"]

FSYNC_SEE_ALSO = "http://dochub.mongodb.org/core/fsynccommand"


def cmd_validate(ctx: CommandContext) -> Reply:
    coll = ctx.collection_name()
    ns = ctx.namespace(coll)
    store = ctx.store
    if "viewOn" in store.options(ctx.db, coll).extra:
        raise CommandError(166, "Cannot validate a view")
    if not store.collection_exists(ctx.db, coll):
        raise CommandError(26, f"Collection '{ns}' does not exist to validate.")
    if ctx.cmd.get("repair"):
        raise CommandError(238, "validate with repair is not supported by the simulator")
    collection = ctx.reader.collection(ctx.db, coll)
    docs = ctx.reader.documents(ctx.db, coll)
    indexes = ctx.reader.index_names(ctx.db, coll)
    keys_per_index: dict[str, int] = {}
    for name in indexes:
        index = collection.indexes.get(name) if collection is not None else None
        if name == "_id_":
            keys_per_index[name] = len(docs)
        else:
            # The index's own keys of each document (one per array element of a
            # multikey index; none for a document a sparse or partial index leaves out).
            keys_per_index[name] = sum(len(index.keys(doc) or ()) for doc in docs) if index else 0
    options = store.options(ctx.db, coll)
    validator = options.validator if hasattr(options, "validator") else None
    non_compliant = 0
    if isinstance(validator, Mapping) and validator:
        non_compliant = sum(1 for doc in docs if failure_details(validator, doc) is not None)
    warnings: list[str] = []
    if non_compliant:
        warnings.append(
            "Detected one or more documents not compliant with the collection's schema."
            " Check logs for log id 5363500."
        )
    return {
        "ns": ns,
        "uuid": collection_uuid(ctx.db, coll),
        "nInvalidDocuments": 0,
        "nNonCompliantDocuments": non_compliant,
        "nrecords": len(docs),
        "nIndexes": len(indexes),
        "keysPerIndex": keys_per_index,
        "indexDetails": {name: {"valid": True} for name in indexes},
        "valid": True,
        "repaired": False,
        "warnings": warnings,
        "errors": [],
        "extraIndexEntries": [],
        "missingIndexEntries": [],
        "corruptRecords": [],
        "ok": 1.0,
    }


def _member(ctx: CommandContext) -> Member:
    process: Any = ctx.process
    if process is None or not hasattr(process, "fsync_locks"):
        raise CommandError(115, f"{ctx.name} is not supported here")
    member: Member = process
    return member


def cmd_fsync(ctx: CommandContext) -> Reply:
    member = _member(ctx)
    lock = ctx.cmd.get("lock")
    if not lock:
        return {"numFiles": 1, "ok": 1.0}
    member.fsync_locks += 1
    return {
        "info": "now locked against writes, use db.fsyncUnlock() to unlock",
        "lockCount": member.fsync_locks,
        "seeAlso": FSYNC_SEE_ALSO,
        "ok": 1.0,
    }


def cmd_fsync_unlock(ctx: CommandContext) -> Reply:
    member = _member(ctx)
    if member.fsync_locks <= 0:
        raise CommandError(20, "fsyncUnlock called when not locked")
    member.fsync_locks -= 1
    member.cond.notify_all()  # the writes waiting for the unlock
    return {"info": "fsyncUnlock completed", "lockCount": member.fsync_locks, "ok": 1.0}
