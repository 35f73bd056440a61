"""String expressions (MongoDB manual, "String Expression Operators"): ``$concat``,
``$substr``/``$substrBytes``, ``$substrCP``, ``$strLenBytes``, ``$strLenCP``,
``$toLower``, ``$toUpper``, ``$strcasecmp``, ``$split``, ``$indexOfBytes``,
``$indexOfCP``, ``$trim``, ``$ltrim``, ``$rtrim``, ``$replaceOne``, ``$replaceAll``,
``$regexFind``, ``$regexFindAll`` and ``$regexMatch``.

Strings are UTF-8 on a server: the "bytes" operators count UTF-8 bytes, the "CP"
operators code points. ``$toLower``, ``$toUpper`` and ``$strcasecmp`` change the case of
ASCII letters only (the server's ``boost::to_lower`` in the C locale). The operators
that coerce their operand to a string (``$toLower``, ``$toUpper``, ``$substr*``,
``$strcasecmp``) turn null and missing into "", numbers into their decimal text, a date
into its ISO form, and refuse the rest (16007). Regular expressions run on Python's
``re`` with the server's flags (``i``, ``m``, ``s``, ``x``; ``u`` is always on);
PCRE's ``(?<name>...)`` groups are accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

from bson import Code, Regex, Timestamp

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions.arithmetic import nullish
from mongocore.sim.engine.expressions.core import (
    Frame,
    Node,
    Scope,
    arguments,
    constant_value,
    fixed_arguments,
    fold,
    is_constant,
    operator,
    parse,
    ranged_arguments,
)
from mongocore.sim.engine.expressions.dates import format_date, utc
from mongocore.sim.engine.expressions.datetimes import is_date, to_millis
from mongocore.sim.engine.expressions.numbers import (
    as_int,
    as_long,
    format_double,
    is_integral,
    kind,
)
from mongocore.sim.engine.render import value_string
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import regex_flags

__all__ = ["coerce_to_string", "format_iso_date", "is_string"]

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def is_string(value: Any) -> bool:
    """A BSON string (a symbol decodes as one too; JavaScript code is not)."""
    return isinstance(value, str) and not isinstance(value, Code)


def format_iso_date(milliseconds: int) -> str:
    """A date as ``%Y-%m-%dT%H:%M:%S.%LZ`` in UTC (the server's kISOFormatString)."""
    return format_date("%Y-%m-%dT%H:%M:%S.%LZ", milliseconds, utc())


def coerce_to_string(value: Any) -> str:
    """``Value::coerceToString``."""
    if is_string(value) or isinstance(value, Code):
        return str(value)
    if nullish(value):
        return ""
    number_kind = kind(value)
    if number_kind == "double":
        return format_double(value)
    if number_kind is not None:
        return str(value) if number_kind == "decimal" else str(int(value))
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    if is_date(value):
        return format_iso_date(to_millis(value))
    raise CommandError(16007, f"can't convert from BSON type {type_name(value)} to String")


@operator("$concat")
def _parse_concat(value: Any, scope: Scope) -> Node:
    nodes = arguments(value, scope)

    def node(frame: Frame) -> Any:
        parts = []
        for child in nodes:
            part = child(frame)
            if nullish(part):
                return None
            if not is_string(part):
                raise CommandError(16702, f"$concat only supports strings, not {type_name(part)}")
            parts.append(part)
        return "".join(parts)

    return fold(node, nodes)


def _unary_string(name: str, compute: Any) -> None:
    def parse_unary(value: Any, scope: Scope) -> Node:
        (child,) = fixed_arguments(name, 1, value, scope)

        def node(frame: Frame) -> Any:
            return compute(child(frame))

        return fold(node, [child])

    operator(name)(parse_unary)


_unary_string("$toLower", lambda v: coerce_to_string(v).translate(_LOWER))
_unary_string("$toUpper", lambda v: coerce_to_string(v).translate(_UPPER))


def _str_len_bytes(value: Any) -> Any:
    if not is_string(value):
        raise CommandError(
            34473, f"$strLenBytes requires a string argument, found: {type_name(value)}"
        )
    return len(value.encode("utf-8"))


def _str_len_cp(value: Any) -> Any:
    if not is_string(value):
        raise CommandError(
            34471, f"$strLenCP requires a string argument, found: {type_name(value)}"
        )
    return len(value)


_unary_string("$strLenBytes", _str_len_bytes)
_unary_string("$strLenCP", _str_len_cp)


@operator("$strcasecmp")
def _parse_strcasecmp(value: Any, scope: Scope) -> Node:
    left, right = fixed_arguments("$strcasecmp", 2, value, scope)

    def node(frame: Frame) -> Any:
        a = coerce_to_string(left(frame)).translate(_UPPER)
        b = coerce_to_string(right(frame)).translate(_UPPER)
        return (a > b) - (a < b)

    return fold(node, [left, right])


def _is_numeric_index(value: Any) -> bool:
    return kind(value) is not None


@operator("$substrBytes", "$substr")
def _parse_substr_bytes(value: Any, scope: Scope) -> Node:
    name = "$substrBytes"
    string_node, start_node, length_node = fixed_arguments(name, 3, value, scope)

    def node(frame: Frame) -> Any:
        text = coerce_to_string(string_node(frame)).encode("utf-8")
        start, length = start_node(frame), length_node(frame)
        if not _is_numeric_index(start):
            raise CommandError(
                16034,
                f"{name}:  starting index must be a numeric type (is BSON type {type_name(start)})",
            )
        if not _is_numeric_index(length):
            raise CommandError(
                16035, f"{name}:  length must be a numeric type (is BSON type {type_name(length)})"
            )
        lower = as_long(start)
        if lower < 0:
            raise CommandError(
                50752, f"{name}:  starting index must be non-negative (got: {lower})"
            )
        signed_length = as_long(length)
        count = len(text) if signed_length < 0 else signed_length
        if lower < len(text) and _continuation(text[lower]):
            raise CommandError(
                28656, f"{name}:  Invalid range, starting index is a UTF-8 continuation byte."
            )
        if lower + count < len(text) and _continuation(text[lower + count]):
            raise CommandError(
                28657,
                f"{name}:  Invalid range, ending index is in the middle of a UTF-8 character.",
            )
        if lower >= len(text):
            return ""
        return text[lower : lower + count].decode("utf-8")

    return fold(node, [string_node, start_node, length_node])


def _continuation(byte: int) -> bool:
    return (byte & 0xC0) == 0x80


@operator("$substrCP")
def _parse_substr_cp(value: Any, scope: Scope) -> Node:
    name = "$substrCP"
    string_node, start_node, length_node = fixed_arguments(name, 3, value, scope)

    def node(frame: Frame) -> Any:
        text = coerce_to_string(string_node(frame))
        start, length = start_node(frame), length_node(frame)
        if kind(start) is None:
            raise CommandError(
                34450,
                f"{name}: starting index must be a numeric type (is BSON type {type_name(start)})",
            )
        if not is_integral(start):
            raise CommandError(
                34451,
                f"{name}: starting index cannot be represented as a 32-bit integral value: "
                + value_string(start),
            )
        if kind(length) is None:
            raise CommandError(
                34452, f"{name}: length must be a numeric type (is BSON type {type_name(length)})"
            )
        if not is_integral(length):
            raise CommandError(
                34453,
                f"{name}: length cannot be represented as a 32-bit integral value: "
                + value_string(length),
            )
        lower, count = as_int(start), as_int(length)
        if count < 0:
            raise CommandError(34454, f"{name}: length must be a nonnegative integer.")
        if lower < 0:
            raise CommandError(34455, f"{name}: the starting index must be nonnegative integer.")
        return text[lower : lower + count]

    return fold(node, [string_node, start_node, length_node])


@operator("$split")
def _parse_split(value: Any, scope: Scope) -> Node:
    string_node, separator_node = fixed_arguments("$split", 2, value, scope)

    def node(frame: Frame) -> Any:
        text, separator = string_node(frame), separator_node(frame)
        if nullish(text) or nullish(separator):
            return None
        if not is_string(text):
            raise CommandError(
                40085,
                "$split requires an expression that evaluates to a string as a first argument,"
                f" found: {type_name(text)}",
            )
        if not is_string(separator):
            raise CommandError(
                40086,
                "$split requires an expression that evaluates to a string as a second argument,"
                f" found: {type_name(separator)}",
            )
        if not separator:
            raise CommandError(40087, "$split requires a non-empty separator")
        return text.split(separator)

    return fold(node, [string_node, separator_node])


def check_index(value: Any, name: str, argument: str) -> int:
    """An index argument: integral (40096) and nonnegative (40097)."""
    if not is_integral(value):
        raise CommandError(
            40096,
            f"{name}requires an integral {argument}, found a value of type: {type_name(value)},"
            f" with value: {value_string(value)}",
        )
    number = as_int(value)
    if number < 0:
        raise CommandError(
            40097, f"{name} requires a nonnegative {argument}, found: {value_string(value)}"
        )
    return number


@operator("$indexOfBytes")
def _parse_index_of_bytes(value: Any, scope: Scope) -> Node:
    name = "$indexOfBytes"
    nodes = ranged_arguments(name, 2, 4, value, scope)

    def node(frame: Frame) -> Any:
        text = nodes[0](frame)
        if nullish(text):
            return None
        if not is_string(text):
            raise CommandError(
                40091, f"{name} requires a string as the first argument, found: {type_name(text)}"
            )
        token = nodes[1](frame)
        if not is_string(token):
            raise CommandError(
                40092, f"{name} requires a string as the second argument, found: {type_name(token)}"
            )
        data, needle = text.encode("utf-8"), token.encode("utf-8")
        start = check_index(nodes[2](frame), name, "starting index") if len(nodes) > 2 else 0
        end = len(data)
        if len(nodes) > 3:
            end = min(len(data), check_index(nodes[3](frame), name, "ending index"))
        if start > len(data) or end < start:
            return -1
        return data[:end].find(needle, start)

    return fold(node, nodes)


@operator("$indexOfCP")
def _parse_index_of_cp(value: Any, scope: Scope) -> Node:
    name = "$indexOfCP"
    nodes = ranged_arguments(name, 2, 4, value, scope)

    def node(frame: Frame) -> Any:
        text = nodes[0](frame)
        if nullish(text):
            return None
        if not is_string(text):
            raise CommandError(
                40093, f"{name} requires a string as the first argument, found: {type_name(text)}"
            )
        token = nodes[1](frame)
        if not is_string(token):
            raise CommandError(
                40094, f"{name} requires a string as the second argument, found: {type_name(token)}"
            )
        start = check_index(nodes[2](frame), name, "starting index") if len(nodes) > 2 else 0
        end = len(text)
        if len(nodes) > 3:
            end = min(len(text), check_index(nodes[3](frame), name, "ending index"))
        if start == 0 and not text and not token:
            return 0
        for position in range(start, end):
            if text.startswith(token, position):
                return position
        return -1

    return fold(node, nodes)


# -- trimming -------------------------------------------------------------------------------------

#: The characters $trim removes by default (the server's kDefaultTrimWhitespaceChars).
WHITESPACE = "\0 \t\n\v\f\r\u00a0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B))


def _trim(name: str, left: bool, right: bool) -> None:
    def parse_trim(value: Any, scope: Scope) -> Node:
        if not isinstance(value, Mapping):
            raise CommandError(
                50696, f"{name} only supports an object as an argument, found {type_name(value)}"
            )
        input_node: Optional[Node] = None
        chars_node: Optional[Node] = None
        for field, item in value.items():
            if field == "input":
                input_node = parse(item, scope)
            elif field == "chars":
                chars_node = parse(item, scope)
            else:
                raise CommandError(50694, f"{name} found an unknown argument: {field}")
        if input_node is None:
            raise CommandError(50695, f"{name} requires an 'input' field")
        source: Node = input_node

        def node(frame: Frame) -> Any:
            text = source(frame)
            if nullish(text):
                return None
            if not is_string(text):
                raise CommandError(
                    50699,
                    f"{name} requires its input to be a string, got {value_string(text)} (of type"
                    f" {type_name(text)}) instead.",
                )
            chars = WHITESPACE
            if chars_node is not None:
                given = chars_node(frame)
                if nullish(given):
                    return None
                if not is_string(given):
                    raise CommandError(
                        50700,
                        f"{name} requires 'chars' to be a string, got {value_string(given)} (of"
                        f" type {type_name(given)}) instead.",
                    )
                chars = given
            if left and right:
                return text.strip(chars)
            return text.lstrip(chars) if left else text.rstrip(chars)

        return fold(node, [input_node, chars_node])

    operator(name)(parse_trim)


_trim("$trim", True, True)
_trim("$ltrim", True, False)
_trim("$rtrim", False, True)


# -- $replaceOne and $replaceAll -------------------------------------------------------------------


def _replace(name: str, count: int) -> None:
    def parse_replace(value: Any, scope: Scope) -> Node:
        if not isinstance(value, Mapping):
            raise CommandError(
                51751, f"{name} requires an object as an argument, found: {type_name(value)}"
            )
        parts: dict[str, Node] = {}
        for field, item in value.items():
            if field not in ("input", "find", "replacement"):
                raise CommandError(51750, f"{name} found an unknown argument: {field}")
            parts[str(field)] = parse(item, scope)
        for field, code in (("input", 51749), ("find", 51748), ("replacement", 51747)):
            if field not in parts:
                raise CommandError(code, f"{name} requires '{field}' to be specified")
        input_node, find_node, replacement_node = (
            parts["input"],
            parts["find"],
            parts["replacement"],
        )

        def node(frame: Frame) -> Any:
            text, find, replacement = (
                input_node(frame),
                find_node(frame),
                replacement_node(frame),
            )
            for field, given, code in (
                ("input", text, 51746),
                ("find", find, 51745),
                ("replacement", replacement, 51744),
            ):
                if not (is_string(given) or nullish(given)):
                    raise CommandError(
                        code,
                        f"{name} requires that '{field}' be a string, found: {value_string(given)}",
                    )
            if nullish(text) or nullish(find) or nullish(replacement):
                return None
            return text.replace(find, replacement, count)

        return fold(node, [input_node, find_node, replacement_node])

    operator(name)(parse_replace)


_replace("$replaceOne", 1)
_replace("$replaceAll", -1)


# -- regular expressions --------------------------------------------------------------------------

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}
_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<(?![=!])")


