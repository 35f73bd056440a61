"""What a pipeline is parsed and run with, and what the command layer provides.

A :class:`PipelineContext` is made once per command (or per sub-pipeline, which
derives its own with :meth:`PipelineContext.derived`): the aggregation's collation,
``$$NOW`` and ``$$CLUSTER_TIME`` (the same for every stage and sub-pipeline of the
command), the command's ``let`` values, ``allowDiskUse``, the random source of
``$sample`` and ``$rand``, and the two interfaces through which stages reach beyond
the documents they are given:

- a :class:`CollectionResolver`, for ``$lookup``, ``$graphLookup`` and ``$unionWith``:
  the documents of another collection of the deployment, as the command sees them (a
  view's pipeline already applied, the read's snapshot and read concern the command
  layer's business);
- a :class:`Writer`, for ``$out`` and ``$merge``: the writes into the target
  collection, through the store (its oplog, validator, indexes and change streams).

Stages the command layer runs itself (``$collStats``, ``$indexStats``,
``$currentOp``, ``$listLocalSessions``, ...) come in as :data:`StageProvider` entries
of ``providers`` (registry.py); without a provider such a stage is refused with
NotImplemented (238), never evaluated wrongly.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

from bson import Timestamp

from mongocore.sim.collation import Collation
from mongocore.sim.engine.context import MatchContext, OperatorTable, WhereLanguage
from mongocore.sim.engine.expressions import (
    AggregationExpressions,
    ExpressionContext,
    Scope,
)
from mongocore.sim.engine.paths import Document

if TYPE_CHECKING:
    from mongocore.sim.engine.stages.registry import StageProvider

__all__ = [
    "CollectionResolver",
    "MergeTarget",
    "PipelineContext",
    "Writer",
]

#: 100 MB: the memory a blocking stage ($group, $sort, $bucketAuto, $setWindowFields)
#: may use without allowDiskUse (internalQueryMaxBlockingSortMemoryUsageBytes and
#: internalDocumentSourceGroupMaxMemoryBytes of a 7.0 server).
MEMORY_LIMIT = 100 * 1024 * 1024


class CollectionResolver(Protocol):
    """The other collections of the deployment, as ``$lookup``, ``$graphLookup`` and
    ``$unionWith`` read them (the command layer provides it)."""

    def documents(self, db: str, coll: str) -> Iterable[Document]:
        """Every document of ``db.coll`` in the order a collection scan gives them; a
        view's documents are its pipeline's output; a collection that does not exist
        has none. Documents are not changed by the stages."""
        ...


@dataclass(frozen=True)
class MergeTarget:
    """The target of ``$merge`` or ``$out`` as the stage parsed it."""

    db: str
    coll: str


class Writer(Protocol):
    """The writes of ``$out`` and ``$merge`` into the store (the command layer provides
    it). Each call is one write of the server's: it is logged, replicated, checked
    against the target's validator (unless the command bypasses it) and its unique
    indexes, and raises the server's CommandError when it fails."""

    def unique_key_fields(self, db: str, coll: str) -> list[tuple[str, ...]]:
        """The key fields of every unique, non-partial index of ``db.coll`` (``$merge``
        ``on`` needs one on exactly its fields, 51183); ``("_id",)`` need not be listed."""
        ...

    def find_one(
        self, db: str, coll: str, query: Mapping[str, Any], collation: Optional[Collation]
    ) -> Optional[Document]:
        """The first document of ``db.coll`` matching ``query`` under ``collation``."""
        ...

    def insert(self, db: str, coll: str, doc: Document) -> None:
        """Insert one document (DuplicateKey, 11000, for a unique index's key)."""
        ...

    def replace(self, db: str, coll: str, old: Document, new: Document) -> None:
        """Replace ``old`` (a document :meth:`find_one` returned) with ``new``."""
        ...

    def replace_collection(self, db: str, coll: str, docs: list[Document]) -> None:
        """``$out``: make ``db.coll`` hold exactly ``docs``, keeping its indexes and
        options (creating it if it does not exist), as one atomic rename would."""
        ...


@dataclass
class PipelineContext:
    """Everything one command's pipeline is parsed and run with (module doc)."""

    db: str = "test"
    #: The collection the pipeline reads (None for ``{aggregate: 1}``).
    coll: Optional[str] = None
    collation: Optional[Collation] = None
    #: The command's ``let``: names and their values (already evaluated).
    variables: Mapping[str, Any] = field(default_factory=dict)
    now: Optional[datetime.datetime] = None
    cluster_time: Optional[Timestamp] = None
    #: The command's allowDiskUse; None when it gives none (7.0's allowDiskUseByDefault is
    #: true, so only an explicit false holds a blocking stage to ``memory_limit``).
    allow_disk_use: Optional[bool] = None
    rng: Callable[[], float] = random.random
    resolver: Optional[CollectionResolver] = None
    writer: Optional[Writer] = None
    #: Stages the command layer runs, by name (registry.py).
    providers: Mapping[str, StageProvider] = field(default_factory=dict)
    #: The query operator table for $match ($text and geo plug in there).
    operators: Optional[OperatorTable] = None
    where: Optional[WhereLanguage] = None
    #: The memory a blocking stage may use without allowDiskUse.
    memory_limit: int = MEMORY_LIMIT
    #: Where the pipeline is: "" (the command's), "$facet", "$lookup", "$unionWith",
    #: "update" (a pipeline update), "view".
    within: str = ""
    #: Nested sub-pipelines ($lookup in $lookup ...): the server's limit is 20 deep.
    depth: int = 0

    def __post_init__(self) -> None:
        if self.now is None:
            now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            self.now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        self._expressions: Optional[ExpressionContext] = None
        self._scope: Optional[Scope] = None

    # -- expressions ------------------------------------------------------------------

    @property
    def expressions(self) -> ExpressionContext:
        """The expression context of this pipeline (one per pipeline, so that a frame
        holds the slots of its stages only)."""
        if self._expressions is None:
            self._expressions = ExpressionContext(
                self.collation, now=self.now, cluster_time=self.cluster_time, rng=self.rng
            )
        return self._expressions

    @property
    def scope(self) -> Scope:
        """The top scope of this pipeline: the command's ``let`` variables, as constants."""
        if self._scope is None:
            scope = Scope(self.expressions)
            for name, value in self.variables.items():
                scope.define_constant(str(name), value)
            self._scope = scope
        return self._scope

    def match_context(self) -> MatchContext:
        """What ``$match`` compiles its filter with."""
        return MatchContext(
            collation=self.collation,
            expressions=AggregationExpressions(
                now=self.now, cluster_time=self.cluster_time, rng=self.rng
            ),
            where=self.where,
            variables=self.variables,
            operators=self.operators,
            rng=self.rng,
        )

    def derived(
        self, *, within: str, variables: Optional[Mapping[str, Any]] = None
    ) -> PipelineContext:
        """The context of a sub-pipeline: the same command, its own expression context,
        ``variables`` added to the command's."""
        merged = dict(self.variables)
        if variables:
            merged.update(variables)
        return replace(self, variables=merged, within=within, depth=self.depth + 1)
