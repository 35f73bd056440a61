"""Aggregation stages and expressions a 7.0 server has and mongomock lacks, added to it.

Registered once, when the simulator's query module is imported, so every pipeline the
simulator runs through mongomock (an aggregation, a pipeline update, a view, a
``$merge`` stage's ``whenMatched`` pipeline) speaks them (MongoDB manual, "Aggregation
Pipeline Stages", "$setField", "$getField", "$unsetField"):

- ``$replaceWith: <expression>``: the alias of ``$replaceRoot: {newRoot: ...}``; a
  value that is not a document fails with 40228 as on a server;
- ``$unset: <field> | [<field>, ...]``: the alias of an exclusion ``$project``;
- ``$setField {field, input, value}``, ``$unsetField {field, input}`` and
  ``$getField {field, input}`` (or ``$getField: <field>``): read or write one field by
  its literal name, dots and a leading ``$`` included. ``field`` must be a constant
  string (a ``$``-prefixed one through ``$literal``); ``$$REMOVE`` as the value removes
  the field; a null or missing input gives null (``$getField``: missing stays missing,
  a non-document input gives missing). The errors are the server's (4161101-4161108,
  3041701-3041704).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

import mongomock.aggregate
from bson import Regex

from mongocore.sim.codes import CommandError

__all__ = ["OBJECT_EXPRESSIONS"]

#: The field-level expressions this module adds.
OBJECT_EXPRESSIONS = ("$setField", "$unsetField", "$getField")

_Parser: Any = mongomock.aggregate._Parser
_HANDLERS: dict[str, Any] = mongomock.aggregate._PIPELINE_HANDLERS
_replace_root: Callable[..., list[Any]] = mongomock.aggregate._handle_replace_root_stage
_project: Callable[..., list[Any]] = mongomock.aggregate._handle_project_stage
_original_parse: Callable[[Any, Any], Any] = _Parser.parse

#: mongomock's marker for "this expression evaluated to nothing" (a missing field).
_NOTHING: Any = mongomock.aggregate.NOTHING  # type: ignore[attr-defined]


class _Missing(Exception):
    """The expression evaluated to "missing" (mongomock signals it with a KeyError)."""


# -- stages -----------------------------------------------------------------------------


def _replace_with(collection: list[Any], database: Any, options: Any) -> list[Any]:
    out = []
    for doc in collection:
        try:
            new = _Parser(doc, ignore_missing_keys=True).parse(options)
        except KeyError:
            new = None
        if not isinstance(new, dict):
            raise CommandError(
                40228,
                "'replacement document' must evaluate to an object, but resulting value was: "
                f"{'MISSING' if new is None or new is _NOTHING else new!r}. Type of resulting"
                f" value: '{_type_name(new)}'.",
            )
        out.append(new)
    return out


def _unset(collection: list[Any], database: Any, options: Any) -> list[Any]:
    fields = [options] if isinstance(options, str) else options
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
        raise CommandError(
            31002, "$unset specification must be a string or an array containing only strings"
        )
    return _project(collection, database, {field: 0 for field in fields})


# -- expressions ------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None or value is _NOTHING:
        return "missing" if value is _NOTHING else "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if -(2**31) <= value < 2**31 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Regex):
        return "regex"
    return type(value).__name__


def _constant_field(name: str, field: Any) -> str:
    """The ``field`` argument of $setField/$unsetField: a constant string, checked as the
    server parses it."""
    if isinstance(field, Mapping):
        if list(field) == ["$literal"] and isinstance(field["$literal"], str):
            return str(field["$literal"])
        if list(field) == ["$literal"]:
            raise CommandError(
                4161107,
                f"{name} requires 'field' to evaluate to type String, but got"
                f" {_type_name(field['$literal'])}",
            )
        raise CommandError(
            4161106,
            f"{name} requires 'field' to evaluate to a constant, but got a non-constant argument",
        )
    if isinstance(field, str):
        if field.startswith("$"):
            raise CommandError(
                4161108,
                f"'{field}' is a field path reference which is not allowed in this context."
                f" Did you mean {{$literal: '{field}'}}?",
            )
        return field
    raise CommandError(
        4161107, f"{name} requires 'field' to evaluate to type String, but got {_type_name(field)}"
    )


def _evaluate(parser: Any, expression: Any) -> Any:
    """Evaluate ``expression``; "missing" (including ``$$REMOVE``) raises :class:`_Missing`."""
    if expression == "$$REMOVE":
        raise _Missing
    try:
        value = parser.parse(expression)
    except KeyError as exc:
        raise _Missing from exc
    if value is _NOTHING:
        raise _Missing
    return value


def _set_field(parser: Any, name: str, spec: Any) -> Any:
    if not isinstance(spec, Mapping):
        raise CommandError(4161100, f"{name} only supports an object as its argument")
    allowed = ("field", "input", "value") if name == "$setField" else ("field", "input")
    for key in spec:
        if key not in allowed:
            raise CommandError(4161101, f"{name} found an unknown argument: {key}")
    for code, key in zip((4161102, 4161103, 4161104), allowed):
        if key not in spec:
            raise CommandError(code, f"{name} requires '{key}' to be specified")
    field = _constant_field(name, spec["field"])
    try:
        document = _evaluate(parser, spec["input"])
    except _Missing:
        return None
    if document is None:
        return None
    if not isinstance(document, Mapping):
        raise CommandError(4161105, f"{name} requires 'input' to evaluate to type Object")
    out = dict(document)
    try:
        if name == "$unsetField":
            raise _Missing
        value = _evaluate(parser, spec["value"])
    except _Missing:
        out.pop(field, None)
        return out
    out[field] = value  # an existing field keeps its place, a new one goes last
    return out


def _get_field(parser: Any, spec: Any) -> Any:
    if isinstance(spec, Mapping) and not any(str(k).startswith("$") for k in spec):
        for key in spec:
            if key not in ("field", "input"):
                raise CommandError(3041701, f"$getField found an unknown argument: {key}")
        if "field" not in spec:
            raise CommandError(3041702, "$getField requires 'field' to be specified")
        if "input" not in spec:
            raise CommandError(3041703, "$getField requires 'input' to be specified")
        field_spec, input_spec = spec["field"], spec["input"]
    else:
        field_spec, input_spec = spec, "$$CURRENT"
    if isinstance(field_spec, Mapping) and list(field_spec) == ["$literal"]:
        field = field_spec["$literal"]
    else:
        try:
            field = _evaluate(parser, field_spec)  # a dynamic name is checked when evaluated
        except _Missing:
            field = _NOTHING
    if not isinstance(field, str):
        raise CommandError(
            3041704,
            f"$getField requires 'field' to evaluate to type String, but got {_type_name(field)}",
        )
    try:
        document = _evaluate(parser, input_spec)
    except _Missing as exc:
        raise KeyError(field) from exc
    if document is None:
        return None
    if not isinstance(document, Mapping) or field not in document:
        raise KeyError(field)  # missing, as mongomock expresses it
    return document[field]


def _parse(self: Any, expression: Any) -> Any:
    if isinstance(expression, dict) and len(expression) == 1:
        ((name, spec),) = expression.items()
        if name in ("$setField", "$unsetField"):
            return _set_field(self, name, spec)
        if name == "$getField":
            return _get_field(self, spec)
    return _original_parse(self, expression)


_HANDLERS["$replaceWith"] = _replace_with
_HANDLERS["$unset"] = _unset
_Parser.parse = _parse
