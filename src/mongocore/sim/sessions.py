"""At-most-once execution of retryable writes: the server's session transaction records.

A retryable write carries ``lsid`` and ``txnNumber``. The server remembers, per
session, the highest txnNumber it has started and the reply it gave; a retry with the
same pair gets that reply again without the write being applied a second time, and a
lower txnNumber fails with TransactionTooOld (225). The records belong to the replica
set's data, so they survive a step-down and an election.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import bson

from mongocore.sim.codes import CommandError

__all__ = ["SessionRecords"]


@dataclass
class _Record:
    txn_number: int
    reply: Optional[dict[str, Any]] = None  # None while not (successfully) completed


def _session_key(lsid: Mapping[str, Any]) -> bytes:
    # The whole lsid document ({id: UUID} plus uid when authenticated) names the session.
    return bytes(bson.encode(lsid))


class SessionRecords:
    """Records of retryable writes, keyed by session. The owner serializes access."""

    def __init__(self) -> None:
        self._records: dict[bytes, _Record] = {}

    def __len__(self) -> int:
        return len(self._records)

    def begin(self, lsid: Mapping[str, Any], txn_number: int) -> Optional[dict[str, Any]]:
        """Start (or retry) a write: the recorded reply for a retry, else None.

        Raises TransactionTooOld when a newer txnNumber already started on the session.
        """
        key = _session_key(lsid)
        record = self._records.get(key)
        if record is None or txn_number > record.txn_number:
            self._records[key] = _Record(txn_number)
            return None
        if txn_number < record.txn_number:
            raise CommandError(
                225,
                f"Retryable write with txnNumber {txn_number} is prohibited on session"
                f" {_describe(lsid)} because a newer retryable write with txnNumber"
                f" {record.txn_number} has already started on this session.",
            )
        return None if record.reply is None else dict(record.reply)

    def complete(self, lsid: Mapping[str, Any], txn_number: int, reply: Mapping[str, Any]) -> None:
        """Remember the reply of an executed write."""
        key = _session_key(lsid)
        record = self._records.get(key)
        if record is not None and record.txn_number == txn_number:
            record.reply = dict(reply)

    def recorded(self, lsid: Mapping[str, Any]) -> Optional[tuple[int, Optional[dict[str, Any]]]]:
        """The session's highest txnNumber and its reply, for inspection."""
        record = self._records.get(_session_key(lsid))
        return None if record is None else (record.txn_number, record.reply)

    def clear(self) -> None:
        self._records.clear()


def _describe(lsid: Mapping[str, Any]) -> str:
    value = lsid.get("id")
    try:
        text = str(value.as_uuid()) if isinstance(value, bson.Binary) else str(value)
    except ValueError:
        text = repr(value)
    return f"{text} - "
