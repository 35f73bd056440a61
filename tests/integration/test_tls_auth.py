"""TLS and authentication end to end over loopback, against mongocore.sim.

Certificates are made at test time (trustme): a CA the clients trust, another they do
not, server certificates for the right and the wrong host names, and client
certificates for MONGODB-X509 (one with an encrypted key). Connections are opened with
mongocore's own ``connect`` and with the Client; pymongo, an independent client, logs
in to the same simulator.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

trustme = pytest.importorskip("trustme", reason="TLS tests make certificates with trustme")
pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from cryptography import x509  # noqa: E402  (trustme depends on cryptography)
from cryptography.hazmat.primitives import serialization  # noqa: E402

from mongocore.api.client import Client  # noqa: E402
from mongocore.core.address import Address  # noqa: E402
from mongocore.core.description.types import ServerType  # noqa: E402
from mongocore.core.events import (  # noqa: E402
    CommandListener,
    ConnectionPoolListener,
    PoolClearedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatListener,
    ServerListener,
    TopologyListener,
)
from mongocore.core.options import ClientOptions  # noqa: E402
from mongocore.errors import (  # noqa: E402
    AuthenticationError,
    ConfigurationError,
    NetworkError,
    NetworkTimeout,
    OperationFailure,
)
from mongocore.io.auth import (  # noqa: E402
    MONGODB_X509,
    SCRAM_SHA_1,
    SCRAM_SHA_256,
    authenticator_for,
    in_authentication,
)
from mongocore.io.connection import Connection, connect  # noqa: E402
from mongocore.io.connection_settings import ConnectionSettings  # noqa: E402
from mongocore.io.srv import options_with_seedlist  # noqa: E402
from mongocore.sim import ReplicaSet, Standalone, User, server_tls_context  # noqa: E402
from mongocore.sim.member import Process  # noqa: E402
from tests.unit.test_srv import FakeResolver  # noqa: E402

DEADLINE = 20.0
PASSWORD = "Pa55-w0rd-Zq9"  # distinctive, so a leak is found by a plain search
FAST: dict[str, Any] = {"heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 10_000}


# --- certificates ------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca_file: str  # the CA clients trust
    other_ca_file: str  # a CA nobody trusts
    server: str  # certificate + key for 127.0.0.1 and localhost
    server_other_ca: str  # the same names, from the untrusted CA
    server_wrong_host: str  # a trusted certificate for db.example.test only
    server_srv_host: str  # a trusted certificate for db1.cluster.test (the SRV target)
    client: str  # client certificate + key for MONGODB-X509
    client_subject: str  # its subject, RFC 4514 (cryptography's own rendering)
    client_encrypted: str  # the same certificate with its key encrypted
    client_key_password: str
    client_other: str  # a client certificate from the untrusted CA


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca = trustme.CA(organization_name="mongocore tests")
    other = trustme.CA(organization_name="nobody trusts this")

    def write(name: str, blob: Any) -> str:
        path = directory / name
        blob.write_to_path(str(path))
        return str(path)

    client_cert = ca.issue_cert(
        "app@example.test",
        common_name="app-client",
        organization_name="Example",
        organization_unit_name="Apps",
    )
    subject = x509.load_pem_x509_certificate(client_cert.cert_chain_pems[0].bytes()).subject
    key = serialization.load_pem_private_key(client_cert.private_key_pem.bytes(), password=None)
    key_password = "k3y-Pa55phrase"
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(key_password.encode()),
    )
    encrypted_path = directory / "client-encrypted.pem"
    encrypted_path.write_bytes(
        encrypted + b"".join(blob.bytes() for blob in client_cert.cert_chain_pems)
    )
    return Pki(
        ca_file=write("ca.pem", ca.cert_pem),
        other_ca_file=write("other-ca.pem", other.cert_pem),
        server=write(
            "server.pem", ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem
        ),
        server_other_ca=write(
            "server-other.pem",
            other.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem,
        ),
        server_wrong_host=write(
            "server-wrong.pem", ca.issue_cert("db.example.test").private_key_and_cert_chain_pem
        ),
        server_srv_host=write(
            "server-srv.pem", ca.issue_cert("db1.cluster.test").private_key_and_cert_chain_pem
        ),
        client=write("client.pem", client_cert.private_key_and_cert_chain_pem),
        client_subject=subject.rfc4514_string(),
        client_encrypted=str(encrypted_path),
        client_key_password=key_password,
        client_other=write(
            "client-other.pem",
            other.issue_cert("x@example.test", common_name="x").private_key_and_cert_chain_pem,
        ),
    )


class SniRecorder:
    """Records the server name each TLS client sent (None when it sent none)."""

    def __init__(self) -> None:
        self.names: list[Optional[str]] = []

    def __call__(self, sock: Any, name: Optional[str], context: ssl.SSLContext) -> None:
        self.names.append(name)


def tls_server(
    cert: str, *, ca_file: Optional[str] = None, sni: Optional[SniRecorder] = None
) -> ssl.SSLContext:
    context = server_tls_context(cert, ca_file=ca_file)
    if sni is not None:
        context.sni_callback = sni
    return context


# --- helpers ------------------------------------------------------------------------------


def options(uri: str, **kwargs: Any) -> ClientOptions:
    kwargs.setdefault("connectTimeoutMS", 10_000)
    return ClientOptions.from_uri(uri, **kwargs)


def open_connection(
    address: Address, opts: ClientOptions, *, monitoring: bool = False
) -> Connection:
    """What the Client's pool does for one connection: settings and hook from options."""
    return connect(
        address,
        ConnectionSettings.from_options(opts),
        monitoring=monitoring,
        authenticate=authenticator_for(opts),
    )


