"""The simulated server's security: TLS, users, authentication and wire compression.

What a mongod started with ``--tlsMode requireTLS``, ``--auth`` and
``--networkMessageCompressors`` does, as far as a driver can see:

- TLS: every connection is TLS, with the server certificate of the ``ssl.SSLContext``
  given (see :func:`server_tls_context`); a client certificate is asked for when the
  context has CAs to check it against. With ``tls_mode="preferTLS"`` (or
  ``"allowTLS"``, the same for incoming connections) plain TCP connections are
  accepted too, as ``--tlsMode preferTLS`` does.
- Users: SCRAM-SHA-256 and SCRAM-SHA-1 users with passwords, and MONGODB-X509 users
  in ``$external`` named by their certificate's subject (RFC 2253, as the server
  prints it). The credentials are derived once, as the server stores them: salt,
  iteration count (15000 for SHA-256, 10000 for SHA-1), StoredKey and ServerKey.
- Authentication: ``saslStart``/``saslContinue`` (RFC 5802 and 7677, with
  ``skipEmptyExchange``), ``authenticate`` for MONGODB-X509, ``saslSupportedMechs``
  and ``speculativeAuthenticate`` in the handshake's hello, ``logout``. With users,
  every other command is refused with Unauthorized (13) until the connection has
  logged in. Any authenticated user may run any command: roles are not simulated.
- Compression: the handshake's ``compression`` list is answered with the enabled
  compressors it names; a compressed request gets a reply compressed the same way.

Wrong credentials get the server's one answer, AuthenticationFailed (18), whether the
user, the password or the mechanism was wrong.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from bson import Binary

from mongocore.core.compression import COMPRESSOR_IDS, available_compressors
from mongocore.io.auth import MONGODB_X509, SCRAM_SHA_1, SCRAM_SHA_256, scram_password
from mongocore.sim.codes import CommandError

if TYPE_CHECKING:
    from mongocore.sim.server import Connection

__all__ = [
    "TLS_MODES",
    "Security",
    "User",
    "rfc2253_subject",
    "server_tls_context",
]

EXTERNAL = "$external"
#: mongod's --tlsMode values for a TLS-enabled server (allowTLS and preferTLS accept
#: both kinds of incoming connection).
REQUIRE_TLS = "requireTLS"
TLS_MODES = (REQUIRE_TLS, "preferTLS", "allowTLS")
SCRAM_MECHANISMS = (SCRAM_SHA_256, SCRAM_SHA_1)
# The server's defaults (scramIterationCount, scramSHA256IterationCount).
ITERATIONS = {SCRAM_SHA_1: 10_000, SCRAM_SHA_256: 15_000}
_SALT_BYTES = {SCRAM_SHA_1: 16, SCRAM_SHA_256: 28}
_HASHES = {SCRAM_SHA_1: hashlib.sha1, SCRAM_SHA_256: hashlib.sha256}
_HASH_NAMES = {SCRAM_SHA_1: "sha1", SCRAM_SHA_256: "sha256"}

_FAILED = "Authentication failed."


def server_tls_context(
    certificate_file: str,
    key_file: Optional[str] = None,
    *,
    ca_file: Optional[str] = None,
    require_client_certificate: bool = False,
) -> ssl.SSLContext:
    """A server-side TLS context: the server's certificate chain and key, and, with
    ``ca_file``, the CAs client certificates are checked against (asked for, and
    required when ``require_client_certificate``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate_file, key_file)
    if ca_file is not None:
        context.load_verify_locations(cafile=ca_file)
        context.verify_mode = ssl.CERT_REQUIRED if require_client_certificate else ssl.CERT_OPTIONAL
    return context


@dataclass(frozen=True, repr=False)
class User:
    """A user of the simulated deployment.

    ``User("app", "secret")`` is a SCRAM user of ``admin`` with both SCRAM mechanisms;
    ``mechanisms`` narrows them. ``User.x509(subject)`` is a MONGODB-X509 user of
    ``$external``.
    """

    name: str
    password: Optional[str] = field(default=None, repr=False)
    db: str = "admin"
    mechanisms: tuple[str, ...] = SCRAM_MECHANISMS

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in (*SCRAM_MECHANISMS, MONGODB_X509)]
        if unknown or not self.mechanisms:
            raise ValueError(f"unsupported mechanisms for a simulated user: {self.mechanisms}")
        if MONGODB_X509 in self.mechanisms:
            if self.db != EXTERNAL or self.password is not None or len(self.mechanisms) != 1:
                raise ValueError("an X.509 user is in $external, with no password or SCRAM")
        elif self.password is None:
            raise ValueError("a SCRAM user needs a password")

    @classmethod
    def x509(cls, subject: str) -> User:
        return cls(subject, None, EXTERNAL, (MONGODB_X509,))

    def __repr__(self) -> str:
        return f"User({self.name!r}, db={self.db!r}, mechanisms={self.mechanisms!r})"


