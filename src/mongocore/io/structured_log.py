"""What the structured log messages of every component share.

Spec: logging.md ("Components", "Log Severity Levels", "Structured versus Unstructured
Logging", "Configurable Max Document Length", "Truncation of Large Documents",
"Representing Documents", "Representing Errors", "Omitting Null Values",
"Performance Considerations"), and the "Common Fields" every component's spec gives
its messages (the server's host and port, durations).

Python's :mod:`logging` carries the messages, one logger per component of the
logging spec: ``topology`` (:mod:`mongocore.io.log_messages`), ``serverSelection``
(:mod:`mongocore.io.selection_log`), ``connection`` (:mod:`mongocore.io.pool_log`) and
``command`` (:mod:`mongocore.io.command_log`). Each message is one
:class:`logging.LogRecord` whose message is the spec's unstructured form and which
carries the structured form as an attribute, :data:`DATA_ATTRIBUTE`
(``record.mongocore_data``): a dict with the spec's key names; a field that is unknown
is absent from it, never None. :func:`structured_data` reads it back from a record.

:class:`StructuredLogger` is the base of each component's logger: it holds the
logger, the topology id every message carries (so that the messages of one client can
be told apart) and the max document length, answers whether a level is enabled, and
emits a message with its structured form. A component's module only says what its
messages are, and builds each one only after its level said yes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, ClassVar, Optional

from mongocore.core.address import Address
from mongocore.errors import MongoCoreError, OperationFailure

#: The LogRecord attribute holding the structured form of a message (a dict).
DATA_ATTRIBUTE = "mongocore_data"
#: "The default max length is 1000" (logging.md); the unit is the Unicode code point.
DEFAULT_MAX_DOCUMENT_LENGTH = 1000
#: Environment variables read for the max document length, first found wins. The
#: spec's text spells its variable MONGOB_...; the MONGODB_... spelling is read first.
MAX_DOCUMENT_LENGTH_VARIABLES = (
    "MONGODB_LOG_MAX_DOCUMENT_LENGTH",
    "MONGOB_LOG_MAX_DOCUMENT_LENGTH",
)
# An invalid max document length is reported on the topology component's logger: it
# is the one a client sets up first, and SDAM logging is the one users enable first.
_SETTINGS_LOGGER = "mongocore.topology"

_ELLIPSIS = "..."

#: The max document length set by set_max_document_length(), if any.
_max_document_length: Optional[int] = None


def structured_data(record: logging.LogRecord) -> Optional[dict[str, Any]]:
    """The structured form of a record emitted by a mongocore logger (None for other
    records)."""
    data = getattr(record, DATA_ATTRIBUTE, None)
    return data if isinstance(data, dict) else None


def max_document_length_from_environment(
    environ: Optional[Mapping[str, str]] = None,
) -> int:
    """The max document length the environment asks for, or the default.

    An invalid value (not an integer, or negative) counts as unset, as the spec requires;
    it is reported with a warning on the ``mongocore.topology`` logger, never raised.
    """
    env = os.environ if environ is None else environ
    for name in MAX_DOCUMENT_LENGTH_VARIABLES:
        raw = env.get(name)
        if raw is None:
            continue
        try:
            value = int(raw.strip())
        except ValueError:
            value = -1
        if value >= 0:
            return value
        logging.getLogger(_SETTINGS_LOGGER).warning(
            "ignoring %s=%r: the max document length must be a non-negative integer", name, raw
        )
    return DEFAULT_MAX_DOCUMENT_LENGTH


def set_max_document_length(length: Optional[int]) -> Optional[int]:
    """Set the max document length of clients created from now on; returns the previous
    setting. None goes back to the environment variable (or the default). This setting
    takes precedence over the environment, as the logging spec requires."""
    global _max_document_length
    if length is not None and (
        not isinstance(length, int) or isinstance(length, bool) or length < 0
    ):
        raise ValueError(f"the max document length must be a non-negative integer, not {length!r}")
    previous, _max_document_length = _max_document_length, length
    return previous


def current_max_document_length() -> int:
    """The max document length a client created now uses."""
    if _max_document_length is not None:
        return _max_document_length
    return max_document_length_from_environment()


def truncate(text: str, max_length: int) -> str:
    """Cut ``text`` to ``max_length`` code points, plus "..." if anything was cut.

    Naive on purpose (logging.md): the result need not be valid JSON any more.
    """
    if len(text) <= max_length:
        return text
    return text[:max_length] + _ELLIPSIS


def document_json(document: Mapping[str, Any], max_length: int) -> str:
    """A document as relaxed extended JSON, truncated to ``max_length``."""
    from bson import json_util  # noqa: PLC0415 - only enabled log messages need it

    text = json_util.dumps(_plain(document), json_options=json_util.RELAXED_JSON_OPTIONS)
    return truncate(text, max_length)


def _plain(value: Any) -> Any:
    # json_util serializes dicts and lists; replies may hold other Mappings/Sequences.
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def failure_text(error: BaseException, max_length: int) -> str:
    """How an error appears in a log message ("Representing Errors").

    The error's class and message, its labels if it has any, and for a server error
    the server's response as extended JSON, truncated to ``max_length``. Nothing is
    redacted here: a component whose errors may be sensitive (commands) decides so
    itself, heartbeats never are (monitoring connections do not authenticate).
    """
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, MongoCoreError) and error.error_labels:
        text += f" (error labels: {', '.join(sorted(error.error_labels))})"
    if isinstance(error, OperationFailure) and error.details:
        text += f" Server response: {document_json(error.details, max_length)}"
    return text


def duration_ms(seconds: float) -> float:
    """A duration in seconds as the ``durationMS`` of a log message."""
    return round(seconds * 1000.0, 3)


def server_fields(data: dict[str, Any], address: Address) -> str:
    """Add ``serverHost`` and ``serverPort`` (no port for a Unix socket) to a message's
    structured form; returns the server as the unstructured text shows it."""
    data["serverHost"] = address.host
    if address.port is not None:
        data["serverPort"] = address.port
        return f"{address.host}:{address.port}"
    return address.host


#: The component loggers by name (see StructuredLogger.enabled_logger).
_LOGGERS: dict[str, logging.Logger] = {}


class StructuredLogger:
    """The base of a component's logger: where its messages go and how they are sent.

    ``logger`` defaults to the component's logger, :attr:`LOGGER_NAME`;
    ``max_document_length`` to the one a client created now uses
    (:func:`current_max_document_length`). ``topology_id`` is the id of the client's
    topology, which every message carries.
    """

    __slots__ = ("logger", "max_document_length", "topology_id")

    #: The name of the component's logger (``mongocore.<component>``).
    LOGGER_NAME: ClassVar[str]

    def __init__(
        self,
        topology_id: object = None,
        *,
        logger: Optional[logging.Logger] = None,
        max_document_length: Optional[int] = None,
    ) -> None:
        self.logger = logger if logger is not None else logging.getLogger(self.LOGGER_NAME)
        self.topology_id = topology_id
        self.max_document_length = (
            current_max_document_length() if max_document_length is None else max_document_length
        )

    @classmethod
    def enabled_logger(
        cls, logger: Optional[logging.Logger] = None, level: int = logging.DEBUG
    ) -> Optional[logging.Logger]:
        """``logger`` (by default the component's) if it is enabled for ``level`` now,
        else None: a client whose logging is off then builds no logger at all."""
        target = logger if logger is not None else _LOGGERS.get(cls.LOGGER_NAME)
        if target is None:
            # getLogger takes logging's module lock: asked once per name, not per call
            # (it returns the same Logger for a name for the life of the process).
            target = _LOGGERS.setdefault(cls.LOGGER_NAME, logging.getLogger(cls.LOGGER_NAME))
        return target if target.isEnabledFor(level) else None

    def _enabled(self, level: int = logging.DEBUG) -> bool:
        return self.logger.isEnabledFor(level)

    def _data(self, message: str) -> dict[str, Any]:
        """A message's structured form with the fields every message starts with."""
        return {"message": message, "topologyId": self.topology_id}

    def _emit(self, text: str, data: dict[str, Any], level: int = logging.DEBUG) -> None:
        # stacklevel=2: the record names the component's method that built the message
        # (its module, function and line), not this one.
        self.logger.log(level, text, extra={DATA_ATTRIBUTE: data}, stacklevel=2)
