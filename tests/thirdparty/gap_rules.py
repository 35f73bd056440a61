"""The rules of specs/thirdparty/<suite>.toml: why a third-party suite's tests fail on
the simulated deployment with pymongo as their driver.

A rule never lists test ids. It selects a failed test by what the failure is: the
server's error (its code, the command it answered, the operators and value types in
that command, its message), what the test sent (a command, a field, an operator), or
the failure's own text. Conditions (``when``, all must hold; a list value means "any
of these"):

- ``error_code = [codes]``, ``command = [names]``, ``operator = [ops]``,
  ``value_type = [types]``, ``errmsg = "regex"``: the server answered one command of
  the test with an error (a command error, a write error or a write concern error)
  that satisfies every one of these given: its code; the command's name; an operator
  anywhere in that command (a query or update operator, a pipeline stage, or a path
  part such as the positional ``$`` or a DBRef's ``$id``); a BSON type of a value in
  it (``Decimal128``, ``DBRef``, ``float``, ...); its message.
- ``server_error = true|false``: the server answered some command of the test with an
  error (false: a wrong answer, or one the test did not like, with no error at all).
- ``sent = ["command" or "command.field"]``: the test sent such a command (with that
  top-level field; for createIndexes also ``indexes.<option>``, an option of one of its
  indexes, and ``indexes.key.<field>``, a field one of them indexes). A list of lists
  requires every entry of one inner list in one command.
- ``sent_operator = [ops]``: some command the test sent has one of these operators.
  A list of lists requires every operator of one inner list in one command.
- ``message = "regex"``: the failure's exception line (searched).
- ``text = "regex"``: the failure's whole report, traceback and test source lines.

The facts come from the suite's run (tests/thirdparty/inject/mongocore_suite_report.py
records them). A failure that no rule selects, and a rule that selects no failure, are
errors of the runner, so the list stays true as the simulator's gaps close.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

SPECS = Path(__file__).resolve().parents[2] / "specs" / "thirdparty"

ERROR_CONDITIONS = ("error_code", "command", "operator", "value_type", "errmsg")
OTHER_CONDITIONS = ("server_error", "sent", "sent_operator", "message", "text")
CONDITIONS = ERROR_CONDITIONS + OTHER_CONDITIONS
RULE_FIELDS = {"name", "cause", "kind", "when", "server"}
KINDS = {"simulator", "copy"}


class RuleError(ValueError):
    """A rules file that cannot be read as rules: the message names the entry and why."""


@dataclass(frozen=True)
class Outcome:
    """One test of the suite's run, as mongocore_suite_report.py wrote it."""

    test: str
    outcome: str
    message: str = ""
    text: str = ""
    sent: tuple[Mapping[str, Any], ...] = ()
    failed: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_json(cls, line: Mapping[str, Any]) -> Outcome:
        return cls(
            test=str(line["test"]),
            outcome=str(line["outcome"]),
            message=str(line.get("message", "")),
            text=str(line.get("text", "")),
            sent=tuple(line.get("sent") or ()),
            failed=tuple(line.get("failed") or ()),
        )


def read_outcomes(path: Path) -> list[Outcome]:
    return [Outcome.from_json(json.loads(line)) for line in path.read_text().splitlines() if line]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@dataclass(frozen=True, eq=False)  # a rule is itself: hashed by identity
