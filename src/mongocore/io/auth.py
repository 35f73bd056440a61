"""Authentication: SCRAM-SHA-256, SCRAM-SHA-1, MONGODB-X509, mechanism negotiation and
speculative authentication, with the credentials of :mod:`mongocore.core.credentials`.

Specs: Authentication ("MongoCredential", "Authentication Handshake", "Mechanism
Negotiation via Handshake", "Default Authentication Methods", "Caching credentials
in SCRAM", "SCRAM-SHA-1", "SCRAM-SHA-256", "MONGODB-X509"); MongoDB Handshake
("Speculative Authentication"); RFC 5802 (SCRAM), RFC 7677 (SCRAM-SHA-256), RFC 4013
(SASLprep) on RFC 3454 (stringprep).

How a connection authenticates (see :func:`mongocore.io.connection.connect`): the
:class:`Authenticator` adds ``saslSupportedMechs`` (when no mechanism was given) and
``speculativeAuthenticate`` (the first message of the conversation) to the hello of
the handshake, then, once hello succeeded, finishes the conversation: from the
server's speculative reply when there is one, from the start otherwise. Monitoring
connections never authenticate.

SASLprep is implemented here on the standard library's ``stringprep`` tables, rather
than borrowed from pymongo: the architecture keeps pymongo to its ``bson`` package,
and the interoperability tests with pymongo then check two implementations against
each other. Passwords are treated as stored strings (unassigned code points are
refused), as pymongo treats them, so both derive the same keys.

Nothing here logs, raises or represents a password, a key or a proof; error messages
name the mechanism and the database, never the user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import stringprep
import threading
import unicodedata
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional

from bson import Binary

from mongocore._deferred_dataclass import dataclass
from mongocore.core.credentials import (
    DEFAULT_AUTH_SOURCE,
    EXTERNAL,
    MONGODB_X509,
    SCRAM_SHA_1,
    SCRAM_SHA_256,
    Credentials,
    credentials_for,
)
from mongocore.errors import AuthenticationError, ConfigurationError
from mongocore.io.connection import Connection, in_authentication

if TYPE_CHECKING:
    from mongocore.core.options import ClientOptions

__all__ = [
    "DEFAULT_AUTH_SOURCE",
    "MIN_ITERATION_COUNT",
    "MONGODB_X509",
    "SCRAM_SHA_1",
    "SCRAM_SHA_256",
    "SUPPORTED_MECHANISMS",
    "Authenticator",
    "Credentials",
    "ScramConversation",
    "SpeculativeStart",
    "authenticator_for",
    "check_supported",
    "credentials_for",
    "in_authentication",
    "saslprep",
    "scram_password",
    "select_default_mechanism",
    "speculative_auth_for",
]

_log = logging.getLogger("mongocore.auth")

#: The mechanisms mongocore authenticates with (credentials.py parses them all).
SUPPORTED_MECHANISMS = (SCRAM_SHA_256, SCRAM_SHA_1, MONGODB_X509)
#: "Drivers MUST enforce a minimum iteration count of 4096" (a downgrade defence).
MIN_ITERATION_COUNT = 4096
# A conversation that has not finished after this many empty saslContinue round trips
# is not going to.
_MAX_EMPTY_EXCHANGES = 2

_HASHES: Mapping[str, Callable[..., Any]] = {
    SCRAM_SHA_1: hashlib.sha1,
    SCRAM_SHA_256: hashlib.sha256,
}
_HASH_NAMES = {SCRAM_SHA_1: "sha1", SCRAM_SHA_256: "sha256"}


# --- SASLprep (RFC 4013) -------------------------------------------------------------

# RFC 4013 section 2.3: the prohibited output (RFC 3454 tables C.1.2 to C.9).
_PROHIBITED: tuple[Callable[[str], bool], ...] = (
    stringprep.in_table_c12,
    stringprep.in_table_c21_c22,
    stringprep.in_table_c3,
    stringprep.in_table_c4,
    stringprep.in_table_c5,
    stringprep.in_table_c6,
    stringprep.in_table_c7,
    stringprep.in_table_c8,
    stringprep.in_table_c9,
)


def saslprep(text: str, *, allow_unassigned: bool = False) -> str:
    """Prepare ``text`` with the SASLprep profile of stringprep (RFC 4013).

    Mapping (non-ASCII spaces to SPACE, "commonly mapped to nothing" removed), NFKC
    normalization (of Unicode 3.2, the version stringprep is defined on), then the
    prohibited-output and bidirectional checks. ``allow_unassigned`` treats the string
    as a query rather than a stored string. Raises ValueError, whose message never
    contains the text.
    """
    if not isinstance(text, str):
        raise TypeError(f"SASLprep takes a str, not {type(text).__name__}")
    if text.isascii() and all(" " <= ch <= "~" for ch in text):
        # Printable ASCII is neither mapped, normalized nor prohibited.
        return text
    mapped = []
    for ch in text:
        # A few characters (U+200B) are in both tables: mapped to nothing, as pymongo
        # maps them, so that both derive the same SCRAM-SHA-256 keys.
        if stringprep.in_table_b1(ch):
            continue
        mapped.append(" " if stringprep.in_table_c12(ch) else ch)
    prepared = unicodedata.ucd_3_2_0.normalize("NFKC", "".join(mapped))
    for index, ch in enumerate(prepared):
        if any(table(ch) for table in _PROHIBITED):
            raise ValueError(f"SASLprep: prohibited character at position {index}")
        if not allow_unassigned and stringprep.in_table_a1(ch):
            raise ValueError(f"SASLprep: unassigned code point at position {index}")
    # RFC 3454 section 6: a string with right-to-left characters has no left-to-right
    # ones, and starts and ends with a right-to-left character.
    if any(stringprep.in_table_d1(ch) for ch in prepared):
        if any(stringprep.in_table_d2(ch) for ch in prepared):
            raise ValueError("SASLprep: mixes right-to-left and left-to-right characters")
        if not (stringprep.in_table_d1(prepared[0]) and stringprep.in_table_d1(prepared[-1])):
            raise ValueError(
                "SASLprep: a right-to-left string must start and end with a right-to-left character"
            )
    return prepared


# --- which credentials mongocore can use -----------------------------------------------


def check_supported(credentials: Credentials, *, tls: bool) -> None:
    """Raise ConfigurationError for valid credentials mongocore cannot authenticate with.

    :func:`credentials_for` accepts every mechanism of the spec; authentication here
    speaks SCRAM-SHA-256, SCRAM-SHA-1 and MONGODB-X509 (which also needs TLS). The
    check runs when the client is created ("Drivers SHOULD raise an error as early as
    possible"), before any connection is opened.
    """
    mechanism = credentials.mechanism
    if mechanism is not None and mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigurationError(
            f"authMechanism {mechanism} is not supported by mongocore: the credentials are"
            f" valid, but mongocore authenticates only with {', '.join(SUPPORTED_MECHANISMS)}"
        )
    if mechanism == MONGODB_X509 and not tls:
        raise ConfigurationError(
            "MONGODB-X509 needs TLS with a client certificate: set tls=true and"
            " tlsCertificateKeyFile"
        )
    if mechanism == SCRAM_SHA_256:
        assert credentials.password is not None
        _check_saslprep(credentials.password)


def _check_saslprep(password: str) -> None:
    try:
        saslprep(password)
    except ValueError as exc:
        raise ConfigurationError(f"the password cannot be used with SCRAM-SHA-256: {exc}") from None


def select_default_mechanism(hello: Mapping[str, Any]) -> str:
    """ "Default Authentication Methods": SCRAM-SHA-256 if the handshake's
    ``saslSupportedMechs`` lists it, else SCRAM-SHA-1 (whatever else is listed)."""
    mechanisms = hello.get("saslSupportedMechs")
    if isinstance(mechanisms, (list, tuple)) and SCRAM_SHA_256 in mechanisms:
        return SCRAM_SHA_256
    return SCRAM_SHA_1


# --- SCRAM (RFC 5802, RFC 7677) -----------------------------------------------------


def scram_password(mechanism: str, username: str, password: str) -> bytes:
    """The password as SCRAM-SHA-1 or SCRAM-SHA-256 feeds it to Hi().

    SCRAM-SHA-1: MongoDB's hashed variant, HEX(MD5(user:mongo:password)), never
    SASLprepped. SCRAM-SHA-256: the SASLprepped password itself.
    """
    if mechanism == SCRAM_SHA_1:
        digest = hashlib.md5(f"{username}:mongo:{password}".encode(), usedforsecurity=False)
        return digest.hexdigest().encode()
    if mechanism == SCRAM_SHA_256:
        try:
            return saslprep(password).encode()
        except ValueError as exc:
            raise ConfigurationError(
                f"the password cannot be used with SCRAM-SHA-256: {exc}"
            ) from None
    raise ConfigurationError(f"{mechanism} is not a SCRAM mechanism")


def _escape_username(username: str) -> str:
    # RFC 5802 "saslname": ',' and '=' are escaped (user names are not SASLprepped).
    return username.replace("=", "=3D").replace(",", "=2C")


def _parse_attributes(message: bytes, what: str) -> dict[str, str]:
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationError(f"SCRAM: the server's {what} is not UTF-8") from None
    attributes: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationError(f"SCRAM: malformed server {what}")
        attributes.setdefault(key, value)
    return attributes


# The SCRAM key cache ("Caching credentials in SCRAM"): (mechanism, salt, iterations)
# -> (ClientKey, ServerKey). Each Authenticator has its own, so the password is part
# of the key implicitly.
KeyCache = dict[tuple[str, bytes, int], tuple[bytes, bytes]]


class ScramConversation:
    """The client side of one SCRAM-SHA-1 or SCRAM-SHA-256 conversation.

    ``password`` is what Hi() takes (see :func:`scram_password`). ``nonce`` is for
    tests; by default 24 random bytes from ``secrets``, base64-encoded.
    """

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: bytes,
        *,
        nonce: Optional[str] = None,
        cache: Optional[KeyCache] = None,
        cache_lock: Optional[threading.Lock] = None,
    ) -> None:
        if mechanism not in _HASHES:
            raise ConfigurationError(f"{mechanism} is not a SCRAM mechanism")
        self.mechanism = mechanism
        self._hash = _HASHES[mechanism]
        self._password = password
        self._nonce = nonce if nonce is not None else _new_nonce()
        self._first_bare = f"n={_escape_username(username)},r={self._nonce}"
        self._cache = cache
        self._cache_lock = cache_lock or threading.Lock()
        self._server_signature: Optional[bytes] = None

    def __repr__(self) -> str:
        return f"<ScramConversation {self.mechanism}>"

    def client_first(self) -> bytes:
        # "n,," : no channel binding, no authorization identity.
        return f"n,,{self._first_bare}".encode()

    def client_final(self, server_first: bytes) -> bytes:
        """The client-final-message answering ``server_first``."""
        attributes = _parse_attributes(server_first, "first message")
        if "m" in attributes:
            raise AuthenticationError("SCRAM: the server requires an unsupported extension")
        nonce = attributes.get("r", "")
        if not nonce.startswith(self._nonce) or len(nonce) <= len(self._nonce):
            raise AuthenticationError("SCRAM: the server nonce does not extend the client's")
        try:
            salt = base64.b64decode(attributes["s"], validate=True)
            iterations = int(attributes["i"])
        except (KeyError, ValueError):
            raise AuthenticationError(
                "SCRAM: the server's first message lacks a valid salt or iteration count"
            ) from None
        if iterations < MIN_ITERATION_COUNT:
            raise AuthenticationError(
                f"SCRAM: the server asked for {iterations} iterations, fewer than the"
                f" minimum {MIN_ITERATION_COUNT}"
            )
        client_key, server_key = self._keys(salt, iterations)
        without_proof = f"c=biws,r={nonce}"
        auth_message = b",".join(
            (self._first_bare.encode(), bytes(server_first), without_proof.encode())
        )
        stored_key = self._hash(client_key).digest()
        client_signature = hmac.digest(stored_key, auth_message, self._hash)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature))
        self._server_signature = hmac.digest(server_key, auth_message, self._hash)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_server_final(self, server_final: bytes) -> None:
        """Check the server's proof that it knows the password (mutual authentication)."""
        attributes = _parse_attributes(server_final, "final message")
        if "e" in attributes:
            raise AuthenticationError(f"SCRAM: the server reported an error: {attributes['e']}")
        if self._server_signature is None:
            raise AuthenticationError("SCRAM: the server's final message came too early")
        try:
            signature = base64.b64decode(attributes.get("v", ""), validate=True)
        except ValueError:
            signature = b""
        if not hmac.compare_digest(signature, self._server_signature):
            raise AuthenticationError("SCRAM: the server's signature is not valid")

    def _keys(self, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
        key = (self.mechanism, salt, iterations)
        if self._cache is not None:
            with self._cache_lock:
                cached = self._cache.get(key)
            if cached is not None:
                return cached
        salted = hashlib.pbkdf2_hmac(_HASH_NAMES[self.mechanism], self._password, salt, iterations)
        keys = (
            hmac.digest(salted, b"Client Key", self._hash),
            hmac.digest(salted, b"Server Key", self._hash),
        )
        if self._cache is not None:
            with self._cache_lock:
                self._cache[key] = keys
        return keys


def _new_nonce() -> str:
    return base64.b64encode(secrets.token_bytes(24)).decode()


def _payload(reply: Mapping[str, Any]) -> bytes:
    payload = reply.get("payload", b"")
    if isinstance(payload, (bytes, bytearray)):
        return bytes(payload)
    if isinstance(payload, str):
        try:
            return base64.b64decode(payload, validate=True)
        except ValueError:
            pass
    raise AuthenticationError("SASL: the server's payload is neither binary nor base64")


# --- speculative authentication ----------------------------------------------------


@dataclass(frozen=True, repr=False)
class SpeculativeStart:
    """The first step of a conversation, sent in the handshake (MongoDB Handshake,
    "Speculative Authentication"): the ``speculativeAuthenticate`` document and, for
    SCRAM, the conversation it began."""

    mechanism: str
    document: Mapping[str, Any]
    conversation: Optional[ScramConversation] = None

    def __repr__(self) -> str:
        return f"SpeculativeStart(mechanism={self.mechanism!r})"


def speculative_auth_for(
    credentials: Credentials,
    *,
    cache: Optional[KeyCache] = None,
    cache_lock: Optional[threading.Lock] = None,
) -> SpeculativeStart:
    """The speculative first step for these credentials.

    With no mechanism given, SCRAM-SHA-256 is the one tried speculatively (the spec's
    rule); mechanism negotiation still happens through ``saslSupportedMechs``.
    """
    if credentials.mechanism == MONGODB_X509:
        return SpeculativeStart(MONGODB_X509, {**_x509_command(credentials), "db": EXTERNAL})
    mechanism = credentials.mechanism or SCRAM_SHA_256
    conversation = _scram_conversation(credentials, mechanism, cache, cache_lock)
    document = {**_sasl_start(mechanism, conversation), "db": credentials.source}
    return SpeculativeStart(mechanism, document, conversation)


def _scram_conversation(
    credentials: Credentials,
    mechanism: str,
    cache: Optional[KeyCache],
    cache_lock: Optional[threading.Lock],
) -> ScramConversation:
    assert credentials.username is not None and credentials.password is not None
    return ScramConversation(
        mechanism,
        credentials.username,
        scram_password(mechanism, credentials.username, credentials.password),
        cache=cache,
        cache_lock=cache_lock,
    )


def _sasl_start(mechanism: str, conversation: ScramConversation) -> dict[str, Any]:
    return {
        "saslStart": 1,
        "mechanism": mechanism,
        "payload": Binary(conversation.client_first()),
        "autoAuthorize": 1,
        "options": {"skipEmptyExchange": True},
    }


def _x509_command(credentials: Credentials) -> dict[str, Any]:
    command: dict[str, Any] = {"authenticate": 1, "mechanism": MONGODB_X509}
    if credentials.username:
        command["user"] = credentials.username
    return command


# --- the authenticator ----------------------------------------------------------------


class Authenticator:
    """Authenticates application connections with one set of credentials.

    Pass it as ``connect(..., authenticate=authenticator)``: ``connect`` calls
    :meth:`handshake_fields` to extend the hello, then the authenticator itself once
    hello succeeded. One instance serves every connection of a client, from any
    thread; it keeps the SCRAM key cache.
    """

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self._cache: KeyCache = {}
        self._cache_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Authenticator {self.credentials!r}>"

    def handshake_fields(self, conn: Connection) -> dict[str, Any]:
        """What the handshake's hello adds: ``saslSupportedMechs`` when no mechanism
        was given, and ``speculativeAuthenticate``. The conversation begun is kept on
        the connection for :meth:`__call__`."""
        credentials = self.credentials
        fields: dict[str, Any] = {}
        if credentials.mechanism is None:
            # "The username MUST NOT be modified from the form provided by the user."
            fields["saslSupportedMechs"] = f"{credentials.source}.{credentials.username}"
        start = speculative_auth_for(credentials, cache=self._cache, cache_lock=self._cache_lock)
        conn.speculative_authentication = start
        fields["speculativeAuthenticate"] = dict(start.document)
        return fields

    def __call__(self, conn: Connection) -> None:
        """Finish (or run) the authentication conversation on an established connection.

        Raises AuthenticationError when the server refuses, NetworkError when the
        connection fails; either way ``connect`` closes the connection.
        """
        if conn.hello.get("arbiterOnly"):
            return  # "If the server is of type RSArbiter, no authentication is possible."
        credentials = self.credentials
        start = conn.speculative_authentication
        conn.speculative_authentication = None
        reply = conn.speculative_reply
        mechanism = credentials.mechanism or (
            start.mechanism if reply is not None and start is not None else None
        )
        if mechanism is None:
            mechanism = select_default_mechanism(conn.hello)
        if not (isinstance(start, SpeculativeStart) and start.mechanism == mechanism):
            start, reply = None, None
        if mechanism == MONGODB_X509:
            self._x509(conn, reply)
        else:
            # A conversation the server did not take up is not reused: a new nonce.
            conversation = start.conversation if start is not None and reply is not None else None
            if conversation is None:
                conversation = _scram_conversation(
                    credentials, mechanism, self._cache, self._cache_lock
                )
            self._scram(conn, mechanism, conversation, reply)
        _log.debug(
            "connection %d to %s authenticated with %s%s",
            conn.id,
            conn.address,
            mechanism,
            " (speculatively)" if reply is not None else "",
        )

    # --- mechanisms -----------------------------------------------------------------

    def _scram(
        self,
        conn: Connection,
        mechanism: str,
        conversation: ScramConversation,
        speculative: Optional[Mapping[str, Any]],
    ) -> None:
        source = self.credentials.source
        reply: Mapping[str, Any]
        if speculative is None:
            reply = self._command(conn, mechanism, _sasl_start(mechanism, conversation))
        else:
            reply = speculative
        conversation_id = reply.get("conversationId")
        if reply.get("done"):
            raise AuthenticationError(
                f"{mechanism} on database {source!r}: the server ended the conversation early"
            )
        final = conversation.client_final(_payload(reply))
        reply = self._command(
            conn,
            mechanism,
            {"saslContinue": 1, "conversationId": conversation_id, "payload": Binary(final)},
        )
        conversation.verify_server_final(_payload(reply))
        # Servers that ignore skipEmptyExchange want one more, empty, round trip.
        for _ in range(_MAX_EMPTY_EXCHANGES):
            if reply.get("done"):
                return
            reply = self._command(
                conn,
                mechanism,
                {"saslContinue": 1, "conversationId": conversation_id, "payload": Binary(b"")},
            )
        if not reply.get("done"):
            raise AuthenticationError(
                f"{mechanism} on database {source!r}: the server did not end the conversation"
            )

    def _x509(self, conn: Connection, speculative: Optional[Mapping[str, Any]]) -> None:
        if speculative is not None:
            return  # the server accepted the certificate in the handshake
        self._command(conn, MONGODB_X509, _x509_command(self.credentials))

    def _command(self, conn: Connection, mechanism: str, command: dict[str, Any]) -> dict[str, Any]:
        source = self.credentials.source
        # Authentication is part of establishing the connection: while connect() runs,
        # the connection ends every exchange by connectTimeoutMS's one deadline for the
        # whole establishment, whatever timeout is given here.
        reply = conn.command(source, command, check=False, timeout=conn.settings.connect_timeout)
        if reply.get("ok") != 1:
            code = reply.get("code")
            raise AuthenticationError(
                f"{mechanism} authentication on database {source!r} failed:"
                f" {reply.get('errmsg', 'no error message')}",
                code if isinstance(code, int) and not isinstance(code, bool) else 18,
                _error_details(reply),
            )
        return reply


def _error_details(reply: Mapping[str, Any]) -> dict[str, Any]:
    # Only the error fields: an error reply to a SASL command carries no payload, but
    # nothing of the conversation is kept even if one did.
    return {k: reply[k] for k in ("ok", "errmsg", "code", "codeName", "errorLabels") if k in reply}


def authenticator_for(options: ClientOptions) -> Optional[Authenticator]:
    """The authentication hook for ``connect`` that the options ask for, or None.

    Raises ConfigurationError for invalid credentials (see :func:`credentials_for`) and
    for valid ones mongocore cannot authenticate with (see :func:`check_supported`).
    """
    credentials = credentials_for(options)
    if credentials is None:
        return None
    check_supported(credentials, tls=options.tls)
    return Authenticator(credentials)
