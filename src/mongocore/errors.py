"""The one exception hierarchy of mongocore.

Every error says what went wrong and, where it can, what to do about it. Errors
that came from a server keep the server's reply (``details``) and its error
labels, because the retry and SDAM rules decide on codes and labels, never on
exception types alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from mongocore.address import Address


class MongoCoreError(Exception):
    """Base class of every error raised by mongocore."""

    def __init__(self, message: str, error_labels: Optional[Iterable[str]] = None) -> None:
        super().__init__(message)
        self._message = message
        self._error_labels: set[str] = set(error_labels or ())
        #: When this error stopped an insert_many() or bulk_write() after it began (a
        #: network error, a refused command: anything but the write errors a
        #: BulkWriteError reports with its own ``details``), what the statements
        #: acknowledged before it did, in the shape of BulkWriteError.details;
        #: otherwise None.
        self.partial_result: Optional[Mapping[str, Any]] = None

    @property
    def message(self) -> str:
        return self._message

    @property
    def error_labels(self) -> frozenset[str]:
        return frozenset(self._error_labels)

    def has_error_label(self, label: str) -> bool:
        return label in self._error_labels

    def add_error_label(self, label: str) -> None:
        self._error_labels.add(label)

    def remove_error_label(self, label: str) -> None:
        self._error_labels.discard(label)


# --- configuration -----------------------------------------------------------


class ConfigurationError(MongoCoreError):
    """The client was configured with options that cannot work together or at all."""


class InvalidURI(ConfigurationError):
    """A connection string could not be parsed."""


class InvalidReadPreference(ConfigurationError):
    """A read preference is malformed, or cannot be used with this topology."""


class InvalidOperation(MongoCoreError):
    """An API call that cannot be made in the object's current state: changing a cursor
    after it started, using an ended session or one from another client, reading the
    counts of an unacknowledged write."""


# --- talking to servers --------------------------------------------------------


class ConnectionFailure(MongoCoreError):
    """Base class of errors that mean a server could not be reached or used."""

    def __init__(
        self,
        message: str,
        error_labels: Optional[Iterable[str]] = None,
        address: Optional[Address] = None,
    ) -> None:
        super().__init__(message, error_labels)
        self.address = address


class NetworkError(ConnectionFailure):
    """A socket failed while connecting, reading or writing (not a timeout)."""


class NetworkTimeout(NetworkError):
    """A socket operation timed out. SDAM treats this apart from other network errors."""


class ProtocolError(ConnectionFailure):
    """A server sent bytes that are not a valid reply: the connection is closed."""


class ServerSelectionError(ConnectionFailure):
    """No suitable server could be selected."""


class ServerSelectionTimeoutError(ServerSelectionError):
    """No suitable server was found before serverSelectionTimeoutMS elapsed."""


class WaitQueueTimeoutError(ConnectionFailure):
    """No connection could be checked out of a pool before waitQueueTimeoutMS elapsed."""


class PoolClearedError(ConnectionFailure):
    """The pool was cleared while this checkout waited; the operation may be retried."""

    def __init__(self, message: str, address: Optional[Address] = None) -> None:
        super().__init__(message, ("RetryableWriteError",), address)


class IncompatibleServerError(ConfigurationError):
    """A server's wire version range does not overlap the range mongocore speaks."""


class DocumentTooLarge(MongoCoreError):
    """A document or message exceeds a size limit the server announced; nothing was sent."""


class PoolClosedError(ConnectionFailure):
    """A connection was requested from a closed pool (its server left the topology, or the
    client was closed); select a server again."""


# --- server replies ------------------------------------------------------------


class OperationFailure(MongoCoreError):
    """A server answered a command with ``ok: 0``."""

    def __init__(
        self,
        message: str,
        code: Optional[int] = None,
        details: Optional[Mapping[str, Any]] = None,
        error_labels: Optional[Iterable[str]] = None,
    ) -> None:
        if error_labels is None and details is not None:
            error_labels = details.get("errorLabels") or ()
        super().__init__(message, error_labels)
        self.code = code
        self.details: Mapping[str, Any] = details if details is not None else {}

    def __str__(self) -> str:
        if self.code is None:
            return self.message
        return f"{self.message} (code {self.code})"


class WriteConcernError(OperationFailure):
    """A write was applied, but its write concern could not be satisfied."""


class WriteError(OperationFailure):
    """A single write in a write command failed (from the ``writeErrors`` array)."""


class BulkWriteError(OperationFailure):
    """A multi-statement write (insert_many, bulk_write) met write errors or a write
    concern error.

    ``details`` is the result so far, in the shape of a bulk write result:
    ``nInserted``, ``nMatched``, ``nModified``, ``nRemoved``, ``nUpserted``,
    ``upserted`` (``{index, _id}``), ``writeErrors`` (``{index, code, errmsg, op}``,
    indexes into the caller's requests) and ``writeConcernErrors``. An ordered write
    stops at its first write error; statements after it were not sent.
    """

    def __init__(self, details: Mapping[str, Any]) -> None:
        write_errors = details.get("writeErrors") or []
        concern_errors = details.get("writeConcernErrors") or []
        labels: set[str] = set()
        for error in concern_errors:
            labels.update(error.get("errorLabels") or ())
        if write_errors:
            first = write_errors[0]
            message = (
                f"batch op errors occurred: {len(write_errors)} write error(s), first at"
                f" index {first.get('index')}: {first.get('errmsg')}"
            )
        else:
            message = (
                f"batch op errors occurred: write concern error: {concern_errors[0].get('errmsg')}"
            )
        super().__init__(message, 65, details, labels)


class AuthenticationError(OperationFailure):
    """Authentication failed while establishing a connection: the server refused the
    credentials (code 18, AuthenticationFailed, unless the server said otherwise) or
    the server could not prove it knows them. The message never holds a credential.

    Raised before the connection's handshake completed, so SDAM marks the server
    Unknown and clears its pool.
    """

    def __init__(
        self,
        message: str,
        code: Optional[int] = 18,
        details: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(message, code, details)


def write_concern_error_from_reply(reply: Mapping[str, Any]) -> Optional[WriteConcernError]:
    """The WriteConcernError of an ``ok: 1`` reply whose write was applied but whose
    write concern was not satisfied; None when the reply has no writeConcernError."""
    wce = reply.get("writeConcernError")
    if not isinstance(wce, Mapping):
        return None
    code = wce.get("code")
    return WriteConcernError(
        str(wce.get("errmsg", "write concern error")),
        code if isinstance(code, int) else None,
        reply,
    )


def command_error_from_reply(reply: Mapping[str, Any]) -> OperationFailure:
    """Build the error for a command reply with ``ok: 0``."""
    message = str(reply.get("errmsg", "command failed"))
    code = reply.get("code")
    return OperationFailure(message, code if isinstance(code, int) else None, reply)
