"""``CursorType``: pymongo's cursor types, of which mongocore runs only one.

The find command's cursor flags (``tailable``, ``awaitData``) and OP_QUERY's exhaust
bit are what the other types ask for; mongocore's cursors are plain (non-tailable)
find cursors, so every other type is refused with a clear error where it is used.
"""

from __future__ import annotations

from typing import Final

from mongocore.errors import ConfigurationError

__all__ = ["CursorType", "check_cursor_type"]


class CursorType:
    """The cursor types, with pymongo's values (its wire flag bits)."""

    NON_TAILABLE: Final = 0
    """A plain cursor, closed when its results are exhausted: the only one mongocore runs."""
    TAILABLE: Final = 2
    """A tailable cursor on a capped collection (not supported)."""
    TAILABLE_AWAIT: Final = 34
    """A tailable cursor whose getMore waits for data (not supported)."""
    EXHAUST: Final = 64
    """An exhaust cursor, streamed by the server (not supported)."""


_NAMES = {
    CursorType.TAILABLE: "TAILABLE",
    CursorType.TAILABLE_AWAIT: "TAILABLE_AWAIT",
    CursorType.EXHAUST: "EXHAUST",
}


def check_cursor_type(cursor_type: object) -> None:
    """Accept ``CursorType.NON_TAILABLE``; raise for any other value.

    ConfigurationError names the unsupported type (tailable, tailable-await and
    exhaust cursors); ValueError rejects a value that is no cursor type at all.
    """
    if cursor_type == CursorType.NON_TAILABLE and not isinstance(cursor_type, bool):
        return
    name = _NAMES.get(cursor_type) if isinstance(cursor_type, int) else None
    if name is not None:
        raise ConfigurationError(
            f"cursor_type=CursorType.{name} is not supported by mongocore: its cursors "
            "are non-tailable; use CursorType.NON_TAILABLE (the default)"
        )
    raise ValueError(f"cursor_type must be one of the CursorType values, not {cursor_type!r}")
