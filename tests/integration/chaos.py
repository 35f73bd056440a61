"""Retryable writes under chaos: a seeded workload whose double application is visible,
seeded faults against a simulated replica set, and the judge of the outcome.

The retryable-writes seed promises at-most-once execution: a write acknowledged to
the application was applied exactly once, and a write whose error reached the
application was applied at most once. Checking that needs writes whose second
application would show, so every write carries unique tokens:

- ``inc``: ``update_one({_id: key}, {$inc: {n: 1}, $push: {tokens: token}})`` on one
  of a few shared counter documents. Applied twice, its token is in the array twice
  and the counter can exceed the increments attempted on it.
- ``insert``: ``insert_one({token})``, the driver making the ``_id``. Applied twice by
  a second write, the second fails with E11000 duplicate key: any E11000 is a
  duplicate, never an accepted outcome.
- ``insert_many``: an ordered batch of three such documents, one command of three
  statements, which the faults may cut between statements.

Faults (tests/integration/chaos_faults.py), in a seeded order, one armed at a time,
the next after ``writes_per_fault`` more acknowledgements (or ``interval`` seconds,
when given): step-downs, connections closed before a write runs, writes applied and
their reply lost (a closed connection, a killed primary) and, for the benchmark,
kills, partitions (refuse and drop) and reconfigs.

Each write's latency is recorded. With ``hang_after``, a write still running that
long after every other writer is done counts as *hung* (and its thread's later writes
are never run), instead of failing the run.

Afterwards, the deployment healed, the final state is read from the simulator's
store (not through the driver under test) and :func:`judge` checks, per write: an
acknowledged write is there (else *lost*); no token is there twice and no caller
saw E11000 (else *applied twice*); for each counter, acknowledged <= n <= attempted
and n equals the number of its tokens. Writes whose error reached the caller have
an unknown outcome: counted apart, with how many of them were applied anyway.
"""

from __future__ import annotations

import contextlib
import functools
import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from mongocore.api.client import Client
from mongocore.core.events import CommandFailedEvent, CommandSucceededEvent
from mongocore.errors import MongoCoreError
from mongocore.io.executor import Executor
from mongocore.sim import ReplicaSet
from tests.integration.chaos_faults import (
    ALL_FAULT_KINDS,
    DROP_AFTER_APPLY,
    DROP_BEFORE_APPLY,
    FAULT_KINDS,
    KILL_AFTER_APPLY,
    STEP_DOWN,
    Faults,
)
from tests.integration.sim_client import Recorder

__all__ = [
    "ALL_FAULT_KINDS",
    "DROP_AFTER_APPLY",
    "DROP_BEFORE_APPLY",
    "FAULT_KINDS",
    "KILL_AFTER_APPLY",
    "STEP_DOWN",
    "ChaosReport",
    "Driver",
    "Write",
    "judge",
    "mongocore_driver",
    "new_txn_number_per_attempt",
    "run_chaos",
]

DB = "chaos"
COUNTERS = "counters"
DUPLICATE_KEY = 11000
#: Generous bound for anything the run waits for (elections, threads ending).
DEADLINE = 60.0

#: The kinds of write, and how often each is drawn.
WRITE_KINDS: tuple[str, ...] = ("inc", "insert", "insert_many")
WRITE_WEIGHTS: tuple[float, ...] = (0.5, 0.3, 0.2)
BATCH = 3

#: mongocore's settings for chaos: fast rediscovery, room to wait out an election.
CHAOS_OPTIONS: dict[str, Any] = {
    "retryWrites": True,
    "heartbeatFrequencyMS": 500,
    "serverSelectionTimeoutMS": 30_000,
}


@dataclass(frozen=True)
class Driver:
    """The client under test: how to connect (with an optional command listener), and
    the base class of the errors its operations raise to the caller."""

    name: str
    connect: Callable[[str, Recorder], Any]
    error: type[BaseException]
    #: Whether ``connect`` registers the recorder (a mongocore listener) with the client.
    listens: bool = True


def mongocore_driver(**options: Any) -> Driver:
    """mongocore with CHAOS_OPTIONS, and ``options`` over them."""

    def connect(uri: str, recorder: Recorder) -> Client:
        return Client(uri, event_listeners=[recorder], **{**CHAOS_OPTIONS, **options})

    return Driver("mongocore", connect, MongoCoreError)


