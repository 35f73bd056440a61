"""ClientSession: what the application holds (pymongo's ``pymongo.client_session``).

A :class:`ClientSession` is what the application holds (explicit, from
``client.start_session()``) or what an operation makes for itself (implicit). It is
bound to one :class:`ServerSession` for its whole life, taken from the client's
:class:`ServerSessionPool` only when a command first needs an ``lsid`` (after a
connection was checked out), and returned to the pool when the session ends. Pooled
server sessions keep their transaction number, so every retryable write on one
``lsid`` has a higher ``txnNumber`` than the last.

Sessions are not thread-safe: a ClientSession must be used by one thread at a time
(the spec forbids detecting misuse). The pool is thread-safe.

Spec: Driver Sessions ("ClientSession"), and the ``afterClusterTime`` of causally
consistent reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional

from bson import Int64, Timestamp

from mongocore.errors import InvalidOperation
from mongocore.io.sessions import ServerSession, cluster_time_greater

if TYPE_CHECKING:
    from mongocore.api.client import Client


@dataclass(frozen=True)
class SessionOptions:
    """Options of an explicit session, fixed when it starts.

    ``causal_consistency`` (default True for explicit sessions): reads in the session
    carry ``readConcern.afterClusterTime`` of the session's last operation, so they
    see that operation's writes even on a lagging secondary.
    """

    causal_consistency: Optional[bool] = None


class ClientSession:
    """A client session: start one with ``client.start_session()``, pass it as
    ``session=`` to operations, end it with ``end_session()`` or a ``with`` block.

    Not thread-safe. Waiting more than a minute between starting a session and
    using it risks the server session going stale before its first use. An implicit
    session (one an operation makes when none is given) is never seen by
    applications.
    """

    def __init__(
        self,
        client: Client,
        options: Optional[SessionOptions] = None,
        *,
        implicit: bool = False,
    ) -> None:
        self._client = client
        self._options = options or SessionOptions()
        self._implicit = implicit
        self._server_session: Optional[ServerSession] = None
        self._ended = False
        self._cluster_time: Optional[Mapping[str, Any]] = None
        self._operation_time: Optional[Timestamp] = None

    # --- the spec's members ----------------------------------------------------------

    @property
    def client(self) -> Client:
        return self._client

    @property
    def options(self) -> SessionOptions:
        return self._options

    @property
    def implicit(self) -> bool:
        return self._implicit

    @property
    def has_ended(self) -> bool:
        return self._ended

    @property
    def causal_consistency(self) -> bool:
        if self._implicit:
            return False
        value = self._options.causal_consistency
        return True if value is None else value

    @property
    def session_id(self) -> Mapping[str, Any]:
        """The ``lsid`` document; starts using a server session if none was yet."""
        return self._server_session_for_use().session_id

    @property
    def cluster_time(self) -> Optional[Mapping[str, Any]]:
        return self._cluster_time

    @property
    def operation_time(self) -> Optional[Timestamp]:
        return self._operation_time

    @property
    def in_transaction(self) -> bool:
        """Always False: mongocore runs no multi-document transactions."""
        return False

    @property
    def txn_number(self) -> int:
        """The transaction number last used on this session's server session (0: none)."""
        return 0 if self._server_session is None else self._server_session.txn_number

    @property
    def dirty(self) -> bool:
        return self._server_session is not None and self._server_session.dirty

    def advance_cluster_time(self, cluster_time: Mapping[str, Any]) -> None:
        """Advance this session's cluster time (never the client's: it cannot be verified)."""
        if not isinstance(cluster_time, Mapping) or not isinstance(
            cluster_time.get("clusterTime"), Timestamp
        ):
            raise TypeError("cluster_time must be a document with a Timestamp 'clusterTime'")
        if cluster_time_greater(cluster_time, self._cluster_time):
            self._cluster_time = cluster_time

    def advance_operation_time(self, operation_time: Timestamp) -> None:
        if not isinstance(operation_time, Timestamp):
            raise TypeError("operation_time must be a bson Timestamp")
        if self._operation_time is None or operation_time > self._operation_time:
            self._operation_time = operation_time

    def end_session(self) -> None:
        """End the session, returning its server session to the pool. Idempotent."""
        if self._ended:
            return
        self._ended = True
        server_session, self._server_session = self._server_session, None
        if server_session is not None:
            self._client._release_server_session(server_session)

    def __enter__(self) -> ClientSession:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.end_session()

    def __repr__(self) -> str:
        kind = "implicit" if self._implicit else "explicit"
        state = "ended" if self._ended else repr(self._server_session)
        return f"<ClientSession {kind} {state}>"

    # --- used by the operation executor ----------------------------------------------

    def _check_usable(self, client: Client) -> None:
        """Raise if the session cannot be used with ``client`` ("Methods that have a
        session parameter MUST check ...")."""
        if self._ended:
            raise InvalidOperation("cannot use a session that has ended")
        if self._client is not client:
            raise InvalidOperation("this session was started by another Client")

    def _server_session_for_use(self) -> ServerSession:
        if self._ended:
            raise InvalidOperation("cannot use a session that has ended")
        if self._server_session is None:
            self._server_session = self._client._acquire_server_session()
        return self._server_session

    def _use_lsid(self) -> dict[str, Any]:
        """The ``lsid`` to send now; records the use for the session's expiry."""
        server_session = self._server_session_for_use()
        server_session.touch()
        return server_session.session_id

    def _next_txn_number(self) -> Int64:
        return self._server_session_for_use().next_txn_number()

    def _mark_dirty(self) -> None:
        if self._server_session is not None:
            self._server_session.dirty = True

    def _process_reply(self, reply: Mapping[str, Any]) -> None:
        """Advance cluster and operation time from a server's reply (ok or not)."""
        cluster_time = reply.get("$clusterTime")
        if isinstance(cluster_time, Mapping) and isinstance(
            cluster_time.get("clusterTime"), Timestamp
        ):
            self.advance_cluster_time(cluster_time)
        operation_time = reply.get("operationTime")
        if isinstance(operation_time, Timestamp):
            self.advance_operation_time(operation_time)
