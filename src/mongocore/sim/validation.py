"""Schema validation of a simulated mongod (MongoDB manual, "Schema Validation" and
"$jsonSchema"; the server's DocumentValidationFailure error details).

A collection's validator is a query filter, in which ``$jsonSchema`` may appear at the
top level or under ``$and``/``$or``/``$nor``. :func:`check_validator` refuses what a
server refuses when the validator is set; :func:`failure_details` evaluates a document
and returns None when it passes, else the ``errInfo.details`` document a 7.0 server
builds (``operatorName``, ``specifiedAs``, ``reason``, ``consideredValue``,
``schemaRulesNotSatisfied``, ...). The query operators themselves are mongomock's.

The ``$jsonSchema`` keywords are those MongoDB supports (draft 4 with ``bsonType``):
bsonType, type, required, properties, patternProperties, additionalProperties,
minProperties, maxProperties, dependencies, minimum, maximum, exclusiveMinimum,
exclusiveMaximum, multipleOf, minLength, maxLength, pattern, enum, items,
additionalItems, minItems, maxItems, uniqueItems, allOf, anyOf, oneOf, not, title,
description. ``$ref``, ``$schema``, ``default``, ``definitions``, ``format`` and ``id``
are refused as a server refuses them.
"""

from __future__ import annotations

import datetime
import math
import operator
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Callable, Optional

from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from mongomock import filtering

from mongocore.sim.codes import CommandError
from mongocore.sim.mongomock_fixes import MISSING

__all__ = ["bson_type", "check_validator", "failure_details"]

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
    """The BSON type alias ($type name) of a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if -(2**31) <= value < 2**31 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, (Decimal128, Decimal)):
        return "decimal"
    if isinstance(value, str):
        return "string"
    if isinstance(value, DBRef):
        return "object"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, datetime.datetime):
        return "date"
    if isinstance(value, (bytes, Binary, uuid.UUID)):
        return "binData"
    if isinstance(value, (Regex, re.Pattern)):
        return "regex"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, Code):
        return "javascriptWithScope" if value.scope else "javascript"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    return "object"


def _number(value: Any) -> Optional[float]:
    kind = bson_type(value)
    if kind not in _NUMBERS:
        return None
    if isinstance(value, Decimal128):
        return float(value.to_decimal())
    return float(value)


def _equal(a: Any, b: Any) -> bool:
    return bool(filtering.bson_compare(operator.eq, a, b, can_compare_types=False))  # type: ignore[no-untyped-call]


# -- checking a validator when it is set -------------------------------------------------


def check_validator(validator: Any) -> None:
    """Refuse a validator a server refuses (FailedToParse, 9)."""
    if not isinstance(validator, Mapping):
        raise CommandError(14, "'validator' has to be a document")
    for key, value in validator.items():
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for clause in value:
                check_validator(clause)
        elif key == "$jsonSchema":
            _check_schema(value)
        elif key in ("$where", "$text", "$near", "$nearSphere"):
            raise CommandError(72, f"{key} is not allowed in collection validators")
    try:
        filtering.filter_applies(_without_schema(validator), {})  # type: ignore[no-untyped-call]
    except NotImplementedError as exc:
        raise CommandError(238, "a validator operator is not supported by the simulator") from exc
    except Exception as exc:
        raise CommandError(2, "the validator is not a valid query") from exc


def _without_schema(validator: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in validator.items():
        if key == "$jsonSchema":
            continue
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            out[key] = [_without_schema(clause) for clause in value] or [{}]
        else:
            out[key] = value
    return out


def _check_schema(schema: Any) -> None:
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
                _check_schema(sub)
        elif keyword in ("not",) or (
            keyword in ("additionalProperties", "additionalItems", "items")
            and isinstance(value, Mapping)
        ):
            _check_schema(value)
        elif keyword in ("allOf", "anyOf", "oneOf") or (
            keyword == "items" and isinstance(value, list)
        ):
            if not isinstance(value, list) or not value:
                raise CommandError(9, f"$jsonSchema keyword '{keyword}' must be a nonempty array")
            for sub in value:
                _check_schema(sub)
        elif keyword == "required" and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise CommandError(14, "$jsonSchema keyword 'required' must be an array of strings")
        elif keyword == "pattern":
            try:
                re.compile(str(value))
            except re.error as exc:
                raise CommandError(51091, "Regular expression is invalid") from exc


# -- evaluating a document -----------------------------------------------------------------


def failure_details(validator: Mapping[str, Any], doc: Mapping[str, Any]) -> Optional[Details]:
    """None if ``doc`` satisfies ``validator``, else the server's ``errInfo.details``."""
    clauses = _clauses(validator, doc)
    failing = [(index, details) for index, details in enumerate(clauses) if details is not None]
    if not failing:
        return None
    if len(clauses) == 1:
        return failing[0][1]
    return {
        "operatorName": "$and",
        "clausesNotSatisfied": [{"index": i, "details": d} for i, d in failing],
    }