def address_of(process: Process) -> Address:
    return Address(*process.address)


def requests_of(process: Process, conn: Connection) -> list[str]:
    """The commands the server received on this connection, in order."""
    return [
        r.command for r in process.server.requests if r.connection_id == conn.server_connection_id
    ]


def mechanisms_of(process: Process, conn: Connection) -> list[str]:
    """The mechanisms the server saw this connection log in with."""
    assert conn.server_connection_id is not None
    server_side = process.server.connection(conn.server_connection_id)
    assert server_side is not None
    return list(server_side.mechanisms)


def authenticated_users(conn: Connection) -> list[dict[str, str]]:
    reply = conn.command("admin", {"connectionStatus": 1})
    return list(reply["authInfo"]["authenticatedUsers"])


@pytest.fixture
def tls_standalone(pki: Pki) -> Iterator[Standalone]:
    with Standalone(tls=tls_server(pki.server)) as server:
        yield server


USERS = [
    User("both", PASSWORD),
    User("sha1only", PASSWORD, mechanisms=(SCRAM_SHA_1,)),
    User("sha256only", PASSWORD, mechanisms=(SCRAM_SHA_256,)),
    User("appuser", PASSWORD, db="app"),
]


@pytest.fixture
def auth_standalone() -> Iterator[Standalone]:
    with Standalone(users=USERS) as server:
        yield server


# --- TLS ------------------------------------------------------------------------------------


def test_tls_with_a_trusted_certificate(pki: Pki) -> None:
    sni = SniRecorder()
    with Standalone(tls=tls_server(pki.server, sni=sni)) as server:
        port = server.member.port
        for host in ("127.0.0.1", "localhost"):
            opts = options(f"mongodb://{host}:{port}/?tls=true&tlsCAFile={pki.ca_file}")
            conn = open_connection(opts.hosts[0], opts)
            try:
                assert conn.tls
                assert conn.command("admin", {"ping": 1})["ok"] == 1
            finally:
                conn.close()
        # The host name is sent for SNI; an IP address is not (RFC 6066).
        assert sni.names == [None, "localhost"]


