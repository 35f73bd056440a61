"""Server error codes, their names, and the error replies a MongoDB 7.0 server sends.

A command that fails answers ``{ok: 0, errmsg, code, codeName}`` (plus
``errorLabels`` where the server adds them). The codes and names are the server's
own (its ``error_codes.yml``); only those the simulator can produce are listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

__all__ = [
    "CODE_NAMES",
    "RETRYABLE_WRITE_CODES",
    "STATE_CHANGE_CODES",
    "TOPOLOGY_VERSION_CODES",
    "CloseConnection",
    "CommandError",
    "code_name",
    "error_reply",
]

CODE_NAMES: dict[int, str] = {
    1: "InternalError",
    2: "BadValue",
    6: "HostUnreachable",
    7: "HostNotFound",
    9: "FailedToParse",
    11: "UserNotFound",
    13: "Unauthorized",
    14: "TypeMismatch",
    15: "Overflow",
    16: "InvalidLength",
    17: "ProtocolError",
    18: "AuthenticationFailed",
    20: "IllegalOperation",
    23: "AlreadyInitialized",
    24: "LockTimeout",
    26: "NamespaceNotFound",
    27: "IndexNotFound",
    28: "PathNotViable",
    31: "RoleNotFound",
    40: "ConflictingUpdateOperators",
    43: "CursorNotFound",
    47: "NoMatchingDocument",
    48: "NamespaceExists",
    50: "MaxTimeMSExpired",
    52: "DollarPrefixedFieldName",
    53: "InvalidIdField",
    54: "NotSingleValueField",
    56: "EmptyFieldName",
    59: "CommandNotFound",
    64: "WriteConcernFailed",
    66: "ImmutableField",
    67: "CannotCreateIndex",
    70: "ShardNotFound",
    72: "InvalidOptions",
    73: "InvalidNamespace",
    76: "NoReplicationEnabled",
    79: "UnknownReplWriteConcern",
    85: "IndexOptionsConflict",
    86: "IndexKeySpecsConflict",
    89: "NetworkTimeout",
    91: "ShutdownInProgress",
    94: "NotYetInitialized",
    95: "NotSecondary",
    96: "OperationFailed",
    100: "UnsatisfiableWriteConcern",
    112: "WriteConflict",
    115: "CommandNotSupported",
    117: "ConflictingOperationInProgress",
    121: "DocumentValidationFailure",
    133: "FailedToSatisfyReadPreference",
    134: "ReadConcernMajorityNotAvailableYet",
    139: "JSInterpreterFailure",
    149: "ViewDepthLimitExceeded",
    161: "IncompatibleCollationVersion",
    166: "CommandNotSupportedOnView",
    167: "OptionNotSupportedOnView",
    168: "InvalidPipelineOperator",
    189: "PrimarySteppedDown",
    217: "IncompleteTransactionHistory",
    225: "TransactionTooOld",
    238: "NotImplemented",
    239: "SnapshotTooOld",
    241: "ConversionFailure",
    246: "SnapshotUnavailable",
    251: "NoSuchTransaction",
    256: "TransactionCommitted",
    260: "InvalidResumeToken",
    262: "ExceededTimeLimit",
    263: "OperationNotSupportedInTransaction",
    267: "PreparedTransactionInProgress",
    280: "ChangeStreamFatalError",
    286: "ChangeStreamHistoryLost",
    291: "NoQueryExecutionPlans",
    292: "QueryExceededMemoryLimitNoDiskUseAllowed",
    322: "APIVersionError",
    323: "APIStrictError",
    324: "APIDeprecationError",
    334: "MechanismUnavailable",
    352: "UnsupportedOpQueryCommand",
    354: "LoadBalancerSupportMismatch",
    9001: "SocketException",
    10107: "NotWritablePrimary",
    11000: "DuplicateKey",
    11600: "InterruptedAtShutdown",
    11601: "Interrupted",
    11602: "InterruptedDueToReplStateChange",
    13113: "MergeStageNoMatchingDocument",
    13435: "NotPrimaryNoSecondaryOk",
    13436: "NotPrimaryOrSecondary",
    31082: "SearchNotEnabled",
}

# The server's "RetriableError" category: a retryable write (a command with a
# txnNumber, outside a transaction) failing with one of these gets RetryableWriteError.
RETRYABLE_WRITE_CODES: frozenset[int] = frozenset(
    {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 134}
)

# "Not primary" and "node is recovering" errors.
STATE_CHANGE_CODES: frozenset[int] = frozenset({91, 189, 10107, 11600, 11602, 13435, 13436})

# The server's "NotPrimaryError" category: it adds its topologyVersion to these replies
# so that a client can tell a stale error from a fresh one. Shutdown errors (91, 11600)
# carry one only while a server quiesces, which the simulator does not model.
TOPOLOGY_VERSION_CODES: frozenset[int] = frozenset({189, 10107, 11602, 13435, 13436})


def code_name(code: int) -> str:
    """The server's name for ``code`` ("Location<code>" for an unnamed assertion)."""
    return CODE_NAMES.get(code, f"Location{code}")


class CommandError(Exception):
    """A command failed: becomes an ``{ok: 0}`` reply."""

    def __init__(
        self,
        code: int,
        errmsg: str,
        *,
        labels: Iterable[str] = (),
        extra: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(errmsg)
        self.code = code
        self.errmsg = errmsg
        self.labels = list(labels)
        self.extra = dict(extra or {})

    def to_reply(self) -> dict[str, Any]:
        return error_reply(self.code, self.errmsg, labels=self.labels, extra=self.extra)


class CloseConnection(Exception):
    """Close the client's connection without replying (a fail point or a killed member)."""


def error_reply(
    code: int,
    errmsg: str,
    *,
    labels: Iterable[str] = (),
    extra: Optional[Mapping[str, Any]] = None,
) -> dict[str, Any]:
    """An error reply shaped like the server's: ok, errmsg, code, codeName[, errorLabels]."""
    reply: dict[str, Any] = {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": code_name(code)}
    label_list = list(labels)
    if label_list:
        reply["errorLabels"] = label_list
    if extra:
        reply.update(extra)
    return reply
