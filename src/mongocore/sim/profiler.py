"""The database profiler of a simulated mongod (MongoDB manual, "Database Profiler",
"profile", "Database Profiler Output"): the ``profile`` command and ``system.profile``.

Each mongod has its own profiler, as a server has (nothing of it is replicated):

- ``{profile: <level>}`` sets a database's level, 0 (off), 1 (the slow operations:
  longer than ``slowms``, 100 by default, sampled at ``sampleRate``, 1.0 by default;
  or, with a ``filter``, the operations that match it) or 2 (every operation), and
  answers the settings that were in force: ``{was, slowms, sampleRate}`` (with
  ``filter`` and a ``note`` when one is set). ``{profile: -1}`` only answers them
  (``db.getProfilingStatus()``). ``slowms`` and ``sampleRate`` are the server's, for
  every database; the level and the filter are the database's. Turning the profiler
  on creates the database's ``system.profile``.
- ``<db>.system.profile`` holds, oldest first, one document per profiled operation of
  that database, in a 7.0 server's shape: ``op`` (``query``, ``insert``, ``update``,
  ``remove``, ``getmore``, ``command``), ``ns``, ``command`` (the command as sent; for
  ``update``/``remove``, the statement, its hint by name as ``{$hint: name}``, with the
  command's ``comment``), what the operation reports
  (``nreturned``, ``ninserted``, ``nMatched``/``nModified``/``nUpserted``,
  ``ndeleted``, ``cursorid``, the error's ``ok``/``errMsg``/``errName``/``errCode``),
  ``numYield``, ``locks``, ``responseLength``, ``protocol``, ``millis``, ``ts``,
  ``client``, ``appName``, ``allUsers`` and ``user``. An insert command is one
  document; an update or delete command is one document per statement, as on a
  server. It is a capped collection (1 MiB on a server; here the newest
  ``PROFILE_HISTORY`` documents are kept) without ``_id``s, read with find, count,
  distinct and aggregate. Dropping it while the profiler is on is refused
  (IllegalOperation, 20), as a server refuses it.

Not recorded: ``keysExamined``, ``docsExamined`` and ``planSummary`` (the simulator's
plans are explain's, computed only when asked), and operations of the ``admin``,
``local`` and ``config`` databases' own commands other than CRUD.
"""

from __future__ import annotations

import datetime
import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import bson

from mongocore.sim.codes import CommandError, code_name
from mongocore.sim.commands import CommandContext, Handler, Reply
from mongocore.sim.engine.matcher import compile_filter
from mongocore.sim.query import match_context

if TYPE_CHECKING:
    from mongocore.sim.server import Connection

__all__ = [
    "PROFILE_COLLECTION",
    "PROFILE_HISTORY",
    "Profiler",
    "cmd_profile",
    "on_drop",
    "on_drop_database",
    "refused_on_mongos",
]

PROFILE_COLLECTION = "system.profile"
#: How many documents a database's system.profile keeps (a server caps it at 1 MiB).
PROFILE_HISTORY = 1000
DEFAULT_SLOW_MS = 100
_OPTIONS = {"capped": True, "size": 1024 * 1024}
_FILTER_NOTE = (
    "When a filter expression is set, slowms and sampleRate are not used for profiling"
    " and slow-query log lines."
)
# A server profiles no operation of these commands (they are the connection's own).
_NOT_PROFILED = frozenset(
    {"hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate", "logout"}
)


@dataclass
class _Database:
    level: int = 0
    filter: Optional[dict[str, Any]] = None
    exists: bool = False  # system.profile was created (and not dropped since)
    docs: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=PROFILE_HISTORY))


