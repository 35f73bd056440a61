"""The statements of the insert, update and delete commands as a MongoDB 7.0 server
parses them, and which errors of a statement fail the whole command.

A server parses the whole command before it applies any statement (the commands'
IDL, ``write_ops.idl``: ``UpdateOpEntry``, ``DeleteOpEntry``, ``documents`` as an
array of objects, ``ordered`` a bool, between 1 and 100,000 statements). A
statement the parser refuses fails the command (``ok: 0``): a field it does not
know (40415), a required one missing (40414), one of the wrong type (14), an update
``u`` that is neither a document nor an array (FailedToParse, 9), an update pipeline
holding something else than documents (TypeMismatch, 14), a delete ``limit`` other
than 0 or 1 (FailedToParse, 9).

What goes wrong while a parsed statement is applied is a write error of that
statement (``writeErrors``, ``ok: 1``), the update pipeline's own stages included
(a ``$match`` in an update is InvalidOptions, 72, as a write error): the server's
``handleError`` records it and goes on (or stops, when ordered). It lets three kinds
fail the whole command instead (:func:`fails_the_command`): an interruption
(``isInterruption``: MaxTimeMSExpired, Interrupted, a step-down, ...), and
WouldChangeOwningShard; in a transaction a transient error (WriteConflict) too,
which :mod:`mongocore.sim.transactions` raises as the command's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bson import Decimal128, Int64

from mongocore.sim.codes import CommandError

__all__ = [
    "MAX_WRITE_BATCH_SIZE",
    "fails_the_command",
    "parse_deletes",
    "parse_inserts",
    "parse_updates",
]

#: write_ops::kMaxWriteBatchSize.
MAX_WRITE_BATCH_SIZE = 100_000

#: The Interruption category of a 7.0 server's error codes (error_codes.yml):
#: LockTimeout, MaxTimeMSExpired, CursorKilled, ExceededTimeLimit, ClientDisconnect,
#: the transaction coordinator's two, TransactionExceededLifetimeLimitSeconds,
#: InterruptedDueToStorageChange, InterruptedAtShutdown, Interrupted,
#: InterruptedDueToReplStateChange, ClientMarkedKilled.
INTERRUPTION_CODES = frozenset(
    {24, 50, 237, 262, 279, 281, 282, 290, 355, 11600, 11601, 11602, 46841}
)
#: WouldChangeOwningShard: the router retries the update as a delete and an insert.
WOULD_CHANGE_OWNING_SHARD = 283

# The fields of a statement (write_ops.idl), and the internal ones a server takes from
# other servers only, which the simulator does not honour and so refuses.
_UPDATE_FIELDS = frozenset({"q", "u", "arrayFilters", "hint", "multi", "upsert", "collation"})
_UPDATE_INTERNAL = frozenset(
    {"c", "upsertSupplied", "sampleId", "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery"}
)
_DELETE_FIELDS = frozenset({"q", "limit", "hint", "collation"})
_DELETE_INTERNAL = frozenset({"sampleId"})

# BSON type names as a server's errors spell them (bool before int: a Python bool is an
# int; Int64 before int: it is one too).
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "bool"),
    (Int64, "long"),
    (int, "int"),
    (float, "double"),
    (str, "string"),
    (Mapping, "object"),
    (list, "array"),
    (bytes, "binData"),
)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return next((n for t, n in _TYPE_NAMES if isinstance(value, t)), type(value).__name__)


def _wrong_type(path: str, value: Any, expected: str) -> CommandError:
    return CommandError(
        14,
        f"BSON field '{path}' is the wrong type '{_type_name(value)}', expected type '{expected}'",
    )


def fails_the_command(error: CommandError) -> bool:
    """Does this error of one statement fail the whole write command, as a server's
    ``handleError`` rethrows it, rather than being that statement's write error?"""
    return error.code in INTERRUPTION_CODES or error.code == WOULD_CHANGE_OWNING_SHARD


def check_ordered(name: str, cmd: Mapping[str, Any]) -> bool:
    """``ordered`` (a bool, default true)."""
    ordered = cmd.get("ordered", True)
    if not isinstance(ordered, bool):
        raise _wrong_type(f"{name}.ordered", ordered, "bool")
    return ordered


