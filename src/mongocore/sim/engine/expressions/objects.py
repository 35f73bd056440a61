"""Object expressions (MongoDB manual, "Object Expression Operators"): ``$getField``,
``$setField`` and ``$unsetField`` (``$mergeObjects`` is an accumulator's expression
form, ``$objectToArray`` and ``$arrayToObject`` are with the arrays).

They reach fields a dotted path cannot name (``"a.b"``, ``"$price"``). All three take
a constant field name, as 7.0 requires (a field path is 5654600 / 4161108, an expression
5654601 / 4161106; 7.2 made $getField's dynamic). A ``value`` that evaluates to missing
(``$$REMOVE``) removes the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.core import (
    ROOT,
    Frame,
    Node,
    Scope,
    fold,
    operator,
    parse,
)
from mongocore.sim.engine.expressions.strings import is_string
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING

__all__: list[str] = []


def _path_with_prefix(path: str) -> str:
    # How the server prints a field path (FieldPath::fullPathWithPrefix): "$a" reads
    # $$CURRENT, "$$x.y" is the variable's path.
    return "$" + path[2:] if path.startswith("$$") else "$CURRENT." + path[1:]


def _constant_field(name: str, spec: Any, scope: Scope, codes: tuple[int, int, int]) -> str:
    """The 'field' argument of $getField, $setField and $unsetField: 7.0 takes a constant
    string only, a literal or {$literal: ...} (not an expression the optimizer would fold,
    not a field path). 7.2 made $getField's dynamic."""
    parse(spec, scope)  # its own parse errors come first, as the server parses the operand
    path_code, constant_code, type_code = codes
    if is_string(spec) and spec.startswith("$"):
        shown = _path_with_prefix(spec)
        raise CommandError(
            path_code,
            f"'{shown}' is a field path reference which is not allowed in this context. Did"
            f" you mean {{$literal: '{shown}'}}?",
        )
    if isinstance(spec, Mapping):
        if len(spec) != 1 or next(iter(spec)) not in ("$literal", "$const"):
            raise CommandError(
                constant_code,
                f"{name} requires 'field' to evaluate to a constant, but got a non-constant"
                " argument",
            )
        field = next(iter(spec.values()))
    elif isinstance(spec, list):
        raise CommandError(
            constant_code,
            f"{name} requires 'field' to evaluate to a constant, but got a non-constant argument",
        )
    else:
        field = spec
    if not is_string(field):
        raise CommandError(
            type_code,
            f"{name} requires 'field' to evaluate to type String, but got {type_name(field)}",
        )
    return str(field)


def _set_field(name: str) -> None:
    allowed = ("field", "input", "value") if name == "$setField" else ("field", "input")

    def parse_set_field(value: Any, scope: Scope) -> Node:
        if not isinstance(value, Mapping):
            raise CommandError(4161100, f"{name} only supports an object as its argument")
        for field in value:
            if field not in allowed:
                raise CommandError(4161101, f"{name} found an unknown argument: {field}")
        if "field" not in value:
            raise CommandError(4161102, f"{name} requires 'field' to be specified")
        if name == "$setField" and "value" not in value:
            raise CommandError(4161103, f"{name} requires 'value' to be specified")
        if "input" not in value:
            raise CommandError(4161109, f"{name} requires 'input' to be specified")
        field = _constant_field(name, value["field"], scope, (4161108, 4161106, 4161107))
        input_node = parse(value["input"], scope)
        value_node: Optional[Node] = parse(value["value"], scope) if name == "$setField" else None

        def node(frame: Frame) -> Any:
            document = input_node(frame)
            if nullish(document):
                return None
            if not isinstance(document, Mapping):
                # $unsetField runs as the $setField it stands for, and says so
                raise CommandError(4161105, "$setField requires 'input' to evaluate to type Object")
            out = dict(document)
            new_value = value_node(frame) if value_node is not None else MISSING
            if new_value is MISSING:
                out.pop(field, None)
            else:
                out[field] = new_value  # an existing field keeps its place
            return out

        return fold(node, [input_node, value_node])

    operator(name)(parse_set_field)


_set_field("$setField")
_set_field("$unsetField")


@operator("$getField")
def _parse_get_field(value: Any, scope: Scope) -> Node:
    if isinstance(value, Mapping) and not (value and str(next(iter(value))).startswith("$")):
        for field in value:
            if field not in ("field", "input"):
                raise CommandError(3041701, f"$getField found an unknown argument: {field}")
        if "field" not in value:
            raise CommandError(3041702, "$getField requires 'field' to be specified")
        if "input" not in value:
            raise CommandError(3041703, "$getField requires 'input' to be specified")
        field = _constant_field("$getField", value["field"], scope, (5654600, 5654601, 5654602))
        input_node = parse(value["input"], scope)
    else:
        field = _constant_field("$getField", value, scope, (5654600, 5654601, 5654602))
        input_node = (
            (lambda frame: frame[ROOT])
            if scope.lookup("CURRENT") == ROOT
            else parse("$$CURRENT", scope)
        )

    def node(frame: Frame) -> Any:
        document = input_node(frame)
        if nullish(document):
            return None if document is not MISSING else MISSING
        if not isinstance(document, Mapping):
            return MISSING
        return document.get(field, MISSING)

    return fold(node, [input_node])
