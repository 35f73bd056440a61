"""Summarize a mutmut run over the pure core, by area, against the accepted equivalent mutants.

Run from the repository root after ``mutmut run`` (or ``tox -e mutation``)::

    python tests/mutation/report.py              # the table of docs/spec-compliance.md
    python tests/mutation/report.py --survivors  # the diff of every mutant not killed

Each entry of ``equivalent_mutants.toml`` names a mutant, the line the mutation
writes, and why no observable behaviour changes. An entry whose mutant was
killed, or whose mutant now makes a different mutation (the code moved), is
reported as stale: review it again. The script exits 1 when an area is below the
target, so that a regression is visible.

Uses mutmut's own readers (pinned to mutmut 3.8 in the ``mutation`` extra).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files

EQUIVALENTS = Path(__file__).with_name("equivalent_mutants.toml")
TARGET = 0.95
#: Mutant name prefix -> area, in the order of the table.
AREAS = {
    "mongocore.core.description.": "core/description/",
    "mongocore.core.selection.": "core/selection/",
    "mongocore.core.wire.": "core/wire/",
    "mongocore.core.retry_policy.": "core/retry_policy.py",
    "mongocore.core.write_outcome.": "core/write_outcome.py",
    "mongocore.core.stable_api.": "core/stable_api.py",
    "mongocore.core.transaction_rules.": "core/transaction_rules.py",
    "mongocore.core.transaction_state.": "core/transaction_state.py",
    "mongocore.core.change_streams.": "core/change_streams.py",
}
#: Statuses that count as detected by the tests (a timeout is a mutant that never ends).
DETECTED = {"killed", "timeout", "segfault", "caught by type check"}


@dataclass
class Tally:
    total: int = 0
    killed: int = 0
    equivalent: int = 0
    not_killed: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        relevant = self.total - self.equivalent
        return self.killed / relevant if relevant else 1.0


def mutation_of(name: str, path: Path) -> str:
    """The line(s) a mutant writes, as one string: what an equivalents entry records."""
    diff = get_diff_for_mutant(name, path=path)
    added = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    return " / ".join(added) if added else "(line removed)"


def load_equivalents() -> dict[str, dict[str, Any]]:
    data = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    entries: dict[str, dict[str, Any]] = {}
    for entry in data.get("equivalent", []):
        entries[entry["mutant"]] = entry
    return entries


def area_of(name: str) -> str:
    for prefix, area in AREAS.items():
        if name.startswith(prefix):
            return area
    return "other"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    args = parser.parse_args(argv)

    equivalents = load_equivalents()
    tallies = {area: Tally() for area in AREAS.values()}
    stale: list[str] = []
    unchecked = 0
    paths: dict[str, Path] = {}
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, exit_code in data.exit_code_by_key.items():
            status = status_by_exit_code[exit_code]
            tally = tallies.setdefault(area_of(name), Tally())
            if status == "not checked":
                unchecked += 1
            tally.total += 1
            paths[name] = path
            if status in DETECTED:
                tally.killed += 1
                if name in equivalents:
                    stale.append(f"{name}: listed as equivalent, but the tests kill it")
            elif name in equivalents:
                recorded = equivalents[name]["mutation"]
                actual = mutation_of(name, path)
                if recorded != actual:
                    stale.append(f"{name}: recorded {recorded!r}, now {actual!r}")
                    tally.not_killed.append(name)
                else:
                    tally.equivalent += 1
            else:
                tally.not_killed.append(name)
    missing = sorted(set(equivalents) - set(paths))
    stale += [f"{name}: listed as equivalent, but no such mutant" for name in missing]

    print("| area | mutants | killed | survived, equivalent | survived, not killed | score |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    overall = Tally()
    for area, tally in tallies.items():
        overall.total += tally.total
        overall.killed += tally.killed
        overall.equivalent += tally.equivalent
        overall.not_killed += tally.not_killed
        print(
            f"| {area} | {tally.total} | {tally.killed} | {tally.equivalent} | "
            f"{len(tally.not_killed)} | {tally.score:.1%} |"
        )
    print(
        f"| **overall** | {overall.total} | {overall.killed} | {overall.equivalent} | "
        f"{len(overall.not_killed)} | {overall.score:.1%} |"
    )
    print("\nscore: killed / (mutants - equivalent); a timeout counts as killed")
    if unchecked:
        print(f"\n{unchecked} mutants were not checked: the run is incomplete")
    for line in stale:
        print(f"stale equivalent entry: {line}")
    if args.survivors:
        for name in overall.not_killed:
            print(f"\n# {name}\n{get_diff_for_mutant(name, path=paths[name])}")
    failed = unchecked or stale or any(t.score < TARGET for t in tallies.values() if t.total)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
