"""Structured log messages of server selection.

Spec: server-selection.md, "Logging" ("Common Fields", "Server selection started",
"Server selection succeeded", "Server selection failed" and "Waiting for suitable
server to become available" messages), emitted where its "Server Selection Algorithm"
for multi-threaded clients says (steps 1, 2, 5, 8 and 10); the general rules are
logging.md's, as for the SDAM messages.

A module of its own, one per component of the logging spec (``topology`` in
:mod:`mongocore.io.log_messages`, ``serverSelection`` here, ``connection`` in
:mod:`mongocore.io.pool_log`): each stays small and is read with its spec section, while
what every component shares (the structured form attribute, the max document length,
truncation, how errors are written, the base of each component's logger) is in
:mod:`mongocore.io.structured_log`.

The messages go to the logger named for the component, :data:`SERVER_SELECTION_LOGGER`
(``mongocore.serverSelection``): "Waiting for suitable server to become available" at
``INFO``, the others at ``DEBUG``. Server selection has no events to subscribe to, so
the live topology calls :func:`selection_log` at the start of each selection: it
answers None, and nothing more is done for that selection, unless the logger is
enabled for ``INFO`` at least; each message is then built only once its own level
said yes. Besides the spec's fields every message carries ``topologyId``, the id the
SDAM messages and events carry, so that the messages of one client can be told apart.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Optional

from mongocore.core.address import Address
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.io.structured_log import StructuredLogger, failure_text, server_fields

#: The logging spec's component of these messages, and the logger that carries it.
COMPONENT = "serverSelection"
SERVER_SELECTION_LOGGER = "mongocore.serverSelection"

# The "message" value of each log message.
SERVER_SELECTION_STARTED = "Server selection started"
SERVER_SELECTION_SUCCEEDED = "Server selection succeeded"
SERVER_SELECTION_FAILED = "Server selection failed"
WAITING_FOR_SUITABLE_SERVER = "Waiting for suitable server to become available"

#: How a write's selector is shown: it selects a writable server, whatever the
#: read preference of the collection.
WRITABLE_SERVER = "writable server"


def describe_selector(
    read_preference: Optional[ReadPreference], deprioritized: Sequence[Address] = ()
) -> str:
    """The ``selector`` field: the read preference with every component it sets (None:
    a write), and the servers deprioritized for a retry, if any."""
    text = WRITABLE_SERVER if read_preference is None else repr(read_preference)
    if deprioritized:
        text += f" (deprioritized: {', '.join(str(a) for a in deprioritized)})"
    return text


class SelectionLog(StructuredLogger):
    """The log messages of one server selection.

    Built by :func:`selection_log`; the topology calls :meth:`started` once, then
    :meth:`waiting` whenever no server is suitable (only the first call logs: the spec
    wants the message once per operation), and :meth:`succeeded` or :meth:`failed`.
    """

    __slots__ = ("_operation", "_operation_id", "_selector", "_waited")

    LOGGER_NAME = SERVER_SELECTION_LOGGER

    def __init__(
        self,
        logger: logging.Logger,
        *,
        topology_id: object,
        selector: str,
        operation: Optional[str],
        operation_id: Optional[int],
        max_document_length: Optional[int] = None,
    ) -> None:
        super().__init__(topology_id, logger=logger, max_document_length=max_document_length)
        self._selector = selector
        self._operation = operation
        self._operation_id = operation_id
        self._waited = False

    def _common(self, message: str, description: TopologyDescription) -> dict[str, Any]:
        # Absent values are left out, never None ("Omitting Null Values").
        data = self._data(message)
        data["selector"] = self._selector
        if self._operation_id is not None:
            data["operationId"] = self._operation_id
        if self._operation is not None:
            data["operation"] = self._operation
        data["topologyDescription"] = repr(description)
        return data

    def _for(self) -> str:
        return f"for operation {self._operation} with ID {self._operation_id}"

    def _tail(self, data: dict[str, Any]) -> str:
        return f"Selector: {self._selector}, topology description: {data['topologyDescription']}"

    def started(self, description: TopologyDescription) -> None:
        if not self._enabled():
            return
        data = self._common(SERVER_SELECTION_STARTED, description)
        text = f"Server selection started {self._for()}. {self._tail(data)}"
        self._emit(text, data)

    def succeeded(self, description: TopologyDescription, address: Address) -> None:
        if not self._enabled():
            return
        data = self._common(SERVER_SELECTION_SUCCEEDED, description)
        server = server_fields(data, address)
        text = (
            f"Server selection succeeded {self._for()}. Selected server: {server}. "
            f"{self._tail(data)}"
        )
        self._emit(text, data)

    def failed(
        self,
        description: TopologyDescription,
        error: BaseException,
        summary: Optional[str] = None,
    ) -> None:
        """``summary``: the error's message without what the message already shows (a
        selection timeout's message lists the topology's servers, which the spec asks
        not to repeat in ``failure``)."""
        if not self._enabled():
            return
        data = self._common(SERVER_SELECTION_FAILED, description)
        if summary is not None:
            failure = f"{type(error).__name__}: {summary}"
        else:
            failure = failure_text(error, self.max_document_length)
        data["failure"] = failure
        text = f"Server selection failed {self._for()}. Failure: {failure}. {self._tail(data)}"
        self._emit(text, data)

    def waiting(self, description: TopologyDescription, remaining: float) -> None:
        """No suitable server yet; ``remaining``: seconds left until selection times out."""
        if self._waited:
            return
        self._waited = True
        if not self._enabled(logging.INFO):
            return
        data = self._common(WAITING_FOR_SUITABLE_SERVER, description)
        remaining_ms = max(0, int(remaining * 1000))
        data["remainingTimeMS"] = remaining_ms
        text = (
            f"Waiting for server to become available {self._for()}. "
            f"Remaining time: {remaining_ms} ms. {self._tail(data)}."
        )
        self._emit(text, data, logging.INFO)


def selection_log(
    topology_id: object,
    read_preference: Optional[ReadPreference],
    *,
    deprioritized: Sequence[Address] = (),
    operation: Optional[str] = None,
    operation_id: Optional[int] = None,
    logger: Optional[logging.Logger] = None,
) -> Optional[SelectionLog]:
    """The log of a selection that starts now, or None when the logger (by default
    :data:`SERVER_SELECTION_LOGGER`) would drop every message: then the selection
    builds nothing at all."""
    target = SelectionLog.enabled_logger(logger, logging.INFO)
    if target is None:
        return None
    return SelectionLog(
        target,
        topology_id=topology_id,
        selector=describe_selector(read_preference, deprioritized),
        operation=operation,
        operation_id=operation_id,
    )
