"""What a simulated server is doing: opcounters, operations in progress, currentOp, killOp.

serverStatus's ``opcounters`` count requests as a server does: each inserted document,
each find, each update and delete statement, each getMore, and every other command.
``currentOp`` and the ``$currentOp`` stage list the operations in progress, one entry
per command a connection is running (shaped as a 7.0 server's ``inprog`` entries).
Commands of one deployment run one at a time, so besides the currentOp itself the
entries are operations that wait: blocked by a fail point, awaiting a topology change
(an awaitable hello), or waiting for a read concern. ``killOp`` marks an operation
killed; one blocked by a fail point then fails at once with Interrupted (11601), as a
killed operation fails at its next interruption point; other waits end as they would.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.scratch import open_cursor, run_pipeline

if TYPE_CHECKING:
    from mongocore.sim.member import Process
    from mongocore.sim.server import Connection

__all__ = [
    "OpCounters",
    "Operation",
    "OperationTable",
    "cmd_current_op",
    "cmd_kill_op",
    "current_op_stage",
    "describe_operations",
]

_COUNTED = ("insert", "query", "update", "delete", "getmore", "command")
# The op types currentOp names.
_OP_TYPES = {
    "insert": "insert",
    "update": "update",
    "delete": "remove",
    "find": "query",
    "getMore": "getmore",
}
# Commands whose first value names a collection of the command's database.
_COLLECTION_COMMANDS = frozenset(
    {
        "insert",
        "update",
        "delete",
        "find",
        "findAndModify",
        "aggregate",
        "count",
        "distinct",
        "create",
        "drop",
        "createIndexes",
        "dropIndexes",
        "listIndexes",
        "collStats",
    }
)
# currentOp's own options; its other fields filter the entries.
_CURRENT_OP_OPTIONS = frozenset({"currentOp", "$all", "$ownOps", "$truncateOps", "comment"})


class OpCounters:
    """serverStatus's ``opcounters`` of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(_COUNTED, 0)

    def record(self, name: str, cmd: Mapping[str, Any]) -> None:
        if name in ("insert", "update", "delete"):
            field_name = {"insert": "documents", "update": "updates", "delete": "deletes"}[name]
            statements = cmd.get(field_name)
            key, count = name, len(statements) if isinstance(statements, list) else 1
        elif name == "find":
            key, count = "query", 1
        elif name == "getMore":
            key, count = "getmore", 1
        else:
            key, count = "command", 1
        with self._lock:
            self._counts[key] += count

    def document(self) -> dict[str, Any]:
        with self._lock:
            return {key: Int64(value) for key, value in self._counts.items()}


@dataclass
class Operation:
    """One command a connection is running."""

    opid: int
    conn: Connection
    name: str
    db: str
    cmd: Mapping[str, Any]
    started: float = field(default_factory=time.monotonic)
    killed: bool = False