def _pcre_flags(name: str, options: str) -> int:
    flags = 0
    for letter in options:
        if letter not in _FLAGS:
            raise CommandError(51108, f"{name} invalid flag in regex options: {letter}")
        flags |= _FLAGS[letter]
    return flags


def compile_pcre(name: str, pattern: str, options: str) -> re.Pattern[str]:
    """A regular expression of an expression operator as Python runs it, with the
    server's errors for a bad flag (51108) or pattern (51111)."""
    flags = _pcre_flags(name, options)
    try:
        return re.compile(_NAMED_GROUP.sub("(?P<", pattern), flags)
    except re.error as exc:
        raise CommandError(51111, f"Invalid Regex in {name}: {exc}") from exc


def _regex_parts(name: str, pattern: Any, options: Any) -> Optional[re.Pattern[str]]:
    # ExpressionRegex::_extractRegexAndOptions and _compile: None for a null pattern.
    if not (nullish(pattern) or is_string(pattern) or isinstance(pattern, (Regex, re.Pattern))):
        raise CommandError(51105, f"{name} needs 'regex' to be of type string or regex")
    if not (nullish(options) or is_string(options)):
        raise CommandError(51106, f"{name} needs 'options' to be of type string")
    text: Optional[str] = None
    flags = ""
    if isinstance(pattern, (Regex, re.Pattern)):
        text = str(pattern.pattern)
        flags = regex_flags(pattern)
        if flags and not nullish(options):
            raise CommandError(
                51107,
                f"{name}: found regex option(s) specified in both 'regex' and 'option' fields",
            )
    elif is_string(pattern):
        text = pattern
    if not nullish(options):
        flags = options
    if text is not None and "\0" in text:
        raise CommandError(
            51109, f"{name}: regular expression cannot contain an embedded null byte"
        )
    if "\0" in flags:
        raise CommandError(
            51110, f"{name}: regular expression options cannot contain an embedded null byte"
        )
    _pcre_flags(name, flags)  # the flags are checked even without a pattern
    if text is None:
        return None
    return compile_pcre(name, text, flags)


