"""The aggregation stages of MongoDB 7.0, by name: who runs each and where it may stand
(the server's REGISTER_DOCUMENT_SOURCE table and each stage's StageConstraints).

Every name a 7.0 server knows has an entry, so that a pipeline is parsed as the server
parses it whether or not the engine runs the stage:

- ``ENGINE``: the engine parses and runs it (its parser is registered by its module);
- ``COMMAND``: the command layer runs it (``$collStats``, ``$indexStats``,
  ``$currentOp``, ``$listLocalSessions``, ``$changeStream``, ...): it provides a
  :data:`StageProvider` through ``PipelineContext.providers``;
- ``GEO``: ``$geoNear``, for the geo module, provided the same way;
- ``ATLAS``: ``$search``, ``$searchMeta``, ``$vectorSearch`` and ``$listSearchIndexes``,
  refused as a community server refuses them (6047401);
- ``INTERNAL``: the ``$_internal...`` stages a server uses between its own processes.

A stage that is neither run by the engine nor provided is refused with NotImplemented
(238), never evaluated wrongly; a name no 7.0 server knows is 40324.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.paths import Document

if TYPE_CHECKING:
    from mongocore.sim.engine.stages.context import PipelineContext

__all__ = [
    "ATLAS",
    "COMMAND",
    "ENGINE",
    "GEO",
    "INTERNAL",
    "STAGES",
    "Stage",
    "StageInfo",
    "StageParser",
    "StageProvider",
    "register",
]

ENGINE, COMMAND, GEO, ATLAS, INTERNAL = "engine", "command", "geo", "atlas", "internal"


class Stage:
    """A parsed stage: :meth:`run` turns the documents coming in into those going out.
    Stages never change the documents they are given (the store shares them)."""

    #: The stage's name, as the pipeline spells it.
    name = ""
    #: True for a stage that must see every input before its first output ($sort,
    #: $group, ...): what explain and the memory limits speak of.
    blocking = False

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        raise NotImplementedError


#: Parses a stage's argument (the value under its name) in a pipeline's context.
StageParser = Callable[[Any, "PipelineContext"], Stage]
#: What the command layer gives for a stage it runs: a parser like the engine's.
StageProvider = StageParser


@dataclass
class StageInfo:
    """A stage's entry: who runs it and its constraints."""

    name: str
    owner: str
    parser: Optional[StageParser] = None
    #: Only as the first stage of a pipeline (40602).
    first: bool = False
    #: Only as the last stage (40601).
    last: bool = False
    #: Allowed in a $facet's pipelines (40600 otherwise).
    facet: bool = True
    #: Allowed in a $lookup's or $unionWith's pipeline (51047 / 31441 otherwise).
    sub_pipeline: bool = True
    #: Runs without a collection ({aggregate: 1}).
    collectionless: bool = False
    #: Allowed in a transaction (OperationNotSupportedInTransaction, 263, otherwise).
    transaction: bool = True


def _entry(name: str, owner: str, **constraints: Any) -> StageInfo:
    return StageInfo(name, owner, **constraints)


