"""SASLprep (RFC 4013), SCRAM (RFC 5802, RFC 7677 and the auth spec's MongoDB
conversations), credentials from options, and the default mechanism rules."""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core.options import ClientOptions
from mongocore.errors import AuthenticationError, ConfigurationError
from mongocore.io.auth import (
    MONGODB_X509,
    SCRAM_SHA_1,
    SCRAM_SHA_256,
    Authenticator,
    Credentials,
    ScramConversation,
    authenticator_for,
    credentials_for,
    saslprep,
    scram_password,
    select_default_mechanism,
    speculative_auth_for,
)
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.sim import Security, User
from mongocore.sim.codes import CommandError

# --- SASLprep ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "prepared"),
    [
        # RFC 4013 section 3, "Examples".
        ("I\u00adX", "IX"),  # SOFT HYPHEN mapped to nothing
        ("user", "user"),  # no transformation
        ("USER", "USER"),  # case preserved
        ("\u00aa", "a"),  # output is NFKC, input in ISO 8859-1
        ("\u2168", "IX"),  # output is NFKC, will match 1st example
        # Non-ASCII spaces become SPACE; zero-width characters disappear.
        ("a\u00a0b", "a b"),
        ("a\u2003b", "a b"),
        ("a\u200bb", "ab"),
        ("", ""),
        ("pencil", "pencil"),
    ],
)
def test_saslprep_rfc4013_examples(text: str, prepared: str) -> None:
    assert saslprep(text) == prepared


@pytest.mark.parametrize(
    "text",
    [
        "\u0007",  # RFC 4013 example 6: prohibited character (control)
        "\u0627\u0031",  # RFC 4013 example 7: RandALCat string not ending in RandALCat
        "a\ue000",  # private use
        "a\ufffd",  # inappropriate for plain text
        "\u0627a\u0627",  # right-to-left and left-to-right mixed
        "a\U000e0001",  # tagging character
    ],
)
def test_saslprep_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="SASLprep") as info:
        saslprep(text)
    assert text not in str(info.value)


def test_saslprep_unassigned_code_points() -> None:
    unassigned = "\u0221"  # unassigned in Unicode 3.2, stringprep's version
    with pytest.raises(ValueError, match="unassigned"):
        saslprep(unassigned)
    assert saslprep(unassigned, allow_unassigned=True) == unassigned


def test_saslprep_takes_text_only() -> None:
    with pytest.raises(TypeError):
        saslprep(b"bytes")  # type: ignore[arg-type]


@given(st.text(max_size=20))
def test_saslprep_agrees_with_pymongo(text: str) -> None:
    # pymongo's public saslprep is an independent implementation of the same profile.
    pymongo_saslprep = pytest.importorskip("pymongo.saslprep").saslprep
    try:
        expected = pymongo_saslprep(text)
    except IndexError:
        # pymongo's fails on a string that prepares to nothing ("", or only characters
        # mapped to nothing, like U+00AD).
        assert saslprep(text) == ""
        return
    except ValueError:
        with pytest.raises(ValueError):
            saslprep(text)
        return
    assert saslprep(text) == expected


# --- SCRAM test vectors ---------------------------------------------------------------


def converse(
    mechanism: str, password: bytes, nonce: str, server_first: str, server_final: str
) -> tuple[bytes, bytes]:
    conversation = ScramConversation(mechanism, "user", password, nonce=nonce)
    first = conversation.client_first()
    final = conversation.client_final(server_first.encode())
    conversation.verify_server_final(server_final.encode())
    return first, final


def test_rfc5802_scram_sha_1_vector() -> None:
    # RFC 5802 section 5: the plain password, as SCRAM itself defines the exchange.
    first, final = converse(
        SCRAM_SHA_1,
        b"pencil",
        "fyko+d2lbbFgONRv9qkxdawL",
        "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
        "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
    )
    assert first == b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    assert final == (
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    )


def test_rfc7677_scram_sha_256_vector() -> None:
    first, final = converse(
        SCRAM_SHA_256,
        scram_password(SCRAM_SHA_256, "user", "pencil"),
        "rOprNGfwEbeRWgbNEkqO",
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    )
    assert first == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )


