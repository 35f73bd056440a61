"""Schema validation of a simulated mongod (MongoDB manual, "Schema Validation"; the
server's DocumentValidationFailure error details).

A collection's validator is a query filter, in which ``$jsonSchema`` may appear at the
top level or under ``$and``/``$or``/``$nor``. :func:`check_validator` refuses what a
server refuses when the validator is set; :func:`failure_details` evaluates a document
and returns None when it passes, else the ``errInfo.details`` document a 7.0 server
builds (``operatorName``, ``specifiedAs``, ``reason``, ``consideredValue``,
``schemaRulesNotSatisfied``, ...). The query operators are the engine's, the
``$jsonSchema`` keywords sim/json_schema.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.matcher import Matcher, compile_filter
from mongocore.sim.engine.paths import candidates, split
from mongocore.sim.engine.values import MISSING
from mongocore.sim.json_schema import Details, bson_type, check_schema, schema_failures
from mongocore.sim.query import match_context

__all__ = ["bson_type", "check_validator", "failure_details"]


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
            check_schema(value)
        elif key in ("$where", "$text", "$near", "$nearSphere"):
            raise CommandError(72, f"{key} is not allowed in collection validators")
    _matcher({key: value for key, value in _without_schema(validator).items()})


def _matcher(flt: Mapping[str, Any]) -> Matcher:
    """The engine's matcher of a validator's query clause."""
    return compile_filter(flt, match_context(None))


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
        rules = schema_failures(value, doc)
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
    if _matcher({key: value}).matches(dict(doc)):
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
    present = [v for v, _ in candidates(dict(doc), split(key)) if v is not MISSING]
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
