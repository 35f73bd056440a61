"""Command monitoring: one command on one connection, with its started, succeeded or
failed event.

Spec: Command Logging and Monitoring ("Guarantees": every started event has exactly
one succeeded or failed event with the same requestId; "Succeeded or Failed": a
reply with ``ok: 1`` succeeded, write errors included; "Implementation Notes":
document sequences appear in the started event's command as arrays named by their
identifier; "Security": sensitive commands are redacted). Every attempt of an
operation is one command here, with its own requestId; the attempts of one
operation, and the batches of one bulk write, share an operationId. The started
event comes once the message is encoded: a command that cannot be (a document too
large, a value BSON cannot hold) is never sent and has no events, as in pymongo.

The log messages of commands (the ``mongocore.command`` logger) are built from these
events by :mod:`mongocore.io.command_log`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from mongocore.core.events import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
    EventPublisher,
)
from mongocore.core.stable_api import add_api_fields
from mongocore.errors import OperationFailure, command_error_from_reply
from mongocore.io import clock as _clock
from mongocore.io.connection import Connection
from mongocore.io.counters import atomic_next, next_request_id

if TYPE_CHECKING:
    from types import EllipsisType


SENSITIVE_COMMANDS = frozenset(
    {
        "authenticate",
        "saslstart",
        "saslcontinue",
        "getnonce",
        "createuser",
        "updateuser",
        "copydbgetnonce",
        "copydbsaslstart",
        "copydb",
    }
)
_HELLO_NAMES = frozenset({"hello", "ismaster"})

#: A new operationId: it links the attempts and batches of one operation.
next_operation_id = atomic_next(itertools.count(1))


def is_sensitive(command_name: str, command: Mapping[str, Any]) -> bool:
    """Is this command redacted in events? (hello and legacy hello only when they carry
    ``speculativeAuthenticate``; names compare case-insensitively, as legacy hello has
    two spellings.)"""
    name = command_name.lower()
    if name in SENSITIVE_COMMANDS:
        return True
    return name in _HELLO_NAMES and "speculativeAuthenticate" in command


def redacted_failure(error: BaseException) -> BaseException:
    """The failure reported for a sensitive command: a server error keeps only its
    code, codeName and errorLabels; any other error is reported as it is."""
    if not isinstance(error, OperationFailure):
        return error
    details: dict[str, Any] = {}
    if error.code is not None:
        details["code"] = error.code
    code_name = error.details.get("codeName")
    if code_name is not None:
        details["codeName"] = code_name
    if error.error_labels:
        details["errorLabels"] = sorted(error.error_labels)
    return OperationFailure("(redacted)", error.code, details, error.error_labels)


def _event_command(
    command: Mapping[str, Any], sequences: Optional[Mapping[str, Sequence[Any]]]
) -> dict[str, Any]:
    document = dict(command)
    for identifier, documents in (sequences or {}).items():
        document[identifier] = list(documents)
    return document


def _event_reply(
    command: Mapping[str, Any], reply: dict[str, Any], sensitive: bool
) -> Mapping[str, Any]:
    """The succeeded event's reply: ``{}`` for a sensitive command ("Security"), and
    ``{ok: 1}`` for an unacknowledged write ("Unacknowledged/Acknowledged Writes"),
    whatever the server answered (mongocore reads the reply of a w:0 write)."""
    if sensitive:
        return {}
    concern = command.get("writeConcern")
    if isinstance(concern, Mapping) and concern.get("w") == 0:
        return {"ok": 1}
    return reply


def run_command(
    connection: Connection,
    database: str,
    command: dict[str, Any],
    publisher: EventPublisher,
    *,
    operation_id: Optional[int] = None,
    sequences: Optional[Mapping[str, Sequence[Any]]] = None,
    event_sequences: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None,
    timeout: Union[float, EllipsisType, None] = ...,
    deadline: Optional[float] = None,
) -> dict[str, Any]:
    """Run ``command`` on ``connection`` and publish its command events.

    ``timeout`` and ``deadline`` are :meth:`Connection.command`'s: the first bounds
    sending the message and reading the whole reply, each; the second (the end of the
    operation's timeoutMS, a ``time.monotonic()`` value) bounds the exchange as a whole.

    ``sequences`` go on the wire as OP_MSG document sequences (documents or their
    BSON bytes); ``event_sequences``, if given, are the same documents decoded, for
    the started event (otherwise ``sequences`` are shown as they are). A reply
    without ``ok: 1`` raises OperationFailure (after a failed event); a reply with
    ``ok: 1`` is returned as it is, write errors and write concern errors included.
    """
    listeners = publisher.command_listeners
    if not listeners:
        # No listener: no event to build, nothing to time (the common case).
        reply = connection.command(
            database,
            command,
            sequences=sequences,
            timeout=timeout,
            check=False,
            deadline=deadline,
        )
        if reply.get("ok") != 1:
            raise command_error_from_reply(reply)
        return reply
    name = next(iter(command))
    # The declared API version's fields, added here (the connection would add them
    # anyway) so that the started event shows the command as it is sent.
    server_api = connection.settings.server_api
    if server_api is not None:
        add_api_fields(command, server_api)
    request_id = next_request_id()
    common: dict[str, Any] = {
        "database_name": database,
        "command_name": name,
        "request_id": request_id,
        "operation_id": request_id if operation_id is None else operation_id,
        "address": connection.address,
        "connection_id": connection.id,
        "server_connection_id": connection.server_connection_id,
        "service_id": connection.service_id,
    }
    sensitive = is_sensitive(name, command)
    shown: Mapping[str, Any] = (
        {}
        if sensitive
        else _event_command(
            {**command, "$db": database}, event_sequences if event_sequences else sequences
        )
    )
    started: list[float] = []  # when the started event was published, once it was

    def publish_started() -> None:
        # Once the message is encoded: a command that cannot be (DocumentTooLarge,
        # InvalidDocument) is never sent, and has no events.
        publisher.publish(listeners, "started", CommandStartedEvent(command=shown, **common))
        started.append(_clock.perf_counter())

    try:
        reply = connection.command(
            database,
            command,
            sequences=sequences,
            timeout=timeout,
            check=False,
            request_id=request_id,  # the events' requestId is the message's
            deadline=deadline,
            before_send=publish_started,
        )
        if reply.get("ok") != 1:
            raise command_error_from_reply(reply)
    except BaseException as exc:
        if not started:
            raise
        duration = _clock.perf_counter() - started[0]
        failure = redacted_failure(exc) if sensitive else exc
        publisher.publish(
            listeners, "failed", CommandFailedEvent(duration=duration, failure=failure, **common)
        )
        raise
    duration = _clock.perf_counter() - started[0]
    publisher.publish(
        listeners,
        "succeeded",
        CommandSucceededEvent(
            duration=duration, reply=_event_reply(command, reply, sensitive), **common
        ),
    )
    return reply
