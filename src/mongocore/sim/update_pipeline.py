"""Pipeline-style updates: an update given as an aggregation pipeline (MongoDB manual,
"Updates with Aggregation Pipeline"; a 4.2+ server).

The stages an update pipeline may hold are ``$addFields``/``$set``, ``$project``,
``$unset``, ``$replaceRoot`` and ``$replaceWith`` (any other known stage fails with
InvalidOptions, 72; an unknown one with 40324). The pipeline runs on the matched
document alone (on an upsert, on the document built from the query's equality
fields) on the engine's stages, with the command's ``let`` variables. Its output then
replaces the document as a server's does: an output without ``_id`` keeps the
document's ``_id`` (first), an output whose ``_id`` differs fails with ImmutableField
(66), and top-level ``$``-prefixed field names are stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from mongocore.sim import aggregation
from mongocore.sim.codes import CommandError
from mongocore.sim.engine.stages import UPDATE_STAGES
from mongocore.sim.engine.stages.pipeline import check_shape

__all__ = ["PipelineUpdate", "apply_pipeline", "check_pipeline"]

Document = dict[str, Any]


def check_pipeline(pipeline: Sequence[Any]) -> None:
    """Refuse an update pipeline's stages as a server does before any document is read
    (each stage's argument is parsed with the command's variables, when it runs)."""
    for name in check_shape(pipeline):
        if name not in UPDATE_STAGES:
            raise CommandError(72, f"{name} is not allowed to be used within an update")


def apply_pipeline(
    pre: Optional[Mapping[str, Any]],
    seed: Mapping[str, Any],
    pipeline: Any,
    variables: Optional[Mapping[str, Any]] = None,
) -> Document:
    """The document an update ``pipeline`` makes of ``pre`` (or, for an upsert with ``pre``
    None, of ``seed``): the output replaces the document, keeping its ``_id``."""
    source = dict(pre) if pre is not None else dict(seed)
    results = aggregation.run([source], list(pipeline), variables=variables, within="update")
    if len(results) != 1 or not isinstance(results[0], dict):
        raise CommandError(2, "the update pipeline did not produce one document")
    image: Document = results[0]
    if "_id" in source:
        if "_id" not in image:
            image = {"_id": source["_id"], **image}
        elif pre is not None and not _same_id(image["_id"], source["_id"]):
            raise CommandError(
                66,
                "After applying the update, the (immutable) field '_id' was found to have been"
                f" altered to _id: {image['_id']!r}",
            )
    return id_first(image)


def _same_id(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return bool(a == b)


class PipelineUpdate:
    """A pipeline update as the engine applies one (crud.CompiledUpdate)."""

    def __init__(
        self, pipeline: Sequence[Any], variables: Optional[Mapping[str, Any]] = None
    ) -> None:
        check_pipeline(pipeline)
        self.pipeline = list(pipeline)
        self.variables = dict(variables or {})

    def apply(
        self, doc: Document, *, position: Optional[int] = None, inserting: bool = False
    ) -> Document:
        if inserting:
            return apply_pipeline(None, doc, self.pipeline, self.variables)
        return apply_pipeline(doc, doc, self.pipeline, self.variables)


def id_first(doc: Mapping[str, Any]) -> Document:
    """``doc`` with its ``_id`` first, as a server stores it."""
    if "_id" not in doc or next(iter(doc)) == "_id":
        return dict(doc)
    out: Document = {"_id": doc["_id"]}
    out.update((key, value) for key, value in doc.items() if key != "_id")
    return out
