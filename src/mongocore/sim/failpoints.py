"""Fail points: the server's ``configureFailPoint`` test command: ``failCommand`` and
``onPrimaryTransactionalWrite``.

The official test suites configure ``failCommand`` with a mode (``"alwaysOn"``,
``"off"``, ``{times: n}``, ``{skip: n}``, ``{activationProbability: p}``) and data:
``failCommands`` (command names), ``errorCode``, ``errmsg``, ``errorLabels``,
``closeConnection``, ``writeConcernError``, ``blockConnection`` with
``blockTimeMS``, ``appName`` (only connections whose handshake named this
application) and ``failInternalCommands``. A 7.0 server applies them in this order:
block, then close the connection, then fail with the error code, else run the command
and attach the write concern error.

``onPrimaryTransactionalWrite`` acts on the statements of retryable writes (a write
command carrying a txnNumber, outside a transaction) on a primary, once per statement
that writes, at the point where a server records the statement for its session, just
before the statement commits. Its data: ``closeConnection`` (default true) closes the
connection without a reply; ``failBeforeCommitExceptionCode`` fails the statement with
that code, so it is neither applied nor recorded. Without the code the statement is
applied and recorded before the connection closes.

``failGetMoreAfterCursorCheckout`` fails a getMore with ``errorCode`` once the getMore
holds its cursor (which dies with it); unlike failCommand's, its error gets the labels a
server computes (ResumableChangeStreamError on a change stream's getMore).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from mongocore.sim.codes import RETRYABLE_WRITE_CODES, CommandError

__all__ = [
    "FailCommandAction",
    "FailPoint",
    "FailPoints",
    "TransactionalWriteAction",
    "parse_mode",
]

SUPPORTED_FAIL_POINTS = frozenset(
    {"failCommand", "onPrimaryTransactionalWrite", "failGetMoreAfterCursorCheckout"}
)

#: Other names a server registers a command under, and the command's own name. A
#: server's failCommands matches a command by any of its names ("ismaster" fails the
#: "isMaster" a handshake sends); "hello" is a command of its own.
COMMAND_ALIASES = {"ismaster": "isMaster"}

Mode = Union[str, Mapping[str, Any]]


@dataclass
class FailPoint:
    """One configured fail point: its mode's counters and its data."""

    name: str
    mode: str = "off"  # "off", "alwaysOn", "times", "skip" or "probability"
    remaining: int = 0  # times left ("times") or matches to skip ("skip")
    probability: float = 1.0
    data: dict[str, Any] = field(default_factory=dict)
    entered: int = 0  # how often it fired since configured

    @property
    def active(self) -> bool:
        return self.mode != "off"

    def fire(self) -> bool:
        """A matching operation arrived: does the fail point act on it? Updates the counters."""
        if self.mode == "alwaysOn":
            fired = True
        elif self.mode == "times":
            fired = self.remaining > 0
            if fired:
                self.remaining -= 1
                if self.remaining == 0:
                    self.mode = "off"
        elif self.mode == "skip":
            if self.remaining > 0:
                self.remaining -= 1
                fired = False
            else:
                fired = True
        elif self.mode == "probability":
            fired = random.random() < self.probability
        else:
            fired = False
        if fired:
            self.entered += 1
        return fired


def parse_mode(mode: Mode) -> tuple[str, int, float]:
    """Parse a configureFailPoint mode into (kind, count, probability); BadValue if invalid."""
    if isinstance(mode, str):
        if mode in ("alwaysOn", "off"):
            return mode, 0, 1.0
        raise CommandError(2, f"unknown fail point mode: {mode!r}")
    if isinstance(mode, Mapping) and len(mode) == 1:
        ((key, value),) = mode.items()
        if key in ("times", "skip"):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise CommandError(2, f"'{key}' must be a non-negative number, not {value!r}")
            count = int(value)
            if key == "times" and count == 0:
                return "off", 0, 1.0
            return key, count, 1.0
        if key == "activationProbability":
            if not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise CommandError(2, "activationProbability must be between 0 and 1")
            return "probability", 0, float(value)
    raise CommandError(2, f"invalid fail point mode: {mode!r}")


class FailCommandAction:
    """What ``failCommand`` does to one command."""

    __slots__ = ("block_ms", "close_connection", "error", "labels_override", "write_concern_error")

    def __init__(self, data: Mapping[str, Any], has_txn_number: bool) -> None:
        self.block_ms = 0
        if data.get("blockConnection"):
            self.block_ms = max(0, int(data.get("blockTimeMS", 0)))
        self.close_connection = bool(data.get("closeConnection", False))
        #: ``errorLabels`` of the data: they replace the labels of the error and of the
        #: write concern error (None: the server labels them as its own).
        self.labels_override: Optional[list[str]] = (
            list(data["errorLabels"]) if "errorLabels" in data else None
        )
        self.error: Optional[CommandError] = None
        if "errorCode" in data:
            code = int(data["errorCode"])
            labels: Sequence[str]
            if "errorLabels" in data:
                # Given labels replace the ones the server would have added.
                labels = list(data["errorLabels"])
            else:
                labels = (
                    ["RetryableWriteError"]
                    if has_txn_number and code in RETRYABLE_WRITE_CODES
                    else []
                )
            self.error = CommandError(
                code,
                str(data.get("errmsg", "Failing command via 'failCommand' failpoint")),
                labels=labels,
            )
        wce = data.get("writeConcernError")
        self.write_concern_error: Optional[dict[str, Any]] = dict(wce) if wce else None


