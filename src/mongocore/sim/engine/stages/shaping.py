"""The stages that reshape documents with expressions: ``$project``, ``$addFields``
(``$set``), ``$unset``, ``$replaceRoot``, ``$replaceWith`` and ``$redact`` (MongoDB
manual, each stage's page; the server's projection executors).

A projection is a tree of nodes, one per document level. An inclusion keeps the
fields it names in the order the document has them (``_id`` too unless excluded),
looking into arrays of documents and dropping other array elements; then its computed
fields are set in the order the specification gives them (a field the document had
keeps its place, a new one comes last). An exclusion drops the fields it names and
keeps everything else where it is. ``$addFields`` sets its fields on the whole
document: a path through an array of documents sets the field in each of them, and a
scalar on the way is replaced by a document of the new fields, as on a server. A field
whose expression evaluates to nothing (``$$REMOVE``, a missing path) is left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import Frame, Node, Scope, parse
from mongocore.sim.engine.expressions.core import validate_field_name
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.render import render_document, value_string
from mongocore.sim.engine.stages.common import type_name_of
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.values import MISSING, is_number, numeric_value

__all__ = ["AddFields", "Projection", "ReplaceRoot", "parse_projection"]

_INCLUDE, _EXCLUDE, _COMPUTED = "include", "exclude", "computed"


class _Level:
    """The projected fields at one level of a document."""

    __slots__ = ("children", "computed", "expressions", "fields", "order")

    def __init__(self) -> None:
        #: Fields included (an inclusion) or excluded (an exclusion) at this level.
        self.fields: set[str] = set()
        self.children: dict[str, _Level] = {}
        self.expressions: dict[str, Node] = {}
        #: Expressions and children in the order the specification gives them.
        self.order: list[str] = []
        #: True when this level or one below computes a field.
        self.computed = False

    def child(self, name: str) -> _Level:
        level = self.children.get(name)
        if level is None:
            level = _Level()
            self.children[name] = level
            self.order.append(name)
        return level

    # -- applying -------------------------------------------------------------------

    def include(self, doc: Mapping[str, Any]) -> Document:
        """The included fields (computed ones are set afterwards, on the whole tree)."""
        out: Document = {}
        fields, children = self.fields, self.children
        for name, value in doc.items():
            if name in fields:
                out[name] = value
            elif name in children:
                projected = children[name].include_value(value)
                if projected is not MISSING:
                    out[name] = projected
        return out

    def include_value(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return self.include(value)
        if isinstance(value, list):
            return [
                self.include_value(element)
                for element in value
                if isinstance(element, (Mapping, list))
            ]
        return MISSING

    def set_computed(self, out: Document, frame: Frame) -> None:
        """Set the computed fields of this level (and below) on ``out``."""
        for name in self.order:
            expression = self.expressions.get(name)
            if expression is not None:
                value = expression(frame)
            else:
                child = self.children[name]
                if not child.computed:
                    continue
                value = child.computed_value(out.get(name, MISSING), frame)
            if value is MISSING:
                out.pop(name, None)
            else:
                out[name] = value

    def computed_value(self, value: Any, frame: Frame) -> Any:
        if isinstance(value, Mapping):
            out = dict(value)
            self.set_computed(out, frame)
            return out
        if isinstance(value, list):
            return [self.computed_value(element, frame) for element in value]
        out = {}
        self.set_computed(out, frame)
        return out

    def exclude(self, doc: Mapping[str, Any]) -> Document:
        out: Document = {}
        fields, children = self.fields, self.children
        for name, value in doc.items():
            if name in fields:
                continue
            child = children.get(name)
            out[name] = value if child is None else child.exclude_value(value)
        return out

    def exclude_value(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return self.exclude(value)
        if isinstance(value, list):
            return [self.exclude_value(element) for element in value]
        return value


def _flag(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return _INCLUDE if value else _EXCLUDE
    if is_number(value):
        return _INCLUDE if numeric_value(value) != 0 else _EXCLUDE
    return None


class _Parser:
    """Builds the tree of a ``$project`` (``mode`` None) or ``$addFields``
    (``mode`` "computed": every value is an expression)."""

    def __init__(self, scope: Scope, *, add_fields: bool) -> None:
        self.scope = scope
        self.add_fields = add_fields
        self.root = _Level()
        self.mode: Optional[str] = _COMPUTED if add_fields else None
        self.id_flag: Optional[str] = None
        self.leaves: list[str] = []

    def parse(self, spec: Mapping[str, Any]) -> None:
        for name, value in spec.items():
            self._entry(str(name), value, ())

    def _set_mode(self, kind: str, path: str) -> None:
        if self.mode is None:
            self.mode = _EXCLUDE if kind == _EXCLUDE else _INCLUDE
            return
        if self.mode == _EXCLUDE and kind == _INCLUDE:
            raise CommandError(
                31253, f"Cannot do inclusion on field {path} in exclusion projection"
            )
        if self.mode == _EXCLUDE and kind == _COMPUTED:
            raise CommandError(
                31252, "Cannot use expression other than $meta in exclusion projection"
            )
        if self.mode == _INCLUDE and kind == _EXCLUDE:
            raise CommandError(
                31254, f"Cannot do exclusion on field {path} in inclusion projection"
            )

    def _collide(self, path: str) -> None:
        for seen in self.leaves:
            if seen == path or path.startswith(seen + "."):
                rest = path[len(seen) + 1 :]
                raise CommandError(31250, f"Path collision at {path} remaining portion {rest}")
            if seen.startswith(path + "."):
                raise CommandError(
                    31250, f"Path collision at {seen} remaining portion {seen[len(path) + 1 :]}"
                )
        self.leaves.append(path)

    def _entry(self, name: str, value: Any, prefix: tuple[str, ...]) -> None:
        if not name:
            raise CommandError(40352, "FieldPath cannot be constructed with empty string")
        parts = name.split(".")
        for part in parts:
            validate_field_name(part)
        path_parts = (*prefix, *parts)
        path = ".".join(path_parts)
        if isinstance(value, Mapping) and (not value or not str(next(iter(value))).startswith("$")):
            if not value:
                if self.add_fields:
                    self._computed(path_parts, path, {})
                    return
                raise CommandError(
                    51270,
                    "An empty sub-projection is not a valid value. Found empty object at path"
                    f" {path}",
                )
            for sub, sub_value in value.items():
                if str(sub).startswith("$"):
                    raise CommandError(
                        16410,
                        "FieldPath field names may not start with '$'. Consider using $getField"
                        " or $setField.",
                    )
                self._entry(str(sub), sub_value, path_parts)
            return
        flag = None if self.add_fields else _flag(value)
        if flag is None:
            self._computed(path_parts, path, value)
            return
        self._collide(path)
        if path == "_id":
            self.id_flag = flag
            return
        self._set_mode(flag, path)
        level = self.root
        for part in path_parts[:-1]:
            level = level.child(part)
        level.fields.add(path_parts[-1])

    def _computed(self, parts: tuple[str, ...], path: str, value: Any) -> None:
        if not self.add_fields:
            if path == "_id":
                self.id_flag = _COMPUTED
            else:
                self._set_mode(_COMPUTED, path)
        self._collide(path)
        node = parse(value, self.scope)
        level = self.root
        level.computed = True
        for part in parts[:-1]:
            level = level.child(part)
            level.computed = True
        if parts[-1] not in level.expressions and parts[-1] not in level.children:
            level.order.append(parts[-1])
        level.expressions[parts[-1]] = node


class Projection(Stage):
    """``$project`` (and ``$unset``): an inclusion or an exclusion."""

    def __init__(self, root: _Level, inclusion: bool, context: PipelineContext) -> None:
        self.root = root
        self.inclusion = inclusion
        self.context = context

    def apply(self, doc: Document) -> Document:
        root = self.root
        if not self.inclusion:
            return root.exclude(doc)
        out = root.include(doc)
        if root.computed:
            root.set_computed(out, self.context.expressions.frame(doc))
        return out

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        apply = self.apply
        return (apply(doc) for doc in docs)


def parse_projection(spec: Any, context: PipelineContext, *, stage: str = "$project") -> Projection:
    """A ``$project`` specification, with the server's errors (prefixed as the
    server's ``Invalid $project`` context does)."""
    if not isinstance(spec, Mapping):
        raise CommandError(15969, f"{stage} specification must be an object")
    try:
        if not spec:
            raise CommandError(51272, "projection specification must have at least one field")
        parser = _Parser(context.scope, add_fields=False)
        parser.parse(spec)
    except CommandError as exc:
        raise CommandError(exc.code, f"Invalid {stage} :: caused by :: {exc.errmsg}") from exc
    root = parser.root
    inclusion = parser.mode in (_INCLUDE, None) and not (
        parser.mode is None and parser.id_flag == _EXCLUDE
    )
    if inclusion:
        if parser.id_flag in (None, _INCLUDE) and "_id" not in root.children:
            root.fields.add("_id")
    elif parser.id_flag == _EXCLUDE:
        root.fields.add("_id")
    return Projection(root, inclusion, context)


