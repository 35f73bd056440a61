"""How a simulated deployment shows itself on the network: ``tls_mode`` (requireTLS,
or preferTLS / allowTLS accepting plain TCP too) and the member names of
``MemberConfig.host``."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest

from mongocore.sim import MemberConfig, ReplicaSet, Security, Standalone
from tests.unit.sim_wire import RawClient

trustme = pytest.importorskip("trustme", reason="TLS tests make certificates with trustme")
pytest.importorskip("pyuca", reason="the simulator needs the sim extra")


@pytest.fixture(scope="module")
def contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context) for 127.0.0.1."""
    ca = trustme.CA()
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


@pytest.fixture
def prefer_tls(contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> Iterator[Standalone]:
    with Standalone(tls=contexts[0], tls_mode="preferTLS") as server:
        yield server


def _is_tls(server: Standalone, client: RawClient) -> bool:
    reply = client.handshake()
    assert client.command("admin", {"ping": 1})["ok"] == 1
    connection = server.member.server.connection(reply["connectionId"])
    assert connection is not None
    return connection.tls


def test_prefer_tls_serves_plain_tcp(prefer_tls: Standalone) -> None:
    with RawClient(prefer_tls.member.address) as client:
        assert _is_tls(prefer_tls, client) is False


def test_prefer_tls_serves_tls(
    prefer_tls: Standalone, contexts: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    with RawClient(prefer_tls.member.address) as client:
        client.sock = contexts[1].wrap_socket(client.sock, server_hostname="127.0.0.1")
        assert _is_tls(prefer_tls, client) is True


def test_require_tls_is_the_default(contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    assert Security(tls=contexts[0]).tls_optional is False
    assert Security(tls=contexts[0], tls_mode="allowTLS").tls_optional is True
    assert Security(tls_mode="preferTLS").tls_optional is False  # no TLS at all
    with pytest.raises(ValueError, match="tls_mode"):
        Security(tls=contexts[0], tls_mode="disabled")
    with Standalone(tls=contexts[0]) as server, RawClient(server.member.address) as client:
        client.sock.sendall(b"\x00" * 16)  # plain TCP: the TLS handshake fails
        assert client.closed_by_peer()


def test_member_host_names_the_member_in_the_config() -> None:
    names = ["db0.example.test:27017", "db1.example.test:27018"]
    with ReplicaSet([MemberConfig(host=name) for name in names], election_delay=0.02) as rs:
        assert [m.host for m in rs.members] == names
        assert rs.uri == f"mongodb://{','.join(names)}/?replicaSet=rs0"
        primary = rs.wait_for_primary()
        # The member still listens on 127.0.0.1, on a port of its own.
        assert primary.address[0] == "127.0.0.1" and primary.address[1] != 27017
        with RawClient(primary.address) as client:
            reply = client.handshake()
        assert reply["me"] == reply["primary"] == names[0]
        assert reply["hosts"] == names
        assert rs.member(names[1]) is rs.members[1]