class TransactionalWriteAction:
    """What ``onPrimaryTransactionalWrite`` does to one statement of a retryable write."""

    __slots__ = ("close_connection", "error_code")

    def __init__(self, data: Mapping[str, Any]) -> None:
        # The server closes the connection unless told not to.
        self.close_connection = bool(data.get("closeConnection", True))
        code = data.get("failBeforeCommitExceptionCode")
        self.error_code: Optional[int] = None if code is None else int(code)


class FailPoints:
    """The fail points of one simulated process. Not thread-safe: the owner locks."""

    def __init__(self) -> None:
        self._points: dict[str, FailPoint] = {}

    def configure(self, name: str, mode: Mode, data: Optional[Mapping[str, Any]] = None) -> int:
        """Set a fail point; returns how often it had fired (the server's ``count``)."""
        if name not in SUPPORTED_FAIL_POINTS:
            raise CommandError(
                2,
                f"FailPoint not found: {name} (the simulator implements"
                f" {', '.join(sorted(SUPPORTED_FAIL_POINTS))})",
            )
        kind, count, probability = parse_mode(mode)
        previous = self._points.get(name)
        entered = previous.entered if previous is not None else 0
        if name == "failCommand" and kind != "off":
            _check_fail_command_data(data or {})
        if name == "onPrimaryTransactionalWrite" and kind != "off":
            _check_transactional_write_data(data or {})
        self._points[name] = FailPoint(name, kind, count, probability, dict(data or {}))
        return entered

    def clear(self) -> None:
        self._points.clear()

    def get(self, name: str) -> Optional[FailPoint]:
        return self._points.get(name)

    def fail_command(
        self,
        command_name: str,
        app_name: Optional[str],
        *,
        internal: bool = False,
        has_txn_number: bool = False,
    ) -> Optional[FailCommandAction]:
        """The failCommand action for this command, if the fail point matches and fires."""
        point = self._points.get("failCommand")
        if point is None or not point.active:
            return None
        data = point.data
        wanted = {COMMAND_ALIASES.get(str(n), str(n)) for n in data.get("failCommands", ())}
        if COMMAND_ALIASES.get(command_name, command_name) not in wanted:
            return None
        if internal and not data.get("failInternalCommands", False):
            return None
        wanted_app = data.get("appName")
        if wanted_app is not None and wanted_app != app_name:
            return None
        if not point.fire():
            return None
        return FailCommandAction(data, has_txn_number)

    def transactional_write_armed(self) -> Optional[Mapping[str, Any]]:
        """The data of ``onPrimaryTransactionalWrite`` while it is on, else None."""
        point = self._points.get("onPrimaryTransactionalWrite")
        if point is None or not point.active:
            return None
        return point.data

    def fail_get_more(self) -> Optional[CommandError]:
        """``failGetMoreAfterCursorCheckout``: the error a getMore fails with, if it fires."""
        point = self._points.get("failGetMoreAfterCursorCheckout")
        if point is None or not point.active or not point.fire():
            return None
        code = point.data.get("errorCode")
        return CommandError(
            int(code) if isinstance(code, (int, float)) else 1,
            "Failing getMore due to failpoint 'failGetMoreAfterCursorCheckout'",
        )

    def on_primary_transactional_write(self) -> Optional[TransactionalWriteAction]:
        """A statement of a retryable write is about to commit: the action, if the point fires."""
        point = self._points.get("onPrimaryTransactionalWrite")
        if point is None or not point.active or not point.fire():
            return None
        return TransactionalWriteAction(point.data)


def _check_fail_command_data(data: Mapping[str, Any]) -> None:
    commands = data.get("failCommands")
    if not isinstance(commands, (list, tuple)) or not all(isinstance(c, str) for c in commands):
        raise CommandError(2, "'failCommands' must be an array of command names")
    if data.get("blockConnection") and "blockTimeMS" not in data:
        raise CommandError(2, "'blockTimeMS' must be set when 'blockConnection' is true")


def _check_transactional_write_data(data: Mapping[str, Any]) -> None:
    close = data.get("closeConnection", True)
    if not isinstance(close, bool):
        raise CommandError(14, "'closeConnection' must be a boolean")
    code = data.get("failBeforeCommitExceptionCode")
    if code is not None and (not isinstance(code, (int, float)) or isinstance(code, bool)):
        raise CommandError(14, "'failBeforeCommitExceptionCode' must be a number")
