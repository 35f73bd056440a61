"""Database-level aggregation: ``{aggregate: 1}`` (MongoDB manual, "db.aggregate()").

A pipeline run against a database rather than a collection starts with a stage that
makes its own documents: ``$documents`` (the documents it lists, its expressions
evaluated), ``$listLocalSessions`` (the process's session cache,
:mod:`mongocore.sim.local_sessions`), ``$currentOp`` (admin only, sim/operations.py)
and ``$changeStream`` (sim/change_streams.py). The engine runs ``$documents`` and the later
stages (sim/aggregation.py), and the pipeline may end in ``$out`` or ``$merge``, which
write through the store like a collection's aggregation.
Any other first stage fails with InvalidNamespace (73) "a collection is required",
and a collection's aggregation starting with one of these stages with 73 "can only be
run with {aggregate: 1}", as on a 7.0 server. The cursor's namespace is
``<db>.$cmd.aggregate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim import aggregation
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import parse_collation
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.crud_commands import aggregate_writes
from mongocore.sim.local_sessions import list_local_sessions
from mongocore.sim.scratch import open_cursor
from mongocore.sim.store import translate_store_errors
from mongocore.sim.variables import parse_let

__all__ = ["COLLECTIONLESS_STAGES", "check_collection_pipeline", "cmd_aggregate_database"]

#: First stages that make their own documents: only valid with ``{aggregate: 1}``.
COLLECTIONLESS_STAGES = ("$documents", "$listLocalSessions", "$currentOp", "$changeStream")
# Those this module runs (the others have handlers of their own).
_SOURCES = ("$documents", "$listLocalSessions")


def check_collection_pipeline(cmd: Mapping[str, Any]) -> None:
    """A collection's aggregation may not start with a collectionless stage."""
    first = _first_stage(cmd.get("pipeline"))
    if first in _SOURCES:
        raise CommandError(73, f"'{first}' can only be run with {{aggregate: 1}}")


def _first_stage(pipeline: Any) -> Optional[str]:
    if isinstance(pipeline, list) and pipeline and isinstance(pipeline[0], Mapping):
        return str(next(iter(pipeline[0]), ""))
    return None


def cmd_aggregate_database(ctx: CommandContext) -> Reply:
    """``{aggregate: 1, pipeline: [{$documents | $listLocalSessions: ...}, ...]}``."""
    cmd = ctx.cmd
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list):
        raise CommandError(14, "'pipeline' option must be specified as an array")
    if "cursor" not in cmd:
        raise CommandError(
            9, "The 'cursor' option is required, except for aggregate with the explain argument"
        )
    if not pipeline:
        raise CommandError(73, "{aggregate: 1} is not valid for an empty pipeline.")
    first = _first_stage(pipeline)
    if first not in _SOURCES:
        raise CommandError(
            73, f"{{aggregate: 1}} is not valid for '{first}'; a collection is required."
        )
    for stage in pipeline[1:]:
        name = _first_stage([stage])
        if name in COLLECTIONLESS_STAGES:
            raise CommandError(40602, f"{name} is only valid as the first stage in a pipeline.")
    variables = parse_let(cmd, "aggregate")
    collation = parse_collation(cmd["collation"]) if cmd.get("collation") is not None else None
    namespace = f"{ctx.db}.$cmd.aggregate"
    writes = aggregate_writes(cmd)
    try:
        # $documents is the engine's own first stage; $listLocalSessions's documents
        # come from the process's session cache and the engine runs the rest.
        stages = pipeline if first == "$documents" else pipeline[1:]
        parsed = aggregation.parse(
            stages,
            view=ctx.store.latest if writes else ctx.reader,
            store=ctx.store if writes else None,
            db=ctx.db,
            collation=collation,
            variables=variables.values,
            bypass_validation=bool(cmd.get("bypassDocumentValidation", False)),
        )
        source = [] if first == "$documents" else _sessions(ctx, pipeline[0][first])
        docs = list(parsed.run(source))
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, namespace) from exc
    return open_cursor(ctx, namespace, docs)


def _sessions(ctx: CommandContext, spec: Any) -> list[dict[str, Any]]:
    if ctx.process is None:
        return []
    return list_local_sessions(ctx.process, spec, ctx.cmd)
