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
- the import-only port (test_import_only_port): a copy of MongoEngine's package, in a
  temporary folder, with every pymongo and gridfs import line rewritten to mongocore,
  must import every module with pymongo itself out of reach.

docs/odm.md describes the three and records their counts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
    missing = [m for m in ("blinker", "PIL", "mongomock") if not _importable(m)]
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


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+|ObjectId\('[0-9a-f]+'\)|\b\d{4,}\b")


def _gist(outcome: Optional[Outcome]) -> tuple[str, str]:
    """A failure's cause (its exception line, with addresses and ids blanked) and the
    deepest line of mongocore its traceback went through."""
    if outcome is None:
        return "not run (its module was not collected)", ""
    message = (outcome.message.splitlines() or [""])[0]
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


def test_mongoengine_suite(tmp_path: Path, record_property: Any) -> None:
    """MongoEngine's suite with pymongo (asserted by rule) and with mongocore."""
    suite = _mongoengine()
    document, rules = gap_rules.load_rules(RULES)
    on_mongocore = document["driver"]["mongocore"]
    installable = hasattr(mongocore, "install_as_pymongo")
    drivers = ["pymongo", "mongocore"] if installable else ["pymongo"]
    runs = run_suites(suite, drivers, tmp_path)
    problems = [p for run in runs.values() for p in check_ran(run)]
    assert not problems, "\n".join(problems)

    pymongo_run = runs["pymongo"]
    classified = gap_rules.classify(pymongo_run.outcomes, rules)
    by_rule = sum(len(tests) for tests in classified.by_rule.values())
    report = [f"MongoEngine with pymongo on the simulator: {_counts(pymongo_run, by_rule)}"]
    for rule, tests in classified.by_rule.items():
        report.append(f"  {len(tests):4}  {rule.name}")

    losses: list[tuple[str, Optional[Outcome]]] = []
    if installable:
        mongocore_run = runs["mongocore"]
        losses = lost(pymongo_run, mongocore_run)
        label = "asserted" if on_mongocore["required"] else "MEASURED, NOT ASSERTED"
        measured = (
            f"MongoEngine with mongocore (install_as_pymongo), {label}: {_counts(mongocore_run)};"
            f" {len(losses)} tests pass with pymongo and not with mongocore"
        )
        report += [measured, *mongocore_only_report(losses)]
    else:
        measured = (
            "MongoEngine with mongocore (install_as_pymongo): not run, mongocore has no "
            "install_as_pymongo() yet"
        )
        report.append(measured)
    record_property("thirdparty_report", "\n".join(report))

    problems = classified.problems()
    if installable and on_mongocore["required"] and losses:
        problems.append(f"{len(losses)} tests pass with pymongo and fail with mongocore:")
        problems += mongocore_only_report(losses)
    if installable and not on_mongocore["required"] and not losses:
        problems.append(
            "every test that passes with pymongo passes with mongocore: [driver.mongocore] "
            "can be required = true"
        )
    assert not problems, "\n".join(["specs/thirdparty/mongoengine.toml:", *problems])
    if not (installable and on_mongocore["required"]):
        reason = " ".join(on_mongocore["reason"].split())
        warnings.warn(MeasurementWarning(f"{reason}. {measured}"), stacklevel=1)


# -- the import-only port ---------------------------------------------------------------

_FROM = re.compile(r"^(\s*)from (pymongo|gridfs)((?:\.\w+)*) import ", re.MULTILINE)
_IMPORT = re.compile(r"^(\s*)import (pymongo|gridfs)((?:\.\w+)*)\s*$", re.MULTILINE)


def port_source(source: str) -> str:
    """Rewrite a module's pymongo and gridfs import lines to mongocore's, keeping the
    names the module binds (``import pymongo`` binds ``pymongo``) and its line numbers."""

    def target(package: str, submodules: str) -> str:
        return ("mongocore" if package == "pymongo" else "mongocore.gridfs") + submodules

    def from_line(match: re.Match[str]) -> str:
        indent, package, submodules = match.groups()
        return f"{indent}from {target(package, submodules)} import "

    def import_line(match: re.Match[str]) -> str:
        indent, package, submodules = match.groups()
        if not submodules:
            return f"{indent}import {target(package, '')} as {package}"
        # "import pymongo.errors" binds pymongo, with pymongo.errors loaded.
        loaded, bound = target(package, submodules), target(package, "")
        return f"{indent}import {loaded}; import {bound} as {package}"

    return _IMPORT.sub(import_line, _FROM.sub(from_line, source))


#: Run in a child: pymongo's driver out of reach (its bson stays), every module of the
#: ported package imported, one JSON line per module.
_IMPORT_EVERY_MODULE = r"""
import importlib, json, pathlib, sys

class NoPymongo:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pymongo", "gridfs"):
            raise ImportError(f"the port imported {name}: pymongo's driver is out of reach here")
        return None

sys.meta_path.insert(0, NoPymongo())
# From the files, not from the package: its __init__ may be what fails to import.
names = sorted(
    ".".join(p.with_suffix("").parts[:-1] if p.name == "__init__.py" else p.with_suffix("").parts)
    for p in pathlib.Path("mongoengine").rglob("*.py")
)
for name in names:
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
    port = document["driver"]["port"]
    copy = tmp_path / "port" / "mongoengine"
    shutil.copytree(suite / "mongoengine", copy, ignore=shutil.ignore_patterns("__pycache__"))
    sources = sorted(copy.rglob("*.py"))
    rewritten = 0
    for path in sources:
        text = path.read_text()
        ported = port_source(text)
        rewritten += ported != text
        path.write_text(ported)
    leftover = [
        f"{p.relative_to(copy.parent)}:{n}: {line.strip()}"
        for p in sources
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.match(r"\s*(import|from)\s+(pymongo|gridfs)\b", line)
    ]
    assert not leftover, f"import lines the port missed: {leftover}"
    assert rewritten, "the port rewrote no module: MongoEngine imports pymongo in several"

    child = subprocess.run(
        [sys.executable, "-c", _IMPORT_EVERY_MODULE],
        check=False,
        cwd=copy.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env={**_env_without_pythonpath(), "PYTHONPATH": str(copy.parent)},
    )
    results = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
    assert results, f"the import check printed nothing:\n{child.stderr[-3000:]}"
    failed = {r["module"]: r["error"] for r in results if r["error"]}
    summary = (
        f"import-only port of MongoEngine: {len(results) - len(failed)} of {len(results)} "
        f"modules import ({rewritten} of {len(sources)} files rewritten)"
    )
    first_errors = sorted({e for e in failed.values()})[:8]
    if port["required"]:
        assert not failed, summary + "\n" + "\n".join(f"  {m}: {e}" for m, e in failed.items())
    elif failed:
        reason = " ".join(port["reason"].split())
        pytest.skip(f"{reason}. {summary}; errors: {first_errors}")
    else:
        pytest.fail(
            f"{summary}: every module imports, so specs/thirdparty/mongoengine.toml's "
            "[driver.port] can be required = true"
        )


def _env_without_pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
