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

Spec: Driver Sessions ("ClientSession"), the ``afterClusterTime`` of causally
consistent reads, and Snapshot Reads (``snapshot=True``: "Server Commands" and
"Sending readConcern to the server on all commands").
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Optional

from bson import Int64, Timestamp

from mongocore._deferred_dataclass import dataclass
from mongocore.api.session_transactions import TransactionMixin
from mongocore.api.transaction_options import TransactionOptions
from mongocore.api.types import _DocumentType
from mongocore.errors import ConfigurationError, InvalidOperation
from mongocore.io.pinning import TRANSACTION, PinnedConnection
from mongocore.io.sessions import ServerSession, cluster_time_greater

if TYPE_CHECKING:
    from mongocore.api.client import Client


@dataclass(frozen=True)
class SessionOptions:
    """Options of an explicit session, fixed when it starts.

    ``causal_consistency`` (default True for explicit sessions, False for snapshot
    ones): reads in the session carry ``readConcern.afterClusterTime`` of the
    session's last operation, so they see that operation's writes even on a lagging
    secondary.
    """

    causal_consistency: Optional[bool] = None
    #: Snapshot reads (Snapshot Reads spec): every command of the session carries
    #: ``readConcern: {level: "snapshot"}``, and after the first find, aggregate or
    #: distinct the ``atClusterTime`` its reply reported, so all reads see one point
    #: in time. Needs MongoDB 5.0; exclusive with causal consistency.
    snapshot: bool = False
    #: The options of the session's transactions that start_transaction() does not
    #: give (Transactions spec, "defaultTransactionOptions").
    default_transaction_options: Optional[TransactionOptions] = None
    #: A snapshot session's point in time, chosen beforehand (Snapshot Reads spec,
    #: "snapshotTime"): its first read is at this ``atClusterTime`` too. None: the
    #: time the server reports for the first read.
    snapshot_time: Optional[Timestamp] = None

    def __post_init__(self) -> None:
        if self.snapshot and self.causal_consistency:
            raise ConfigurationError(
                "snapshot reads do not support causal_consistency=True: pass one or the other"
            )
        if self.snapshot_time is not None:
            if not isinstance(self.snapshot_time, Timestamp):
                raise TypeError(
                    "snapshot_time must be a bson.Timestamp (an atClusterTime), not"
                    f" {type(self.snapshot_time).__name__}"
                )
            if not self.snapshot:
                raise ConfigurationError(
                    "snapshot_time is for snapshot sessions: pass snapshot=True"
                )


_DEFAULT_OPTIONS: list[SessionOptions] = []


def _default_options() -> SessionOptions:
    if not _DEFAULT_OPTIONS:
        _DEFAULT_OPTIONS.append(SessionOptions())
    return _DEFAULT_OPTIONS[0]


#: The session ``ClientSession.bind()`` binds: operations given no session use it (a
#: context variable, so each thread, and each task of a context, has its own).
_BOUND: ContextVar[Optional[ClientSession[Any]]] = ContextVar(
    "mongocore_bound_session", default=None
)


def bound_session(client: Client[Any]) -> Optional[ClientSession[Any]]:
    """The session bound in this context (``ClientSession.bind()``), or None. A bound
    session of another client is an error, as pymongo's: its operations would run
    outside the session the caller meant them to be in."""
    session = _BOUND.get()
    if session is None:
        return None
    if session._client is not client:
        raise InvalidOperation(
            "Only the client that created the bound session can perform operations within"
            " its context block"
        )
    return session


class BoundSessionContext:
    """What ``ClientSession.bind()`` returns: a ``with`` block in which operations given
    no session run in the bound one, ending it on exit unless told not to."""

    def __init__(self, session: ClientSession[Any], end_session: bool) -> None:
        self._session = session
        self._end_session = end_session
        self._token: Optional[Token[Optional[ClientSession[Any]]]] = None

    def __enter__(self) -> ClientSession[Any]:
        self._token = _BOUND.set(self._session)
        return self._session

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_val: Optional[BaseException],
        exc_tb: Optional[TracebackType],
    ) -> None:
        if self._token is not None:
            _BOUND.reset(self._token)
            self._token = None
        if self._end_session:
            self._session.end_session()