#: Every stage of a 7.0 server (module doc).
STAGES: dict[str, StageInfo] = {
    info.name: info
    for info in (
        _entry("$addFields", ENGINE),
        _entry("$bucket", ENGINE),
        _entry("$bucketAuto", ENGINE),
        _entry("$count", ENGINE),
        _entry("$densify", ENGINE),
        _entry("$documents", ENGINE, first=True, collectionless=True),
        _entry("$facet", ENGINE, facet=False),
        _entry("$fill", ENGINE),
        _entry("$graphLookup", ENGINE),
        _entry("$group", ENGINE),
        _entry("$limit", ENGINE),
        _entry("$lookup", ENGINE),
        _entry("$match", ENGINE),
        _entry("$merge", ENGINE, last=True, facet=False, sub_pipeline=False, transaction=False),
        _entry("$out", ENGINE, last=True, facet=False, sub_pipeline=False, transaction=False),
        _entry("$project", ENGINE),
        _entry("$redact", ENGINE),
        _entry("$replaceRoot", ENGINE),
        _entry("$replaceWith", ENGINE),
        _entry("$sample", ENGINE),
        _entry("$set", ENGINE),
        _entry("$setWindowFields", ENGINE),
        _entry("$skip", ENGINE),
        _entry("$sort", ENGINE),
        _entry("$sortByCount", ENGINE),
        _entry("$unionWith", ENGINE),
        _entry("$unset", ENGINE),
        _entry("$unwind", ENGINE),
        _entry("$geoNear", GEO, first=True, facet=False),
        _entry("$changeStream", COMMAND, first=True, facet=False, sub_pipeline=False),
        _entry("$changeStreamSplitLargeEvent", COMMAND, last=True, facet=False),
        _entry("$collStats", COMMAND, first=True, facet=False, transaction=False),
        _entry("$currentOp", COMMAND, first=True, collectionless=True, facet=False,
               transaction=False),
        _entry("$indexStats", COMMAND, first=True, facet=False, transaction=False),
        _entry("$listCatalog", COMMAND, first=True, collectionless=True, facet=False,
               transaction=False),
        _entry("$listLocalSessions", COMMAND, first=True, collectionless=True, facet=False,
               transaction=False),
        _entry("$listSessions", COMMAND, first=True, facet=False, transaction=False),
        _entry("$planCacheStats", COMMAND, first=True, facet=False, transaction=False),
        _entry("$querySettings", COMMAND, first=True, collectionless=True, facet=False),
        _entry("$shardedDataDistribution", COMMAND, first=True, collectionless=True,
               facet=False),
        _entry("$search", ATLAS, first=True, facet=False),
        _entry("$searchMeta", ATLAS, first=True, facet=False),
        _entry("$vectorSearch", ATLAS, first=True, facet=False),
        _entry("$listSearchIndexes", ATLAS, first=True, facet=False),
        *(
            _entry(name, INTERNAL)
            for name in (
                "$_internalAllCollectionStats", "$_internalApplyOplogUpdate",
                "$_internalBoundedSort", "$_internalChangeStreamAddPostImage",
                "$_internalChangeStreamAddPreImage", "$_internalChangeStreamCheckInvalidate",
                "$_internalChangeStreamCheckResumability",
                "$_internalChangeStreamCheckTopologyChange",
                "$_internalChangeStreamHandleTopologyChange",
                "$_internalChangeStreamOplogMatch", "$_internalChangeStreamTransform",
                "$_internalChangeStreamUnwindTransaction", "$_internalComputeGeoNearDistance",
                "$_internalConvertBucketIndexStats", "$_internalDensify",
                "$_internalFindAndModifyImageLookup", "$_internalInhibitOptimization",
                "$_internalListCollections", "$_internalReshardingIterateTransaction",
                "$_internalReshardingOwnershipMatch", "$_internalSearchIdLookup",
                "$_internalSearchMongotRemote", "$_internalSetWindowFields",
                "$_internalShardServerInfo", "$_internalSplitPipeline",
                "$_internalStreamingGroup", "$_internalUnpackBucket", "$_unpackBucket",
                "$mergeCursors", "$setVariableFromSubPipeline",
                "$backupCursor", "$backupCursorExtend",
            )
        ),
    )
}  # fmt: skip


def register(name: str) -> Callable[[StageParser], StageParser]:
    """Register the engine's parser of a stage listed in :data:`STAGES`."""

    def add(parser: StageParser) -> StageParser:
        STAGES[name].parser = parser
        return parser

    return add


def parser_for(name: str, context: PipelineContext) -> StageParser:
    """The parser of a known stage in this context, or the server's refusal."""
    info = STAGES[name]
    provided = context.providers.get(name)
    if provided is not None:
        return provided
    if info.owner == ENGINE and info.parser is not None:
        return info.parser
    if info.owner == ATLAS:
        raise CommandError(6047401, f"{name} stage is only allowed on MongoDB Atlas")
    raise CommandError(238, f"{name} is not implemented by the simulator's engine")
