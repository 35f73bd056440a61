"""Helpers of the expression tests: evaluate an expression on a document, and check a
result's BSON type as well as its value."""

from __future__ import annotations

import datetime
from typing import Any, Optional

import pytest

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.expressions import ExpressionContext, Scope, compile_expression
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING, identical

NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)


def evaluate(
    expression: Any,
    doc: Optional[dict[str, Any]] = None,
    collation: Optional[Collation] = None,
    **context: Any,
) -> Any:
    """The expression's value on ``doc`` (MISSING when it evaluates to nothing)."""
    expression_context = ExpressionContext(collation, now=context.pop("now", NOW), **context)
    compiled = compile_expression(expression, expression_context, Scope(expression_context))
    return compiled.evaluate({} if doc is None else doc)


def error(expression: Any, doc: Optional[dict[str, Any]] = None, **context: Any) -> CommandError:
    """The error the expression raises, at parse time or on ``doc``."""
    with pytest.raises(CommandError) as raised:
        evaluate(expression, doc, **context)
    return raised.value


def same(result: Any, expected: Any) -> bool:
    """True when ``result`` is ``expected`` as BSON: the same value and the same type."""
    if expected is MISSING or result is MISSING:
        return result is expected
    return bool(identical(result, expected)) and type_name(result) == type_name(expected)


def check(expression: Any, doc: Optional[dict[str, Any]], expected: Any, **context: Any) -> None:
    result = evaluate(expression, doc, **context)
    assert same(result, expected), f"{expression!r} gave {result!r}, expected {expected!r}"


def check_error(
    expression: Any, doc: Optional[dict[str, Any]], code: int, message: Optional[str] = None
) -> None:
    raised = error(expression, doc)
    assert raised.code == code, f"{expression!r}: {raised.code} {raised.errmsg}"
    if message is not None:
        assert raised.errmsg == message
