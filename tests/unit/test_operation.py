"""new_operation: every field of an Operation set, from its arguments or their defaults."""

from __future__ import annotations

from typing import Any

import pytest

from mongocore.core.address import Address
from mongocore.core.retry_policy import RetryKind
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.io.operation import Command, Operation, new_operation


def _build(ctx: Any) -> Command:
    return Command({"ping": 1})


def test_a_new_operation_takes_the_defaults_of_what_is_not_given() -> None:
    session: Any = object()
    op = new_operation(name="ping", database="admin", build=_build, session=session)
    # A slot left unset would raise AttributeError here.
    fields = {name: getattr(op, name) for name in Operation.__slots__}
    assert fields == {
        "name": "ping",
        "database": "admin",
        "build": _build,
        "session": session,
        "retry": RetryKind.NONE,
        "read_preference": None,
        "read_concern": None,
        "acknowledged": True,
        "timeout_ms": None,
        "address": None,
        "operation_id": None,
        "explicit_read_preference": False,
        "opens_cursor": False,
        "pinned": None,
        "operation_name": None,
        "continue_on": None,
        "attempts": 0,
        "may_have_written": False,
    }


# The two flags are given different values, in both orders: a flag taken from the
# other argument (or left at its default) shows.
@pytest.mark.parametrize(("explicit", "opens_cursor"), [(True, False), (False, True)])
def test_a_new_operation_keeps_every_argument_in_its_own_field(
    explicit: bool, opens_cursor: bool
) -> None:
    session: Any = object()
    pinned: Any = object()
    read_preference = ReadPreference(Mode.SECONDARY)
    op = new_operation(
        name="find",
        database="db",
        build=_build,
        session=session,
        retry=RetryKind.READ,
        read_preference=read_preference,
        read_concern={"level": "majority"},
        acknowledged=False,
        timeout_ms=250.0,
        address=Address("h", 27017),
        operation_id=7,
        explicit_read_preference=explicit,
        opens_cursor=opens_cursor,
        pinned=pinned,
        operation_name="countDocuments",
        continue_on=Address("h", 27018),
    )
    assert (op.name, op.database, op.build, op.session) == ("find", "db", _build, session)
    assert (op.operation_name, op.continue_on) == ("countDocuments", Address("h", 27018))
    assert (op.retry, op.read_preference, op.read_concern) == (
        RetryKind.READ,
        read_preference,
        {"level": "majority"},
    )
    assert (op.acknowledged, op.timeout_ms, op.address, op.operation_id) == (
        False,
        250.0,
        Address("h", 27017),
        7,
    )
    assert (op.explicit_read_preference, op.opens_cursor, op.pinned) == (
        explicit,
        opens_cursor,
        pinned,
    )
    assert (op.attempts, op.may_have_written) == (0, False)
    assert repr(op) == "<Operation find on 'db' retry=READ>"
