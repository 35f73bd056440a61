"""Find projections as a 7.0 mongod applies them (MongoDB manual, "Projection",
"$ (projection)", "$elemMatch (projection)", "$slice (projection)").

A projection either includes fields (``_id`` too unless excluded) or excludes them,
never both except for ``_id``; an embedded document of flags projects the fields of a
sub-document, and reaches into arrays of documents. An inclusion keeps the document's
own field order; a field projected with ``$elemMatch`` comes after the fields kept, as
since 4.4; ``$slice`` keeps the field where it is and, alone, the rest of the document.
The positional ``a.$`` keeps the element of ``a`` that the query matched (the matcher's
:meth:`~mongocore.sim.engine.matcher.Matcher.match_position`).

``{field: {$meta: name}}`` adds a document's metadata after the projected fields:
``textScore`` (a ``$text`` query's score), ``geoNearDistance`` and ``geoNearPoint``
(a near query's); the caller passes the query's metadata (Matcher.meta). The other
names a 7.0 server knows (``indexKey``, ``recordId``, ``sortKey``, the Atlas Search
ones) are refused with NotImplemented (238): their values depend on a query plan or on
Atlas Search, which the simulator does not have. Aggregation expressions in a find
projection need the expression language; until it comes, they are refused with 238.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.context import META_NAMES, MatchContext
from mongocore.sim.engine.matcher import DEFAULT_CONTEXT, compile_filter
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.values import MISSING, is_number, numeric_value

__all__ = ["MetaValues", "Projection", "compile_projection", "meta_name"]

#: A query's metadata: (``$meta`` name, document) -> value, MISSING when it has none.
MetaValues = Callable[[str, Document], Any]

#: The ``$meta`` names the engine provides (module doc).
PROVIDED_META = frozenset({"textScore", "geoNearDistance", "geoNearPoint"})


def meta_name(argument: Any) -> str:
    """The name of a ``{$meta: name}``, checked as the server checks it."""
    if not isinstance(argument, str):
        raise CommandError(17307, "$meta expects a string argument")
    if argument not in META_NAMES:
        raise CommandError(17308, f"Unsupported argument to $meta: {argument}")
    if argument not in PROVIDED_META:
        raise CommandError(
            238,
            f'$meta: "{argument}" is not implemented by the simulator (it has no query plans'
            " and no Atlas Search)",
        )
    return argument


_INCLUDE, _EXCLUDE = "include", "exclude"


class _Tree:
    """The projected fields under one document level."""

    def __init__(self) -> None:
        self.children: dict[str, Any] = {}  # name -> _Tree | flag str | _Special


class _Special:
    def __init__(self, kind: str, argument: Any, context: MatchContext) -> None:
        self.kind = kind
        self.argument = argument
        if kind == "$elemMatch":
            if not isinstance(argument, Mapping):
                raise CommandError(2, "elemMatch: Invalid argument, object required.")
            self.matcher = compile_filter(argument, context)
        elif kind == "$slice":
            self.skip, self.limit = _slice_arguments(argument)


def _slice_arguments(argument: Any) -> tuple[Optional[int], int]:
    if is_number(argument):
        return None, int(numeric_value(argument))
    if isinstance(argument, list) and len(argument) == 2:
        if not all(is_number(v) for v in argument):
            raise CommandError(28724, "First argument to $slice must be an array")
        skip, limit = (int(numeric_value(v)) for v in argument)
        if limit <= 0:
            raise CommandError(28724, f"$slice limit must be positive, got: {limit}")
        return skip, limit
    raise CommandError(28667, "$slice only supports numbers and [skip, limit] arrays")


def _flag(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return _INCLUDE if value else _EXCLUDE
    if is_number(value):
        return _INCLUDE if numeric_value(value) != 0 else _EXCLUDE
    return None


class Projection:
    """A compiled find projection."""

    def __init__(self, spec: Mapping[str, Any], context: MatchContext = DEFAULT_CONTEXT) -> None:
        self.spec = spec
        self.mode: Optional[str] = None
        self.include_id = True
        self.positional: Optional[str] = None
        self.tree = _Tree()
        self._seen: list[str] = []
        #: The ``$meta`` fields: (field name, metadata name), in the spec's order.
        self.metas: list[tuple[str, str]] = []
        for name, value in spec.items():
            self._add(str(name), value, context)
        if self.mode is None:
            # {_id: 1} alone is an inclusion of _id only; {_id: 0} an exclusion.
            self.mode = _INCLUDE if "_id" in self._seen else _EXCLUDE

    @property
    def needs_position(self) -> bool:
        """True when the projection has a positional ``$`` (the caller passes the
        position of the query's match)."""
        return self.positional is not None

    def _set_mode(self, mode: str, path: str) -> None:
        if self.mode is None:
            self.mode = mode
        elif self.mode != mode:
            if mode == _EXCLUDE:
                raise CommandError(
                    31254, f"Cannot do exclusion on field {path} in inclusion projection"
                )
            raise CommandError(
                31253, f"Cannot do inclusion on field {path} in exclusion projection"
            )

    def _add(self, path: str, value: Any, context: MatchContext) -> None:
        if isinstance(value, Mapping) and value and not str(next(iter(value))).startswith("$"):
            for sub, sub_value in value.items():
                self._add(f"{path}.{sub}", sub_value, context)
            return
        if path.endswith(".$"):
            if self.positional is not None:
                raise CommandError(
                    31276, "Cannot specify more than one positional projection per query."
                )
            path = path[:-2]
            self.positional = path
            self._set_mode(_INCLUDE, path)
            self._place(path, _INCLUDE)
            return
        if "$" in path.split("."):
            raise CommandError(
                31394,
                "As of 4.4, it's illegal to specify positional operator in the middle of a "
                "path.Positional projection may only be used at the end, for example: a.b.$. "
                "If the query previously used a form like a.b.$.d, remove the parts following "
                "the '$' and the results will be equivalent.",
            )
        if isinstance(value, Mapping) and value:
            operator = str(next(iter(value)))
            if operator in ("$elemMatch", "$slice") and len(value) == 1:
                if operator == "$elemMatch":
                    if "." in path:
                        raise CommandError(
                            31275, "Cannot use $elemMatch projection on a nested field."
                        )
                    self._set_mode(_INCLUDE, path)
                self._place(path, _Special(operator, value[operator], context))
                return
            if operator == "$meta" and len(value) == 1:
                name = meta_name(value["$meta"])
                if "." in path:
                    raise CommandError(
                        238, "$meta on an embedded field is not implemented by the simulator"
                    )
                self._check_collision(path)
                self._seen.append(path)
                self.metas.append((path, name))
                return
            raise CommandError(
                238, "expressions in a find projection are not implemented by the simulator"
            )
        flag = _flag(value)
        if flag is None:
            raise CommandError(
                238, "expressions in a find projection are not implemented by the simulator"
            )
        if path == "_id":
            self.include_id = flag == _INCLUDE
            if flag == _EXCLUDE:
                return
            self._place(path, flag)
            return
        self._set_mode(flag, path)
        self._place(path, flag)

    def _check_collision(self, path: str) -> None:
        for seen in self._seen:
            if seen == path or path.startswith(seen + "."):
                raise CommandError(
                    31250, f"Path collision at {path} remaining portion {path[len(seen) + 1 :]}"
                )
            if seen.startswith(path + "."):
                raise CommandError(31250, f"Path collision at {path}")

    def _place(self, path: str, leaf: Any) -> None:
        for seen in self._seen:
            if seen == path or path.startswith(seen + "."):
                raise CommandError(
                    31250, f"Path collision at {path} remaining portion {path[len(seen) + 1 :]}"
                )
            if seen.startswith(path + "."):
                raise CommandError(31250, f"Path collision at {path}")
        self._seen.append(path)
        tree = self.tree
        parts = path.split(".")
        for part in parts[:-1]:
            child = tree.children.get(part)
            if not isinstance(child, _Tree):
                child = _Tree()
                tree.children[part] = child
            tree = child
        tree.children[parts[-1]] = leaf

    # -- applying ----------------------------------------------------------------------

    @property
    def meta_names(self) -> set[str]:
        """The ``$meta`` names the projection asks for."""
        return {name for _, name in self.metas}

    def apply(
        self, doc: Document, position: Optional[int] = None, meta: Optional[MetaValues] = None
    ) -> Document:
        """The projected document (``doc`` is not changed); ``meta`` gives the query's
        metadata for ``$meta`` fields."""
        if self.positional is not None and position is None:
            raise CommandError(
                51246,
                "Executor error during find command :: caused by :: positional operator"
                " '.$' couldn't find a matching element in the array",
            )
        if self.mode == _INCLUDE:
            result = self._include(doc, self.tree, top=True, position=position, prefix="")
        else:
            result = self._exclude(doc, self.tree, top=True)
        for path, name in self.metas:
            value = meta(name, doc) if meta is not None else MISSING
            result.pop(path, None)
            if value is not MISSING:
                result[path] = value
        return result

    def _include(
        self,
        doc: Mapping[str, Any],
        tree: _Tree,
        *,
        top: bool,
        position: Optional[int],
        prefix: str,
    ) -> Document:
        out: Document = {}
        late: list[tuple[str, Any]] = []
        for name, value in doc.items():
            if top and name == "_id":
                if self.include_id:
                    out[name] = value
                continue
            spec = tree.children.get(name)
            if spec is None:
                continue
            path = prefix + name
            if isinstance(spec, _Tree):
                projected = self._include_value(value, spec, position, path + ".")
                if projected is not _DROP:
                    out[name] = projected
            elif isinstance(spec, _Special):
                if spec.kind == "$elemMatch":
                    if isinstance(value, list):
                        for element in value:
                            if isinstance(element, Mapping) and spec.matcher.matches(dict(element)):
                                late.append((name, [element]))
                                break
                else:
                    out[name] = _sliced(value, spec)
            elif spec == _INCLUDE:
                if path == self.positional:
                    if not isinstance(value, list) or position is None or position >= len(value):
                        raise CommandError(
                            51246,
                            "Executor error during find command :: caused by :: positional"
                            " operator '.$' couldn't find a matching element in the array",
                        )
                    out[name] = [value[position]]
                else:
                    out[name] = value
        out.update(late)
        return out

    def _include_value(self, value: Any, tree: _Tree, position: Optional[int], prefix: str) -> Any:
        if isinstance(value, Mapping):
            return self._include(value, tree, top=False, position=position, prefix=prefix)
        if isinstance(value, list):
            return [
                self._include_value(element, tree, position, prefix)
                for element in value
                if isinstance(element, (Mapping, list))
            ]
        return _DROP

    def _exclude(self, doc: Mapping[str, Any], tree: _Tree, *, top: bool) -> Document:
        out: Document = {}
        for name, value in doc.items():
            if top and name == "_id" and not self.include_id:
                continue
            spec = tree.children.get(name)
            if spec is None or spec == _INCLUDE:
                out[name] = value
            elif isinstance(spec, _Tree):
                out[name] = self._exclude_value(value, spec)
            elif isinstance(spec, _Special):
                out[name] = _sliced(value, spec) if spec.kind == "$slice" else value
            # _EXCLUDE: left out
        return out

    def _exclude_value(self, value: Any, tree: _Tree) -> Any:
        if isinstance(value, Mapping):
            return self._exclude(value, tree, top=False)
        if isinstance(value, list):
            return [self._exclude_value(element, tree) for element in value]
        return value


_DROP: Any = object()


def _sliced(value: Any, spec: _Special) -> Any:
    if not isinstance(value, list):
        return value
    if spec.skip is None:
        limit = spec.limit
        return value[:limit] if limit >= 0 else value[limit:]
    skip = spec.skip
    start = skip if skip >= 0 else max(len(value) + skip, 0)
    return value[start : start + spec.limit]


def compile_projection(spec: Any, context: MatchContext = DEFAULT_CONTEXT) -> Optional[Projection]:
    """Parse a find projection; None for no projection (an empty document included)."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise CommandError(14, "Expected projection to be an object")
    if not spec:
        return None
    return Projection(spec, context)
