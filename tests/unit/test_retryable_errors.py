"""Which errors a retryable read or write retries, read from the error a server returned.

Seeds: retryable-writes.rst 1.0, "Retryable Error" (network errors, and the "not
writable primary" and "node is recovering" errors of SDAM, as the command's error or
as its writeConcernError); retryable-reads.rst 1.3.0, "Retryable Error" (network
errors and a fixed list of server error codes).
"""

from __future__ import annotations

from typing import Any

import pytest

from mongocore.errors import OperationFailure, WriteConcernError
from mongocore.retry import is_retryable_read_error, is_retryable_write_error


def concern_error(write_concern_error: Any, code: Any = 64) -> WriteConcernError:
    # The error's own code and message are those of the reply's top level; the
    # writeConcernError document is what decides.
    reply = {"ok": 1, "n": 1, "writeConcernError": write_concern_error}
    return WriteConcernError("write concern failed", code, reply)


@pytest.mark.parametrize(
    ("write_concern_error", "retryable"),
    [
        ({"code": 91, "errmsg": "shutting down"}, True),
        ({"code": 10107, "errmsg": "x"}, True),
        ({"code": 64, "errmsg": "waiting for replication timed out"}, False),
        # Without a code the message decides; a code that is not an integer is no code.
        ({"errmsg": "node is recovering"}, True),
        ({"code": "91", "errmsg": "not master"}, True),
        ({"code": "91", "errmsg": "other"}, False),
        ({"code": 64}, False),
    ],
)
def test_write_concern_error_document_decides(
    write_concern_error: dict[str, Any], retryable: bool
) -> None:
    assert is_retryable_write_error(concern_error(write_concern_error)) is retryable
    # Never a retryable read error: a read has no write concern.
    assert not is_retryable_read_error(concern_error(write_concern_error))


def test_write_concern_error_without_its_document_uses_the_error_itself() -> None:
    assert is_retryable_write_error(WriteConcernError("not master", 10107, {"ok": 1}))
    assert not is_retryable_write_error(WriteConcernError("other", 64, {"ok": 1}))
    broken = WriteConcernError("node is recovering", None, {"writeConcernError": "oops"})
    assert is_retryable_write_error(broken)


@pytest.mark.parametrize(
    ("code", "retryable"), [(91, True), (89, True), (11000, False), (None, False)]
)
def test_read_errors_by_code(code: Any, retryable: bool) -> None:
    error = OperationFailure("failed", code, {"ok": 0, "code": code})
    assert is_retryable_read_error(error) is retryable
    assert not is_retryable_read_error(ValueError("not a server error"))
