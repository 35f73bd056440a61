"""Unified test format: the database operations that run a cursor-returning command
("runCursorCommand", "createCommandCursor", on ``Database.cursor_command``) and the
operations on the cursor entity the latter creates ("iterateUntilDocumentOrError",
"iterateOnce", "close").

Kept apart from :mod:`tests.spec.unified.operations`, which dispatches here for these
names (:func:`handles`).
"""

from __future__ import annotations

from typing import Any

from mongocore.api.command_cursor import CommandCursor
from mongocore.api.database import Database
from tests.spec.unified.entities import UnsupportedFeature, read_preference

DATABASE_OPERATIONS = frozenset({"runCursorCommand", "createCommandCursor"})
CURSOR_OPERATIONS = frozenset({"iterateUntilDocumentOrError", "iterateOnce", "close"})


def handles(target: Any, name: str) -> bool:
    """Is this operation one of this module's?"""
    if isinstance(target, Database):
        return name in DATABASE_OPERATIONS
    return isinstance(target, CommandCursor) and name in CURSOR_OPERATIONS


def run(target: Any, name: str, args: Any) -> Any:
    """Run the operation (``args`` is an ``operations.Arguments``). runCursorCommand
    returns the documents of the whole cursor (a list, which the caller matches as
    root-level documents), createCommandCursor the cursor."""
    if isinstance(target, CommandCursor):
        return _cursor_operation(target, name, args)
    session = args.session()
    command = dict(args.require("command"))
    args.take("commandName")  # Python keeps the command's key order
    rp = args.take("readPreference")
    batch_size = args.take("batchSize")
    cursor_type = args.take("cursorType", "nonTailable")
    # maxTimeMS is the getMores' (the command's own is in the command document).
    keywords = args.keywords(
        {"comment": "comment", "maxTimeMS": "max_await_time_ms", "timeoutMS": "timeout_ms"}
    )
    args.done()
    if cursor_type != "nonTailable":
        raise UnsupportedFeature(f"{name}: cursorType {cursor_type!r} (no tailable cursors)")
    cursor = target.cursor_command(
        command,
        read_preference=None if rp is None else read_preference(rp),
        session=session,
        **keywords,
    )
    if batch_size is not None:
        cursor.batch_size(int(batch_size))
    if name == "createCommandCursor":
        return cursor
    with cursor:
        return cursor.to_list()


def _cursor_operation(cursor: CommandCursor, name: str, args: Any) -> Any:
    args.done()
    if name == "iterateUntilDocumentOrError":
        return cursor.next()
    if name == "iterateOnce":
        # One getMore at most: the document it returned, if any (a tailable cursor
        # would be the one to return none without being exhausted).
        return cursor.try_next()
    cursor.close()
    return None
