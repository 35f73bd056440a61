"""The unified runner's client entity against a simulated standalone:
``awaitMinPoolSizeMS`` (tests/spec/unified/entities.py)."""

from __future__ import annotations

import socket

import pytest

from mongocore.api.client import Client
from mongocore.sim import Standalone
from tests.spec.unified.entities import ClientEntity
from tests.spec.unified.events import EventLog


def _entity(uri: str, **options: object) -> ClientEntity:
    """A client entity as the runner makes one: its event log listens to the client."""
    log = EventLog()
    client = Client(uri, event_listeners=log.listeners(), **options)
    return ClientEntity("client", client, log, {}, retry_writes=False)


def test_await_min_pool_size_returns_once_the_pool_is_populated() -> None:
    """The broken variant this catches: returning before the pool holds minPoolSize
    established connections (counting those still connecting, or not waiting)."""
    with Standalone() as server:
        entity = _entity(server.uri, minPoolSize=3)
        try:
            entity.await_min_pool_size(20_000)
            address = next(iter(entity.client.topology.description.servers))
            pool = entity.client.topology.get_server(address).pool  # type: ignore[union-attr]
            assert pool.total_connection_count - pool.pending_connection_count >= 3
        finally:
            entity.close()


def test_await_min_pool_size_fails_after_its_time() -> None:
    """No writable server (nothing listens on the port): the wait ends with an error
    at the deadline instead of returning or waiting forever."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    entity = _entity(f"mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=100", minPoolSize=1)
    try:
        with pytest.raises(AssertionError, match="awaitMinPoolSizeMS"):
            entity.await_min_pool_size(100)
    finally:
        entity.close()
