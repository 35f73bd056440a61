"""The simulator's own storage and query engine: what a mongod's storage and query
layer does, independent of the command layer (docs/simulator.md, "The engine").

One concept per module:

- ``values``: BSON values, their canonical type order, comparison and equality
  (numbers across int32/int64/double/Decimal128, NaN, collation), hashable keys;
- ``types``: ``$type`` aliases and numbers;
- ``paths``: dotted field paths and the array traversal of queries;
- ``context``: what a query is compiled with, and the plug-in points (the expression
  language of ``$expr``, the JavaScript of ``$where``, operator tables for ``$text``
  and the geo operators);
- ``query_operators`` and ``matcher``: the query language, compiled once per query;
- ``projection``, ``sort``: find projections and sort orders;
- ``update``: the update operators, positional paths and array filters, upserts;
- ``indexes``: index objects (unique, sparse, partial, TTL, hashed) and DuplicateKey;
  ``KINDS`` and ``index_listing`` for the kinds below;
- ``store``: a versioned collection (record order, ``_id`` index, reads as of a stamp);
- ``crud``: find, count, insert, update, delete and findAndModify over a collection;
- ``render``: values as they appear in the server's messages;
- ``expressions``: the aggregation expression language and the accumulators (a
  package; its ``EXPRESSIONS`` is the ``ExpressionLanguage`` of ``$expr``);
- geo: ``spherical`` (sphere geometry), ``geometry`` (GeoJSON and legacy shapes with
  the server's checks), ``geo_relations`` (within, intersects, distance),
  ``geo_indexes`` (the 2dsphere and 2d kinds), ``geo_query`` (the geo operators and the
  ``$geoNear`` stage);
- text: ``text_language`` (languages, stop words, stemming, tokens), ``text_index``
  (the text kind and its scores), ``text_query`` (``$text``);
- ``search``: a collection's operator table with the geo operators and ``$text``
  (importing it registers the text, 2d and 2dsphere kinds, as this package does).

Aggregation stages, mapReduce, capped and time-series collections plug in later
(context.py, indexes.KINDS).
"""

from __future__ import annotations

from mongocore.sim.engine.context import (
    ExpressionLanguage,
    FieldOperator,
    MatchContext,
    OperatorTable,
    WhereLanguage,
)
from mongocore.sim.engine.indexes import Index, IndexSpec
from mongocore.sim.engine.matcher import DEFAULT_OPERATORS, Matcher, compile_filter
from mongocore.sim.engine.projection import Projection, compile_projection
from mongocore.sim.engine.search import collection_operators, geo_near_parser
from mongocore.sim.engine.sort import Sort, compile_sort
from mongocore.sim.engine.store import Collection, SnapshotTooOld
from mongocore.sim.engine.update import Update, compile_update
from mongocore.sim.engine.values import MISSING, compare, equal, identical, key

__all__ = [
    "DEFAULT_OPERATORS",
    "MISSING",
    "Collection",
    "ExpressionLanguage",
    "FieldOperator",
    "Index",
    "IndexSpec",
    "MatchContext",
    "Matcher",
    "OperatorTable",
    "Projection",
    "SnapshotTooOld",
    "Sort",
    "Update",
    "WhereLanguage",
    "collection_operators",
    "compare",
    "compile_filter",
    "compile_projection",
    "compile_sort",
    "compile_update",
    "equal",
    "geo_near_parser",
    "identical",
    "key",
]