def test_an_untrusted_certificate_is_refused(pki: Pki) -> None:
    with Standalone(tls=tls_server(pki.server_other_ca)) as server:
        address = address_of(server.member)
        uri = f"mongodb://{server.member.host}/?tls=true"
        for opts in (
            options(f"{uri}&tlsCAFile={pki.ca_file}"),
            options(uri),  # the system's trust store does not know the test CA either
            options(f"{uri}&tlsCAFile={pki.ca_file}&tlsAllowInvalidHostnames=true"),
        ):
            with pytest.raises(NetworkError, match="CERTIFICATE_VERIFY_FAILED") as info:
                open_connection(address, opts)
            assert info.value.address == address
            # A certificate check is not I/O: no backpressure labels.
            assert info.value.error_labels == frozenset()
        # Accepting any certificate is explicit, and then the connection works.
        for insecure in ("tlsAllowInvalidCertificates=true", "tlsInsecure=true"):
            conn = open_connection(address, options(f"{uri}&{insecure}"))
            try:
                assert conn.tls
                assert conn.command("admin", {"ping": 1})["ok"] == 1
            finally:
                conn.close()


def test_a_wrong_host_name_is_refused_unless_allowed(pki: Pki) -> None:
    with Standalone(tls=tls_server(pki.server_wrong_host)) as server:
        address = address_of(server.member)
        uri = f"mongodb://{server.member.host}/?tls=true&tlsCAFile={pki.ca_file}"
        with pytest.raises(NetworkError, match="mismatch") as info:
            open_connection(address, options(uri))
        assert info.value.error_labels == frozenset()
        conn = open_connection(address, options(f"{uri}&tlsAllowInvalidHostnames=true"))
        try:
            assert conn.command("admin", {"ping": 1})["ok"] == 1
        finally:
            conn.close()


def test_plain_tcp_to_a_tls_server_fails(tls_standalone: Standalone) -> None:
    opts = options(f"mongodb://{tls_standalone.member.host}/?connectTimeoutMS=5000")
    with pytest.raises(NetworkError):
        open_connection(opts.hosts[0], opts)


def test_tls_options_are_checked_when_the_settings_are_built(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="tlsCAFile"):
        ConnectionSettings.from_options(options(f"mongodb://h/?tlsCAFile={tmp_path / 'none'}"))
    with pytest.raises(ConfigurationError, match="tlsCertificateKeyFile"):
        ConnectionSettings.from_options(
            options(f"mongodb://h/?tlsCertificateKeyFile={tmp_path / 'none'}")
        )
    wrong = "not-the-Key-pa55word"
    with pytest.raises(ConfigurationError, match="tlsCertificateKeyFile") as info:
        ConnectionSettings.from_options(
            options(
                f"mongodb://h/?tlsCertificateKeyFile={pki.client_encrypted}"
                f"&tlsCertificateKeyFilePassword={wrong}"
            )
        )
    assert info.value.__suppress_context__
    assert not any(wrong in text for text in texts_of(info.value))
    # An encrypted key without a password fails at once, never prompting on a terminal.
    with pytest.raises(ConfigurationError, match="tlsCertificateKeyFilePassword"):
        ConnectionSettings.from_options(
            options(f"mongodb://h/?tlsCertificateKeyFile={pki.client_encrypted}")
        )
    # Conflicting options are the URI parser's configuration errors.
    with pytest.raises(ConfigurationError, match="tlsInsecure"):
        options("mongodb://h/?tlsInsecure=true&tlsAllowInvalidHostnames=true")
    # Accepted and without effect: the standard library makes no OCSP or CRL checks.
    settings = ConnectionSettings.from_options(
        options(f"mongodb://h/?tls=true&tlsCAFile={pki.ca_file}&tlsDisableOCSPEndpointCheck=true")
    )
    context = settings.ssl_context
    assert context is not None
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2


