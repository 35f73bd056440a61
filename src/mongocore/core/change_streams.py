"""Change streams: the pure rules of resuming.

Spec: Change Streams, "Resumable Error", "startAtOperationTime", "Resume Process",
"Updating the Cached Resume Token". The API's change stream
(:mod:`mongocore.api.change_stream`) runs the commands; what it caches, whether an
error lets it resume, and what the resuming ``$changeStream`` stage starts from are
decided here, over values only (no I/O).

Where the retryable-reads seed meets this spec: the aggregate that opens (or reopens)
a stream is a retryable read (the seed lists ``watch()`` among the operations that
MUST retry, as many times as necessary), which is the executor's business; resuming
is this module's, once per resumable error of a getMore, never on an aggregate error.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Optional

from mongocore._deferred_dataclass import dataclass, replace
from mongocore.errors import CURSOR_NOT_FOUND, ConnectionFailure, OperationFailure

#: The label a 4.4+ server puts on errors a change stream may resume after.
RESUMABLE_CHANGE_STREAM_ERROR = "ResumableChangeStreamError"

#: Wire version 9 (MongoDB 4.4): the server labels resumable errors itself.
RESUMABLE_LABEL_WIRE_VERSION = 9

#: Wire version 7 (MongoDB 4.0): ``startAtOperationTime`` exists.
START_AT_OPERATION_TIME_WIRE_VERSION = 7

#: "Resumable Error": the codes that make a server error resumable below wire version 9.
RESUMABLE_CODES_BEFORE_LABELS = frozenset(
    {
        6,  # HostUnreachable
        7,  # HostNotFound
        89,  # NetworkTimeout
        91,  # ShutdownInProgress
        189,  # PrimarySteppedDown
        262,  # ExceededTimeLimit
        9001,  # SocketException
        10107,  # NotWritablePrimary
        11600,  # InterruptedAtShutdown
        11602,  # InterruptedDueToReplStateChange
        13435,  # NotPrimaryNoSecondaryOk
        13436,  # NotPrimaryOrSecondary
        63,  # StaleShardVersion
        150,  # StaleEpoch
        13388,  # StaleConfig
        234,  # RetryChangeStream
        133,  # FailedToSatisfyReadPreference
    }
)

#: Wire version 9 (MongoDB 4.4): getMore takes a comment.
GET_MORE_COMMENT_WIRE_VERSION = 9

#: The ``$changeStream`` options that say where a stream starts.
START_OPTIONS = ("resumeAfter", "startAfter", "startAtOperationTime")


def is_resumable(error: BaseException, max_wire_version: int) -> bool:
    """ "Resumable Error", for an error of a getMore on a connection of
    ``max_wire_version``: any error that is not a server error (a network error, a
    timeout, no server to reach), CursorNotFound, and then the server's
    ResumableChangeStreamError label (4.4+) or the spec's list of codes (older)."""
    if isinstance(error, OperationFailure):
        if error.code == CURSOR_NOT_FOUND:
            return True
        if max_wire_version >= RESUMABLE_LABEL_WIRE_VERSION:
            return error.has_error_label(RESUMABLE_CHANGE_STREAM_ERROR)
        return error.code in RESUMABLE_CODES_BEFORE_LABELS
    # Errors of the driver's own (an invalid argument, a closed client) are not
    # resumable: only a failure to talk to the server is.
    return isinstance(error, ConnectionFailure)


def kills_old_cursor(error: BaseException) -> bool:
    """Whether resuming after ``error`` sends killCursors for the old cursor ("Resume
    Process": the driver SHOULD kill it, on its own server only). Not after a network
    error (the server could not be reached; its cursor times out there) nor after
    CursorNotFound (the server has no such cursor)."""
    if isinstance(error, OperationFailure):
        return error.code != CURSOR_NOT_FOUND
    return not isinstance(error, ConnectionFailure)


def get_more_fields(
    max_await_time_ms: Optional[int], comment: Any, max_wire_version: int
) -> dict[str, Any]:
    """The fields every getMore of the stream carries: ``maxTimeMS`` (the
    ``maxAwaitTimeMS`` option, "an alias for maxTimeMS, used on getMore commands") and
    the stream's comment, which MUST be sent on 4.4+ and MUST NOT be below 4.4
    (ChangeStreamOptions, "comment")."""
    fields: dict[str, Any] = {}
    if max_await_time_ms is not None:
        fields["maxTimeMS"] = max_await_time_ms
    if comment is not None and max_wire_version >= GET_MORE_COMMENT_WIRE_VERSION:
        fields["comment"] = comment
    return fields