register("$project")(parse_projection)


@register("$unset")
def parse_unset(spec: Any, context: PipelineContext) -> Stage:
    fields = [spec] if isinstance(spec, str) else spec
    if not isinstance(fields, list):
        raise CommandError(31002, "$unset specification must be a string or an array")
    if not fields:
        raise CommandError(
            31119, "$unset specification must be a string or an array with at least one field"
        )
    if not all(isinstance(field, str) for field in fields):
        raise CommandError(
            31120, "$unset specification must be a string or an array containing only string values"
        )
    return parse_projection({field: 0 for field in fields}, context, stage="$unset")


class AddFields(Stage):
    def __init__(self, root: _Level, context: PipelineContext) -> None:
        self.root = root
        self.context = context

    def apply(self, doc: Document) -> Document:
        out = dict(doc)
        self.root.set_computed(out, self.context.expressions.frame(doc))
        return out

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        apply = self.apply
        return (apply(doc) for doc in docs)


def parse_add_fields(spec: Any, context: PipelineContext, stage: str = "$addFields") -> AddFields:
    if not isinstance(spec, Mapping):
        raise CommandError(
            40272, f"{stage} specification stage must be an object, got {type_name_of(spec)}"
        )
    parser = _Parser(context.scope, add_fields=True)
    parser.parse(spec)
    return AddFields(parser.root, context)


