"""What the members of a simulated replica set report about it: hello's replica-set
fields, ``lastWrite``, the members' states of replSetGetStatus, the electionId and
``$clusterTime`` (MongoDB manual, "hello", "replSetGetStatus"; the SDAM spec's
electionId and setVersion).

The set (replset.py) decides roles centrally; every member reports the same view of it,
from its own standpoint: a partitioned member does not know the primary, and a member
reports the optime its own copy has applied (``majorityOpTime`` is the newest optime a
majority of the voting members applied).
"""

from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING, Any, Optional

from bson import Binary, Int64, ObjectId

from mongocore.sim.member_state import ARBITER, DOWN, PRIMARY, REMOVED, SECONDARY, STARTUP
from mongocore.sim.store import ZERO_OPTIME, DataStore, OpTime

if TYPE_CHECKING:
    from mongocore.sim.member import Member
    from mongocore.sim.replset import ReplicaSet

__all__ = [
    "cluster_time_fields",
    "election_id",
    "hello_fields",
    "last_write",
    "majority_optime",
    "member_states",
]

_STATE_CODES = {PRIMARY: 1, SECONDARY: 2, STARTUP: 0, ARBITER: 7, DOWN: 8, REMOVED: 10}


def election_id(term: int) -> ObjectId:
    """The electionId of the primary elected in ``term``."""
    return ObjectId(bytes.fromhex("7fffffff") + term.to_bytes(8, "big"))


def cluster_time_fields(store: DataStore, optime: Optional[OpTime] = None) -> dict[str, Any]:
    """``$clusterTime`` (with an all-zero signature: keys are not simulated) and operationTime."""
    return {
        "$clusterTime": {
            "clusterTime": store.last_optime.ts,
            "signature": {"hash": Binary(b"\x00" * 20, 0), "keyId": Int64(0)},
        },
        "operationTime": (optime or store.last_optime).ts,
    }


def hello_fields(replica_set: ReplicaSet, member: Member) -> dict[str, Any]:
    """A member's replica-set fields of hello: hosts, roles, primary, electionId, lastWrite."""
    visible = [m for m in replica_set.members if not m.hidden]
    doc: dict[str, Any] = {
        "hosts": [m.host for m in visible if not m.arbiter and m.priority > 0],
    }
    passives = [m.host for m in visible if not m.arbiter and m.priority == 0]
    if passives:
        doc["passives"] = passives
    arbiters = [m.host for m in visible if m.arbiter]
    if arbiters:
        doc["arbiters"] = arbiters
    doc["setName"] = replica_set.name
    doc["setVersion"] = replica_set.set_version
    doc["secondary"] = member.role == SECONDARY
    primary = replica_set.primary
    if primary is not None and member.partition_mode is None:
        doc["primary"] = primary.host
    if member.arbiter:
        doc["arbiterOnly"] = True
    if member.priority == 0 and not member.arbiter:
        doc["passive"] = True
    if member.hidden:
        doc["hidden"] = True
    if member.config.tags:
        doc["tags"] = dict(member.config.tags)
    doc["me"] = member.host
    if member.role == PRIMARY:
        doc["electionId"] = election_id(replica_set.term)
    if not member.arbiter:
        written = last_write(replica_set, member)
        if written is not None:
            doc["lastWrite"] = written
    return doc


def last_write(replica_set: ReplicaSet, member: Member) -> Optional[dict[str, Any]]:
    """hello's ``lastWrite``: what the member applied, and what a majority applied."""
    applied = member.applied_optime()
    majority = majority_optime(replica_set)
    return {
        "opTime": applied.to_document(),
        "lastWriteDate": applied.wall_datetime,
        "majorityOpTime": majority.to_document(),
        "majorityWriteDate": majority.wall_datetime,
    }


def majority_optime(replica_set: ReplicaSet) -> OpTime:
    """The newest optime a majority of the voting members applied."""
    voters = [m for m in replica_set.members if m.config.votes]
    needed = len(voters) // 2 + 1
    applied = sorted(
        (m.applied_optime() for m in voters if not m.arbiter),
        key=lambda o: o.ts,
        reverse=True,
    )
    return applied[needed - 1] if len(applied) >= needed else ZERO_OPTIME


def member_states(replica_set: ReplicaSet, member: Member) -> dict[str, Any]:
    """replSetGetStatus as the set knows it: each member's state, health and optime
    (repl_status.py adds what monitoring tools read besides)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    entries = []
    for m in replica_set.members:
        applied = m.applied_optime() if not m.arbiter else ZERO_OPTIME
        up = m.alive and (m is member or m.partition_mode is None)
        entry: dict[str, Any] = {
            "_id": m.member_id,
            "name": m.host,
            "health": 1.0 if up else 0.0,
            "state": _STATE_CODES[m.role] if up else 8,
            "stateStr": m.role if up else "(not reachable/healthy)",
            "uptime": int(time.monotonic() - m.started_at) if up else 0,
        }
        if not m.arbiter:
            entry["optime"] = applied.to_document()
            entry["optimeDate"] = applied.wall_datetime
        if m.role == PRIMARY:
            entry["electionId"] = election_id(replica_set.term)
        if m is member:
            entry["self"] = True
        entries.append(entry)
    return {
        "set": replica_set.name,
        "date": now,
        "myState": _STATE_CODES[member.role],
        "term": Int64(replica_set.term),
        "heartbeatIntervalMillis": Int64(2000),
        "majorityVoteCount": replica_set._votes(replica_set.members) // 2 + 1,
        "members": entries,
        "ok": 1.0,
    }