def test_mongodb_srv_turns_tls_on_and_verifies_the_srv_target(
    pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    sni = SniRecorder()
    with Standalone(tls=tls_server(pki.server_srv_host, sni=sni)) as server:
        resolver = FakeResolver(
            srv={"_mongodb._tcp.cluster.test": [("db1.cluster.test", server.member.port)]}
        )
        # The SRV target resolves to this machine's loopback, as DNS would say.
        real_getaddrinfo = socket.getaddrinfo

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host == "db1.cluster.test":
                host = "127.0.0.1"
            return real_getaddrinfo(host, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        srv = options_with_seedlist(
            f"mongodb+srv://cluster.test/?tlsCAFile={pki.ca_file}", resolver=resolver
        )
        assert srv.options.tls  # no tls=true in the URI: mongodb+srv implies it
        (seed,) = srv.topology_settings.seeds
        assert seed == Address("db1.cluster.test", server.member.port)
        conn = open_connection(seed, srv.options)
        try:
            assert conn.tls
            assert conn.command("admin", {"ping": 1})["ok"] == 1
        finally:
            conn.close()
        assert sni.names == ["db1.cluster.test"]
        # tls=false in the URI wins over the SRV default; then a TLS server is unreachable.
        plain = options_with_seedlist("mongodb+srv://cluster.test/?tls=false", resolver=resolver)
        assert not plain.options.tls
        assert ConnectionSettings.from_options(plain.options).ssl_context is None


# --- SCRAM -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "mechanism", "expected"),
    [
        ("both", SCRAM_SHA_256, SCRAM_SHA_256),
        ("both", SCRAM_SHA_1, SCRAM_SHA_1),
        ("sha256only", None, SCRAM_SHA_256),
        ("both", None, SCRAM_SHA_256),
    ],
)
def test_scram_speculative_login(
    auth_standalone: Standalone, user: str, mechanism: Optional[str], expected: str
) -> None:
    host = auth_standalone.member.host
    query = f"?authMechanism={mechanism}" if mechanism else ""
    opts = options(f"mongodb://{user}:{PASSWORD}@{host}/{query}")
    conn = open_connection(opts.hosts[0], opts)
    try:
        assert authenticated_users(conn) == [{"user": user, "db": "admin"}]
        conn.command("test", {"insert": "c", "documents": [{"x": 1}]})
        # The first step rode in the handshake: one saslContinue finished the login.
        sent = requests_of(auth_standalone.member, conn)
        assert sent[:2] == ["isMaster", "saslContinue"]
        assert "saslStart" not in sent
        assert mechanisms_of(auth_standalone.member, conn) == [expected]
    finally:
        conn.close()


def test_mechanism_negotiation_falls_back_to_scram_sha_1(auth_standalone: Standalone) -> None:
    # No mechanism: SCRAM-SHA-256 is tried speculatively and refused (the user has only
    # SCRAM-SHA-1), and saslSupportedMechs in the handshake reply selects SCRAM-SHA-1.
    opts = options(f"mongodb://sha1only:{PASSWORD}@{auth_standalone.member.host}/")
    conn = open_connection(opts.hosts[0], opts)
    try:
        assert conn.hello["saslSupportedMechs"] == [SCRAM_SHA_1]
        assert authenticated_users(conn) == [{"user": "sha1only", "db": "admin"}]
        assert mechanisms_of(auth_standalone.member, conn) == [SCRAM_SHA_1]
        assert requests_of(auth_standalone.member, conn)[:3] == [
            "isMaster",
            "saslStart",
            "saslContinue",
        ]
    finally:
        conn.close()


def test_auth_source_is_the_uri_database(auth_standalone: Standalone) -> None:
    host = auth_standalone.member.host
    opts = options(f"mongodb://appuser:{PASSWORD}@{host}/app")
    conn = open_connection(opts.hosts[0], opts)
    try:
        assert authenticated_users(conn) == [{"user": "appuser", "db": "app"}]
    finally:
        conn.close()
    # The same user is unknown in admin (authSource overrides the URI database).
    opts = options(f"mongodb://appuser:{PASSWORD}@{host}/app?authSource=admin")
    with pytest.raises(AuthenticationError):
        open_connection(opts.hosts[0], opts)


@pytest.mark.parametrize(
    ("user", "query"),
    [
        ("both", "?authMechanism=SCRAM-SHA-256"),
        ("both", "?authMechanism=SCRAM-SHA-1"),
        ("both", ""),
        ("sha1only", ""),
        ("sha1only", "?authMechanism=SCRAM-SHA-256"),  # the user has no such credential
        ("nobody", ""),
    ],
)
def test_bad_credentials_fail_at_once(auth_standalone: Standalone, user: str, query: str) -> None:
    wrong = "wrong-Pa55"
    password = PASSWORD if query.endswith("SHA-256") and user == "sha1only" else wrong
    opts = options(f"mongodb://{user}:{password}@{auth_standalone.member.host}/{query}")
    with pytest.raises(AuthenticationError) as info:
        open_connection(opts.hosts[0], opts)
    error = info.value
    assert error.code == 18
    assert not error.has_error_label("SystemOverloadedError")
    assert isinstance(error, OperationFailure)
    assert in_authentication(error)
    for text in (str(error), repr(error), repr(error.details)):
        assert password not in text
        assert user not in text


def test_commands_are_refused_before_login(auth_standalone: Standalone) -> None:
    opts = options(f"mongodb://{auth_standalone.member.host}/")
    conn = open_connection(opts.hosts[0], opts)
    try:
        assert conn.command("admin", {"ping": 1})["ok"] == 1  # needs no authentication
        with pytest.raises(OperationFailure) as info:
            conn.command("test", {"find": "c"})
        assert info.value.code == 13
        assert info.value.details["codeName"] == "Unauthorized"
    finally:
        conn.close()


def test_monitoring_connections_never_authenticate(auth_standalone: Standalone) -> None:
    opts = options(f"mongodb://both:{PASSWORD}@{auth_standalone.member.host}/")
    conn = open_connection(opts.hosts[0], opts, monitoring=True)
    try:
        assert requests_of(auth_standalone.member, conn) == ["isMaster"]
        assert "saslSupportedMechs" not in conn.hello
        assert conn.speculative_reply is None
        assert authenticated_users(conn) == []
    finally:
        conn.close()


def test_a_timeout_while_authenticating_is_marked(auth_standalone: Standalone) -> None:
    member = auth_standalone.member
    member.fail_command("saslContinue", block_time_ms=5_000, mode={"times": 1})
    opts = options(f"mongodb://both:{PASSWORD}@{member.host}/", connectTimeoutMS=300)
    with pytest.raises(NetworkTimeout) as info:
        open_connection(opts.hosts[0], opts)
    assert in_authentication(info.value)
    # Backpressure labels are for establishment before authentication only.
    assert not info.value.has_error_label("SystemOverloadedError")
    # A timeout in the hello itself is not an authentication error.
    member.fail_command("isMaster", block_time_ms=5_000, mode={"times": 1})
    with pytest.raises(NetworkTimeout) as info:
        open_connection(opts.hosts[0], opts)
    assert not in_authentication(info.value)
    assert info.value.error_labels == {"SystemOverloadedError", "RetryableError"}
    member.clear_fail_points()


# --- MONGODB-X509 -----------------------------------------------------------------------


@pytest.fixture
def x509_standalone(pki: Pki) -> Iterator[Standalone]:
    users = [User.x509(pki.client_subject), User("both", PASSWORD)]
    with Standalone(tls=tls_server(pki.server, ca_file=pki.ca_file), users=users) as server:
        yield server


def x509_uri(server: Standalone, pki: Pki, certificate: str, extra: str = "") -> str:
    return (
        f"mongodb://{server.member.host}/?authMechanism=MONGODB-X509&tlsCAFile={pki.ca_file}"
        f"&tlsCertificateKeyFile={certificate}{extra}"
    )


def test_x509_login_with_a_client_certificate(x509_standalone: Standalone, pki: Pki) -> None:
    opts = options(x509_uri(x509_standalone, pki, pki.client))
    assert opts.tls  # any tls* option turns TLS on
    conn = open_connection(opts.hosts[0], opts)
    try:
        assert authenticated_users(conn) == [{"user": pki.client_subject, "db": "$external"}]
        assert mechanisms_of(x509_standalone.member, conn) == [MONGODB_X509]
        # Speculative: the handshake alone authenticated the connection.
        assert requests_of(x509_standalone.member, conn)[0] == "isMaster"
        assert "authenticate" not in requests_of(x509_standalone.member, conn)
    finally:
        conn.close()


def test_x509_with_the_user_name_and_an_encrypted_key(
    x509_standalone: Standalone, pki: Pki
) -> None:
    uri = x509_uri(
        x509_standalone,
        pki,
        pki.client_encrypted,
        f"&tlsCertificateKeyFilePassword={pki.client_key_password}",
    )
    opts = options(uri, username=pki.client_subject)
    conn = open_connection(opts.hosts[0], opts)
    try:
        assert authenticated_users(conn) == [{"user": pki.client_subject, "db": "$external"}]
    finally:
        conn.close()


def test_an_untrusted_client_certificate_is_refused_by_the_server(
    x509_standalone: Standalone, pki: Pki
) -> None:
    opts = options(x509_uri(x509_standalone, pki, pki.client_other))
    with pytest.raises(NetworkError) as info:  # an "unknown ca" alert, or the socket closed
        open_connection(opts.hosts[0], opts)
    assert not in_authentication(info.value)  # TLS failed before any authentication


@pytest.mark.parametrize("case", ["wrong user", "no certificate"])
def test_x509_failures(x509_standalone: Standalone, pki: Pki, case: str) -> None:
    host = x509_standalone.member.host
    if case == "wrong user":
        opts = options(x509_uri(x509_standalone, pki, pki.client), username="CN=someone-else")
    else:
        opts = options(
            f"mongodb://{host}/?authMechanism=MONGODB-X509&tls=true&tlsCAFile={pki.ca_file}"
        )
    with pytest.raises(AuthenticationError) as info:
        open_connection(opts.hosts[0], opts)
    assert info.value.code == 18
    assert in_authentication(info.value)


def test_scram_over_tls_with_client_certificates_asked_for(
    x509_standalone: Standalone, pki: Pki
) -> None:
    opts = options(
        f"mongodb://both:{PASSWORD}@{x509_standalone.member.host}/?tls=true&tlsCAFile={pki.ca_file}"
    )
    conn = open_connection(opts.hosts[0], opts)
    try:
        assert authenticated_users(conn) == [{"user": "both", "db": "admin"}]
    finally:
        conn.close()


# --- the Client ------------------------------------------------------------------------


@pytest.fixture
def client_factory() -> Iterator[Callable[..., Client]]:
    """Clients (which authenticate their pools' connections), closed at teardown."""
    clients: list[Client] = []

    def start(uri: str, **kwargs: Any) -> Client:
        client = Client(uri, **{**FAST, **kwargs})
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.close()


class Recorder(
    TopologyListener,
    ServerListener,
    ServerHeartbeatListener,
    CommandListener,
    ConnectionPoolListener,
):
    """Every event of every kind, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)

    def _add(self, event: Any) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[Any], bool], timeout: float = DEADLINE) -> Any:
        with self._cond:
            found: list[Any] = []

            def seen() -> bool:
                found[:] = [e for e in self.events if predicate(e)]
                return bool(found)

            assert self._cond.wait_for(seen, timeout), "event not seen in time"
            return found[0]

    opened = closed = description_changed = started = succeeded = failed = _add
    pool_created = pool_ready = pool_cleared = pool_closed = _add
    connection_created = connection_ready = connection_closed = _add
    connection_check_out_started = connection_check_out_failed = _add
    connection_checked_out = connection_checked_in = _add


def test_client_login_failure_marks_the_server_unknown_and_clears_its_pool(
    auth_standalone: Standalone, client_factory: Callable[..., Client]
) -> None:
    recorder = Recorder()
    host = auth_standalone.member.host
    client = client_factory(
        f"mongodb://both:wrong-Pa55@{host}/?directConnection=true", event_listeners=[recorder]
    )
    with pytest.raises(AuthenticationError) as info:
        client.command("test", {"count": "c"})
    assert info.value.code == 18
    recorder.wait_for(lambda e: isinstance(e, PoolClearedEvent))
    unknown = recorder.wait_for(
        lambda e: (
            isinstance(e, ServerDescriptionChangedEvent)
            and e.new_description.type is ServerType.UNKNOWN
            and e.previous_description.type is ServerType.STANDALONE
        )
    )
    assert "Authentication failed" in str(unknown.new_description.error)


def test_client_login_and_commands(
    auth_standalone: Standalone, client_factory: Callable[..., Client]
) -> None:
    host = auth_standalone.member.host
    client = client_factory(f"mongodb://sha1only:{PASSWORD}@{host}/?directConnection=true")
    assert client.command("test", {"insert": "c", "documents": [{"x": 1}]})["n"] == 1
    assert client.command("test", {"count": "c"})["n"] == 1


def test_the_topology_acts_on_errors_marked_as_authentication_errors(
    auth_standalone: Standalone, client_factory: Callable[..., Client]
) -> None:
    # What the Client passes to SDAM for a checkout error: completed_handshake=False and
    # in_authentication read from the error.
    member = auth_standalone.member
    client = client_factory(f"mongodb://{member.host}/?directConnection=true")
    client.command("admin", {"ping": 1})
    address = address_of(member)
    member.fail_command("saslContinue", block_time_ms=5_000, mode={"times": 1})
    opts = options(f"mongodb://both:{PASSWORD}@{member.host}/", connectTimeoutMS=300)
    with pytest.raises(NetworkTimeout) as info:
        open_connection(address, opts)
    pool = client.topology.description.servers[address]
    assert pool.type is ServerType.STANDALONE
    decision = client.topology.handle_error(
        address,
        info.value,
        generation=0,
        completed_handshake=False,
        in_authentication=in_authentication(info.value),
    )
    assert decision.mark_unknown is not None and decision.clear_pool
    member.clear_fail_points()


# --- secrets stay secret -------------------------------------------------------------------


def texts_of(value: Any, seen: Optional[set[int]] = None) -> Iterator[str]:
    """Every text an event or log record shows: reprs, strs, nested values, causes."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    yield repr(value)
    yield str(value)
    if isinstance(value, BaseException):
        yield from texts_of(getattr(value, "details", None), seen)
        yield from texts_of(value.__cause__, seen)
        yield from texts_of(value.__context__, seen)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from texts_of(item, seen)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from texts_of(item, seen)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            yield from texts_of(getattr(value, name), seen)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        for item in vars(value).values():
            yield from texts_of(item, seen)


def test_no_password_in_logs_or_events(
    auth_standalone: Standalone,
    client_factory: Callable[..., Client],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mongocore")
    host = auth_standalone.member.host
    wrong = "wr0ng-Pa55-Xy7"
    recorder = Recorder()
    failing = client_factory(
        f"mongodb://both:{wrong}@{host}/?directConnection=true&appname=leaky",
        event_listeners=[recorder],
    )
    with pytest.raises(AuthenticationError) as info:
        failing.command("test", {"count": "c"})
    failure = info.value
    working = client_factory(
        f"mongodb://both:{PASSWORD}@{host}/?directConnection=true", event_listeners=[recorder]
    )
    working.command("test", {"insert": "c", "documents": [{"x": 1}]})
    working.command("test", {"count": "c"})
    # A connection with speculative authentication, its handshake and its login.
    opts = options(f"mongodb://both:{PASSWORD}@{host}/")
    conn = open_connection(opts.hosts[0], opts)
    conn.close()
    for client in (failing, working):
        client.close()

    records = caplog.records
    assert any(r.name.startswith("mongocore") for r in records)
    assert recorder.events
    shown: list[str] = []
    for record in records:
        shown.append(record.getMessage())
        shown.extend(texts_of(record.args))
        if record.exc_info and record.exc_info[1] is not None:
            shown.extend(texts_of(record.exc_info[1]))
    for event in recorder.events:
        shown.extend(texts_of(event))
    shown.extend(texts_of(failure))
    # Objects that hold the credentials must not show them.
    for holder in (failing, working, failing.options, working.options):
        shown.extend((repr(holder), str(holder)))
    for text in shown:
        for secret in (PASSWORD, wrong):
            assert secret not in text
        # Nothing of the conversation either (the handshake is never published).
        assert "speculativeAuthenticate" not in text
        assert "saslStart" not in text and "saslContinue" not in text


# --- pymongo, an independent client -------------------------------------------------------


def test_pymongo_logs_in_with_scram_sha_256_over_tls(pki: Pki) -> None:
    pymongo = pytest.importorskip("pymongo")
    users = [User("sha256only", PASSWORD, mechanisms=(SCRAM_SHA_256,))]
    with ReplicaSet(2, tls=tls_server(pki.server), users=users, election_delay=0.05) as rs:
        client: Any = pymongo.MongoClient(
            rs.uri,
            tls=True,
            tlsCAFile=pki.ca_file,
            username="sha256only",
            password=PASSWORD,
            authMechanism="SCRAM-SHA-256",
            **FAST,
        )
        try:
            client.test.c.insert_one({"x": 1})
            assert client.test.c.count_documents({}) == 1
            status = client.admin.command("connectionStatus")
            assert status["authInfo"]["authenticatedUsers"] == [
                {"user": "sha256only", "db": "admin"}
            ]
        finally:
            client.close()
        bad: Any = pymongo.MongoClient(
            rs.uri, tls=True, tlsCAFile=pki.ca_file, username="sha256only", password="nope", **FAST
        )
        try:
            with pytest.raises(pymongo.errors.OperationFailure) as info:
                bad.test.c.count_documents({})
            assert info.value.code == 18
        finally:
            bad.close()
        for member in rs.members:
            assert all(r.command != "find" or r.compressor is None for r in member.server.requests)


def test_pymongo_logs_in_with_x509(x509_standalone: Standalone, pki: Pki) -> None:
    pymongo = pytest.importorskip("pymongo")
    client: Any = pymongo.MongoClient(
        x509_uri(x509_standalone, pki, pki.client) + "&directConnection=true", **FAST
    )
    try:
        status = client.admin.command("connectionStatus")
        assert status["authInfo"]["authenticatedUsers"] == [
            {"user": pki.client_subject, "db": "$external"}
        ]
    finally:
        client.close()


def test_mongocore_and_pymongo_share_one_scram_user(auth_standalone: Standalone) -> None:
    # Credentials derived by the simulator (with mongocore's SASLprep) accept a password
    # that needs preparing, whichever client prepares it.
    pymongo = pytest.importorskip("pymongo")
    password = "I\u00adX-\u2168"  # SASLprep: "IX-IX"
    with Standalone(users=[User("unicode", password, mechanisms=(SCRAM_SHA_256,))]) as server:
        client: Any = pymongo.MongoClient(
            server.member.host,
            username="unicode",
            password=password,
            authMechanism="SCRAM-SHA-256",
            directConnection=True,
            **FAST,
        )
        try:
            assert client.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"]
        finally:
            client.close()
        opts = options(f"mongodb://{server.member.host}/", username="unicode", password="IX-IX")
        conn = open_connection(opts.hosts[0], opts)
        try:
            assert authenticated_users(conn) == [{"user": "unicode", "db": "admin"}]
        finally:
            conn.close()
