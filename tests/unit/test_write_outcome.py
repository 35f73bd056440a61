"""What a failed attempt says about its write, and how the error tells the caller.

The executor sums the attempts (tests/integration/test_dead_primary.py runs it
against raw-socket servers); here, the pure rule of mongocore.core.write_outcome and
the note in the error's message. Pure and fast (mutation testing runs it); the
connection's record of whether a request left in full is in
test_request_sent.py.
"""

from __future__ import annotations

import pytest

from mongocore.core.address import Address
from mongocore.core.retry_policy import NO_WRITES_PERFORMED
from mongocore.core.write_outcome import attempt_may_have_written
from mongocore.errors import (
    ConfigurationError,
    DocumentTooLarge,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    PoolClearedError,
    ProtocolError,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
    WriteConcernError,
    command_error_from_reply,
)

ADDRESS = Address("db", 27017)


@pytest.mark.parametrize(
    "error",
    [
        ServerSelectionTimeoutError("no server"),
        PoolClearedError("cleared", ADDRESS),
        WaitQueueTimeoutError("busy"),
        DocumentTooLarge("too large"),
        ConfigurationError("no sessions"),
        command_error_from_reply({"ok": 0, "code": 10107, "errmsg": "not primary"}),
        command_error_from_reply({"ok": 0, "code": 13435, "errmsg": "not primary, no secondaryOk"}),
        command_error_from_reply({"ok": 0, "errmsg": "not master"}),
        OperationFailure("stopped", 11602, {"errorLabels": ["NoWritesPerformed"]}),
    ],
    ids=lambda e: f"{type(e).__name__}-{getattr(e, 'code', None)}",
)
def test_errors_that_prove_nothing_was_written(error: MongoCoreError) -> None:
    assert attempt_may_have_written(error, request_sent=True) is False


@pytest.mark.parametrize(
    "error",
    [
        NetworkError("reset"),
        NetworkTimeout("timed out reading a reply"),
        ProtocolError("responseTo does not match"),
        # Interrupted at a step-down: it may have stopped part way.
        command_error_from_reply({"ok": 0, "code": 11602, "errmsg": "interrupted"}),
        command_error_from_reply({"ok": 0, "code": 50, "errmsg": "maxTimeMS"}),
        command_error_from_reply({"ok": 0, "errmsg": "node is recovering"}),
        WriteConcernError("waiting for replication", 91, {"ok": 1}),
    ],
    ids=lambda e: f"{type(e).__name__}-{getattr(e, 'code', None)}",
)
def test_errors_after_which_the_write_may_have_run(error: MongoCoreError) -> None:
    assert attempt_may_have_written(error, request_sent=True) is True


def test_a_request_that_never_left_in_full_wrote_nothing() -> None:
    assert attempt_may_have_written(NetworkError("broken pipe"), request_sent=False) is False
    assert attempt_may_have_written(NetworkTimeout("sending"), request_sent=False) is False
    # A server answer is an answer, however the request was counted.
    refused = command_error_from_reply({"ok": 0, "code": 10107, "errmsg": "not primary"})
    assert isinstance(refused, NotPrimaryError)
    assert attempt_may_have_written(refused, request_sent=False) is False


def test_the_outcome_goes_into_the_message_once() -> None:
    error = command_error_from_reply({"ok": 0, "code": 10107, "errmsg": "not primary"})
    assert error.write_may_have_been_applied is None
    error._set_write_outcome(False)
    error._set_write_outcome(True)  # a later verdict replaces the note
    assert error.write_may_have_been_applied is True
    assert str(error).count("[the write") == 1
    assert str(error).startswith("not primary [the write may have been applied")
    assert str(error).endswith("(code 10107)")
    network = NetworkError("connection reset")
    network._set_write_outcome(False)
    assert str(network) == "connection reset [the write was not applied]"
    assert network.message == str(network)


def test_a_write_concern_error_was_applied() -> None:
    assert WriteConcernError("no majority", 64).write_may_have_been_applied is True


def test_a_no_writes_performed_label_proves_nothing_was_written_whatever_the_error() -> None:
    """The label is the rule, not the error's class: an error that is not a server's
    answer but carries NoWritesPerformed still says nothing was written, even after a
    request left in full."""
    error = NetworkError("reset")
    error.add_error_label(NO_WRITES_PERFORMED)
    assert attempt_may_have_written(error, request_sent=True) is False
    assert attempt_may_have_written(NetworkError("reset"), request_sent=True) is True
