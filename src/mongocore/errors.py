"""The one exception hierarchy of mongocore, in pymongo's shape.

Every error says what went wrong and, where it can, what to do about it. Errors
that came from a server keep the server's reply (``details``) and its error
labels, because the retry and SDAM rules decide on codes and labels, never on
exception types alone.

The names and the hierarchy follow ``pymongo.errors``, so code written against
pymongo catches the same things: ``PyMongoError`` is :class:`MongoCoreError`;
network errors are ``AutoReconnect``; "not writable primary" and "node is
recovering" replies raise :class:`NotPrimaryError`; a duplicate key is a
:class:`DuplicateKeyError`; ``maxTimeMS`` expiring is an :class:`ExecutionTimeout`;
a write concern timeout a :class:`WTimeoutError`; a cursor the server no longer
has a :class:`CursorNotFound`. One knowing difference: :class:`NotPrimaryError` is
also an :class:`OperationFailure` (it carries the server's ``code`` and
``details``), so ``except OperationFailure`` catches it where pymongo's would not
(docs/from-pymongo.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from bson.errors import InvalidDocument

from mongocore.core.address import Address

__all__ = [
    "AuthenticationError",
    "AutoReconnect",
    "BulkWriteError",
    "ClientBulkWriteException",
    "CollectionInvalid",
    "ConfigurationError",
    "ConnectionFailure",
    "CursorNotFound",
    "DocumentTooLarge",
    "DuplicateKeyError",
    "EncryptedCollectionError",
    "EncryptionError",
    "ExecutionTimeout",
    "IncompatibleServerError",
    "InvalidDocument",
    "InvalidName",
    "InvalidOperation",
    "InvalidReadPreference",
    "InvalidURI",
    "MongoCoreError",
    "NetworkError",
    "NetworkTimeout",
    "NotPrimaryError",
    "OperationFailure",
    "PoolClearedError",
    "PoolClosedError",
    "ProtocolError",
    "PyMongoError",
    "ServerSelectionError",
    "ServerSelectionTimeoutError",
    "WTimeoutError",
    "WaitQueueTimeoutError",
    "WriteConcernError",
    "WriteError",
]


class MongoCoreError(Exception):
    """Base class of every error raised by mongocore."""

    #: What the caller may assume about a write whose operation failed with this
    #: error: True, the write may have been applied (an attempt reached a server and
    #: its outcome is unknown, or the server applied it); False, it certainly was not
    #: (no attempt was sent in full, or every server it reached said it wrote
    #: nothing). None for errors of other operations (docs/errors.md, "Was my write
    #: applied?"). The message says the same.
    write_may_have_been_applied: Optional[bool] = None
    _write_note: str = ""
    partial_result: Optional[Mapping[str, Any]]

    def __init__(self, message: str, error_labels: Optional[Iterable[str]] = None) -> None:
        super().__init__(message)
        self._message = message
        self._error_labels: set[str] = set(error_labels or ())
        #: When this error stopped an insert_many() or bulk_write() after it began (a
        #: network error, a refused command: anything but the write errors a
        #: BulkWriteError reports with its own ``details``), what the statements
        #: acknowledged before it did, in the shape of BulkWriteError.details;
        #: otherwise None.
        self.partial_result = None

    @property
    def message(self) -> str:
        return self._message + self._write_note

    def _set_write_outcome(self, may_have_been_applied: bool) -> None:
        """Record what is known of the failed write (once more replaces the note)."""
        self.write_may_have_been_applied = may_have_been_applied
        self._write_note = (
            " [the write may have been applied: its outcome is unknown; check before"
            " writing it again]"
            if may_have_been_applied
            else " [the write was not applied]"
        )
        self.args = (self.message, *self.args[1:])

    @property
    def error_labels(self) -> frozenset[str]:
        return frozenset(self._error_labels)

    def has_error_label(self, label: str) -> bool:
        return label in self._error_labels

    def add_error_label(self, label: str) -> None:
        self._error_labels.add(label)

    def remove_error_label(self, label: str) -> None:
        self._error_labels.discard(label)

    # pymongo's private spellings, which code handling pymongo's errors calls.
    _add_error_label = add_error_label
    _remove_error_label = remove_error_label

    @property
    def timeout(self) -> bool:
        """True when a time limit caused the error (a socket, server selection, wait
        queue or ``maxTimeMS`` timeout, or a write concern's ``wtimeout``), as pymongo's
        ``PyMongoError.timeout``."""
        return False


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


class InvalidName(MongoCoreError):
    """A database or collection name the server would refuse (empty, or with a character
    such as ``$``, ``.``, a space or NUL where it may not stand)."""


class CollectionInvalid(MongoCoreError):
    """A collection cannot be created or validated as asked: ``create_collection`` of a
    collection that exists already, or ``validate_collection`` finding it invalid."""


class EncryptionError(MongoCoreError):
    """Encryption or decryption failed; ``cause`` is the error that made it fail.

    mongocore has no client-side field level encryption: this class exists so that
    code written for pymongo can name it (in ``except`` clauses); mongocore never
    raises it.
    """

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self._cause = cause

    @property
    def cause(self) -> Exception:
        return self._cause

    @property
    def timeout(self) -> bool:
        return isinstance(self._cause, MongoCoreError) and self._cause.timeout


class EncryptedCollectionError(EncryptionError):
    """Creating a collection with ``encrypted_fields`` failed (never raised by mongocore,
    see :class:`EncryptionError`)."""

    def __init__(self, cause: Exception, encrypted_fields: Mapping[str, Any]) -> None:
        super().__init__(cause)
        self._encrypted_fields = encrypted_fields

    @property
    def encrypted_fields(self) -> Mapping[str, Any]:
        return self._encrypted_fields


# --- talking to servers --------------------------------------------------------


class ConnectionFailure(MongoCoreError):
    """Base class of errors that mean a server could not be reached or used."""

    #: The server the error is about, when known.
    address: Optional[Address] = None

    def __init__(
        self,
        message: str,
        error_labels: Optional[Iterable[str]] = None,
        address: Optional[Address] = None,
    ) -> None:
        super().__init__(message, error_labels)
        self.address = address


class AutoReconnect(ConnectionFailure):
    """The server could not be used for this operation, but the client may reach it (or
    another) again: network errors, server selection timeouts, and replies saying the
    server is no longer primary or is recovering (pymongo's ``AutoReconnect``)."""


class NetworkError(AutoReconnect):
    """A socket failed while connecting, reading or writing (not a timeout)."""


class NetworkTimeout(NetworkError):
    """A socket operation timed out. SDAM treats this apart from other network errors."""

    @property
    def timeout(self) -> bool:
        return True


class ProtocolError(ConnectionFailure):
    """A server sent bytes that are not a valid reply: the connection is closed."""


class ServerSelectionError(AutoReconnect):
    """No suitable server could be selected."""


class ServerSelectionTimeoutError(ServerSelectionError):
    """No suitable server was found before serverSelectionTimeoutMS elapsed."""

    @property
    def timeout(self) -> bool:
        return True


class WaitQueueTimeoutError(ConnectionFailure):
    """No connection could be checked out of a pool before waitQueueTimeoutMS elapsed."""

    @property
    def timeout(self) -> bool:
        return True


class PoolClearedError(ConnectionFailure):
    """The pool was cleared while this checkout waited; the operation may be retried."""

    def __init__(self, message: str, address: Optional[Address] = None) -> None:
        super().__init__(message, ("RetryableWriteError",), address)


class IncompatibleServerError(ConfigurationError):
    """A server's wire version range does not overlap the range mongocore speaks."""


class DocumentTooLarge(MongoCoreError, InvalidDocument):
    """A document or message exceeds a size limit the server announced; nothing was sent.

    Also bson's ``InvalidDocument``, as pymongo's is."""


class PoolClosedError(ConnectionFailure):
    """A connection was requested from a closed pool (its server left the topology, or the
    client was closed); select a server again."""


# --- server replies ------------------------------------------------------------


class OperationFailure(MongoCoreError):
    """A server answered a command with ``ok: 0``."""

    #: The server's error code, when it sent one.
    code: Optional[int]
    #: The server's whole reply (or the write error's document).
    details: Mapping[str, Any]

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
        self.details = details if details is not None else {}

    @property
    def timeout(self) -> bool:
        return self.code == MAX_TIME_MS_EXPIRED

    @property
    def code_name(self) -> Optional[str]:
        """The server's name for the code (``codeName``), when it sent one."""
        name = self.details.get("codeName")
        return str(name) if name is not None else None

    def __str__(self) -> str:
        if self.code is None:
            return self.message
        return f"{self.message} (code {self.code})"


class NotPrimaryError(OperationFailure, AutoReconnect):
    """The server answered "not writable primary" or "node is recovering" (SDAM's state
    change errors): it is no longer primary, or is starting up or shutting down. Both an
    :class:`AutoReconnect`, as in pymongo, and an :class:`OperationFailure` with the
    server's code."""


class ExecutionTimeout(OperationFailure):
    """The operation exceeded its time limit on the server (MaxTimeMSExpired, code 50)."""


class CursorNotFound(OperationFailure):
    """The server no longer has the cursor (CursorNotFound, code 43): it timed out, or
    was killed."""


class WriteConcernError(OperationFailure):
    """A write was applied, but its write concern could not be satisfied."""

    write_may_have_been_applied: Optional[bool] = True


class WTimeoutError(WriteConcernError):
    """The write concern was not satisfied within its ``wtimeout``; the write was applied."""

    @property
    def timeout(self) -> bool:
        return True


class WriteError(OperationFailure):
    """A single write in a write command failed (from the ``writeErrors`` array)."""


class DuplicateKeyError(WriteError):
    """A write would have created a second document with the same value of a unique index
    (code 11000, or its legacy forms 11001 and 12582)."""


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

    @property
    def timeout(self) -> bool:
        # As pymongo: the last write concern error timed out (its wtimeout, or
        # MaxTimeMSExpired), or the last write error is MaxTimeMSExpired.
        concern_errors = self.details.get("writeConcernErrors") or []
        if concern_errors and (
            _is_wtimeout(concern_errors[-1])
            or error_code(concern_errors[-1].get("code")) == MAX_TIME_MS_EXPIRED
        ):
            return True
        write_errors = self.details.get("writeErrors") or []
        return (
            bool(write_errors) and error_code(write_errors[-1].get("code")) == MAX_TIME_MS_EXPIRED
        )


class ClientBulkWriteException(OperationFailure):
    """A client-level bulk write (MongoDB 8.0's ``bulkWrite`` command) failed.

    mongocore has no client-level ``bulk_write``: this class exists so that code
    written for pymongo can name it; mongocore never raises it.
    """

    def __init__(self, results: Mapping[str, Any], verbose: bool) -> None:
        super().__init__("batch op errors occurred", 65, results)
        self.verbose = verbose

    @property
    def error(self) -> Any:
        return self.details.get("error")

    @property
    def write_concern_errors(self) -> Any:
        return self.details.get("writeConcernErrors", [])

    @property
    def write_errors(self) -> Any:
        return self.details.get("writeErrors", {})


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


#: Codes of a duplicate key (11000 and its legacy forms).
DUPLICATE_KEY_CODES = frozenset({11000, 11001, 12582})
MAX_TIME_MS_EXPIRED = 50
CURSOR_NOT_FOUND = 43
WRITE_CONCERN_FAILED = 64
#: SDAM's "not writable primary" and "node is recovering" codes.
_STATE_CHANGE_CODES = frozenset({10107, 13435, 10058, 11600, 11602, 13436, 189, 91})
_STATE_CHANGE_MESSAGES = ("not master", "node is recovering", "not writable primary")


def error_code(value: Any) -> Optional[int]:
    """A server's error code as an int: servers and compatible servers send it as an
    int32, an int64 or an integral double; anything else is no code."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _is_wtimeout(error: Mapping[str, Any]) -> bool:
    """Whether a write concern error document says its ``wtimeout`` expired."""
    info = error.get("errInfo")
    return error_code(error.get("code")) == WRITE_CONCERN_FAILED or bool(
        isinstance(info, Mapping) and info.get("wtimeout")
    )


def write_concern_error_from_reply(reply: Mapping[str, Any]) -> Optional[WriteConcernError]:
    """The WriteConcernError of an ``ok: 1`` reply whose write was applied but whose
    write concern was not satisfied (a WTimeoutError when its wtimeout expired); None
    when the reply has no writeConcernError."""
    wce = reply.get("writeConcernError")
    if wce is None or not isinstance(wce, Mapping):  # None: the common case, no ABC check
        return None
    code = error_code(wce.get("code"))
    cls = WTimeoutError if _is_wtimeout(wce) else WriteConcernError
    return cls(str(wce.get("errmsg", "write concern error")), code, reply)


def write_error_from_document(error: Mapping[str, Any], labels: Iterable[str] = ()) -> WriteError:
    """The error of one entry of a reply's ``writeErrors`` (a DuplicateKeyError for a
    duplicate key)."""
    code = error_code(error.get("code"))
    cls = DuplicateKeyError if code in DUPLICATE_KEY_CODES else WriteError
    return cls(str(error.get("errmsg", "write error")), code, error, labels)


def command_error_from_reply(reply: Mapping[str, Any]) -> OperationFailure:
    """Build the error for a command reply with ``ok: 0``, of the class its code calls
    for (NotPrimaryError, ExecutionTimeout, CursorNotFound, DuplicateKeyError)."""
    message = str(reply.get("errmsg", "command failed"))
    code = error_code(reply.get("code"))
    cls: type[OperationFailure] = OperationFailure
    if code in _STATE_CHANGE_CODES or (
        code is None and any(m in message for m in _STATE_CHANGE_MESSAGES)
    ):
        cls = NotPrimaryError
    elif code == MAX_TIME_MS_EXPIRED:
        cls = ExecutionTimeout
    elif code == CURSOR_NOT_FOUND:
        cls = CursorNotFound
    elif code in DUPLICATE_KEY_CODES:
        cls = DuplicateKeyError
    return cls(message, code, reply)


#: pymongo's name for the base class.
PyMongoError = MongoCoreError
