"""The server's errors for what the simulator's reads and writes raise: the engine's
own (already the server's), SnapshotTooOld with the server's words, and anything
else a request the simulator could not process (refused, never answered wrongly).
"""

from __future__ import annotations

import logging

from bson import Timestamp

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.store import SnapshotTooOld

__all__ = ["snapshot_too_old", "translate_store_errors"]

_log = logging.getLogger("mongocore.sim")


def _timestamp(stamp: int) -> Timestamp:
    return Timestamp(stamp >> 32, stamp & 0xFFFFFFFF)


def snapshot_too_old(stamp: int) -> CommandError:
    """SnapshotTooOld (239) as a 7.0 server words it for a read older than its history."""
    ts = _timestamp(stamp)
    return CommandError(
        239,
        f"Read timestamp Timestamp({ts.time}, {ts.inc}) is older than the oldest available"
        " timestamp.",
    )


def translate_store_errors(exc: BaseException, namespace: str) -> CommandError:
    """The server's error for what a read or write raised. The engine raises the
    server's errors itself; anything else is a request the simulator could not
    process, refused without the Python exception's text."""
    if isinstance(exc, SnapshotTooOld):
        return snapshot_too_old(int(exc.stamp))
    if isinstance(exc, CommandError):
        return exc
    # The aggregation helper (sim/aggregation.py) may raise pymongo's errors.
    code = getattr(exc, "code", None)
    if code is not None and hasattr(exc, "details"):
        if code == 2 and "(immutable) field '_id'" in str(exc):
            code = 66  # ImmutableField, as a server answers an update that changes _id
        return CommandError(int(code), str(exc))
    _log.debug("document store failure on %s", namespace, exc_info=exc)
    if isinstance(exc, NotImplementedError):
        return CommandError(238, "this operation is not supported by the simulator")
    return CommandError(238, "the simulator could not execute this request")
