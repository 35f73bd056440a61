"""How the simulator's commands query the engine: the match context a command's
filter is compiled with (its collation, its ``let`` variables, the expression language
of ``$expr``), the update a statement applies, and the options every cursor checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim.aggregation import EXPRESSIONS
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.paths import Document
from mongocore.sim.update_pipeline import PipelineUpdate
from mongocore.sim.variables import Variables

__all__ = [
    "EXPRESSIONS",
    "batch_size",
    "id_first",
    "match_context",
    "update_for_engine",
]

_DEFAULT = MatchContext(expressions=EXPRESSIONS)


def match_context(
    collation: Optional[Collation], variables: Optional[Variables] = None
) -> MatchContext:
    """What a command's filters are compiled with. ``let`` variables are substituted
    into ``$expr`` beforehand (``Variables.in_query``)."""
    if collation is None:
        return _DEFAULT
    return MatchContext(collation=collation, expressions=EXPRESSIONS)


def update_for_engine(update: Any, variables: Optional[Variables]) -> Any:
    """The update an engine write applies: an operator update or replacement as given,
    a pipeline (with the command's ``let`` variables) computed by sim/update_pipeline.py."""
    if isinstance(update, list):
        return PipelineUpdate(update, variables.values if variables else None)
    return update


def batch_size(value: Any) -> Optional[int]:
    """A cursor's ``batchSize`` option, checked as a server checks it."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise CommandError(
            51024, f"BSON field 'batchSize' value must be >= 0, actual value '{value}'"
        )
    return int(value)


def id_first(doc: Mapping[str, Any]) -> Document:
    """``doc`` with its ``_id`` (if any) as the first field, as a server stores it."""
    if "_id" not in doc or next(iter(doc)) == "_id":
        return dict(doc)
    out: Document = {"_id": doc["_id"]}
    out.update((key, value) for key, value in doc.items() if key != "_id")
    return out
