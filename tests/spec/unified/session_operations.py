"""Unified test format: the session operations of the transactions suites
("startTransaction", "commitTransaction", "abortTransaction", "withTransaction",
"endSession"), the session options they use ("defaultTransactionOptions"), and the
special test operations about sessions in transactions ("assertSessionTransactionState",
"assertSessionPinned", "assertSessionUnpinned", "targetedFailPoint").

Kept apart from :mod:`tests.spec.unified.operations` and the runner, which dispatch
here for these names (:func:`handles`, :func:`handles_special`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from mongocore.api.client_session import ClientSession
from mongocore.api.transaction_options import TransactionOptions
from mongocore.core.transaction_state import TransactionState
from tests.spec.unified.entities import (
    EntityMap,
    UnsupportedFeature,
    read_concern,
    read_preference,
    write_concern,
)

OPERATIONS = frozenset(
    {"startTransaction", "commitTransaction", "abortTransaction", "withTransaction", "endSession"}
)
SPECIAL_OPERATIONS = frozenset(
    {
        "assertSessionTransactionState",
        "assertSessionPinned",
        "assertSessionUnpinned",
        "targetedFailPoint",
    }
)

#: The format's names of the transaction states (a commit that sent nothing is
#: "committed" too).
STATE_NAMES = {
    TransactionState.NONE: "none",
    TransactionState.STARTING: "starting",
    TransactionState.IN_PROGRESS: "in_progress",
    TransactionState.COMMITTED: "committed",
    TransactionState.COMMITTED_EMPTY: "committed",
    TransactionState.ABORTED: "aborted",
}

#: Runs one operation of a withTransaction callback: its expectations are checked as
#: for any operation, and its error (expected or not) is raised again, for
#: with_transaction to see.
Execute = Callable[[Mapping[str, Any]], None]


def handles(target: Any, name: str) -> bool:
    """Is this operation one of this module's?"""
    return isinstance(target, ClientSession) and name in OPERATIONS


def handles_special(name: str) -> bool:
    return name in SPECIAL_OPERATIONS


def transaction_options(document: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """The format's transaction options as keyword arguments of start_transaction."""
    keywords: dict[str, Any] = {}
    for key, value in (document or {}).items():
        if key == "readConcern":
            keywords["read_concern"] = read_concern(value)
        elif key == "writeConcern":
            keywords["write_concern"] = write_concern(value)
        elif key == "readPreference":
            keywords["read_preference"] = read_preference(value)
        elif key == "maxCommitTimeMS":
            keywords["max_commit_time_ms"] = int(value)
        else:
            raise UnsupportedFeature(f"transaction option {key!r}")
    return keywords


def default_transaction_options(
    document: Optional[Mapping[str, Any]],
) -> Optional[TransactionOptions]:
    """sessionOptions.defaultTransactionOptions."""
    if document is None:
        return None
    return TransactionOptions(**transaction_options(document))


def run(session: ClientSession, name: str, args: Any, execute: Execute) -> Any:
    """Run the operation (``args`` is an ``operations.Arguments``)."""
    if name == "endSession":
        args.done()
        session.end_session()
        return None
    if name == "withTransaction":
        callback: Sequence[Mapping[str, Any]] = args.require("callback")
        keywords = transaction_options(args.rest())

        def run_callback(_: ClientSession) -> None:
            for operation in callback:
                execute(operation)

        session.with_transaction(run_callback, **keywords)
        return None
    if name == "startTransaction":
        keywords = transaction_options(args.rest())
        session.start_transaction(**keywords)
        return None
    args.done()
    if name == "commitTransaction":
        session.commit_transaction()
    else:
        session.abort_transaction()
    return None


def special(entities: EntityMap, name: str, args: Mapping[str, Any]) -> None:
    """The special test operations of this module (see :func:`handles_special`)."""
    session = entities.session(str(args["session"]))
    if name == "assertSessionTransactionState":
        state = STATE_NAMES[session.transaction_state]
        if state != args["state"]:
            raise AssertionError(f"the session's transaction state is {state}, not {args['state']}")
    elif name in ("assertSessionPinned", "assertSessionUnpinned"):
        pinned = session.pinned_address
        if (pinned is not None) != (name == "assertSessionPinned"):
            raise AssertionError(f"{name}: the session is pinned to {pinned}")
    else:
        # targetedFailPoint: on the mongos the session is pinned to, through its client.
        address = session.pinned_address
        if address is None:
            raise AssertionError("targetedFailPoint: the session is not pinned to a mongos")
        server = session.client.topology.get_server(address)
        if server is None:
            raise AssertionError(f"targetedFailPoint: {address} is not in the topology")
        session.client.run_on(server, "admin", dict(args["failPoint"]))
