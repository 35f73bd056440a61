"""Multi-document transactions on a simulated replica set (transactions spec; MongoDB
manual, "Transactions", "Production Considerations"; the server's transaction
participant), as a 7.0 primary runs them.

A command carrying ``lsid``, ``txnNumber``, ``autocommit: false`` and
``startTransaction: true`` starts a transaction; later commands with the same session
and number and ``autocommit: false`` run in it, on its :class:`~mongocore.sim.snapshot.Workspace`;
``commitTransaction`` applies its writes to the set's data at once and logs them as one
``applyOps`` oplog entry (:mod:`mongocore.sim.apply_ops`), which every member's copy
replays; ``abortTransaction`` discards them. What the server answers:

- a number below the session's: TransactionTooOld (225); a transaction started twice
  with one number: ConflictingOperationInProgress (117); a command for a number the
  session is not running a transaction with, or for an aborted transaction:
  NoSuchTransaction (251); anything but a commit after the commit:
  TransactionCommitted (256). A commit retried after it succeeded succeeds again, on
  any primary (the outcome belongs to the set's data, like retryable-write records).
- a command that fails inside a transaction aborts it (so does a write error: the
  batch stops at it, ordered or not). Errors of the ``failCommand`` fail point come
  before the transaction is looked at and abort nothing, as on a server.
- write conflicts: writing a document another open transaction wrote, or one somebody
  committed since this transaction's snapshot, fails with WriteConflict (112) and
  aborts this transaction. A write outside any transaction to a document an open
  transaction wrote goes ahead (a server makes it wait for that transaction instead),
  and the transaction then fails its next command or its commit with WriteConflict.
- an in-progress transaction is aborted when its primary steps down or dies, when the
  session moves on to a newer txnNumber, when ``endSessions``, ``killSessions`` or
  ``killAllSessions`` names it, and when it outlives ``transactionLifetimeLimitSeconds``
  (default 60, set with ``setParameter`` on any member of the set; measured on the
  set's clock, from the transaction's first command).
- refused as a 7.0 server refuses them: what :mod:`mongocore.sim.transaction_rules`
  lists (e.g. count: OperationNotSupportedInTransaction, 263), an explicit create or
  createIndexes unless the read concern is local, createIndexes on a collection that
  existed before the transaction (263), and ``readConcern`` on any command but the
  first (InvalidOptions, 72).

Error labels come from :mod:`mongocore.sim.error_labels`. The deployment's lock is held
by every caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Protocol

import bson

from mongocore.sim.apply_ops import apply_ops_command, operation
from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, CursorTable, Handler
from mongocore.sim.snapshot import Workspace, document_key, statement_namespaces, written_namespaces
from mongocore.sim.store import DataStore, OplogEntry
from mongocore.sim.transaction_rules import (
    TRANSACTION_COMMANDS,
    check_command,
    is_transaction_command,
    read_concern_level,
    session_options,
)
from mongocore.sim.ttl_monitor import SLEEP_PARAMETER, TTLMonitor

__all__ = [
    "DEFAULT_LIFETIME_LIMIT",
    "LIFETIME_PARAMETER",
    "SESSION_END_COMMANDS",
    "TRANSACTION_COMMANDS",
    "Transaction",
    "TransactionTable",
    "cmd_set_parameter",
    "is_transaction_command",
]

Reply = dict[str, Any]

DEFAULT_LIFETIME_LIMIT = 60.0
LIFETIME_PARAMETER = "transactionLifetimeLimitSeconds"
SESSION_END_COMMANDS = frozenset({"endSessions", "killSessions", "killAllSessions"})

_BATCHED = frozenset({"insert", "update", "delete"})
_WRITE_CONFLICT = (
    "WriteConflict error: this operation conflicted with another operation. Please retry"
    " your operation or multi-document transaction."
)

IN_PROGRESS = "in progress"
COMMITTED = "committed"
ABORTED = "aborted"


class Host(Protocol):
    """The member a transaction runs on: its state changes end the transaction."""

    @property
    def state_epoch(self) -> int: ...


@dataclass
class Transaction:
    """One session's transaction: its number, state and (while in progress) workspace."""

    lsid: dict[str, Any]
    txn_number: int
    host: Host
    epoch: int
    expires_at: float
    read_concern_level: str
    workspace: Optional[Workspace]
    state: str = IN_PROGRESS


def _session_key(lsid: Mapping[str, Any]) -> bytes:
    return bytes(bson.encode(lsid))


def _session_id(lsid: Mapping[str, Any]) -> str:
    value = lsid.get("id")
    try:
        return str(value.as_uuid()) if isinstance(value, bson.Binary) else str(value)
    except ValueError:
        return repr(value)


