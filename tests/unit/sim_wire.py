"""A raw wire-protocol client for the simulator's unit tests: the shared codec, no driver."""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from mongocore.core.wire import (
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    MsgHeader,
    OpMsg,
    OpReply,
    encode_handshake_query,
    encode_op_msg,
    encode_op_query,
    read_message,
)
from mongocore.io.counters import next_request_id


class RawClient:
    """One connection to a simulated server, speaking OP_MSG and the legacy OP_QUERY hello."""

    def __init__(self, address: tuple[str, int], timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.last_request_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recv_exactly(self, size: int) -> bytes:
        buffer = bytearray()
        while len(buffer) < size:
            chunk = self.sock.recv(size - len(buffer))
            if not chunk:
                break
            buffer += chunk
        return bytes(buffer)

    def read(self) -> tuple[MsgHeader, Any]:
        return read_message(self._recv_exactly, DEFAULT_MAX_MESSAGE_SIZE_BYTES)

    def send_msg(
        self,
        db: str,
        cmd: Mapping[str, Any],
        *,
        flags: int = 0,
        sequences: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None,
    ) -> int:
        body = dict(cmd)
        body["$db"] = db
        request_id = next_request_id()
        self.last_request_id = request_id
        self.sock.sendall(encode_op_msg(body, request_id, flag_bits=flags, sequences=sequences))
        return request_id

    def command(
        self,
        db: str,
        cmd: Mapping[str, Any],
        *,
        sequences: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None,
    ) -> dict[str, Any]:
        request_id = self.send_msg(db, cmd, sequences=sequences)
        header, message = self.read()
        assert isinstance(message, OpMsg)
        assert header.response_to == request_id
        return dict(message.body)

    def fire_and_forget(self, db: str, cmd: Mapping[str, Any]) -> None:
        self.send_msg(db, cmd, flags=MORE_TO_COME)

    def exhaust(self, db: str, cmd: Mapping[str, Any]) -> int:
        return self.send_msg(db, cmd, flags=EXHAUST_ALLOWED)

    def legacy_hello(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        request_id = next_request_id()
        self.sock.sendall(encode_handshake_query(dict(cmd), request_id))
        header, message = self.read()
        assert isinstance(message, OpReply)
        assert header.response_to == request_id
        return dict(message.command_reply())

    def legacy_query(self, namespace: str, query: Mapping[str, Any]) -> OpReply:
        self.sock.sendall(encode_op_query(namespace, dict(query), next_request_id()))
        _, message = self.read()
        assert isinstance(message, OpReply)
        return message

    def handshake(self, app_name: Optional[str] = None, **extra: Any) -> dict[str, Any]:
        cmd: dict[str, Any] = {"hello": 1, "helloOk": True}
        if app_name is not None:
            cmd["client"] = {"application": {"name": app_name}, "driver": {"name": "raw"}}
        cmd.update(extra)
        return self.command("admin", cmd)

    def closed_by_peer(self) -> bool:
        """True if the server closed the connection (EOF or reset)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True


def connect(member: Any, app_name: Optional[str] = None, timeout: float = 10.0) -> RawClient:
    client = RawClient(member.address, timeout=timeout)
    client.handshake(app_name)
    return client
