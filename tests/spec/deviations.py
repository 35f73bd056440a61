"""Read specs/deviations.toml, the reviewed list of deviating and inapplicable spec tests."""

from __future__ import annotations

import fnmatch
import sys
from functools import cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE = Path(__file__).resolve().parents[2] / "specs" / "deviations.toml"

#: (kind, suite, pattern) of every entry a runner looked up and used.
USED: set[tuple[str, str, str]] = set()


@cache
def _entries() -> dict[str, list[dict[str, Any]]]:
    with open(FILE, "rb") as f:
        data = tomllib.load(f)
    for kind in ("deviation", "not_applicable"):
        for entry in data.get(kind, []):
            missing = {"suite", "tests"} - entry.keys()
            need = {"seed", "clause", "upstream", "asserted"} if kind == "deviation" else {"reason"}
            missing |= need - entry.keys()
            if missing:
                raise ValueError(f"{FILE}: a [[{kind}]] entry lacks {sorted(missing)}: {entry}")
    return {k: data.get(k, []) for k in ("deviation", "not_applicable")}


def _find(kind: str, suite: str, test_id: str) -> dict[str, Any] | None:
    for entry in _entries()[kind]:
        if entry["suite"] != suite:
            continue
        for pattern in entry["tests"]:
            if fnmatch.fnmatchcase(test_id, pattern):
                USED.add((kind, suite, pattern))
                return entry
    return None


def deviation(suite: str, test_id: str) -> dict[str, Any] | None:
    """The [[deviation]] entry covering this test, if any."""
    return _find("deviation", suite, test_id)


def not_applicable(suite: str, test_id: str) -> dict[str, Any] | None:
    """The [[not_applicable]] entry covering this test, if any."""
    return _find("not_applicable", suite, test_id)


def all_patterns() -> set[tuple[str, str, str]]:
    return {
        (kind, e["suite"], pattern)
        for kind, entries in _entries().items()
        for e in entries
        for pattern in e["tests"]
    }
