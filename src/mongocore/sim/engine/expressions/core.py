"""The aggregation expression language's parser: operands, field paths, variables and
the operator registry (MongoDB manual, "Expressions", "Aggregation Variables"; the
server's ``Expression::parseOperand``, ``ExpressionFieldPath`` and
``VariablesParseState``).

An expression is compiled once into a tree of nodes; a node is a function of a
:data:`Frame`, the list of variable values one evaluation sees: ``frame[ROOT]`` is the
document (``$$ROOT``, and ``$$CURRENT`` unless a ``$let`` rebinds it), ``frame[META]``
its metadata (what ``$meta`` reads; None when it has none), and every variable that a
``$let``, ``$map``, ``$filter``, ``$reduce`` or a stage defines has a slot of its own,
handed out at parse time by the command's :class:`ExpressionContext`. Because each
definition has its own slot, an inner evaluation never overwrites an outer one's
variable, and no scope has to be restored after it (the server's Variables ids).

As the server's ``optimize()`` does before a pipeline runs, a node whose operands are
all constants is evaluated at parse time and replaced by its value: an error it raises
(``{$divide: [1, 0]}``) fails the command before any document is read, as on a server.

Operators register their parsers in :data:`OPERATORS` (one module per concept, see
the package). An operator a 7.0 server knows and the simulator does not evaluate is
in :data:`SERVER_OPERATORS` only and refused with NotImplemented (238); an unknown one is
InvalidPipelineOperator (168), as on a server.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from bson import Code, Timestamp
from bson.dbref import DBRef

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.render import render_document
from mongocore.sim.engine.values import MISSING

__all__ = [
    "META",
    "OPERATORS",
    "ROOT",
    "SERVER_OPERATORS",
    "Expression",
    "ExpressionContext",
    "Frame",
    "Node",
    "Parser",
    "Scope",
    "arguments",
    "compile_expression",
    "constant",
    "constant_value",
    "fixed_arguments",
    "fold",
    "is_constant",
    "not_implemented",
    "operator",
    "parse",
    "ranged_arguments",
    "validate_field_name",
    "validate_variable_name",
    "walk_path",
]

#: The variable values of one evaluation (module doc).
Frame = list[Any]
#: A compiled expression: its value for a frame.
Node = Callable[[Frame], Any]
#: Parses an operator's argument (the value under ``$op``) in a scope.
Parser = Callable[[Any, "Scope"], Node]

#: The slot of ``$$ROOT``: the document being evaluated.
ROOT = 0
#: The slot of the document's metadata (``$meta``): a mapping or None.
META = 1
_FIRST_VARIABLE = 2

#: Every operator the language evaluates, by name.
OPERATORS: dict[str, Parser] = {}

#: The expression operators of a 7.0 server (its REGISTER_EXPRESSION table): those the
#: package does not evaluate are refused with 238 rather than reported as unknown.
SERVER_OPERATORS = frozenset(
    {
        "$abs",
        "$acos",
        "$acosh",
        "$add",
        "$allElementsTrue",
        "$and",
        "$anyElementTrue",
        "$arrayElemAt",
        "$arrayToObject",
        "$asin",
        "$asinh",
        "$atan",
        "$atan2",
        "$atanh",
        "$avg",
        "$binarySize",
        "$bitAnd",
        "$bitNot",
        "$bitOr",
        "$bitXor",
        "$bsonSize",
        "$ceil",
        "$cmp",
        "$concat",
        "$concatArrays",
        "$cond",
        "$const",
        "$convert",
        "$cos",
        "$cosh",
        "$dateAdd",
        "$dateDiff",
        "$dateFromParts",
        "$dateFromString",
        "$dateSubtract",
        "$dateToParts",
        "$dateToString",
        "$dateTrunc",
        "$dayOfMonth",
        "$dayOfWeek",
        "$dayOfYear",
        "$degreesToRadians",
        "$divide",
        "$eq",
        "$exp",
        "$filter",
        "$first",
        "$firstN",
        "$floor",
        "$function",
        "$getField",
        "$gt",
        "$gte",
        "$hour",
        "$ifNull",
        "$in",
        "$indexOfArray",
        "$indexOfBytes",
        "$indexOfCP",
        "$isArray",
        "$isNumber",
        "$isoDayOfWeek",
        "$isoWeek",
        "$isoWeekYear",
        "$last",
        "$lastN",
        "$let",
        "$literal",
        "$ln",
        "$log",
        "$log10",
        "$lt",
        "$lte",
        "$ltrim",
        "$map",
        "$max",
        "$maxN",
        "$median",
        "$mergeObjects",
        "$meta",
        "$millisecond",
        "$min",
        "$minN",
        "$minute",
        "$mod",
        "$month",
        "$multiply",
        "$ne",
        "$not",
        "$objectToArray",
        "$or",
        "$percentile",
        "$pow",
        "$radiansToDegrees",
        "$rand",
        "$range",
        "$reduce",
        "$regexFind",
        "$regexFindAll",
        "$regexMatch",
        "$replaceAll",
        "$replaceOne",
        "$reverseArray",
        "$round",
        "$rtrim",
        "$second",
        "$setDifference",
        "$setEquals",
        "$setField",
        "$setIntersection",
        "$setIsSubset",
        "$setUnion",
        "$sin",
        "$sinh",
        "$size",
        "$slice",
        "$sortArray",
        "$split",
        "$sqrt",
        "$stdDevPop",
        "$stdDevSamp",
        "$strLenBytes",
        "$strLenCP",
        "$strcasecmp",
        "$substr",
        "$substrBytes",
        "$substrCP",
        "$subtract",
        "$sum",
        "$switch",
        "$tan",
        "$tanh",
        "$toBool",
        "$toDate",
        "$toDecimal",
        "$toDouble",
        "$toHashedIndexKey",
        "$toInt",
        "$toLong",
        "$toLower",
        "$toObjectId",
        "$toString",
        "$toUpper",
        "$trim",
        "$trunc",
        "$tsIncrement",
        "$tsSecond",
        "$type",
        "$unsetField",
        "$week",
        "$year",
        "$zip",
        "$_internalJsEmit",
        "$_internalFindAllValuesAtPath",
        "$_internalFleEq",
        "$_internalFleBetween",
        "$_internalIndexKey",
        "$_internalKeyStringValue",
        "$_internalOwningShard",
        "$_testApiVersion",
    }
)


def not_implemented() -> list[str]:
    """The 7.0 operators the package refuses with NotImplemented (238)."""
    return sorted(SERVER_OPERATORS - OPERATORS.keys())


# The variables a server defines itself (Variables::kBuiltinVarNameToId) besides ROOT and
# CURRENT: what a user name may not shadow, and what evaluates without a definition.
_UNAVAILABLE_BUILTINS = frozenset({"JS_SCOPE", "IS_MR"})
_UNSUPPORTED_BUILTINS = frozenset({"SEARCH_META", "USER_ROLES"})


def operator(*names: str) -> Callable[[Parser], Parser]:
    """Register a parser under these operator names."""

    def register(parser: Parser) -> Parser:
        for name in names:
            OPERATORS[name] = parser
        return parser

    return register


class ExpressionContext:
    """What the expressions of one command are compiled with (the server's
    ExpressionContext): the collation of string comparisons, ``$$NOW`` and
    ``$$CLUSTER_TIME`` (the same for the whole command), the random source of
    ``$rand``, and the slots of the variables its expressions define."""

    def __init__(
        self,
        collation: Optional[Collation] = None,
        *,
        now: Optional[datetime.datetime] = None,
        cluster_time: Optional[Timestamp] = None,
        rng: Optional[Callable[[], float]] = None,
    ) -> None:
        self.collation = collation
        if now is None:
            now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        #: ``$$NOW``: a naive UTC datetime at millisecond precision, as bson decodes dates.
        self.now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        #: ``$$CLUSTER_TIME``; None on a standalone, where the server has no cluster time.
        self.cluster_time = cluster_time
        self.rng: Callable[[], float] = rng if rng is not None else random.random
        self._slots = _FIRST_VARIABLE
        self._constants: dict[int, Any] = {}
        self._template: Frame = [None, None]

    @property
    def slot_count(self) -> int:
        """How many slots a frame of this context holds."""
        return self._slots

    def new_slot(self) -> int:
        """A slot no other variable of this command uses."""
        slot = self._slots
        self._slots += 1
        return slot

    def set_constant(self, slot: int, value: Any) -> None:
        """Give ``slot`` the same value in every frame (a command's ``let`` variable)."""
        self._constants[slot] = value

    def constant(self, slot: int) -> Any:
        """The constant value of ``slot``, or MISSING if it has none."""
        return self._constants.get(slot, MISSING)

    def frame(self, doc: Any, meta: Optional[Mapping[str, Any]] = None) -> Frame:
        """A frame for evaluating this context's expressions on ``doc``. Compile every
        expression first: a frame has the slots handed out when it was made."""
        template = self._template
        if len(template) != self._slots:
            template = [MISSING] * self._slots
            for slot, value in self._constants.items():
                template[slot] = value
            self._template = template
        frame = template.copy()
        frame[ROOT] = doc
        frame[META] = meta
        return frame


class Scope:
    """The variables visible where an expression is parsed (the server's
    VariablesParseState): user variables by name, each with its slot."""

    __slots__ = ("context", "names")

    def __init__(self, context: ExpressionContext, names: Optional[dict[str, int]] = None) -> None:
        self.context = context
        self.names: dict[str, int] = dict(names) if names else {}

    @property
    def collation(self) -> Optional[Collation]:
        return self.context.collation

    def child(self) -> Scope:
        """A scope seeing this one's variables, whose definitions this one does not see."""
        return Scope(self.context, self.names)

    def define(self, name: str) -> int:
        """Define a variable a user names (``$let``'s vars, ``as``), validating the name
        as the server does; returns its slot."""
        validate_variable_name(name)
        return self.define_system(name)

    def define_system(self, name: str) -> int:
        """Define a variable without validating its name (``this`` and ``value`` of
        ``$reduce``, ``$redact``'s ``DESCEND``, ``PRUNE`` and ``KEEP``)."""
        slot = self.context.new_slot()
        self.names[name] = slot
        return slot

    def define_constant(self, name: str, value: Any) -> int:
        """Define a variable with the same value for the whole command (``let``)."""
        slot = self.define_system(name)
        self.context.set_constant(slot, value)
        return slot

    def lookup(self, name: str) -> int:
        """The slot of a variable (``CURRENT`` is ``ROOT`` unless rebound); undefined
        names are the server's 17276."""
        slot = self.names.get(name)
        if slot is not None:
            return slot
        if name in ("CURRENT", "ROOT"):
            return ROOT
        raise CommandError(17276, f"Use of undefined variable: {name}")


# -- constants and folding ------------------------------------------------------------------

_NOT_CONSTANT: Any = object()
_FOLD_FRAME: Frame = [{}, None]


def constant(value: Any) -> Node:
    """A node of a constant value."""

    def node(frame: Frame) -> Any:
        return value

    node._constant = value  # type: ignore[attr-defined]
    return node


def is_constant(node: Node) -> bool:
    return getattr(node, "_constant", _NOT_CONSTANT) is not _NOT_CONSTANT


def constant_value(node: Node) -> Any:
    """The value of a constant node (check :func:`is_constant` first)."""
    return getattr(node, "_constant", _NOT_CONSTANT)


def fold(node: Node, operands: Sequence[Optional[Node]]) -> Node:
    """``node``, or its value as a constant when every operand is a constant (absent
    optional operands count as constant), as the server's ``optimize()`` folds it. An
    error the evaluation raises is the command's error."""
    for operand in operands:
        if operand is not None and not is_constant(operand):
            return node
    return constant(node(_FOLD_FRAME))


# -- operands ---------------------------------------------------------------------------------


def parse(value: Any, scope: Scope) -> Node:
    """Parse an operand: a field path or variable (``"$a.b"``, ``"$$x"``), an object
    (an operator or an expression object), an array of operands, or a constant."""
    if type(value) is str or (isinstance(value, str) and not isinstance(value, Code)):
        if value.startswith("$"):
            return _parse_path(value, scope)
        return constant(value)
    if isinstance(value, Mapping):
        return _parse_object(value, scope)
    if isinstance(value, list):
        return _parse_array(value, scope)
    return constant(value)


def arguments(value: Any, scope: Scope) -> list[Node]:
    """An n-ary operator's operands: the elements of an array, or the one value."""
    if isinstance(value, list):
        return [parse(item, scope) for item in value]
    return [parse(value, scope)]


def fixed_arguments(name: str, count: int, value: Any, scope: Scope) -> list[Node]:
    """Exactly ``count`` operands, or the server's 16020."""
    nodes = arguments(value, scope)
    if len(nodes) != count:
        raise CommandError(
            16020,
            f"Expression {name} takes exactly {count} arguments. {len(nodes)} were passed in.",
        )
    return nodes


def ranged_arguments(name: str, low: int, high: int, value: Any, scope: Scope) -> list[Node]:
    """Between ``low`` and ``high`` operands, or the server's 28667."""
    nodes = arguments(value, scope)
    if not low <= len(nodes) <= high:
        raise CommandError(
            28667,
            f"Expression {name} takes at least {low} arguments, and at most {high}, but"
            f" {len(nodes)} were passed in.",
        )
    return nodes


def _parse_array(values: list[Any], scope: Scope) -> Node:
    nodes = [parse(item, scope) for item in values]

    def array(frame: Frame) -> Any:
        out = []
        for child in nodes:
            item = child(frame)
            out.append(None if item is MISSING else item)
        return out

    return fold(array, nodes)


def _parse_object(obj: Mapping[str, Any], scope: Scope) -> Node:
    if not obj:
        return constant({})
    first = str(next(iter(obj)))
    if first.startswith("$"):
        if len(obj) != 1:
            raise CommandError(
                15983,
                "An object representing an expression must have exactly one field: "
                + render_document(obj),
            )
        parser = OPERATORS.get(first)
        if parser is None:
            if first in SERVER_OPERATORS:
                raise CommandError(238, f"{first} is not implemented by the simulator")
            raise CommandError(168, f"Unrecognized expression '{first}'")
        return parser(obj[first], scope)
    return parse_expression_object(obj, scope)


def parse_expression_object(obj: Mapping[str, Any], scope: Scope) -> Node:
    """An expression object (``{a: <expression>, b: ...}``): a document of the fields'
    values, a field whose value is missing left out."""
    fields: list[tuple[str, Node]] = []
    seen: set[str] = set()
    for name, item in obj.items():
        key = str(name)
        validate_field_name(key)
        if key in seen:
            raise CommandError(
                16406, "duplicate field name specified in object literal: " + render_document(obj)
            )
        seen.add(key)
        fields.append((key, parse(item, scope)))

    def document(frame: Frame) -> Any:
        out: dict[str, Any] = {}
        for key, child in fields:
            item = child(frame)
            if item is not MISSING:
                out[key] = item
        return out

    return fold(document, [child for _, child in fields])


# -- field names, paths and variables ---------------------------------------------------------

# Dollar-prefixed names a field path may hold (the server's kAllowedDollarPrefixedFields).
_ALLOWED_DOLLAR_FIELDS = frozenset(
    {"$id", "$ref", "$db", "$sortKey", "$recordId", "$searchSortValues", "$searchScore"}
)
_HINT = " Consider using $getField or $setField."


def validate_field_name(name: str) -> None:
    """A field name of a path or an expression object, checked as the server's
    ``FieldPath::uassertValidFieldName``."""
    if not name:
        raise CommandError(15998, "FieldPath field names may not be empty strings.")
    if name[0] == "$" and name not in _ALLOWED_DOLLAR_FIELDS:
        raise CommandError(16410, "FieldPath field names may not start with '$'." + _HINT)
    if "\0" in name:
        raise CommandError(16411, "FieldPath field names may not contain '\0'.")
    if "." in name:
        raise CommandError(16412, "FieldPath field names may not contain '.'." + _HINT)


def _split_path(path: str) -> tuple[str, ...]:
    if not path:
        raise CommandError(40352, "FieldPath cannot be constructed with empty string")
    if path.endswith("."):
        raise CommandError(40353, "FieldPath must not end with a '.'.")
    parts = tuple(path.split("."))
    if len(parts) > 200:
        raise CommandError(15, "FieldPath is too long")
    for part in parts:
        validate_field_name(part)
    return parts


def _is_name_char(char: str) -> bool:
    return ("a" <= char <= "z") or ("A" <= char <= "Z") or ("0" <= char <= "9") or char == "_"


def validate_variable_name(name: str) -> None:
    """A variable name a user defines (``uassertValidNameForUserWrite``)."""
    if name == "CURRENT":
        return
    if not name:
        raise CommandError(16866, "empty variable names are not allowed")
    if not (("a" <= name[0] <= "z") or ord(name[0]) > 127):
        raise CommandError(
            16867, f"'{name}' starts with an invalid character for a user variable name"
        )
    for char in name[1:]:
        if not (_is_name_char(char) or ord(char) > 127):
            raise CommandError(
                16868, f"'{name}' contains an invalid character for a variable name: '{char}'"
            )


def _validate_read_name(name: str) -> None:
    # uassertValidNameForUserRead: a reference may name a system variable (upper case).
    if not name:
        raise CommandError(16869, "empty variable names are not allowed")
    first = name[0]
    if not (("a" <= first <= "z") or ("A" <= first <= "Z") or ord(first) > 127):
        raise CommandError(16870, f"'{name}' starts with an invalid character for a variable name")
    for char in name[1:]:
        if not (_is_name_char(char) or ord(char) > 127):
            raise CommandError(
                16871, f"'{name}' contains an invalid character for a variable name: '{char}'"
            )


def _as_document(value: Any) -> Any:
    if isinstance(value, DBRef):
        return value.as_doc()
    return value


def walk_path(doc: Mapping[str, Any], parts: tuple[str, ...], index: int = 0) -> Any:
    """The value of ``parts[index:]`` in a document, as an aggregation field path reads
    it: an array on the way yields the array of what each of its documents holds there
    (elements that are not documents, or lack the field, are left out); numbers are
    field names, not array indexes; a path that stops short is MISSING."""
    last = len(parts) - 1
    while True:
        value = doc.get(parts[index], MISSING)
        if index == last:
            return value
        if isinstance(value, Mapping):
            doc = value
            index += 1
        elif isinstance(value, list):
            return _walk_array(value, parts, index + 1)
        elif isinstance(value, DBRef):
            doc = value.as_doc()
            index += 1
        else:
            return MISSING


def _walk_array(values: list[Any], parts: tuple[str, ...], index: int) -> list[Any]:
    out = []
    for item in values:
        element = _as_document(item)
        if isinstance(element, Mapping):
            found = walk_path(element, parts, index)
            if found is not MISSING:
                out.append(found)
    return out


def path_of_value(value: Any, parts: tuple[str, ...]) -> Any:
    """``parts`` read from a variable's value (``$$var.a.b``)."""
    value = _as_document(value)
    if isinstance(value, Mapping):
        return walk_path(value, parts)
    if isinstance(value, list):
        return _walk_array(value, parts, 0)
    return MISSING


def _parse_path(raw: str, scope: Scope) -> Node:
    if len(raw) < 2:
        raise CommandError(16872, "'$' by itself is not a valid FieldPath")
    if raw[1] == "$":
        body = raw[2:]
        name, _, rest = body.partition(".")
        _validate_read_name(name)
        # The whole path is a FieldPath on the server: its components are checked too.
        _split_path(body)
        parts = tuple(rest.split(".")) if rest else ()
        return _variable_node(name, parts, scope)
    parts = _split_path(raw[1:])
    slot = scope.lookup("CURRENT")
    if slot == ROOT:
        return _root_path(parts)
    return _slot_path(slot, parts, scope)


def _root_path(parts: tuple[str, ...]) -> Node:
    if len(parts) == 1:
        (name,) = parts

        def field(frame: Frame) -> Any:
            return frame[0].get(name, MISSING)

        return field
    if len(parts) == 2:
        first, second = parts

        def field_of_field(frame: Frame) -> Any:
            outer = frame[0].get(first, MISSING)
            if type(outer) is dict:
                return outer.get(second, MISSING)
            return walk_path(frame[0], parts)

        return field_of_field

    def path(frame: Frame) -> Any:
        return walk_path(frame[0], parts)

    return path


def _slot_path(slot: int, parts: tuple[str, ...], scope: Scope) -> Node:
    value = scope.context.constant(slot)
    if value is not MISSING:
        return constant(path_of_value(value, parts) if parts else value)
    if not parts:

        def variable(frame: Frame) -> Any:
            return frame[slot]

        return variable

    def path(frame: Frame) -> Any:
        return path_of_value(frame[slot], parts)

    return path


def _variable_node(name: str, parts: tuple[str, ...], scope: Scope) -> Node:
    if name not in scope.names:
        if name == "REMOVE":
            return constant(MISSING)
        if name == "NOW":
            now = scope.context.now
            return constant(path_of_value(now, parts) if parts else now)
        if name == "CLUSTER_TIME":
            cluster_time = scope.context.cluster_time
            if cluster_time is None:
                return _unavailable(name)
            return constant(path_of_value(cluster_time, parts) if parts else cluster_time)
        if name in _UNAVAILABLE_BUILTINS:
            return _unavailable(name)
        if name in _UNSUPPORTED_BUILTINS:
            raise CommandError(238, f"$${name} is not implemented by the simulator")
    slot = scope.lookup(name)
    if slot == ROOT:
        return _root_path(parts) if parts else (lambda frame: frame[0])
    return _slot_path(slot, parts, scope)


def _unavailable(name: str) -> Node:
    def node(frame: Frame) -> Any:
        raise CommandError(51144, f"Builtin variable '$${name}' is not available")

    return node


# -- compiled expressions -----------------------------------------------------------------------


class Expression:
    """A compiled expression of a context."""

    __slots__ = ("context", "node", "spec")

    def __init__(self, node: Node, context: ExpressionContext, spec: Any) -> None:
        self.node = node
        self.context = context
        self.spec = spec

    @property
    def is_constant(self) -> bool:
        """True when the expression does not depend on the document."""
        return is_constant(self.node)

    def evaluate(self, doc: Any, meta: Optional[Mapping[str, Any]] = None) -> Any:
        """The expression's value for ``doc`` (MISSING when it evaluates to nothing)."""
        return self.node(self.context.frame(doc, meta))

    def __call__(self, frame: Frame) -> Any:
        return self.node(frame)


def compile_expression(
    spec: Any, context: Optional[ExpressionContext] = None, scope: Optional[Scope] = None
) -> Expression:
    """Compile ``spec`` (an operand: a field path, a constant, an operator or an
    expression object), in ``scope`` (the context's top scope if None)."""
    if scope is None:
        scope = Scope(context if context is not None else ExpressionContext())
    return Expression(parse(spec, scope), scope.context, spec)
