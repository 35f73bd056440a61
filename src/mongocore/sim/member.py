"""A simulated server process (mongod member or mongos) and a mongod member's state.

``Process`` is what every simulated server shares: a listener, a processId and
topologyVersion counter, fail points, cursors, and the message loop: OP_QUERY hello
(the legacy handshake) and OP_MSG, including fire-and-forget requests (moreToCome)
and exhaust streams (exhaustAllowed: awaitable hello, getMore). Its deployment's
:class:`~mongocore.sim.security.Security` adds TLS, authentication (commands are
refused before login when there are users) and compression. ``Member`` adds what
a mongod in a replica set (or a standalone) knows: its role, its configuration
(priority, votes, hidden, arbiter, tags, lag), its lagging copy of the data, and the
rules deciding which commands it accepts in that role.

Locking: every process of a deployment shares the deployment's condition variable.
Commands run while holding it (mongomock is not thread-safe), and waits (awaitable
hello, blockConnection) release it; every state change notifies it.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional, Protocol

from bson import Int64, ObjectId

from mongocore.core.wire import (
    MORE_TO_COME,
    REPLY_AWAIT_CAPABLE,
    REPLY_QUERY_FAILURE,
    Message,
    MsgHeader,
    OpMsg,
    OpQuery,
    encode_op_msg,
    encode_op_reply,
    next_request_id,
)
from mongocore.sim.change_streams import fail_get_more
from mongocore.sim.codes import (
    STATE_CHANGE_CODES,
    TOPOLOGY_VERSION_CODES,
    CloseConnection,
    CommandError,
    error_reply,
)
from mongocore.sim.command_table import COMMANDS
from mongocore.sim.commands import (
    MAX_BSON_OBJECT_SIZE,
    MAX_MESSAGE_SIZE_BYTES,
    MAX_WIRE_VERSION,
    MAX_WRITE_BATCH_SIZE,
    MIN_WIRE_VERSION,
    CommandContext,
    CursorTable,
    aggregate_writes,
)
from mongocore.sim.control import SIM_CONTROL, run_control
from mongocore.sim.error_labels import error_labels
from mongocore.sim.failpoints import FailCommandAction, FailPoints, Mode
from mongocore.sim.operations import OpCounters, OperationTable
from mongocore.sim.replication import ReplicaView, replay
from mongocore.sim.security import AUTH_COMMANDS, Security
from mongocore.sim.server import Connection, WireServer
from mongocore.sim.sessions import RetryableWrite
from mongocore.sim.store import DataStore, OpTime
from mongocore.sim.transactions import LIFETIME_PARAMETER, TransactionTable, is_transaction_command

__all__ = [
    "ARBITER",
    "DOWN",
    "HELLO_NAMES",
    "PRIMARY",
    "REMOVED",
    "SECONDARY",
    "STARTUP",
    "Member",
    "MemberConfig",
    "Outcome",
    "Owner",
    "Process",
]

_log = logging.getLogger("mongocore.sim")

HELLO_NAMES = frozenset({"hello", "isMaster", "ismaster"})

# Member roles, named as replSetGetStatus names the states.
PRIMARY = "PRIMARY"
SECONDARY = "SECONDARY"
ARBITER = "ARBITER"
STARTUP = "STARTUP"  # not initiated: no replica set config yet
REMOVED = "REMOVED"  # removed from the config by a reconfig
DOWN = "DOWN"  # killed

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


class Outcome(NamedTuple):
    """A command's result: the reply, and whether an exhaust stream continues with next_cmd."""

    reply: dict[str, Any]
    stream: bool = False
    next_cmd: Optional[dict[str, Any]] = None
    close_after: bool = False
    #: Run once the reply is sent: simControl's kill or partition of this very process.
    after_reply: Optional[Callable[[], None]] = None


def _read_preference_allows_secondary(read_preference: Any) -> bool:
    # With OP_MSG, secondaryOk is expressed by any $readPreference mode but primary.
    if not isinstance(read_preference, Mapping):
        return False
    mode = read_preference.get("mode", "primary")
    return isinstance(mode, str) and mode != "primary"


