"""The oplog of a simulated deployment: optimes, entries, and who still needs them
(MongoDB manual, "Replica Set Oplog"; the server's OpTime).

Every change of a deployment's data is appended as an :class:`OplogEntry` (a document's
full post-image, a deletion, a catalog command, a no-op) stamped with an
:class:`OpTime`: a timestamp (seconds and an increment, strictly growing), the election
term and the wall-clock time; the write itself is stamped with the same optime in the
engine's collections (store.py). The :class:`Oplog` keeps only the entries some member
(replication.py) has not applied yet, so that moving its position is a search of them,
plus the newest ``OPLOG_HISTORY`` entries for ``local.oplog.rs``, and tells its
observers (change streams' change log) of each entry it appends.
"""

from __future__ import annotations

import datetime
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Protocol

from bson import Int64, Timestamp

if TYPE_CHECKING:
    from mongocore.sim.replication import ReplicaView

__all__ = [
    "OPLOG_HISTORY",
    "ZERO_OPTIME",
    "Checkpoint",
    "OpTime",
    "Oplog",
    "OplogEntry",
    "OplogObserver",
]

Document = dict[str, Any]
#: How many entries ``local.oplog.rs`` keeps (a server sizes it in bytes instead).
OPLOG_HISTORY = 10_000


class OpTime(NamedTuple):
    """An operation time: the oplog timestamp, the election term, and the wall clock."""

    ts: Timestamp
    term: int
    wall: float

    def to_document(self) -> dict[str, Any]:
        return {"ts": self.ts, "t": Int64(self.term)}

    @property
    def wall_datetime(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.wall, datetime.timezone.utc)


ZERO_OPTIME = OpTime(Timestamp(0, 0), -1, 0.0)


class OplogEntry(NamedTuple):
    """One change: "i" (an inserted document), "u" (a document's full post-image), "d" (a
    deletion), "c" (a command) or "n" (a no-op: a new primary's first entry)."""

    optime: OpTime
    op: str
    db: str
    coll: str
    doc_id: Any = None
    doc: Optional[Document] = None
    command: Optional[Document] = None
    #: What a "u" entry applied: an update document or pipeline, or a replacement (change
    #: streams tell update from replace events by it; replication applies ``doc``).
    update: Any = None


class OplogObserver(Protocol):
    """Told of every entry the store appends (the change log of sim/change_log.py)."""

    def appended(self, entry: OplogEntry, index: int) -> None: ...

    def rolled_back(self, checkpoint: Checkpoint) -> None: ...


class Checkpoint(NamedTuple):
    """One collection's content and the oplog's end, to undo a statement that must not commit."""

    db: str
    coll: str
    existed: bool
    documents: list[Document]
    oplog_end: int
    last_optime: OpTime


