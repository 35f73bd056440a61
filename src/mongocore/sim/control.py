"""The simulator's control command: failovers driven over the wire.

``{simControl: <action>, member: "host:port", ...}`` on the admin database, answered
by every simulated mongod and mongos, lets another program or terminal (``python -m
mongocore sim-control``) do what ``ReplicaSet.step_down``, ``kill``, ``restart``,
``partition``, ... do from Python. It is no MongoDB command: a real server answers it
with CommandNotFound (59), so a control tool pointed at a real deployment changes
nothing. It needs authentication like any command when the deployment has users.

Actions (``member`` names a process of the deployment by its host, or by
``127.0.0.1:<port>``; a mongos answers for the members of its shard as well):

- ``status``: every process with its type, state, partition and tags.
- ``stepDown``: the primary steps down (``secs``: how long it may not be re-elected,
  60 by default; ``member``, if given, must be the primary).
- ``elect``: ``member`` becomes primary now. ``freeze``: ``member`` may not stand for
  election for ``secs`` (0 unfreezes).
- ``kill`` / ``restart``: the process dies / starts again. ``partition`` (``mode``:
  ``refuse``, the default, or ``drop``) / ``heal``: it is cut off / reachable again.

A kill or partition of the very process that answers takes effect once its reply is
sent (the reply travels on a connection the action closes). A standalone answers
``status`` only: nothing would be left to restart it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, cast

from mongocore.sim.codes import CommandError

if TYPE_CHECKING:
    from mongocore.sim.member import Member, Process
    from mongocore.sim.replset import ReplicaSet
    from mongocore.sim.sharded import Mongos, ShardedCluster

__all__ = ["ACTIONS", "SIM_CONTROL", "ControlOutcome", "run_control"]

SIM_CONTROL = "simControl"
ACTIONS = ("status", "stepDown", "elect", "freeze", "kill", "restart", "partition", "heal")

# Actions on a single process, and those a mongos can be the target of.
_MEMBER_ACTIONS = frozenset({"elect", "freeze", "kill", "restart", "partition", "heal"})
_MONGOS_ACTIONS = frozenset({"kill", "restart", "partition", "heal"})
# Actions that close the connections of their target: deferred when it is the receiver.
_CUTTING_ACTIONS = frozenset({"kill", "partition"})


class ControlOutcome(NamedTuple):
    """The reply, and what to do once it is sent (an action on the receiving process)."""

    reply: dict[str, Any]
    after_reply: Optional[Callable[[], None]] = None


class _Deployment(NamedTuple):
    replica_set: Optional[ReplicaSet]
    cluster: Optional[ShardedCluster]
    processes: list[Process]


def _deployment_of(process: Process) -> _Deployment:
    # Duck typing: the deployment classes import the member module, which imports this one.
    owner: Any = process.deployment
    shard = getattr(owner, "shard", None)
    if shard is not None:
        cluster = cast("ShardedCluster", owner)
        replica_set = cast("ReplicaSet", shard)
        processes: list[Process] = [*cluster.mongoses, *replica_set.members, *replica_set.removed]
        return _Deployment(replica_set, cluster, processes)
    if getattr(owner, "is_replica_set", False):
        replica_set = cast("ReplicaSet", owner)
        return _Deployment(replica_set, None, [*replica_set.members, *replica_set.removed])
    return _Deployment(None, None, list(getattr(owner, "members", [process])))


def _matches(process: Process, name: str) -> bool:
    listening = (process.server.host, "localhost")
    host, _, port = name.rpartition(":")
    return name == process.host or (host in listening and port == str(process.port))


def _describe(process: Process, *, in_replica_set: bool) -> dict[str, Any]:
    """A process's host, type and state (its member state in a replica set)."""
    state = "RUNNING"
    if not process.alive:
        state = "DOWN"
    elif in_replica_set and process.kind == "mongod":
        state = str(getattr(process, "role", state))
    entry: dict[str, Any] = {"host": process.host, "type": process.kind, "state": state}
    if process.partition_mode is not None:
        entry["partitioned"] = process.partition_mode
    if in_replica_set and process.kind == "mongod":
        entry["tags"] = dict(getattr(process, "tags", {}))
    return entry


def _status(deployment: _Deployment) -> dict[str, Any]:
    replica_set = deployment.replica_set
    reply: dict[str, Any] = {}
    if replica_set is None:
        reply["topology"] = "standalone"
        reply["members"] = [_describe(p, in_replica_set=False) for p in deployment.processes]
        return reply
    reply["topology"] = "sharded" if deployment.cluster is not None else "replicaSet"
    reply["setName"] = replica_set.name
    with replica_set.cond:
        primary = replica_set.primary
        reply["primary"] = primary.host if primary is not None else None
        reply["members"] = [_describe(p, in_replica_set=True) for p in deployment.processes]
    return reply


