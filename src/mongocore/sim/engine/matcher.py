"""The query matcher: a filter compiled once, then tested against documents (MongoDB
manual, "Query Predicates"; the server's ``MatchExpressionParser``).

:func:`compile_filter` parses a filter as a 7.0 server parses it, with the server's
errors for a bad one, into a tree of nodes; :meth:`Matcher.matches` runs the tree on a
document. A node is a function of a document (and of a list in which it records the
array position a positional ``$`` refers to); a field node takes the values its path
reaches (paths.py) and is true if one of them passes its test (query_operators.py).
The negations (``$ne``, ``$nin``, ``$not``, ``$exists: false``) are true when no value
passes the positive test, as on a server.

What the matcher needs from outside comes through the :class:`MatchContext`
(context.py): the collation of string comparisons, the expression language of
``$expr``, the JavaScript of ``$where``, and the operator table where ``$text`` and the
geo operators plug in.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Callable, Optional

from bson import Regex

from mongocore.sim import json_schema
from mongocore.sim.codes import CommandError
from mongocore.sim.engine.context import (
    MatchContext,
    OperatorTable,
    QueryAnnotations,
    TopLevelOperator,
    ValueTest,
)
from mongocore.sim.engine.paths import Document, candidates, split
from mongocore.sim.engine.query_operators import (
    bad_value,
    equality_test,
    is_operator_document,
    parse_bits,
    parse_comparison,
    parse_in,
    parse_mod,
    parse_size,
    parse_type,
    regex_test,
    regex_value_test,
)
from mongocore.sim.engine.values import MISSING, UNDEFINED, is_number, numeric_value, regex_flags

__all__ = [
    "DEFAULT_CONTEXT",
    "DEFAULT_OPERATORS",
    "Matcher",
    "Node",
    "compile_filter",
    "truthy",
]

#: A compiled predicate: the document, and where to record the positional index.
Node = Callable[[Document, Optional[list[int]]], bool]

DEFAULT_CONTEXT = MatchContext()


class Matcher:
    """A compiled filter."""

    __slots__ = ("_node", "annotations", "context", "filter", "id_values")

    def __init__(self, flt: Mapping[str, Any], node: Node, context: MatchContext) -> None:
        self.filter = flt
        self.context = context
        self._node = node
        #: What ``$text`` and the near operators recorded (context.py).
        self.annotations = context.annotations or QueryAnnotations()
        #: The ``_id`` values the filter pins ``_id`` to (``{_id: v}``, ``{_id: {$eq:
        #: v}}``, ``{_id: {$in: [...]}}`` at the top level), for an index lookup; None
        #: when the filter does not pin it. A match must still be confirmed.
        self.id_values: Optional[list[Any]] = _id_values(flt)

    def matches(self, doc: Document) -> bool:
        """True if ``doc`` matches the filter."""
        return self._node(doc, None)

    def match_position(self, doc: Document) -> tuple[bool, Optional[int]]:
        """Whether ``doc`` matches, and the array index a positional ``$`` refers to."""
        details: list[int] = []
        matched = self._node(doc, details)
        return matched, (details[-1] if details else None)

    def has_meta(self, name: str) -> bool:
        """True when the query provides the ``$meta`` value ``name`` (textScore with a
        ``$text``, geoNearDistance and geoNearPoint with a near query)."""
        return name in self.annotations.meta

    def meta(self, name: str, doc: Document) -> Any:
        """The ``$meta`` value ``name`` of a document the query matched."""
        return self.annotations.meta[name](doc)


def compile_filter(flt: Any, context: MatchContext = DEFAULT_CONTEXT) -> Matcher:
    """Parse ``flt`` as a 7.0 server parses a query filter."""
    if not isinstance(flt, Mapping):
        raise CommandError(14, "Expected a query filter document")
    context = dataclasses.replace(context, annotations=QueryAnnotations(), enclosing=())
    node = _compile_document(flt, context)
    assert context.annotations is not None
    _check_special(context.annotations)
    return Matcher(flt, node, context)


def _check_special(annotations: QueryAnnotations) -> None:
    # The server's CanonicalQuery::isValid rules, in its order.
    texts = [where for kind, where in annotations.special if kind == "text"]
    nears = [where for kind, where in annotations.special if kind == "near"]
    if len(texts) > 1:
        raise bad_value("Too many text expressions")
    if texts and "$nor" in texts[0]:
        raise bad_value("text expression not allowed in nor")
    if len(nears) > 1:
        raise bad_value("Too many geoNear expressions")
    if nears and any(name != "$and" for name in nears[0]):
        raise bad_value("geoNear must be top-level expr")
    if texts and nears:
        raise bad_value("text and geoNear not allowed in same query")


def truthy(value: Any) -> bool:
    """Aggregation truthiness ($expr, $cond): false, null, undefined, missing and zero
    are false; everything else (empty strings and arrays included) is true."""
    if value is None or value is MISSING or value is UNDEFINED or value is False:
        return False
    if is_number(value):
        number = numeric_value(value)
        return bool(number != 0)
    return True


def _id_values(flt: Mapping[str, Any]) -> Optional[list[Any]]:
    if "_id" not in flt:
        return None
    value = flt["_id"]
    if isinstance(value, (Regex,)) or (isinstance(value, Mapping) and not value):
        return None
    if is_operator_document(value):
        if len(value) != 1:
            return None
        ((op, arg),) = value.items()
        if op == "$eq" and not isinstance(arg, (list, Regex)):
            return [arg]
        if op == "$in" and isinstance(arg, list):
            if any(isinstance(v, (list, Regex)) or v is None for v in arg):
                return None
            return list(arg)
        return None
    if isinstance(value, (list, Regex)) or value is None:
        return None
    return [value]


# -- documents and logical operators ------------------------------------------------------


def _all(nodes: list[Node]) -> Node:
    if len(nodes) == 1:
        return nodes[0]

    def node(doc: Document, details: Optional[list[int]]) -> bool:
        return all(child(doc, details) for child in nodes)

    return node


def _compile_document(flt: Mapping[str, Any], context: MatchContext) -> Node:
    nodes = [_compile_entry(str(name), value, context) for name, value in flt.items()]
    if not nodes:
        return lambda doc, details: True
    return _all(nodes)


def _operators(context: MatchContext) -> OperatorTable:
    return context.operators if context.operators is not None else DEFAULT_OPERATORS


def _compile_entry(name: str, value: Any, context: MatchContext) -> Node:
    if name.startswith("$"):
        top = _operators(context).top_level.get(name)
        if top is None:
            if name in _operators(context).known:
                raise _not_implemented(name)
            raise bad_value(
                f"unknown top level operator: {name}. If you have a field name that starts"
                " with a '$' symbol, consider using $getField or $setField."
            )
        return top(value, context)
    return compile_field(name, value, context)


def _not_implemented(name: str) -> CommandError:
    return CommandError(238, f"{name} is not implemented by the simulator")


def _clauses(name: str, value: Any, context: MatchContext) -> list[Node]:
    if not isinstance(value, list):
        raise bad_value(f"{name} must be an array")
    if not value:
        raise bad_value("$and/$or/$nor must be a nonempty array")
    nodes = []
    inner = dataclasses.replace(context, enclosing=(*context.enclosing, name))
    for clause in value:
        if not isinstance(clause, Mapping):
            raise bad_value("$or/$and/$nor entries need to be full objects")
        nodes.append(_compile_document(clause, inner))
    return nodes


def _and(value: Any, context: MatchContext) -> Node:
    return _all(_clauses("$and", value, context))


def _or(value: Any, context: MatchContext) -> Node:
    nodes = _clauses("$or", value, context)

    def node(doc: Document, details: Optional[list[int]]) -> bool:
        return any(child(doc, details) for child in nodes)

    return node


def _nor(value: Any, context: MatchContext) -> Node:
    nodes = _clauses("$nor", value, context)

    def node(doc: Document, details: Optional[list[int]]) -> bool:
        return not any(child(doc, None) for child in nodes)

    return node


def _expr(value: Any, context: MatchContext) -> Node:
    if context.in_elem_match:
        raise bad_value("$expr can only be applied to the top-level document")
    if context.expressions is None:
        raise _not_implemented("$expr")
    evaluate = context.expressions.compile(value, context.variables, context.collation)
    return lambda doc, details: truthy(evaluate(doc))


def _where(value: Any, context: MatchContext) -> Node:
    if context.in_elem_match:
        raise bad_value("$where can only be applied to the top-level document")
    if context.where is None:
        raise _not_implemented("$where")
    run = context.where.compile(value)
    return lambda doc, details: run(doc)


def _json_schema(value: Any, context: MatchContext) -> Node:
    # The keywords' checks and evaluation are sim/json_schema.py's, the module that
    # builds a failed validation's details from the same rules.
    if not isinstance(value, Mapping):
        raise CommandError(14, "$jsonSchema must be an object")
    json_schema.check_schema(value)
    schema = value
    return lambda doc, details: not json_schema.schema_failures(schema, doc)


def _constant(name: str, result: bool) -> TopLevelOperator:
    def parse(value: Any, context: MatchContext) -> Node:
        if not (is_number(value) and numeric_value(value) == 1):
            raise CommandError(9, f"{name} must be an integer value of 1")
        return lambda doc, details: result

    return parse


def _comment(value: Any, context: MatchContext) -> Node:
    return lambda doc, details: True


def _sample_rate(value: Any, context: MatchContext) -> Node:
    if not is_number(value):
        raise bad_value("argument to $sampleRate must be a numeric type")
    rate = float(numeric_value(value))
    if not 0 <= rate <= 1:
        raise bad_value("numeric argument to $sampleRate must be in [0, 1]")
    rng = context.rng
    return lambda doc, details: rng() < rate


# -- fields --------------------------------------------------------------------------------


def _field_node(path: str, test: ValueTest, expand_leaf: bool = True) -> Node:
    parts = split(path)
    if len(parts) == 1:
        name = parts[0]

        def top(doc: Document, details: Optional[list[int]]) -> bool:
            value = doc.get(name, MISSING)
            if value is MISSING and name in doc:
                value = doc[name]
            if type(value) is not list:
                return test(value)
            if expand_leaf:
                for position, element in enumerate(value):
                    if test(element):
                        if details is not None:
                            details.append(position)
                        return True
            return test(value)

        return top

    def node(doc: Document, details: Optional[list[int]]) -> bool:
        for value, index in candidates(doc, parts, expand_leaf):
            if test(value):
                if details is not None and index is not None:
                    details.append(index)
                return True
        return False

    return node


def _negate(node: Node) -> Node:
    return lambda doc, details: not node(doc, None)


def compile_field(path: str, value: Any, context: MatchContext) -> Node:
    """The node of ``{path: value}``: an equality, or a document of operators."""
    if isinstance(value, (Regex,)) or _is_native_regex(value):
        return _field_node(path, regex_value_test(value))
    if is_operator_document(value):
        return _operator_document(path, value, context)
    return _field_node(path, equality_test(value, context))


def _is_native_regex(value: Any) -> bool:
    return isinstance(value, re.Pattern)


def _operator_document(path: str, spec: Mapping[str, Any], context: MatchContext) -> Node:
    nodes: list[Node] = []
    table = _operators(context).field
    for name, argument in spec.items():
        op = str(name)
        if op == "$options":
            if "$regex" not in spec:
                raise bad_value("$options needs a $regex")
            continue
        if not op.startswith("$"):
            raise bad_value(f"unknown operator: {op}")
        builtin = _FIELD_BUILDERS.get(op)
        if builtin is not None:
            nodes.append(builtin(path, argument, spec, context))
            continue
        plugin = table.get(op)
        if plugin is not None:
            if plugin.node is not None:
                nodes.append(plugin.node(path, argument, spec, context))
            elif plugin.parse is not None:
                nodes.append(
                    _field_node(path, plugin.parse(argument, spec, context), plugin.expand_leaf)
                )
            continue
        if op in _operators(context).known:
            raise _not_implemented(op)
        raise bad_value(f"unknown operator: {op}")
    return _all(nodes) if nodes else (lambda doc, details: True)


FieldBuilder = Callable[[str, Any, Mapping[str, Any], MatchContext], Node]


def _comparison(op: str) -> FieldBuilder:
    def build(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
        return _field_node(path, parse_comparison(op, argument, context))

    return build


def _ne(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    if isinstance(argument, Regex) or _is_native_regex(argument):
        raise bad_value("Can't have regex as arg to $ne.")
    return _negate(_field_node(path, equality_test(argument, context)))


def _in(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    return _field_node(path, parse_in("$in", argument, context))


def _nin(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    return _negate(_field_node(path, parse_in("$nin", argument, context)))


def _exists(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    present = _field_node(path, lambda value: value is not MISSING, expand_leaf=False)
    wanted = truthy(argument) if not isinstance(argument, str) else True
    return present if wanted else _negate(present)


def _type(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    return _field_node(path, parse_type(argument))


def _size(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    return _field_node(path, parse_size(argument), expand_leaf=False)


def _mod(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    return _field_node(path, parse_mod(argument))


def _regex(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    options = spec.get("$options", "")
    if isinstance(argument, Regex) or _is_native_regex(argument):
        flags = regex_flags(argument)
        if "$options" in spec and flags:
            raise CommandError(51075, "options set in both $regex and $options")
        return _field_node(path, regex_test(str(argument.pattern), flags or str(options)))
    if not isinstance(argument, str):
        raise bad_value("$regex has to be a string")
    if not isinstance(options, str):
        raise bad_value("$options has to be a string")
    return _field_node(path, regex_test(argument, options))


def _bits(op: str) -> FieldBuilder:
    def build(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
        return _field_node(path, parse_bits(op, argument))

    return build


def _not(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    if isinstance(argument, Regex) or _is_native_regex(argument):
        return _negate(_field_node(path, regex_value_test(argument)))
    if not isinstance(argument, Mapping):
        raise bad_value("$not needs a regex or a document")
    if not argument:
        raise bad_value("$not cannot be empty")
    if not is_operator_document(argument):
        raise bad_value("unknown operator: " + str(next(iter(argument))))
    inner = dataclasses.replace(context, enclosing=(*context.enclosing, "$not"))
    return _negate(_operator_document(path, argument, inner))


def _elem_match(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    if not isinstance(argument, Mapping):
        raise bad_value("$elemMatch needs an Object")
    inner = MatchContext(
        collation=context.collation,
        expressions=context.expressions,
        where=context.where,
        variables=context.variables,
        operators=context.operators,
        rng=context.rng,
        in_elem_match=True,
        enclosing=(*context.enclosing, "$elemMatch"),
        annotations=context.annotations,
    )
    first = next(iter(argument), "")
    value_form = is_operator_document(argument) and first not in _LOGICAL
    if value_form:
        # {$elemMatch: {$gt: 1, $lt: 5}}: one element passes every operator.
        element_node = _operator_document("x", argument, inner)

        def element_matches(element: Any) -> bool:
            return element_node({"x": element}, None)

    else:
        document_node = _compile_document(argument, inner)

        def element_matches(element: Any) -> bool:
            if isinstance(element, Mapping):
                return document_node(dict(element), None)
            if isinstance(element, list):
                return document_node({str(i): v for i, v in enumerate(element)}, None)
            return False

    parts = split(path)

    def node(doc: Document, details: Optional[list[int]]) -> bool:
        for value, index in candidates(doc, parts, expand_leaf=False):
            if not isinstance(value, list):
                continue
            for position, element in enumerate(value):
                if element_matches(element):
                    if details is not None:
                        details.append(position if index is None else index)
                    return True
        return False

    return node


def _all_values(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    if not isinstance(argument, list):
        raise bad_value("$all needs an array")
    if not argument:
        return lambda doc, details: False
    elem_matches = [isinstance(v, Mapping) and len(v) == 1 and "$elemMatch" in v for v in argument]
    if any(elem_matches):
        if not all(elem_matches):
            raise bad_value("$all/$elemMatch has to be consistent")
        return _all([_elem_match(path, v["$elemMatch"], v, context) for v in argument])
    nodes = []
    for value in argument:
        if is_operator_document(value):
            raise bad_value("no $ expressions in $all")
        if isinstance(value, Regex) or _is_native_regex(value):
            nodes.append(_field_node(path, regex_value_test(value)))
        else:
            nodes.append(_field_node(path, equality_test(value, context)))
    return _all(nodes)


def _eq(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
    return _field_node(path, equality_test(argument, context))


_LOGICAL = frozenset({"$and", "$or", "$nor", "$where", "$expr", "$text", "$jsonSchema"})

_FIELD_BUILDERS: dict[str, FieldBuilder] = {
    "$eq": _eq,
    "$ne": _ne,
    "$gt": _comparison("$gt"),
    "$gte": _comparison("$gte"),
    "$lt": _comparison("$lt"),
    "$lte": _comparison("$lte"),
    "$in": _in,
    "$nin": _nin,
    "$exists": _exists,
    "$type": _type,
    "$size": _size,
    "$mod": _mod,
    "$regex": _regex,
    "$not": _not,
    "$elemMatch": _elem_match,
    "$all": _all_values,
    "$bitsAllSet": _bits("$bitsAllSet"),
    "$bitsAnySet": _bits("$bitsAnySet"),
    "$bitsAllClear": _bits("$bitsAllClear"),
    "$bitsAnyClear": _bits("$bitsAnyClear"),
}

#: The matcher's own operators; the geo and text operators are known but come from
#: their modules (an extended table), and are refused with 238 until they do.
DEFAULT_OPERATORS = OperatorTable(
    field={},
    top_level={
        "$and": _and,
        "$or": _or,
        "$nor": _nor,
        "$expr": _expr,
        "$where": _where,
        "$jsonSchema": _json_schema,
        "$comment": _comment,
        "$alwaysTrue": _constant("$alwaysTrue", True),
        "$alwaysFalse": _constant("$alwaysFalse", False),
        "$sampleRate": _sample_rate,
    },
    known=frozenset(
        {
            "$text",
            "$geoWithin",
            "$geoIntersects",
            "$near",
            "$nearSphere",
            "$within",
            "$maxDistance",
            "$minDistance",
        }
    ),
)