class Oplog:
    """A deployment's oplog. The owner serializes access (the deployment's lock)."""

    def __init__(self, clock: Callable[[], float], *, keep_entries: bool = False) -> None:
        self.clock = clock
        #: Keep every entry (a transaction's workspace: its entries are what it commits).
        self.keep_entries = keep_entries
        self.term = 1
        self._oplog: list[OplogEntry] = []
        self._oplog_base = 0  # absolute index of _oplog[0]
        self._views: list[ReplicaView] = []
        self.last_optime = ZERO_OPTIME
        #: The latest entries, no-ops included, whether or not every member applied them:
        #: what ``local.oplog.rs`` shows (a capped collection keeps only the newest).
        self.history: deque[OplogEntry] = deque(maxlen=OPLOG_HISTORY)
        #: Told of each entry appended (change streams' change log, unique indexes).
        self.observers: list[OplogObserver] = []

    @property
    def oplog_end(self) -> int:
        return self._oplog_base + len(self._oplog)

    def entry(self, index: int) -> OplogEntry:
        return self._oplog[index - self._oplog_base]

    def next_optime(self) -> OpTime:
        """A new optime, strictly after the last one (timestamps are seconds + increment)."""
        wall = self.clock()
        last = self.last_optime.ts
        seconds = max(int(wall), last.time)
        increment = last.inc + 1 if seconds == last.time else 1
        optime = OpTime(Timestamp(seconds, increment), self.term, max(wall, self.last_optime.wall))
        self.last_optime = optime
        return optime

    def noop(self) -> OpTime:
        """Advance the optime without changing data (a new term's first entry)."""
        optime = self.next_optime()
        self.history.append(OplogEntry(optime, "n", "", "", command={"msg": "new primary"}))
        return optime

    def _append(
        self,
        op: str,
        db: str,
        coll: str,
        doc_id: Any = None,
        *,
        doc: Optional[Document] = None,
        command: Optional[Document] = None,
        update: Any = None,
        optime: Optional[OpTime] = None,
    ) -> None:
        """Log a change; ``optime`` is the one its write was stamped with (a new one if
        None: a catalog change that stamps nothing)."""
        optime = optime if optime is not None else self.next_optime()
        entry = OplogEntry(optime, op, db, coll, doc_id, doc, command, update)
        index = self.oplog_end
        self.history.append(entry)
        if self._views or self.keep_entries:
            self._oplog.append(entry)
        else:
            self._oplog_base += 1
        for observer in self.observers:
            observer.appended(entry, index)

    def entries(self, start: int, stop: int) -> list[OplogEntry]:
        """The entries from absolute index ``start`` to ``stop`` (both still kept)."""
        base = self._oplog_base
        if start < base:
            raise IndexError(f"oplog entry {start} was trimmed (the oplog starts at {base})")
        return self._oplog[start - base : stop - base]

    def first_index(self, start: int, predicate: Callable[[OplogEntry], bool]) -> int:
        """The first index from ``start`` whose entry satisfies ``predicate``, or the
        oplog's end; ``predicate`` must hold for every entry after one it holds for (a
        binary search: wall times and timestamps only grow along the oplog)."""
        low, high = start - self._oplog_base, len(self._oplog)
        while low < high:
            middle = (low + high) // 2
            if predicate(self._oplog[middle]):
                high = middle
            else:
                low = middle + 1
        return self._oplog_base + low

    @property
    def views(self) -> list[ReplicaView]:
        """The members' copies (see replication.py), whose unapplied entries are kept."""
        return list(self._views)

    @property
    def oplog_kept(self) -> int:
        """How many entries are kept, for the copies that have not replayed them."""
        return len(self._oplog)

    def attach_view(self, view: ReplicaView) -> None:
        """Keep the entries from ``view.replayed`` on for this copy."""
        self._views.append(view)
        view.attached = True

    def drop_view(self, view: ReplicaView) -> None:
        if view in self._views:
            self._views.remove(view)
        view.attached = False
        if self._views:
            self.trim()
        else:
            self._oplog_base += len(self._oplog)
            self._oplog.clear()

    def trim(self) -> None:
        """Forget the entries every member has applied. Dropping from the front of a list
        moves the rest, so it waits until the dropped part is at least half of it."""
        if not self._views or self.keep_entries:
            return  # drop_view already forgot every entry, or all are kept
        keep_from = min(view.applied for view in self._views)
        drop = keep_from - self._oplog_base
        if drop > 0 and drop * 2 >= len(self._oplog):
            del self._oplog[:drop]
            self._oplog_base = keep_from

    def _forget_since(self, checkpoint: Checkpoint) -> None:
        """Forget the entries appended since ``checkpoint`` (no member can have applied
        them: the lock was held) and tell the observers."""
        written = self.oplog_end - checkpoint.oplog_end
        for view in self._views:
            # No member can have read these entries (the lock was held), but one may
            # have counted them as applied (its position asked for meanwhile).
            view.forget_after(checkpoint.oplog_end, checkpoint.last_optime)
        if written > 0:
            # Some may have been forgotten already, once every member counted them.
            kept = min(written, len(self._oplog))
            del self._oplog[len(self._oplog) - kept :]
            self._oplog_base -= written - kept
        while self.history and self.history[-1].optime.ts > checkpoint.last_optime.ts:
            self.history.pop()
        self.last_optime = checkpoint.last_optime
        for observer in self.observers:
            observer.rolled_back(checkpoint)