class MissingResumeToken(ValueError):
    """A change document without ``_id``: the stream cannot resume after it."""


@dataclass(frozen=True)
class ResumeState:
    """What a change stream remembers in order to resume.

    ``resume_token``: the cached resume token. ``operation_time``: the operation time
    to start at when there is no token (the user's ``startAtOperationTime``, or the
    one saved from an aggregate, "startAtOperationTime"). ``start_after``: the stream
    was started with ``startAfter`` and has returned no document yet. Every method
    returns a new state.
    """

    resume_token: Optional[Mapping[str, Any]] = None
    operation_time: Optional[Any] = None
    start_after: bool = False

    @classmethod
    def started(
        cls,
        *,
        resume_after: Optional[Mapping[str, Any]],
        start_after: Optional[Mapping[str, Any]],
        start_at_operation_time: Optional[Any],
    ) -> ResumeState:
        """ "When the ChangeStream is started": cache startAfter, else resumeAfter."""
        token = start_after if start_after is not None else resume_after
        return cls(
            resume_token=None if token is None else copy.deepcopy(dict(token)),
            operation_time=start_at_operation_time,
            start_after=start_after is not None,
        )

    def after_aggregate(
        self,
        *,
        stage: Mapping[str, Any],
        first_batch_empty: bool,
        post_batch_resume_token: Optional[Mapping[str, Any]],
        operation_time: Optional[Any],
        max_wire_version: int,
    ) -> ResumeState:
        """An aggregate's reply: an empty first batch caches its postBatchResumeToken;
        an empty first batch without one, from an aggregate that named no starting
        point, saves the reply's operationTime (wire version 7+)."""
        state = self.after_batch(
            batch_empty=first_batch_empty, post_batch_resume_token=post_batch_resume_token
        )
        if (
            not any(option in stage for option in START_OPTIONS)
            and max_wire_version >= START_AT_OPERATION_TIME_WIRE_VERSION
            and first_batch_empty
            and post_batch_resume_token is None
            and operation_time is not None
        ):
            state = replace(state, operation_time=operation_time)
        return state

    def after_batch(
        self, *, batch_empty: bool, post_batch_resume_token: Optional[Mapping[str, Any]]
    ) -> ResumeState:
        """An aggregate or getMore returned: an empty batch with a postBatchResumeToken
        caches the token."""
        if batch_empty and post_batch_resume_token is not None:
            return replace(self, resume_token=copy.deepcopy(dict(post_batch_resume_token)))
        return self

    def after_document(
        self,
        document: Mapping[str, Any],
        *,
        last_in_batch: bool,
        post_batch_resume_token: Optional[Mapping[str, Any]],
    ) -> ResumeState:
        """A document is returned to the user: the batch's postBatchResumeToken when it
        is the batch's last document, else its ``_id``. Raises MissingResumeToken for a
        document without ``_id`` (a pipeline removed it)."""
        if "_id" not in document:
            raise MissingResumeToken(
                "Cannot provide resume functionality when the resume token is missing:"
                " the change document has no _id (a pipeline stage removed it)"
            )
        token: Any = document["_id"]
        if last_in_batch and post_batch_resume_token is not None:
            token = post_batch_resume_token
        return ResumeState(resume_token=copy.deepcopy(token), operation_time=None)

    def resume_stage(self, original: Mapping[str, Any], max_wire_version: int) -> dict[str, Any]:
        """ "Resume Process": the ``$changeStream`` options of the aggregate that resumes
        (``original`` are those of the first aggregate, ``max_wire_version`` the
        selected server's)."""
        stage = {k: v for k, v in original.items() if k not in START_OPTIONS}
        if self.resume_token is not None:
            key = "startAfter" if self.start_after else "resumeAfter"
            stage[key] = self.resume_token
        elif (
            self.operation_time is not None
            and max_wire_version >= START_AT_OPERATION_TIME_WIRE_VERSION
        ):
            stage["startAtOperationTime"] = self.operation_time
        return stage
