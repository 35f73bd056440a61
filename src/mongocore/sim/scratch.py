"""Queries over documents a server makes up on request (status reports, system collections).

``$collStats``, ``$currentOp``, ``local.oplog.rs`` and ``config.shards`` are not stored
collections: their documents are built when asked for. The rest of the request (a
filter, a sort, the later stages of a pipeline) runs on them as on stored documents, in
a throwaway store of the engine (or, for a pipeline, the engine's stages), so the query
language is the one the stored collections speak.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from mongocore.sim import aggregation
from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.store import DataStore, DataView

__all__ = [
    "SystemCollection",
    "batch_size",
    "first_stage",
    "open_cursor",
    "run_pipeline",
    "scratch_view",
]

#: The field a document without ``_id`` is given while it sits in a scratch collection.
_SYNTHETIC_ID = "_id"


def scratch_view(db: str, coll: str, docs: Sequence[Mapping[str, Any]]) -> DataView:
    """A throwaway store holding ``docs`` (each with an ``_id``) in ``db.coll``, in this
    (natural) order."""
    store = DataStore(time.time)
    store.load(db, coll, docs)
    return store.latest


def run_pipeline(
    docs: Sequence[Mapping[str, Any]], pipeline: Sequence[Any], namespace: str
) -> list[dict[str, Any]]:
    """Run the stages of ``pipeline`` on ``docs`` (documents without ``_id`` keep none)."""
    if not pipeline:
        return [dict(doc) for doc in docs]
    return aggregation.run(docs, list(pipeline), db=namespace.partition(".")[0])


def first_stage(cmd: Mapping[str, Any]) -> Optional[str]:
    """The name of an aggregate's first stage, if it has one."""
    pipeline = cmd.get("pipeline")
    if isinstance(pipeline, list) and pipeline and isinstance(pipeline[0], Mapping):
        return next(iter(pipeline[0]), None)
    return None


def batch_size(value: Any) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise CommandError(
            51024, f"BSON field 'batchSize' value must be >= 0, actual value '{value}'"
        )
    return int(value)


def open_cursor(ctx: CommandContext, namespace: str, docs: list[Any]) -> Reply:
    """An aggregate's reply for ``docs``, keeping the rest open for getMore."""
    options = ctx.cmd.get("cursor") or {}
    if not isinstance(options, Mapping):
        raise CommandError(14, "BSON field 'aggregate.cursor' is the wrong type")
    batch = ctx.cursors.open(namespace, docs, batch_size(options.get("batchSize")))
    return {"cursor": batch, "ok": 1.0}


@dataclass
class SystemCollection:
    """A collection a server builds from its own state when it is read."""

    docs: list[dict[str, Any]]
    #: Whether its documents have an ``_id`` (the oplog's have none, nor an _id index).
    has_ids: bool = True
    #: Its options, as listCollections shows them.
    options: dict[str, Any] = field(default_factory=dict)