MONGOCORE = mongocore_driver()


@dataclass
class Write:
    """One operation of the workload and what its caller learned."""

    kind: str
    target: str  # the counter's _id, or the collection inserted into
    tokens: tuple[str, ...]
    #: "acknowledged", "unknown" (an error), "duplicate key", "hung" (still running
    #: when the run gave up on it) or "not run" (after a hung write in its thread).
    outcome: str = "pending"
    error: str = ""
    #: How long the driver call took (None if it never returned).
    seconds: Optional[float] = None
    #: The error said the write was certainly not applied (mongocore's
    #: ``write_may_have_been_applied is False``): the judge checks it.
    claimed_not_applied: bool = False


@dataclass
class Verdict:
    """What :func:`judge` found."""

    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    duplicate_key_errors: list[str] = field(default_factory=list)
    counter_violations: list[str] = field(default_factory=list)
    unknown_applied: int = 0
    #: Tokens present although their write's error said it was not applied.
    false_not_applied: list[str] = field(default_factory=list)

    @property
    def applied_twice(self) -> list[str]:
        return sorted({*self.duplicated, *self.duplicate_key_errors})


def judge(
    writes: Sequence[Write],
    counters: Mapping[str, tuple[int, Sequence[str]]],
    inserted: Mapping[str, int],
) -> Verdict:
    """Check the writes against the final state: ``counters`` maps each counter's _id to
    its ``n`` and ``tokens``; ``inserted`` counts the inserted documents per token."""
    verdict = Verdict()
    present: Counter[str] = Counter(inserted)
    for key, (n, tokens) in counters.items():
        present.update(tokens)
        ours = [w for w in writes if w.kind == "inc" and w.target == key]
        acknowledged = sum(1 for w in ours if w.outcome == "acknowledged")
        if not acknowledged <= n <= len(ours):
            verdict.counter_violations.append(
                f"counter {key}: n={n}, expected {acknowledged} (acknowledged)"
                f" <= n <= {len(ours)} (attempted)"
            )
        if n != len(tokens):
            verdict.counter_violations.append(f"counter {key}: n={n} but {len(tokens)} tokens")
        attempted = {t for w in ours for t in w.tokens}
        strays = sorted(set(tokens) - attempted)
        if strays:
            verdict.counter_violations.append(f"counter {key}: tokens never sent to it {strays}")
    attempted_tokens = {t for w in writes for t in w.tokens}
    verdict.duplicated = sorted(t for t, count in present.items() if count > 1)
    verdict.counter_violations.extend(
        f"token {t} present but never attempted" for t in sorted(set(present) - attempted_tokens)
    )
    for write in writes:
        if write.outcome == "acknowledged":
            verdict.lost.extend(t for t in write.tokens if present[t] == 0)
        elif write.outcome == "duplicate key":
            verdict.duplicate_key_errors.extend(write.tokens)
        else:
            verdict.unknown_applied += sum(1 for t in write.tokens if present[t] > 0)
            if write.claimed_not_applied:
                verdict.false_not_applied.extend(t for t in write.tokens if present[t] > 0)
    return verdict


