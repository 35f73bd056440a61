"""What a query is compiled with, and where later modules plug in.

The matcher (matcher.py) knows every query operator of MongoDB 7.0 that needs nothing
but documents. Three kinds of operator need more, and come in through a
:class:`MatchContext` rather than by changing the matcher:

- ``$expr`` (and expressions in projections) evaluates aggregation expressions: an
  :class:`ExpressionLanguage` compiles one, given the ``let`` variables;
- ``$where`` runs server-side JavaScript: a :class:`WhereLanguage` compiles a function;
- operators that need an index or a geometry (``$text``, ``$geoWithin``,
  ``$geoIntersects``, ``$near``, ``$nearSphere``, ``$within``) are entries of an
  :class:`OperatorTable`: a field operator tests one value a path reaches, a top-level
  operator a whole document. ``DEFAULT_OPERATORS`` holds the matcher's own; a geo or
  text module builds a table with its operators added (:meth:`OperatorTable.extended`)
  and the command layer compiles queries with it.

A query that uses a missing piece is refused with NotImplemented (238), so the engine
never answers a query it cannot evaluate as a server would.

Some operators produce more than a match: ``$text`` a score per document, ``$near``
and ``$nearSphere`` a distance and an order. Each compiled query has its
:class:`QueryAnnotations`, where such an operator records itself (with the logical
operators it stands under, for the server's rules of where it may be) and the
metadata it provides (``$meta`` in projections and sorts; the order of a near query).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

from mongocore.sim.collation import Collation
from mongocore.sim.engine.paths import Document

if TYPE_CHECKING:
    from mongocore.sim.engine.matcher import Node

__all__ = [
    "META_NAMES",
    "ExpressionLanguage",
    "FieldOperator",
    "MatchContext",
    "OperatorTable",
    "QueryAnnotations",
    "TopLevelOperator",
    "ValueTest",
    "WhereLanguage",
]

#: A test of one value a path reaches (a candidate: see paths.py).
ValueTest = Callable[[Any], bool]


class ExpressionLanguage(Protocol):
    """Aggregation expressions (the aggregation phase provides it)."""

    def compile(
        self, expression: Any, variables: Mapping[str, Any], collation: Optional[Collation]
    ) -> Callable[[Document], Any]:
        """Compile ``expression`` once; the result evaluates it against a document
        (``$$ROOT`` and ``$$CURRENT`` are the document). Raises CommandError for an
        invalid expression, as the server does at parse time."""
        ...


class WhereLanguage(Protocol):
    """Server-side JavaScript for ``$where`` (sim/javascript.py behind it)."""

    def compile(self, code: Any) -> Callable[[Document], bool]:
        """Compile a ``$where`` value (a string or Code); the result runs it on a document."""
        ...


@dataclass(frozen=True)
class FieldOperator:
    """A query operator under a field: ``{path: {$op: argument}}``.

    ``parse`` turns the argument into a test of one candidate value (raising the
    server's CommandError for a bad argument); ``expand_leaf`` says whether an array at
    the end of the path offers its elements as candidates too (false for ``$size``,
    ``$elemMatch`` and legacy coordinate pairs); ``siblings`` receives the whole
    operator document (``$regex`` reads ``$options``, ``$near`` ``$maxDistance``).
    An operator that needs the path itself (``$near``, whose distance is a document's)
    gives ``node`` instead: it builds the matcher's node from (path, argument, the
    operator document, context)."""

    parse: Optional[Callable[[Any, Mapping[str, Any], MatchContext], ValueTest]] = None
    expand_leaf: bool = True
    node: Optional[Callable[[str, Any, Mapping[str, Any], MatchContext], Node]] = None


#: A top-level query operator: ``{$op: argument}`` compiled to a node of the matcher.
TopLevelOperator = Callable[[Any, "MatchContext"], "Node"]


@dataclass(frozen=True)
class OperatorTable:
    """The query operators a matcher compiles, by name."""

    field: Mapping[str, FieldOperator]
    top_level: Mapping[str, TopLevelOperator]
    #: Names a 7.0 server knows whose implementation is not in this table (refused with
    #: NotImplemented, 238, rather than reported as unknown).
    known: frozenset[str] = frozenset()

    def extended(
        self,
        field: Optional[Mapping[str, FieldOperator]] = None,
        top_level: Optional[Mapping[str, TopLevelOperator]] = None,
    ) -> OperatorTable:
        """A table with these operators added (or replacing ones of the same name)."""
        return OperatorTable(
            {**self.field, **(field or {})},
            {**self.top_level, **(top_level or {})},
            self.known,
        )


#: A document's metadata by name (``$meta``): its value for one document.
MetaProvider = Callable[[Document], Any]

#: The ``$meta`` names a 7.0 server knows (an unknown one is 17308).
META_NAMES = frozenset(
    {
        "textScore",
        "randVal",
        "searchScore",
        "searchHighlights",
        "searchScoreDetails",
        "searchSortValues",
        "geoNearDistance",
        "geoNearPoint",
        "recordId",
        "indexKey",
        "sortKey",
        "timeseriesBucketMinTime",
        "timeseriesBucketMaxTime",
        "vectorSearchScore",
    }
)


class QueryAnnotations:
    """What the operators of one compiled query record beyond matching (module doc)."""

    def __init__(self) -> None:
        #: (operator kind, the logical operators it stands under): "text" or "near".
        self.special: list[tuple[str, tuple[str, ...]]] = []
        #: The metadata the query provides, by ``$meta`` name.
        self.meta: dict[str, MetaProvider] = {}
        #: The order of a near query's results (a key per document, ascending).
        self.order: Optional[Callable[[Document], Any]] = None


@dataclass(frozen=True)
class MatchContext:
    """Everything a query is compiled with besides the filter itself."""

    collation: Optional[Collation] = None
    expressions: Optional[ExpressionLanguage] = None
    where: Optional[WhereLanguage] = None
    #: The ``let`` variables of the command, for ``$expr``.
    variables: Mapping[str, Any] = field(default_factory=dict)
    #: The operator table; None means the matcher's DEFAULT_OPERATORS.
    operators: Optional[OperatorTable] = None
    #: The random source of ``$sampleRate``.
    rng: Callable[[], float] = random.random
    #: Inside ``$elemMatch``: ``$where``, ``$text`` and ``$expr`` are refused there.
    in_elem_match: bool = False
    #: The logical operators (``$and``, ``$or``, ``$nor``, ``$not``, ``$elemMatch``)
    #: around the expression being compiled.
    enclosing: tuple[str, ...] = ()
    #: The annotations of the query being compiled (compile_filter makes them).
    annotations: Optional[QueryAnnotations] = None