class Rule:
    """One ``[[gap]]`` entry: a cause, and the conditions that select its failures."""

    index: int
    label: str
    cause: str
    kind: str
    when: Mapping[str, Any]
    server: str = ""
    _patterns: dict[str, re.Pattern[str]] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        return f"[[gap]] #{self.index + 1} {self.label}"

    def _pattern(self, key: str) -> re.Pattern[str]:
        return self._patterns[key]

    def _error_matches(self, error: Mapping[str, Any]) -> bool:
        when = self.when
        if "error_code" in when and error.get("code") not in _as_list(when["error_code"]):
            return False
        if "command" in when and error.get("command") not in _as_list(when["command"]):
            return False
        if "operator" in when and not set(error.get("operators", ())) & set(
            _as_list(when["operator"])
        ):
            return False
        if "value_type" in when and not set(error.get("types", ())) & set(
            _as_list(when["value_type"])
        ):
            return False
        return not (
            "errmsg" in when and not self._pattern("errmsg").search(error.get("errmsg", ""))
        )

    def _sent_matches(self, sent: Sequence[Mapping[str, Any]]) -> bool:
        groups = [_as_list(g) for g in _as_list(self.when["sent"])]
        for command in sent:
            names = {command["command"]} | {
                f"{command['command']}.{f}" for f in command.get("fields", ())
            }
            if any(set(group) <= names for group in groups):
                return True
        return False

    def _sent_operator_matches(self, sent: Sequence[Mapping[str, Any]]) -> bool:
        groups = [_as_list(g) for g in _as_list(self.when["sent_operator"])]
        return any(
            set(group) <= set(command.get("operators", ())) for command in sent for group in groups
        )

    def matches(self, outcome: Outcome) -> bool:
        when = self.when
        if any(k in when for k in ERROR_CONDITIONS) and not any(
            self._error_matches(e) for e in outcome.failed
        ):
            return False
        if "server_error" in when and bool(outcome.failed) != bool(when["server_error"]):
            return False
        if "sent" in when and not self._sent_matches(outcome.sent):
            return False
        if "sent_operator" in when and not self._sent_operator_matches(outcome.sent):
            return False
        if "message" in when and not self._pattern("message").search(outcome.message):
            return False
        return not ("text" in when and not self._pattern("text").search(outcome.text))


def parse_rules(document: Mapping[str, Any], source: str) -> list[Rule]:
    """The ``[[gap]]`` entries of a rules document, checked: an unknown field or
    condition, a missing cause, a bad regex or an empty ``when`` is a RuleError."""
    rules = []
    for index, entry in enumerate(document.get("gap", [])):
        where = f"{source} [[gap]] #{index + 1}"
        unknown = set(entry) - RULE_FIELDS
        if unknown:
            raise RuleError(f"{where}: unknown field(s) {sorted(unknown)}")
        for required in ("name", "cause"):
            if not str(entry.get(required, "")).strip():
                raise RuleError(f"{where}: no {required}")
        kind = entry.get("kind", "simulator")
        if kind not in KINDS:
            raise RuleError(f"{where}: kind {kind!r} is none of {sorted(KINDS)}")
        when = entry.get("when")
        if not isinstance(when, dict) or not when:
            raise RuleError(f"{where}: a rule needs a `when` table of conditions")
        bad = set(when) - set(CONDITIONS)
        if bad:
            raise RuleError(f"{where}: unknown condition(s) {sorted(bad)}; known: {CONDITIONS}")
        patterns = {}
        for key in ("errmsg", "message", "text"):
            if key in when:
                try:
                    patterns[key] = re.compile(str(when[key]))
                except re.error as exc:
                    raise RuleError(f"{where}: {key} is not a regular expression: {exc}") from exc
        rules.append(
            Rule(
                index,
                str(entry["name"]).strip(),
                " ".join(str(entry["cause"]).split()),
                kind,
                when,
                str(entry.get("server", "")),
                patterns,
            )
        )
    return rules


def load_rules(path: Path) -> tuple[dict[str, Any], list[Rule]]:
    document = tomllib.loads(path.read_text())
    return document, parse_rules(document, path.name)


#: The outcomes that need a rule: a failure, an unexpected pass, a collection error.
FAILED = ("failed", "xpassed", "error")


@dataclass
class Classification:
    """The failures of one run, each given to the first rule that selects it."""

    by_rule: dict[Rule, list[Outcome]]
    unmatched: list[Outcome]

    @property
    def unused(self) -> list[Rule]:
        return [rule for rule, tests in self.by_rule.items() if not tests]

    def problems(self) -> list[str]:
        lines = [
            f"failure selected by no rule: {o.test}: {(o.message.splitlines() or [''])[0]}"
            for o in self.unmatched
        ]
        lines += [f"rule selects no failure any more: {r.name}" for r in self.unused]
        return lines


def classify(outcomes: Iterable[Outcome], rules: Sequence[Rule]) -> Classification:
    result = Classification({rule: [] for rule in rules}, [])
    for outcome in outcomes:
        if outcome.outcome not in FAILED:
            continue
        rule = next((r for r in rules if r.matches(outcome)), None)
        if rule is None:
            result.unmatched.append(outcome)
        else:
            result.by_rule[rule].append(outcome)
    return result