def _match_document(match: re.Match[str]) -> dict[str, Any]:
    return {"match": match.group(0), "idx": match.start(), "captures": list(match.groups())}


def _regex(name: str) -> None:
    def parse_regex(value: Any, scope: Scope) -> Node:
        if not isinstance(value, Mapping):
            raise CommandError(
                51103, f"{name} expects an object of named arguments but found: {type_name(value)}"
            )
        parts: dict[str, Node] = {}
        for field, item in value.items():
            if field not in ("input", "regex", "options"):
                raise CommandError(31024, f"{name} found an unknown argument: {field}")
            parts[str(field)] = parse(item, scope)
        if "input" not in parts:
            raise CommandError(31022, f"{name} requires 'input' parameter")
        if "regex" not in parts:
            raise CommandError(31023, f"{name} requires 'regex' parameter")
        input_node, regex_node = parts["input"], parts["regex"]
        options_node = parts.get("options")
        prepared: Any = _NOT_PREPARED
        if is_constant(regex_node) and (options_node is None or is_constant(options_node)):
            # A constant pattern is compiled when the expression is optimized, so its errors
            # are the command's.
            options = constant_value(options_node) if options_node is not None else None
            prepared = _regex_parts(name, constant_value(regex_node), options)

        def node(frame: Frame) -> Any:
            text = input_node(frame)
            if not (nullish(text) or is_string(text)):
                raise CommandError(51104, f"{name} needs 'input' to be of type string")
            compiled = prepared
            if compiled is _NOT_PREPARED:
                options = options_node(frame) if options_node is not None else None
                compiled = _regex_parts(name, regex_node(frame), options)
            if compiled is None or nullish(text):
                if name == "$regexFindAll":
                    return []
                return False if name == "$regexMatch" else None
            if name == "$regexMatch":
                return compiled.search(text) is not None
            if name == "$regexFind":
                found = compiled.search(text)
                return None if found is None else _match_document(found)
            return _find_all(compiled, text)

        return fold(node, [input_node, regex_node, options_node])

    operator(name)(parse_regex)


_NOT_PREPARED: Any = object()


def _find_all(compiled: re.Pattern[str], text: str) -> list[Any]:
    out: list[Any] = []
    position = 0
    while True:
        found = compiled.search(text, position)
        if found is None:
            break
        out.append(_match_document(found))
        # An empty match moves one code point on; a match does not overlap the next.
        position = found.start() + 1 if found.end() == found.start() else found.end()
        if position >= len(text):
            break
    return out


_regex("$regexFind")
_regex("$regexFindAll")
_regex("$regexMatch")
