"""Replication in the simulated replica set: each member's position in the oplog, and
the data it reads.

A member's ``ReplicaView`` is its position: ``applied``, the oplog entries the member
has applied as far as anyone can observe (every entry written at least ``lag``
seconds ago; every entry, while the member is primary: it wrote them). Hello's
lastWrite, elections and the majority commit point read it, and a secondary reads
the data as of its applied optime (:meth:`ReplicaView.data`): the store keeps every
write's earlier versions (store.py), so that read costs the same after ten writes as
after a hundred thousand, and nothing is replayed, on any thread. Lag is only that
position moving: moving it is a binary search over the oplog's wall times, which
never touches documents.

The oplog keeps only the entries some member has not applied (``Oplog.trim``), and
the store the versions a member's position or the history window still needs
(``DataStore.trim_history``).
"""

from __future__ import annotations

from typing import Optional

from bson import Timestamp

from mongocore.sim.store import ZERO_OPTIME, DataStore, DataView, OpTime

__all__ = ["ReplicaView", "new_view"]


class ReplicaView:
    """A member's position in the oplog, ``lag`` seconds behind it."""

    def __init__(self, store: DataStore, lag: float) -> None:
        self.store = store
        self.lag = lag
        self.attached = False  # in the store's list of positions (whose oplog it keeps)
        self.applied = 0  # absolute oplog index of the next entry to apply (observable)
        self.applied_optime = ZERO_OPTIME
        self._follows_end = False

    @property
    def replayed(self) -> int:
        """The entries in the member's data: every applied one (reads are as of it)."""
        return self.applied

    def start_at(self, index: int, optime: OpTime) -> None:
        """The member holds the data up to oplog ``index`` (nothing else uses it yet)."""
        self.applied = index
        self.applied_optime = optime

    # -- the observable position (the deployment lock is held) -------------------------

    def follow_end(self, follows: bool) -> None:
        """While its member is primary every entry counts as applied; a member that
        stops being primary keeps that position and lags from there."""
        if follows or self._follows_end:
            self._to_end()
        self._follows_end = follows

    def _to_end(self) -> None:
        self.applied = self.store.oplog_end
        self.applied_optime = max(self.applied_optime, self.store.last_optime)

    def advance(self, now: float) -> None:
        """Count as applied every entry at least ``lag`` seconds old at ``now``."""
        store = self.store
        if self._follows_end:
            self._to_end()
        else:
            cutoff = now - self.lag
            end = store.first_index(self.applied, lambda entry: entry.optime.wall > cutoff)
            if end > self.applied:
                self.applied = end
                self.applied_optime = max(self.applied_optime, store.entry(end - 1).optime)
            if self.applied >= store.oplog_end and store.last_optime.wall <= cutoff:
                # Optimes that were never logged (a new term's no-op) still advance it.
                self.applied_optime = max(self.applied_optime, store.last_optime)
        if self.attached:
            store.trim()

    def forget_after(self, index: int, optime: OpTime) -> None:
        """The entries from ``index`` on were rolled back (none was read)."""
        if self.applied > index:
            self.applied = index
            self.applied_optime = min(self.applied_optime, optime)

    def next_apply_time(self, after: Timestamp) -> Optional[float]:
        """When the first entry with a timestamp >= ``after`` will be applied, if logged."""
        store = self.store
        index = store.first_index(self.applied, lambda entry: entry.optime.ts >= after)
        if index >= store.oplog_end:
            return None
        return store.entry(index).optime.wall + self.lag

    # -- the data ----------------------------------------------------------------------

    def data(self, now: float) -> DataView:
        """The data as of what the member has applied at ``now`` (the lock is held)."""
        self.advance(now)
        if self.applied >= self.store.oplog_end:
            return self.store.latest
        return self.store.view(self.applied_optime.ts)


def new_view(store: DataStore, lag: float = 0.0) -> ReplicaView:
    """A member's position, starting at the oplog's end (the deployment lock is held):
    a member added to the set starts with the current data (its initial sync)."""
    view = ReplicaView(store, lag)
    view.start_at(store.oplog_end, store.last_optime)
    store.attach_view(view)
    return view
