"""Resume tokens of the simulated change streams (change streams spec, "Resume Token").

A client sees a token as an opaque document ``{_data: <hex string>}``. Inside, it is a
stream position, and the hex strings of two tokens compare as their positions do (as a
7.0 server's KeyString-encoded tokens do): the oplog timestamp, then whether it marks
an event or only a point in time (a high-water mark sorts before the events of its
timestamp), the event's index among the events of one oplog entry (``txnOpIndex``: the
operations of a transaction, the collections a dropDatabase dropped), and whether it is
the invalidate that follows that event.

Layout of ``_data`` (hex digits): ``82`` | seconds (8) | increment (8) | type (2: ``00``
high-water mark, ``80`` event) | txnOpIndex (8) | fromInvalidate (2).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any, NamedTuple

from bson import Timestamp

from mongocore.sim.codes import CommandError

__all__ = ["Position", "after", "at", "event_position", "parse_token"]

_PREFIX = "82"
_LENGTH = len(_PREFIX) + 8 + 8 + 2 + 8 + 2
_HEX = frozenset(string.hexdigits)
_MAX_INC = 0xFFFFFFFF


class Position(NamedTuple):
    """A point in a change stream; tuple order is stream order."""

    time: int
    inc: int
    event: bool  # False: a high-water mark (a point in time, before its timestamp's events)
    op_index: int = 0  # txnOpIndex: the event's rank among those of one oplog entry
    invalidate: bool = False  # the invalidate event that follows the event at this position

    @property
    def ts(self) -> Timestamp:
        return Timestamp(self.time, self.inc)

    def token(self) -> dict[str, Any]:
        data = (
            f"{_PREFIX}{self.time:08X}{self.inc:08X}{0x80 if self.event else 0:02X}"
            f"{self.op_index:08X}{int(self.invalidate):02X}"
        )
        return {"_data": data}

    def invalidated(self) -> Position:
        """The position of the invalidate event this event causes."""
        return self._replace(invalidate=True)


def at(ts: Timestamp) -> Position:
    """The high-water mark just before the events of ``ts`` (startAtOperationTime)."""
    return Position(ts.time, ts.inc, False)


def after(ts: Timestamp) -> Position:
    """The high-water mark just after every event of ``ts``."""
    if ts.inc >= _MAX_INC:
        return Position(ts.time + 1, 0, False)
    return Position(ts.time, ts.inc + 1, False)


def event_position(ts: Timestamp, op_index: int = 0) -> Position:
    return Position(ts.time, ts.inc, True, op_index)


def parse_token(value: Any) -> Position:
    """The position a client's resume token names, or the server's error for a bad one."""
    data = value.get("_data") if isinstance(value, Mapping) else None
    if not isinstance(data, str):
        raise CommandError(
            40647,
            f"Bad resume token: _data of missing or of wrong type. Expected string, got {value!r}",
        )
    if not data:
        raise CommandError(40649, "invalid empty resume token")
    if len(data) % 2 or not _HEX.issuperset(data):
        raise CommandError(9, "resume token string was not a valid hex string")
    upper = data.upper()
    if len(upper) != _LENGTH or not upper.startswith(_PREFIX) or upper[18:20] not in ("00", "80"):
        raise CommandError(50811, f"KeyString format error: not a resume token: {data}")
    flag = upper[28:30]
    if flag not in ("00", "01"):
        raise CommandError(50811, f"KeyString format error: not a resume token: {data}")
    return Position(
        time=int(upper[2:10], 16),
        inc=int(upper[10:18], 16),
        event=upper[18:20] == "80",
        op_index=int(upper[20:28], 16),
        invalidate=flag == "01",
    )