@register("$addFields")
def _parse_add_fields(spec: Any, context: PipelineContext) -> Stage:
    return parse_add_fields(spec, context)


@register("$set")
def _parse_set(spec: Any, context: PipelineContext) -> Stage:
    return parse_add_fields(spec, context, "$set")


class ReplaceRoot(Stage):
    def __init__(self, node: Node, context: PipelineContext, what: str) -> None:
        self.node = node
        self.context = context
        self.what = what

    def apply(self, doc: Document) -> Document:
        value = self.node(self.context.expressions.frame(doc))
        if not isinstance(value, Mapping):
            raise CommandError(
                40228,
                f"'{self.what}' must evaluate to an object, but resulting value was: "
                f"{value_string(value)}. Type of resulting value: '{type_name_of(value)}'."
                f" Input document: {render_document(doc)}",
            )
        return value if isinstance(value, dict) else dict(value)

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        apply = self.apply
        return (apply(doc) for doc in docs)


@register("$replaceRoot")
def parse_replace_root(spec: Any, context: PipelineContext) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            40229,
            f"expected an object as specification for $replaceRoot stage, got {type_name_of(spec)}",
        )
    for name in spec:
        if name != "newRoot":
            raise CommandError(40415, f"BSON field '$replaceRoot.{name}' is an unknown field.")
    if "newRoot" not in spec:
        raise CommandError(
            40414, "BSON field '$replaceRoot.newRoot' is missing but a required field"
        )
    return ReplaceRoot(parse(spec["newRoot"], context.scope), context, "newRoot")


@register("$replaceWith")
def parse_replace_with(spec: Any, context: PipelineContext) -> Stage:
    return ReplaceRoot(parse(spec, context.scope), context, "replacement document")


# -- $redact --------------------------------------------------------------------------------

_KEEP, _PRUNE, _DESCEND = "keep", "prune", "descend"


class Redact(Stage):
    def __init__(self, node: Node, current: int, context: PipelineContext) -> None:
        self.node = node
        self.current = current
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        for doc in docs:
            frame = self.context.expressions.frame(doc)
            result = self._object(doc, frame)
            if result is not MISSING:
                yield result

    def _object(self, obj: Mapping[str, Any], frame: Frame) -> Any:
        frame[self.current] = obj
        decision = self.node(frame)
        if decision == _KEEP and isinstance(decision, str):
            return obj
        if decision == _PRUNE and isinstance(decision, str):
            return MISSING
        if decision == _DESCEND and isinstance(decision, str):
            out: Document = {}
            for name, value in obj.items():
                if isinstance(value, Mapping):
                    kept = self._object(value, frame)
                    if kept is not MISSING:
                        out[name] = kept
                elif isinstance(value, list):
                    out[name] = self._array(value, frame)
                else:
                    out[name] = value
            return out
        raise CommandError(
            17053,
            "$redact's expression should not return anything aside from the variables $$KEEP,"
            f" $$DESCEND, and $$PRUNE, but returned {value_string(decision)}",
        )

    def _array(self, values: list[Any], frame: Frame) -> list[Any]:
        out = []
        for value in values:
            if isinstance(value, Mapping):
                kept = self._object(value, frame)
                if kept is not MISSING:
                    out.append(kept)
            elif isinstance(value, list):
                out.append(self._array(value, frame))
            else:
                out.append(value)
        return out


@register("$redact")
def parse_redact(spec: Any, context: PipelineContext) -> Stage:
    scope = context.scope.child()
    current = scope.define_system("CURRENT")
    scope.define_constant("KEEP", _KEEP)
    scope.define_constant("PRUNE", _PRUNE)
    scope.define_constant("DESCEND", _DESCEND)
    return Redact(parse(spec, scope), current, context)