class Profiler:
    """One mongod's profiler: its settings and each database's system.profile."""

    def __init__(self) -> None:
        self.slow_ms = DEFAULT_SLOW_MS
        self.sample_rate = 1.0
        self._databases: dict[str, _Database] = {}

    def _database(self, db: str) -> _Database:
        return self._databases.setdefault(db, _Database())

    def level(self, db: str) -> int:
        settings = self._databases.get(db)
        return settings.level if settings is not None else 0

    # -- system.profile ------------------------------------------------------------------

    def collection(self, db: str) -> Optional[list[dict[str, Any]]]:
        """The documents of ``db.system.profile``, None if it does not exist."""
        settings = self._databases.get(db)
        if settings is None or not settings.exists:
            return None
        return list(settings.docs)

    @property
    def options(self) -> dict[str, Any]:
        return dict(_OPTIONS)

    def drop(self, db: str) -> bool:
        """Drop ``db.system.profile``; False if there was none."""
        settings = self._databases.get(db)
        if settings is None or not settings.exists:
            return False
        if settings.level:
            raise CommandError(20, "turn off profiling before dropping system.profile collection")
        settings.exists = False
        settings.docs.clear()
        return True

    def drop_database(self, db: str) -> None:
        settings = self._databases.get(db)
        if settings is not None:
            settings.exists = False
            settings.docs.clear()

    # -- the profile command ---------------------------------------------------------------

    def command(self, db: str, cmd: Mapping[str, Any]) -> Reply:
        level = cmd.get("profile")
        if (
            isinstance(level, bool)
            or not isinstance(level, (int, float))
            or level not in (-1, 0, 1, 2)
        ):
            raise CommandError(2, f"Invalid profiling level: {level!r}")
        settings = self._database(db)
        reply: Reply = {
            "was": settings.level,
            "slowms": self.slow_ms,
            "sampleRate": self.sample_rate,
        }
        if settings.filter is not None:
            reply["filter"] = settings.filter
            reply["note"] = _FILTER_NOTE
        slow_ms = cmd.get("slowms")
        if slow_ms is not None:
            if isinstance(slow_ms, bool) or not isinstance(slow_ms, (int, float)):
                raise CommandError(
                    14, "BSON field 'profile.slowms' is the wrong type, expected type 'int'"
                )
            self.slow_ms = int(slow_ms)
        sample_rate = cmd.get("sampleRate")
        if sample_rate is not None:
            if (
                isinstance(sample_rate, bool)
                or not isinstance(sample_rate, (int, float))
                or not 0 <= sample_rate <= 1
            ):
                raise CommandError(2, "'sampleRate' must be between 0.0 and 1.0 inclusive")
            self.sample_rate = float(sample_rate)
        if "filter" in cmd:
            flt = cmd["filter"]
            if flt == "unset":
                settings.filter = None
            elif isinstance(flt, Mapping):
                _check_filter(flt)
                settings.filter = dict(flt)
            else:
                raise CommandError(
                    14, "Expected a match expression or the string 'unset' for 'filter'"
                )
        if level != -1:
            settings.level = int(level)
            if level:
                settings.exists = True
        reply["ok"] = 1.0
        return reply

    # -- recording ---------------------------------------------------------------------------

    def record(
        self,
        conn: Connection,
        name: str,
        db: str,
        cmd: Mapping[str, Any],
        reply: Mapping[str, Any],
        *,
        elapsed: float,
        level: int,
    ) -> None:
        """Profile one command that ran for ``elapsed`` seconds, if its database's
        settings say so (the lock is held). ``level`` is the database's level when the
        command started, as a server takes it."""
        settings = self._databases.get(db)
        if settings is None or not level or name in _NOT_PROFILED:
            return
        millis = int(elapsed * 1000)
        entries = _entries(conn, name, db, cmd, reply, millis=millis)
        for entry in entries:
            if self._profiles(settings, level, entry, elapsed * 1000):
                settings.exists = True
                settings.docs.append(entry)

    def _profiles(
        self, settings: _Database, level: int, entry: Mapping[str, Any], millis: float
    ) -> bool:
        if self.sample_rate < 1.0 and random.random() >= self.sample_rate:
            return False
        if settings.filter is not None:
            return compile_filter(settings.filter, match_context(None)).matches(dict(entry))
        return level == 2 or millis > self.slow_ms


def _check_filter(flt: Mapping[str, Any]) -> None:
    """A profile filter is a query: refused with the query's own error, as a server does."""
    compile_filter(flt, match_context(None))


# -- the documents -------------------------------------------------------------------------

_COLLECTION_COMMANDS = frozenset(
    {
        "insert", "update", "delete", "find", "findAndModify", "aggregate", "count",
        "distinct", "create", "drop", "createIndexes", "dropIndexes", "listIndexes",
        "collStats", "collMod", "validate",
    }
)  # fmt: skip


def _namespace(name: str, db: str, cmd: Mapping[str, Any]) -> str:
    target = cmd.get(name)
    if name == "getMore" and isinstance(cmd.get("collection"), str):
        return f"{db}.{cmd['collection']}"
    if name in _COLLECTION_COMMANDS and isinstance(target, str):
        return f"{db}.{target}"
    return f"{db}.$cmd"


def _peer_host(conn: Connection) -> str:
    try:
        host = conn.sock.getpeername()[0]
    except (OSError, ValueError, IndexError):
        return ""
    return str(host)


def _user_fields(conn: Connection) -> dict[str, Any]:
    users = [{"user": user, "db": db} for user, db in conn.authenticated_users]
    return {
        "allUsers": users,
        "user": f"{users[0]['user']}@{users[0]['db']}" if users else "",
    }


def _error_fields(reply: Mapping[str, Any]) -> dict[str, Any]:
    if reply.get("ok"):
        return {}
    code = reply.get("code")
    return {
        "ok": 0.0,
        "errMsg": reply.get("errmsg", ""),
        "errName": reply.get("codeName", code_name(int(code)) if isinstance(code, int) else ""),
        "errCode": code,
    }


def _cursor_fields(name: str, reply: Mapping[str, Any]) -> dict[str, Any]:
    cursor = reply.get("cursor")
    if not isinstance(cursor, Mapping):
        return {}
    batch = cursor.get("firstBatch", cursor.get("nextBatch", []))
    fields: dict[str, Any] = {}
    cursor_id = cursor.get("id")
    if cursor_id:
        fields["cursorid"] = cursor_id
    else:
        fields["cursorExhausted"] = True
    fields["nreturned"] = len(batch) if isinstance(batch, list) else 0
    return fields


