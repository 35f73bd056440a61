"""A mongos's part in transactions (transactions spec, "Recovery Token"; the server's
transaction router), for the simulated cluster's one shard.

A mongos remembers, per session, the transaction it runs: a command with
``startTransaction`` makes its txnNumber the session's on this router, and the
transaction's later commands go to the shard's primary, which runs the transaction
(sim/transactions.py). Every successful reply of a transaction's command carries
``recoveryToken: {recoveryShardId}``, which a driver sends back with
``commitTransaction``. A router asked about a transaction it did not run:

- ``commitTransaction`` with a recovery token recovers the commit's outcome from the
  recovery shard (``coordinateCommitTransaction`` without participants): it succeeds
  if the transaction committed, and otherwise fails with NoSuchTransaction (an open
  transaction is aborted: it can no longer commit);
- any other command fails with NoSuchTransaction, and a number older than the
  router's with TransactionTooOld.

A transaction's command with a ``$readPreference`` other than primary is refused
(InvalidOptions, 72): the router sends every command of a transaction to the shards'
primaries. Pinning a session to one mongos is the driver's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson

from mongocore.sim.codes import CommandError
from mongocore.sim.transactions import TRANSACTION_COMMANDS

__all__ = ["TransactionRouter"]

Document = dict[str, Any]


def _session_key(lsid: Mapping[str, Any]) -> bytes:
    return bytes(bson.encode(lsid))


class TransactionRouter:
    """The transactions one mongos runs, by session (the mongos's lock is held)."""

    def __init__(self, shard_name: str) -> None:
        self.shard_name = shard_name
        self._numbers: dict[bytes, int] = {}

    def plan(self, name: str, db: str, cmd: Mapping[str, Any]) -> tuple[str, str, Document]:
        """The command to send to the shard's primary for a transaction's command."""
        read_preference = cmd.get("$readPreference")
        if (
            isinstance(read_preference, Mapping)
            and read_preference.get("mode", "primary") != "primary"
        ):
            # A router picks the shards' primaries for a transaction's commands.
            raise CommandError(72, "read preference in a transaction must be primary")
        lsid = cmd.get("lsid")
        txn_number = cmd.get("txnNumber")
        if not isinstance(lsid, Mapping) or not isinstance(txn_number, int):
            return name, db, dict(cmd)  # malformed: the shard refuses it as a server does
        key = _session_key(lsid)
        known = self._numbers.get(key)
        if known is not None and txn_number < known:
            raise CommandError(
                225,
                f"Cannot start or continue transaction {txn_number} because a newer"
                f" transaction {known} has already started on this session.",
            )
        if cmd.get("startTransaction") is True and name not in TRANSACTION_COMMANDS:
            self._numbers[key] = txn_number
            return name, db, dict(cmd)
        if known == txn_number:
            return name, db, dict(cmd)
        if name == "commitTransaction" and isinstance(cmd.get("recoveryToken"), Mapping):
            recover: Document = {
                "coordinateCommitTransaction": 1,
                "participants": [],
                "lsid": lsid,
                "txnNumber": txn_number,
                "autocommit": False,
            }
            if "writeConcern" in cmd:
                recover["writeConcern"] = cmd["writeConcern"]
            return "coordinateCommitTransaction", "admin", recover
        raise CommandError(
            251,
            f"Cannot continue transaction {txn_number}: this mongos did not start it"
            " (a commit needs its recoveryToken)",
        )

    def finish(self, reply: Document) -> Document:
        """A shard's reply to a transaction's command, as the mongos answers it."""
        if reply.get("ok"):
            reply = dict(reply)
            reply["recoveryToken"] = {"recoveryShardId": self.shard_name}
        return reply

    def end_sessions(self, name: str, cmd: Mapping[str, Any]) -> None:
        """endSessions, killSessions and killAllSessions: forget the sessions."""
        if name == "killAllSessions":
            self._numbers.clear()
            return
        sessions = cmd.get(name)
        for lsid in sessions if isinstance(sessions, list) else ():
            if isinstance(lsid, Mapping):
                self._numbers.pop(_session_key(lsid), None)