def _clauses(validator: Mapping[str, Any], doc: Mapping[str, Any]) -> list[Optional[Details]]:
    return [_clause(key, value, doc) for key, value in validator.items()]


def _clause(key: str, value: Any, doc: Mapping[str, Any]) -> Optional[Details]:
    if key == "$jsonSchema":
        rules = _schema(value, doc)
        if not rules:
            return None
        return {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": rules}
    if key in ("$and", "$or", "$nor"):
        results = [failure_details(clause, doc) for clause in value]
        if key == "$and":
            bad = [(i, d) for i, d in enumerate(results) if d is not None]
        elif key == "$or":
            failed = [(i, d) for i, d in enumerate(results) if d is not None]
            bad = [] if len(failed) < len(results) else failed
        else:
            bad = [(i, {"operatorName": "$nor"}) for i, d in enumerate(results) if d is None]
        if not bad:
            return None
        return {
            "operatorName": key,
            "clausesNotSatisfied": [{"index": i, "details": d} for i, d in bad],
        }
    if filtering.filter_applies({key: value}, doc):  # type: ignore[no-untyped-call]
        return None
    return _query_failure(key, value, doc)


def _query_failure(key: str, value: Any, doc: Mapping[str, Any]) -> Details:
    if key.startswith("$"):
        return {
            "operatorName": key,
            "specifiedAs": {key: value},
            "reason": "expression did not match",
        }
    operator_name = "$eq"
    if isinstance(value, Mapping) and value and all(str(k).startswith("$") for k in value):
        operator_name = str(next(iter(value)))
    details: Details = {"operatorName": operator_name, "specifiedAs": {key: value}}
    present = [v for v in filtering.iter_key_candidates(key, doc) if v is not MISSING]  # type: ignore[no-untyped-call]
    if not present:
        details["reason"] = "field was missing"
        return details
    considered = present[0]
    if operator_name == "$type":
        details["reason"] = "type did not match"
        details["consideredValue"] = considered
        details["consideredType"] = bson_type(considered)
    else:
        details["reason"] = "comparison failed"
        details["consideredValue"] = considered
    return details


def _schema(schema: Mapping[str, Any], value: Any) -> list[Details]:
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
            rules = _schema(sub, value[name])
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
                rules = _schema(sub, item)
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
        rules = _schema(spec, value[name])
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
            rules = _schema(spec, item)
            if rules:
                return {
                    "reason": "At least one item did not match the sub-schema",
                    "itemIndex": index,
                    "details": rules,
                }
        return None
    for index, (sub, item) in enumerate(zip(spec, value)):
        rules = _schema(sub, item)
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
        rules = _schema(spec, item)
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
        results = [_schema(sub, value) for sub in spec]
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
    if _schema(spec, value):
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
            rules = _schema(dependency, value)
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
