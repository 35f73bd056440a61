"""MongoEngine's own test suite (../shared/thirdparty/mongoengine, unmodified) against
the simulated deployment shaped as its CI expects: a replica set of one member named
``mongoengine``, reached and advertised as localhost:27017 (tests/thirdparty/harness.py
gives each run a network namespace of its own, so that port is the run's).

It runs three ways:

- pymongo 4.20 as MongoEngine's driver: the simulator's fidelity. Every failure must
  be selected by a rule of specs/thirdparty/mongoengine.toml (a simulator gap, with
  its cause), and every rule must select a failure;
- mongocore, through ``mongocore.install_as_pymongo()`` (loaded as a pytest plugin of
  the suite's run, before anything imports pymongo): every test that passes with
  pymongo must pass. Until ``[driver.mongocore] required = true`` in the rules file,
  this is a measurement, reported as a MeasurementWarning and in the terminal
  summary, never as a pass;
- the import-only port (tests/thirdparty/port.py): a copy of MongoEngine (package and
  tests), in a temporary folder, with every pymongo and gridfs import line rewritten to
  mongocore; pymongo is out of the port's reach. test_import_only_port imports every
  module of its package; test_mongoengine_suite runs its suite too. Both are
  measurements until ``[driver.port] required`` (the imports) and ``suite_required``
  (every test that passes with pymongo passes) are true.

docs/odm.md describes the three and records their counts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

import pytest

import mongocore
from tests.spec import specdata
from tests.thirdparty import gap_rules
from tests.thirdparty.gap_rules import Outcome
from tests.thirdparty.harness import INJECT
from tests.thirdparty.port import make_port
from tests.thirdparty.suites import Run, check_ran, lost, run_suites, thirdparty_dir

RULES = gap_rules.SPECS / "mongoengine.toml"


class MeasurementWarning(UserWarning):
    """A way of running the suite that is measured and reported, not yet asserted."""


def _mongoengine() -> Path:
    suite = thirdparty_dir() / "mongoengine"
    if not (suite / "tests").is_dir():
        message = (
            f"MongoEngine's suite is not at {suite} (set MONGOCORE_THIRDPARTY to the folder "
            "that holds mongoengine/)"
        )
        if specdata.required():
            pytest.fail(message)
        pytest.skip(message)
    if sys.version_info < (3, 10):
        pytest.skip("MongoEngine needs Python 3.10 or newer (its setup.py python_requires)")
    missing = [m for m in ("blinker", "PIL") if not _importable(m)]
    if missing:
        pytest.fail(f"MongoEngine's test dependencies are missing: {missing} (the test extra)")
    return suite


def _importable(module: str) -> bool:
    code = f"import {module}"
    child = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True)
    return child.returncode == 0


def _counts(run: Run, failed_by_rule: Optional[int] = None) -> str:
    counts = run.counts()
    failed = sum(counts[k] for k in gap_rules.FAILED)
    parts = [f"{counts['passed']} passed"]
    if failed_by_rule is None:
        parts.append(f"{failed} failed")
    else:
        parts.append(f"{failed_by_rule} failed by rule, {failed - failed_by_rule} by none")
    parts.append(f"{counts['skipped'] + counts['xfailed']} skipped")
    return ", ".join(parts) + f" ({len(run.outcomes)} tests, {run.seconds:.0f} s)"


_ADDRESS = re.compile(
    r"0x[0-9a-fA-F]+|ObjectId\('[0-9a-f]+'\)|[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|\b\d{4,}\b"
)


def _gist(outcome: Optional[Outcome]) -> tuple[str, str]:
    """A failure's cause and the deepest line of mongocore its traceback went through.
    The cause is the first exception line of the report (pytest shows a chain from
    its root: the error mongocore raised, not the library's wrapping of it), with
    addresses and ids blanked."""
    if outcome is None:
        return "not run (its module was not collected)", ""
    raised = [line[4:].strip() for line in outcome.text.splitlines() if line.startswith("E   ")]
    message = raised[0] if raised else (outcome.message.splitlines() or [""])[0]
    where = re.findall(r"(?m)^(\S*mongocore/\S+\.py:\d+)", outcome.text)
    return _ADDRESS.sub("…", message)[:200], where[-1] if where else ""


def mongocore_only_report(losses: list[tuple[str, Optional[Outcome]]]) -> list[str]:
    """The tests passing with pymongo and not with mongocore, grouped by cause."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for test, outcome in losses:
        groups[_gist(outcome)].append(test)
    lines = []
    for (cause, where), tests in sorted(groups.items(), key=lambda g: -len(g[1])):
        lines.append(f"  {len(tests):4}  {cause}" + (f"  [{where}]" if where else ""))
        lines.append(f"        e.g. {tests[0]}")
    return lines


def _compare(
    label: str, reference: Run, run: Run, required: bool, switch: str
) -> tuple[list[str], list[str]]:
    """The report lines and the problems of a mongocore run against pymongo's."""
    losses = lost(reference, run)
    state = "asserted" if required else "MEASURED, NOT ASSERTED"
    report = [
        f"MongoEngine with mongocore ({label}), {state}: {_counts(run)}; "
        f"{len(losses)} tests pass with pymongo and not with mongocore",
        *mongocore_only_report(losses),
    ]
    problems = []
    if required and losses:
        problems.append(f"{len(losses)} tests pass with pymongo and fail with mongocore ({label}):")
        problems += mongocore_only_report(losses)
    if not required and not losses:
        problems.append(
            f"every test that passes with pymongo passes with mongocore ({label}): {switch} "
            "can be required = true"
        )
    return report, problems


def test_mongoengine_suite(tmp_path: Path, record_property: Any) -> None:
    """MongoEngine's suite with pymongo (asserted by rule) and with mongocore, both ways."""
    suite = _mongoengine()
    document, rules = gap_rules.load_rules(RULES)
    settings = document["driver"]
    installable = hasattr(mongocore, "install_as_pymongo")
    suites = {"pymongo": suite}
    if installable:
        suites["mongocore"] = suite
    port = make_port(suite, tmp_path / "port" / "mongoengine")
    assert not port.leftovers, f"import lines the port missed: {port.leftovers}"
    suites["port"] = port.root
    runs = run_suites(suites, tmp_path)
    problems = [p for run in runs.values() for p in check_ran(run)]
    assert not problems, "\n".join(problems)

    pymongo_run = runs["pymongo"]
    classified = gap_rules.classify(pymongo_run.outcomes, rules)
    by_rule = sum(len(tests) for tests in classified.by_rule.values())
    report = [f"MongoEngine with pymongo on the simulator: {_counts(pymongo_run, by_rule)}"]
    for rule, tests in classified.by_rule.items():
        report.append(f"  {len(tests):4}  {rule.name}")
    problems = classified.problems()

    measured = []
    if installable:
        required = settings["mongocore"]["required"]
        lines, found = _compare(
            "install_as_pymongo", pymongo_run, runs["mongocore"], required, "[driver.mongocore]"
        )
        report += lines
        problems += found
        if not required:
            measured.append((settings["mongocore"]["reason"], lines[0]))
    else:
        line = (
            "MongoEngine with mongocore (install_as_pymongo): not run, mongocore has no "
            "install_as_pymongo() yet"
        )
        report.append(line)
        measured.append((settings["mongocore"]["reason"], line))
    required = settings["port"]["suite_required"]
    lines, found = _compare(
        "import-only port", pymongo_run, runs["port"], required, "[driver.port] suite_required"
    )
    report += lines
    problems += found
    if not required:
        measured.append((settings["port"]["reason"], lines[0]))
    record_property("thirdparty_report", "\n".join(report))

    assert not problems, "\n".join(["specs/thirdparty/mongoengine.toml:", *problems])
    for reason, line in measured:
        warnings.warn(MeasurementWarning(f"{' '.join(reason.split())}. {line}"), stacklevel=1)


# -- the import-only port ---------------------------------------------------------------

#: Run in a child, in the port's folder: every module of the ported package imported,
#: with pymongo's driver out of reach of the port (mongocore_no_pymongo), one JSON line
#: per module. The names come from the files, not from the package: its __init__ may be
#: what fails to import. Each import starts with none of the package's modules loaded,
#: as in a program of its own: a module a failed import of the package left behind in
#: sys.modules would otherwise "import".
_IMPORT_EVERY_MODULE = r"""
import importlib, json, pathlib, sys
import mongocore_no_pymongo

names = sorted(
    ".".join(p.with_suffix("").parts[:-1] if p.name == "__init__.py" else p.with_suffix("").parts)
    for p in pathlib.Path("mongoengine").rglob("*.py")
)
for name in names:
    for loaded in [m for m in sys.modules if m == "mongoengine" or m.startswith("mongoengine.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
        print(json.dumps({"module": name, "error": None}))
    except BaseException as exc:
        print(json.dumps({"module": name, "error": f"{type(exc).__name__}: {exc}"}))
"""


def test_import_only_port(tmp_path: Path) -> None:
    """MongoEngine's package, its import lines rewritten, imports on mongocore alone."""
    suite = _mongoengine()
    document, _ = gap_rules.load_rules(RULES)
    port_rules = document["driver"]["port"]
    port = make_port(suite, tmp_path / "mongoengine")
    assert not port.leftovers, f"import lines the port missed: {port.leftovers}"
    package = [p for p in port.files if p.relative_to(port.root).parts[0] == "mongoengine"]
    rewritten = [p for p in port.rewritten if p in package]
    assert rewritten, "the port rewrote no module: MongoEngine imports pymongo in several"

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env.update(PYTHONPATH=os.pathsep.join([str(port.root), str(INJECT)]))
    env.update(MONGOCORE_PORT_ROOT=str(port.root), PYTHONDONTWRITEBYTECODE="1")
    child = subprocess.run(
        [sys.executable, "-c", _IMPORT_EVERY_MODULE],
        check=False,
        cwd=port.root,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    results = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
    assert results, f"the import check printed nothing:\n{child.stderr[-3000:]}"
    failed = {r["module"]: r["error"] for r in results if r["error"]}
    summary = (
        f"import-only port of MongoEngine: {len(results) - len(failed)} of {len(results)} "
        f"modules import ({len(rewritten)} of {len(package)} files rewritten)"
    )
    first_errors = sorted(set(failed.values()))[:8]
    if port_rules["required"]:
        assert not failed, summary + "\n" + "\n".join(f"  {m}: {e}" for m, e in failed.items())
    elif failed:
        reason = " ".join(port_rules["reason"].split())
        pytest.skip(f"{reason}. {summary}; errors: {first_errors}")
    else:
        pytest.fail(
            f"{summary}: every module imports, so specs/thirdparty/mongoengine.toml's "
            "[driver.port] can be required = true"
        )
