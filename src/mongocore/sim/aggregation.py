"""Aggregation over the engine's documents, through mongomock's pipeline (until the
engine has its own stages and expressions).

This is the only path on which the simulator still runs mongomock, and mongomock is
only a helper here: it evaluates a pipeline over a plain list of documents the engine
gave (:func:`run`), with the stages and expressions sim/pipeline_extensions.py adds
and the corrections of sim/mongomock_fixes.py. A ``$lookup``, ``$graphLookup`` or
``$unionWith`` reads other collections: those the pipeline names are copied into a
throwaway mongomock client first (:func:`database_for`). ``$expr`` in a query is
evaluated by :class:`PipelineExpressions`, the engine's ExpressionLanguage on the same
helper.

Under a collation the documents and the pipeline are wrapped
(:mod:`mongocore.sim.collation`), so that mongomock's comparisons, grouping and
sorting compare collated strings; the results are unwrapped.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional

import mongomock
import mongomock.aggregate

from mongocore.sim import mongomock_fixes, pipeline_extensions  # noqa: F401  (patch mongomock)
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, unwrap, wrap, wrap_query
from mongocore.sim.store_errors import translate_store_errors

if TYPE_CHECKING:
    from mongocore.sim.store import DataView

__all__ = [
    "MISSING",
    "PipelineExpressions",
    "database_for",
    "evaluate",
    "pipeline_sources",
    "run",
    "scratch_client",
]

Document = dict[str, Any]
#: mongomock's marker for a missing field (an expression that evaluated to nothing).
MISSING: Any = mongomock_fixes.MISSING
_Parser: Any = mongomock.aggregate._Parser
_parse_expression: Callable[..., Any] = mongomock.aggregate._parse_expression
_FOREIGN_STAGES = ("$lookup", "$graphLookup", "$unionWith")


def pipeline_sources(
    db: str, value: Any, out: Optional[list[tuple[str, str]]] = None
) -> list[tuple[str, str]]:
    """The collections a pipeline's ``$lookup``, ``$graphLookup`` and ``$unionWith``
    stages read (nested pipelines included)."""
    found: list[tuple[str, str]] = [] if out is None else out
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key in _FOREIGN_STAGES:
                source = (
                    inner.get("from", inner.get("coll")) if isinstance(inner, Mapping) else inner
                )
                if isinstance(source, str):
                    found.append((db, source))
                elif isinstance(source, Mapping) and isinstance(source.get("coll"), str):
                    found.append((str(source.get("db", db)), source["coll"]))
            pipeline_sources(db, inner, found)
    elif isinstance(value, list):
        for item in value:
            pipeline_sources(db, item, found)
    return found


def scratch_client(collections: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]]) -> Any:
    """A throwaway mongomock client holding these collections' documents, in order."""
    client: Any = mongomock.MongoClient()
    for (db, coll), docs in collections.items():
        if docs:
            client[db][coll].insert_many([dict(doc) for doc in docs])
        else:
            client[db].create_collection(coll)
    return client


def database_for(view: Optional[DataView], db: str, pipeline: Any) -> Any:
    """The mongomock database a pipeline's foreign stages read: the collections it names
    copied from ``view`` (None when it names none)."""
    sources = dict.fromkeys(pipeline_sources(db, pipeline))
    if not sources:
        return None
    if view is None:
        return mongomock.MongoClient()[db]
    client = scratch_client({ns: view.documents(*ns) for ns in sources if view.exists(*ns)})
    return client[db]


def run(
    docs: Sequence[Mapping[str, Any]],
    pipeline: Sequence[Any],
    *,
    view: Optional[DataView] = None,
    db: str = "",
    collation: Optional[Collation] = None,
) -> list[Document]:
    """The output of ``pipeline`` (no ``$out``/``$merge``) over ``docs`` (not changed)."""
    stages = list(pipeline)
    source = [copy.deepcopy(dict(doc)) for doc in docs]
    if collation is not None:
        if pipeline_sources(db, stages):
            raise CommandError(
                238, "$lookup, $graphLookup and $unionWith with a collation are not supported"
            )
        source = [wrap(doc, collation) for doc in source]
        stages = wrap_query(stages, collation)
    database = database_for(view, db, stages)
    try:
        results = list(mongomock.aggregate.process_pipeline(source, database, stages, None))  # type: ignore[no-untyped-call]
    except CommandError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, db) from exc
    return [unwrap(doc) for doc in results] if collation is not None else results


def evaluate(expression: Any, doc: Mapping[str, Any]) -> Any:
    """An aggregation expression's value for ``doc`` (MISSING for a missing field)."""
    try:
        return _Parser(doc, ignore_missing_keys=True).parse(expression)
    except KeyError:
        return MISSING


class PipelineExpressions:
    """The engine's ExpressionLanguage for ``$expr`` (``let`` variables are substituted
    into the query before it is compiled: sim/variables.py)."""

    def compile(
        self, expression: Any, variables: Mapping[str, Any], collation: Optional[Collation]
    ) -> Callable[[Document], Any]:
        wrapped = wrap_query(expression, collation) if collation is not None else expression
        # A server parses the expression first; mongomock checks it as it evaluates, so
        # it evaluates once against an empty document (a missing field is no error).
        with contextlib.suppress(KeyError):
            _check(wrapped, {})

        def evaluate_on(doc: Document) -> Any:
            target = wrap(doc, collation) if collation is not None else doc
            try:
                return _check(wrapped, target)
            except KeyError:
                return None  # a missing field: false, as mongomock's own $expr has it

        return evaluate_on


def _check(expression: Any, doc: Mapping[str, Any]) -> Any:
    try:
        value = _parse_expression(expression, doc, ignore_missing_keys=True)
    except CommandError:
        raise
    except KeyError:
        raise
    except Exception as exc:
        raise translate_store_errors(exc, "$expr") from exc
    return value
