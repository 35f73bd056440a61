"""Running a third-party suite through tests/thirdparty/harness.py, and reading back
how it went: where the suites are, the runs (in parallel when each can have a network
namespace of its own), and the comparison of two drivers' outcomes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from tests.thirdparty.gap_rules import FAILED, Outcome, read_outcomes

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).resolve().parent / "harness.py"
#: Where the third-party code is read from: ../shared/thirdparty beside the checkout.
ENV = "MONGOCORE_THIRDPARTY"
NO_PORT = 3
#: One run of MongoEngine's suite takes about 70 s on a quiet machine; a run still going
#: after this is stuck, and is reported as such.
RUN_TIMEOUT = 1500.0


def thirdparty_dir() -> Path:
    """MONGOCORE_THIRDPARTY; else ../shared/thirdparty beside the checkout (as in CI);
    else the thirdparty folder beside the spec suites MONGOCORE_SPEC_TESTS names
    (shared/specifications/source), for a checkout that lives elsewhere."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    beside = ROOT.parent / "shared" / "thirdparty"
    specs = os.environ.get("MONGOCORE_SPEC_TESTS")
    if not beside.is_dir() and specs:
        return Path(specs).resolve().parents[1] / "thirdparty"
    return beside


def namespace_refusal() -> Optional[str]:
    """None if a process of ours can have a network namespace of its own, else why not."""
    probe = subprocess.run(
        [sys.executable, str(HARNESS), "--probe"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return None if probe.returncode == 0 else (probe.stdout + probe.stderr).strip()


@dataclass
class Run:
    """One run of a suite with one driver."""

    driver: str
    outcomes: list[Outcome]
    exit_status: int
    seconds: float
    log: str

    def counts(self) -> Counter[str]:
        return Counter(o.outcome for o in self.outcomes)

    def by_test(self) -> dict[str, Outcome]:
        return {o.test: o for o in self.outcomes}

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.outcome in FAILED]

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.splitlines()[-lines:])


def run_suites(
    suites: Mapping[str, Path], workdir: Path, *, pytest_args: Sequence[str] = ("tests",)
) -> dict[str, Run]:
    """Run each suite (by driver: pymongo, mongocore, port) with its driver: all at once
    when namespaces can be had (each run has its own port 27017), else one after the
    other on the machine's port."""
    parallel = namespace_refusal() is None
    isolation = "namespace" if parallel else "port"
    started: dict[str, tuple[subprocess.Popen[bytes], float, Path, Path]] = {}
    runs: dict[str, Run] = {}

    def launch(driver: str) -> None:
        report, log = workdir / f"{driver}.jsonl", workdir / f"{driver}.log"
        suite = suites[driver]
        command = [sys.executable, str(HARNESS), "--suite", str(suite), "--report", str(report)]
        command += ["--driver", driver, "--isolation", isolation]
        command += ["--summary", str(workdir / f"{driver}.json"), "--", *pytest_args]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        started[driver] = (process, time.monotonic(), report, log)

    def finish(driver: str) -> None:
        process, start, report, log = started.pop(driver)
        try:
            status = process.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            status = -9
        # The harness's own figure: this wait may begin after the run has ended.
        summary = workdir / f"{driver}.json"
        seconds = (
            json.loads(summary.read_text())["seconds"]
            if summary.exists()
            else time.monotonic() - start
        )
        outcomes = read_outcomes(report) if report.exists() else []
        runs[driver] = Run(driver, outcomes, status, seconds, log.read_text(errors="replace"))

    for driver in suites:
        launch(driver)
        if not parallel:
            finish(driver)
    for driver in list(started):
        finish(driver)
    return runs


def check_ran(run: Run) -> list[str]:
    """Why a run says nothing about its tests (no port, killed, nothing collected)."""
    if run.exit_status == NO_PORT:
        return [f"{run.driver}: the harness had no port 27017 of its own:\n{run.tail(5)}"]
    if run.exit_status == -9:
        return [f"{run.driver}: still running after {RUN_TIMEOUT:.0f} s, killed:\n{run.tail()}"]
    if run.exit_status not in (0, 1) or not run.outcomes:
        return [
            f"{run.driver}: the suite's pytest ended with status {run.exit_status} after "
            f"{len(run.outcomes)} tests:\n{run.tail()}"
        ]
    return []


def lost(reference: Run, other: Run) -> list[tuple[str, Optional[Outcome]]]:
    """The tests that pass in ``reference`` and do not in ``other``, with their outcome
    there: for a test that did not run, its module's collection error, else None."""
    theirs = other.by_test()
    uncollected = [o for o in other.outcomes if o.outcome == "error"]
    result = []
    for outcome in reference.outcomes:
        if outcome.outcome != "passed":
            continue
        mine = theirs.get(outcome.test)
        if mine is None:
            module = outcome.test.split("::")[0]
            mine = next((o for o in uncollected if o.test == module), None)
        if mine is None or mine.outcome != "passed":
            result.append((outcome.test, mine))
    return result
