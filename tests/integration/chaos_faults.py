"""The faults of a chaos run (tests/integration/chaos.py), one armed at a time.

Each round is every kind once, in a seeded order. The default suite uses the first
four (:data:`FAULT_KINDS`); ``benchmarks/bench_chaos.py`` uses them all
(:data:`ALL_FAULT_KINDS`):

- a step-down;
- the primary closing the connection of its next insert or update *before* running
  it (``failCommand``);
- the primary applying its next retryable write statement and then closing the
  connection without a reply (``onPrimaryTransactionalWrite``);
- the primary dying right after applying a write, before its reply
  (``ReplicaSet.kill_after_write``), restarted before the next fault;
- the primary killed at once, whatever it is doing, restarted before the next fault;
- the primary partitioned off, refusing connections (its open ones closed) or
  reading requests and never answering them (clients time out), healed before the
  next fault; a partitioned primary steps down and another is elected;
- a reconfig replacing a secondary with a new member (new host, a copy of the data);
  the removed member is then shut down, as a decommissioned server would be.

The faults that apply a write and lose its reply are the ones only a retry with the
same txnNumber survives (it is answered from the server's record).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Optional

from mongocore.sim import ReplicaSet
from mongocore.sim.member import SECONDARY, Member

#: Generous bound for anything a fault waits for (an election).
DEADLINE = 60.0

STEP_DOWN = "step-down"
DROP_BEFORE_APPLY = "connection closed before the write"
DROP_AFTER_APPLY = "write applied, connection closed"
KILL_AFTER_APPLY = "write applied, primary killed"
KILL = "primary killed"
PARTITION_REFUSE = "primary partitioned (refuse)"
PARTITION_DROP = "primary partitioned (drop)"
RECONFIG = "reconfig (a secondary replaced)"
#: The faults of the default suite's run.
FAULT_KINDS: tuple[str, ...] = (STEP_DOWN, DROP_BEFORE_APPLY, DROP_AFTER_APPLY, KILL_AFTER_APPLY)
ALL_FAULT_KINDS: tuple[str, ...] = (
    *FAULT_KINDS,
    KILL,
    PARTITION_REFUSE,
    PARTITION_DROP,
    RECONFIG,
)
_PARTITION_MODES = {PARTITION_REFUSE: "refuse", PARTITION_DROP: "drop"}


class Faults:
    """Arms one fault at a time, and counts those armed and those that fired."""

    def __init__(self, rs: ReplicaSet, seed: int, kinds: Sequence[str] = FAULT_KINDS) -> None:
        unknown = sorted(set(kinds) - set(ALL_FAULT_KINDS))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}")
        self.rs = rs
        self.kinds = tuple(kinds)
        self.rng = random.Random(seed)
        self.armed: Counter[str] = Counter()
        self.fired: Counter[str] = Counter()
        self._round: list[str] = []
        self._current: Optional[tuple[str, Member]] = None

    def next(self) -> None:
        self.disarm()
        if not self._round:
            self._round = self.rng.sample(self.kinds, len(self.kinds))
        kind = self._round.pop()
        primary = self.rs.wait_for_primary(timeout=DEADLINE)
        self.armed[kind] += 1
        if kind == STEP_DOWN:
            # A short stepdown period lets every member take its turn.
            self.rs.step_down(stepdown_secs=0.2)
            self.fired[kind] += 1
            return
        if kind == RECONFIG:
            self._replace_a_secondary()
            return
        if kind == DROP_BEFORE_APPLY:
            primary.fail_command("insert", "update", close_connection=True, mode={"times": 1})
        elif kind == DROP_AFTER_APPLY:
            primary.configure_fail_point(
                "onPrimaryTransactionalWrite", {"times": 1}, {"closeConnection": True}
            )
        elif kind == KILL_AFTER_APPLY:
            self.rs.kill_after_write(primary)
        elif kind == KILL:
            self.rs.kill(primary)
            self.fired[kind] += 1
        else:
            self.rs.partition(primary, _PARTITION_MODES[kind])
            self.fired[kind] += 1
        self._current = (kind, primary)

    def _replace_a_secondary(self) -> None:
        candidates = [m for m in self.rs.members if m.role == SECONDARY and m.reachable]
        if not candidates:
            return  # nothing to replace this time: armed, not fired
        removed = self.rng.choice(candidates)
        self.rs.reconfig(add=1, remove=[removed])
        self.rs.kill(removed)
        self.fired[RECONFIG] += 1

    def disarm(self) -> None:
        """Turn off the armed fault (counting it if it fired), heal a partition and
        restart a killed member."""
        current, self._current = self._current, None
        if current is not None:
            kind, member = current
            if kind == KILL_AFTER_APPLY:
                self.fired[kind] += int(not member.alive)
                self.rs.kill_after_write(member, armed=False)
            elif kind in _PARTITION_MODES:
                self.rs.heal(member)
            elif kind in (DROP_BEFORE_APPLY, DROP_AFTER_APPLY) and member.alive:
                name = "failCommand" if kind == DROP_BEFORE_APPLY else "onPrimaryTransactionalWrite"
                self.fired[kind] += member.configure_fail_point(name, "off")
        for member in self.rs.members:
            if not member.alive:
                self.rs.restart(member)
