"""The Stable API parameters of a command, checked as a MongoDB 7.0 server checks them.

Every command may carry ``apiVersion``, ``apiStrict`` and ``apiDeprecationErrors``
(MongoDB manual, "Stable API"). Before anything else runs, a 7.0 server:

1. checks their types: ``apiVersion`` a string, the two flags booleans
   (TypeMismatch, 14);
2. refuses ``apiStrict`` or ``apiDeprecationErrors`` given without ``apiVersion``
   (an unnamed assertion, 4886600), whatever their value;
3. refuses any version but "1" (APIVersionError, 322; version "2" exists only on a
   server started with ``acceptApiVersion2``, which the simulator never is);
4. with ``apiStrict: true``, refuses a command outside API version 1
   (APIStrictError, 323), the handshake's legacy ``isMaster`` included, and an
   aggregate with a stage outside it (the diagnostic stages: ``$collStats``,
   ``$currentOp``, ``$indexStats``, ``$listLocalSessions``, ``$listSessions``,
   ``$planCacheStats``);
5. with ``apiDeprecationErrors: true``, refuses a command deprecated in version 1
   (APIDeprecationError, 324): version 1 deprecates no command yet, so never.

Not modeled: the ``requireApiVersion`` server parameter (never set here), and the
check that a getMore or a transaction's later commands repeat the parameters of the
command that opened the cursor or the transaction (APIMismatchError). An unknown
command asked with ``apiStrict: true`` is refused by step 4, where a server would
answer CommandNotFound first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Int64

from mongocore.sim.codes import CommandError

__all__ = ["API_STRICT_ERROR", "API_VERSION_ERROR", "check_api_parameters"]

#: Aggregation stages a server keeps out of API version 1 (its diagnostic stages).
_STAGES_OUTSIDE_VERSION_1 = frozenset(
    {
        "$collStats",
        "$currentOp",
        "$indexStats",
        "$listLocalSessions",
        "$listSessions",
        "$planCacheStats",
    }
)

API_VERSION_ERROR = 322
API_STRICT_ERROR = 323
# An unnamed assertion of the server's: a flag without a version.
_FLAG_WITHOUT_VERSION = 4886600
_TYPE_MISMATCH = 14

# BSON type names as a server's errors spell them (bool before int: a Python bool is an
# int; Int64 before int: it is one too).
_BSON_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "bool"),
    (Int64, "long"),
    (int, "int"),
    (float, "double"),
    (str, "string"),
    (Mapping, "object"),
    (list, "array"),
)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return next((n for t, n in _BSON_TYPE_NAMES if isinstance(value, t)), type(value).__name__)


def _check_type(cmd: Mapping[str, Any], field: str, expected: type, expected_name: str) -> None:
    if field in cmd and type(cmd[field]) is not expected:
        raise CommandError(
            _TYPE_MISMATCH,
            f"BSON field 'APIParametersFromClient.{field}' is the wrong type"
            f" '{_type_name(cmd[field])}', expected type '{expected_name}'",
        )


def check_api_parameters(name: str, cmd: Mapping[str, Any], *, api_version_1: bool) -> None:
    """Raise the error a 7.0 server answers for ``cmd``'s API parameters, if any;
    ``api_version_1``: the command is in API version 1 (its registry entry says so, as
    a 7.0 server declares it: listCommands reports it in ``apiVersions``; saslStart and
    saslContinue are in it, so a strict client can authenticate)."""
    if "apiVersion" not in cmd and "apiStrict" not in cmd and "apiDeprecationErrors" not in cmd:
        return
    _check_type(cmd, "apiVersion", str, "string")
    _check_type(cmd, "apiStrict", bool, "bool")
    _check_type(cmd, "apiDeprecationErrors", bool, "bool")
    version = cmd.get("apiVersion")
    if version is None:
        raise CommandError(
            _FLAG_WITHOUT_VERSION,
            "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion",
        )
    if version == "2":
        raise CommandError(API_VERSION_ERROR, "Cannot accept API version 2")
    if version != "1":
        raise CommandError(API_VERSION_ERROR, 'API version must be "1"')
    if cmd.get("apiStrict") is True and not api_version_1:
        raise CommandError(
            API_STRICT_ERROR,
            f"Provided apiStrict:true, but the command {name} is not in API Version 1."
            " Information on supported commands and migrations in API Version 1 can be"
            " found at https://dochub.mongodb.org/core/manual-versioned-api",
        )
    if cmd.get("apiStrict") is True and name == "aggregate":
        pipeline = cmd.get("pipeline")
        for stage in pipeline if isinstance(pipeline, list) else ():
            outside = set(stage) & _STAGES_OUTSIDE_VERSION_1 if isinstance(stage, Mapping) else ()
            for stage_name in sorted(outside):
                raise CommandError(
                    API_STRICT_ERROR,
                    f"{stage_name} is not allowed with 'apiStrict: true' in API Version 1",
                )