class Process:
    """One simulated server process listening on its own 127.0.0.1 port."""

    kind = "mongod"

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
        # What serverStatus and currentOp report.
        self.opcounters = OpCounters()
        self.operations = OperationTable()

    # -- identity --------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``, as the member names itself in hello."""
        return f"{self.server.host}:{self.server.port}"

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

    # -- the message loop --------------------------------------------------------------

    def _handle(self, conn: Connection, header: MsgHeader, message: Message) -> Iterator[bytes]:
        if self.partition_mode == "drop":
            return  # a dropped request is never answered
        if isinstance(message, OpMsg):
            yield from self._handle_op_msg(conn, header, message)
        elif isinstance(message, OpQuery):
            yield from self._handle_op_query(conn, header, message)
        else:
            raise CloseConnection  # a client never sends OP_REPLY

    def _handle_op_query(
        self, conn: Connection, header: MsgHeader, query: OpQuery
    ) -> Iterator[bytes]:
        if not query.is_command:
            failure = {
                "$err": "OP_QUERY is no longer supported."
                " The client driver may require an upgrade.",
                "code": 5739101,
                "ok": 0.0,
            }
            yield encode_op_reply(
                [failure], next_request_id(), header.request_id, response_flags=REPLY_QUERY_FAILURE
            )
            return
        cmd: dict[str, Any] = dict(query.query)
        if "$query" in cmd and isinstance(cmd["$query"], Mapping):
            cmd = dict(cmd["$query"])
        name = next(iter(cmd), "")
        if name not in HELLO_NAMES:
            # MongoDB 5.1+ answers only the handshake over OP_QUERY.
            outcome: Optional[Outcome] = Outcome(
                error_reply(
                    352,
                    f"Unsupported OP_QUERY command: {name}. The client driver may require an"
                    " upgrade. For more details see"
                    " https://dochub.mongodb.org/core/legacy-opcode-removal",
                )
            )
        else:
            outcome = self._execute(conn, name, query.database, cmd, secondary_ok=True)
        if outcome is None:
            return
        yield encode_op_reply(
            [outcome.reply],
            next_request_id(),
            header.request_id,
            response_flags=REPLY_AWAIT_CAPABLE,
        )
        if outcome.close_after:
            raise CloseConnection

    def _handle_op_msg(
        self, conn: Connection, header: MsgHeader, message: OpMsg
    ) -> Iterator[bytes]:
        cmd: dict[str, Any] = message.to_document()
        name = next(iter(cmd), "")
        db = cmd.get("$db")
        outcome: Optional[Outcome]
        if not name:
            outcome = Outcome(error_reply(9, "empty command document"))
        elif not isinstance(db, str) or not db:
            outcome = Outcome(error_reply(40571, "OP_MSG requests require a $db argument"))
        else:
            outcome = None
        secondary_ok = _read_preference_allows_secondary(cmd.get("$readPreference"))
        response_to = header.request_id
        while True:
            if outcome is None:
                assert isinstance(db, str)
                outcome = self._execute(conn, name, db, cmd, secondary_ok=secondary_ok)
                if outcome is None:
                    return
            if message.more_to_come:
                # Fire-and-forget: no reply. A "not primary" failure closes the
                # connection, the only way the client can learn of it.
                if outcome.reply.get("code") in STATE_CHANGE_CODES:
                    raise CloseConnection
                if outcome.after_reply is not None:
                    outcome.after_reply()
                return
            request_id = next_request_id()
            stream = message.exhaust_allowed and outcome.stream and outcome.next_cmd is not None
            yield encode_op_msg(
                outcome.reply,
                request_id,
                response_to=response_to,
                flag_bits=MORE_TO_COME if stream else 0,
            )
            if outcome.after_reply is not None:
                outcome.after_reply()
            if outcome.close_after:
                raise CloseConnection
            if not stream or outcome.next_cmd is None:
                return
            # The next reply of the stream answers this one.
            response_to = request_id
            cmd = outcome.next_cmd
            outcome = None

    def _execute(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        """Run one command, counted and listed in currentOp while it runs."""
        self.opcounters.record(name, cmd)
        with self.operations.running(conn, name, db, cmd):
            return self._execute_command(conn, name, db, cmd, secondary_ok=secondary_ok)

    def _execute_command(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        """Run one command through the fail points; None means "never answer"."""
        handshake = name in HELLO_NAMES and not conn.handshake_done
        security = self.security
        with self.cond:
            if not self.alive:
                raise CloseConnection
            if handshake:
                _record_handshake(conn, cmd)
            try:
                security.check_authorized(conn, name)
            except CommandError as exc:
                return Outcome(self._error(exc, cmd))
            action = self.failpoints.fail_command(
                name, conn.app_name, has_txn_number="txnNumber" in cmd
            )
            if action is not None:
                if action.block_ms:
                    interrupted = self._block(conn, name, action.block_ms)
                    if self.partition_mode == "drop":
                        return None
                    if interrupted is not None:
                        return Outcome(self._error(interrupted, cmd))
                if action.close_connection:
                    raise CloseConnection
                if action.error is not None:
                    return Outcome(self._fail_point_error(action, action.error, cmd))
        try:
            if name in AUTH_COMMANDS:
                reply = security.run(conn, name, db, cmd)
                with self.cond:
                    self._owner.decorate(reply)
                outcome: Optional[Outcome] = Outcome(reply)
            elif name == SIM_CONTROL:
                reply, after_reply = run_control(self, db, cmd)
                with self.cond:
                    self._owner.decorate(reply)
                outcome = Outcome(reply, after_reply=after_reply)
            else:
                outcome = self._run(conn, name, db, cmd, secondary_ok=secondary_ok)
                if outcome is not None:
                    security.decorate(conn, name, cmd, outcome.reply, handshake=handshake)
        except CommandError as exc:
            with self.cond:
                # LoadBalancerSupportMismatch closes the connection after the reply.
                return Outcome(self._error(exc, cmd), close_after=exc.code == 354)
        except CloseConnection:
            raise
        except Exception:
            # A defect of the simulator: answered as a server's InternalError, without
            # the Python exception's text (logged for whoever runs the simulator).
            _log.exception("simulated server %s: %r failed", self.label, name)
            with self.cond:
                failure = CommandError(1, f"internal error while executing {name}")
                return Outcome(self._error(failure, cmd))
        finally:
            if handshake:
                conn.handshake_done = True
        if outcome is None:
            return None
        if action is not None and action.write_concern_error and outcome.reply.get("ok"):
            reply = dict(outcome.reply)
            reply["writeConcernError"] = dict(action.write_concern_error)
            labels = _write_concern_labels(action, action.write_concern_error, cmd)
            if labels:
                reply["errorLabels"] = labels
            outcome = outcome._replace(reply=reply)
        return outcome

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


@dataclass
class MemberConfig:
    """One member's replica-set configuration (``members[n]`` of the replica set config)."""

    priority: float = 1.0
    votes: int = 1
    hidden: bool = False
    arbiter: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    lag: float = 0.0
    port: int = 0
    #: The member's name in the config ("host:port": hello's me, hosts, primary), for a
    #: deployment reached through names a test resolves itself; None: 127.0.0.1:<port>.
    host: Optional[str] = None

    def __post_init__(self) -> None:
        if self.hidden and self.priority != 0:
            raise ValueError("a hidden member must have priority 0")
        if self.arbiter and self.priority != 0:
            self.priority = 0.0


class MemberOwner(Owner, Protocol):
    store: DataStore

    @property
    def transactions(self) -> Optional[TransactionTable]: ...

    @property
    def is_replica_set(self) -> bool: ...

    def data_bearing_count(self) -> int: ...

    def replica_set_hello(self, member: Member) -> dict[str, Any]: ...

    def replica_set_command(
        self, member: Member, name: str, db: str, cmd: Mapping[str, Any]
    ) -> Optional[dict[str, Any]]: ...

    def last_write(self, member: Member) -> Optional[dict[str, Any]]: ...


class Member(Process):
    """A mongod: a replica-set member, or the one process of a standalone."""

    def __init__(self, owner: MemberOwner, index: int, config: MemberConfig, label: str) -> None:
        super().__init__(owner, label, config.port)
        self._member_owner = owner
        self.index = index
        self.member_id = index
        self.config = config
        self.view: Optional[ReplicaView] = None
        self.role = STARTUP
        self.frozen_until = 0.0  # monotonic time before which it may not stand for election
        #: Armed by ``ReplicaSet.kill_after_write``: called (holding the lock) once a write
        #: command changed data on this member, before its reply is sent.
        self.after_write: Optional[Callable[[], None]] = None

    # -- configuration -----------------------------------------------------------------

    @property
    def host(self) -> str:
        """The member's name in the replica set config: ``MemberConfig.host``, else
        ``127.0.0.1:<port>``. The member listens on 127.0.0.1:<port> either way."""
        return self.config.host or super().host

    @property
    def priority(self) -> float:
        return self.config.priority

    @property
    def hidden(self) -> bool:
        return self.config.hidden

    @property
    def arbiter(self) -> bool:
        return self.config.arbiter

    @property
    def tags(self) -> dict[str, str]:
        return dict(self.config.tags)

    @property
    def lag(self) -> float:
        return self.config.lag

    @lag.setter
    def lag(self, seconds: float) -> None:
        with self.cond:
            self.config.lag = float(seconds)
            if self.view is not None:
                self.view.lag = float(seconds)

    @property
    def role(self) -> str:
        """PRIMARY, SECONDARY, ... (the owner holds the lock to change it)."""
        return self._role

    @role.setter
    def role(self, role: str) -> None:
        self._role = role
        if self.view is not None:
            # A primary has applied every entry it wrote, and lags from there once it
            # steps down, dies or is cut off.
            self.view.follow_end(role == PRIMARY)

    @property
    def state(self) -> str:
        return self.role

    @property
    def is_primary(self) -> bool:
        return self.role == PRIMARY

    @property
    def is_secondary(self) -> bool:
        return self.role == SECONDARY

    def _go_down(self) -> None:
        self.after_write = None
        super()._go_down()

    # -- data --------------------------------------------------------------------------

    def reader(self) -> Any:
        """The mongomock client this member's reads see: its own lagging copy unless
        primary. On a secondary the caller holds the lock and the copy's mutex."""
        store = self._member_owner.store
        if self.role == PRIMARY or self.view is None:
            return store.client
        self.view.catch_up(self._owner.clock())
        return self.view.client

    def applied_optime(self) -> OpTime:
        """The optime of the last entry this member has applied (the lock is held): no
        document is touched, so hello and elections never wait for a catch-up."""
        store = self._member_owner.store
        if self.role == PRIMARY or self.view is None:
            return store.last_optime
        self.view.advance(self._owner.clock())
        return self.view.applied_optime

    def _reads_own_copy(self, kind: str) -> bool:
        return kind == "read" and self.role != PRIMARY and self.view is not None

    # -- commands ----------------------------------------------------------------------

    def run_internal(
        self, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool, conn: Connection
    ) -> dict[str, Any]:
        """Run a command sent by a mongos (an internal client): only failInternalCommands apply."""
        with self.cond:
            if not self.reachable:
                raise CommandError(6, f"Connection refused: {self.host} is unreachable")
            self.opcounters.record(name, cmd)
            action = self.failpoints.fail_command(
                name, None, internal=True, has_txn_number="txnNumber" in cmd
            )
            if action is not None and action.error is not None:
                return self._fail_point_error(action, action.error, cmd)
        try:
            outcome = self._run(conn, name, db, cmd, secondary_ok=secondary_ok)
        except CommandError as exc:
            with self.cond:
                return self._error(exc, cmd)
        except CloseConnection:
            # The member closed the mongos's connection (onPrimaryTransactionalWrite).
            with self.cond:
                return self._error(
                    CommandError(6, f"connection to {self.host} closed before a reply"), cmd
                )
        if outcome is None:
            raise CommandError(89, f"no reply from {self.host}")
        return outcome.reply

    def _run(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        """Run a command; replication's work is done around it, without the lock
        (replication.py): a read on a secondary first brings the member's copy up to
        date, and a write is then replayed to every member's copy."""
        spec = COMMANDS.get(name)
        kind = spec.kind_of(cmd) if spec is not None and name not in HELLO_NAMES else "any"
        if (name == "aggregate" and aggregate_writes(cmd)) or is_transaction_command(name, cmd):
            kind = "write"  # a commit, too, is replayed to the copies right away
        store = self._member_owner.store
        view = self.view
        if view is not None and self._reads_own_copy(kind):
            replay(store, self.cond, [view], wait=True)
        try:
            return self._run_command(conn, name, db, cmd, secondary_ok=secondary_ok)
        finally:
            if kind == "write":
                replay(store, self.cond, wait=False)

    def _run_command(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        owner = self._member_owner
        with self.cond:
            if name in HELLO_NAMES:
                return self._hello(conn, cmd, legacy=name != "hello")
            if name == "configureFailPoint":
                reply = self._configure_fail_point_command(db, cmd)
                owner.decorate(reply)
                return Outcome(reply)
            if is_transaction_command(name, cmd) or (
                name == "setParameter" and LIFETIME_PARAMETER in cmd
            ):
                return self._transaction_command(name, db, cmd)
            special = owner.replica_set_command(self, name, db, cmd)
            if special is not None:
                owner.decorate(special)
                return Outcome(special)
            spec = COMMANDS.get(name)
            if spec is None:
                raise CommandError(59, f"no such command: '{name}'")
            if spec.admin_only and db != "admin":
                raise CommandError(13, f"{name} may only be run against the admin database.")
            kind = spec.kind_of(cmd)
            role_kind = kind
            if name == "aggregate" and aggregate_writes(cmd):
                kind = "write"
                # A 5.0+ secondary runs $out and $merge when the read preference lets it
                # read, writing through the primary: here the pipeline runs over the
                # deployment's data, as a caught-up secondary would read it.
                role_kind = "read" if self.role == SECONDARY else "write"
            self._check_role(role_kind, secondary_ok)
            if name == "getMore":
                fail_get_more(self.failpoints, self.cursors, cmd)
            lsid = cmd.get("lsid")
            txn_number = cmd.get("txnNumber")
            retryable: Optional[RetryableWrite] = None
            if txn_number is not None:
                if not owner.is_replica_set:
                    raise CommandError(
                        20, "Transaction numbers are only allowed on a replica set member or mongos"
                    )
                if not spec.retryable_write:
                    raise CommandError(
                        50768,
                        "txnNumber may only be provided for multi-document transactions and"
                        " retryable write commands",
                    )
                if not isinstance(lsid, Mapping):
                    raise CommandError(
                        72, "Transaction number requires a session ID to also be specified"
                    )
                # A retry runs again, but its statements that already wrote are only
                # answered from the session's records (sim/sessions.py).
                owner.store.sessions.begin(lsid, int(txn_number))
                retryable = RetryableWrite(owner.store, self.failpoints, lsid, int(txn_number))
            if kind == "read" and self.role != PRIMARY:
                self._wait_for_read_concern(conn, cmd)
            # A read of the member's own copy holds its mutex (after the lock: the
            # order replication.py keeps), so no replay changes the copy meanwhile; the
            # handler must not wait on the condition. Other kinds read no documents.
            guard: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
            own_copy = self.view is not None and self._reads_own_copy(kind)
            if own_copy and self.view is not None:
                guard = self.view.mutex
            with guard:
                ctx = CommandContext(
                    name=name,
                    db=db,
                    cmd=cmd,
                    store=owner.store,
                    reader=self.reader() if own_copy else owner.store.client,
                    cursors=self.cursors,
                    data_members=owner.data_bearing_count(),
                    retryable=retryable,
                    process=self,
                )
                written = owner.store.oplog_end
                table = owner.transactions
                # Open transactions keep their snapshot of what a write changes.
                with table.around(kind, name, db, cmd) if table else contextlib.nullcontext():
                    reply = COMMANDS[name].handler(ctx)
            if txn_number is not None and isinstance(lsid, Mapping):
                owner.store.sessions.complete(lsid, int(txn_number), reply)
            if self.after_write is not None and owner.store.oplog_end != written:
                # The write is applied (and recorded for its session); the process dies
                # before it can reply.
                after_write, self.after_write = self.after_write, None
                after_write()
                raise CloseConnection
            optime = owner.store.last_optime if kind == "write" else self.applied_optime()
            owner.decorate(reply, optime)
            stream = name == "getMore" and bool(reply.get("cursor", {}).get("id"))
            return Outcome(reply, stream=stream, next_cmd=dict(cmd) if stream else None)

    def _transaction_command(self, name: str, db: str, cmd: dict[str, Any]) -> Outcome:
        """A command of a multi-document transaction (sim/transactions.py), or the
        setParameter of its lifetime limit. The lock is held."""
        owner = self._member_owner
        table = owner.transactions
        if table is None:
            raise CommandError(
                20, "Transaction numbers are only allowed on a replica set member or mongos"
            )
        if name == "setParameter":
            if db != "admin":
                raise CommandError(13, "setParameter may only be run against the admin database.")
            reply = table.set_parameter(cmd)
        else:
            self._check_role("write", secondary_ok=False)
            reply = table.run(
                self,
                name,
                db,
                cmd,
                cursors=self.cursors,
                data_members=owner.data_bearing_count(),
                process=self,
            )
        owner.decorate(reply, owner.store.last_optime)
        return Outcome(reply)

    def _check_role(self, kind: str, secondary_ok: bool) -> None:
        if kind == "any":
            return
        if self.role in (ARBITER, STARTUP, REMOVED, DOWN):
            raise CommandError(13436, "node is not in primary or recovering state")
        if kind == "write" and self.role != PRIMARY:
            raise CommandError(10107, "not primary")
        if kind == "read" and self.role != PRIMARY and not secondary_ok:
            raise CommandError(13435, "not primary and secondaryOk=false")

    def _wait_for_read_concern(self, conn: Connection, cmd: Mapping[str, Any]) -> None:
        """readConcern afterClusterTime on a lagging secondary waits until it has caught up."""
        read_concern = cmd.get("readConcern")
        if not isinstance(read_concern, Mapping) or self.view is None:
            return
        after = read_concern.get("afterClusterTime")
        if after is None:
            return
        max_time_ms = cmd.get("maxTimeMS")
        limit = time.monotonic() + (float(max_time_ms) / 1000.0 if max_time_ms else 60.0)
        while True:
            self.view.advance(self._owner.clock())
            if self.view.applied_optime.ts >= after:
                return
            due = self.view.next_apply_time(after)
            if due is None:
                return  # not written yet: nothing to wait for
            wait = min(due - self._owner.clock(), limit - time.monotonic())
            if wait <= 0 and time.monotonic() >= limit:
                raise CommandError(50, "operation exceeded time limit")
            if not self.alive or conn.closed or self._owner.stopping:
                raise CloseConnection
            self.cond.wait(max(wait, 0.001))

    def hello_document(
        self, conn: Optional[Connection], cmd: Mapping[str, Any], *, legacy: bool = False
    ) -> dict[str, Any]:
        """This member's hello (or legacy isMaster) reply, without $clusterTime."""
        owner = self._member_owner
        writable_key = "ismaster" if legacy else "isWritablePrimary"
        doc: dict[str, Any] = {"topologyVersion": self.topology_version}
        if not owner.is_replica_set:
            doc[writable_key] = True
        elif self.role in (STARTUP, REMOVED):
            doc[writable_key] = False
            doc["secondary"] = False
            doc["info"] = "Does not have a valid replica set config"
            doc["isreplicaset"] = True
        else:
            doc[writable_key] = self.role == PRIMARY
            doc.update(owner.replica_set_hello(self))
        if conn is not None:
            doc.update(self._common_hello_fields(conn, cmd))
        doc["ok"] = 1.0
        return doc
