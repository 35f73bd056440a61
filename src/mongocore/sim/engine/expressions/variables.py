"""Variables and literals (MongoDB manual, "$let", "$literal", "Aggregation Variables",
and the ``let`` option of the commands): ``$let`` binds variables for an expression,
``$literal`` (and its older name ``$const``) is a value taken as it is, and
:func:`bind_let` gives a command's ``let`` variables their values once, before any
document is read, as constants of the command.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    constant,
    operator,
    parse,
    validate_variable_name,
)
from mongocore.sim.engine.types import type_name

__all__ = ["bind_let"]


@operator("$literal", "$const")
def _parse_literal(value: Any, scope: Scope) -> Node:
    return constant(value)


@operator("$let")
def _parse_let(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(16874, "$let only supports an object as its argument")
    variables: Any = None
    body: Any = None
    have_vars = have_in = False
    for name, item in value.items():
        if name == "vars":
            variables, have_vars = item, True
        elif name == "in":
            body, have_in = item, True
        else:
            raise CommandError(16875, f"Unrecognized parameter to $let: {name}")
    if not have_vars:
        raise CommandError(16876, "Missing 'vars' parameter to $let")
    if not have_in:
        raise CommandError(16877, "Missing 'in' parameter to $let")
    if not isinstance(variables, Mapping):
        raise CommandError(10065, "invalid parameter: expected an object (vars)")
    # The values see the outer variables only; the body sees the new ones.
    values = [(str(name), parse(item, scope)) for name, item in variables.items()]
    inner = scope.child()
    bindings = [(inner.define(name), node) for name, node in values]
    body_node = parse(body, inner)
    if not bindings:
        return body_node

    def node(frame: Frame) -> Any:
        for slot, child in bindings:
            frame[slot] = child(frame)
        return body_node(frame)

    return node


class _NoDocument(Mapping[str, Any]):
    """The document a command's ``let`` values are evaluated against: reading it is the
    server's 4890500 (let values are computed before any document is read)."""

    def __getitem__(self, name: str) -> Any:
        raise _field_access()

    def get(self, name: str, default: Optional[Any] = None) -> Any:
        raise _field_access()

    def __iter__(self) -> Iterator[str]:
        raise _field_access()

    def __len__(self) -> int:
        raise _field_access()


def _field_access() -> CommandError:
    return CommandError(
        4890500,
        "Command let Expression tried to access a field, but this is not allowed because"
        " command let expressions run before the query examines any documents.",
    )


def bind_let(let: Any, scope: Scope) -> dict[str, Any]:
    """Evaluate a command's ``let`` document and define each variable in ``scope`` as a
    constant; returns the values. A value may use the variables defined before it and
    the system variables, never a document's fields."""
    if not isinstance(let, Mapping):
        raise CommandError(
            14, f"BSON field 'let' is the wrong type '{type_name(let)}', expected type 'object'"
        )
    values: dict[str, Any] = {}
    no_document = _NoDocument()
    for name, spec in let.items():
        node = parse(spec, scope)
        frame = scope.context.frame(no_document)
        value = node(frame)
        if value is no_document:
            raise _field_access()
        validate_variable_name(str(name))
        scope.define_constant(str(name), value)
        values[str(name)] = value
    return values
