"""Read concern level "snapshot" outside transactions (MongoDB 5.0+; the Snapshot Reads
spec's "Server Errors" and "Server Command Responses").

A replica set member or a mongos accepts it on find, aggregate and distinct, and
reports the snapshot's timestamp: ``cursor.atClusterTime`` in a find or aggregate
reply, a top-level ``atClusterTime`` in a distinct reply. Any other command given it
fails with InvalidOptions (72), as does ``atClusterTime`` with ``afterClusterTime``;
a standalone refuses the level on every command.

A read with ``atClusterTime`` sees the data as of that timestamp: the store keeps the
history of every document for ``HISTORY_WINDOW`` seconds (a 7.0 server's default
``minSnapshotHistoryWindowInSeconds``, 300), and an older read is refused with
SnapshotTooOld (239). A read without it sees the newest data and reports its time,
which a driver's snapshot session then sends as the ``atClusterTime`` of its later
reads, so a ``snapshot: true`` session never sees a later write. A multi-document
transaction's read concern is checked by :mod:`mongocore.sim.transaction_rules`, not
here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from bson import Timestamp

from mongocore.sim.codes import CommandError

__all__ = [
    "SNAPSHOT_COMMANDS",
    "add_at_cluster_time",
    "check_snapshot_read",
    "is_snapshot_read",
    "snapshot_time",
]

#: The commands that take read concern level "snapshot" outside a transaction.
SNAPSHOT_COMMANDS = frozenset({"find", "aggregate", "distinct"})

_INVALID_OPTIONS = 72


def is_snapshot_read(cmd: Mapping[str, Any]) -> bool:
    """Does the command ask for read concern level "snapshot"?"""
    read_concern = cmd.get("readConcern")
    return isinstance(read_concern, Mapping) and read_concern.get("level") == "snapshot"


def check_snapshot_read(name: str, cmd: Mapping[str, Any], *, supported: bool) -> None:
    """Refuse a snapshot read concern where the server would. ``supported`` is False on
    a standalone, which has no majority-committed snapshots to read from."""
    if not is_snapshot_read(cmd):
        return
    if not supported:
        raise CommandError(
            _INVALID_OPTIONS,
            "read concern level 'snapshot' is only supported on replica set members and"
            " mongos, not on a standalone",
        )
    if name not in SNAPSHOT_COMMANDS:
        raise CommandError(
            _INVALID_OPTIONS,
            f'Command {name} does not support {{ readConcern: {{ level: "snapshot" }} }}',
        )
    read_concern = cmd["readConcern"]
    if "afterClusterTime" in read_concern and "atClusterTime" in read_concern:
        raise CommandError(
            _INVALID_OPTIONS, "readConcern cannot have both atClusterTime and afterClusterTime"
        )
    at = read_concern.get("atClusterTime")
    if at is not None and not isinstance(at, Timestamp):
        raise CommandError(14, "readConcern.atClusterTime must be a Timestamp")


def snapshot_time(name: str, cmd: Mapping[str, Any]) -> Optional[Timestamp]:
    """The ``atClusterTime`` a snapshot read reads as of (None: the newest data)."""
    if name not in SNAPSHOT_COMMANDS or not is_snapshot_read(cmd):
        return None
    at = cmd["readConcern"].get("atClusterTime")
    return at if isinstance(at, Timestamp) else None


def add_at_cluster_time(
    name: str, cmd: Mapping[str, Any], reply: dict[str, Any], now: Timestamp
) -> None:
    """Report the snapshot's timestamp in the reply of a successful snapshot read: the
    ``atClusterTime`` asked for, else ``now`` (the newest majority-committed time)."""
    if not is_snapshot_read(cmd) or name not in SNAPSHOT_COMMANDS or not reply.get("ok"):
        return
    at = cmd["readConcern"].get("atClusterTime")
    value = at if isinstance(at, Timestamp) else now
    cursor = reply.get("cursor")
    if name == "distinct" or not isinstance(cursor, dict):
        reply["atClusterTime"] = value
    else:
        cursor["atClusterTime"] = value
