"""What a transaction's command may carry and run, as a MongoDB 7.0 server checks it
before it looks the transaction up (transactions spec; MongoDB manual, "Transactions
and Operations", "Production Considerations"; the server's session options parsing).

- session options: ``autocommit`` needs a ``txnNumber`` and must be false,
  ``startTransaction`` needs ``autocommit`` and must be true, a ``txnNumber`` needs an
  ``lsid`` (InvalidOptions, 72);
- the commands a transaction may run, those whose registry entry (command_table.py)
  says ``transaction=STATEMENT`` (find, aggregate, distinct, insert, update, delete,
  findAndModify, create, createIndexes, getMore and killCursors), besides those that
  end it (``END``), which run on the admin database and never start one
  (OperationNotSupportedInTransaction, 263);
- no admin, config or local database, no write to a ``system.`` collection, no
  ``system.profile``, no aggregation stage that cannot run in a transaction (263);
- a read concern level of local, majority or snapshot (``atClusterTime`` with
  snapshot only), and no write concern but on the commit or abort (72). A mongod
  takes any ``$readPreference``: it runs the transaction because it is the primary,
  and a driver sends ``primaryPreferred`` on every command of a direct connection (the
  rule that a transaction reads from the primary is the drivers'); a mongos refuses a
  mode other than primary (transaction_router.py);
- the commit's or abort's write concern is waited for as any write's
  (write_concern.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongocore.sim.codes import CommandError

__all__ = [
    "TRANSACTION_COMMANDS",
    "check_command",
    "is_transaction_command",
    "read_concern_level",
    "session_options",
]

#: The commands that end a transaction; a mongos recovers a commit it did not run
#: with the last one.
TRANSACTION_COMMANDS = frozenset(
    {"commitTransaction", "abortTransaction", "coordinateCommitTransaction"}
)

_WRITES = frozenset({"insert", "update", "delete", "findAndModify", "create", "createIndexes"})
_NO_TRANSACTION_DATABASES = frozenset({"admin", "config", "local"})
_NO_TRANSACTION_STAGES = frozenset(
    {
        "$out",
        "$merge",
        "$changeStream",
        "$collStats",
        "$currentOp",
        "$indexStats",
        "$listLocalSessions",
        "$listSessions",
        "$planCacheStats",
    }
)
_READ_CONCERN_LEVELS = ("local", "majority", "snapshot")


def is_transaction_command(name: str, cmd: Mapping[str, Any]) -> bool:
    """Does the command belong to a transaction (run it through :class:`TransactionTable`)?"""
    return "autocommit" in cmd or "startTransaction" in cmd or name in TRANSACTION_COMMANDS


def session_options(name: str, cmd: Mapping[str, Any]) -> tuple[dict[str, Any], int, bool]:
    """lsid, txnNumber and startTransaction of a transaction's command, checked as a
    server parses them."""
    lsid = cmd.get("lsid")
    txn_number = cmd.get("txnNumber")
    autocommit = cmd.get("autocommit")
    start = cmd.get("startTransaction")
    if "autocommit" in cmd:
        if txn_number is None:
            raise CommandError(
                72, "'autocommit' field requires a transaction number to also be specified"
            )
        if autocommit is not False:
            raise CommandError(72, "Specifying autocommit=true is not allowed.")
    elif start is not None:
        raise CommandError(
            72, "'startTransaction' field requires 'autocommit' field to also be specified"
        )
    else:
        raise CommandError(72, f"'{name}' must be run within a transaction")
    if start is not None and start is not True:
        raise CommandError(72, "Specifying startTransaction=false is not allowed.")
    if not isinstance(lsid, Mapping):
        raise CommandError(72, "Transaction number requires a session ID to also be specified")
    if not isinstance(txn_number, int) or isinstance(txn_number, bool) or txn_number < 0:
        raise CommandError(14, "txnNumber must be a non-negative 64-bit integer")
    return dict(lsid), int(txn_number), start is True


def check_command(name: str, db: str, cmd: Mapping[str, Any], start: bool, rule: str) -> None:
    """What a transaction may not run, whatever its state; ``rule`` is the command's
    transaction rule (its registry entry's: "statement", "end" or "no")."""
    if rule == "end":
        if db != "admin":
            raise CommandError(13, f"{name} may only be run against the admin database.")
        if start:
            raise CommandError(263, f"Cannot run '{name}' as the first command of a transaction.")
    elif rule != "statement":
        raise CommandError(263, f"Cannot run '{name}' in a multi-document transaction.")
    if rule == "end":
        return
    if "writeConcern" in cmd:
        raise CommandError(72, "writeConcern is not allowed within a multi-statement transaction")
    if db in _NO_TRANSACTION_DATABASES:
        raise CommandError(263, f"Cannot run command against the '{db}' database in a transaction.")
    coll = cmd.get(name)
    if isinstance(coll, str) and coll.startswith("system."):
        if name in _WRITES:
            raise CommandError(
                263, f"Cannot write to system collection {db}.{coll} within a transaction."
            )
        if coll == "system.profile":
            raise CommandError(
                263, f"Cannot run command against the '{db}.{coll}' collection in a transaction."
            )
    if name == "aggregate":
        for stage in cmd.get("pipeline") or ():
            for operator in stage if isinstance(stage, Mapping) else ():
                if operator in _NO_TRANSACTION_STAGES:
                    raise CommandError(263, f"{operator} cannot be used in a transaction.")


def read_concern_level(cmd: Mapping[str, Any]) -> str:
    read_concern = cmd.get("readConcern")
    if read_concern is None:
        return "local"
    if not isinstance(read_concern, Mapping):
        raise CommandError(14, "readConcern must be a document")
    level = read_concern.get("level", "local")
    if level not in _READ_CONCERN_LEVELS:
        raise CommandError(
            72,
            f"The readConcern level must be either 'local' (default), 'majority' or"
            f" 'snapshot' in order to run in a transaction, not {level!r}",
        )
    if "atClusterTime" in read_concern and level != "snapshot":
        raise CommandError(72, "readConcern atClusterTime requires level 'snapshot'")
    return str(level)
