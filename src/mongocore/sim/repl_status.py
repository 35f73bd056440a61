"""replSetGetStatus with the fields monitoring tools read.

replset_report.py answers the set's state (members, states, optimes, term); this adds what a
7.0 server reports next to it: each member's ``optimeDurable`` (the simulated storage
is in memory, so durable is applied), wall times, ``syncSourceHost``/``syncSourceId``
(a secondary syncs from the primary), ``configVersion``/``configTerm``, and for the
others ``lastHeartbeat``, ``lastHeartbeatRecv`` and ``pingMs``; at the top,
``syncSourceHost``, ``writeMajorityCount``, the voting counts and ``optimes``
(``lastCommittedOpTime`` is the majority-applied optime). Heartbeats are not simulated
(the set decides centrally): a reachable member was heard from at the time of the
status and its ping is 0 ms; an unreachable one was last heard from never (the epoch).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from bson import Int64

from mongocore.sim.replset_report import member_states

if TYPE_CHECKING:
    from mongocore.sim.member import Member
    from mongocore.sim.replset import ReplicaSet
    from mongocore.sim.store import OpTime

__all__ = ["replica_set_status"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _sync_source(replica_set: ReplicaSet, member: Member) -> tuple[str, int]:
    primary = replica_set.primary
    if member.is_secondary and primary is not None and primary.reachable and member.reachable:
        return primary.host, primary.member_id
    return "", -1


def _member_fields(
    replica_set: ReplicaSet, member: Member, me: Member, now: datetime.datetime
) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    up = member.alive and (member is me or member.partition_mode is None)
    if not member.arbiter and up:
        applied = member.applied_optime()
        fields.update(
            optimeDurable=applied.to_document(),
            optimeDurableDate=applied.wall_datetime,
            lastAppliedWallTime=applied.wall_datetime,
            lastDurableWallTime=applied.wall_datetime,
        )
    if member is not me:
        fields.update(
            lastHeartbeat=now,
            lastHeartbeatRecv=now if up else _EPOCH,
            pingMs=Int64(0),
            lastHeartbeatMessage="" if up else "Couldn't get a connection within the time limit",
        )
    host, source_id = _sync_source(replica_set, member)
    fields.update(
        syncSourceHost=host,
        syncSourceId=source_id,
        infoMessage="",
        configVersion=replica_set.set_version,
        configTerm=replica_set.term,
    )
    return fields


def _optimes(replica_set: ReplicaSet, me: Member) -> dict[str, Any]:
    applied: OpTime = me.applied_optime()
    last_write: Optional[Mapping[str, Any]] = replica_set.last_write(me)
    majority = last_write["majorityOpTime"] if last_write else applied.to_document()
    majority_date = last_write["majorityWriteDate"] if last_write else applied.wall_datetime
    return {
        "lastCommittedOpTime": majority,
        "lastCommittedWallTime": majority_date,
        "readConcernMajorityOpTime": majority,
        "appliedOpTime": applied.to_document(),
        "durableOpTime": applied.to_document(),
        "lastAppliedWallTime": applied.wall_datetime,
        "lastDurableWallTime": applied.wall_datetime,
    }


def replica_set_status(
    replica_set: ReplicaSet, member: Member, cmd: Mapping[str, Any]
) -> dict[str, Any]:
    """replSetGetStatus: the set's own answer, with the fields a 7.0 server adds."""
    status = member_states(replica_set, member)
    now = status.get("date") or datetime.datetime.now(datetime.timezone.utc)
    by_id = {m.member_id: m for m in replica_set.members}
    for entry in status.get("members", []):
        target = by_id.get(entry.get("_id"))
        if target is None:
            continue
        for key, value in _member_fields(replica_set, target, member, now).items():
            entry.setdefault(key, value)
    voters = [m for m in replica_set.members if m.config.votes]
    data_voters = [m for m in voters if not m.arbiter]
    majority = len(voters) // 2 + 1
    host, source_id = _sync_source(replica_set, member)
    extra = {
        "syncSourceHost": host,
        "syncSourceId": source_id,
        "writeMajorityCount": min(majority, len(data_voters)),
        "votingMembersCount": len(voters),
        "writableVotingMembersCount": len(data_voters),
        "optimes": _optimes(replica_set, member),
    }
    ok = status.pop("ok", 1.0)
    members = status.pop("members", [])
    for key, value in extra.items():
        status.setdefault(key, value)
    status.setdefault("lastStableRecoveryTimestamp", status["optimes"]["lastCommittedOpTime"]["ts"])
    status["members"] = members
    status["ok"] = ok
    return status
