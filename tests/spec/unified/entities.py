"""Unified test format: the "Entity Map" and the entities of "createEntities" (client,
database, collection, session, bucket, thread) plus the ones operations store
(saveResultAsEntity, recordTopologyDescription).

Names are unique and every lookup checks the entity's type, as the format requires.
The map is shared by the test's threads, so it is guarded by a lock.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from mongocore.api.client import Client
from mongocore.api.client_session import ClientSession
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern
from tests.spec.unified.events import EventLog, LogCapture

#: waitForThread, waitForEvent and waitForPrimaryChange wait this long by default. The
#: format says 10 seconds; twice that keeps a loaded machine from failing a correct
#: test, and a passing test never waits for it.
WAIT_TIMEOUT = 20.0


class UnsupportedFeature(Exception):
    """The test uses something the runner (or mongocore, or the simulator) does not offer."""


class InvalidTest(ValueError):
    """The test breaks its format: a required field or argument missing, a value the
    format does not allow, an entity defined twice (the unified format's valid-fail
    files are made of these)."""


class UndefinedEntity(InvalidTest, KeyError):
    """The test names an entity that it never created."""

    def __str__(self) -> str:
        # KeyError's str() quotes its argument; this is a sentence.
        return str(self.args[0]) if self.args else ""


class WrongEntityKind(InvalidTest, TypeError):
    """The test names an entity of another kind than the operation needs."""


class EntityCreationFailed(AssertionError):
    """An entity of createEntities could not be created: mongocore refused its options
    (the format: the test runner MUST raise an error when it cannot create one)."""


@dataclass
class ClientEntity:
    """A client entity: the mongocore Client, its event log (and log messages, with
    observeLogMessages), how it was configured."""

    id: str
    client: Client
    log: EventLog
    uri_options: dict[str, Any]
    #: Whether the client retries writes (the option, or mongocore's default: false).
    retry_writes: bool
    closed: bool = False
    #: The log messages it observes (observeLogMessages), if any.
    log_messages: Optional[LogCapture] = None
    #: Why operations on this client (and its databases, collections and sessions)
    #: cannot run as the test means them, if it asked for something mongocore lacks.
    unsupported: Optional[str] = None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.close()

    def await_min_pool_size(self, timeout_ms: int) -> None:
        """awaitMinPoolSizeMS: wait until a writable server's pool holds minPoolSize
        established connections (available or in use; not those still connecting),
        or fail once ``timeout_ms`` has passed. It waits on the event log's condition,
        which every pool and topology event of the client notifies (the runner
        subscribes the log to all of them); a pool publishes a connection's ready event
        after counting it."""
        wanted = self.client.settings.min_pool_size
        topology = self.client.topology

        def populated() -> bool:
            for address, description in topology.description.servers.items():
                server = topology.get_server(address)
                if description.is_writable and server is not None:
                    pool = server.pool
                    if pool.total_connection_count - pool.pending_connection_count >= wanted:
                        return True
            return False

        with self.log.cond:
            if not self.log.cond.wait_for(populated, timeout_ms / 1000.0):
                raise AssertionError(
                    f"awaitMinPoolSizeMS: no writable server's pool reached minPoolSize"
                    f" {wanted} within {timeout_ms} ms"
                )


@dataclass
class ThreadEntity:
    """A test runner thread: runs the operations it is given, in order, and remembers the
    first failure (raised again by ``waitForThread``)."""

    id: str
    _queue: queue.Queue[Optional[Callable[[], None]]] = field(default_factory=queue.Queue)
    error: Optional[BaseException] = None
    _thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"unified-runner-{self.id}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            if self.error is not None:
                continue  # the thread already failed: the rest is not run
            try:
                task()
            except BaseException as exc:
                self.error = exc

    def submit(self, task: Callable[[], None]) -> None:
        self._queue.put(task)

    def stop(self, timeout: float = WAIT_TIMEOUT) -> bool:
        """Tell the thread nothing more is coming and join it; False if it is still busy."""
        self._queue.put(None)
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()


class EntityMap:
    """Entities by unique name, type-checked on every lookup; safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entities: dict[str, Any] = {}
        self._lsids: dict[str, Any] = {}

    def add(self, name: str, entity: Any) -> None:
        with self._lock:
            if name in self._entities:
                raise InvalidTest(f"an entity named {name!r} already exists")
            self._entities[name] = entity

    def get(self, name: str, kind: Optional[type] = None) -> Any:
        with self._lock:
            if name not in self._entities:
                raise UndefinedEntity(f"no entity named {name!r}")
            entity = self._entities[name]
        if kind is not None and not isinstance(entity, kind):
            raise WrongEntityKind(
                f"entity {name!r} is a {type(entity).__name__}, not a {kind.__name__}"
            )
        return entity

    def __contains__(self, name: str) -> bool:
        with self._lock:
            return name in self._entities

    def values(self) -> list[Any]:
        with self._lock:
            return list(self._entities.values())

    def lookup(self, name: str) -> Any:
        """For $$matchesEntity and $$sessionLsid."""
        return self.get(name)

    def record_lsid(self, name: str, lsid: Any) -> None:
        """A session entity's lsid, saved when it is created ("Entity Map")."""
        with self._lock:
            self._lsids[name] = lsid

    def session_lsid(self, name: str) -> Any:
        """The lsid recorded for session entity ``name`` (None if none was)."""
        with self._lock:
            return self._lsids.get(name)

    # Typed shortcuts.

    def client(self, name: str) -> ClientEntity:
        entity: ClientEntity = self.get(name, ClientEntity)
        return entity

    def session(self, name: str) -> ClientSession:
        entity: ClientSession = self.get(name, ClientSession)
        return entity

    def topology(self, name: str) -> TopologyDescription:
        entity: TopologyDescription = self.get(name, TopologyDescription)
        return entity

    def thread(self, name: str) -> ThreadEntity:
        entity: ThreadEntity = self.get(name, ThreadEntity)
        return entity

    def client_of(self, target: Any) -> ClientEntity:
        """The client entity a database, collection or session entity belongs to."""
        client = getattr(target, "client", None)
        for entity in self.values():
            if isinstance(entity, ClientEntity) and entity.client is client:
                return entity
        raise KeyError(f"{target!r} belongs to no client entity")


