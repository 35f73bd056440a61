"""Fixtures for integration tests against loopback servers.

- ``mockupdb_factory(**kwargs)``: start a MockupDB (mockupdb's own keyword arguments,
  e.g. ``uds_path=``), stopped in teardown.
- ``mockupdb_server``: one started MockupDB with no responder.
- ``hello_server`` and ``hello_responder``: a MockupDB whose :class:`HelloResponder`
  answers handshakes and plain hellos as a standalone server (request both fixtures to
  change its replies or make it fail).
- ``wire_server_factory(handler, family=..., host=...)``: start a :class:`WireServer`,
  stopped (threads joined) in teardown.
- ``ipv6_loopback``: skips the test when this machine has no ``::1``.

Helpers to import: ``tests.integration.mock_servers`` (hello_reply, address_of,
HelloResponder, RawReply, Background, WireServer, ...).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mockupdb import MockupDB

from tests.integration.mock_servers import (
    DEADLINE,
    Handler,
    HelloResponder,
    WireServer,
    address_of,
)


def _wait_until_serving(server: MockupDB) -> None:
    """Return once MockupDB's accept loop runs: stopping it earlier races in mockupdb.

    The probe connects and half-closes; MockupDB accepts it, reads end-of-file and hangs
    up, which the probe sees as end-of-file in turn.
    """
    address = address_of(server)
    family = socket.AF_INET if address.port is not None else socket.AF_UNIX
    target: Any = (address.host, address.port) if address.port is not None else address.host
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(DEADLINE)
        probe.connect(target)
        probe.shutdown(socket.SHUT_WR)
        probe.recv(1)


@pytest.fixture
def mockupdb_factory() -> Iterator[Callable[..., MockupDB]]:
    servers: list[MockupDB] = []

    def start(**kwargs: Any) -> MockupDB:
        kwargs.setdefault("request_timeout", 10)
        server = MockupDB(**kwargs)
        server.run()
        servers.append(server)
        _wait_until_serving(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def mockupdb_server(mockupdb_factory: Callable[..., MockupDB]) -> MockupDB:
    return mockupdb_factory()


@pytest.fixture
def hello_responder(mockupdb_server: MockupDB) -> HelloResponder:
    return HelloResponder.install(mockupdb_server)


@pytest.fixture
def hello_server(mockupdb_server: MockupDB, hello_responder: HelloResponder) -> MockupDB:
    """A MockupDB answering hellos as a standalone server (see ``hello_responder``)."""
    return mockupdb_server


@pytest.fixture
def wire_server_factory() -> Iterator[Callable[..., WireServer]]:
    servers: list[WireServer] = []

    def start(
        handler: Handler, family: int = socket.AF_INET, host: str = "127.0.0.1"
    ) -> WireServer:
        server = WireServer(handler, family, host)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def ipv6_loopback() -> None:
    """Skip unless an IPv6 socket can bind ::1 here."""
    if not socket.has_ipv6:
        pytest.skip("this Python was built without IPv6 support")
    try:
        with contextlib.closing(socket.socket(socket.AF_INET6, socket.SOCK_STREAM)) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        pytest.skip(f"this machine has no IPv6 loopback address ::1 ({exc})")
