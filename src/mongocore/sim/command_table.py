"""The command table of a simulated mongod: every command it answers and how.

commands.py holds the CRUD, cursor and catalog commands; the diagnostic, statistics,
explain, user-management and rename commands have modules of their own, and the reads
also serve the collections a server builds from its own state (system_collections.py)
and the aggregation stages that report on the server (``$collStats``, ``$currentOp``);
``aggregate: 1`` goes to db_aggregate.py, and views (views.py) wrap the handlers of
the commands they change.
hello, fail points, authentication and the replSet* commands are the member's own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from mongocore.sim import (
    catalog_commands,
    change_streams,
    db_aggregate,
    diagnostic_commands,
    explain,
    operations,
    storage_stats,
    system_collections,
    user_commands,
    views,
)
from mongocore.sim import commands as base
from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, CommandSpec, Handler, Reply
from mongocore.sim.scratch import first_stage

__all__ = ["COMMANDS"]

# Stages that report on the server: a pipeline can only start with them.
_FIRST_ONLY = ("$collStats", "$currentOp")


def _aggregate(read: Handler) -> Handler:
    """aggregate: explain, the reporting stages, a database's aggregation, then any
    other pipeline."""

    def handler(ctx: CommandContext) -> Reply:
        if ctx.cmd.get("explain"):
            return explain.explain_aggregate(ctx)
        stage = first_stage(ctx.cmd)
        pipeline = ctx.cmd.get("pipeline")
        for later in pipeline[1:] if isinstance(pipeline, list) else ():
            for name in _FIRST_ONLY:
                if isinstance(later, Mapping) and name in later:
                    raise CommandError(
                        40602, f"{name} is only valid as the first stage in a pipeline"
                    )
        if stage == "$collStats":
            return storage_stats.coll_stats_stage(ctx)
        if stage == "$currentOp":
            return operations.current_op_stage(ctx)
        if ctx.target == 1 and not change_streams.is_change_stream(ctx.cmd):
            return db_aggregate.cmd_aggregate_database(ctx)  # $documents, $listLocalSessions
        db_aggregate.check_collection_pipeline(ctx.cmd)
        return read(ctx)

    return handler


def _with(spec: CommandSpec, handler: Handler) -> CommandSpec:
    return CommandSpec(
        handler,
        spec.kind,
        admin_only=spec.admin_only,
        retryable_write=spec.retryable_write,
        kind_for=system_collections.local_read_kind(spec.kind),
    )


def _table() -> dict[str, CommandSpec]:
    table = dict(base.COMMANDS)
    for module in (catalog_commands, diagnostic_commands, explain, storage_stats, user_commands):
        table.update(module.COMMANDS)
    table["currentOp"] = CommandSpec(operations.cmd_current_op, "any", admin_only=True)
    table["killOp"] = CommandSpec(operations.cmd_kill_op, "any", admin_only=True)
    for name in ("find", "count", "distinct"):
        table[name] = _with(table[name], system_collections.wrap_read(name, table[name].handler))
    read_aggregate = system_collections.wrap_read("aggregate", table["aggregate"].handler)
    table["aggregate"] = _with(table["aggregate"], _aggregate(read_aggregate))
    table["listCollections"] = _with(
        table["listCollections"],
        system_collections.wrap_list_collections(table["listCollections"].handler),
    )
    table["listIndexes"] = _with(
        table["listIndexes"], system_collections.wrap_list_indexes(table["listIndexes"].handler)
    )
    views.install(table)  # reads of a view run its pipeline; writes are refused
    return table


COMMANDS: dict[str, CommandSpec] = _table()
COMMANDS["listCommands"] = CommandSpec(
    functools.partial(diagnostic_commands.cmd_list_commands, COMMANDS), "any"
)
