"""The wire side of a simulated server process: its message loop (MongoDB Wire
Protocol, "OP_MSG" and the legacy "OP_QUERY"; the "Handshake" of the MongoDB Handshake
spec).

A request arrives as OP_MSG or, for the legacy handshake only, OP_QUERY on
``admin.$cmd`` (a 5.1+ server answers any other OP_QUERY command with
UnsupportedOpQueryCommand, 352). :class:`MessageLoop` turns each request into a
command for the process (``_execute``) and its :class:`Outcome` into replies:
nothing for a fire-and-forget request (moreToCome; a "not primary" failure closes the
connection instead), one reply, or an exhaust stream (exhaustAllowed: awaitable hello,
getMore) whose every reply answers the one before. A partition in "drop" mode reads
requests and never answers them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple, Optional

from mongocore.core.wire import (
    MORE_TO_COME,
    REPLY_AWAIT_CAPABLE,
    REPLY_QUERY_FAILURE,
    Message,
    MsgHeader,
    OpMsg,
    OpQuery,
    encode_op_msg,
    encode_op_reply,
)
from mongocore.io.counters import next_request_id
from mongocore.sim.codes import STATE_CHANGE_CODES, CloseConnection, error_reply
from mongocore.sim.server import Connection

__all__ = ["HELLO_NAMES", "MessageLoop", "Outcome"]

HELLO_NAMES = frozenset({"hello", "isMaster", "ismaster"})


class Outcome(NamedTuple):
    """A command's result: the reply, and whether an exhaust stream continues with next_cmd."""

    reply: dict[str, Any]
    stream: bool = False
    next_cmd: Optional[dict[str, Any]] = None
    close_after: bool = False
    #: Run once the reply is sent: simControl's kill or partition of this very process.
    after_reply: Optional[Callable[[], None]] = None


def _read_preference_allows_secondary(read_preference: Any) -> bool:
    # With OP_MSG, secondaryOk is expressed by any $readPreference mode but primary.
    if not isinstance(read_preference, Mapping):
        return False
    mode = read_preference.get("mode", "primary")
    return isinstance(mode, str) and mode != "primary"


class MessageLoop:
    """Requests in, replies out, for a process that runs commands with ``_execute``."""

    partition_mode: Optional[str]

    def _execute(
        self, conn: Connection, name: str, db: str, cmd: dict[str, Any], *, secondary_ok: bool
    ) -> Optional[Outcome]:
        """Run one command; None means "never answer"."""
        raise NotImplementedError

    def _handle(self, conn: Connection, header: MsgHeader, message: Message) -> Iterator[bytes]:
        if self.partition_mode == "drop":
            return  # a dropped request is never answered
        if isinstance(message, OpMsg):
            yield from self._handle_op_msg(conn, header, message)
        elif isinstance(message, OpQuery):
            yield from self._handle_op_query(conn, header, message)
        else:
            raise CloseConnection  # a client never sends OP_REPLY

    def _handle_op_query(
        self, conn: Connection, header: MsgHeader, query: OpQuery
    ) -> Iterator[bytes]:
        if not query.is_command:
            failure = {
                "$err": "OP_QUERY is no longer supported."
                " The client driver may require an upgrade.",
                "code": 5739101,
                "ok": 0.0,
            }
            yield encode_op_reply(
                [failure], next_request_id(), header.request_id, response_flags=REPLY_QUERY_FAILURE
            )
            return
        cmd: dict[str, Any] = dict(query.query)
        if "$query" in cmd and isinstance(cmd["$query"], Mapping):
            cmd = dict(cmd["$query"])
        name = next(iter(cmd), "")
        if name not in HELLO_NAMES:
            # MongoDB 5.1+ answers only the handshake over OP_QUERY.
            outcome: Optional[Outcome] = Outcome(
                error_reply(
                    352,
                    f"Unsupported OP_QUERY command: {name}. The client driver may require an"
                    " upgrade. For more details see"
                    " https://dochub.mongodb.org/core/legacy-opcode-removal",
                )
            )
        else:
            outcome = self._execute(conn, name, query.database, cmd, secondary_ok=True)
        if outcome is None:
            return
        yield encode_op_reply(
            [outcome.reply],
            next_request_id(),
            header.request_id,
            response_flags=REPLY_AWAIT_CAPABLE,
        )
        if outcome.close_after:
            raise CloseConnection

    def _handle_op_msg(
        self, conn: Connection, header: MsgHeader, message: OpMsg
    ) -> Iterator[bytes]:
        cmd: dict[str, Any] = message.to_document()
        name = next(iter(cmd), "")
        db = cmd.get("$db")
        outcome: Optional[Outcome]
        if not name:
            outcome = Outcome(error_reply(9, "empty command document"))
        elif not isinstance(db, str) or not db:
            outcome = Outcome(error_reply(40571, "OP_MSG requests require a $db argument"))
        else:
            outcome = None
        secondary_ok = _read_preference_allows_secondary(cmd.get("$readPreference"))
        response_to = header.request_id
        while True:
            if outcome is None:
                assert isinstance(db, str)
                outcome = self._execute(conn, name, db, cmd, secondary_ok=secondary_ok)
                if outcome is None:
                    return
            if message.more_to_come:
                # Fire-and-forget: no reply. A "not primary" failure closes the
                # connection, the only way the client can learn of it.
                if outcome.reply.get("code") in STATE_CHANGE_CODES:
                    raise CloseConnection
                if outcome.after_reply is not None:
                    outcome.after_reply()
                return
            request_id = next_request_id()
            stream = message.exhaust_allowed and outcome.stream and outcome.next_cmd is not None
            yield encode_op_msg(
                outcome.reply,
                request_id,
                response_to=response_to,
                flag_bits=MORE_TO_COME if stream else 0,
            )
            if outcome.after_reply is not None:
                outcome.after_reply()
            if outcome.close_after:
                raise CloseConnection
            if not stream or outcome.next_cmd is None:
                return
            # The next reply of the stream answers this one.
            response_to = request_id
            cmd = outcome.next_cmd
            outcome = None