@dataclass
class ChaosReport:
    driver: str
    seed: int
    writes: list[Write]
    verdict: Verdict
    faults_armed: Counter[str]
    faults_fired: Counter[str]
    #: Failed insert/update command events (retried, or reported); None without a listener.
    failed_commands: Optional[int]
    #: Replies with a duplicate key error the listener saw (must be 0).
    duplicate_key_replies: Optional[int]
    errors: Counter[str]
    #: Exceptions that ended a writer or the chaos thread (must be none).
    crashes: list[str]
    seconds: float
    fault_kinds: tuple[str, ...] = FAULT_KINDS

    def count(self, outcome: str) -> int:
        return sum(1 for w in self.writes if w.outcome == outcome)

    @property
    def claimed_not_applied(self) -> int:
        return sum(1 for w in self.writes if w.claimed_not_applied)

    def latency_ms(self, quantile: int) -> float:
        """The ``quantile``-th percentile (1 to 99) of the driver calls that returned
        (acknowledged or raised), in milliseconds."""
        times = [w.seconds for w in self.writes if w.seconds is not None]
        if len(times) < 2:
            return times[0] * 1000 if times else 0.0
        return statistics.quantiles(times, n=100, method="inclusive")[quantile - 1] * 1000

    @property
    def ok(self) -> bool:
        v = self.verdict
        return not (
            v.lost
            or v.applied_twice
            or v.counter_violations
            or v.false_not_applied
            or self.crashes
            or self.duplicate_key_replies
        )

    def lines(self) -> list[str]:
        v = self.verdict
        kinds = Counter(w.kind for w in self.writes)
        faults = ", ".join(
            f"{kind}: {self.faults_fired[kind]}/{self.faults_armed[kind]}"
            for kind in self.fault_kinds
        )
        lines = [
            f"driver {self.driver}, seed {self.seed}: {len(self.writes)} writes"
            f" ({', '.join(f'{k} {kinds[k]}' for k in WRITE_KINDS)}),"
            f" {sum(len(w.tokens) for w in self.writes)} statements",
            f"acknowledged:                 {self.count('acknowledged')}",
            f"unknown outcome:              {self.count('unknown')} (error raised to the"
            f" caller; {v.unknown_applied} of their statements applied)",
            f"said not applied:             {self.claimed_not_applied} of them"
            f" ({len(v.false_not_applied)} statements applied all the same)",
            f"faults fired/armed:           {faults}",
            f"lost:                         {len(v.lost)} acknowledged statements",
            f"applied twice:                {len(v.applied_twice)} statements"
            f" ({len(v.duplicated)} tokens present twice,"
            f" {len(v.duplicate_key_errors)} whose caller got E11000)",
            f"counter violations:           {len(v.counter_violations)}",
            f"hung:                         {self.count('hung')} (then"
            f" {self.count('not run')} writes of their threads never run)",
            f"latency p50 / p99:            {self.latency_ms(50):.1f} ms /"
            f" {self.latency_ms(99):.1f} ms",
            f"seconds:                      {self.seconds:.2f}",
        ]
        if self.failed_commands is not None:
            lines.append(f"failed write commands (events): {self.failed_commands}")
        lines += [f"  error {name}: {n}" for name, n in sorted(self.errors.items())]
        lines += [f"  {problem}" for problem in [*v.counter_violations, *self.crashes][:10]]
        return lines


def is_duplicate_key(error: BaseException) -> bool:
    """E11000, as the error's code or in a bulk write's write errors (either driver)."""
    if getattr(error, "code", None) == DUPLICATE_KEY:
        return True
    details = getattr(error, "details", None)
    write_errors = details.get("writeErrors") if isinstance(details, Mapping) else None
    return any(
        isinstance(e, Mapping) and e.get("code") == DUPLICATE_KEY for e in write_errors or ()
    )


def _duplicate_key_replies(recorder: Recorder) -> int:
    found = 0
    for event in recorder.of(CommandSucceededEvent):
        errors = event.reply.get("writeErrors") or ()
        found += sum(1 for e in errors if e.get("code") == DUPLICATE_KEY)
    for event in recorder.of(CommandFailedEvent):
        found += int(getattr(event.failure, "code", None) == DUPLICATE_KEY)
    return found


# --- the broken retry, for proving the judge can fail ------------------------------------


@contextlib.contextmanager
def new_txn_number_per_attempt() -> Iterator[list[int]]:
    """Break retryable writes on purpose: every retry takes a fresh txnNumber, so it is a
    new retryable write rather than the same one again, and a write whose reply was
    lost is applied a second time. Patches ``Executor._attempt`` (the one place a
    txnNumber enters a command) for the duration; yields the renumbered attempts."""
    original = Executor._attempt
    renumbered: list[int] = []

    @functools.wraps(original)
    def attempt(  # noqa: PLR0917 - Executor._attempt's own signature
        self: Executor,
        op: Any,
        sd: Any,
        connection: Any,
        operation_id: int,
        txn_number: Optional[Any],
        deadline: Optional[float],
        transaction: Any = None,
    ) -> dict[str, Any]:
        if txn_number is not None and op.attempts > 1:
            txn_number = op.session._next_txn_number()
            renumbered.append(int(txn_number))
        return original(self, op, sd, connection, operation_id, txn_number, deadline, transaction)

    Executor._attempt = attempt  # type: ignore[method-assign]
    try:
        yield renumbered
    finally:
        Executor._attempt = original  # type: ignore[method-assign]


