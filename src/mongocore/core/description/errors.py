"""SDAM application error handling, as a pure decision.

Seed: server-discovery-and-monitoring.md, section "Error handling" ("Application
errors", its pseudocode handleError/isStaleError/isStateChangeError, "Network
error when reading or writing", '"not writable primary" and "node is
recovering"', and "MongoDB Handshake errors").

``classify(description, error, pool_generation)`` says what the I/O shell must do;
it changes nothing itself. The shell applies the decision while it holds the
topology lock, so that clearing a pool and updating the description happen
together, as the seed requires.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from mongocore._deferred_dataclass import dataclass, field
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.topology_updates import WIRE_VERSION_4_2
from mongocore.core.description.topology_version import (
    TopologyVersion,
    compare_topology_version,
)
from mongocore.core.description.types import TopologyType

RECOVERING_CODES = frozenset({11600, 11602, 13436, 189, 91})
NOT_WRITABLE_PRIMARY_CODES = frozenset({10107, 13435, 10058})
SHUTDOWN_CODES = frozenset({11600, 91})
#: Backpressure: an overloaded server is not an unavailable one.
SYSTEM_OVERLOADED_LABEL = "SystemOverloadedError"
#: Goes with SYSTEM_OVERLOADED_LABEL: the operation may be tried again.
RETRYABLE_ERROR_LABEL = "RetryableError"


class ErrorKind(str, enum.Enum):
    NETWORK = "network"
    TIMEOUT = "timeout"
    COMMAND = "command"


@dataclass(frozen=True)
class ApplicationError:
    """What the shell knows about an error on an application connection."""

    address: Address
    kind: ErrorKind
    #: The generation of the connection (before the handshake: of the pool when the
    #: connection attempt started).
    generation: int
    #: True once the MongoDB handshake (hello and authentication) completed.
    completed_handshake: bool = True
    #: True if the error happened during the authentication step of the handshake.
    in_authentication: bool = False
    #: The connection's own maxWireVersion (from its handshake), 0 if unknown.
    max_wire_version: int = 0
    #: The server's reply, for command errors (ok: 0, or a writeConcernError).
    reply: Optional[Mapping[str, Any]] = None
    error_labels: frozenset[str] = field(default_factory=frozenset)
    service_id: Optional[Any] = None
    message: str = ""


class ErrorDecision(NamedTuple):
    """What to do about an application error. All False/None: nothing at all.

    (A NamedTuple, not a dataclass: IGNORE and STALE below are built at import.)"""

    #: The error is stale (older pool generation or topologyVersion): ignore it.
    stale: bool = False
    #: The Unknown description to apply to the topology, if the server is marked Unknown.
    mark_unknown: Optional[ServerDescription] = None
    clear_pool: bool = False
    #: With clear_pool in LoadBalanced mode: the serviceId whose connections to clear.
    service_id: Optional[Any] = None
    request_check: bool = False
    cancel_check: bool = False


IGNORE = ErrorDecision()
STALE = ErrorDecision(stale=True)


def is_recovering(message: str, code: Optional[int]) -> bool:
    """A "node is recovering" error: by code, or by message only when there is no code."""
    if code is not None:
        return code in RECOVERING_CODES
    return "not master or secondary" in message or "node is recovering" in message


def is_not_writable_primary(message: str, code: Optional[int]) -> bool:
    """A "not writable primary" error: by code, or by message only when there is no code."""
    if code is not None:
        return code in NOT_WRITABLE_PRIMARY_CODES
    if is_recovering(message, None):
        return False
    return "not master" in message


def is_shutdown(code: Optional[int]) -> bool:
    """The "node is shutting down" subset of the recovering codes."""
    return code is not None and code in SHUTDOWN_CODES


def is_state_change_error(message: str, code: Optional[int]) -> bool:
    return is_recovering(message, code) or is_not_writable_primary(message, code)


def state_change_of(reply: Mapping[str, Any]) -> Optional[tuple[str, Optional[int]]]:
    """The (message, code) of a State Change Error in a reply, if it has one.

    The top-level error is checked first, then a writeConcernError. Errors in
    ``writeErrors`` are never checked.
    """
    candidates = []
    if not reply.get("ok"):
        candidates.append(reply)
    wce = reply.get("writeConcernError")
    if isinstance(wce, Mapping):
        candidates.append(wce)
    for part in candidates:
        message = str(part.get("errmsg", ""))
        code = part.get("code")
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        if is_state_change_error(message, code):
            return message, code
    return None


def classify(
    description: TopologyDescription, error: ApplicationError, pool_generation: int
) -> ErrorDecision:
    """handleError: decide how an application error changes SDAM state."""
    current = description.servers.get(error.address)
    if current is None:
        return IGNORE
    if error.generation < pool_generation:
        return STALE
    load_balanced = description.type is TopologyType.LOAD_BALANCED
    if load_balanced and error.service_id is None:
        # Load Balancer spec, "Error handling": errors before the hello completed (no
        # serviceId yet) are ignored, a failed hello included.
        return IGNORE

    reply = error.reply
    if error.kind is ErrorKind.COMMAND and reply is not None:
        try:
            error_tv = TopologyVersion.parse(reply.get("topologyVersion"))
        except (TypeError, KeyError, ValueError):
            error_tv = None  # a malformed topologyVersion cannot prove staleness
        if compare_topology_version(current.topology_version, error_tv) >= 0:
            return STALE
        state_change = state_change_of(reply)
        if state_change is not None:
            message, code = state_change
            clear = is_shutdown(code) or error.max_wire_version < WIRE_VERSION_4_2
            if load_balanced:
                return ErrorDecision(clear_pool=clear, service_id=error.service_id)
            unknown = ServerDescription.from_error(
                error.address,
                f"{message} (code {code})" if code is not None else message,
                topology_version=error_tv,
            )
            return ErrorDecision(mark_unknown=unknown, clear_pool=clear, request_check=True)

    network = error.kind is ErrorKind.NETWORK
    # A timeout while connecting or in hello, or after the handshake (perhaps a slow
    # operation), does not prove the server is gone; one during authentication does.
    auth_timeout = error.kind is ErrorKind.TIMEOUT and error.in_authentication
    # Any other error while establishing the connection (an authentication failure).
    handshake_error = error.kind is ErrorKind.COMMAND and not error.completed_handshake
    if not (network or auth_timeout or handshake_error):
        return IGNORE
    if SYSTEM_OVERLOADED_LABEL in error.error_labels:
        return IGNORE
    if load_balanced:
        return ErrorDecision(clear_pool=True, service_id=error.service_id, cancel_check=True)
    unknown = ServerDescription.from_error(error.address, error.message or error.kind.value)
    return ErrorDecision(mark_unknown=unknown, clear_pool=True, cancel_check=True)
