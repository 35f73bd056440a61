"""The TTL monitor of a simulated mongod (MongoDB manual, "TTL Indexes", "Expire Data
from Collections by Setting TTL"): on the primary (or a standalone), a pass at most
every ``ttlMonitorSleepSecs`` (60 by default, set with ``setParameter``) deletes the
documents a TTL index has expired (:meth:`~mongocore.sim.engine.store.Collection.expired`).

A server runs the monitor on a thread of its own that sleeps between passes; here a
pass runs, when one is due on the deployment's clock, at the start of a command the
primary runs (so no thread is added, and a test with its own clock decides when a
pass is due). Each expired document is deleted through the store's write path, as
any other delete: an oplog ``d`` entry the secondaries replay (they never delete on
their own), a ``delete`` event for change streams, a conflict for an open
transaction that wrote it. serverStatus counts the passes and the deleted documents
(``metrics.ttl``). The deployment's lock is held by every caller.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any, Optional, Protocol

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.store import DataStore

__all__ = ["DEFAULT_SLEEP_SECS", "SLEEP_PARAMETER", "TTLMonitor"]

SLEEP_PARAMETER = "ttlMonitorSleepSecs"
DEFAULT_SLEEP_SECS = 60


class _Around(Protocol):
    def __enter__(self) -> None: ...

    def __exit__(self, *exc: object) -> None: ...


class _Transactions(Protocol):
    def around(self, kind: str, name: str, db: str, cmd: Mapping[str, Any]) -> _Around: ...


class TTLMonitor:
    """One deployment's TTL monitor: when its passes are due, and what they deleted."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        #: ttlMonitorSleepSecs: the seconds between two passes.
        self.sleep_secs = DEFAULT_SLEEP_SECS
        #: serverStatus metrics.ttl.passes and metrics.ttl.deletedDocuments.
        self.passes = 0
        self.deleted_documents = 0
        # A server's monitor sleeps first: the first pass is one period after the start.
        self._last_pass = clock()

    def due(self) -> bool:
        return self._clock() - self._last_pass >= self.sleep_secs

    def run_if_due(
        self, store: DataStore, transactions: Optional[_Transactions] = None
    ) -> Optional[int]:
        """Run a pass if one is due; the number of documents it deleted (None: no pass)."""
        if not self.due():
            return None
        return self.run_pass(store, transactions)

    def run_pass(self, store: DataStore, transactions: Optional[_Transactions] = None) -> int:
        """Delete every document a TTL index has expired, now; returns how many."""
        now = self._clock()
        self._last_pass = now
        self.passes += 1
        moment = datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc)
        deleted = 0
        for db in store.database_names():
            for coll in store.collection_names(db):
                collection = store.collection(db, coll)
                if collection is None:
                    continue
                rids = collection.expired(moment)
                if not rids:
                    continue
                documents = dict(collection.scan())
                ids = [documents[rid]["_id"] for rid in rids if rid in documents]
                cmd = {"delete": coll, "deletes": [{"q": {"_id": {"$in": ids}}, "limit": 0}]}
                around = transactions.around("write", "delete", db, cmd) if transactions else None
                if around is not None:
                    around.__enter__()
                try:
                    for doc_id in ids:
                        deleted += store.delete(db, coll, {"_id": {"$eq": doc_id}}, 1)
                finally:
                    if around is not None:
                        around.__exit__(None, None, None)
        self.deleted_documents += deleted
        return deleted

    def set_parameter(self, value: Any) -> Any:
        """``setParameter`` of ttlMonitorSleepSecs (an integer, 1 at least); the previous
        value."""
        if (
            not isinstance(value, (int, float, Int64))
            or isinstance(value, bool)
            or value != int(value)
            or value < 1
        ):
            raise CommandError(
                2, f"{SLEEP_PARAMETER} must be an integer greater than or equal to 1, not {value!r}"
            )
        was, self.sleep_secs = self.sleep_secs, int(value)
        return was

    def metrics(self) -> dict[str, Any]:
        """serverStatus's ``metrics.ttl``."""
        return {
            "deletedDocuments": Int64(self.deleted_documents),
            "passes": Int64(self.passes),
        }