# --- the run -------------------------------------------------------------------------------


class _Progress:
    """Acknowledgements and finished writers, under a condition the chaos thread waits on."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.acknowledged = 0
        self.finished_writers = 0


def plan_writes(
    seed: int, writes: int, threads: int, counters: int, collections: int
) -> list[list[Write]]:
    """The seeded workload: one list of writes per thread, tokens unique across the run."""
    plans: list[list[Write]] = []
    for thread in range(threads):
        rng = random.Random(f"{seed}:{thread}")
        plan: list[Write] = []
        for i in range(thread, writes, threads):
            kind = rng.choices(WRITE_KINDS, WRITE_WEIGHTS)[0]
            tokens: tuple[str, ...]
            if kind == "inc":
                target, tokens = f"c{rng.randrange(counters):02d}", (f"w{i:06d}",)
            else:
                size = 1 if kind == "insert" else BATCH
                target = f"docs{rng.randrange(collections):02d}"
                tokens = tuple(f"w{i:06d}.{j}" for j in range(size))
            plan.append(Write(kind, target, tokens))
        plans.append(plan)
    return plans


def _perform(db: Any, write: Write) -> None:
    if write.kind == "inc":
        result = db[COUNTERS].update_one(
            {"_id": write.target}, {"$inc": {"n": 1}, "$push": {"tokens": write.tokens[0]}}
        )
        if result.matched_count != 1:
            raise AssertionError(f"counter {write.target} not found")
    elif write.kind == "insert":
        db[write.target].insert_one({"token": write.tokens[0]})
    else:
        db[write.target].insert_many([{"token": t} for t in write.tokens], ordered=True)


def _read_final_state(rs: ReplicaSet) -> tuple[dict[str, tuple[int, list[str]]], Counter[str]]:
    """The counters and the inserted tokens, from the simulator's own store."""
    with rs.cond:
        data = rs.store.latest
        counters = {
            str(doc["_id"]): (int(doc["n"]), [str(t) for t in doc["tokens"]])
            for doc in data.documents(DB, COUNTERS)
        }
        inserted: Counter[str] = Counter()
        for name in data.collection_names(DB):
            if name != COUNTERS:
                inserted.update(str(doc.get("token")) for doc in data.documents(DB, name))
    return counters, inserted