def test_mongodb_scram_sha_1_uses_the_hashed_password() -> None:
    # The auth spec's SCRAM-SHA-1 conversation: HEX(MD5("user:mongo:pencil")) into Hi().
    password = scram_password(SCRAM_SHA_1, "user", "pencil")
    assert password == hashlib.md5(b"user:mongo:pencil").hexdigest().encode()
    _, final = converse(
        SCRAM_SHA_1,
        password,
        "fyko+d2lbbFgONRv9qkxdawL",
        "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,"
        "i=10000",
        "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=",
    )
    assert final.endswith(b",p=MC2T8BvbmWRckDw8oWl5IVghwCY=")


def test_scram_sha_256_password_is_saslprepped_not_the_username() -> None:
    assert scram_password(SCRAM_SHA_256, "IX", "I\u00adX") == b"IX"
    # User names are not prepared, only escaped.
    conversation = ScramConversation(SCRAM_SHA_256, "a=b,c\u00ad", b"x", nonce="n0nce")
    assert conversation.client_first() == "n,,n=a=3Db=2Cc\u00ad,r=n0nce".encode()
    with pytest.raises(ConfigurationError, match="SCRAM-SHA-256") as info:
        scram_password(SCRAM_SHA_256, "user", "bad\u0007password")
    assert "bad\u0007password" not in str(info.value)


def scram_server(
    mechanism: str, password: bytes, nonce: str, salt: bytes, iterations: int
) -> tuple[str, bytes]:
    """The server-first message and the ServerKey of a well-behaved server."""
    server_first = f"r={nonce}srv,s={base64.b64encode(salt).decode()},i={iterations}"
    name = "sha1" if mechanism == SCRAM_SHA_1 else "sha256"
    salted = hashlib.pbkdf2_hmac(name, password, salt, iterations)
    return server_first, hmac.digest(salted, b"Server Key", name)


@pytest.mark.parametrize(
    ("server_first", "match"),
    [
        ("r=abc,s=c2FsdA==,i=4096", "does not extend"),
        ("r=n0nce,s=c2FsdA==,i=4096", "does not extend"),  # nothing added
        ("r=n0nceX,s=c2FsdA==,i=4095", "fewer than the minimum 4096"),
        ("r=n0nceX,s=c2FsdA==,i=many", "iteration count"),
        ("r=n0nceX,i=4096", "salt"),
        ("r=n0nceX,s=***,i=4096", "salt"),
        ("m=ext,r=n0nceX,s=c2FsdA==,i=4096", "extension"),
        ("garbage", "malformed"),
    ],
)
def test_scram_refuses_a_bad_server_first_message(server_first: str, match: str) -> None:
    conversation = ScramConversation(SCRAM_SHA_256, "user", b"pencil", nonce="n0nce")
    with pytest.raises(AuthenticationError, match=match):
        conversation.client_final(server_first.encode())


def test_scram_refuses_a_server_that_does_not_know_the_password() -> None:
    conversation = ScramConversation(SCRAM_SHA_256, "user", b"pencil", nonce="n0nce")
    server_first, _ = scram_server(SCRAM_SHA_256, b"other", "n0nce", b"salt", 4096)
    conversation.client_final(server_first.encode())
    wrong = base64.b64encode(b"\x00" * 32).decode()
    with pytest.raises(AuthenticationError, match="signature is not valid"):
        conversation.verify_server_final(f"v={wrong}".encode())
    with pytest.raises(AuthenticationError, match="invalid-proof"):
        conversation.verify_server_final(b"e=invalid-proof")


def test_scram_server_signature_is_checked_after_the_proof() -> None:
    conversation = ScramConversation(SCRAM_SHA_1, "user", b"pencil", nonce="n0nce")
    with pytest.raises(AuthenticationError, match="too early"):
        conversation.verify_server_final(b"v=AAAA")


def test_scram_keys_are_cached_per_salt_and_iteration_count() -> None:
    cache: dict[tuple[str, bytes, int], tuple[bytes, bytes]] = {}
    for _ in range(2):
        conversation = ScramConversation(SCRAM_SHA_256, "user", b"pencil", cache=cache)
        nonce = conversation.client_first().decode().rsplit("r=", 1)[1]
        server_first, server_key = scram_server(SCRAM_SHA_256, b"pencil", nonce, b"salt", 4096)
        conversation.client_final(server_first.encode())
    assert list(cache) == [(SCRAM_SHA_256, b"salt", 4096)]
    assert cache[(SCRAM_SHA_256, b"salt", 4096)][1] == server_key


