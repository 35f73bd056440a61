"""The query operators of one collection that need its indexes or geometry: the geo
operators (geo_query.py) and ``$text`` (text_query.py), as one
:class:`~mongocore.sim.engine.context.OperatorTable` the command layer compiles the
collection's queries with, and the ``$geoNear`` stage parser of the collection.

Importing this module registers the ``text``, ``2d`` and ``2dsphere`` index kinds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Callable

from mongocore.sim.engine.context import OperatorTable
from mongocore.sim.engine.geo_query import GeoSearch
from mongocore.sim.engine.indexes import Index
from mongocore.sim.engine.matcher import DEFAULT_OPERATORS
from mongocore.sim.engine.stages.registry import StageProvider
from mongocore.sim.engine.text_query import text_operator

__all__ = ["collection_operators", "geo_near_parser"]


def collection_operators(
    indexes: Callable[[], Iterable[Index]],
    namespace: str,
    base: OperatorTable = DEFAULT_OPERATORS,
) -> OperatorTable:
    """``base`` with ``$text``, ``$geoWithin``, ``$within``, ``$geoIntersects``,
    ``$near``, ``$nearSphere`` and their companions, for the collection ``namespace``
    whose indexes ``indexes`` returns (called when a query is compiled, so the table
    can be kept while indexes come and go)."""
    geo = GeoSearch(indexes, namespace)
    return base.extended(
        field=geo.field_operators(),
        top_level={"$text": text_operator(indexes)},
    )


def geo_near_parser(indexes: Callable[[], Iterable[Index]], namespace: str) -> StageProvider:
    """The ``$geoNear`` stage parser of a collection: the StageProvider the command
    layer gives a pipeline under ``"$geoNear"``."""
    return GeoSearch(indexes, namespace).geo_near_parser()
