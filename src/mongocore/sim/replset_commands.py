"""The replSet* commands of a simulated replica set's members (MongoDB manual,
"replSetStepDown", "replSetFreeze", "replSetGetConfig", "replSetInitiate",
"replSetGetStatus"): admin-only, refused (NotYetInitialized, 94) before the set is
initiated, answered from the set's central state (replset.py) as a 7.0 member answers.
replSetGetStatus is repl_status.py's. A standalone refuses them (NoReplicationEnabled,
76: command_pipeline.py); their entries are in command_table.py.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext
from mongocore.sim.repl_status import replica_set_status

if TYPE_CHECKING:
    from mongocore.sim.member import Member
    from mongocore.sim.replset import ReplicaSet

__all__ = [
    "cmd_freeze",
    "cmd_get_config",
    "cmd_get_status",
    "cmd_initiate",
    "cmd_step_down",
    "replica_set_config",
]


def _replica_set(ctx: CommandContext) -> tuple[ReplicaSet, Member]:
    """The set and the member running a replSet* command; NotYetInitialized (94) before
    the set is initiated (but for replSetInitiate)."""
    member = cast("Member", ctx.process)
    replica_set = cast("ReplicaSet", member.deployment)
    if not replica_set.initiated and ctx.name != "replSetInitiate":
        raise CommandError(94, "no replset config has been received")
    return replica_set, member


def cmd_get_status(ctx: CommandContext) -> dict[str, Any]:
    # The set's answer with the fields a server adds (sim/repl_status.py).
    return replica_set_status(*_replica_set(ctx), ctx.cmd)


def cmd_step_down(ctx: CommandContext) -> dict[str, Any]:
    return _step_down(*_replica_set(ctx), ctx.cmd)


def cmd_freeze(ctx: CommandContext) -> dict[str, Any]:
    return _freeze(*_replica_set(ctx), ctx.cmd)


def cmd_get_config(ctx: CommandContext) -> dict[str, Any]:
    return replica_set_config(*_replica_set(ctx))


def cmd_initiate(ctx: CommandContext) -> dict[str, Any]:
    return _initiate(*_replica_set(ctx), ctx.cmd)


def _step_down(replica_set: ReplicaSet, member: Member, cmd: Mapping[str, Any]) -> dict[str, Any]:
    if not member.is_primary:
        raise CommandError(10107, "not primary so can't step down")
    secs = cmd.get("replSetStepDown", 60)
    if not isinstance(secs, (int, float)) or isinstance(secs, bool) or secs <= 0:
        raise CommandError(2, f"stepdown period must be a positive number, got {secs!r}")
    # The server waits 10 seconds for a secondary to catch up, none when forced.
    catch_up = cmd.get("secondaryCatchUpPeriodSecs", 0 if cmd.get("force") else 10)
    if isinstance(catch_up, (int, float)) and catch_up > secs:
        raise CommandError(2, "stepdown period must be longer than secondaryCatchUpPeriodSecs")
    now = time.monotonic()
    if not cmd.get("force") and not any(
        replica_set._electable(m, now) for m in replica_set.members if m is not member
    ):
        raise CommandError(262, "No electable secondaries caught up as of the stepdown deadline")
    replica_set._step_down_locked(member, float(secs))
    replica_set._schedule_election_locked(None)
    return {"ok": 1.0}


def _freeze(replica_set: ReplicaSet, member: Member, cmd: Mapping[str, Any]) -> dict[str, Any]:
    secs = cmd.get("replSetFreeze", 0)
    if not isinstance(secs, (int, float)) or isinstance(secs, bool) or secs < 0:
        raise CommandError(2, f"replSetFreeze takes a number of seconds, got {secs!r}")
    if member.is_primary:
        raise CommandError(
            95, "cannot freeze node when primary or running for election. state: Primary"
        )
    reply: dict[str, Any] = {}
    if secs == 0:
        member.frozen_until = 0.0
        reply["info"] = "unfreezing"
        if replica_set.primary is None:
            replica_set._schedule_election_locked(None)
    else:
        member.frozen_until = time.monotonic() + float(secs)
    reply["ok"] = 1.0
    return reply


def replica_set_config(replica_set: ReplicaSet, member: Member) -> dict[str, Any]:
    """replSetGetConfig's reply (the document of local.system.replset under ``config``)."""
    members = [
        {
            "_id": m.member_id,
            "host": m.host,
            "arbiterOnly": m.arbiter,
            "buildIndexes": True,
            "hidden": m.hidden,
            "priority": float(m.priority),
            "tags": dict(m.config.tags),
            "secondaryDelaySecs": Int64(0),
            "votes": m.config.votes,
        }
        for m in replica_set.members
    ]
    return {
        "config": {
            "_id": replica_set.name,
            "version": replica_set.set_version,
            "term": replica_set.term,
            "members": members,
            "protocolVersion": Int64(1),
            "writeConcernMajorityJournalDefault": True,
            "settings": {
                "electionTimeoutMillis": int(replica_set.election_delay * 1000),
                "getLastErrorModes": {
                    mode: dict(tags) for mode, tags in replica_set.write_concern_modes.items()
                },
            },
        },
        "ok": 1.0,
    }


def _initiate(replica_set: ReplicaSet, member: Member, cmd: Mapping[str, Any]) -> dict[str, Any]:
    if replica_set.initiated:
        raise CommandError(23, "already initialized")
    replica_set._initiate_locked()
    return {"ok": 1.0}
