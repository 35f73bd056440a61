"""The data side of putting a deployment back between tests, over the wire, as a
client sees it, so the same code serves a simulated deployment and a real one.

:func:`drop_data` ends every session the tests left (``killAllSessions``: their
open transactions and cursors), drops every database the tests created (all but ``admin``,
``config`` and ``local`` and those there at the start, :class:`DataBaseline`), the
collections they made in ``admin`` (not ``system.*``), the users they created (on a
real deployment; the simulator's are put back from Python, simulated.py), and undoes
an ``fsync`` lock they left. Drops ask for ``w: "majority"``, so a secondary read in
the next test does not find the last test's documents.

The commands go over one connection of mongocore's I/O shell (:func:`connection`):
no client, no monitor threads, nothing left behind once it is closed.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any, Optional, Protocol

from mongocore.errors import OperationFailure

__all__ = ["KEPT_DATABASES", "Commands", "DataBaseline", "connection", "drop_data"]

#: The databases a reset never drops: the server's own.
KEPT_DATABASES = frozenset({"admin", "config", "local"})
#: A drop waits for a majority, so the members agree before the next test.
_MAJORITY = {"w": "majority"}
#: fsyncUnlock calls at most (each undoes one fsync lock).
_MAX_UNLOCKS = 100


class Commands(Protocol):
    """Runs one command and returns its reply (OperationFailure for ``ok: 0``)."""

    def command(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]: ...


class _Connection:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def command(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        return self._conn.command(db, cmd)  # type: ignore[no-any-return]


@contextlib.contextmanager
def connection(uri: str, address: tuple[str, int]) -> Iterator[Commands]:
    """One connection to ``address``, with the TLS, credentials and load-balancing of
    ``uri``, closed on the way out."""
    from mongocore.core.address import Address  # noqa: PLC0415 - loads with a deployment
    from mongocore.core.options import ClientOptions  # noqa: PLC0415
    from mongocore.io.auth import authenticator_for  # noqa: PLC0415
    from mongocore.io.connection import connect  # noqa: PLC0415
    from mongocore.io.connection_settings import ConnectionSettings  # noqa: PLC0415

    options = ClientOptions.from_uri(uri)
    settings = ConnectionSettings.from_options(options)
    conn = connect(Address(*address), settings, authenticate=authenticator_for(options))
    try:
        yield _Connection(conn)
    finally:
        conn.close("poolClosed")


@dataclasses.dataclass(frozen=True)
class DataBaseline:
    """What a reset keeps: what was there before the tests ran."""

    databases: frozenset[str] = frozenset()
    admin_collections: frozenset[str] = frozenset()
    #: (db, user) pairs; None: users are left alone (the simulator puts its own back,
    #: or the deployment did not let the plugin list them).
    users: Optional[frozenset[tuple[str, str]]] = None

    @classmethod
    def of(cls, commands: Commands, *, users: bool) -> DataBaseline:
        """What is there now, on a deployment the tests have not touched yet."""
        listed: Optional[frozenset[tuple[str, str]]] = None
        if users:
            with contextlib.suppress(OperationFailure):
                listed = frozenset(_users(commands))
        return cls(
            frozenset(_database_names(commands)),
            frozenset(_admin_collections(commands)),
            listed,
        )


def _database_names(commands: Commands) -> list[str]:
    reply = commands.command("admin", {"listDatabases": 1, "nameOnly": True})
    return [str(d["name"]) for d in reply.get("databases", [])]


def _admin_collections(commands: Commands) -> list[str]:
    reply = commands.command(
        "admin", {"listCollections": 1, "nameOnly": True, "cursor": {"batchSize": 10_000}}
    )
    names = [str(c["name"]) for c in reply["cursor"]["firstBatch"]]
    return [n for n in names if not n.startswith("system.")]


def _users(commands: Commands) -> list[tuple[str, str]]:
    reply = commands.command("admin", {"usersInfo": {"forAllDBs": True}})
    return [(str(u["db"]), str(u["user"])) for u in reply.get("users", [])]


def drop_data(commands: Commands, baseline: DataBaseline) -> list[str]:
    """Drop what the tests made (see the module's docstring); returns the namespaces
    and users dropped, for messages."""
    dropped: list[str] = []
    _kill_sessions(commands)
    for name in _database_names(commands):
        if name in KEPT_DATABASES or name in baseline.databases:
            continue
        commands.command(name, {"dropDatabase": 1, "writeConcern": _MAJORITY})
        dropped.append(name)
    for coll in _admin_collections(commands):
        if coll not in baseline.admin_collections:
            commands.command("admin", {"drop": coll, "writeConcern": _MAJORITY})
            dropped.append(f"admin.{coll}")
    if baseline.users is not None:
        for db, user in _users(commands):
            if (db, user) not in baseline.users:
                commands.command(db, {"dropUser": user, "writeConcern": _MAJORITY})
                dropped.append(f"user {user} of {db}")
    _unlock(commands)
    return dropped


def _kill_sessions(commands: Commands) -> None:
    """End every session the tests left: their open transactions (which would hold
    their locks and their writes back from the drops) and their cursors."""
    with contextlib.suppress(OperationFailure):  # not allowed to this user: go on
        commands.command("admin", {"killAllSessions": []})


def _unlock(commands: Commands) -> None:
    """Undo the fsync locks a test left (a locked server would hold every write)."""
    for _ in range(_MAX_UNLOCKS):
        try:
            reply = commands.command("admin", {"fsyncUnlock": 1})
        except OperationFailure:
            return  # not locked (IllegalOperation), or not a command here (a router)
        if not reply.get("lockCount"):
            return
