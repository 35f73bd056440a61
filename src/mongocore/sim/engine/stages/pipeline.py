"""A pipeline parsed whole, as a 7.0 server parses it, then run as an iterator over
documents (MongoDB manual, "Aggregation Pipeline"; the server's LiteParsedPipeline,
Pipeline::parse and Pipeline::validateCommon).

Parsing goes in the server's order: first every stage is checked for its shape (an
object, 14; exactly one field, 40323; a stage name a 7.0 server knows, 40324), then
each stage's argument is parsed by its stage (its own errors, or the refusal of a stage
the engine does not run: registry.py), then the pipeline's rules are checked: stages
only valid first (40602) or last (40601: ``$out``, ``$merge``), and what a ``$facet``
(40600), a ``$lookup`` (51047), a ``$unionWith`` (31441) or an update (72) may hold.

Before running, ``$sort`` followed (through ``$skip`` stages) by ``$limit`` keeps only
the documents the limit needs, as the server's top-k sort does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.registry import STAGES, Stage, parser_for

__all__ = ["Pipeline", "parse_pipeline", "stage_name"]

#: The stages an update pipeline may hold.
UPDATE_STAGES = frozenset(
    {"$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"}
)


def stage_name(stage: Any) -> Optional[str]:
    """The name of a stage document (None for anything else)."""
    if isinstance(stage, Mapping) and len(stage) == 1:
        return str(next(iter(stage)))
    return None


class Pipeline:
    """A parsed pipeline."""

    def __init__(self, stages: list[Stage], context: PipelineContext) -> None:
        self.stages = stages
        self.context = context

    @property
    def names(self) -> list[str]:
        return [stage.name for stage in self.stages]

    @property
    def writes(self) -> bool:
        """True when the pipeline ends in ``$out`` or ``$merge``."""
        return bool(self.stages) and self.stages[-1].name in ("$out", "$merge")

    def run(self, docs: Iterable[Document]) -> Iterator[Document]:
        """The pipeline's output for these input documents, lazily."""
        stream: Iterator[Document] = iter(docs)
        for stage in self.stages:
            stream = stage.run(stream)
        return stream

    def __call__(self, docs: Iterable[Document]) -> list[Document]:
        return list(self.run(docs))


def check_shape(pipeline: Sequence[Any]) -> list[str]:
    """The names of the stages, each checked as the server's lite parse checks it."""
    names = []
    for stage in pipeline:
        if not isinstance(stage, Mapping):
            raise CommandError(14, "Each element of the 'pipeline' array must be an object")
        if len(stage) != 1:
            raise CommandError(
                40323, "A pipeline stage specification object must contain exactly one field."
            )
        name = str(next(iter(stage)))
        if name not in STAGES:
            raise CommandError(40324, f"Unrecognized pipeline stage name: '{name}'")
        names.append(name)
    return names


def parse_pipeline(pipeline: Any, context: PipelineContext) -> Pipeline:
    """Parse ``pipeline`` (a list of stage documents) in ``context`` (module doc)."""
    if not isinstance(pipeline, (list, tuple)):
        raise CommandError(14, "'pipeline' option must be specified as an array")
    names = check_shape(pipeline)
    if context.within == "update":
        for name in names:
            if name not in UPDATE_STAGES:
                raise CommandError(72, f"{name} is not allowed to be used within an update")
    stages: list[Stage] = []
    for name, stage in zip(names, pipeline):
        parsed = parser_for(name, context)(stage[name], context)
        parsed.name = name
        stages.append(parsed)
    _validate(names, context)
    _optimize(stages)
    return Pipeline(stages, context)


def _validate(names: list[str], context: PipelineContext) -> None:
    last = len(names) - 1
    for index, name in enumerate(names):
        info = STAGES[name]
        if info.first and index != 0:
            raise CommandError(40602, f"{name} is only valid as the first stage in a pipeline.")
        if info.last and index != last:
            raise CommandError(40601, f"{name} can only be the final stage in the pipeline")
        if context.within == "$facet" and not info.facet:
            raise CommandError(40600, f"{name} is not allowed to be used within a $facet stage")
        if context.within == "$lookup" and not info.sub_pipeline:
            raise CommandError(51047, f"{name} is not allowed to be used within a $lookup stage")
        if context.within == "$unionWith" and not info.sub_pipeline:
            raise CommandError(31441, f"{name} is not allowed within a $unionWith's sub-pipeline")


def _optimize(stages: list[Stage]) -> None:
    """``$sort`` then ``$limit`` (through ``$skip``s): the sort keeps the top documents."""
    for index, stage in enumerate(stages):
        if stage.name != "$sort":
            continue
        skipped = 0
        for later in stages[index + 1 :]:
            if later.name == "$skip":
                skipped += getattr(later, "count", 0)
                continue
            if later.name == "$limit":
                stage.keep = skipped + later.count  # type: ignore[attr-defined]
            break
