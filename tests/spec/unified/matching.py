"""Unified test format: "Evaluating Matches".

``match(expected, actual, entities)`` raises ``AssertionError`` naming the path of the
first mismatch. It follows the format's pseudocode: root-level documents may carry
extra keys, nested ones may not; arrays must have the same length; numbers compare
by value across int32, int64 and double; ``$$``-prefixed single-key documents are the
special operators ($$exists, $$type, $$matchesEntity, $$matchesHexBytes,
$$unsetOrMatches, $$sessionLsid, $$lte, $$matchAsDocument, $$matchAsRoot).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from bson import (
    Binary,
    Code,
    DBRef,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Timestamp,
    json_util,
)

#: How an entity name is resolved for $$matchesEntity and $$sessionLsid.
EntityLookup = Callable[[str], Any]

_MISSING = object()

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _session_lsid(entities: EntityLookup, name: str) -> Any:
    """The lsid a session entity had when it was created: the format has runners save
    it then, so $$sessionLsid still matches after the session ended. The entity map
    (the lookup's owner) keeps them; any other lookup gives the live session's."""
    recorded = getattr(getattr(entities, "__self__", None), "session_lsid", None)
    lsid = recorded(name) if callable(recorded) else None
    return lsid if lsid is not None else getattr(entities(name), "session_id", None)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Int64)) and not isinstance(value, bool)


def _is_int32(value: Any) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, (bool, Int64))
        and INT32_MIN <= value <= INT32_MAX
    )


def _is_int64(value: Any) -> bool:
    # bson decodes an int64 as Int64; a Python int outside int32 is encoded as one.
    return isinstance(value, Int64) or (
        isinstance(value, int) and not isinstance(value, bool) and not _is_int32(value)
    )


#: The $type aliases the format uses, as predicates on decoded BSON values.
TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "double": lambda v: isinstance(v, float),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, (list, tuple)),
    "binData": lambda v: isinstance(v, (bytes, Binary)),
    "undefined": lambda v: False,
    "objectId": lambda v: isinstance(v, ObjectId),
    "bool": lambda v: isinstance(v, bool),
    "date": lambda v: isinstance(v, datetime.datetime),
    "null": lambda v: v is None,
    "regex": lambda v: isinstance(v, (Regex, re.Pattern)),
    "dbPointer": lambda v: isinstance(v, DBRef),
    "javascript": lambda v: isinstance(v, Code) and v.scope is None,
    "symbol": lambda v: False,
    "javascriptWithScope": lambda v: isinstance(v, Code) and v.scope is not None,
    "int": _is_int32,
    "timestamp": lambda v: isinstance(v, Timestamp),
    "long": _is_int64,
    "decimal": lambda v: isinstance(v, Decimal128),
    "minKey": lambda v: isinstance(v, MinKey),
    "maxKey": lambda v: isinstance(v, MaxKey),
    # The $type alias "number" is every numeric BSON type, decimal included.
    "number": lambda v: _is_number(v) or isinstance(v, Decimal128),
}


def is_special(value: Any) -> bool:
    """Is ``value`` a special operator: a document whose first and only key starts with $$?"""
    return isinstance(value, Mapping) and len(value) == 1 and next(iter(value)).startswith("$$")


def _fail(path: str, message: str) -> AssertionError:
    return AssertionError(f"at {path or '<root>'}: {message}")


def _same_scalar(expected: Any, actual: Any) -> bool:
    if _is_number(expected) and _is_number(actual):
        if isinstance(expected, float) or isinstance(actual, float):
            # BSON compares NaN equal to NaN (a stored NaN is found by a NaN query).
            both_nan = math.isnan(float(expected)) and math.isnan(float(actual))
            return both_nan or bool(float(expected) == float(actual))
        return int(expected) == int(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if type(expected) is not type(actual) and not (
        isinstance(expected, bytes) and isinstance(actual, bytes)
    ):
        return False
    return bool(expected == actual)


def match(
    expected: Any,
    actual: Any,
    entities: Optional[EntityLookup] = None,
    *,
    root: bool = True,
    path: str = "",
) -> None:
    """Assert that ``actual`` matches ``expected`` (raises AssertionError otherwise)."""
    if isinstance(expected, Mapping):
        if is_special(expected):
            _operator(expected, actual, entities, root=root, path=path)
            return
        if not isinstance(actual, Mapping):
            raise _fail(path, f"expected a document, got {actual!r}")
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else key
            present = key in actual
            if is_special(value):
                name, argument = next(iter(value.items()))
                if name == "$$exists":
                    if bool(argument) != present:
                        raise _fail(
                            sub, "expected the key to be " + ("present" if argument else "absent")
                        )
                    continue
                if name == "$$unsetOrMatches" and not present:
                    continue
                if not present and name != "$$type":
                    raise _fail(sub, "expected the key to be present")
            elif not present:
                raise _fail(sub, f"expected the key to be present (actual keys: {list(actual)})")
            match(value, actual.get(key, _MISSING), entities, root=False, path=sub)
        if not root:
            extra = [k for k in actual if k not in expected]
            if extra:
                raise _fail(path, f"unexpected keys {extra} in a nested document {actual!r}")
        return
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)):
            raise _fail(path, f"expected an array, got {actual!r}")
        if len(expected) != len(actual):
            raise _fail(
                path, f"expected {len(expected)} elements, got {len(actual)}: {list(actual)!r}"
            )
        for index, (e, a) in enumerate(zip(expected, actual)):
            match(e, a, entities, root=False, path=f"{path}[{index}]")
        return
    if actual is _MISSING:
        raise _fail(path, "expected the key to be present")
    if not _same_scalar(expected, actual):
        raise _fail(path, f"expected {expected!r}, got {actual!r}")


def match_documents(
    expected: Sequence[Any], actual: Sequence[Any], entities: Optional[EntityLookup] = None
) -> None:
    """An iterable result (find, aggregate, list*): same length, each element a root."""
    if not isinstance(actual, (list, tuple)):
        raise _fail("", f"expected an array of documents, got {actual!r}")
    if len(expected) != len(actual):
        raise _fail("", f"expected {len(expected)} documents, got {len(actual)}: {list(actual)!r}")
    for index, (e, a) in enumerate(zip(expected, actual)):
        match(e, a, entities, root=True, path=f"[{index}]")


def _operator(
    operator: Mapping[str, Any],
    actual: Any,
    entities: Optional[EntityLookup],
    *,
    root: bool,
    path: str,
) -> None:
    name, argument = next(iter(operator.items()))
    if name == "$$type":
        names = [argument] if isinstance(argument, str) else list(argument)
        if actual is _MISSING:
            raise _fail(path, f"expected a value of type {names}, the key is absent")
        for type_name in names:
            if type_name not in TYPE_CHECKS:
                raise ValueError(f"unknown $$type {type_name!r}")
        if not any(TYPE_CHECKS[t](actual) for t in names):
            raise _fail(path, f"expected a value of type {names}, got {actual!r}")
    elif name == "$$exists":
        # As a key's value the caller decides it; nested in another operator
        # ({$$unsetOrMatches: {$$exists: true}}) it is decided on the value given. At the
        # root it cannot be evaluated.
        if not path:
            raise ValueError("$$exists used outside a document")
        if bool(argument) != (actual is not _MISSING):
            raise _fail(path, "expected the value to be " + ("present" if argument else "absent"))
    elif name == "$$unsetOrMatches":
        # An operation that returned nothing (the root) is "unset" too.
        if actual is _MISSING or (actual is None and not path):
            return
        match(argument, actual, entities, root=root, path=path)
    elif name == "$$matchesEntity":
        if entities is None:
            raise ValueError("$$matchesEntity needs the entity map")
        match(entities(str(argument)), actual, entities, root=root, path=path)
    elif name == "$$matchesHexBytes":
        if not isinstance(argument, str) or len(argument) % 2:
            raise ValueError(f"malformed $$matchesHexBytes {argument!r}")
        wanted = bytes.fromhex(argument)
        if not isinstance(actual, (bytes, Binary)) or bytes(actual) != wanted:
            raise _fail(path, f"expected bytes {argument}, got {actual!r}")
    elif name == "$$sessionLsid":
        if entities is None:
            raise ValueError("$$sessionLsid needs the entity map")
        lsid = _session_lsid(entities, str(argument))
        if lsid is None:
            raise ValueError(f"entity {argument!r} is not a session")
        match(dict(lsid), actual, entities, root=False, path=path)
    elif name == "$$lte":
        if not _is_number(actual) or not _is_number(argument):
            raise _fail(path, f"expected a number <= {argument!r}, got {actual!r}")
        if float(actual) > float(argument):
            raise _fail(path, f"expected a number <= {argument!r}, got {actual!r}")
    elif name == "$$matchAsDocument":
        if not isinstance(actual, str):
            raise _fail(path, f"expected an extended JSON string, got {actual!r}")
        match(argument, json_util.loads(actual), entities, root=False, path=path)
    elif name == "$$matchAsRoot":
        match(argument, actual, entities, root=True, path=path)
    else:
        raise ValueError(f"unknown special operator {name!r} at {path}")
