"""The expression language as the engine's matcher plugs it in: an
``ExpressionLanguage`` (context.py) for ``$expr``."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Callable, Optional

from bson import Timestamp

from mongocore.sim.collation import Collation
from mongocore.sim.engine.expressions.core import ExpressionContext, Scope, compile_expression
from mongocore.sim.engine.paths import Document

__all__ = ["AggregationExpressions"]


class AggregationExpressions:
    """Compiles ``$expr`` expressions for a MatchContext. ``now`` and ``cluster_time``
    are the command's ``$$NOW`` and ``$$CLUSTER_TIME`` (``now`` defaults to the moment
    an expression is compiled; without a cluster time, ``$$CLUSTER_TIME`` is the
    server's 51144, as on a standalone)."""

    def __init__(
        self,
        *,
        now: Optional[datetime.datetime] = None,
        cluster_time: Optional[Timestamp] = None,
        rng: Optional[Callable[[], float]] = None,
    ) -> None:
        self.now = now
        self.cluster_time = cluster_time
        self.rng = rng

    def compile(
        self, expression: Any, variables: Mapping[str, Any], collation: Optional[Collation]
    ) -> Callable[[Document], Any]:
        """Compile ``expression`` with the command's ``let`` variables (their values)."""
        context = ExpressionContext(
            collation, now=self.now, cluster_time=self.cluster_time, rng=self.rng
        )
        scope = Scope(context)
        for name, value in variables.items():
            scope.define_constant(str(name), value)
        node = compile_expression(expression, context, scope).node
        frame = context.frame

        def evaluate(doc: Document) -> Any:
            return node(frame(doc))

        return evaluate
