"""The order in which a simulated server intercepts a command, as a MongoDB 7.0 server does.

Every request a process receives (message_loop.py turns it into a command) goes through
:func:`execute`, whose steps are, in order:

1. the process is up (a dead one closes the connection);
2. the handshake: the first hello of a connection records its client metadata,
   application name and ``loadBalanced`` flag;
3. the command is looked up in the registry (command_table.py); an unknown command
   goes on, to fail with CommandNotFound (59) where the process dispatches it (after
   the fail points, where a server answers it before any of these steps);
4. the Stable API parameters (api_parameters.py: 14, 4886600, 322, 323);
5. authentication: with users, a command whose entry ``requires_auth`` is refused
   (Unauthorized, 13) until the connection logs in (security.py);
6. the command's fields: an unknown top-level field of a command parsed strictly is
   refused (40415, registry.py);
7. the ``failCommand`` fail point (failpoints.py): block, then close the connection,
   then fail with the code;
8. the command, by its entry's stage: the process answers a handshake, fail point,
   authentication or control command itself; any other goes to its dispatch
   (:meth:`Process._run`): a mongod's (member.py, below) or a mongos's (sharded.py);
9. the reply: an error gets the labels and the topologyVersion a server adds; a
   ``failCommand`` with ``writeConcernError`` adds it to a success;
10. a mongod's profiler records it, by the level its database had when it started
    (profiler.py).

A mongod then runs, in :meth:`Member._run_command`: the commands of a transaction
(``autocommit``, or an ``END`` entry) through the transaction table, whose rules are
transaction_rules.py's (263, 72, ...); the snapshot read checks; a ``REPLICA_SET``
command on an initiated set (a standalone: NoReplicationEnabled, 76); CommandNotFound;
the entry's deployments and ``admin_only`` (13); its role rule, by ``kind``
(NotWritablePrimary 10107, NotPrimaryNoSecondaryOk 13435, NotPrimaryOrSecondary
13436); ``failGetMoreAfterCursorCheckout``; the txnNumber rules of a retryable write
(20, 50768, 72); a secondary's wait for ``afterClusterTime``; the handler; the
session's record of the write; ``kill_after_write``. A mongos (:meth:`Mongos._run`)
runs a transaction's commands through its router, answers ``LOCAL`` entries and reads
of ``config`` itself, and routes every other command to its shard.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from mongocore.sim.api_parameters import check_api_parameters
from mongocore.sim.codes import CloseConnection, CommandError
from mongocore.sim.control import run_control
from mongocore.sim.error_labels import error_labels
from mongocore.sim.failpoints import FailCommandAction
from mongocore.sim.message_loop import Outcome
from mongocore.sim.profiler import Profiler
from mongocore.sim.registry import (
    AUTHENTICATION,
    CONTROL,
    FAIL_POINTS,
    HANDSHAKE,
    Command,
)
from mongocore.sim.server import Connection

if TYPE_CHECKING:
    from mongocore.sim.process import Process

__all__ = ["execute"]

_log = logging.getLogger("mongocore.sim")


def execute(
    process: Process,
    conn: Connection,
    name: str,
    db: str,
    cmd: dict[str, Any],
    *,
    secondary_ok: bool,
) -> Optional[Outcome]:
    """Run one command through the steps above; None means "never answer"."""
    profiler: Optional[Profiler] = getattr(process, "profiler", None)
    if profiler is None:
        return _execute(process, conn, name, db, cmd, secondary_ok=secondary_ok)
    with process.cond:
        level = profiler.level(db)  # the database's level when the command starts
    started = time.monotonic()
    outcome = _execute(process, conn, name, db, cmd, secondary_ok=secondary_ok)
    if level and outcome is not None:  # 10
        with process.cond:
            profiler.record(
                conn, name, db, cmd, outcome.reply, elapsed=time.monotonic() - started, level=level
            )
    return outcome


def _execute(
    process: Process,
    conn: Connection,
    name: str,
    db: str,
    cmd: dict[str, Any],
    *,
    secondary_ok: bool,
) -> Optional[Outcome]:
    command = process.registry.get(name)
    handshake = command is not None and command.stage == HANDSHAKE and not conn.handshake_done
    security = process.security
    with process.cond:
        if not process.alive:  # 1
            raise CloseConnection
        if handshake:  # 2
            _record_handshake(conn, cmd)
        try:
            # 4: the Stable API parameters are checked first, the handshake's too.
            check_api_parameters(
                name, cmd, api_version_1=command is not None and command.api_version_1
            )
            if command is not None:
                security.check_authorized(conn, name, requires_auth=command.requires_auth)  # 5
                command.check_fields(cmd)  # 6
        except CommandError as exc:
            return Outcome(process._error(exc, cmd))
        action = process.failpoints.fail_command(  # 7
            name, conn.app_name, has_txn_number="txnNumber" in cmd
        )
        if action is not None:
            if action.block_ms:
                interrupted = process._block(conn, name, action.block_ms)
                if process.partition_mode == "drop":
                    return None
                if interrupted is not None:
                    return Outcome(process._error(interrupted, cmd))
            if action.close_connection:
                raise CloseConnection
            if action.error is not None:
                return Outcome(process._fail_point_error(action, action.error, cmd))
    try:
        outcome = _answer(  # 8
            process, command, conn, cmd, name=name, db=db, secondary_ok=secondary_ok
        )
        if outcome is not None:
            security.decorate(conn, name, cmd, outcome.reply, handshake=handshake)
    except CommandError as exc:
        with process.cond:
            # LoadBalancerSupportMismatch closes the connection after the reply.
            return Outcome(process._error(exc, cmd), close_after=exc.code == 354)
    except CloseConnection:
        raise
    except Exception:
        # A defect of the simulator: answered as a server's InternalError, without
        # the Python exception's text (logged for whoever runs the simulator).
        _log.exception("simulated server %s: %r failed", process.label, name)
        with process.cond:
            failure = CommandError(1, f"internal error while executing {name}")
            return Outcome(process._error(failure, cmd))
    finally:
        if handshake:
            conn.handshake_done = True
    if outcome is None:
        return None
    if action is not None and action.write_concern_error and outcome.reply.get("ok"):  # 9
        reply = dict(outcome.reply)
        reply["writeConcernError"] = dict(action.write_concern_error)
        labels = _write_concern_labels(action, action.write_concern_error, cmd)
        if labels:
            reply["errorLabels"] = labels
        outcome = outcome._replace(reply=reply)
    return outcome


def _answer(
    process: Process,
    command: Optional[Command],
    conn: Connection,
    cmd: dict[str, Any],
    *,
    name: str,
    db: str,
    secondary_ok: bool,
) -> Optional[Outcome]:
    """Step 8: what the process answers itself, or its own dispatch."""
    stage = command.stage if command is not None else None
    if stage == HANDSHAKE:
        with process.cond:
            return process._hello(conn, cmd, legacy=name != "hello")
    if stage == FAIL_POINTS:
        with process.cond:
            reply = process._configure_fail_point_command(db, cmd)
            process.deployment.decorate(reply)
            return Outcome(reply)
    if stage == AUTHENTICATION:
        reply = process.security.run(conn, name, db, cmd)
        with process.cond:
            process.deployment.decorate(reply)
        return Outcome(reply)
    if stage == CONTROL:
        reply, after_reply = run_control(process, db, cmd)
        with process.cond:
            process.deployment.decorate(reply)
        return Outcome(reply, after_reply=after_reply)
    return process._run(conn, name, db, cmd, secondary_ok=secondary_ok)


def _record_handshake(conn: Connection, cmd: Mapping[str, Any]) -> None:
    client = cmd.get("client")
    if isinstance(client, Mapping):
        conn.client_metadata = dict(client)
        application = client.get("application")
        if isinstance(application, Mapping) and isinstance(application.get("name"), str):
            conn.app_name = application["name"]
    conn.load_balanced = bool(cmd.get("loadBalanced", False))


def _write_concern_labels(
    action: FailCommandAction, wce: Mapping[str, Any], cmd: Mapping[str, Any]
) -> list[str]:
    if action.labels_override is not None:
        return list(action.labels_override)
    labels = list(wce.get("errorLabels", []))
    code = wce.get("code")
    added = error_labels(next(iter(cmd), ""), cmd, None, code if isinstance(code, int) else None)
    return labels + [label for label in added if label not in labels]
