"""``$jsonSchema`` as a 7.0 server evaluates it (MongoDB manual, "$jsonSchema"): the
keywords' checks when a schema is given, and a document's evaluation, which yields the
``schemaRulesNotSatisfied`` details a failed validation reports (sim/validation.py)
and which the engine's matcher uses for the ``$jsonSchema`` query operator.

The keywords are those MongoDB supports (draft 4 with ``bsonType``):
bsonType, type, required, properties, patternProperties, additionalProperties,
minProperties, maxProperties, dependencies, minimum, maximum, exclusiveMinimum,
exclusiveMaximum, multipleOf, minLength, maxLength, pattern, enum, items,
additionalItems, minItems, maxItems, uniqueItems, allOf, anyOf, oneOf, not, title,
description. ``$ref``, ``$schema``, ``default``, ``definitions``, ``format`` and ``id``
are refused as a server refuses them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Callable, Optional

from bson import Decimal128

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import equal

__all__ = ["Details", "bson_type", "check_schema", "schema_failures"]

Details = dict[str, Any]

_SUPPORTED = frozenset(
    {
        "bsonType", "type", "required", "properties", "patternProperties",
        "additionalProperties", "minProperties", "maxProperties", "dependencies",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern", "enum", "items", "additionalItems",
        "minItems", "maxItems", "uniqueItems", "allOf", "anyOf", "oneOf", "not",
        "title", "description",
    }
)  # fmt: skip
_REFUSED = frozenset({"$ref", "$schema", "default", "definitions", "format", "id"})
_BSON_TYPES = frozenset(
    {
        "double", "string", "object", "array", "binData", "undefined", "objectId", "bool",
        "date", "null", "regex", "dbPointer", "javascript", "symbol", "javascriptWithScope",
        "int", "timestamp", "long", "decimal", "minKey", "maxKey", "number",
    }
)  # fmt: skip
_JSON_TYPES = {
    "object": "object",
    "array": "array",
    "number": "number",
    "boolean": "bool",
    "string": "string",
    "null": "null",
}
_NUMBERS = frozenset({"double", "int", "long", "decimal"})


def bson_type(value: Any) -> str:
    """The BSON type alias ($type name) of a decoded value: the engine's, so that
    ``bsonType`` and ``$type`` never disagree (a Code value is "javascript")."""
    return type_name(value)


def _number(value: Any) -> Optional[float]:
    kind = bson_type(value)
    if kind not in _NUMBERS:
        return None
    if isinstance(value, Decimal128):
        return float(value.to_decimal())
    return float(value)


def _equal(a: Any, b: Any) -> bool:
    return equal(a, b)


def check_schema(schema: Any) -> None:
    if not isinstance(schema, Mapping):
        raise CommandError(9, "$jsonSchema must be an object")
    for keyword, value in schema.items():
        if keyword in _REFUSED:
            raise CommandError(9, f"$jsonSchema keyword '{keyword}' is not currently supported")
        if keyword not in _SUPPORTED:
            raise CommandError(9, f"Unknown $jsonSchema keyword: {keyword}")
        if keyword == "type" and value == "integer":
            raise CommandError(
                9, "$jsonSchema type 'integer' is not currently supported; use bsonType"
            )
        if keyword in ("bsonType", "type"):
            names = value if isinstance(value, list) else [value]
            known = _BSON_TYPES if keyword == "bsonType" else set(_JSON_TYPES)
            for name in names:
                if name not in known:
                    raise CommandError(9, f"Unknown type name alias: {name}")
        elif keyword in ("properties", "patternProperties"):
            if not isinstance(value, Mapping):
                raise CommandError(14, f"$jsonSchema keyword '{keyword}' must be an object")
            for sub in value.values():
                check_schema(sub)
        elif keyword in ("not",) or (
            keyword in ("additionalProperties", "additionalItems", "items")
            and isinstance(value, Mapping)
        ):
            check_schema(value)
        elif keyword in ("allOf", "anyOf", "oneOf") or (
            keyword == "items" and isinstance(value, list)
        ):
            if not isinstance(value, list) or not value:
                raise CommandError(9, f"$jsonSchema keyword '{keyword}' must be a nonempty array")
            for sub in value:
                check_schema(sub)
        elif keyword == "required" and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise CommandError(14, "$jsonSchema keyword 'required' must be an array of strings")
        elif keyword == "pattern":
            try:
                re.compile(str(value))
            except re.error as exc:
                raise CommandError(51091, "Regular expression is invalid") from exc


def schema_failures(schema: Mapping[str, Any], value: Any) -> list[Details]:
    """The rules of ``schema`` that ``value`` does not satisfy (empty: it passes)."""
    failed: list[Details] = []
    kind = bson_type(value)
    for keyword, spec in schema.items():
        check = _KEYWORDS.get(keyword)
        if check is None:
            continue
        detail = check(schema, spec, value, kind)
        if detail is not None:
            failed.append({"operatorName": keyword, **detail})
    return failed


Check = Callable[[Mapping[str, Any], Any, Any, str], Optional[Details]]


def _type_check(keyword: str) -> Check:
    def check(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
        names = spec if isinstance(spec, list) else [spec]
        if keyword == "type":
            names = [_JSON_TYPES.get(name, name) for name in names]
        for name in names:
            if name == kind or (name == "number" and kind in _NUMBERS):
                return None
        return {
            "specifiedAs": {keyword: spec},
            "reason": "type did not match",
            "consideredValue": value,
            "consideredType": kind,
        }

    return check


def _required(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if kind != "object":
        return None
    missing = [name for name in spec if name not in value]
    if not missing:
        return None
    return {"specifiedAs": {"required": spec}, "missingProperties": missing}


def _properties(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if kind != "object":
        return None
    failing = []
    for name, sub in spec.items():
        if name in value:
            rules = schema_failures(sub, value[name])
            if rules:
                failing.append({"propertyName": name, "details": rules})
    return {"propertiesNotSatisfied": failing} if failing else None


def _pattern_properties(
    schema: Mapping[str, Any], spec: Any, value: Any, kind: str
) -> Optional[Details]:
    if kind != "object":
        return None
    failing = []
    for pattern, sub in spec.items():
        regex = re.compile(pattern)
        for name, item in value.items():
            if regex.search(name):
                rules = schema_failures(sub, item)
                if rules:
                    failing.append(
                        {"propertyName": name, "regexMatched": pattern, "details": rules}
                    )
    return {"propertiesNotSatisfied": failing} if failing else None


def _additional_properties(
    schema: Mapping[str, Any], spec: Any, value: Any, kind: str
) -> Optional[Details]:
    if kind != "object" or spec is True:
        return None
    named = set(schema.get("properties") or {})
    patterns = [re.compile(p) for p in schema.get("patternProperties") or {}]
    extra = [n for n in value if n not in named and not any(p.search(n) for p in patterns)]
    if spec is False:
        if not extra:
            return None
        return {"specifiedAs": {"additionalProperties": False}, "additionalProperties": extra}
    failing = []
    for name in extra:
        rules = schema_failures(spec, value[name])
        if rules:
            failing.append({"propertyName": name, "details": rules})
    return {"propertiesNotSatisfied": failing} if failing else None


def _count(keyword: str, applies: str, size: Callable[[Any], int], reason: str) -> Check:
    minimum = keyword.startswith("min")

    def check(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
        if kind != applies:
            return None
        n = size(value)
        if (n >= spec) if minimum else (n <= spec):
            return None
        return {"specifiedAs": {keyword: spec}, "reason": reason, "consideredValue": value}

    return check


def _bound(keyword: str) -> Check:
    exclusive_key = "exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum"

    def check(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
        number = _number(value)
        if number is None:
            return None
        limit = float(_number(spec) or 0.0)
        exclusive = bool(schema.get(exclusive_key, False))
        if keyword == "minimum":
            ok = number > limit if exclusive else number >= limit
        else:
            ok = number < limit if exclusive else number <= limit
        if ok:
            return None
        specified = {keyword: spec}
        if exclusive:
            specified[exclusive_key] = True
        return {"specifiedAs": specified, "reason": "comparison failed", "consideredValue": value}

    return check


def _multiple_of(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    number = _number(value)
    divisor = _number(spec)
    if number is None or not divisor:
        return None
    quotient = number / divisor
    if math.isfinite(quotient) and quotient == int(quotient):
        return None
    return {
        "specifiedAs": {"multipleOf": spec},
        "reason": "considered value is not a multiple of the specified value",
        "consideredValue": value,
    }


def _pattern(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if kind != "string" or re.search(str(spec), value):
        return None
    return {
        "specifiedAs": {"pattern": spec},
        "reason": "regular expression did not match",
        "consideredValue": value,
    }


def _enum(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if any(_equal(value, candidate) for candidate in spec):
        return None
    return {
        "specifiedAs": {"enum": spec},
        "reason": "value was not found in enum",
        "consideredValue": value,
    }


def _items(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if kind != "array":
        return None
    if isinstance(spec, Mapping):
        for index, item in enumerate(value):
            rules = schema_failures(spec, item)
            if rules:
                return {
                    "reason": "At least one item did not match the sub-schema",
                    "itemIndex": index,
                    "details": rules,
                }
        return None
    for index, (sub, item) in enumerate(zip(spec, value)):
        rules = schema_failures(sub, item)
        if rules:
            return {
                "reason": "At least one item did not match the sub-schema",
                "itemIndex": index,
                "details": rules,
            }
    return None


def _additional_items(
    schema: Mapping[str, Any], spec: Any, value: Any, kind: str
) -> Optional[Details]:
    items = schema.get("items")
    if kind != "array" or not isinstance(items, list) or spec is True:
        return None
    extra = value[len(items) :]
    if spec is False:
        if not extra:
            return None
        return {
            "specifiedAs": {"additionalItems": False},
            "reason": "found additional items",
            "additionalItems": extra,
        }
    for offset, item in enumerate(extra):
        rules = schema_failures(spec, item)
        if rules:
            return {
                "reason": "At least one additional item did not match the sub-schema",
                "itemIndex": len(items) + offset,
                "details": rules,
            }
    return None


def _unique_items(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if kind != "array" or not spec:
        return None
    for index, item in enumerate(value):
        if any(_equal(item, other) for other in value[:index]):
            return {
                "specifiedAs": {"uniqueItems": True},
                "reason": "found a duplicate item",
                "consideredValue": value,
                "duplicatedValue": item,
            }
    return None


def _combination(keyword: str) -> Check:
    def check(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
        results = [schema_failures(sub, value) for sub in spec]
        passed = [i for i, rules in enumerate(results) if not rules]
        if keyword == "allOf" and len(passed) == len(spec):
            return None
        if keyword == "anyOf" and passed:
            return None
        if keyword == "oneOf" and len(passed) == 1:
            return None
        if keyword == "oneOf" and passed:
            return {"reason": "more than one subschema matched", "matchingSchemaIndexes": passed}
        failing = [{"index": i, "details": rules} for i, rules in enumerate(results) if rules]
        return {"schemasNotSatisfied": failing}

    return check


def _not(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if schema_failures(spec, value):
        return None
    return {"reason": "child expression matched"}


def _dependencies(schema: Mapping[str, Any], spec: Any, value: Any, kind: str) -> Optional[Details]:
    if kind != "object":
        return None
    failing = []
    for name, dependency in spec.items():
        if name not in value:
            continue
        if isinstance(dependency, list):
            missing = [d for d in dependency if d not in value]
            if missing:
                failing.append({"conditionalProperty": name, "missingProperties": missing})
        else:
            rules = schema_failures(dependency, value)
            if rules:
                failing.append({"conditionalProperty": name, "details": rules})
    return {"failingDependencies": failing} if failing else None


_PROPERTY_COUNT = "specified number of properties was not satisfied"
_KEYWORDS: dict[str, Check] = {
    "bsonType": _type_check("bsonType"),
    "type": _type_check("type"),
    "required": _required,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "minProperties": _count("minProperties", "object", len, _PROPERTY_COUNT),
    "maxProperties": _count("maxProperties", "object", len, _PROPERTY_COUNT),
    "minimum": _bound("minimum"),
    "maximum": _bound("maximum"),
    "multipleOf": _multiple_of,
    "minLength": _count("minLength", "string", len, "specified string length was not satisfied"),
    "maxLength": _count("maxLength", "string", len, "specified string length was not satisfied"),
    "pattern": _pattern,
    "enum": _enum,
    "items": _items,
    "additionalItems": _additional_items,
    "minItems": _count("minItems", "array", len, "array did not match specified length"),
    "maxItems": _count("maxItems", "array", len, "array did not match specified length"),
    "uniqueItems": _unique_items,
    "allOf": _combination("allOf"),
    "anyOf": _combination("anyOf"),
    "oneOf": _combination("oneOf"),
    "not": _not,
    "dependencies": _dependencies,
}  # fmt: skip
