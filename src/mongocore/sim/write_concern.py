"""Write concern as a MongoDB 7.0 mongod answers it (MongoDB manual, "Write Concern",
"Write Concern Specification"; the server's waitForWriteConcern).

A write command (and a transaction's commit or abort) that carries a ``writeConcern``
runs first; then the member waits for the write concern, and a write concern it cannot
satisfy is reported in ``writeConcernError`` beside the command's own result (the
write stays applied):

- ``w: <n>`` on a replica set: the write's optime applied by ``n`` data-bearing members
  (the primary included, arbiters never; a member counts while it is up and reachable).
  ``n`` greater than the set's data-bearing members: UnsatisfiableWriteConcern (100),
  "Not enough data-bearing nodes", at once.
- ``w: "majority"``: a majority of the voting members, but no more than the voting
  data-bearing members there are.
- ``w: "<mode>"``: a custom mode of the set's config (``settings.getLastErrorModes``,
  ``ReplicaSet(write_concern_modes=...)``), ``{tag: count}``: the write applied on
  members covering ``count`` distinct values of each tag. An unknown mode:
  UnknownReplWriteConcern (79); a mode the members' tags cannot satisfy:
  UnsatisfiableWriteConcern (100).
- ``wtimeout`` (milliseconds; 0 or none: no limit): a write concern not satisfied by
  then fails with WriteConcernFailed (64), "waiting for replication timed out",
  ``errInfo: {wtimeout: true}``. Without it, the member waits until it is satisfied
  (or ``maxTimeMS`` passes: MaxTimeMSExpired, 50, as a write concern error).
- ``j``: accepted as a WiredTiger server accepts it (the simulator has no journal to
  wait for); it must be a boolean or a number, ``w`` not negative and ``wtimeout`` a
  number (FailedToParse, 9, before the command runs).
- a standalone: ``w`` greater than 1, or a mode other than majority, fails as a write
  concern error BadValue (2), "cannot use 'w' > 1 on a standalone".

Every write concern error carries ``errInfo.writeConcern``, the write concern the
member applied with its ``provenance`` ("clientSupplied"). A command without
``writeConcern`` gets the server's implicit default, ``w: "majority"``, which the
simulator does not wait for: its secondaries' copies always catch up on their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from bson import Timestamp

from mongocore.sim.codes import CloseConnection, CommandError, code_name

if TYPE_CHECKING:
    from mongocore.sim.member import Member

__all__ = ["MAJORITY", "check_write_concern", "wait_for_write_concern"]

MAJORITY = "majority"
# How long one wait lasts at most: a deployment with a fake clock makes its copies
# apply entries when the clock is moved, which wakes nobody.
_POLL_SECONDS = 0.05


def _write_concern(cmd: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    write_concern = cmd.get("writeConcern")
    return write_concern if isinstance(write_concern, Mapping) else None


def check_write_concern(cmd: Mapping[str, Any]) -> None:
    """Refuse, before the command runs, a write concern a server cannot parse."""
    write_concern = _write_concern(cmd)
    if write_concern is None:
        return
    w = write_concern.get("w")
    if isinstance(w, (int, float)) and not isinstance(w, bool) and w < 0:
        raise CommandError(9, "w has to be a non-negative number and not greater than 50")
    j = write_concern.get("j")
    if j is not None and not isinstance(j, (bool, int, float)):
        raise CommandError(9, "j must be numeric or a boolean value")
    wtimeout = write_concern.get("wtimeout", 0)
    if isinstance(wtimeout, bool) or not isinstance(wtimeout, (int, float)):
        raise CommandError(9, "wtimeout must be a number")


def _applied(write_concern: Mapping[str, Any]) -> dict[str, Any]:
    """The write concern as the server reports it back (errInfo.writeConcern)."""
    doc: dict[str, Any] = {"w": write_concern.get("w", 1)}
    if "j" in write_concern:
        doc["j"] = bool(write_concern["j"])
    doc["wtimeout"] = int(write_concern.get("wtimeout", 0) or 0)
    doc["provenance"] = "clientSupplied"
    return doc


def _error(code: int, errmsg: str, write_concern: Mapping[str, Any], **info: Any) -> dict[str, Any]:
    return {
        "code": code,
        "codeName": code_name(code),
        "errmsg": errmsg,
        "errInfo": {**info, "writeConcern": _applied(write_concern)},
    }


def wait_for_write_concern(
    member: Member, cmd: Mapping[str, Any], optime_ts: Timestamp
) -> Optional[dict[str, Any]]:
    """Wait (releasing the deployment's lock, which is held) until the write at
    ``optime_ts`` satisfies the command's write concern; the writeConcernError of a
    write concern that cannot be satisfied, None if satisfied (or none was asked)."""
    write_concern = _write_concern(cmd)
    if write_concern is None:
        return None
    w = write_concern.get("w", 1)
    if isinstance(w, (int, float)) and not isinstance(w, bool) and w <= 1:
        return None  # the primary has it (w: 0 is unacknowledged: nobody waits)
    deployment: Any = member.deployment
    if not deployment.is_replica_set:
        if isinstance(w, str) and w != MAJORITY:
            message = (
                f"cannot use non-majority 'w' mode {w} when a host is not a member of a replica set"
            )
            return _error(2, message, write_concern)
        if isinstance(w, str):
            return None  # majority of one
        return _error(2, "cannot use 'w' > 1 on a standalone", write_concern)
    members: Sequence[Member] = deployment.members
    data_bearing = [m for m in members if not m.arbiter]
    satisfied = _requirement(w, data_bearing, deployment, write_concern)
    if isinstance(satisfied, dict):
        return satisfied  # cannot be satisfied at all
    wtimeout = float(write_concern.get("wtimeout", 0) or 0) / 1000.0
    max_time_ms = cmd.get("maxTimeMS")
    limit = 0.0
    if isinstance(max_time_ms, (int, float)) and max_time_ms > 0:
        limit = float(max_time_ms) / 1000.0
    start = time.monotonic()
    while True:
        acknowledged = [m for m in data_bearing if _has_applied(m, optime_ts)]
        if satisfied(acknowledged):
            return None
        if deployment.stopping or not member.alive:
            raise CloseConnection
        waited = time.monotonic() - start
        if wtimeout and waited >= wtimeout:
            return _error(64, "waiting for replication timed out", write_concern, wtimeout=True)
        if limit and waited >= limit:
            return _error(50, "operation exceeded time limit", write_concern)
        remaining = [d - waited for d in (wtimeout, limit) if d]
        pause = min([_POLL_SECONDS, *remaining, _next_apply(member, data_bearing, optime_ts)])
        member.cond.wait(max(pause, 0.001))


def _has_applied(member: Member, optime_ts: Timestamp) -> bool:
    """Does this member acknowledge the write (up, reachable, and has applied it)?"""
    return (
        member.reachable
        and member.role in ("PRIMARY", "SECONDARY")
        and member.applied_optime().ts >= optime_ts
    )


def _next_apply(member: Member, members: Sequence[Member], optime_ts: Timestamp) -> float:
    """Seconds until the next member's copy applies the write (the poll period if none
    will on its own)."""
    now = member.deployment.clock()
    dues = []
    for m in members:
        view = m.view
        if view is not None and m.reachable:
            due = view.next_apply_time(optime_ts)
            if due is not None:
                dues.append(due - now)
    return min(dues) if dues else _POLL_SECONDS


Acknowledged = Callable[[Sequence["Member"]], bool]


def _requirement(
    w: Any, data_bearing: Sequence[Member], deployment: Any, write_concern: Mapping[str, Any]
) -> Union[Acknowledged, dict[str, Any]]:
    """A test of the members that acknowledged, or the writeConcernError of a write
    concern the set's configuration can never satisfy."""
    if isinstance(w, (int, float)):
        needed = int(w)
        if needed > len(data_bearing):
            return _error(100, "Not enough data-bearing nodes", write_concern)

        def enough(acknowledged: Sequence[Member]) -> bool:
            return len(acknowledged) >= needed

        return enough
    if w == MAJORITY:
        voters = [m for m in deployment.members if m.config.votes]
        needed = min(len(voters) // 2 + 1, sum(1 for m in data_bearing if m.config.votes))

        def majority(acknowledged: Sequence[Member]) -> bool:
            return sum(1 for m in acknowledged if m.config.votes) >= needed

        return majority
    modes: Mapping[str, Mapping[str, int]] = getattr(deployment, "write_concern_modes", {})
    mode = modes.get(str(w))
    if mode is None:
        return _error(
            79,
            f"No write concern mode named '{w}' found in replica set configuration",
            write_concern,
        )
    for tag, count in mode.items():
        values = {m.tags[tag] for m in data_bearing if tag in m.tags}
        if len(values) < count:
            return _error(100, f'Not enough nodes match write concern mode "{w}"', write_concern)

    def tagged(acknowledged: Sequence[Member]) -> bool:
        return all(
            len({m.tags[tag] for m in acknowledged if tag in m.tags}) >= count
            for tag, count in mode.items()
        )

    return tagged
