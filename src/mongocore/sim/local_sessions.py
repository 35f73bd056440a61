"""A process's logical session cache, as ``$listLocalSessions`` reads it (MongoDB manual,
"$listLocalSessions"; the server's LogicalSessionCache).

Every command a mongod or mongos receives with an ``lsid`` puts its session in the
process's cache, stamped with the time of its last use and the user it belongs to: the
``uid`` a server derives from the logged-in user (the SHA-256 of ``user@db``; of the
empty string without authentication). A command a mongos routes reaches the shard
member with the same ``lsid``, so both caches hold the session, as on a server.
``endSessions``, ``killSessions`` and ``killAllSessions`` remove sessions at once (a
server at its next refresh, within 5 minutes); a session unused for
``logicalSessionTimeoutMinutes`` (30) expires.
"""

from __future__ import annotations

import datetime
import hashlib
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import bson

from mongocore.sim.codes import CommandError

__all__ = ["LocalSessionCache", "cache_of", "list_local_sessions", "touch"]

_TIMEOUT = datetime.timedelta(minutes=30)
_ENDING = frozenset({"endSessions", "killSessions"})
_PRUNE_ABOVE = 10_000


@dataclass
class _Session:
    id: Any
    uid: bytes
    user: Optional[str]
    last_use: datetime.datetime


def user_digest(user: Optional[tuple[str, str]]) -> bytes:
    """The ``uid`` of a user's sessions: SHA-256 of ``user@db`` (of "" for no user)."""
    name = f"{user[0]}@{user[1]}" if user is not None else ""
    return hashlib.sha256(name.encode()).digest()


def _key(session_id: Any, uid: bytes) -> bytes:
    return bytes(bson.encode({"id": session_id, "uid": bson.Binary(uid)}))


def _now() -> datetime.datetime:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class LocalSessionCache:
    """The sessions one process has seen (each connection's thread updates it)."""

    def __init__(self) -> None:
        self._sessions: dict[bytes, _Session] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def touch(self, lsid: Mapping[str, Any], user: Optional[tuple[str, str]]) -> None:
        if "id" not in lsid:
            return
        uid = user_digest(user)
        name = f"{user[0]}@{user[1]}" if user is not None else None
        with self._lock:
            self._sessions[_key(lsid["id"], uid)] = _Session(lsid["id"], uid, name, _now())
            if len(self._sessions) > _PRUNE_ABOVE:
                self._expire()

    def end(self, lsids: Sequence[Any], user: Optional[tuple[str, str]]) -> None:
        uid = user_digest(user)
        with self._lock:
            for lsid in lsids:
                if isinstance(lsid, Mapping) and "id" in lsid:
                    self._sessions.pop(_key(lsid["id"], uid), None)

    def clear(self) -> None:
        with self._lock:
            self._sessions.clear()

    def uid_of(self, session_id: Any) -> Optional[bytes]:
        """The ``uid`` a session of this id was recorded with (its user's)."""
        with self._lock:
            for session in self._sessions.values():
                if session.id == session_id:
                    return session.uid
        return None

    def _expire(self) -> None:
        cutoff = _now() - _TIMEOUT
        for key in [k for k, s in self._sessions.items() if s.last_use < cutoff]:
            del self._sessions[key]

    def records(self, uids: Optional[set[bytes]]) -> list[dict[str, Any]]:
        """The sessions (of the users whose ``uid`` is in ``uids``; all with None), as
        ``$listLocalSessions`` returns them."""
        with self._lock:
            self._expire()
            sessions = list(self._sessions.values())
        out = []
        for session in sessions:
            if uids is not None and session.uid not in uids:
                continue
            record: dict[str, Any] = {
                "_id": {"id": session.id, "uid": bson.Binary(session.uid)},
                "lastUse": session.last_use,
            }
            if session.user is not None:
                record["user"] = {"name": session.user}
            out.append(record)
        return out


_CACHES: weakref.WeakKeyDictionary[Any, LocalSessionCache] = weakref.WeakKeyDictionary()


def cache_of(process: Any) -> LocalSessionCache:
    """The session cache of a simulated mongod or mongos."""
    cache = _CACHES.get(process)
    if cache is None:
        cache = _CACHES[process] = LocalSessionCache()
    return cache


def _user(conn: Any) -> Optional[tuple[str, str]]:
    users = getattr(conn, "authenticated_users", None) or []
    return (str(users[0][0]), str(users[0][1])) if users else None


def touch(process: Any, conn: Any, name: str, cmd: Mapping[str, Any]) -> None:
    """Record the session a command names (or forget those it ends)."""
    cache = cache_of(process)
    user = _user(conn)
    if name in _ENDING and isinstance(cmd.get(name), list):
        cache.end(cmd[name], user)
        return
    if name == "killAllSessions":
        cache.clear()
        return
    lsid = cmd.get("lsid")
    if isinstance(lsid, Mapping):
        cache.touch(lsid, user)


def list_local_sessions(process: Any, spec: Any, cmd: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The documents of ``{$listLocalSessions: spec}`` on ``process``."""
    if not isinstance(spec, Mapping):
        raise CommandError(14, "$listLocalSessions options must be specified in an object")
    for key in spec:
        if key not in ("allUsers", "users"):
            raise CommandError(40415, f"BSON field '$listLocalSessions.{key}' is an unknown field.")
    cache = cache_of(process)
    if spec.get("allUsers"):
        if "users" in spec:
            raise CommandError(
                31106, "The $listLocalSessions stage cannot specify both 'allUsers' and 'users'"
            )
        return cache.records(None)
    users = spec.get("users")
    if users is not None:
        if not isinstance(users, list):
            raise CommandError(
                14, "BSON field '$listLocalSessions.users' is the wrong type, expected type 'array'"
            )
        uids = set()
        for entry in users:
            if not isinstance(entry, Mapping) or "user" not in entry or "db" not in entry:
                raise CommandError(
                    40414, "BSON field 'ListSessionsUser.user' is missing but a required field"
                )
            uids.add(user_digest((str(entry["user"]), str(entry["db"]))))
        return cache.records(uids)
    # The current user's sessions: the uid of the session running the command, or the
    # unauthenticated uid.
    lsid = cmd.get("lsid")
    uid = cache.uid_of(lsid.get("id")) if isinstance(lsid, Mapping) else None
    return cache.records({uid if uid is not None else user_digest(None)})