def test_client_nonces_are_random() -> None:
    nonces = {ScramConversation(SCRAM_SHA_1, "u", b"p").client_first() for _ in range(20)}
    assert len(nonces) == 20


# --- credentials and mechanisms -------------------------------------------------------


def creds(uri: str, **kwargs: object) -> Credentials | None:
    return credentials_for(ClientOptions.from_uri(uri, **kwargs))


def test_no_credentials_no_authentication() -> None:
    assert creds("mongodb://h/db") is None
    # authSource alone does not ask for authentication.
    assert creds("mongodb://h/db?authSource=admin") is None


@pytest.mark.parametrize(
    ("uri", "mechanism", "source"),
    [
        ("mongodb://u:p@h", None, "admin"),
        ("mongodb://u:p@h/app", None, "app"),
        ("mongodb://u:p@h/app?authSource=users", None, "users"),
        ("mongodb://u:p@h/?authMechanism=SCRAM-SHA-1", SCRAM_SHA_1, "admin"),
        ("mongodb://u:p@h/app?authMechanism=SCRAM-SHA-256", SCRAM_SHA_256, "app"),
        ("mongodb://u:@h", None, "admin"),  # an empty password is a password
    ],
)
def test_scram_sources(uri: str, mechanism: str | None, source: str) -> None:
    credentials = creds(uri)
    assert credentials is not None
    assert (credentials.mechanism, credentials.source) == (mechanism, source)


@pytest.mark.parametrize(
    ("uri", "kwargs", "source", "username"),
    [
        ("mongodb://h/?authMechanism=MONGODB-X509&tls=true", {}, "$external", None),
        ("mongodb://CN%3Dapp@h/app?authMechanism=MONGODB-X509&tls=true", {}, "$external", "CN=app"),
        (
            "mongodb://h/?authMechanism=MONGODB-X509&tls=true&authSource=$external",
            {},
            "$external",
            None,
        ),
    ],
)
def test_x509_source_is_external(
    uri: str, kwargs: dict[str, object], source: str, username: str | None
) -> None:
    credentials = creds(uri, **kwargs)
    assert credentials is not None
    assert (credentials.mechanism, credentials.source) == (MONGODB_X509, source)
    assert credentials.username == username


@pytest.mark.parametrize(
    ("uri", "match"),
    [
        ("mongodb://u@h", "needs a password"),
        ("mongodb://u@h/?authMechanism=SCRAM-SHA-256", "needs a password"),
        ("mongodb://:p@h", "username"),
        ("mongodb://h/?authMechanism=SCRAM-SHA-1", "non-empty username"),
        ("mongodb://u:p@h/?authMechanism=MONGODB-X509&tls=true", "no password"),
        ("mongodb://h/?authMechanism=MONGODB-X509", "needs TLS"),
        ("mongodb://h/?authMechanism=MONGODB-X509&tls=true&authSource=admin", "'\\$external'"),
        ("mongodb://u:p@h/?authMechanism=PLAIN", "not supported"),
        ("mongodb://u:p@h/?authMechanism=GSSAPI", "not supported"),
        (
            "mongodb://u:p@h/?authMechanism=SCRAM-SHA-1&authMechanismProperties=A:b",
            "no authMechanismProperties",
        ),
        ("mongodb://u:bad%07pw@h/?authMechanism=SCRAM-SHA-256", "SCRAM-SHA-256"),
    ],
)
def test_invalid_credentials_are_configuration_errors(uri: str, match: str) -> None:
    # Invalid credentials fail in credentials_for; valid ones mongocore cannot use
    # (another mechanism, X.509 without TLS, a password SASLprep refuses) in
    # authenticator_for. Both run when the client is created.
    with pytest.raises(ConfigurationError, match=match) as info:
        authenticator_for(ClientOptions.from_uri(uri))
    assert "bad\u0007pw" not in str(info.value)