class ClientSession(TransactionMixin, Generic[_DocumentType]):
    """A client session: start one with ``client.start_session()``, pass it as
    ``session=`` to operations, end it with ``end_session()`` or a ``with`` block.

    Not thread-safe. Waiting more than a minute between starting a session and
    using it risks the server session going stale before its first use. An implicit
    session (one an operation makes when none is given) is never seen by
    applications.
    """

    def __init__(
        self,
        client: Client[Any],
        options: Optional[SessionOptions] = None,
        implicit: bool = False,
    ) -> None:
        # (Operations pass ``implicit`` positionally: a class called with a keyword
        # argument packs it into a dict first, on every operation.)
        self._client = client
        # Read once: every attribute read on a Client goes through its __getattr__ hook.
        self._session_pool = client._session_pool
        self._topology = client._topology
        if options is None:
            # Sessions without options (every implicit one) share one frozen instance.
            options = _DEFAULT_OPTIONS[0] if _DEFAULT_OPTIONS else _default_options()
        self._options = options
        self._implicit = implicit
        self._server_session: Optional[ServerSession] = None
        self._ended = False
        self._cluster_time: Optional[Mapping[str, Any]] = None
        self._operation_time: Optional[Timestamp] = None
        #: Snapshot sessions: the time given at the start, else the atClusterTime of
        #: the first snapshot read's reply; set once.
        self._snapshot_time: Optional[Timestamp] = options.snapshot_time
        #: Load-balanced mode: the connection the transaction is pinned to.
        self._pinned_connection: Optional[PinnedConnection] = None
        # No transaction yet. (TransactionMixin's class default says the same, but on
        # Python 3.11 a read that finds a class default instead of an instance value
        # is not specialized, and every operation reads it three times.)
        self._transaction = None

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

    def get_snapshot_time(self) -> Optional[Timestamp]:
        """The point in time a snapshot session reads at (Snapshot Reads spec, the
        session's ``snapshotTime``): the ``snapshot_time`` it was started with, or the
        ``atClusterTime`` the server reported for its first find, aggregate or
        distinct; None until then. It never changes afterwards. InvalidOperation on a
        session that is not a snapshot session."""
        if not self._options.snapshot:
            raise InvalidOperation(
                "get_snapshot_time() is for snapshot sessions (start_session(snapshot=True))"
            )
        return self._snapshot_time

    @property
    def causal_consistency(self) -> bool:
        if self._implicit or self._options.snapshot:
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
        """End the session, returning its server session to the pool. Idempotent.
        A transaction in progress is aborted first (errors ignored)."""
        if self._ended:
            return
        if self._transaction is not None:
            self._end_transaction_for_session_end()
        if self._pinned_connection is not None:
            self._sync_pinned_connection()
        self._ended = True
        server_session, self._server_session = self._server_session, None
        if server_session is not None:
            self._session_pool.release(server_session, self._topology._description)

    def __enter__(self) -> ClientSession[_DocumentType]:
        return self

    def bind(self, end_session: bool = True) -> BoundSessionContext:
        """A ``with`` block in which every operation of this session's client given no
        ``session`` runs in this one (pymongo 4.17's ``bind``); the session ends when
        the block does, unless ``end_session`` is False."""
        return BoundSessionContext(self, end_session)

    def __copy__(self) -> NoReturn:
        # A copy would share the server session (lsid, txnNumber) with its original.
        raise TypeError(f"A {type(self).__name__} cannot be copied, create a new session instead")

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_val: Optional[BaseException],
        exc_tb: Optional[TracebackType],
    ) -> None:
        self.end_session()

    def __repr__(self) -> str:
        kind = "implicit" if self._implicit else "explicit"
        state = "ended" if self._ended else repr(self._server_session)
        return f"<ClientSession {kind} {state}>"

    # --- used by the operation executor ----------------------------------------------

    def _check_usable(self, client: Client[Any]) -> None:
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
            self._server_session = self._session_pool.acquire(self._topology._description)
        return self._server_session

    def _use_lsid(self) -> dict[str, Any]:
        """The ``lsid`` to send now; records the use for the session's expiry."""
        server_session = self._server_session
        if server_session is None or self._ended:
            server_session = self._server_session_for_use()
        server_session.touch()
        return server_session.session_id

    def _next_txn_number(self) -> Int64:
        server_session = self._server_session
        if server_session is None or self._ended:  # as in _use_lsid: one call less
            server_session = self._server_session_for_use()
        return server_session.next_txn_number()

    def _mark_dirty(self) -> None:
        if self._server_session is not None:
            self._server_session.dirty = True

    def _process_reply(self, reply: Mapping[str, Any]) -> None:
        """Advance cluster and operation time from a server's reply (ok or not)."""
        cluster_time = reply.get("$clusterTime")
        if (
            cluster_time is not None
            and isinstance(cluster_time, Mapping)
            and isinstance(cluster_time.get("clusterTime"), Timestamp)
        ):
            self.advance_cluster_time(cluster_time)
        operation_time = reply.get("operationTime")
        if isinstance(operation_time, Timestamp):
            self.advance_operation_time(operation_time)
        if self._options.snapshot and self._snapshot_time is None and reply.get("ok"):
            self._snapshot_time = _at_cluster_time(reply)

    # --- load-balanced transactions (Load Balancer spec, "Behaviour With Transactions")

    def _pin_connection(self, held: PinnedConnection) -> None:
        """The executor pinned the transaction's first connection (held for it)."""
        self._pinned_connection = held

    def _sync_pinned_connection(self) -> Optional[PinnedConnection]:
        """The connection pinned to the session's transaction while the transaction
        still pins it; one it no longer pins (the Transactions spec's "When to unpin",
        which the transaction's state follows) goes back to the pool."""
        held = self._pinned_connection
        if held is None:
            return None
        transaction = self._transaction
        if transaction is not None and transaction.pinned is not None:
            return held
        self._pinned_connection = None
        held.release(TRANSACTION)
        return None

    # --- snapshot reads (Snapshot Reads spec) ----------------------------------------

    def _apply_snapshot(self, body: dict[str, Any], max_wire_version: int) -> None:
        """In a snapshot session, give the command ``readConcern: {level: "snapshot"}``
        and, once known, the session's ``atClusterTime`` ("Sending readConcern to the
        server on all commands": writes too, so the server refuses them). getMore and
        killCursors continue a cursor, whose read concern was fixed when it opened."""
        if not self._options.snapshot or next(iter(body), "") in _CURSOR_CONTINUATIONS:
            return
        if max_wire_version < SNAPSHOT_READS_WIRE_VERSION:
            raise ConfigurationError("Snapshot reads require MongoDB 5.0 or later")
        # A copy: the command's own readConcern may be the application's document.
        read_concern = dict(body.get("readConcern") or {})
        read_concern["level"] = "snapshot"
        if self._snapshot_time is not None:
            read_concern["atClusterTime"] = self._snapshot_time
        body["readConcern"] = read_concern


#: The first wire version (MongoDB 5.0) with snapshot reads outside transactions.
SNAPSHOT_READS_WIRE_VERSION = 13

_CURSOR_CONTINUATIONS = frozenset({"getMore", "killCursors"})


def _at_cluster_time(reply: Mapping[str, Any]) -> Optional[Timestamp]:
    """The snapshot's timestamp a 5.0+ server reports: in the cursor document of a
    find or aggregate reply, at the top level of a distinct reply."""
    cursor = reply.get("cursor")
    value = cursor.get("atClusterTime") if isinstance(cursor, Mapping) else None
    if value is None:
        value = reply.get("atClusterTime")
    return value if isinstance(value, Timestamp) else None
