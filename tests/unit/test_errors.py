"""The exception hierarchy in pymongo's shape, and the classes server replies map to."""

from __future__ import annotations

from typing import Any

import pytest
from bson import Int64

from mongocore.errors import (
    AutoReconnect,
    ConnectionFailure,
    CursorNotFound,
    DuplicateKeyError,
    ExecutionTimeout,
    MongoCoreError,
    NetworkError,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
    WriteConcernError,
    WriteError,
    WTimeoutError,
    command_error_from_reply,
    error_code,
    write_concern_error_from_reply,
    write_error_from_document,
)


def test_the_hierarchy_matches_pymongos() -> None:
    assert PyMongoError is MongoCoreError
    assert issubclass(NetworkTimeout, AutoReconnect)
    assert issubclass(NetworkError, AutoReconnect)
    assert issubclass(ServerSelectionTimeoutError, AutoReconnect)
    assert issubclass(AutoReconnect, ConnectionFailure)
    assert issubclass(DuplicateKeyError, WriteError)
    assert issubclass(WriteError, OperationFailure)
    assert issubclass(WTimeoutError, WriteConcernError)
    assert issubclass(ExecutionTimeout, OperationFailure)
    assert issubclass(CursorNotFound, OperationFailure)
    assert issubclass(NotPrimaryError, AutoReconnect)
    # The knowing difference: it also carries the server's code as an OperationFailure.
    assert issubclass(NotPrimaryError, OperationFailure)
    assert not issubclass(NotPrimaryError, NetworkError)


@pytest.mark.parametrize(
    ("reply", "cls"),
    [
        ({"ok": 0, "code": 10107, "errmsg": "not primary"}, NotPrimaryError),
        ({"ok": 0, "code": 91, "errmsg": "shutting down"}, NotPrimaryError),
        ({"ok": 0, "errmsg": "node is recovering"}, NotPrimaryError),
        ({"ok": 0, "code": 50, "errmsg": "operation exceeded time limit"}, ExecutionTimeout),
        ({"ok": 0, "code": 43, "errmsg": "cursor id 7 not found"}, CursorNotFound),
        ({"ok": 0, "code": 11000, "errmsg": "E11000 duplicate key"}, DuplicateKeyError),
        ({"ok": 0, "code": 2, "errmsg": "bad value"}, OperationFailure),
    ],
)
def test_command_errors_get_the_class_their_code_calls_for(
    reply: dict[str, Any], cls: type[OperationFailure]
) -> None:
    error = command_error_from_reply(reply)
    assert type(error) is cls
    assert error.details is reply


@pytest.mark.parametrize("code", [11600.0, Int64(11600), 11600])
def test_codes_sent_as_doubles_or_longs_are_codes(code: Any) -> None:
    error = command_error_from_reply({"ok": 0, "code": code, "errmsg": "x"})
    assert error.code == 11600 and type(error.code) is int
    assert isinstance(error, NotPrimaryError)


@pytest.mark.parametrize("value", [1.5, "11000", None, True, [11000]])
def test_anything_else_is_no_code(value: Any) -> None:
    assert error_code(value) is None


def test_a_duplicate_key_write_error() -> None:
    error = write_error_from_document({"index": 0, "code": 11000.0, "errmsg": "E11000"})
    assert isinstance(error, DuplicateKeyError) and error.code == 11000
    other = write_error_from_document({"index": 0, "code": 121, "errmsg": "validation"})
    assert type(other) is WriteError


def test_a_wtimeout_is_a_wtimeout_error() -> None:
    timed_out = write_concern_error_from_reply(
        {"ok": 1, "writeConcernError": {"code": 64, "errmsg": "waiting", "errInfo": {}}}
    )
    assert isinstance(timed_out, WTimeoutError)
    by_info = write_concern_error_from_reply(
        {"ok": 1, "writeConcernError": {"code": 100, "errInfo": {"wtimeout": True}}}
    )
    assert isinstance(by_info, WTimeoutError)
    other = write_concern_error_from_reply({"ok": 1, "writeConcernError": {"code": 91}})
    assert type(other) is WriteConcernError
    assert write_concern_error_from_reply({"ok": 1}) is None


def test_code_name() -> None:
    error = command_error_from_reply({"ok": 0, "code": 2, "codeName": "BadValue"})
    assert error.code_name == "BadValue"
    assert command_error_from_reply({"ok": 0, "code": 2}).code_name is None
