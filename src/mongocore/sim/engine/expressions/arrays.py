"""Array expressions (MongoDB manual, "Array Expression Operators"): ``$arrayElemAt``,
``$first``, ``$last``, ``$concatArrays``, ``$filter``, ``$map``, ``$reduce``, ``$in``,
``$indexOfArray``, ``$isArray``, ``$range``, ``$reverseArray``, ``$size``, ``$slice``,
``$zip``, ``$arrayToObject``, ``$objectToArray`` and ``$sortArray``. (``$firstN``,
``$lastN``, ``$maxN`` and ``$minN`` are the accumulators' expression forms.)

``$map``, ``$filter`` and ``$reduce`` bind ``$$this`` (or the ``as`` name) and
``$$value`` to slots of their own for the inner expression. Equality (``$in``,
``$indexOfArray``) and order (``$sortArray``) are BSON's, strings under the collation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.accumulators import Descending, parse_sort_by
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.comparison import sort_key
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    arguments,
    fixed_arguments,
    fold,
    operator,
    parse,
    ranged_arguments,
)
from mongocore.sim.engine.expressions.logic import truthy
from mongocore.sim.engine.expressions.numbers import (
    as_int,
    format_double,
    is_integral,
    kind,
    to_double,
)
from mongocore.sim.engine.expressions.strings import check_index, is_string
from mongocore.sim.engine.render import value_string
from mongocore.sim.engine.sort import sort_values
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING

__all__: list[str] = []


def _element_at(name: str, array: Any, index: Any, arity: int) -> Any:
    if nullish(array) or nullish(index):
        return None
    if not isinstance(array, list):
        which = "argument" if arity == 1 else "first argument"
        raise CommandError(28689, f"{name}'s {which} must be an array, but is {type_name(array)}")
    if kind(index) is None:
        raise CommandError(
            28690, f"{name}'s second argument must be a numeric value, but is {type_name(index)}"
        )
    if not is_integral(index):
        raise CommandError(
            28691,
            f"{name}'s second argument must be representable as a 32-bit integer: "
            + format_double(to_double(index)),
        )
    position = as_int(index)
    if position < 0:
        if -position > len(array):
            return MISSING
        position += len(array)
    return array[position] if position < len(array) else MISSING


@operator("$arrayElemAt")
def _parse_array_elem_at(value: Any, scope: Scope) -> Node:
    array_node, index_node = fixed_arguments("$arrayElemAt", 2, value, scope)

    def node(frame: Frame) -> Any:
        return _element_at("$arrayElemAt", array_node(frame), index_node(frame), 2)

    return fold(node, [array_node, index_node])


def _first_or_last(name: str, position: int) -> None:
    def parse_first_or_last(value: Any, scope: Scope) -> Node:
        (array_node,) = fixed_arguments(name, 1, value, scope)

        def node(frame: Frame) -> Any:
            return _element_at(name, array_node(frame), position, 1)

        return fold(node, [array_node])

    operator(name)(parse_first_or_last)


_first_or_last("$first", 0)
_first_or_last("$last", -1)


@operator("$concatArrays")
def _parse_concat_arrays(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)

    def node(frame: Frame) -> Any:
        out: list[Any] = []
        for child in nodes:
            part = child(frame)
            if nullish(part):
                return None
            if not isinstance(part, list):
                raise CommandError(
                    28664, f"$concatArrays only supports arrays, not {type_name(part)}"
                )
            out.extend(part)
        return out

    return fold(node, nodes)


def _bound_name(value: Any, default: str) -> str:
    return default if value is MISSING else str(value)


@operator("$filter")
def _parse_filter(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(28646, "$filter only supports an object as its argument")
    fields: dict[str, Any] = {}
    for name, item in value.items():
        if name not in ("input", "as", "cond", "limit"):
            raise CommandError(28647, f"Unrecognized parameter to $filter: {name}")
        fields[str(name)] = item
    if "input" not in fields:
        raise CommandError(28648, "Missing 'input' parameter to $filter")
    if "cond" not in fields:
        raise CommandError(28650, "Missing 'cond' parameter to $filter")
    input_node = parse(fields["input"], scope)
    limit_node = parse(fields["limit"], scope) if "limit" in fields else None
    inner = scope.child()
    slot = inner.define(_bound_name(fields.get("as", MISSING), "this"))
    cond_node = parse(fields["cond"], inner)

    def node(frame: Frame) -> Any:
        values = input_node(frame)
        if nullish(values):
            return None
        if not isinstance(values, list):
            raise CommandError(28651, f"input to $filter must be an array not {type_name(values)}")
        limit: Optional[int] = None
        if limit_node is not None:
            limit_value = limit_node(frame)
            if not nullish(limit_value):
                if not is_integral(limit_value):
                    raise CommandError(
                        327391,
                        "$filter: limit must be represented as a 32-bit integral value: "
                        + value_string(limit_value),
                    )
                limit = as_int(limit_value)
                if limit < 1:
                    raise CommandError(
                        327392,
                        f"$filter: limit must be greater than 0: {value_string(limit_value)}",
                    )
        out = []
        for element in values:
            frame[slot] = element
            if truthy(cond_node(frame)):
                out.append(element)
                if limit is not None and len(out) == limit:
                    break
        return out

    return node


@operator("$map")
def _parse_map(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(16878, "$map only supports an object as its argument")
    fields: dict[str, Any] = {}
    for name, item in value.items():
        if name not in ("input", "as", "in"):
            raise CommandError(16879, f"Unrecognized parameter to $map: {name}")
        fields[str(name)] = item
    if "input" not in fields:
        raise CommandError(16880, "Missing 'input' parameter to $map")
    if "in" not in fields:
        raise CommandError(16882, "Missing 'in' parameter to $map")
    input_node = parse(fields["input"], scope)
    inner = scope.child()
    slot = inner.define(_bound_name(fields.get("as", MISSING), "this"))
    each = parse(fields["in"], inner)

    def node(frame: Frame) -> Any:
        values = input_node(frame)
        if nullish(values):
            return None
        if not isinstance(values, list):
            raise CommandError(16883, f"input to $map must be an array not {type_name(values)}")
        out = []
        for element in values:
            frame[slot] = element
            result = each(frame)
            out.append(None if result is MISSING else result)
        return out

    return node


@operator("$reduce")
def _parse_reduce(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(
            40075, f"$reduce requires an object as an argument, found: {type_name(value)}"
        )
    inner = scope.child()
    this_slot = inner.define_system("this")
    value_slot = inner.define_system("value")
    parts: dict[str, Node] = {}
    for name, item in value.items():
        if name in ("input", "initialValue"):
            parts[str(name)] = parse(item, scope)
        elif name == "in":
            parts["in"] = parse(item, inner)
        else:
            raise CommandError(40076, f"$reduce found an unknown argument: {name}")
    for name, code in (("input", 40077), ("initialValue", 40078), ("in", 40079)):
        if name not in parts:
            raise CommandError(code, f"$reduce requires '{name}' to be specified")
    input_node, initial_node, in_node = parts["input"], parts["initialValue"], parts["in"]

    def node(frame: Frame) -> Any:
        values = input_node(frame)
        if nullish(values):
            return None
        if not isinstance(values, list):
            raise CommandError(
                40080, f"$reduce requires that 'input' be an array, found: {value_string(values)}"
            )
        accumulated = initial_node(frame)
        for element in values:
            frame[this_slot] = element
            frame[value_slot] = accumulated
            accumulated = in_node(frame)
        return accumulated

    return node


@operator("$in")
def _parse_in(value: Any, scope: Scope) -> Node:
    needle_node, array_node = fixed_arguments("$in", 2, value, scope)
    collation = scope.collation

    def node(frame: Frame) -> Any:
        needle = needle_node(frame)
        values = array_node(frame)
        if not isinstance(values, list):
            raise CommandError(
                40081, f"$in requires an array as a second argument, found: {type_name(values)}"
            )
        wanted = sort_key(needle, collation)
        return any(sort_key(item, collation) == wanted for item in values)

    return fold(node, [needle_node, array_node])


@operator("$indexOfArray")
def _parse_index_of_array(value: Any, scope: Scope) -> Node:
    name = "$indexOfArray"
    nodes = ranged_arguments(name, 2, 4, value, scope)
    collation = scope.collation

    def node(frame: Frame) -> Any:
        values = nodes[0](frame)
        if nullish(values):
            return None
        if not isinstance(values, list):
            raise CommandError(
                40090,
                f"$indexOfArray requires an array as a first argument, found: {type_name(values)}",
            )
        start = check_index(nodes[2](frame), name, "starting index") if len(nodes) > 2 else 0
        end = len(values)
        if len(nodes) > 3:
            end = min(len(values), check_index(nodes[3](frame), name, "ending index"))
        wanted = sort_key(nodes[1](frame), collation)
        for position in range(start, end):
            if sort_key(values[position], collation) == wanted:
                return position
        return -1

    return fold(node, nodes)


@operator("$isArray")
def _parse_is_array(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$isArray", 1, value, scope)

    def node(frame: Frame) -> Any:
        return isinstance(child(frame), list)

    return fold(node, [child])


@operator("$range")
def _parse_range(value: Any, scope: Scope) -> Node:
    nodes = ranged_arguments("$range", 2, 3, value, scope)

    def node(frame: Frame) -> Any:
        start, end = nodes[0](frame), nodes[1](frame)
        if kind(start) is None:
            raise CommandError(
                34443,
                "$range requires a numeric starting value, found value of type: "
                + type_name(start),
            )
        if not is_integral(start):
            raise CommandError(
                34444,
                "$range requires a starting value that can be represented as a 32-bit integer,"
                f" found value: {value_string(start)}",
            )
        if kind(end) is None:
            raise CommandError(
                34445,
                f"$range requires a numeric ending value, found value of type: {type_name(end)}",
            )
        if not is_integral(end):
            raise CommandError(
                34446,
                "$range requires an ending value that can be represented as a 32-bit integer,"
                f" found value: {value_string(end)}",
            )
        step = 1
        if len(nodes) == 3:
            step_value = nodes[2](frame)
            if kind(step_value) is None:
                raise CommandError(
                    34447,
                    "$range requires a numeric step value, found value of type:"
                    + type_name(step_value),
                )
            if not is_integral(step_value):
                raise CommandError(
                    34448,
                    "$range requires a step value that can be represented as a 32-bit integer,"
                    f" found value: {value_string(step_value)}",
                )
            step = as_int(step_value)
            if step == 0:
                raise CommandError(34449, "$range requires a non-zero step value")
        return list(range(as_int(start), as_int(end), step))

    return fold(node, nodes)


@operator("$reverseArray")
def _parse_reverse_array(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$reverseArray", 1, value, scope)

    def node(frame: Frame) -> Any:
        values = child(frame)
        if nullish(values):
            return None
        if not isinstance(values, list):
            raise CommandError(
                34435,
                "The argument to $reverseArray must be an array, but was of type: "
                + type_name(values),
            )
        return list(reversed(values))

    return fold(node, [child])


@operator("$size")
def _parse_size(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$size", 1, value, scope)

    def node(frame: Frame) -> Any:
        values = child(frame)
        if not isinstance(values, list):
            raise CommandError(
                17124,
                f"The argument to $size must be an array, but was of type: {type_name(values)}",
            )
        return len(values)

    return fold(node, [child])


@operator("$slice")
def _parse_slice(value: Any, scope: Scope) -> Node:
    nodes = ranged_arguments("$slice", 2, 3, value, scope)

    def node(frame: Frame) -> Any:
        values, second = nodes[0](frame), nodes[1](frame)
        if nullish(values) or nullish(second):
            return None
        if not isinstance(values, list):
            raise CommandError(
                28724,
                f"First argument to $slice must be an array, but is of type: {type_name(values)}",
            )
        if kind(second) is None:
            raise CommandError(
                28725,
                "Second argument to $slice must be a numeric value, but is of type: "
                + type_name(second),
            )
        if not is_integral(second):
            raise CommandError(
                28726,
                "Second argument to $slice can't be represented as a 32-bit integer: "
                + format_double(to_double(second)),
            )
        size = len(values)
        if len(nodes) == 2:
            count = as_int(second)
            if count >= 0:
                return values[:count]
            return values[max(0, size + count) :]
        start = as_int(second)
        start = max(0, size + start) if start < 0 else min(size, start)
        count_value = nodes[2](frame)
        if nullish(count_value):
            return None
        if kind(count_value) is None:
            raise CommandError(
                28727,
                "Third argument to $slice must be numeric, but is of type: "
                + type_name(count_value),
            )
        if not is_integral(count_value):
            raise CommandError(
                28728,
                "Third argument to $slice can't be represented as a 32-bit integer: "
                + format_double(to_double(count_value)),
            )
        count = as_int(count_value)
        if count <= 0:
            raise CommandError(28729, f"Third argument to $slice must be positive: {count}")
        return values[start : start + count]

    return fold(node, nodes)


@operator("$zip")
def _parse_zip(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(
            34460, f"$zip only supports an object as an argument, found {type_name(value)}"
        )
    inputs: list[Node] = []
    defaults: list[Node] = []
    longest = False
    for name, item in value.items():
        if name == "inputs":
            if not isinstance(item, list):
                raise CommandError(
                    34461, f"inputs must be an array of expressions, found {type_name(item)}"
                )
            inputs = [parse(element, scope) for element in item]
        elif name == "defaults":
            if not isinstance(item, list):
                raise CommandError(
                    34462, f"defaults must be an array of expressions, found {type_name(item)}"
                )
            defaults = [parse(element, scope) for element in item]
        elif name == "useLongestLength":
            if not isinstance(item, bool):
                raise CommandError(34463, "useLongestLength must be a bool, found object")
            longest = item
        else:
            raise CommandError(34464, f"$zip found an unknown argument: {name}")
    if not inputs:
        raise CommandError(34465, "$zip requires at least one input array")
    if defaults and not longest:
        raise CommandError(34466, "cannot specify defaults unless useLongestLength is true")
    if defaults and len(defaults) != len(inputs):
        raise CommandError(34467, "defaults and inputs must have the same length")

    def node(frame: Frame) -> Any:
        arrays: list[list[Any]] = []
        for child in inputs:
            array = child(frame)
            if nullish(array):
                return None
            if not isinstance(array, list):
                raise CommandError(
                    34468, f"$zip found a non-array expression in input: {value_string(array)}"
                )
            arrays.append(array)
        sizes = [len(array) for array in arrays]
        fill = [None] * len(arrays)
        if min(sizes) != max(sizes) and defaults:
            fill = [child(frame) for child in defaults]
        length = max(sizes) if longest else min(sizes)
        return [
            [
                array[row] if row < len(array) else fill[column]
                for column, array in enumerate(arrays)
            ]
            for row in range(length)
        ]

    return fold(node, [*inputs, *defaults])


# -- objects and arrays ---------------------------------------------------------------------------


def array_to_object(values: Any) -> Any:
    """``$arrayToObject``'s conversion of ``[[k, v], ...]`` or ``[{k, v}, ...]``."""
    if nullish(values):
        return None
    if not isinstance(values, list):
        raise CommandError(
            40386, f"$arrayToObject requires an array input, found: {type_name(values)}"
        )
    out: dict[str, Any] = {}
    if not values:
        return out
    pairs = isinstance(values[0], list)
    if not pairs and not isinstance(values[0], Mapping):
        raise CommandError(
            40398, f"Unrecognised input type format for $arrayToObject: {type_name(values[0])}"
        )
    for element in values:
        if pairs:
            if not isinstance(element, list):
                raise CommandError(
                    40396,
                    "$arrayToObject requires a consistent input format. Elements mustall be"
                    " arrays or all be objects. Array was detected, now found: "
                    + type_name(element),
                )
            if len(element) != 2:
                raise CommandError(
                    40397,
                    "$arrayToObject requires an array of size 2 arrays,found array of size: "
                    + str(len(element)),
                )
            key, item = element
            if not is_string(key):
                raise CommandError(
                    40395,
                    "$arrayToObject requires an array of key-value pairs, where the key must be of"
                    f" type string. Found key type: {type_name(key)}",
                )
            if "\0" in key:
                raise CommandError(4940400, "Key field cannot contain an embedded null byte")
        else:
            if not isinstance(element, Mapping):
                raise CommandError(
                    40391,
                    "$arrayToObject requires a consistent input format. Elements mustall be"
                    " arrays or all be objects. Object was detected, now found: "
                    + type_name(element),
                )
            if len(element) != 2:
                raise CommandError(
                    40392,
                    "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number"
                    f" of keys:{len(element)}",
                )
            if "k" not in element or "v" not in element:
                raise CommandError(
                    40393,
                    "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or"
                    f" both keys from: {value_string(element)}",
                )
            key, item = element["k"], element["v"]
            if not is_string(key):
                raise CommandError(
                    40394,
                    "$arrayToObject requires an object with keys 'k' and 'v', where the value of"
                    f" 'k' must be of type string. Found type: {type_name(key)}",
                )
            if "\0" in key:
                raise CommandError(4940401, "Key field cannot contain an embedded null byte")
        out[key] = item
    return out


