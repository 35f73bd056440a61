"""The aggregation pipeline's stages of MongoDB 7.0 (docs/simulator.md, "The engine").

One concept per module:

- ``registry``: every stage name a 7.0 server knows, who runs it (the engine, the
  command layer, the geo module, or nobody: Atlas search) and where it may stand;
- ``context``: :class:`PipelineContext` (what a command's pipeline is parsed and run
  with) and the interfaces the command layer provides (:class:`CollectionResolver`
  for ``$lookup``/``$graphLookup``/``$unionWith``, :class:`Writer` for ``$out`` and
  ``$merge``, providers for the stages it runs itself);
- ``pipeline``: :func:`parse_pipeline`, the whole pipeline parsed with the server's
  parse-time errors and rules, then run as an iterator (:class:`Pipeline`);
- ``basic`` (``$match``, ``$limit``, ``$skip``, ``$sort``, ``$sample``, ``$count``),
  ``shaping`` (``$project``, ``$addFields``/``$set``, ``$unset``, ``$replaceRoot``,
  ``$replaceWith``, ``$redact``), ``grouping`` (``$group``, ``$bucket``,
  ``$bucketAuto`` and its ``granularity``, ``$sortByCount``), ``unwind``, ``joins``
  (``$lookup``, ``$graphLookup``, ``$unionWith``), ``facet`` (``$facet``,
  ``$documents``), ``windows`` (``$setWindowFields``), ``densify``, ``fill``,
  ``output`` (``$out``, ``$merge``).

Using it::

    context = PipelineContext(db="shop", coll="orders", collation=collation,
                              variables=let_values, resolver=resolver, writer=writer)
    pipeline = parse_pipeline(command["pipeline"], context)
    for doc in pipeline.run(documents):
        ...
"""

from __future__ import annotations

from mongocore.sim.engine.stages import (  # noqa: F401  (each registers its stages)
    basic,
    densify,
    facet,
    fill,
    grouping,
    joins,
    output,
    shaping,
    unwind,
    windows,
)
from mongocore.sim.engine.stages.context import (
    MEMORY_LIMIT,
    CollectionResolver,
    PipelineContext,
    Writer,
)
from mongocore.sim.engine.stages.pipeline import (
    UPDATE_STAGES,
    Pipeline,
    parse_pipeline,
    stage_name,
)
from mongocore.sim.engine.stages.registry import (
    ATLAS,
    COMMAND,
    ENGINE,
    GEO,
    INTERNAL,
    STAGES,
    Stage,
    StageInfo,
    StageProvider,
)

__all__ = [
    "ATLAS",
    "COMMAND",
    "ENGINE",
    "GEO",
    "INTERNAL",
    "MEMORY_LIMIT",
    "STAGES",
    "UPDATE_STAGES",
    "CollectionResolver",
    "Pipeline",
    "PipelineContext",
    "Stage",
    "StageInfo",
    "StageProvider",
    "Writer",
    "parse_pipeline",
    "stage_name",
]