def run_chaos(
    *,
    writes: int,
    threads: int,
    seed: int = 1,
    writes_per_fault: int = 12,
    interval: Optional[float] = None,
    counters: int = 8,
    collections: int = 16,
    driver: Driver = MONGOCORE,
    fault_kinds: Sequence[str] = FAULT_KINDS,
    hang_after: Optional[float] = None,
) -> ChaosReport:
    """Run ``writes`` seeded writes from ``threads`` threads against a 3-member replica
    set while seeded faults of ``fault_kinds`` happen, one after every
    ``writes_per_fault`` acknowledgements (or every ``interval`` seconds, if sooner);
    heal; judge. ``hang_after``: see the module's docstring (None: a writer that does
    not finish fails the run)."""
    plans = plan_writes(seed, writes, threads, counters, collections)
    progress = _Progress()
    stop = threading.Event()
    #: Each writer's write in progress, and when its call began.
    running: dict[int, tuple[Write, float]] = {}
    errors: Counter[str] = Counter()
    crashes: list[str] = []
    lock = threading.Lock()
    recorder = Recorder()
    with ReplicaSet(3, election_delay=0.05) as rs:
        client = driver.connect(rs.uri, recorder)
        faults = Faults(rs, seed, fault_kinds)
        try:
            db = client[DB]
            db[COUNTERS].insert_many(
                [{"_id": f"c{k:02d}", "n": 0, "tokens": []} for k in range(counters)]
            )
            recorder.clear()

            def writer(number: int, plan: list[Write]) -> None:
                try:
                    for write in plan:
                        if stop.is_set():
                            write.outcome = "not run"
                            continue
                        outcome, error, claimed = "acknowledged", "", False
                        with progress.cond:
                            running[number] = (write, time.monotonic())
                        begun = time.perf_counter()
                        try:
                            _perform(db, write)
                        except driver.error as exc:
                            outcome = "duplicate key" if is_duplicate_key(exc) else "unknown"
                            error = f"{type(exc).__name__}: {exc}"
                            claimed = getattr(exc, "write_may_have_been_applied", None) is False
                        took = time.perf_counter() - begun
                        with progress.cond:
                            del running[number]
                            if write.outcome == "hung":
                                continue  # given up on; what it returned comes too late
                            write.outcome, write.error, write.seconds = outcome, error, took
                            write.claimed_not_applied = claimed
                            if outcome == "acknowledged":
                                progress.acknowledged += 1
                                progress.cond.notify_all()
                        if error:
                            with lock:
                                errors[error.split(":", 1)[0]] += 1
                except BaseException as exc:
                    with lock:
                        crashes.append(f"writer: {type(exc).__name__}: {exc}")
                finally:
                    with progress.cond:
                        progress.finished_writers += 1
                        progress.cond.notify_all()

            def due(since: int) -> bool:
                return (
                    progress.finished_writers == threads
                    or stop.is_set()
                    or progress.acknowledged - since >= writes_per_fault
                )

            def chaos() -> None:
                try:
                    last = 0
                    while True:
                        with progress.cond:
                            progress.cond.wait_for(
                                functools.partial(due, last), timeout=interval or DEADLINE
                            )
                            if progress.finished_writers == threads or stop.is_set():
                                return
                            last = progress.acknowledged
                        faults.next()
                except BaseException as exc:
                    with lock:
                        crashes.append(f"chaos: {type(exc).__name__}: {exc}")

            workers = [
                threading.Thread(
                    target=writer,
                    args=(n, plan),
                    name=f"chaos-writer-{n}",
                    # A hung driver call cannot be joined; the run ends without it.
                    daemon=hang_after is not None,
                )
                for n, plan in enumerate(plans)
            ]
            monkey = threading.Thread(target=chaos, name="chaos-faults")
            started = time.monotonic()
            for thread in [*workers, monkey]:
                thread.start()
            if hang_after is not None:
                _give_up_on_hung_writes(progress, running, threads, hang_after, stop)
                monkey.join(DEADLINE * 5)  # the hung writers' threads are left behind
            else:
                for thread in [*workers, monkey]:
                    thread.join(DEADLINE * 5)
            seconds = time.monotonic() - started
            stuck = [t.name for t in [*workers, monkey] if t.is_alive()]
            if stuck and hang_after is None:
                raise AssertionError(f"chaos threads did not finish: {stuck}")
            faults.disarm()
            for member in rs.members:
                member.clear_fail_points()
            rs.wait_for_primary(timeout=DEADLINE)
            final_counters, inserted = _read_final_state(rs)
        finally:
            client.close()
    writes_done = [w for plan in plans for w in plan]
    return ChaosReport(
        driver=driver.name,
        seed=seed,
        writes=writes_done,
        verdict=judge(writes_done, final_counters, inserted),
        faults_armed=faults.armed,
        faults_fired=faults.fired,
        failed_commands=(
            len(recorder.failed_of("insert")) + len(recorder.failed_of("update"))
            if driver.listens
            else None
        ),
        duplicate_key_replies=_duplicate_key_replies(recorder) if driver.listens else None,
        errors=errors,
        crashes=crashes,
        seconds=seconds,
        fault_kinds=faults.kinds,
    )


def _give_up_on_hung_writes(
    progress: _Progress,
    running: dict[int, tuple[Write, float]],
    threads: int,
    hang_after: float,
    stop: threading.Event,
) -> None:
    """Wait until every writer is done, or every one still running has been in its
    current call for ``hang_after`` seconds; mark those calls hung and stop the run
    (their threads' later writes are never run)."""

    def settled() -> bool:
        now = time.monotonic()
        busy = threads - progress.finished_writers
        return busy == 0 or (
            len(running) == busy and all(now - t >= hang_after for _, t in running.values())
        )

    with progress.cond:
        while not settled():
            progress.cond.wait(1.0)
        for write, _ in running.values():
            write.outcome = "hung"
        stop.set()
        progress.cond.notify_all()
