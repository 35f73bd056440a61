"""A simulated mongod: a replica-set member, or the one process of a standalone.

A :class:`Member` is a :class:`~mongocore.sim.process.Process` (listener, fail points,
the command pipeline; its wire side in message_loop.py) that also knows what a mongod
in a replica set knows: its role, its configuration (priority, votes, hidden, arbiter,
tags, lag) and the data it reads, as of its position (member_state.py, replication.py), and
runs each command by the rules of its registry entry (command_table.py) in the order
command_pipeline.py lists: transactions, the set's own commands, the role check
(NotWritablePrimary, NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary), retryable-write
records, read concern waits, and the data as of the member's position for secondary
reads (or as of a snapshot read's atClusterTime).

Locking: every process of a deployment shares the deployment's condition variable.
Commands run while holding it (the store is not thread-safe), and waits (awaitable
hello, blockConnection) release it; every state change notifies it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim import map_reduce_command, views
from mongocore.sim.change_streams import fail_get_more
from mongocore.sim.codes import (
    CloseConnection,
    CommandError,
)
from mongocore.sim.command_table import REGISTRY
from mongocore.sim.commands import (
    CommandContext,
    aggregate_writes,
)
from mongocore.sim.engine.map_reduce import MapReduceSpec
from mongocore.sim.local_sessions import touch as touch_session
from mongocore.sim.member_state import (
    ARBITER,
    DOWN,
    PRIMARY,
    REMOVED,
    SECONDARY,
    STARTUP,
    MemberConfig,
    MemberState,
)
from mongocore.sim.message_loop import HELLO_NAMES, Outcome
from mongocore.sim.process import Owner, Process
from mongocore.sim.query import match_context
from mongocore.sim.registry import (
    DATA,
    END,
    GENERIC_ARGUMENTS,
    NO,
    REPLICA_SET,
    REPLICA_SET_MEMBER,
    STANDALONE,
    Command,
)
from mongocore.sim.server import Connection
from mongocore.sim.sessions import RetryableWrite
from mongocore.sim.snapshot_reads import add_at_cluster_time, check_snapshot_read, snapshot_time
from mongocore.sim.store import DataView, translate_store_errors
from mongocore.sim.transactions import is_transaction_command
from mongocore.sim.where import OperationInterruption, has_where, resolve_where
from mongocore.sim.write_concern import check_write_concern, wait_for_write_concern

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


class Member(MemberState):
    """A mongod: a replica-set member, or the one process of a standalone."""

    registry = REGISTRY

    # -- commands ----------------------------------------------------------------------

    def run_internal(
        self, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool, conn: Connection
    ) -> dict[str, Any]:
        """Run a command sent by a mongos (an internal client): only failInternalCommands apply."""
        with self.cond:
            if not self.reachable:
                raise CommandError(6, f"Connection refused: {self.host} is unreachable")
            self.opcounters.record(name, cmd)
            touch_session(self, conn, name, cmd)
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
        """Run a command (a ``$where`` evaluated first, without the lock)."""
        command = self.registry.get(name)
        kind = command.kind_of(cmd) if command is not None and command.stage == DATA else "any"
        if (name == "aggregate" and aggregate_writes(cmd)) or is_transaction_command(name, cmd):
            kind = "write"
        if has_where(name, cmd):
            cmd = self._resolve_where(conn, name, db, cmd, kind=kind, secondary_ok=secondary_ok)
        # (In a transaction, the member's steps refuse it as a server does.)
        map_reduce = command is not None and command.name == "mapReduce"
        if map_reduce and not is_transaction_command(name, cmd):
            cmd = self._resolve_map_reduce(conn, db, cmd, kind=kind, secondary_ok=secondary_ok)
        return self._run_command(conn, command, name, db, cmd, secondary_ok=secondary_ok)

    def _resolve_map_reduce(
        self, conn: Connection, db: str, cmd: dict[str, Any], *, kind: str, secondary_ok: bool
    ) -> dict[str, Any]:
        """A mapReduce's JavaScript run first, without the lock (sim/map_reduce_command.py)."""

        def view() -> DataView:
            self._check_role(kind, secondary_ok)
            own_copy = self._reads_own_copy(kind)
            return self.reader() if own_copy else self._member_owner.store.latest

        def read(db: str, spec: MapReduceSpec) -> list[dict[str, Any]]:
            with self.cond:
                store = self._member_owner.store
                if views.resolve(store, db, spec.collection) is not None:
                    # "Views do not support map-reduce" (the manual, "Views").
                    raise CommandError(
                        166, f"Namespace {db}.{spec.collection} is a view, not a collection"
                    )
                try:
                    collation = store.collation_for(db, spec.collection, spec.collation)
                    return view().find(
                        db,
                        spec.collection,
                        spec.query,
                        sort=spec.sort,
                        limit=spec.limit,
                        context=match_context(collation),
                    )
                except Exception as exc:
                    raise translate_store_errors(exc, f"{db}.{spec.collection}") from exc

        def stored(db: str, coll: str, doc_id: Any) -> Optional[Mapping[str, Any]]:
            with self.cond:
                found = view().find(db, coll, {"_id": {"$eq": doc_id}}, limit=1)
                return found[0] if found else None

        interruption = OperationInterruption(self, conn, "mapReduce")
        return map_reduce_command.resolve(
            db,
            cmd,
            generic=GENERIC_ARGUMENTS,
            read=read,
            stored=stored,
            interruption=interruption,
        )

    def _resolve_where(
        self,
        conn: Connection,
        name: str,
        db: str,
        cmd: dict[str, Any],
        *,
        kind: str,
        secondary_ok: bool,
    ) -> dict[str, Any]:
        """The command with its $where evaluated first, without the lock (sim/where.py)."""
        if name != "aggregate" and is_transaction_command(name, cmd):
            raise CommandError(238, "$where in a transaction is not supported by the simulator")

        def read(db: str, coll: str, flt: Mapping[str, Any]) -> list[dict[str, Any]]:
            with self.cond:
                self._check_role(kind, secondary_ok)
                own_copy = self._reads_own_copy(kind)
                reader = self.reader() if own_copy else self._member_owner.store.latest
                try:
                    return reader.find(db, coll, flt)
                except Exception as exc:
                    raise translate_store_errors(exc, f"{db}.{coll}") from exc

        interruption = OperationInterruption(self, conn, name)
        return resolve_where(name, db, cmd, read=read, interruption=interruption)

    @property
    def deployment_kind(self) -> str:
        """What the registry calls this process's deployment (command_table.py)."""
        return REPLICA_SET_MEMBER if self._member_owner.is_replica_set else STANDALONE

    def _run_command(
        self,
        conn: Connection,
        command: Optional[Command],
        name: str,
        db: str,
        cmd: dict[str, Any],
        *,
        secondary_ok: bool,
    ) -> Optional[Outcome]:
        """The mongod's steps, in the order command_pipeline.py lists them."""
        owner = self._member_owner
        with self.cond:
            if self.role == PRIMARY:
                # The TTL monitor's pass, when one is due (sim/ttl_monitor.py).
                owner.ttl_monitor.run_if_due(owner.store, owner.transactions)
            if is_transaction_command(name, cmd):
                return self._transaction_command(command, name, db, cmd)
            check_snapshot_read(name, cmd, supported=owner.is_replica_set)
            if command is not None and command.stage == REPLICA_SET and not owner.is_replica_set:
                raise CommandError(76, "not running with --replSet")
            if command is None or not command.runs_on(self.deployment_kind):
                raise CommandError(59, f"no such command: '{name}'")
            if command.stage not in (DATA, REPLICA_SET):
                # Answered by the process itself (command_pipeline.py), never here.
                raise CommandError(1, f"{name} cannot run here")
            if command.admin_only and db != "admin":
                raise CommandError(13, f"{name} may only be run against the admin database.")
            kind = command.kind_of(cmd)
            role_kind = kind
            if name == "aggregate" and aggregate_writes(cmd):
                kind = "write"
                # A 5.0+ secondary runs $out and $merge when the read preference lets it
                # read, writing through the primary: here the pipeline runs over the
                # deployment's data, as a caught-up secondary would read it.
                role_kind = "read" if self.role == SECONDARY else "write"
            self._check_role(role_kind, secondary_ok)
            if kind == "write":
                check_write_concern(cmd)
                self._wait_for_fsync_unlock(conn)
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
                if not command.retryable_write:
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
            # A secondary's read sees the data as of the optime it has applied.
            own_copy = self._reads_own_copy(kind)
            reader = self.reader() if own_copy else owner.store.latest
            at = snapshot_time(name, cmd)
            if at is not None:
                reader = owner.store.view(at)  # a snapshot read: as of its atClusterTime
            ctx = CommandContext(
                name=name,
                db=db,
                cmd=cmd,
                store=owner.store,
                reader=reader,
                cursors=self.cursors,
                data_members=owner.data_bearing_count(),
                retryable=retryable,
                process=self,
            )
            written = owner.store.oplog_end
            table = owner.transactions
            handler = command.handler_on(self.deployment_kind)
            # Open transactions keep their snapshot of what a write changes.
            with table.around(kind, name, db, cmd) if table else contextlib.nullcontext():
                reply = handler(ctx)
            if txn_number is not None and isinstance(lsid, Mapping):
                owner.store.sessions.complete(lsid, int(txn_number), reply)
            now = self.applied_optime().ts if own_copy else owner.store.last_optime.ts
            add_at_cluster_time(name, cmd, reply, now)
            self._after_write(written)
            if kind == "write" and reply.get("ok"):
                self._wait_for_write_concern(cmd, reply)
            optime = owner.store.last_optime if kind == "write" else self.applied_optime()
            owner.decorate(reply, optime)
            stream = name == "getMore" and bool(reply.get("cursor", {}).get("id"))
            return Outcome(reply, stream=stream, next_cmd=dict(cmd) if stream else None)

    def _transaction_command(
        self, command: Optional[Command], name: str, db: str, cmd: dict[str, Any]
    ) -> Outcome:
        """A command of a multi-document transaction (sim/transactions.py), by the rules
        of its registry entry. The lock is held."""
        owner = self._member_owner
        table = owner.transactions
        if table is None:
            raise CommandError(
                20, "Transaction numbers are only allowed on a replica set member or mongos"
            )
        self._check_role("write", secondary_ok=False)
        ends = command is not None and command.transaction == END
        if ends:
            check_write_concern(cmd)
            self._wait_for_fsync_unlock(None)
        written = owner.store.oplog_end
        reply = table.run(
            self,
            name,
            db,
            cmd,
            cursors=self.cursors,
            data_members=owner.data_bearing_count(),
            process=self,
            rule=command.transaction if command is not None else NO,
            handler=command.handler if command is not None else None,
        )
        self._after_write(written)  # a commit wrote its applyOps entry
        if ends and reply.get("ok"):
            self._wait_for_write_concern(cmd, reply)
        owner.decorate(reply, owner.store.last_optime)
        return Outcome(reply)

    def _wait_for_write_concern(self, cmd: Mapping[str, Any], reply: dict[str, Any]) -> None:
        """The write concern's wait (write_concern.py); its error goes in the reply."""
        error = wait_for_write_concern(self, cmd, self._member_owner.store.last_optime.ts)
        if error is not None:
            reply["writeConcernError"] = error

    def _wait_for_fsync_unlock(self, conn: Optional[Connection]) -> None:
        """A write waits while ``fsync`` holds the member locked (maintenance_commands.py);
        it counts among the ``blocked_operations`` meanwhile."""
        if self.fsync_locks <= 0:
            return
        self.blocked_operations += 1
        self.cond.notify_all()
        try:
            while self.fsync_locks > 0:
                if not self.alive or self._owner.stopping or (conn is not None and conn.closed):
                    raise CloseConnection
                self.cond.wait(1.0)
        finally:
            self.blocked_operations -= 1
            self.cond.notify_all()

    def _after_write(self, written: int) -> None:
        """``ReplicaSet.kill_after_write``: once a command changed the data (the oplog
        moved past ``written``), the armed process dies before it can reply. The write
        is applied, and recorded for its session."""
        if self.after_write is not None and self._member_owner.store.oplog_end != written:
            after_write, self.after_write = self.after_write, None
            after_write()
            raise CloseConnection

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