def _statements(name: str, field: str, cmd: Mapping[str, Any]) -> list[Any]:
    statements = cmd.get(field)
    if field not in cmd:
        raise CommandError(40414, f"BSON field '{name}.{field}' is missing but a required field")
    if not isinstance(statements, list):
        raise _wrong_type(f"{name}.{field}", statements, "array")
    if not 1 <= len(statements) <= MAX_WRITE_BATCH_SIZE:
        raise CommandError(
            16,
            f"Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}."
            f" Got {len(statements)} operations.",
        )
    for index, statement in enumerate(statements):
        if not isinstance(statement, Mapping):
            raise _wrong_type(f"{name}.{field}.{index}", statement, "object")
    return statements


def _check_fields(
    path: str, statement: Mapping[str, Any], known: frozenset[str], internal: frozenset[str]
) -> None:
    for key in statement:
        if key in internal:
            raise CommandError(
                238, f"BSON field '{path}.{key}' is internal to a cluster and not simulated"
            )
        if key not in known:
            raise CommandError(40415, f"BSON field '{path}.{key}' is an unknown field.")


def _require(path: str, statement: Mapping[str, Any], key: str) -> Any:
    if key not in statement:
        raise CommandError(40414, f"BSON field '{path}.{key}' is missing but a required field")
    return statement[key]


def _check_object(path: str, statement: Mapping[str, Any], key: str) -> None:
    if key in statement and not isinstance(statement[key], Mapping):
        raise _wrong_type(f"{path}.{key}", statement[key], "object")


def _check_hint(path: str, statement: Mapping[str, Any]) -> None:
    # indexHint: an index name or a key pattern.
    if "hint" in statement and not isinstance(statement["hint"], (str, Mapping)):
        raise CommandError(9, "Hint must be a string or an object")


def parse_inserts(cmd: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The documents of an insert command (an array of 1 to 100,000 documents)."""
    check_ordered("insert", cmd)
    return _statements("insert", "documents", cmd)


def parse_updates(cmd: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The statements of an update command, each checked as ``UpdateOpEntry``."""
    check_ordered("update", cmd)
    statements = _statements("update", "updates", cmd)
    path = "update.updates"
    for statement in statements:
        _check_fields(path, statement, _UPDATE_FIELDS, _UPDATE_INTERNAL)
        if not isinstance(_require(path, statement, "q"), Mapping):
            raise _wrong_type(f"{path}.q", statement["q"], "object")
        update = _require(path, statement, "u")
        if isinstance(update, list):
            # parsePipelineFromBSON: the stages themselves are parsed when applied.
            if not all(isinstance(stage, Mapping) for stage in update):
                raise CommandError(14, "Each element of the 'pipeline' array must be an object")
        elif not isinstance(update, Mapping):
            raise CommandError(9, "Update argument must be either an object or an array")
        for key in ("multi", "upsert"):
            if key in statement and not isinstance(statement[key], bool):
                raise _wrong_type(f"{path}.{key}", statement[key], "bool")
        if "arrayFilters" in statement:
            filters = statement["arrayFilters"]
            if not isinstance(filters, list):
                raise _wrong_type(f"{path}.arrayFilters", filters, "array")
            for index, spec in enumerate(filters):
                if not isinstance(spec, Mapping):
                    raise _wrong_type(f"{path}.arrayFilters.{index}", spec, "object")
        _check_object(path, statement, "collation")
        _check_hint(path, statement)
    return statements


def delete_limit(statement: Mapping[str, Any]) -> int:
    """A parsed delete statement's limit, 0 (every match) or 1."""
    return int(_limit_number(statement["limit"]))


def _limit_number(value: Any) -> float:
    # The server reads the limit as BSONElement::numberDouble(), which is 0 for a value
    # that is no number (a string or bool limit deletes every match).
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, (int, float, Decimal128)):
        return float(str(value)) if isinstance(value, Decimal128) else float(value)
    return 0.0


def parse_deletes(cmd: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The statements of a delete command, each checked as ``DeleteOpEntry``."""
    check_ordered("delete", cmd)
    statements = _statements("delete", "deletes", cmd)
    path = "delete.deletes"
    for statement in statements:
        _check_fields(path, statement, _DELETE_FIELDS, _DELETE_INTERNAL)
        if not isinstance(_require(path, statement, "q"), Mapping):
            raise _wrong_type(f"{path}.q", statement["q"], "object")
        limit = _limit_number(_require(path, statement, "limit"))
        if limit not in (0.0, 1.0):
            raise CommandError(
                9, f"The limit field in delete objects must be 0 or 1. Got {limit:g}"
            )
        _check_object(path, statement, "collation")
        _check_hint(path, statement)
    return statements