@dataclass(frozen=True)
class _ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _scram_credential(mechanism: str, user: User) -> _ScramCredential:
    assert user.password is not None
    salt = secrets.token_bytes(_SALT_BYTES[mechanism])
    iterations = ITERATIONS[mechanism]
    salted = hashlib.pbkdf2_hmac(
        _HASH_NAMES[mechanism],
        scram_password(mechanism, user.name, user.password),
        salt,
        iterations,
    )
    digest = _HASHES[mechanism]
    client_key = hmac.digest(salted, b"Client Key", digest)
    return _ScramCredential(
        salt,
        iterations,
        digest(client_key).digest(),
        hmac.digest(salted, b"Server Key", digest),
    )


class _ScramServerConversation:
    """The server side of one SCRAM conversation on one connection."""

    def __init__(
        self,
        mechanism: str,
        user: User,
        *,
        credential: _ScramCredential,
        client_first_bare: str,
        client_nonce: str,
        skip_empty_exchange: bool,
    ) -> None:
        self.mechanism = mechanism
        self.user = user
        self.credential = credential
        self.nonce = client_nonce + base64.b64encode(secrets.token_bytes(24)).decode()
        self.server_first = (
            f"r={self.nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        self.client_first_bare = client_first_bare
        self.skip_empty_exchange = skip_empty_exchange
        self.step = 1


def _attributes(payload: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for part in payload.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise CommandError(17, "Invalid SCRAM message")
        attributes.setdefault(key, value)
    return attributes


def _unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


def _payload_bytes(cmd: Mapping[str, Any]) -> bytes:
    payload = cmd.get("payload", b"")
    if isinstance(payload, (bytes, bytearray)):
        return bytes(payload)
    if isinstance(payload, str):
        return base64.b64decode(payload)
    raise CommandError(14, "payload must be BinData or a base64 string")


# Short names OpenSSL prints in RFC 2253 subjects (the server prints the same).
_RDN_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _escape_rdn_value(value: str) -> str:
    escaped = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def rfc2253_subject(subject: Any) -> str:
    """A certificate subject, as ``ssl.SSLSocket.getpeercert()`` gives it (a sequence
    of RDNs, each a sequence of (name, value) pairs), in the RFC 2253 form
    MONGODB-X509 user names take (the last RDN first)."""
    rdns = []
    rdn: Iterable[tuple[str, str]]
    for rdn in subject:
        parts = [f"{_RDN_NAMES.get(k, k)}={_escape_rdn_value(v)}" for k, v in rdn]
        rdns.append("+".join(parts))
    return ",".join(reversed(rdns))


class Security:
    """A deployment's TLS, users and compressors; one instance serves all its processes.

    ``tls``: a server-side ``ssl.SSLContext`` (None: plain TCP); ``tls_mode``: with
    ``tls``, ``"requireTLS"`` (the default: every connection is TLS) or ``"preferTLS"`` /
    ``"allowTLS"`` (TLS and plain TCP connections alike). ``users``: with any,
    authentication is required. ``compressors``: those enabled, by handshake name
    (zlib always works; zstd and snappy need their packages).
    """

    def __init__(
        self,
        *,
        tls: Optional[ssl.SSLContext] = None,
        tls_mode: str = REQUIRE_TLS,
        users: Sequence[User] = (),
        compressors: Sequence[str] = (),
    ) -> None:
        if tls is not None and not isinstance(tls, ssl.SSLContext):
            raise TypeError("tls must be a server-side ssl.SSLContext (see server_tls_context)")
        if tls_mode not in TLS_MODES:
            raise ValueError(f"tls_mode must be one of {', '.join(TLS_MODES)}, not {tls_mode!r}")
        for name in compressors:
            if name not in COMPRESSOR_IDS or name == "noop":
                raise ValueError(f"unknown compressor {name!r}")
            if name not in available_compressors():
                raise ValueError(f"compressor {name!r} is not installed")
        self.tls = tls
        self.tls_mode = tls_mode
        self.users: tuple[User, ...] = tuple(users)
        self.compressors: tuple[str, ...] = tuple(compressors)
        self._users: dict[tuple[str, str], User] = {}
        self._scram: dict[tuple[str, str, str], _ScramCredential] = {}
        # Like mongod's --auth, fixed at startup: users created later do not turn it on.
        self._auth_required = bool(self.users)
        for user in self.users:
            self.add_user(user)

    @property
    def tls_optional(self) -> bool:
        """Plain TCP connections are accepted alongside TLS ones."""
        return self.tls is not None and self.tls_mode != REQUIRE_TLS

    @property
    def auth_enabled(self) -> bool:
        return self._auth_required

    # --- the users (createUser and friends change them over the wire) ----------------

    def add_user(self, user: User) -> None:
        """Add a user, deriving its stored SCRAM credentials as the server does."""
        key = (user.db, user.name)
        if key in self._users:
            raise ValueError(f"user {user.name!r} is defined twice in {user.db!r}")
        credentials = {
            mechanism: _scram_credential(mechanism, user)
            for mechanism in user.mechanisms
            if mechanism in SCRAM_MECHANISMS
        }
        self._users[key] = user
        for mechanism, credential in credentials.items():
            self._scram[(user.db, user.name, mechanism)] = credential
        self.users = tuple(self._users.values())

    def remove_user(self, db: str, name: str) -> bool:
        """Remove a user (connections it logged in keep their login, as on a server)."""
        user = self._users.pop((db, name), None)
        for mechanism in SCRAM_MECHANISMS:
            self._scram.pop((db, name, mechanism), None)
        self.users = tuple(self._users.values())
        return user is not None

    def user(self, db: str, name: str) -> Optional[User]:
        return self._users.get((db, name))

    def stored_credentials(self, user: User) -> dict[str, dict[str, Any]]:
        """What the server stores for each SCRAM mechanism (usersInfo's showCredentials)."""
        stored = {}
        for mechanism in user.mechanisms:
            credential = self._scram.get((user.db, user.name, mechanism))
            if credential is not None:
                stored[mechanism] = {
                    "iterationCount": credential.iterations,
                    "salt": base64.b64encode(credential.salt).decode(),
                    "storedKey": base64.b64encode(credential.stored_key).decode(),
                    "serverKey": base64.b64encode(credential.server_key).decode(),
                }
        return stored

    @property
    def compressor_ids(self) -> frozenset[int]:
        return frozenset(COMPRESSOR_IDS[name] for name in self.compressors)

    def __repr__(self) -> str:
        return (
            f"Security(tls={self.tls is not None}, tls_mode={self.tls_mode!r},"
            f" users={len(self.users)},"
            f" compressors={self.compressors!r})"
        )

    # --- the command path ----------------------------------------------------------

    def check_authorized(self, conn: Connection, name: str, *, requires_auth: bool) -> None:
        """Refuse a command that needs authentication (its registry entry says so) on a
        connection without it."""
        if requires_auth and self.auth_enabled and not conn.authenticated_users:
            raise CommandError(13, f"Command {name} requires authentication")

    def run(self, conn: Connection, name: str, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        """saslStart, saslContinue, authenticate or logout."""
        if name == "saslStart":
            return self._sasl_start(conn, db, cmd)
        if name == "saslContinue":
            return self._sasl_continue(conn, cmd)
        if name == "authenticate":
            return self._authenticate(conn, db, cmd)
        kept = [i for i, (_, user_db) in enumerate(conn.authenticated_users) if user_db != db]
        conn.authenticated_users = [conn.authenticated_users[i] for i in kept]
        conn.mechanisms = [conn.mechanisms[i] for i in kept]
        return {"ok": 1.0}

    def decorate(
        self,
        conn: Connection,
        name: str,
        cmd: Mapping[str, Any],
        reply: dict[str, Any],
        *,
        handshake: bool,
    ) -> None:
        """Add to a reply what depends on the connection's security: a hello's
        saslSupportedMechs, speculative authentication reply (handshake only) and
        compressors in common; connectionStatus's authenticated users."""
        if not reply.get("ok"):
            return
        if name == "connectionStatus":
            auth_info = reply.setdefault("authInfo", {})
            auth_info["authenticatedUsers"] = [
                {"user": user, "db": db} for user, db in conn.authenticated_users
            ]
            return
        if name not in ("hello", "isMaster", "ismaster"):
            return
        asked = cmd.get("saslSupportedMechs")
        if isinstance(asked, str) and "." in asked:
            db, _, user_name = asked.partition(".")
            user = self._users.get((db, user_name))
            if user is not None:
                reply["saslSupportedMechs"] = list(user.mechanisms)
        offered = cmd.get("compression")
        if isinstance(offered, list):
            common = [c for c in offered if c in self.compressors]
            if common:
                reply["compression"] = common
        speculative = cmd.get("speculativeAuthenticate")
        if handshake and isinstance(speculative, Mapping):
            answer = self._speculative(conn, speculative)
            if answer is not None:
                reply["speculativeAuthenticate"] = answer

    def _speculative(self, conn: Connection, doc: Mapping[str, Any]) -> Optional[dict[str, Any]]:
        # A speculative attempt that fails is left out of the reply: the client then
        # runs the ordinary conversation, which reports the failure.
        db = doc.get("db")
        if not isinstance(db, str):
            return None
        try:
            if "saslStart" in doc:
                reply = self._sasl_start(conn, db, doc)
            elif "authenticate" in doc:
                reply = self._authenticate(conn, db, doc)
            else:
                return None
        except CommandError:
            conn.sasl_conversation = None
            return None
        reply.pop("ok", None)
        return reply

    # --- SCRAM ---------------------------------------------------------------------

    def _sasl_start(self, conn: Connection, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        mechanism = cmd.get("mechanism")
        if mechanism not in SCRAM_MECHANISMS:
            raise CommandError(
                334, f"Received authentication for mechanism {mechanism} which is unknown"
            )
        try:
            text = _payload_bytes(cmd).decode("utf-8")
        except (UnicodeDecodeError, ValueError):
            raise CommandError(17, "Invalid SCRAM client-first message") from None
        gs2, sep, bare = text.partition(",,")
        if not sep or gs2 not in ("n", "y") or not bare.startswith("n="):
            raise CommandError(17, "Invalid SCRAM client-first message")
        attributes = _attributes(bare)
        user_name = _unescape(attributes.get("n", ""))
        nonce = attributes.get("r", "")
        if not nonce:
            raise CommandError(17, "Invalid SCRAM client-first message")
        user = self._users.get((db, user_name))
        credential = self._scram.get((db, user_name, str(mechanism)))
        if user is None or credential is None:
            raise CommandError(18, _FAILED)
        options = cmd.get("options")
        skip = isinstance(options, Mapping) and bool(options.get("skipEmptyExchange"))
        conversation = _ScramServerConversation(
            str(mechanism),
            user,
            credential=credential,
            client_first_bare=bare,
            client_nonce=nonce,
            skip_empty_exchange=skip,
        )
        conn.sasl_conversation = conversation
        return {
            "conversationId": 1,
            "done": False,
            "payload": Binary(conversation.server_first.encode()),
            "ok": 1.0,
        }

    def _sasl_continue(self, conn: Connection, cmd: Mapping[str, Any]) -> dict[str, Any]:
        conversation = conn.sasl_conversation
        if not isinstance(conversation, _ScramServerConversation) or cmd.get(
            "conversationId"
        ) not in (1, 1.0):
            raise CommandError(17, "No SASL session state found")
        if conversation.step == 2:
            # The empty exchange of a client that did not ask to skip it.
            conn.sasl_conversation = None
            return {"conversationId": 1, "done": True, "payload": Binary(b""), "ok": 1.0}
        try:
            text = _payload_bytes(cmd).decode("utf-8")
            without_proof, _, proof_part = text.rpartition(",p=")
            attributes = _attributes(without_proof)
            proof = base64.b64decode(proof_part, validate=True)
        except (UnicodeDecodeError, ValueError, CommandError):
            conn.sasl_conversation = None
            raise CommandError(18, _FAILED) from None
        credential = conversation.credential
        digest = _HASHES[conversation.mechanism]
        auth_message = ",".join(
            (conversation.client_first_bare, conversation.server_first, without_proof)
        ).encode()
        client_signature = hmac.digest(credential.stored_key, auth_message, digest)
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
        if (
            attributes.get("c") != "biws"
            or attributes.get("r") != conversation.nonce
            or len(proof) != len(client_signature)
            or not hmac.compare_digest(digest(client_key).digest(), credential.stored_key)
        ):
            conn.sasl_conversation = None
            raise CommandError(18, _FAILED)
        server_signature = hmac.digest(credential.server_key, auth_message, digest)
        user = conversation.user
        conn.authenticated_users.append((user.name, user.db))
        conn.mechanisms.append(conversation.mechanism)
        done = conversation.skip_empty_exchange
        conversation.step = 2
        if done:
            conn.sasl_conversation = None
        payload = f"v={base64.b64encode(server_signature).decode()}".encode()
        return {"conversationId": 1, "done": done, "payload": Binary(payload), "ok": 1.0}

    # --- MONGODB-X509 --------------------------------------------------------------

    def _authenticate(self, conn: Connection, db: str, cmd: Mapping[str, Any]) -> dict[str, Any]:
        if cmd.get("mechanism") != MONGODB_X509:
            raise CommandError(
                334, f"Unsupported mechanism {cmd.get('mechanism')} on authenticate command"
            )
        if db != EXTERNAL:
            raise CommandError(18, "X.509 authentication must always use the $external database.")
        subject = conn.peer_subject()
        if subject is None:
            raise CommandError(18, "No verified subject name available from client")
        asked = cmd.get("user")
        if asked is not None and asked != subject:
            raise CommandError(18, "There is no x.509 client certificate matching the user.")
        user = self._users.get((EXTERNAL, subject))
        if user is None or MONGODB_X509 not in user.mechanisms:
            raise CommandError(18, _FAILED)
        conn.authenticated_users.append((subject, EXTERNAL))
        conn.mechanisms.append(MONGODB_X509)
        return {"dbname": EXTERNAL, "user": subject, "ok": 1.0}