class TransactionTable:
    """The transactions of one replica set, by session (the deployment lock is held)."""

    def __init__(self, store: DataStore) -> None:
        self.store = store
        #: transactionLifetimeLimitSeconds: applies to transactions started afterwards.
        self.lifetime_limit = DEFAULT_LIFETIME_LIMIT
        self._transactions: dict[bytes, Transaction] = {}
        self._open: dict[bytes, Transaction] = {}

    # -- inspection ----------------------------------------------------------------------

    def get(self, lsid: Mapping[str, Any]) -> Optional[Transaction]:
        """The session's latest transaction, in whatever state."""
        return self._transactions.get(_session_key(lsid))

    def open_transactions(self) -> list[Transaction]:
        """The transactions in progress (after aborting those that ran out of time)."""
        self._reap()
        return list(self._open.values())

    # -- the member's entry points -------------------------------------------------------

    def run(
        self,
        host: Host,
        name: str,
        db: str,
        cmd: Mapping[str, Any],
        *,
        cursors: CursorTable,
        data_members: int = 1,
        process: Any = None,
        rule: str = "no",
        handler: Optional[Handler] = None,
    ) -> Reply:
        """Run a command of a transaction on the primary ``host``; raises CommandError.
        ``rule`` is the command's transaction rule (its registry entry's), ``handler``
        what runs a statement."""
        lsid, txn_number, start = session_options(name, cmd)
        check_command(name, db, cmd, start, rule)
        self._reap()
        if name == "coordinateCommitTransaction":
            return self._recover(lsid, txn_number)
        if start:
            txn = self._start(host, lsid, txn_number, cmd)
        else:
            txn = self._continue(lsid, txn_number, name, cmd)
        if name == "commitTransaction":
            return self._commit(txn)
        if name == "abortTransaction":
            if txn.state == IN_PROGRESS:
                self._end(txn, ABORTED)
            return {"ok": 1.0}
        assert handler is not None  # a statement's rule is STATEMENT: it has one
        return self._statement(
            txn,
            name,
            db,
            cmd,
            cursors=cursors,
            data_members=data_members,
            process=process,
            handler=handler,
        )

    def end_sessions(self, name: str, cmd: Mapping[str, Any]) -> None:
        """endSessions, killSessions and killAllSessions abort the sessions' transactions."""
        if name == "killAllSessions":
            ended = list(self._open.values())
        else:
            sessions = cmd.get(name)
            keys = [
                _session_key(lsid)
                for lsid in (sessions if isinstance(sessions, Sequence) else ())
                if isinstance(lsid, Mapping)
            ]
            ended = [self._open[key] for key in keys if key in self._open]
        for txn in ended:
            self._end(txn, ABORTED)

    def set_parameter(self, cmd: Mapping[str, Any]) -> Reply:
        """``setParameter`` of transactionLifetimeLimitSeconds."""
        value = cmd.get(LIFETIME_PARAMETER)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 1:
            raise CommandError(
                2, f"{LIFETIME_PARAMETER} must be greater than or equal to 1s, not {value!r}"
            )
        was = self.lifetime_limit
        self.lifetime_limit = float(value)
        return {"was": int(was) if was == int(was) else was, "ok": 1.0}

    def around(self, kind: str, name: str, db: str, cmd: Mapping[str, Any]) -> _Around:
        """Wrap a command that runs outside any transaction (``with table.around(...)``):
        open transactions keep their snapshot of what a write changes and see its
        conflicts; the end of sessions aborts theirs."""
        return _Around(self, kind, name, db, cmd)

    # -- starting and continuing -----------------------------------------------------------

    def _start(
        self, host: Host, lsid: dict[str, Any], txn_number: int, cmd: Mapping[str, Any]
    ) -> Transaction:
        level = read_concern_level(cmd)
        self.store.sessions.begin_transaction(lsid, txn_number)
        key = _session_key(lsid)
        previous = self._open.get(key)
        if previous is not None:
            self._end(previous, ABORTED)  # the session moved on to a newer number
        txn = Transaction(
            lsid=dict(lsid),
            txn_number=txn_number,
            host=host,
            epoch=host.state_epoch,
            expires_at=self.store.clock() + self.lifetime_limit,
            read_concern_level=level,
            workspace=Workspace(self.store),
        )
        self._transactions[key] = txn
        self._open[key] = txn
        return txn

    def _continue(
        self, lsid: dict[str, Any], txn_number: int, name: str, cmd: Mapping[str, Any]
    ) -> Transaction:
        if "readConcern" in cmd:
            raise CommandError(
                72, "Only the first command in a transaction may specify a readConcern"
            )
        txn = self._find(lsid, txn_number)
        if txn.state == ABORTED:
            raise CommandError(251, f"Transaction {txn_number} has been aborted.")
        if txn.state == COMMITTED and name != "commitTransaction":
            raise CommandError(256, f"Transaction {txn_number} has been committed.")
        return txn

    def _find(self, lsid: dict[str, Any], txn_number: int) -> Transaction:
        """The session's transaction with this number; TransactionTooOld if the session
        moved past it, NoSuchTransaction if it never ran it."""
        active = self.store.sessions.active(lsid)
        if active is not None and txn_number < active[0]:
            raise CommandError(
                225,
                f"Cannot continue transaction {txn_number} on session {_session_id(lsid)}"
                f" because a newer transaction {active[0]} has already started.",
            )
        txn = self._transactions.get(_session_key(lsid))
        if txn is None or txn.txn_number != txn_number or active != (txn_number, True):
            current = "none" if active is None else str(active[0])
            raise CommandError(
                251,
                f"Given transaction number {txn_number} does not match any in-progress"
                f" transactions. The active transaction number is {current}",
            )
        return txn

    def _reap(self) -> None:
        """Abort the transactions that can no longer go on: expired, superseded, or on a
        member that stepped down or died since they started."""
        if not self._open:
            return
        now = self.store.clock()
        for txn in list(self._open.values()):
            if (
                now >= txn.expires_at
                or txn.host.state_epoch != txn.epoch
                or self.store.sessions.active(txn.lsid) != (txn.txn_number, True)
            ):
                self._end(txn, ABORTED)

    def _end(self, txn: Transaction, state: str) -> None:
        txn.state = state
        if txn.workspace is not None:
            txn.workspace.close()
            txn.workspace = None
        self._open.pop(_session_key(txn.lsid), None)

    def _others(self, txn: Transaction) -> list[Transaction]:
        return [other for other in self._open.values() if other is not txn]

    # -- statements ------------------------------------------------------------------------

    def _statement(
        self,
        txn: Transaction,
        name: str,
        db: str,
        cmd: Mapping[str, Any],
        *,
        cursors: CursorTable,
        data_members: int,
        process: Any,
        handler: Handler,
    ) -> Reply:
        ws = txn.workspace
        assert ws is not None
        if ws.conflict is not None:
            self._end(txn, ABORTED)
            raise CommandError(112, _WRITE_CONFLICT)
        statement = dict(cmd)
        if name in _BATCHED:
            # In a transaction a write error fails the rest of the batch, ordered or not.
            statement["ordered"] = True
        try:
            self._check_catalog(txn, name, db, cmd)
            ws.copy(statement_namespaces(name, db, cmd))
            ctx = CommandContext(
                name=name,
                db=db,
                cmd=statement,
                store=ws.store,
                reader=ws.store.latest,
                cursors=cursors,
                data_members=data_members,
                process=process,
            )
            reply = handler(ctx)
            if self._conflicts(txn, ws.new_entries()):
                raise CommandError(112, _WRITE_CONFLICT)
        except BaseException:
            self._end(txn, ABORTED)
            raise
        if reply.get("writeErrors"):
            self._end(txn, ABORTED)
        return reply

    def _check_catalog(self, txn: Transaction, name: str, db: str, cmd: Mapping[str, Any]) -> None:
        """The rules for an explicit create or createIndexes in a transaction."""
        if name not in ("create", "createIndexes"):
            return
        if txn.read_concern_level != "local":
            raise CommandError(
                263,
                f"Cannot run '{name}' in a transaction with read concern level"
                f" '{txn.read_concern_level}': a transaction that creates a collection or an"
                " index must use read concern level 'local'.",
            )
        coll = cmd.get(name)
        ws = txn.workspace
        if name == "createIndexes" and isinstance(coll, str) and ws is not None:
            ws.copy([(db, coll)])
            if ws.store.collection_exists(db, coll) and (db, coll) not in ws.created:
                raise CommandError(
                    263,
                    f"Cannot create new indexes on existing collection {db}.{coll} in a"
                    " multi-document transaction.",
                )

    def _conflicts(self, txn: Transaction, entries: list[OplogEntry]) -> bool:
        """Record the transaction's new writes; True if one conflicts with another's."""
        ws = txn.workspace
        assert ws is not None
        others = [other.workspace for other in self._others(txn) if other.workspace is not None]
        for entry in entries:
            ns = (entry.db, entry.coll)
            if entry.op == "c":
                command = entry.command or {}
                if "create" in command and (
                    self.store.collection_exists(*ns) or any(ns in o.created for o in others)
                ):
                    return True  # created by somebody else since the snapshot
            else:
                key = document_key(entry.doc_id)
                if ns in ws.stale or ws.changed_since_snapshot(ns, key):
                    return True
                if any(other.wrote(ns, key) for other in others):
                    return True
            ws.record(entry)
        return False

    # -- the end of a transaction ------------------------------------------------------------

    def _commit(self, txn: Transaction) -> Reply:
        if txn.state == COMMITTED:
            return {"ok": 1.0}  # a retried commit
        ws = txn.workspace
        assert ws is not None
        if ws.conflict is not None:
            self._end(txn, ABORTED)
            raise CommandError(112, _WRITE_CONFLICT)
        entries = ws.operations()
        if entries:
            others = self._others(txn)
            written = list(dict.fromkeys((e.db, e.coll) for e in entries))
            for other in others:
                if other.workspace is not None:
                    other.workspace.copy(written)
            live = self.store
            ws.publish_catalog(written)
            optime = live.next_optime()  # one optime for the whole commit, as applyOps
            for entry in entries:
                live.apply(entry, optime)
            live.log_apply_ops(
                apply_ops_command([operation(e) for e in entries], txn.lsid, txn.txn_number),
                optime,
            )
            for other in others:
                if other.workspace is not None:
                    other.workspace.observe(entries)
        self._end(txn, COMMITTED)
        return {"ok": 1.0}

    def _recover(self, lsid: dict[str, Any], txn_number: int) -> Reply:
        """coordinateCommitTransaction without participants, as a mongos that did not run
        the transaction sends it to recover a commit: succeed if it committed; otherwise
        it never will (an open one is aborted)."""
        txn = self._find(lsid, txn_number)
        if txn.state == COMMITTED:
            return {"ok": 1.0}
        if txn.state == IN_PROGRESS:
            self._end(txn, ABORTED)
        raise CommandError(251, f"Transaction {txn_number} was not committed.")


