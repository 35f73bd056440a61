"""What the retry executor runs: an operation, its attempts' commands, its outcome.

Specs: the inputs of the seeds' retry loops (retryable-writes.rst 1.0 "Executing
Retryable Write Commands", retryable-reads.rst 1.3.0 "Executing Retryable Read
Commands"): one command, built afresh for each attempt from what that attempt selected
(:class:`AttemptContext`); and server selection, "Use of read preferences with
commands" and "Passing read preference to mongos" (:func:`apply_read_preference`). The
executor itself is :mod:`mongocore.io.executor`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import TopologyType
from mongocore.core.retry_policy import RetryKind
from mongocore.core.selection.read_preference import (
    Mode,
    ReadPreference,
    read_preference_for_server,
)
from mongocore.io.pinning import PinnedConnection

if TYPE_CHECKING:
    from mongocore.api.client_session import ClientSession
    from mongocore.io.connection import Connection

__all__ = [
    "AttemptContext",
    "Command",
    "CommandBuilder",
    "CommandOutcome",
    "Operation",
    "apply_read_preference",
    "new_operation",
]


class AttemptContext(NamedTuple):
    """What an operation's command builder may look at for one attempt (one per
    attempt, so a NamedTuple: cheaper to build than a frozen dataclass)."""

    server: ServerDescription
    topology_type: TopologyType
    max_wire_version: int
    connection: Connection
    session: ClientSession
    attempt: int


class Command(NamedTuple):
    """One attempt's command: the body, and OP_MSG document sequences.

    ``sequences`` go on the wire (documents, or their BSON bytes); ``event_sequences``
    are the same documents decoded, for command events, when ``sequences`` hold bytes.
    """

    body: dict[str, Any]
    sequences: Optional[Mapping[str, Sequence[Any]]] = None
    event_sequences: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None


CommandBuilder = Callable[[AttemptContext], Command]


class Operation:
    """An operation for the executor: one command, rebuilt for each attempt.

    ``read_preference`` None selects a writable server. ``read_concern`` (a
    readConcern document, possibly empty) is sent by commands that take one, with
    ``afterClusterTime`` added in a causally consistent session. ``address`` pins
    the operation to one server (getMore, killCursors: no selection, one attempt).
    ``timeout_ms`` bounds the whole operation, retries included.

    ``explicit_read_preference``: the read preference was given to the operation
    itself (not inherited); in a transaction it is kept instead of the
    transaction's. ``opens_cursor``: the command opens a server cursor (find,
    aggregate, listCollections, ...); in load-balanced mode its connection stays
    pinned to the cursor (CommandOutcome's ``pinned``) while the cursor is open.
    ``pinned``: run on this pinned connection (a cursor's getMore and killCursors
    behind a load balancer): no selection, no checkout, one attempt.
    ``continue_on``: the server a bulk write's earlier commands ran on. The first
    attempt runs there without a selection while the topology still describes it as
    writable: a bulk write makes one selection, as pymongo's does, unless the server
    changes; a retry selects anew.
    ``operation_name``: the public method's name where server selection's log
    messages must give it instead of the command's (Server Selection, "Logging":
    ``runCommand``, ``countDocuments``, ``watch``, ...); None gives ``name``.

    The executor fills in ``attempts`` (commands sent or tried) and
    ``may_have_written`` (a failed attempt may have applied the write).

    A plain class with slots, not a dataclass: one is built for every operation, by
    :func:`new_operation` (calling a class with keyword arguments costs a dict more).
    """

    __slots__ = (
        "acknowledged",
        "address",
        "attempts",
        "build",
        "continue_on",
        "database",
        "explicit_read_preference",
        "may_have_written",
        "name",
        "opens_cursor",
        "operation_id",
        "operation_name",
        "pinned",
        "read_concern",
        "read_preference",
        "retry",
        "session",
        "timeout_ms",
    )

    name: str
    database: str
    build: CommandBuilder
    session: ClientSession
    retry: RetryKind
    read_preference: Optional[ReadPreference]
    read_concern: Optional[Mapping[str, Any]]
    acknowledged: bool
    timeout_ms: Optional[float]
    address: Optional[Address]
    continue_on: Optional[Address]
    operation_id: Optional[int]
    operation_name: Optional[str]
    explicit_read_preference: bool
    opens_cursor: bool
    pinned: Optional[PinnedConnection]
    attempts: int
    may_have_written: bool

    def __repr__(self) -> str:
        return f"<Operation {self.name} on {self.database!r} retry={self.retry.name}>"


def checked_timeout_ms(value: Any) -> float:
    """A timeoutMS given to an operation, a database or a collection, checked: a number
    of milliseconds, 0 for no limit (Client Side Operations Timeout: "Drivers MUST error
    if a negative value is specified")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"timeout_ms must be a number of milliseconds, not {value!r}")
    if value < 0:
        raise ValueError(f"timeout_ms must be 0 (no limit) or positive, not {value!r}")
    return value


#: Operation instances are made without calling the class (see new_operation).
_new_object = object.__new__


def new_operation(
    *,
    name: str,
    database: str,
    build: CommandBuilder,
    session: ClientSession,
    retry: RetryKind = RetryKind.NONE,
    read_preference: Optional[ReadPreference] = None,
    read_concern: Optional[Mapping[str, Any]] = None,
    acknowledged: bool = True,
    timeout_ms: Optional[float] = None,
    address: Optional[Address] = None,
    operation_id: Optional[int] = None,
    explicit_read_preference: bool = False,
    opens_cursor: bool = False,
    pinned: Optional[PinnedConnection] = None,
    operation_name: Optional[str] = None,
    continue_on: Optional[Address] = None,
) -> Operation:
    """A new :class:`Operation`, nothing attempted yet.

    A function rather than the class's ``__init__``: calling a class with keyword
    arguments packs them into a dict and unpacks them again for ``__init__`` (some
    3.6 thousand instructions on CPython 3.11, for every operation); a function takes
    them as they are.
    """
    op: Operation = _new_object(Operation)
    op.name = name
    op.database = database
    op.build = build
    op.session = session
    op.retry = retry
    op.read_preference = read_preference
    op.read_concern = read_concern
    op.acknowledged = acknowledged
    op.timeout_ms = timeout_ms
    op.address = address
    op.operation_id = operation_id
    op.explicit_read_preference = explicit_read_preference
    op.opens_cursor = opens_cursor
    op.pinned = pinned
    op.operation_name = operation_name
    op.continue_on = continue_on
    op.attempts = 0
    op.may_have_written = False
    return op


class CommandOutcome(NamedTuple):
    """A successful command: its reply, and where it ran (cursors continue there).

    ``pinned``: the connection a cursor-opening command left pinned to its cursor
    (load-balanced mode, the cursor still open); the cursor releases it."""

    reply: dict[str, Any]
    address: Address
    server: ServerDescription
    operation_id: int
    pinned: Optional[PinnedConnection] = None


def apply_read_preference(
    command: dict[str, Any],
    read_preference: ReadPreference,
    topology_type: TopologyType,
    server: ServerDescription,
) -> None:
    """Express the read preference in an OP_MSG command (server selection seed, "Use of
    read preferences with commands", "Passing read preference to mongos"), by the
    newer spec's OP_MSG rules where OP_MSG leaves the seed's OP_QUERY rules no way:

    - OP_MSG has no secondaryOk bit. A mongos or load balancer gets ``$readPreference``
      for every mode but primary, secondaryPreferred without tags nor
      maxStalenessSeconds included (the seed's OP_QUERY rule expresses that one with
      the bit alone);
    - a replica set member gets the read preference document for every mode but
      primary, and nothing for primary;
    - a member reached directly (Single topology) gets ``{mode: primaryPreferred}``
      for primary, else the document, so that it serves the read whatever its state;
    - a Standalone gets nothing: it serves every read.
    """
    if "$readPreference" in command:
        return
    needed = read_preference_for_server(read_preference, topology_type, server.type)
    if needed.document is not None:
        command["$readPreference"] = needed.document
    elif needed.secondary_ok:
        if read_preference.mode is Mode.PRIMARY:
            # A direct connection reads from any member (Topology type: Single).
            command["$readPreference"] = {"mode": "primaryPreferred"}
        else:
            command["$readPreference"] = read_preference.document()
