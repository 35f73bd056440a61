"""Update operators as a 7.0 mongod applies them (MongoDB manual, "Update Operators",
"$[]", "$[<identifier>]", "$ (update)"; the server's update driver and its errors).

:func:`compile_update` parses an operator update once (the server's parse-time
errors: unknown modifiers, non-document operands, empty field names, conflicting
paths, array filters without use or without an identifier); :meth:`Update.apply`
applies it to one document and returns the new document, leaving the given one
untouched (the store keeps old versions). Paths are applied in the server's order
since 5.0: field names lexicographically, numeric ones numerically, so new fields are
appended in that order. Numbers keep their BSON types (int32, int64, double,
Decimal128) as the server promotes them; ``$inc`` of an int32 past its range gives an
int64.

:func:`compile_replacement` checks a replacement document; :func:`upsert_seed` builds
the document an upsert starts from, out of the filter's equalities.
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, localcontext
from typing import Any, Callable, Optional

from bson import Decimal128, Int64, Regex, Timestamp
from bson.decimal128 import create_decimal128_context

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.matcher import DEFAULT_CONTEXT, Matcher, compile_filter
from mongocore.sim.engine.paths import Document, get_path, is_index
from mongocore.sim.engine.query_operators import is_operator_document
from mongocore.sim.engine.render import render, render_document
from mongocore.sim.engine.sort import compile_sort
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING, identical, is_number, key, numeric_value

__all__ = [
    "OPERATORS",
    "Update",
    "compile_replacement",
    "compile_update",
    "copy_document",
    "upsert_seed",
]

OPERATORS = (
    "$addToSet", "$bit", "$currentDate", "$inc", "$max", "$min", "$mul", "$pop", "$pull",
    "$pullAll", "$push", "$rename", "$set", "$setOnInsert", "$unset",
)  # fmt: skip
_IDENTIFIER = re.compile(r"^[a-z][a-zA-Z0-9]*$")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def copy_document(value: Any) -> Any:
    """A copy of the containers of a document (scalars are immutable and shared)."""
    if isinstance(value, dict):
        return {k: copy_document(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_document(v) for v in value]
    return value


def _failed_to_parse(message: str) -> CommandError:
    return CommandError(9, message)


def _bad_value(message: str) -> CommandError:
    return CommandError(2, message)


def _id_text(doc: Mapping[str, Any]) -> str:
    return "{_id: " + render(doc.get("_id")) + "}"


# -- numbers ------------------------------------------------------------------------------


def _kind(value: Any) -> int:
    """0 int32, 1 int64, 2 double, 3 decimal."""
    if isinstance(value, Decimal128):
        return 3
    if isinstance(value, float):
        return 2
    if isinstance(value, Int64) or not _INT32[0] <= value <= _INT32[1]:
        return 1
    return 0


def _arithmetic(current: Any, operand: Any, operator: str, doc: Document, path: str) -> Any:
    kind = max(_kind(current), _kind(operand))
    if kind == 3:
        with localcontext(create_decimal128_context()) as context:
            a = (
                Decimal(str(numeric_value(current)))
                if not isinstance(current, Decimal128)
                else current.to_decimal()
            )
            b = (
                Decimal(str(numeric_value(operand)))
                if not isinstance(operand, Decimal128)
                else operand.to_decimal()
            )
            result = context.add(a, b) if operator == "$inc" else context.multiply(a, b)
            return Decimal128(result)
    if kind == 2:
        x, y = float(numeric_value(current)), float(numeric_value(operand))
        return x + y if operator == "$inc" else x * y
    m, n = int(current), int(operand)
    product = m + n if operator == "$inc" else m * n
    if kind == 0 and _INT32[0] <= product <= _INT32[1]:
        return product
    if _INT64[0] <= product <= _INT64[1]:
        return Int64(product)
    name = "$inc" if operator == "$inc" else "$mul"
    raise _bad_value(
        f"Failed to apply {name} operations to current field ((NumberLong){int(current)})"
        f" for document {_id_text(doc)}"
    )


# -- parsing ------------------------------------------------------------------------------


class _Op:
    __slots__ = ("argument", "operator", "parts", "path")

    def __init__(self, operator: str, path: str, argument: Any) -> None:
        self.operator = operator
        self.path = path
        self.parts = tuple(path.split("."))
        self.argument = argument


def _compare_parts(a: _Op, b: _Op) -> int:
    for x, y in zip(a.parts, b.parts):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        return -1 if x < y else 1
    return len(a.parts) - len(b.parts)


def _check_path(path: str) -> None:
    parts = path.split(".")
    if any(not part for part in parts):
        raise CommandError(
            56, f"The update path '{path}' contains an empty field name, which is not allowed."
        )
    positional = [p for p in parts if p == "$"]
    if len(positional) > 1:
        raise _bad_value(f"Too many positional (i.e. '$') elements found in path '{path}'")
    first = parts[0]
    if first == "$" or (first.startswith("$[") and first.endswith("]")):
        named = len(first) > 3  # $[<id>], not $ or $[]
        kind = "array filter identifier (i.e. '$[<id>]')" if named else "positional (i.e. '$')"
        raise _bad_value(f"Cannot have {kind} element in the first position in path '{path}'")
    if first.startswith("$"):
        raise CommandError(
            52, f"The dollar ($) prefixed field '{first}' in '{path}' is not valid for storage."
        )


def _check_modifier(operator: str, path: str, argument: Any) -> None:
    if operator in ("$inc", "$mul") and not is_number(argument):
        verb = "increment" if operator == "$inc" else "multiply"
        raise CommandError(
            14, f"Cannot {verb} with non-numeric argument: {{{path}: {render(argument)}}}"
        )
    if operator == "$pop" and (not is_number(argument) or numeric_value(argument) not in (1, -1)):
        raise _failed_to_parse(f"$pop expects 1 or -1, found: {render(argument)}")
    if operator == "$pullAll" and not isinstance(argument, list):
        raise _bad_value(
            f"$pullAll requires an array argument but was given a {type_name(argument)}"
        )
    if operator == "$rename":
        if not isinstance(argument, str):
            raise _bad_value(
                f"The 'to' field for $rename must be a string: {path}: {render(argument)}"
            )
        if argument == path:
            raise _bad_value(
                f"The source and target field for $rename must differ: {path}: {render(argument)}"
            )
        if any(p == "$" or p.startswith("$[") for p in path.split(".") + argument.split(".")):
            raise _bad_value("The source field for $rename may not be dynamic: " + path)
    if operator == "$currentDate":
        valid = isinstance(argument, bool) or (
            isinstance(argument, Mapping)
            and list(argument) == ["$type"]
            and argument["$type"] in ("date", "timestamp")
        )
        if not valid:
            if isinstance(argument, Mapping):
                raise _bad_value(
                    "The '$type' string field is required to be 'date' or 'timestamp':"
                    " {$currentDate: {field : {$type: 'date'}}}"
                )
            raise _bad_value(
                f"{type_name(argument)} is not valid type for $currentDate. Please use a "
                f"boolean ('true') or a $type expression ({{$type: 'timestamp/date'}})."
            )
    if operator == "$bit":
        if not isinstance(argument, Mapping) or not argument:
            raise _bad_value(
                f"The $bit modifier is not compatible with a {type_name(argument)}. You must "
                f"pass in an embedded document: {{$bit: {{field: {{and/or/xor: #}}}}"
            )
        for name, operand in argument.items():
            if name not in ("and", "or", "xor"):
                raise _bad_value(
                    f"The $bit modifier only supports 'and', 'or', and 'xor', not '{name}' "
                    f"which is an unknown operator: {{{name}: {render(operand)}}}"
                )
            if isinstance(operand, bool) or not isinstance(operand, int):
                raise _bad_value(
                    f"The $bit modifier field must be an Integer(32/64 bit); a "
                    f"'{type_name(operand)}' is not supported here: {{{name}: {render(operand)}}}"
                )
    if operator == "$push":
        _push_spec(argument)
    each = argument.get("$each") if isinstance(argument, Mapping) else None
    if operator == "$addToSet" and each is not None and not isinstance(each, list):
        raise _bad_value(
            "The argument to $each in $addToSet must be an array but it was of type "
            f"{type_name(each)}"
        )


def _push_spec(argument: Any) -> tuple[list[Any], Optional[int], Any, Optional[int]]:
    """($each values, $slice, $sort, $position) of a $push argument."""
    if not (isinstance(argument, Mapping) and "$each" in argument):
        return [argument], None, None, None
    each = argument["$each"]
    if not isinstance(each, list):
        raise _bad_value(
            f"The argument to $each in $push must be an array but it was of type: {type_name(each)}"
        )
    slice_: Optional[int] = None
    sort: Any = None
    position: Optional[int] = None
    for name, value in argument.items():
        if name == "$each":
            continue
        if name == "$slice":
            if not is_number(value) or numeric_value(value) != int(numeric_value(value)):
                raise _bad_value(
                    f"The value for $slice must be an integer value but was given type: "
                    f"{type_name(value)}"
                )
            slice_ = int(numeric_value(value))
        elif name == "$position":
            if not is_number(value) or numeric_value(value) != int(numeric_value(value)):
                raise _bad_value(
                    f"The value for $position must be an integer value, not of type: "
                    f"{type_name(value)}"
                )
            position = int(numeric_value(value))
        elif name == "$sort":
            valid_number = is_number(value) and numeric_value(value) in (1, -1)
            valid_doc = (
                isinstance(value, Mapping)
                and value
                and all(is_number(v) and numeric_value(v) in (1, -1) for v in value.values())
            )
            if not (valid_number or valid_doc):
                raise _bad_value(
                    "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} "
                    "to sort embedded fields"
                )
            sort = value
        else:
            raise _bad_value(f"Unrecognized clause in $push: {name}")
    return list(each), slice_, sort, position


class _ArrayFilter:
    def __init__(self, identifier: str, matcher: Matcher) -> None:
        self.identifier = identifier
        self.matcher = matcher

    def matches(self, element: Any) -> bool:
        return self.matcher.matches({self.identifier: element})


def _parse_array_filters(array_filters: Any, context: MatchContext) -> dict[str, _ArrayFilter]:
    filters: dict[str, _ArrayFilter] = {}
    if array_filters is None:
        return filters
    if not isinstance(array_filters, list):
        raise CommandError(14, "arrayFilters must be an array")
    for flt in array_filters:
        if not isinstance(flt, Mapping):
            raise CommandError(14, "Each array filter must be an object")
        identifiers: set[str] = set()
        for name, value in flt.items():
            if name in ("$and", "$or", "$nor") and isinstance(value, list):
                for clause in value:
                    if isinstance(clause, Mapping):
                        identifiers.update(str(n).split(".")[0] for n in clause)
            else:
                identifiers.add(str(name).split(".")[0])
        if not identifiers:
            raise _failed_to_parse(
                "Cannot use an expression without a top-level field name in arrayFilters"
            )
        if len(identifiers) > 1:
            raise _failed_to_parse(
                "Error parsing array filter :: caused by :: Expected a single top-level field"
                f" name, found '{sorted(identifiers)[0]}' and '{sorted(identifiers)[1]}'"
            )
        identifier = identifiers.pop()
        if not _IDENTIFIER.match(identifier):
            raise _bad_value(
                "Error parsing array filter :: caused by :: The top-level field name must be an"
                f" alphanumeric string beginning with a lowercase letter, found '{identifier}'"
            )
        if identifier in filters:
            raise _failed_to_parse(
                f"Found multiple array filters with the same top-level field name {identifier}"
            )
        filters[identifier] = _ArrayFilter(identifier, compile_filter(flt, context))
    return filters


class Update:
    """A compiled operator update."""

    def __init__(
        self, ops: list[_Op], filters: dict[str, _ArrayFilter], context: MatchContext
    ) -> None:
        self.ops = ops
        self.filters = filters
        self.context = context
        self.touches_id = any(op.parts[0] == "_id" for op in ops if op.operator != "$setOnInsert")
        self.needs_position = any("$" in op.parts for op in ops)

    @property
    def collation(self) -> Optional[Collation]:
        return self.context.collation

    def apply(
        self,
        doc: Document,
        *,
        position: Optional[int] = None,
        inserting: bool = False,
        now: Optional[datetime.datetime] = None,
        timestamp: Optional[Timestamp] = None,
    ) -> Document:
        """The updated copy of ``doc`` (``position``: the array index the query's match
        gives the positional ``$``; ``inserting``: an upsert's insert, when
        ``$setOnInsert`` applies)."""
        new: Document = copy_document(doc)
        for op in self.ops:
            if op.operator == "$setOnInsert" and not inserting:
                continue
            for parts in self._expand(new, op.parts, position):
                self._apply_one(new, op, parts, now, timestamp)
        if (
            self.touches_id
            and not inserting
            and not identical(new.get("_id", MISSING), doc.get("_id", MISSING))
        ):
            raise CommandError(
                66, "Performing an update on the path '_id' would modify the immutable field '_id'"
            )
        return new

    # -- positional paths -------------------------------------------------------------

    def _expand(
        self, doc: Document, parts: tuple[str, ...], position: Optional[int]
    ) -> list[tuple[str, ...]]:
        if not any(p.startswith("$") for p in parts):
            return [parts]
        results: list[tuple[str, ...]] = [()]
        for depth, part in enumerate(parts):
            if part == "$":
                if position is None:
                    raise _bad_value(
                        "The positional operator did not find the match needed from the query."
                    )
                results = [(*r, str(position)) for r in results]
            elif part.startswith("$[") and part.endswith("]"):
                expanded: list[tuple[str, ...]] = []
                identifier = part[2:-1]
                for prefix in results:
                    array = get_path(doc, prefix)
                    if array is MISSING:
                        raise _bad_value(
                            f"The path '{'.'.join(parts[:depth])}' must exist in the document "
                            f"in order to apply array updates."
                        )
                    if not isinstance(array, list):
                        raise _bad_value(
                            f"Cannot apply array updates to non-array element "
                            f"{parts[depth - 1]}: {render(array)}"
                        )
                    for index, element in enumerate(array):
                        if identifier and not self.filters[identifier].matches(element):
                            continue
                        expanded.append((*prefix, str(index)))
                results = expanded
            else:
                results = [(*r, part) for r in results]
        return results

    # -- one operator at one concrete path --------------------------------------------

    def _apply_one(
        self,
        doc: Document,
        op: _Op,
        parts: tuple[str, ...],
        now: Optional[datetime.datetime],
        timestamp: Optional[Timestamp],
    ) -> None:
        operator, argument = op.operator, op.argument
        path = ".".join(parts)
        if operator == "$rename":
            self._rename(doc, parts, str(argument))
            return
        creates = operator not in ("$unset", "$pop", "$pull", "$pullAll")
        located = _locate(doc, parts, create=creates)
        if located is None:
            return
        container, last = located
        current = _get(container, last)
        if operator in ("$set", "$setOnInsert"):
            _put(container, last, copy_document(argument), doc, parts)
        elif operator == "$unset":
            if current is not MISSING:
                if isinstance(container, list):
                    container[int(last)] = None
                else:
                    del container[last]
        elif operator in ("$inc", "$mul"):
            if current is MISSING:
                value = (
                    argument if operator == "$inc" else _arithmetic(0, argument, "$mul", doc, path)
                )
                _put(container, last, value, doc, parts)
            elif not is_number(current):
                raise CommandError(
                    14,
                    f"Cannot apply {operator} to a value of non-numeric type. {_id_text(doc)} has"
                    f" the field '{last}' of non-numeric type {type_name(current)}",
                )
            else:
                _put(
                    container, last, _arithmetic(current, argument, operator, doc, path), doc, parts
                )
        elif operator in ("$min", "$max"):
            collation = self.collation
            if current is MISSING:
                _put(container, last, copy_document(argument), doc, parts)
            else:
                smaller = key(argument, collation) < key(current, collation)
                larger = key(argument, collation) > key(current, collation)
                if (operator == "$min" and smaller) or (operator == "$max" and larger):
                    _put(container, last, copy_document(argument), doc, parts)
        elif operator == "$currentDate":
            stamp = now or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            stamp = stamp.replace(microsecond=stamp.microsecond // 1000 * 1000)
            if isinstance(argument, Mapping) and argument["$type"] == "timestamp":
                current_value: Any = timestamp or Timestamp(int(stamp.timestamp()), 1)
            else:
                current_value = stamp
            _put(container, last, current_value, doc, parts)
        elif operator == "$push":
            self._push(doc, container, last, current, argument)
        elif operator == "$addToSet":
            self._add_to_set(doc, container, last, current, argument)
        elif operator == "$pop":
            if current is MISSING:
                return
            if not isinstance(current, list):
                raise CommandError(
                    14,
                    f"Path '{path}' contains an element of non-array type '{type_name(current)}'",
                )
            if current:
                if numeric_value(argument) == 1:
                    current.pop()
                else:
                    current.pop(0)
        elif operator in ("$pull", "$pullAll"):
            if current is MISSING:
                return
            if not isinstance(current, list):
                raise _bad_value(f"Cannot apply {operator} to a non-array value")
            test = (
                self._pull_test(argument) if operator == "$pull" else self._pull_all_test(argument)
            )
            current[:] = [element for element in current if not test(element)]
        elif operator == "$bit":
            base = 0 if current is MISSING else current
            if isinstance(base, bool) or not isinstance(base, int):
                raise _bad_value(
                    f"Cannot apply $bit to a value of non-integral type.{_id_text(doc)} has the"
                    f" field {last} of non-integer type {type_name(base)}"
                )
            result, wide = int(base), isinstance(base, Int64) or _kind(base) == 1
            for name, operand in argument.items():
                wide = wide or isinstance(operand, Int64) or _kind(operand) == 1
                if name == "and":
                    result &= int(operand)
                elif name == "or":
                    result |= int(operand)
                else:
                    result ^= int(operand)
            _put(container, last, Int64(result) if wide else result, doc, parts)

    def _rename(self, doc: Document, parts: tuple[str, ...], target: str) -> None:
        for side, path in (("source", ".".join(parts)), ("destination", target)):
            value: Any = doc
            for part in path.split(".")[:-1]:
                value = value.get(part, MISSING) if isinstance(value, Mapping) else MISSING
                if isinstance(value, list):
                    raise _bad_value(
                        f"The {side} field cannot be an array element, '{path}' in doc with"
                        f" _id: {render(doc.get('_id'))} has an array field called '{part}'"
                    )
        located = _locate(doc, parts, create=False)
        if located is None:
            return
        container, last = located
        if not isinstance(container, dict) or last not in container:
            return
        value = container.pop(last)
        target_parts = tuple(target.split("."))
        destination = _locate(doc, target_parts, create=True)
        assert destination is not None
        _put(destination[0], destination[1], value, doc, target_parts)

    def _push(self, doc: Document, container: Any, last: str, current: Any, argument: Any) -> None:
        each, slice_, sort, position = _push_spec(argument)
        if current is MISSING:
            current = []
            _put(container, last, current, doc, (last,))
        elif not isinstance(current, list):
            raise _bad_value(
                f"The field '{last}' must be an array but is of type {type_name(current)} in"
                f" document {_id_text(doc)}"
            )
        values = [copy_document(v) for v in each]
        if position is None:
            current.extend(values)
        else:
            index = position if position >= 0 else max(len(current) + position, 0)
            current[index:index] = values
        if sort is not None:
            if isinstance(sort, Mapping):
                ordered = compile_sort(sort, self.collation).sort(
                    [e if isinstance(e, dict) else {} for e in current]
                )
                by_identity = {id(e): e for e in current}
                current[:] = [by_identity.get(id(e), e) for e in ordered]
            else:
                collation = self.collation
                current.sort(key=lambda e: key(e, collation), reverse=numeric_value(sort) < 0)
        if slice_ is not None:
            current[:] = current[:slice_] if slice_ >= 0 else current[slice_:] if slice_ else []

    def _add_to_set(
        self, doc: Document, container: Any, last: str, current: Any, argument: Any
    ) -> None:
        values = (
            argument["$each"]
            if isinstance(argument, Mapping) and "$each" in argument
            else [argument]
        )
        if current is MISSING:
            current = []
            _put(container, last, current, doc, (last,))
        elif not isinstance(current, list):
            raise _bad_value(
                f"Cannot apply $addToSet to non-array field. Field named '{last}' has non-array"
                f" type {type_name(current)}"
            )
        collation = self.collation
        present = {key(e, collation) for e in current}
        for value in values:
            value_key = key(value, collation)
            if value_key not in present:
                present.add(value_key)
                current.append(copy_document(value))

    def _pull_test(self, condition: Any) -> Callable[[Any], bool]:
        if isinstance(condition, Mapping) and condition and not is_operator_document(condition):
            matcher = compile_filter(condition, self.context)
            return lambda element: isinstance(element, Mapping) and matcher.matches(dict(element))
        matcher = compile_filter({"x": condition}, self.context)
        if is_operator_document(condition):
            return lambda element: matcher.matches({"x": element})
        collation = self.collation
        condition_key = key(condition, collation)
        return lambda element: key(element, collation) == condition_key

    def _pull_all_test(self, values: Sequence[Any]) -> Callable[[Any], bool]:
        collation = self.collation
        keys = {key(v, collation) for v in values}
        return lambda element: key(element, collation) in keys


def _get(container: Any, last: str) -> Any:
    if isinstance(container, dict):
        return container.get(last, MISSING) if last in container else MISSING
    if is_index(last) and int(last) < len(container):
        return container[int(last)]
    return MISSING


def _not_viable(part: str, name: str, value: Any) -> CommandError:
    return CommandError(28, f"Cannot create field '{part}' in element {{{name}: {render(value)}}}")


def _locate(doc: Document, parts: tuple[str, ...], *, create: bool) -> Optional[tuple[Any, str]]:
    """The container of the path's last field and that field's name; None if the path
    does not reach there and ``create`` is false."""
    container: Any = doc
    for depth, part in enumerate(parts[:-1]):
        child = _get(container, part)
        if child is MISSING:
            if not create:
                return None
            if isinstance(container, list) and not is_index(part):
                raise _not_viable(part, parts[depth - 1], container)
            child = {}
            _put(container, part, child, doc, parts)
        elif not isinstance(child, (dict, list)):
            if not create:
                return None
            raise _not_viable(parts[depth + 1], part, child)
        container = child
    last = parts[-1]
    if isinstance(container, list) and not is_index(last):
        if not create:
            return None
        raise _not_viable(last, parts[-2] if len(parts) > 1 else last, container)
    return container, last


def _put(container: Any, last: str, value: Any, doc: Document, parts: tuple[str, ...]) -> None:
    if isinstance(container, dict):
        container[last] = value
        return
    index = int(last)
    if index >= len(container):
        container.extend([None] * (index + 1 - len(container)))
    container[index] = value


def compile_update(
    spec: Any, array_filters: Any = None, context: MatchContext = DEFAULT_CONTEXT
) -> Update:
    """Parse an operator update (``{$set: ..., $inc: ...}``) as a 7.0 server does."""
    if not isinstance(spec, Mapping):
        raise CommandError(14, "Update argument must be either an object or an array")
    ops: list[_Op] = []
    for operator, fields in spec.items():
        name = str(operator)
        if name not in OPERATORS:
            raise _failed_to_parse(
                f"Unknown modifier: {name}. Expected a valid update modifier or pipeline-style"
                " update specified as an array"
            )
        if not isinstance(fields, Mapping):
            raise _failed_to_parse(
                f"Modifiers operate on fields but we found type {type_name(fields)} instead. For"
                f" example: {{$mod: {{<field>: ...}}}} not {{{name}: {render(fields)}}}"
            )
        for path, argument in fields.items():
            field = str(path)
            _check_path(field)
            _check_modifier(name, field, argument)
            ops.append(_Op(name, field, argument))
            if name == "$rename":
                _check_path(str(argument))
    filters = _parse_array_filters(array_filters, context)
    used: set[str] = set()
    for op in ops:
        for part in op.parts:
            if part.startswith("$[") and part.endswith("]") and part != "$[]":
                identifier = part[2:-1]
                if identifier not in filters:
                    raise _bad_value(
                        f"No array filter found for identifier '{identifier}' in path '{op.path}'"
                    )
                used.add(identifier)
    for identifier in filters:
        if identifier not in used:
            raise _failed_to_parse(
                f"The array filter for identifier '{identifier}' was not used in the update"
                f" {render_document(spec)}"
            )
    _check_conflicts(ops)
    ops.sort(key=functools.cmp_to_key(_compare_parts))
    return Update(ops, filters, context)


def _check_conflicts(ops: list[_Op]) -> None:
    paths: list[str] = []
    for op in ops:
        paths.append(op.path)
        if op.operator == "$rename":
            paths.append(str(op.argument))
    ordered = sorted(paths)
    for index, path in enumerate(ordered):
        for other in ordered[index + 1 :]:
            if other == path or other.startswith(path + "."):
                raise CommandError(
                    40, f"Updating the path '{other}' would create a conflict at '{path}'"
                )
            if not other.startswith(path):
                break


def compile_replacement(replacement: Any) -> Document:
    """Check a replacement document as a 7.0 server does (no top-level operators)."""
    if not isinstance(replacement, Mapping):
        raise CommandError(14, "Replacement document must be an object")
    for name in replacement:
        if str(name).startswith("$"):
            raise CommandError(
                52, f"The dollar ($) prefixed field '{name}' in '{name}' is not valid for storage."
            )
    return dict(replacement)


def replace(doc: Document, replacement: Document) -> Document:
    """``doc`` replaced, keeping its ``_id`` (first); the server's error if the
    replacement changes it."""
    new: Document = {}
    if "_id" in doc:
        if "_id" in replacement and not identical(replacement["_id"], doc["_id"]):
            raise CommandError(
                66,
                "After applying the update, the (immutable) field '_id' was found to have been"
                f" altered to _id: {render(replacement['_id'])}",
            )
        new["_id"] = doc["_id"]
    for name, value in replacement.items():
        if name != "_id" or "_id" not in new:
            new[name] = copy_document(value)
    return new


def upsert_seed(flt: Mapping[str, Any]) -> Document:
    """The document an upsert starts from: the filter's equality conditions, top-level
    and under ``$and``, with dotted paths as embedded documents (``_id`` first)."""
    seed: Document = {}
    seen: set[str] = set()
    _seed_from(flt, seed, seen)
    if "_id" in seed:
        seed = {"_id": seed["_id"], **{k: v for k, v in seed.items() if k != "_id"}}
    return seed


def _seed_from(flt: Mapping[str, Any], seed: Document, seen: set[str]) -> None:
    for name, value in flt.items():
        path = str(name)
        if path == "$and" and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    _seed_from(clause, seed, seen)
            continue
        if path.startswith("$"):
            continue
        if is_operator_document(value):
            if "$eq" in value:
                equal_to = value["$eq"]
            elif "$in" in value and isinstance(value["$in"], list) and len(value["$in"]) == 1:
                equal_to = value["$in"][0]
            else:
                continue
        else:
            equal_to = value
        if isinstance(equal_to, (re.Pattern, Regex)):
            continue
        if any(path == s or path.startswith(s + ".") or s.startswith(path + ".") for s in seen):
            raise CommandError(
                54, f"cannot infer query fields to set, path '{path}' is matched twice"
            )
        seen.add(path)
        parts = tuple(path.split("."))
        located = _locate(seed, parts, create=True)
        assert located is not None
        _put(located[0], located[1], copy_document(equal_to), seed, parts)
