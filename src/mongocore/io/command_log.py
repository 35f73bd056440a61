"""Structured log messages of commands.

Spec: command-logging-and-monitoring.md, "Log Messages" ("Command Log Message Common
Fields", "Command Started Message", "Command Succeeded Message", "Command Failed
Message", and "Security": sensitive commands are redacted), with the general rules of
logging.md.

The ``command`` component of the logging spec, one module as for the other
components (``topology`` in :mod:`mongocore.io.log_messages`, ``serverSelection`` in
:mod:`mongocore.io.selection_log`, ``connection`` in :mod:`mongocore.io.pool_log`), built
on what they share in :mod:`mongocore.io.structured_log`.

A :class:`CommandLogger` is an event subscriber (which the spec allows): it turns
one client's command events into these messages, on the logger named for the
component, :data:`COMMAND_LOGGER` (``mongocore.command``), at ``DEBUG``. The Client
subscribes one when it is created, if that logger is enabled for DEBUG at that
moment (:func:`command_log_listeners`); otherwise nothing at all is done, and each
message is built only after ``isEnabledFor(DEBUG)`` said yes. Every message also
carries ``topologyId``, as the other components' messages do, so that the messages
of one client can be told apart.

The events already hide a sensitive command and its reply (``{}``) and keep only
the code of a server error; the messages show the same empty documents, and a
sensitive command's server error as the empty string (a network error is not the
server's words, and is shown as it is, as the spec's tests expect).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Optional, Union

from mongocore.core.events import (
    CommandFailedEvent,
    CommandListener,
    CommandStartedEvent,
    CommandSucceededEvent,
    Listener,
)
from mongocore.errors import OperationFailure
from mongocore.io.command_monitoring import is_sensitive
from mongocore.io.structured_log import (
    StructuredLogger,
    document_json,
    duration_ms,
    failure_text,
    server_fields,
)

#: The logging spec's component of these messages, and the logger that carries it.
COMPONENT = "command"
COMMAND_LOGGER = "mongocore.command"

# The "message" value of each log message.
COMMAND_STARTED = "Command started"
COMMAND_SUCCEEDED = "Command succeeded"
COMMAND_FAILED = "Command failed"

_AnyCommandEvent = Union[CommandStartedEvent, CommandSucceededEvent, CommandFailedEvent]


class CommandLogger(StructuredLogger, CommandListener):
    """Emits the command log messages of one client.

    Register it (it is a CommandListener) with the client's EventPublisher.
    ``topology_id`` is the id of the client's topology.
    """

    LOGGER_NAME = COMMAND_LOGGER

    def __init__(
        self,
        topology_id: object,
        *,
        logger: Optional[logging.Logger] = None,
        max_document_length: Optional[int] = None,
    ) -> None:
        super().__init__(topology_id, logger=logger, max_document_length=max_document_length)
        # requestIds of sensitive commands in flight: a failed event does not carry
        # the command, and a redacted hello is only known as such from its started event.
        self._sensitive: set[int] = set()
        self._lock = threading.Lock()

    def _common(self, message: str, event: _AnyCommandEvent) -> tuple[dict[str, Any], str]:
        """The common fields; returns the structured form and the unstructured text's
        part after the verb (database, connection, server, service, ids)."""
        data = self._data(message)
        data["commandName"] = event.command_name
        data["databaseName"] = event.database_name
        data["requestId"] = event.request_id
        data["operationId"] = event.operation_id
        data["driverConnectionId"] = event.connection_id
        server = server_fields(data, event.address)
        text = f"using a connection with driver-generated ID {event.connection_id}"
        if event.server_connection_id is not None:
            data["serverConnectionId"] = event.server_connection_id
            text += f" and server-generated ID {event.server_connection_id}"
        text += f" to {server}"
        if event.service_id is not None:
            service = str(event.service_id)  # an ObjectId: its hex string
            data["serviceId"] = service
            text += f" with service ID {service}"
        text += (
            f". The requestID is {event.request_id} and the operation ID is {event.operation_id}."
        )
        return data, text

    def _was_sensitive(self, request_id: int) -> bool:
        with self._lock:
            if request_id in self._sensitive:
                self._sensitive.discard(request_id)
                return True
            return False

    def started(self, event: CommandStartedEvent) -> None:
        if not self._enabled():
            return
        # The event's command is {} when it is sensitive (a redacted hello included).
        sensitive = not event.command or is_sensitive(event.command_name, event.command)
        if sensitive:
            with self._lock:
                self._sensitive.add(event.request_id)
        command = "{}" if sensitive else document_json(event.command, self.max_document_length)
        data, common = self._common(COMMAND_STARTED, event)
        data["command"] = command
        self._emit(
            f'Command "{event.command_name}" started on database "{event.database_name}" '
            f"{common} Command: {command}",
            data,
        )

    def succeeded(self, event: CommandSucceededEvent) -> None:
        if not self._enabled():
            return
        sensitive = self._was_sensitive(event.request_id)
        reply = "{}" if sensitive else document_json(event.reply, self.max_document_length)
        data, common = self._common(COMMAND_SUCCEEDED, event)
        data["durationMS"] = duration_ms(event.duration)
        data["reply"] = reply
        self._emit(
            f'Command "{event.command_name}" succeeded on database "{event.database_name}" '
            f"in {data['durationMS']} ms {common} Command reply: {reply}",
            data,
        )

    def failed(self, event: CommandFailedEvent) -> None:
        if not self._enabled():
            return
        sensitive = self._was_sensitive(event.request_id)
        # A sensitive command's server error is redacted; a network error is not.
        if sensitive and isinstance(event.failure, OperationFailure):
            failure = ""
        else:
            failure = failure_text(event.failure, self.max_document_length)
        data, common = self._common(COMMAND_FAILED, event)
        data["durationMS"] = duration_ms(event.duration)
        data["failure"] = failure
        self._emit(
            f'Command "{event.command_name}" failed on database "{event.database_name}" '
            f"in {data['durationMS']} ms {common} Error: {failure}",
            data,
        )


def command_log_listeners(
    topology_id: object, logger: Optional[logging.Logger] = None
) -> list[Listener]:
    """A new CommandLogger if ``logger`` (by default :data:`COMMAND_LOGGER`) is enabled
    for DEBUG now, else none: a client with logging off pays nothing."""
    target = CommandLogger.enabled_logger(logger)
    return [] if target is None else [CommandLogger(topology_id, logger=target)]