# --- options shared by entities and operations --------------------------------------------


def read_preference(document: Mapping[str, Any]) -> ReadPreference:
    """commonOptions.readPreference."""
    known = {"mode", "tagSets", "maxStalenessSeconds", "hedge"}
    unknown = set(document) - known
    if unknown:
        raise UnsupportedFeature(f"readPreference fields {sorted(unknown)}")
    if "hedge" in document:
        raise UnsupportedFeature("hedged reads")
    return ReadPreference(
        str(document["mode"]),
        document.get("tagSets"),
        document.get("maxStalenessSeconds"),
    )


def write_concern(document: Mapping[str, Any]) -> WriteConcern:
    """commonOptions.writeConcern."""
    unknown = set(document) - {"w", "wtimeoutMS", "journal"}
    if unknown:
        raise UnsupportedFeature(f"writeConcern fields {sorted(unknown)}")
    return WriteConcern(document.get("w"), document.get("wtimeoutMS"), document.get("journal"))


def read_concern(document: Mapping[str, Any]) -> ReadConcern:
    """commonOptions.readConcern."""
    unknown = set(document) - {"level"}
    if unknown:
        raise UnsupportedFeature(f"readConcern fields {sorted(unknown)}")
    return ReadConcern(document.get("level"))


def target_options(document: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """collectionOrDatabaseOptions, as keyword arguments of get_database/get_collection."""
    options: dict[str, Any] = {}
    for key, value in (document or {}).items():
        if key == "readPreference":
            options["read_preference"] = read_preference(value)
        elif key == "writeConcern":
            options["write_concern"] = write_concern(value)
        elif key == "readConcern":
            options["read_concern"] = read_concern(value)
        elif key == "timeoutMS":
            options["timeout_ms"] = value
        else:
            raise UnsupportedFeature(f"database or collection option {key!r}")
    return options