@operator("$arrayToObject")
def _parse_array_to_object(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$arrayToObject", 1, value, scope)

    def node(frame: Frame) -> Any:
        return array_to_object(child(frame))

    return fold(node, [child])


@operator("$objectToArray")
def _parse_object_to_array(value: Any, scope: Scope) -> Node:
    (child,) = fixed_arguments("$objectToArray", 1, value, scope)

    def node(frame: Frame) -> Any:
        document = child(frame)
        if nullish(document):
            return None
        if not isinstance(document, Mapping):
            raise CommandError(
                40390, f"$objectToArray requires a document input, found: {type_name(document)}"
            )
        return [{"k": key, "v": item} for key, item in document.items()]

    return fold(node, [child])


@operator("$sortArray")
def _parse_sort_array(value: Any, scope: Scope) -> Node:
    if not isinstance(value, Mapping):
        raise CommandError(
            2942500, f"$sortArray requires an object as an argument, found: {type_name(value)}"
        )
    input_node: Optional[Node] = None
    sort_by: Any = MISSING
    for name, item in value.items():
        if name == "input":
            input_node = parse(item, scope)
        elif name == "sortBy":
            sort_by = item
        else:
            raise CommandError(2942501, f"$sortArray found an unknown argument: {name}")
    if input_node is None:
        raise CommandError(2942502, "$sortArray requires 'input' to be specified")
    if sort_by is MISSING:
        raise CommandError(2942503, "$sortArray requires 'sortBy' to be specified")
    collation = scope.collation
    source: Node = input_node
    if isinstance(sort_by, Mapping):
        fields = parse_sort_by("$sortArray", sort_by)

        def element_key(element: Any) -> Any:
            # The element's key as $sort takes it from a document (a non-document has
            # none of the fields: null).
            document = element if isinstance(element, Mapping) else {}
            out: list[Any] = []
            for parts, direction in fields:
                keys = [sort_key(v, collation) for v in sort_values(document, parts)]
                out.append(min(keys) if direction > 0 else Descending(max(keys)))
            return tuple(out)

        reverse = False
    else:
        if kind(sort_by) is None or to_double(sort_by) not in (1, -1):
            raise CommandError(2942506, "The $sort element value must be either 1 or -1")

        def element_key(element: Any) -> Any:
            return sort_key(element, collation)

        reverse = to_double(sort_by) < 0

    def node(frame: Frame) -> Any:
        values = source(frame)
        if nullish(values):
            return None
        if not isinstance(values, list):
            raise CommandError(
                2942504,
                "The input argument to $sortArray must be an array, but was of type: "
                + type_name(values),
            )
        return sorted(values, key=element_key, reverse=reverse)

    return fold(node, [input_node])
