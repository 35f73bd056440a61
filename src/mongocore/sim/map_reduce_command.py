"""The ``mapReduce`` command of the simulated mongod (deprecated, and still run by a
7.0 server).

The JavaScript runs without the deployment's lock, as ``$where``'s does (sim/where.py):
a member first resolves the command (:func:`resolve`): it parses it
(sim/engine/map_reduce.py), reads the input (``query``, ``sort``, ``limit``, under the
collation) under the lock, runs the map, reduce and finalize functions in the
JavaScript child process (sim/javascript.py), and, for the ``reduce`` output action,
reads the output collection's documents of the results' keys and reduces them with
the results. The command then goes through the member's steps as any other, with what
it computed attached (:data:`RESOLVED`), and its handler (:func:`cmd_map_reduce`)
answers the results inline or writes them: ``replace`` makes the output collection
hold them alone (as ``$out``: its indexes and options stay), ``merge`` and ``reduce``
replace the document of each key or insert it. What the functions saw is the data as
it was read; a write landing in between is not seen (a server yields during a long
map-reduce too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.engine import map_reduce
from mongocore.sim.javascript import Interruption, MapReduceScript

__all__ = ["RESOLVED", "cmd_map_reduce", "kind_of", "resolve"]

#: The field a resolved command carries its results in (never a client's: resolve()
#: replaces it).
RESOLVED = "$_simMapReduce"

#: Reads ``db.coll``'s input documents for a spec, under the lock.
InputReader = Callable[[str, map_reduce.MapReduceSpec], list[dict[str, Any]]]
#: Reads the output collection's document of an ``_id``, under the lock (None: none).
StoredReader = Callable[[str, str, Any], Optional[Mapping[str, Any]]]


def kind_of(cmd: Mapping[str, Any]) -> str:
    """Inline results are a read (a secondary answers them); any other output a write."""
    out = cmd.get("out")
    return "read" if isinstance(out, Mapping) and "inline" in out else "write"


def resolve(
    db: str,
    cmd: Mapping[str, Any],
    *,
    generic: frozenset[str],
    read: InputReader,
    stored: StoredReader,
    interruption: Interruption,
    now: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """The command with its results computed and attached (module doc)."""
    command = {k: v for k, v in cmd.items() if k != RESOLVED}
    spec = map_reduce.parse(command, generic=generic)
    deadline = None
    max_time_ms = command.get("maxTimeMS")
    if isinstance(max_time_ms, (int, float)) and not isinstance(max_time_ms, bool):
        deadline = now() + float(max_time_ms) / 1000.0 if max_time_ms > 0 else None
    documents = read(db, spec)
    script = MapReduceScript(
        spec.map,
        spec.reduce,
        spec.finalize,
        spec.scope,
        interruption,
        deadline=deadline,
    )
    with script as functions:
        results = map_reduce.run(documents, functions, finalize=spec.finalize is not None)
        writes: list[dict[str, Any]] = []
        if not spec.out.inline:
            out_db = spec.out.db if spec.out.db is not None else db
            writes = map_reduce.output_writes(
                spec.out,
                lambda key: stored(out_db, spec.out.collection, key),
                results,
                functions,
            )
    command[RESOLVED] = {"results": results, "writes": writes}
    return command


def cmd_map_reduce(ctx: CommandContext) -> Reply:
    """Answer a resolved mapReduce: its results inline, or written to its output."""
    resolved = ctx.cmd.get(RESOLVED)
    if not isinstance(resolved, Mapping):
        raise CommandError(238, "mapReduce here is not supported by the simulator")
    spec = map_reduce.parse(
        {k: v for k, v in ctx.cmd.items() if k != RESOLVED}, generic=frozenset(ctx.cmd)
    )
    results = list(resolved["results"])
    if spec.out.inline:
        return map_reduce.reply(spec, results)
    db = spec.out.db if spec.out.db is not None else ctx.db
    coll = spec.out.collection
    writes = list(resolved["writes"])
    bypass = spec.bypass_document_validation
    if spec.out.action == "replace":
        options = ctx.store.options(db, coll)
        for doc in writes:
            options.check_document(doc, bypass=bypass)
        ctx.store.replace_collection(db, coll, writes)
    else:
        for doc in writes:
            ctx.store.update(
                db, coll, {"_id": doc["_id"]}, doc, upsert=True, bypass_validation=bypass
            )
        if not writes and not ctx.store.collection_exists(db, coll):
            ctx.store.create_collection(db, coll)
    return map_reduce.reply(spec, results)