class OperationTable:
    """The operations in progress on one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._operations: dict[int, Operation] = {}
        self._next_opid = 0

    @contextmanager
    def running(
        self, conn: Connection, name: str, db: str, cmd: Mapping[str, Any]
    ) -> Iterator[Operation]:
        with self._lock:
            self._next_opid += 1
            operation = Operation(self._next_opid, conn, name, db, cmd)
            self._operations[operation.opid] = operation
        try:
            yield operation
        finally:
            with self._lock:
                self._operations.pop(operation.opid, None)

    def snapshot(self) -> list[Operation]:
        with self._lock:
            return sorted(self._operations.values(), key=lambda op: op.opid)

    def kill(self, opid: int) -> bool:
        with self._lock:
            operation = self._operations.get(opid)
            if operation is not None:
                operation.killed = True
            return operation is not None

    def killed(self, conn: Connection) -> bool:
        """Was the operation this connection is running killed?"""
        with self._lock:
            return any(op.killed for op in self._operations.values() if op.conn is conn)


def _namespace(op: Operation) -> str:
    target = op.cmd.get(op.name)
    if op.name == "getMore" and isinstance(op.cmd.get("collection"), str):
        return f"{op.db}.{op.cmd['collection']}"
    if op.name in _COLLECTION_COMMANDS and isinstance(target, str):
        return f"{op.db}.{target}"
    return f"{op.db}.$cmd"


def _peer(conn: Connection) -> str:
    try:
        host, port = conn.sock.getpeername()[:2]
    except (OSError, ValueError):
        return ""
    return f"{host}:{port}"


def _shown_command(cmd: Mapping[str, Any]) -> dict[str, Any]:
    # A server never shows a password it was sent.
    return {key: ("xxx" if key == "pwd" else value) for key, value in cmd.items()}


def describe_operations(process: Process) -> list[dict[str, Any]]:
    """The process's operations in progress, as ``inprog`` entries."""
    now = time.monotonic()
    current = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    entries = []
    for op in process.operations.snapshot():
        elapsed = max(0.0, now - op.started)
        conn = op.conn
        entry: dict[str, Any] = {
            "type": "op",
            "host": process.host,
            "desc": f"conn{conn.id}",
            "connectionId": conn.id,
            "client": _peer(conn),
        }
        if conn.app_name is not None:
            entry["appName"] = conn.app_name
        if conn.client_metadata is not None:
            entry["clientMetadata"] = conn.client_metadata
        entry.update(
            {
                "active": True,
                "currentOpTime": current,
                "threaded": True,
                "opid": op.opid,
            }
        )
        if isinstance(op.cmd.get("lsid"), Mapping):
            entry["lsid"] = op.cmd["lsid"]
        entry.update(
            {
                "secs_running": Int64(int(elapsed)),
                "microsecs_running": Int64(int(elapsed * 1_000_000)),
                "op": _OP_TYPES.get(op.name, "command"),
                "ns": _namespace(op),
                "redacted": False,
                "command": _shown_command(op.cmd),
                "numYields": 0,
                "locks": {},
                "waitingForLock": False,
                "lockStats": {},
                "waitingForFlowControl": False,
                "flowControlStats": {},
            }
        )
        if op.killed:
            entry["killPending"] = True
        entries.append(entry)
    return entries


def _process(ctx: CommandContext) -> Process:
    if ctx.process is None:
        # CommandNotSupported: a known command that cannot run where there is no process.
        raise CommandError(115, f"{ctx.name} is not supported here")
    return ctx.process


def cmd_current_op(ctx: CommandContext) -> Reply:
    flt = {
        key: value
        for key, value in ctx.cmd.items()
        if key not in _CURRENT_OP_OPTIONS and not key.startswith("$") and key != "lsid"
    }
    entries = describe_operations(_process(ctx))
    matcher = compile_filter(flt)
    matched = [e for e in entries if matcher.matches(e)]
    return {"inprog": matched, "ok": 1.0}


def cmd_kill_op(ctx: CommandContext) -> Reply:
    if "op" not in ctx.cmd:
        raise CommandError(40414, "BSON field 'killOp.op' is missing but a required field")
    opid = ctx.cmd["op"]
    if not isinstance(opid, (int, float)) or isinstance(opid, bool):
        raise CommandError(14, f"BSON field 'killOp.op' is the wrong type '{type(opid).__name__}'")
    process = _process(ctx)
    if process.operations.kill(int(opid)):
        # Wake a wait the operation is in, so that it notices.
        with process.cond:
            process.cond.notify_all()
    # A server answers the same whether or not the operation exists.
    return {"info": "attempting to kill op", "ok": 1.0}


def current_op_stage(ctx: CommandContext) -> Reply:
    """``aggregate: 1`` on admin with a pipeline starting with ``$currentOp``."""
    if ctx.db != "admin" or ctx.target != 1:
        raise CommandError(
            73, "$currentOp must be run against the 'admin' database with {aggregate: 1}"
        )
    spec = ctx.cmd["pipeline"][0]["$currentOp"]
    if not isinstance(spec, Mapping):
        raise CommandError(9, "$currentOp options must be specified in an object")
    docs = run_pipeline(describe_operations(_process(ctx)), ctx.cmd["pipeline"][1:], "admin")
    return open_cursor(ctx, "admin.$cmd.aggregate", docs)
