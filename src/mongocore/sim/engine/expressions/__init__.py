"""The aggregation expression language of MongoDB 7.0, compiled once and evaluated per
document (docs/simulator.md, "The engine"; MongoDB manual, "Aggregation Operators").

One concept per module:

- ``core``: operands, field paths, variables (``$$ROOT``, ``$$CURRENT``, ``$$REMOVE``,
  ``$$NOW``, ``$$CLUSTER_TIME``), expression objects and arrays, the operator registry,
  constant folding, :class:`ExpressionContext` (one per command) and :class:`Scope`
  (the variables visible where an expression is parsed);
- ``numbers``: the numeric types and their promotion, Decimal128 arithmetic;
- ``datetimes``: BSON dates as milliseconds;
- ``arithmetic``, ``trigonometry``, ``bitwise``, ``comparison``, ``logic`` (boolean and
  conditional operators), ``strings`` (with the regular expressions), ``arrays``,
  ``sets``, ``objects`` (``$getField``, ``$setField``, ``$unsetField``), ``dates`` (time
  zones, formats, ``$dateAdd``/``$dateDiff``/``$dateTrunc``), ``conversion``
  (``$convert``, ``$toX``, ``$type``), ``misc`` (``$rand``, ``$meta``, the sizes,
  timestamps, ``$toHashedIndexKey`` and the server's hash of a value);
- ``variables``: ``$let``, ``$literal``, and a command's ``let`` (:func:`bind_let`);
- ``accumulators``: the accumulators of ``$group``, ``$bucket``, ``$bucketAuto`` and
  ``$setWindowFields`` as objects (:func:`parse_accumulator_field`), and their
  expression forms;
- ``language``: :class:`AggregationExpressions`, the ``ExpressionLanguage`` of ``$expr``.

Using it from a stage::

    context = ExpressionContext(collation, now=now, cluster_time=cluster_time)
    scope = Scope(context)
    bind_let(command.get("let", {}), scope)
    expression = compile_expression({"$add": ["$a", 1]}, context, scope)
    frame = context.frame(doc)          # after compiling everything
    value = expression(frame)           # MISSING when it evaluates to nothing

An operator a 7.0 server knows and the simulator does not evaluate is refused with
NotImplemented (238); an unknown one is InvalidPipelineOperator (168).
"""

from __future__ import annotations

from mongocore.sim.engine.expressions import (  # noqa: F401  (each registers its operators)
    accumulators,
    arithmetic,
    arrays,
    bitwise,
    comparison,
    conversion,
    dates,
    logic,
    misc,
    objects,
    sets,
    strings,
    trigonometry,
    variables,
)
from mongocore.sim.engine.expressions.accumulators import (
    ACCUMULATORS,
    Accumulator,
    AccumulatorSpec,
    parse_accumulator,
    parse_accumulator_field,
)
from mongocore.sim.engine.expressions.comparison import compare_values, sort_key, values_equal
from mongocore.sim.engine.expressions.core import (
    META,
    OPERATORS,
    ROOT,
    SERVER_OPERATORS,
    Expression,
    ExpressionContext,
    Frame,
    Node,
    Scope,
    compile_expression,
    not_implemented,
    parse,
)
from mongocore.sim.engine.expressions.language import AggregationExpressions
from mongocore.sim.engine.expressions.logic import truthy
from mongocore.sim.engine.expressions.variables import bind_let

__all__ = [
    "ACCUMULATORS",
    "EXPRESSIONS",
    "META",
    "OPERATORS",
    "ROOT",
    "SERVER_OPERATORS",
    "Accumulator",
    "AccumulatorSpec",
    "AggregationExpressions",
    "Expression",
    "ExpressionContext",
    "Frame",
    "Node",
    "Scope",
    "bind_let",
    "compare_values",
    "compile_expression",
    "not_implemented",
    "parse",
    "parse_accumulator",
    "parse_accumulator_field",
    "sort_key",
    "truthy",
    "values_equal",
]

#: The ExpressionLanguage of a MatchContext, with ``$$NOW`` taken when compiling.
EXPRESSIONS = AggregationExpressions()