def test_empty_username_given_as_an_option() -> None:
    with pytest.raises(ConfigurationError, match="non-empty username"):
        creds("mongodb://h", username="", password="p")
    with pytest.raises(ConfigurationError, match="without a username"):
        creds("mongodb://h", password="p")


def test_credentials_repr_shows_no_secret() -> None:
    credentials = creds("mongodb://alice:hunter2@h/app")
    assert credentials is not None
    for text in (repr(credentials), str(credentials), repr(Authenticator(credentials))):
        assert "hunter2" not in text
        assert "alice" not in text


@pytest.mark.parametrize(
    ("hello", "mechanism"),
    [
        ({"saslSupportedMechs": ["SCRAM-SHA-1", "SCRAM-SHA-256"]}, SCRAM_SHA_256),
        ({"saslSupportedMechs": ["SCRAM-SHA-256"]}, SCRAM_SHA_256),
        ({"saslSupportedMechs": ["SCRAM-SHA-1"]}, SCRAM_SHA_1),
        # Unknown mechanisms are not an error, and never chosen.
        ({"saslSupportedMechs": ["PLAIN", "GSSAPI"]}, SCRAM_SHA_1),
        ({"saslSupportedMechs": []}, SCRAM_SHA_1),
        ({}, SCRAM_SHA_1),
    ],
)
def test_default_mechanism(hello: dict[str, object], mechanism: str) -> None:
    assert select_default_mechanism(hello) == mechanism


def test_speculative_documents() -> None:
    negotiated = creds("mongodb://user:pencil@h/app")
    assert negotiated is not None
    start = speculative_auth_for(negotiated)
    # No mechanism given: SCRAM-SHA-256 is tried speculatively.
    assert start.mechanism == SCRAM_SHA_256
    document = dict(start.document)
    assert document["saslStart"] == 1
    assert document["mechanism"] == SCRAM_SHA_256
    assert document["db"] == "app"
    assert document["options"] == {"skipEmptyExchange": True}
    assert bytes(document["payload"]).startswith(b"n,,n=user,r=")
    assert "pencil" not in repr(start)
    x509 = creds("mongodb://h/?authMechanism=MONGODB-X509&tls=true")
    assert x509 is not None
    assert dict(speculative_auth_for(x509).document) == {
        "authenticate": 1,
        "mechanism": MONGODB_X509,
        "db": "$external",
    }


# --- the conversation over a connection ---------------------------------------------------


class OldServerConnection:
    """Enough of a Connection for the Authenticator, in front of the simulator's SCRAM,
    as a server older than 4.4 answers: ``skipEmptyExchange`` is ignored."""

    def __init__(self, security: Any) -> None:
        self.security = security
        self.hello: dict[str, Any] = {}
        self.speculative_authentication: Any = None
        self.speculative_reply: Any = None
        self.settings = ConnectionSettings()
        self.id = 1
        self.address = "test"
        self.sent: list[str] = []
        # What the simulator keeps per connection.
        self.authenticated_users: list[tuple[str, str]] = []
        self.mechanisms: list[str] = []
        self.sasl_conversation: Any = None

    def command(self, db: str, cmd: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        name = next(iter(cmd))
        self.sent.append(name)
        request = {k: v for k, v in cmd.items() if k != "options"}
        try:
            return dict(self.security.run(self, name, db, request))
        except CommandError as exc:
            return exc.to_reply()


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_1, SCRAM_SHA_256])
def test_a_server_that_wants_the_empty_exchange(mechanism: str) -> None:
    conn = OldServerConnection(Security(users=[User("user", "pencil")]))
    credentials = creds(f"mongodb://user:pencil@h/?authMechanism={mechanism}")
    assert credentials is not None
    Authenticator(credentials)(conn)  # type: ignore[arg-type]
    assert conn.sent == ["saslStart", "saslContinue", "saslContinue"]
    assert conn.authenticated_users == [("user", "admin")]
    assert conn.mechanisms == [mechanism]
    wrong = creds(f"mongodb://user:wrong@h/?authMechanism={mechanism}")
    assert wrong is not None
    with pytest.raises(AuthenticationError, match="Authentication failed") as info:
        Authenticator(wrong)(OldServerConnection(conn.security))  # type: ignore[arg-type]
    assert info.value.code == 18