def _number(cmd: Mapping[str, Any], field: str, default: Optional[float]) -> float:
    value = cmd.get(field, default)
    if value is None:
        raise CommandError(2, f"simControl {cmd[SIM_CONTROL]} needs '{field}' (seconds)")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise CommandError(14, f"'{field}' must be a number of seconds >= 0, not {value!r}")
    return float(value)


def _target(deployment: _Deployment, action: str, cmd: Mapping[str, Any]) -> Optional[Process]:
    name = cmd.get("member")
    if name is None:
        if action in _MEMBER_ACTIONS:
            raise CommandError(2, f"simControl {action} needs 'member': the host:port to act on")
        return None
    if not isinstance(name, str):
        raise CommandError(14, f"'member' must be a host:port string, not {name!r}")
    for process in deployment.processes:
        if _matches(process, name):
            return process
    hosts = ", ".join(p.host for p in deployment.processes)
    raise CommandError(2, f"no process {name} in this deployment (its processes: {hosts})")


def run_control(process: Process, db: str, cmd: Mapping[str, Any]) -> ControlOutcome:
    """Run ``simControl`` received by ``process``; CommandError for a bad request."""
    if db != "admin":
        raise CommandError(13, "simControl may only be run against the admin database.")
    action = cmd.get(SIM_CONTROL)
    if action not in ACTIONS:
        raise CommandError(2, f"unknown simControl action {action!r}; expected one of {ACTIONS}")
    deployment = _deployment_of(process)
    if action == "status":
        return ControlOutcome({**_status(deployment), "ok": 1.0})
    if deployment.replica_set is None:
        raise CommandError(
            2,
            f"simControl {action} needs a replica set or a sharded cluster: a standalone"
            " has no other process that could answer afterwards",
        )
    target = _target(deployment, action, cmd)
    act = _action(deployment, action, target, cmd)
    reply: dict[str, Any] = {"action": action}
    if target is not None:
        reply["member"] = target.host
    if target is process and action in _CUTTING_ACTIONS:
        return ControlOutcome({**reply, "ok": 1.0}, after_reply=act)
    try:
        result = act()
    except (RuntimeError, ValueError) as exc:
        raise CommandError(2, str(exc)) from None
    if action == "stepDown" and result is not None:
        reply["member"] = result.host
    return ControlOutcome({**reply, "ok": 1.0})


def _action(
    deployment: _Deployment, action: str, target: Optional[Process], cmd: Mapping[str, Any]
) -> Callable[[], Any]:
    """The call that performs ``action``, its arguments checked now."""
    replica_set = deployment.replica_set
    assert replica_set is not None
    if target is not None and target.kind == "mongos":
        if action not in _MONGOS_ACTIONS:
            raise CommandError(2, f"simControl {action} acts on a replica set member, not a mongos")
        cluster = deployment.cluster
        assert cluster is not None
        return _on_mongos(cluster, action, cast("Mongos", target), cmd)
    member = cast("Optional[Member]", target)
    if action == "stepDown":
        secs = _number(cmd, "secs", 60.0)
        if secs <= 0:
            raise CommandError(2, f"stepdown period must be a positive number, got {secs}")
        with replica_set.cond:
            primary = replica_set.primary
        if primary is None:
            raise CommandError(2, f"replica set {replica_set.name} has no primary to step down")
        if member is not None and member is not primary:
            raise CommandError(
                2, f"{member.host} is not the primary (the primary is {primary.host})"
            )
        return lambda: replica_set.step_down(secs)
    assert member is not None
    if action == "freeze":
        secs = _number(cmd, "secs", None)
        return lambda: replica_set.freeze(member, secs)
    if action == "partition":
        mode = _mode(cmd)
        return lambda: replica_set.partition(member, mode)
    calls: dict[str, Callable[[Member], Any]] = {
        "elect": replica_set.elect,
        "kill": replica_set.kill,
        "restart": replica_set.restart,
        "heal": replica_set.heal,
    }
    call = calls[action]
    return lambda: call(member)


def _mode(cmd: Mapping[str, Any]) -> str:
    mode = cmd.get("mode", "refuse")
    if mode not in ("refuse", "drop"):
        raise CommandError(2, f"partition mode must be 'refuse' or 'drop', not {mode!r}")
    return cast(str, mode)


def _on_mongos(
    cluster: ShardedCluster, action: str, mongos: Mongos, cmd: Mapping[str, Any]
) -> Callable[[], Any]:
    calls: dict[str, Callable[[Mongos], Any]] = {
        "kill": cluster.kill,
        "restart": cluster.restart,
        "heal": cluster.heal,
    }
    if action == "partition":
        mode = _mode(cmd)
        return lambda: cluster.partition(mongos, mode)
    call = calls[action]
    return lambda: call(mongos)
