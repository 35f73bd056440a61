"""Was a failed write applied? What each failed attempt tells the caller.

Not a seed rule: the retryable-writes seed (1.0, "Executing Retryable Write
Commands") decides which error the caller sees, not what the caller may conclude
from it. A caller reconciling after a failover needs to know whether to look for its
write before writing again, so every error of a retryable write operation says one
of two things (``MongoCoreError.write_may_have_been_applied``):

- False, certainly not applied: no attempt was sent in full (server selection, a
  connection that could not be checked out or established, a command refused before
  it left, a socket that failed while the request was still being written: a server
  never runs part of a message), or every attempt that reached a server was answered
  with an error saying nothing was written: "not writable primary" (SDAM's codes
  10107, 13435, 10058, or its message when there is no code: a server refuses a write
  before running it when it is not primary) or the ``NoWritesPerformed`` label.
- True, may have been applied: an attempt was sent and its reply was lost (a network
  error or timeout after sending, a malformed reply), or a server answered with any
  other error (it may have stopped the write part way: interrupted at a step-down,
  maxTimeMS), or with a write concern error (the write was applied).

An operation is the sum of its attempts: it may have been applied if any attempt may
have been. A retry answered "not writable primary" after a first attempt whose reply
was lost leaves the write possibly applied (by the first).
"""

from __future__ import annotations

from mongocore.core.description.errors import is_not_writable_primary
from mongocore.core.retry_policy import NO_WRITES_PERFORMED, caller_can_infer_attempt
from mongocore.errors import MongoCoreError, OperationFailure, WriteConcernError

__all__ = ["attempt_may_have_written"]


def attempt_may_have_written(error: BaseException, *, request_sent: bool) -> bool:
    """May the attempt that failed with ``error`` have applied its write?

    ``request_sent``: the attempt's command was handed to the socket in full (False
    when the connection failed while writing it, or before).
    """
    if not caller_can_infer_attempt(error):
        # An error of the driver itself (a document too large, a pool cleared or
        # closed, a configuration problem): raised before anything was sent.
        return False
    if isinstance(error, WriteConcernError):
        return True  # applied; only its write concern was not satisfied
    if isinstance(error, OperationFailure):
        if error.has_error_label(NO_WRITES_PERFORMED):
            return False
        return not is_not_writable_primary(error.message, error.code)
    if isinstance(error, MongoCoreError) and error.has_error_label(NO_WRITES_PERFORMED):
        return False
    return request_sent
