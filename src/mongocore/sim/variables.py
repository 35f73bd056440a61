"""Command-level variables: the ``let`` option of find, aggregate, update, delete and
findAndModify (MongoDB 5.0+, "let" in each command's reference).

A server evaluates each ``let`` value once, as a constant aggregation expression, and
binds it to ``$$name`` in the command's aggregation expressions: a query's ``$expr``,
the stages of a pipeline (an aggregation's or a pipeline update's). The simulator
evaluates the constant and substitutes ``{$literal: value}`` for each ``$$name``
(``$$name.path`` for the value's field) in those expression contexts, and leaves the
query language alone, where ``"$$name"`` is a plain string. What it cannot substitute
faithfully (a nested ``$let``, ``$map``, ``$filter``, ``$reduce`` or ``$lookup`` that
binds the same name, a value that is not a constant) is refused with NotImplemented.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError

__all__ = ["Variables", "parse_let"]

_NAME = re.compile(r"^[a-z\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*$")
_BINDERS = ("$let", "$map", "$filter", "$reduce", "$lookup")
_SYSTEM = frozenset(
    {"ROOT", "CURRENT", "REMOVE", "NOW", "CLUSTER_TIME", "DESCEND", "PRUNE", "KEEP",
     "SEARCH_META", "USER_ROLES", "IS_MR", "JS_SCOPE"}
)  # fmt: skip


class Variables:
    """The evaluated ``let`` variables of one command."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def in_query(self, query: Any) -> Any:
        """A query filter with the variables substituted inside its ``$expr`` clauses."""
        if not isinstance(query, Mapping):
            return query
        out: dict[str, Any] = {}
        for key, value in query.items():
            if key == "$expr":
                out[key] = self.in_expression(value)
            elif key in ("$and", "$or", "$nor") and isinstance(value, list):
                out[key] = [self.in_query(clause) for clause in value]
            else:
                out[key] = value
        return out

    def in_pipeline(self, pipeline: Any) -> Any:
        """A pipeline with the variables substituted in its stages' expressions."""
        if not isinstance(pipeline, list):
            return pipeline
        stages = []
        for stage in pipeline:
            if isinstance(stage, Mapping) and "$match" in stage:
                stages.append({**stage, "$match": self.in_query(stage["$match"])})
            else:
                stages.append(self.in_expression(stage))
        return stages

    def in_expression(self, value: Any, bound: frozenset[str] = frozenset()) -> Any:
        if isinstance(value, str):
            return self._substitute(value, bound)
        if isinstance(value, list):
            return [self.in_expression(item, bound) for item in value]
        if isinstance(value, Mapping):
            inner = bound | self._check_shadowing(value)
            if "$literal" in value:
                return value
            return {key: self.in_expression(item, inner) for key, item in value.items()}
        return value

    def _substitute(self, text: str, bound: frozenset[str]) -> Any:
        if not text.startswith("$$"):
            return text
        name, _, path = text[2:].partition(".")
        if name not in self.values:
            if name not in _SYSTEM and name not in bound:
                raise CommandError(17276, f"Use of undefined variable: {name}")
            return text  # a system variable ($$ROOT, $$NOW) or one bound inside
        value = self.values[name]
        for part in path.split(".") if path else ():
            value = value.get(part) if isinstance(value, Mapping) else None
        return {"$literal": value}

    def _check_shadowing(self, value: Mapping[str, Any]) -> frozenset[str]:
        """The names ``value`` binds for its subexpressions (refusing a rebound let name)."""
        names: set[str] = set()
        for binder in _BINDERS:
            spec = value.get(binder)
            if not isinstance(spec, Mapping):
                continue
            bound = set()
            if isinstance(spec.get("vars"), Mapping):
                bound |= set(spec["vars"])
            if isinstance(spec.get("let"), Mapping):
                bound |= set(spec["let"])
            if isinstance(spec.get("as"), str):
                bound.add(spec["as"])
            if bound & set(self.values):
                raise CommandError(
                    238,
                    f"a {binder} that rebinds a command-level let variable is not supported"
                    " by the simulator",
                )
            names |= bound
        if "$map" in value or "$filter" in value:
            names.add("this")
        if "$reduce" in value:
            names |= {"this", "value"}
        return frozenset(names)


def parse_let(cmd: Mapping[str, Any], command: str) -> Variables:
    """The command's ``let`` variables, evaluated (an empty set without ``let``)."""
    let = cmd.get("let")
    if let is None:
        return Variables({})
    if not isinstance(let, Mapping):
        raise CommandError(14, f"BSON field '{command}.let' is the wrong type, expected object")
    values: dict[str, Any] = {}
    for name, expression in let.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise CommandError(
                16867,
                f"'{name}' starts with an invalid character for a user variable name",
            )
        values[name] = _constant(expression)
    return Variables(values)


def _constant(expression: Any) -> Any:
    """Evaluate a let value: a constant expression (no document in scope)."""
    if isinstance(expression, str):
        if expression.startswith("$"):
            raise CommandError(
                238,
                "a let value that refers to a field path or variable is not supported by the"
                " simulator",
            )
        return expression
    if isinstance(expression, list):
        return [_constant(item) for item in expression]
    if isinstance(expression, Mapping):
        operator = _single_operator(expression)
        if operator is None:
            return {key: _constant(value) for key, value in expression.items()}
        if operator == "$literal":
            return expression["$literal"]
        if operator == "$rand":
            return random.random()
        raise CommandError(
            238, f"the expression {operator} in a let value is not supported by the simulator"
        )
    return expression


def _single_operator(expression: Mapping[str, Any]) -> Optional[str]:
    keys = list(expression)
    if len(keys) == 1 and isinstance(keys[0], str) and keys[0].startswith("$"):
        return keys[0]
    return None
