"""A simulated server process, mongod or mongos: what every one shares.

A :class:`Process` listens on its own 127.0.0.1 port (server.py) and has a processId
and a topologyVersion counter (the SDAM spec's topologyVersion: a new processId per
start, the counter bumped on every change of its hello), fail points (failpoints.py;
``configureFailPoint`` and from Python), cursors, opcounters and the operations in
progress (operations.py). It runs each command the message loop (message_loop.py)
hands it through the same steps as a 7.0 server (command_pipeline.py: the Stable API
parameters, authorization, the command's fields, the ``failCommand`` fail point, then
the command itself, ``_run``, the mongod's or the mongos's, with the write concern
error a fail point adds); errors get the labels and the topologyVersion a server
adds. Awaitable hello waits for a change of the topologyVersion without holding the
lock.

Locking: every process of a deployment shares the deployment's condition variable.
Commands run while holding it (the store is not thread-safe), and waits (awaitable
hello, blockConnection) release it; every state change notifies it.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Protocol

from bson import Int64, ObjectId

from mongocore.sim import command_pipeline
from mongocore.sim.codes import (
    TOPOLOGY_VERSION_CODES,
    CloseConnection,
    CommandError,
)
from mongocore.sim.commands import (
    MAX_BSON_OBJECT_SIZE,
    MAX_MESSAGE_SIZE_BYTES,
    MAX_WIRE_VERSION,
    MAX_WRITE_BATCH_SIZE,
    MIN_WIRE_VERSION,
    CursorTable,
)
from mongocore.sim.error_labels import error_labels
from mongocore.sim.failpoints import FailCommandAction, FailPoints, Mode
from mongocore.sim.local_sessions import touch as touch_session
from mongocore.sim.message_loop import MessageLoop, Outcome
from mongocore.sim.operations import OpCounters, OperationTable
from mongocore.sim.registry import Registry
from mongocore.sim.security import Security
from mongocore.sim.server import Connection, WireServer
from mongocore.sim.store import OpTime

__all__ = ["LOGICAL_SESSION_TIMEOUT_MINUTES", "Owner", "Process"]

_log = logging.getLogger("mongocore.sim")

LOGICAL_SESSION_TIMEOUT_MINUTES = 30

# Commands a stepping-down primary kills while they are in flight.
_INTERRUPTED_ON_STEP_DOWN = frozenset(
    {
        "insert",
        "update",
        "delete",
        "findAndModify",
        "create",
        "drop",
        "dropDatabase",
        "createIndexes",
        "dropIndexes",
    }
)


class Owner(Protocol):
    """What a process needs from its deployment."""

    cond: threading.Condition
    stopping: bool
    security: Security

    def clock(self) -> float: ...

    def decorate(self, reply: dict[str, Any], optime: Optional[OpTime] = None) -> None: ...


class Process(MessageLoop):
    """One simulated server process listening on its own 127.0.0.1 port."""

    kind = "mongod"
    #: The commands this kind of process knows (command_table.REGISTRY, set by the
    #: subclasses: the table imports the handlers, which import this module).
    registry: Registry

    def __init__(self, owner: Owner, label: str, port: int = 0, host: str = "127.0.0.1") -> None:
        self._owner = owner
        self.cond = owner.cond
        self.label = label
        self.security = owner.security
        self.server = WireServer(
            label,
            self._handle,
            host=host,
            port=port,
            on_close=self._notify,
            ssl_context=self.security.tls,
            tls_optional=self.security.tls_optional,
            compressors=self.security.compressors,
        )
        self.process_id = ObjectId()
        self.counter = 0
        self.failpoints = FailPoints()
        self.cursors = CursorTable()
        self.alive = False
        self.partition_mode: Optional[str] = None
        self.started_at = time.monotonic()
        # Incremented when the process stops being primary: blocked writes notice it.
        self.state_epoch = 0
        self.blocked_operations = 0
        #: The connections (their ids, the hello's connectionId) now waiting in an
        #: awaitable hello: a monitor that streams is in its steady state there. Guarded
        #: by the owner's lock; a change notifies its condition.
        self.awaiting_hellos: set[int] = set()
        # What serverStatus and currentOp report.
        self.opcounters = OpCounters()
        self.operations = OperationTable()

    # -- identity --------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``, as the member names itself in hello, or
        ``<hostname>:<port>`` when the deployment advertises a name of its own
        (``hostname="localhost"``); the process listens on 127.0.0.1 either way."""
        name = getattr(self._owner, "hostname", None) or self.server.host
        return f"{name}:{self.server.port}"

    @property
    def address(self) -> tuple[str, int]:
        return (self.server.host, self.server.port)

    @property
    def topology_version(self) -> dict[str, Any]:
        return {"processId": self.process_id, "counter": Int64(self.counter)}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label} {self.host}>"

    # -- lifecycle (the owner holds the lock) ------------------------------------------

    def _start_listening(self) -> None:
        self.server.open_listener()
        self.alive = True
        self.started_at = time.monotonic()

    def _go_down(self) -> None:
        """The process dies: refuse connections, drop open ones, forget memory state."""
        self.alive = False
        self.partition_mode = None
        self.server.close_listener()
        self.server.close_connections()
        self.cursors.clear()
        self.failpoints.clear()
        self.state_epoch += 1
        self.cond.notify_all()

    def _come_up(self) -> None:
        """A restarted process: a new processId, counter 0, no fail points."""
        self.process_id = ObjectId()
        self.counter = 0
        self.server.reset_connection_ids()
        self._start_listening()
        self.cond.notify_all()

    def _partition(self, mode: str) -> None:
        if mode not in ("refuse", "drop"):
            raise ValueError(f"partition mode must be 'refuse' or 'drop', not {mode!r}")
        self.partition_mode = mode
        if mode == "refuse":
            self.server.close_listener()
            self.server.close_connections()
        self.cond.notify_all()

    def _heal(self) -> None:
        mode, self.partition_mode = self.partition_mode, None
        if mode == "refuse" and self.alive:
            self.server.open_listener()
        self.cond.notify_all()

    def _stop(self) -> None:
        self.alive = False
        self.server.stop()

    def bump_topology_version(self) -> None:
        """The process's hello changed: increment the counter and wake awaitable hellos."""
        self.counter += 1
        self.cond.notify_all()

    def _notify(self) -> None:
        with self.cond:
            self.cond.notify_all()

    @property
    def reachable(self) -> bool:
        return self.alive and self.partition_mode is None

    @property
    def deployment(self) -> Owner:
        """The deployment this process belongs to."""
        return self._owner

    # -- fail points from Python -------------------------------------------------------

    def configure_fail_point(
        self, name: str, mode: Mode, data: Optional[Mapping[str, Any]] = None
    ) -> int:
        """``configureFailPoint`` from Python; returns the previous times-entered count."""
        with self.cond:
            return self.failpoints.configure(name, mode, data)

    def fail_command(
        self,
        *commands: str,
        mode: Mode = "alwaysOn",
        error_code: Optional[int] = None,
        errmsg: Optional[str] = None,
        error_labels: Optional[Sequence[str]] = None,
        close_connection: bool = False,
        write_concern_error: Optional[Mapping[str, Any]] = None,
        block_time_ms: Optional[int] = None,
        app_name: Optional[str] = None,
        fail_internal_commands: bool = False,
    ) -> None:
        """Configure ``failCommand`` for the named commands, as a test suite would over the wire.

        ``fail_command("insert", error_code=91, mode={"times": 1})`` fails the next
        insert with ShutdownInProgress; ``block_time_ms`` blocks before the command.
        """
        data: dict[str, Any] = {"failCommands": list(commands)}
        if error_code is not None:
            data["errorCode"] = error_code
        if errmsg is not None:
            data["errmsg"] = errmsg
        if error_labels is not None:
            data["errorLabels"] = list(error_labels)
        if close_connection:
            data["closeConnection"] = True
        if write_concern_error is not None:
            data["writeConcernError"] = dict(write_concern_error)
        if block_time_ms is not None:
            data["blockConnection"] = True
            data["blockTimeMS"] = block_time_ms
        if app_name is not None:
            data["appName"] = app_name
        if fail_internal_commands:
            data["failInternalCommands"] = True
        self.configure_fail_point("failCommand", mode, data)

    def clear_fail_points(self) -> None:
        with self.cond:
            self.failpoints.clear()

    def _execute(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        """Run one command, counted and listed in currentOp while it runs."""
        self.opcounters.record(name, cmd)
        touch_session(self, conn, name, cmd)  # the session cache ($listLocalSessions)
        with self.operations.running(conn, name, db, cmd):
            return self._execute_command(conn, name, db, cmd, secondary_ok=secondary_ok)

    def _execute_command(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        """Run one command through the pipeline (command_pipeline.py); None means "never
        answer"."""
        return command_pipeline.execute(self, conn, name, db, cmd, secondary_ok=secondary_ok)

    def _block(self, conn: Connection, name: str, block_ms: int) -> Optional[CommandError]:
        """Block for ``blockTimeMS``; the error if a step-down or killOp interrupted it."""
        epoch = self.state_epoch
        interruptible = name in _INTERRUPTED_ON_STEP_DOWN
        deadline = time.monotonic() + block_ms / 1000.0
        self.blocked_operations += 1
        self.cond.notify_all()
        try:
            while True:
                if not self.alive or conn.closed or self._owner.stopping:
                    raise CloseConnection
                if interruptible and self.state_epoch != epoch:
                    return CommandError(
                        11602,
                        "operation was interrupted because the node stepped down"
                        " (InterruptedDueToReplStateChange)",
                    )
                if self.operations.killed(conn):
                    return CommandError(11601, "operation was interrupted")
                if self.partition_mode == "drop":
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.cond.wait(remaining)
        finally:
            self.blocked_operations -= 1
            self.cond.notify_all()

    def _error(
        self,
        exc: CommandError,
        cmd: Mapping[str, Any],
        *,
        compute_labels: bool = True,
    ) -> dict[str, Any]:
        """An error reply with the labels and fields a 7.0 server adds."""
        reply = exc.to_reply()
        added = error_labels(next(iter(cmd), ""), cmd, exc.code) if compute_labels else []
        if added:
            labels = list(reply.get("errorLabels", []))
            reply["errorLabels"] = labels + [label for label in added if label not in labels]
        if exc.code in TOPOLOGY_VERSION_CODES:
            reply["topologyVersion"] = self.topology_version
        self._owner.decorate(reply)
        return reply

    def _fail_point_error(
        self, action: FailCommandAction, error: CommandError, cmd: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A failCommand error: labelled by the fail point, else as the server labels."""
        if action.labels_override is None:
            return self._error(CommandError(error.code, error.errmsg), cmd)
        return self._error(error, cmd, compute_labels=False)

    def _run(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        raise NotImplementedError

    # -- hello -------------------------------------------------------------------------

    def hello_document(
        self, conn: Optional[Connection], cmd: Mapping[str, Any], *, legacy: bool = False
    ) -> dict[str, Any]:
        """This process's hello (or legacy isMaster) reply, without $clusterTime."""
        raise NotImplementedError

    def _hello(
        self, conn: Connection, cmd: Mapping[str, Any], *, legacy: bool
    ) -> Optional[Outcome]:
        """hello and isMaster, awaitable ones included: they stream when asked to."""
        awaitable = self._await_topology_change(conn, cmd)
        if awaitable is None:
            return None
        reply = self.hello_document(conn, cmd, legacy=legacy)
        self._owner.decorate(reply)
        next_cmd = dict(cmd)
        next_cmd["topologyVersion"] = reply["topologyVersion"]
        return Outcome(reply, stream=awaitable, next_cmd=next_cmd)

    def _await_topology_change(self, conn: Connection, cmd: Mapping[str, Any]) -> Optional[bool]:
        """Awaitable hello: wait until the topologyVersion differs or maxAwaitTimeMS passes.

        Returns True if awaitable, False if not, None if the request must go unanswered.
        The owner's lock is held.
        """
        version = cmd.get("topologyVersion")
        max_await = cmd.get("maxAwaitTimeMS")
        if not isinstance(version, Mapping) or max_await is None:
            return False
        if not isinstance(max_await, (int, float)) or isinstance(max_await, bool) or max_await < 0:
            raise CommandError(2, "maxAwaitTimeMS must be a non-negative integer")
        deadline = time.monotonic() + max_await / 1000.0
        self.awaiting_hellos.add(conn.id)
        self.cond.notify_all()
        # A client that hangs up meanwhile gets its connection closed at once, which
        # ends this wait (server.py): its thread does not outlive it by maxAwaitTimeMS.
        self.server.watch_hang_up(conn)
        try:
            while True:
                if not self.alive or conn.closed or self._owner.stopping:
                    raise CloseConnection
                if self.partition_mode == "drop":
                    return None
                if (
                    version.get("processId") != self.process_id
                    or version.get("counter") != self.counter
                ):
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return True
                self.cond.wait(remaining)
        finally:
            self.server.unwatch_hang_up(conn)
            self.awaiting_hellos.discard(conn.id)

    def _common_hello_fields(self, conn: Connection, cmd: Mapping[str, Any]) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
            "maxMessageSizeBytes": MAX_MESSAGE_SIZE_BYTES,
            "maxWriteBatchSize": MAX_WRITE_BATCH_SIZE,
            "localTime": datetime.datetime.now(datetime.timezone.utc),
            "logicalSessionTimeoutMinutes": LOGICAL_SESSION_TIMEOUT_MINUTES,
            "connectionId": conn.id,
            "minWireVersion": MIN_WIRE_VERSION,
            "maxWireVersion": MAX_WIRE_VERSION,
            "readOnly": False,
        }
        if cmd.get("helloOk"):
            doc["helloOk"] = True
        return doc

    def _configure_fail_point_command(self, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        if db != "admin":
            raise CommandError(13, "configureFailPoint may only be run against the admin database.")
        name = cmd.get("configureFailPoint")
        if not isinstance(name, str):
            raise CommandError(14, "configureFailPoint takes the fail point's name")
        if "mode" not in cmd:
            raise CommandError(9, "configureFailPoint requires 'mode'")
        count = self.failpoints.configure(name, cmd["mode"], cmd.get("data"))
        return {"count": count, "ok": 1.0}