def _entries(
    conn: Connection,
    name: str,
    db: str,
    cmd: Mapping[str, Any],
    reply: Mapping[str, Any],
    *,
    millis: int,
) -> list[dict[str, Any]]:
    """The system.profile documents of one command: one, or one per write statement."""
    ns = _namespace(name, db, cmd)
    common_tail = {
        "numYield": 0,
        "locks": {},
        "flowControl": {},
        "responseLength": len(bson.encode(dict(reply))) if isinstance(reply, Mapping) else 0,
        "protocol": "op_msg",
        "millis": millis,
        "ts": datetime.datetime.now(datetime.timezone.utc),
        "client": _peer_host(conn),
    }
    if conn.app_name is not None:
        common_tail["appName"] = conn.app_name
    common_tail.update(_user_fields(conn))
    errors = _error_fields(reply)
    command = dict(cmd)
    if name in ("update", "delete") and reply.get("ok"):
        statements = cmd.get("updates" if name == "update" else "deletes")
        if isinstance(statements, list) and statements:
            return [
                {
                    "op": "update" if name == "update" else "remove",
                    "ns": ns,
                    "command": _statement_command(statement, cmd),
                    **_statement_counts(name, reply, index, len(statements)),
                    **common_tail,
                }
                for index, statement in enumerate(statements)
            ]
    entry: dict[str, Any] = {"op": _op(name), "ns": ns, "command": command}
    if name == "insert":
        entry["ninserted"] = int(reply.get("n", 0) or 0)
    elif name == "getMore":
        entry["originatingCommand"] = {}
    if name in ("find", "aggregate", "getMore", "listCollections", "listIndexes"):
        entry.update(_cursor_fields(name, reply))
    elif name in ("count", "distinct"):
        entry["nreturned"] = 1 if reply.get("ok") else 0
    entry.update(errors)
    entry.update(common_tail)
    return [entry]


def _statement_command(statement: Any, cmd: Mapping[str, Any]) -> Any:
    """An update or delete statement as the profiler shows it: its own fields (a hint
    by name as ``{$hint: name}``), and the command's ``comment``."""
    if not isinstance(statement, Mapping):
        return statement
    shown = dict(statement)
    if isinstance(shown.get("hint"), str):
        shown["hint"] = {"$hint": shown["hint"]}
    if "comment" in cmd:
        shown["comment"] = cmd["comment"]
    return shown


def _op(name: str) -> str:
    return {"find": "query", "insert": "insert", "getMore": "getmore"}.get(name, "command")


def _statement_counts(
    name: str, reply: Mapping[str, Any], index: int, count: int
) -> dict[str, Any]:
    """What one statement of an update or delete did, as far as the reply tells it: the
    reply's totals go to a single statement; with several, upserts and errors are
    placed by their index and the rest is not split."""
    errors = {e.get("index"): e for e in reply.get("writeErrors", []) if isinstance(e, Mapping)}
    if index in errors:
        error = errors[index]
        code = error.get("code")
        return {
            "ok": 0.0,
            "errMsg": error.get("errmsg", ""),
            "errName": code_name(int(code)) if isinstance(code, int) else "",
            "errCode": code,
        }
    if name == "delete":
        return {"ndeleted": int(reply.get("n", 0) or 0)} if count == 1 else {}
    upserted = [u for u in reply.get("upserted", []) if isinstance(u, Mapping)]
    n_upserted = sum(1 for u in upserted if u.get("index") == index)
    if count == 1:
        n = int(reply.get("n", 0) or 0)
        return {
            "nMatched": n - n_upserted,
            "nModified": int(reply.get("nModified", 0) or 0),
            "nUpserted": n_upserted,
        }
    return {"nUpserted": n_upserted}


def cmd_profile(ctx: CommandContext) -> Reply:
    """profile: the database's profiling level and the server's slowms and sampleRate."""
    profiler = getattr(ctx.process, "profiler", None)
    if not isinstance(profiler, Profiler):
        raise CommandError(115, "profile is not supported here")
    return profiler.command(ctx.db, ctx.cmd)


def _profiler(ctx: CommandContext) -> Optional[Profiler]:
    profiler = getattr(ctx.process, "profiler", None)
    return profiler if isinstance(profiler, Profiler) else None


def on_drop(inner: Handler) -> Handler:
    """drop, with ``system.profile`` dropped from the profiler that keeps it."""

    def handler(ctx: CommandContext) -> Reply:
        profiler = _profiler(ctx)
        if profiler is None or ctx.target != PROFILE_COLLECTION:
            return inner(ctx)
        if profiler.drop(ctx.db):
            return {"nIndexesWas": 0, "ns": ctx.namespace(), "ok": 1.0}
        return inner(ctx)

    return handler


def on_drop_database(inner: Handler) -> Handler:
    """dropDatabase, which drops the database's system.profile too."""

    def handler(ctx: CommandContext) -> Reply:
        reply = inner(ctx)
        profiler = _profiler(ctx)
        if profiler is not None:
            profiler.drop_database(ctx.db)
        return reply

    return handler


def refused_on_mongos(ctx: CommandContext) -> Reply:
    raise CommandError(238, "profile on a mongos is not supported by the simulator")