class _Around:
    """A command outside any transaction, as the open transactions see it (a context
    manager)."""

    def __init__(
        self, table: TransactionTable, kind: str, name: str, db: str, cmd: Mapping[str, Any]
    ) -> None:
        self._table = table
        self._kind = kind
        self._name = name
        self._db = db
        self._cmd = cmd
        self._open: list[Transaction] = []
        self._start = 0

    def __enter__(self) -> None:
        table = self._table
        if self._kind != "write":
            return
        self._open = table.open_transactions()
        if not self._open:
            return
        namespaces = written_namespaces(table.store, self._name, self._db, self._cmd)
        for txn in self._open:
            if txn.workspace is not None:
                txn.workspace.copy(namespaces)
        self._start = table.store.oplog_end

    def __exit__(self, *exc: object) -> None:
        if self._open:
            store = self._table.store
            entries = store.entries(self._start, store.oplog_end)
            for txn in self._open:
                if txn.workspace is not None:
                    txn.workspace.observe(entries)
        if self._name in SESSION_END_COMMANDS:
            self._table.end_sessions(self._name, self._cmd)


def cmd_set_parameter(ctx: CommandContext) -> Reply:
    """setParameter: transactionLifetimeLimitSeconds, which the replica set's transaction
    table keeps, and ttlMonitorSleepSecs, the deployment's TTL monitor's (one at a time:
    the only parameters the simulator can set)."""
    if SLEEP_PARAMETER in ctx.cmd and LIFETIME_PARAMETER not in ctx.cmd:
        monitor = getattr(getattr(ctx.process, "deployment", None), "ttl_monitor", None)
        others = [
            name
            for name in ctx.cmd
            if name not in ("setParameter", SLEEP_PARAMETER, "comment", "lsid")
            and not name.startswith("$")
        ]
        if others:
            raise CommandError(
                238, f"setParameter {', '.join(others)} is not supported by the simulator"
            )
        if isinstance(monitor, TTLMonitor):
            return {"was": monitor.set_parameter(ctx.cmd[SLEEP_PARAMETER]), "ok": 1.0}
    if LIFETIME_PARAMETER not in ctx.cmd:
        names = [name for name in ctx.cmd if name != "setParameter" and not name.startswith("$")]
        raise CommandError(
            238, f"setParameter {', '.join(names) or '(none)'} is not supported by the simulator"
        )
    table = getattr(getattr(ctx.process, "deployment", None), "transactions", None)
    if not isinstance(table, TransactionTable):
        raise CommandError(
            20, "Transaction numbers are only allowed on a replica set member or mongos"
        )
    return table.set_parameter(ctx.cmd)
