"""The ``$where`` query operator of the simulated mongod (server-side JavaScript).

Queries run under the deployment's lock, where a script's ``sleep()`` must not
wait. So a command whose filter has ``$where`` (find, count, distinct, findAndModify,
and each update and delete statement) has it evaluated first, without the lock: the
documents it could match are read (under the lock), the function runs on each of them
(sim/javascript.py), and the clause is replaced with ``{_id: {$in: [the matched
_ids]}}`` before the command runs as usual. A top-level ``$where`` runs only on the
documents the rest of the filter matches, as a server evaluates it last; one inside
``$and``, ``$or`` or ``$nor`` runs on every document. What the function saw is the
data as it was read: a write that lands in between is not seen (a server yields
during a long scan too).

An aggregation's ``$match`` refuses ``$where`` (BadValue, 2) as a server does; a
CodeWScope is refused too (4649201), as since 4.4. The
function is interrupted (the child process killed) by a killOp (Interrupted, 11601),
by a step-down for a write (InterruptedDueToReplStateChange, 11602), and when the
client's connection closes, the process dies or the deployment stops (the connection
is closed without a reply).
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bson import Code

from mongocore.sim.codes import CloseConnection, CommandError
from mongocore.sim.javascript import where_matches

if TYPE_CHECKING:
    from mongocore.sim.process import Process
    from mongocore.sim.server import Connection

__all__ = ["OperationInterruption", "Reader", "has_where", "resolve_where"]

#: Reads the documents of ``db.coll`` that a filter matches, under the lock.
Reader = Callable[[str, str, Mapping[str, Any]], list[dict[str, Any]]]

_LOGICAL = ("$and", "$or", "$nor")
# Commands whose statements fail with InterruptedDueToReplStateChange at a step-down.
_WRITES = frozenset({"update", "delete", "findAndModify"})


def _filter_has_where(flt: Any) -> bool:
    if not isinstance(flt, Mapping):
        return False
    if "$where" in flt:
        return True
    return any(
        isinstance(flt.get(key), list) and any(_filter_has_where(c) for c in flt[key])
        for key in _LOGICAL
    )


def _statements(name: str, cmd: Mapping[str, Any]) -> list[tuple[Any, bool]]:
    """Each filter of the command, with whether one matched document is enough."""
    if name == "find":
        return [(cmd.get("filter"), False)]
    if name in ("count", "distinct"):
        return [(cmd.get("query"), False)]
    if name == "findAndModify":
        return [(cmd.get("query"), not cmd.get("sort"))]
    if name in ("update", "delete"):
        statements = cmd.get("updates" if name == "update" else "deletes")
        if not isinstance(statements, list):
            return []
        # One entry per statement, in order (a malformed one has no filter).
        return [
            (
                s.get("q"),
                not s.get("multi") if name == "update" else s.get("limit") == 1,
            )
            if isinstance(s, Mapping)
            else (None, False)
            for s in statements
        ]
    return []


def _match_stages(cmd: Mapping[str, Any]) -> list[Any]:
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list):
        return []
    return [s["$match"] for s in pipeline if isinstance(s, Mapping) and "$match" in s]


def has_where(name: str, cmd: Mapping[str, Any]) -> bool:
    """Does the command filter with ``$where`` (or put it in an aggregation's $match)?"""
    if name == "aggregate":
        return any(_filter_has_where(m) for m in _match_stages(cmd))
    return any(_filter_has_where(flt) for flt, _ in _statements(name, cmd))


def _function_code(value: Any) -> str:
    if isinstance(value, Code) and value.scope is not None:
        raise CommandError(4649201, "$where no longer supports deprecated BSON type CodeWScope")
    if not isinstance(value, str):  # a Code is a str
        raise CommandError(2, "$where got bad type")
    if not value:
        raise CommandError(2, "code for $where cannot be empty")
    return str(value)


def resolve_where(
    name: str,
    db: str,
    cmd: Mapping[str, Any],
    *,
    read: Reader,
    interruption: OperationInterruption,
    now: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """The command with each ``$where`` replaced by the ``_id`` of the documents it matched."""
    if name == "aggregate":
        raise CommandError(2, "$where is not allowed in this context")
    max_time_ms = cmd.get("maxTimeMS")
    deadline = None
    if isinstance(max_time_ms, (int, float)) and not isinstance(max_time_ms, bool):
        deadline = now() + float(max_time_ms) / 1000.0 if max_time_ms > 0 else None
    coll = cmd.get(name)
    if not isinstance(coll, str):
        raise CommandError(2, f"collection name has invalid type {type(coll).__name__}")
    # Under a collation the rest of the filter is not matched here as the command would.
    prefilter = "collation" not in cmd

    def resolve(flt: Mapping[str, Any], top: bool, first_only: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in flt.items():
            if key in _LOGICAL and isinstance(value, list):
                out[key] = [
                    resolve(c, False, False) if isinstance(c, Mapping) else c for c in value
                ]
            else:
                out[key] = value
        if "$where" not in out:
            return out
        code = _function_code(out.pop("$where"))
        documents = read(db, coll, out if top and prefilter else {})
        matched = where_matches(
            code,
            documents,
            interruption,
            deadline=deadline,
            first_only=first_only and top and prefilter,
        )
        ids = [documents[i].get("_id") for i in matched]
        clauses = list(out.get("$and", [])) if isinstance(out.get("$and"), list) else []
        out["$and"] = [*clauses, {"_id": {"$in": ids}}]
        return out

    resolved = dict(cmd)
    if name in ("update", "delete"):
        field = "updates" if name == "update" else "deletes"
        statements = []
        for statement, (flt, first_only) in zip(cmd[field], _statements(name, cmd)):
            if _filter_has_where(flt):
                statements.append(dict(statement, q=resolve(flt, True, first_only)))
            else:
                statements.append(statement)
        resolved[field] = statements
        return resolved
    key = "filter" if name == "find" else "query"
    flt, first_only = _statements(name, cmd)[0]
    resolved[key] = resolve(flt, True, first_only)
    return resolved


def _client_gone(conn: Connection) -> bool:
    """Has the client closed its end of the connection? (A server notices a client that
    disconnects during a long operation and kills the operation.)"""
    if conn.closed:
        return True
    sock = conn.sock
    try:
        fd = sock.fileno()
    except OSError:
        return True
    if fd < 0:
        return True
    hangup = getattr(select, "POLLRDHUP", 0)
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | hangup)
        events = poller.poll(0)
        if not events:
            return False
        if events[0][1] & (hangup | select.POLLHUP | select.POLLERR | select.POLLNVAL):
            return True
    else:
        readable, _, _ = select.select([fd], [], [], 0)
        if not readable:
            return False
    # Readable while a command runs: a client does not send a next request before the
    # reply, so this is the end of the stream, unless bytes are there to peek at. The
    # raw socket is peeked (under TLS too), which leaves the bytes where they are.
    try:
        return socket.socket.recv(sock, 1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class OperationInterruption:
    """What interrupts a command of ``process`` running on ``conn``."""

    def __init__(self, process: Process, conn: Connection, name: str) -> None:
        self._process = process
        self._conn = conn
        self._on_step_down = name in _WRITES
        with process.cond:
            self._epoch = process.state_epoch

    def check(self) -> None:
        process = self._process
        with process.cond:
            if not process.alive or process.deployment.stopping or self._conn.closed:
                raise CloseConnection
            if self._on_step_down and process.state_epoch != self._epoch:
                raise CommandError(
                    11602,
                    "operation was interrupted because the node stepped down"
                    " (InterruptedDueToReplStateChange)",
                )
        if process.operations.killed(self._conn):
            raise CommandError(11601, "operation was interrupted")
        if _client_gone(self._conn):
            raise CloseConnection

    def wait(self, timeout: float) -> None:
        # killOp, a closed connection and a state change notify the condition.
        with self._process.cond:
            self._process.cond.wait(timeout)
