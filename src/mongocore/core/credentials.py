"""Credentials: the MongoCredential a client's options configure, checked against the
rules of its mechanism.

Spec: Authentication ("MongoCredential", "Credential delimiter in URI implies
authentication", "Authentication source and URI database do not imply
authentication", "Errors", "Naming", and the "MongoCredential Properties" of each
mechanism: MONGODB-X509, GSSAPI with "Hostname Canonicalization", PLAIN, SCRAM-SHA-1,
SCRAM-SHA-256, MONGODB-AWS and MONGODB-OIDC with its "Built-in OIDC Environment
Integrations").

Every mechanism the spec names is parsed and validated here, including those mongocore
cannot authenticate with: a connection string either gives the credential its
mechanism's rules say it gives, or is a ConfigurationError naming what is wrong. Which
credentials mongocore can use is a separate question, answered when the client is
created (:func:`mongocore.io.auth.authenticator_for`: SCRAM-SHA-256, SCRAM-SHA-1 and
MONGODB-X509).

Two choices the spec leaves open:

- MONGODB-AWS follows the current rule that AWS credentials come from the environment
  (or an SDK), never from the connection string: a username, a password or an
  ``AWS_SESSION_TOKEN`` is refused.
- MONGODB-OIDC needs ``ENVIRONMENT`` (mongocore has no OIDC callback API), and only the
  properties a connection string may carry (``ENVIRONMENT``, ``TOKEN_RESOURCE``).

``authSource`` is known only through ``ClientOptions.auth_source``, which holds the URI
database when ``authSource`` is absent: an ``authSource`` equal to the URI database is
therefore taken as the default, for the mechanisms whose source must be ``$external``
too. Error messages never contain a user name, a password or a property value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from mongocore._deferred_dataclass import dataclass, field
from mongocore.errors import ConfigurationError

if TYPE_CHECKING:
    from mongocore.core.options import ClientOptions

__all__ = [
    "DEFAULT_AUTH_SOURCE",
    "EXTERNAL",
    "GSSAPI",
    "MECHANISMS",
    "MONGODB_AWS",
    "MONGODB_OIDC",
    "MONGODB_X509",
    "OIDC_ENVIRONMENTS",
    "PLAIN",
    "SCRAM_SHA_1",
    "SCRAM_SHA_256",
    "Credentials",
    "credentials_for",
]

SCRAM_SHA_1 = "SCRAM-SHA-1"
SCRAM_SHA_256 = "SCRAM-SHA-256"
MONGODB_X509 = "MONGODB-X509"
GSSAPI = "GSSAPI"
PLAIN = "PLAIN"
MONGODB_AWS = "MONGODB-AWS"
MONGODB_OIDC = "MONGODB-OIDC"
#: Every mechanism a connection string may name.
MECHANISMS = (SCRAM_SHA_1, SCRAM_SHA_256, MONGODB_X509, GSSAPI, PLAIN, MONGODB_AWS, MONGODB_OIDC)

EXTERNAL = "$external"
#: "source ... Defaults to the database name if supplied on the connection string or admin."
DEFAULT_AUTH_SOURCE = "admin"

#: GSSAPI "Hostname Canonicalization": the values CANONICALIZE_HOST_NAME may take.
CANONICALIZE_HOST_NAME_VALUES = ("none", "forward", "forwardAndReverse", "true", "false")
#: MONGODB-OIDC: the built-in environments, and those that need a TOKEN_RESOURCE.
OIDC_ENVIRONMENTS = ("test", "azure", "gcp", "k8s")
_OIDC_TOKEN_RESOURCE_ENVIRONMENTS = ("azure", "gcp")

# Presence rules: a field is required (non-empty), optional, or must not be given.
_REQUIRED, _OPTIONAL, _FORBIDDEN = "required", "optional", "forbidden"


@dataclass(frozen=True)
class _Rules:
    """One mechanism's "MongoCredential Properties"."""

    username: str
    password: str
    #: The source when authSource and the URI database give none; None: always $external.
    default_source: Optional[str]
    #: Property names the mechanism takes (canonical spelling) and their defaults.
    properties: tuple[str, ...] = ()
    property_defaults: Mapping[str, str] = field(default_factory=dict)


_SCRAM_RULES = _Rules(_REQUIRED, _REQUIRED, DEFAULT_AUTH_SOURCE)
_RULES: Mapping[Optional[str], _Rules] = {
    None: _SCRAM_RULES,  # no mechanism given: negotiated, SCRAM-SHA-256 or SCRAM-SHA-1
    SCRAM_SHA_1: _SCRAM_RULES,
    SCRAM_SHA_256: _SCRAM_RULES,
    MONGODB_X509: _Rules(_OPTIONAL, _FORBIDDEN, None),
    GSSAPI: _Rules(
        _REQUIRED,
        _OPTIONAL,
        None,
        ("SERVICE_NAME", "CANONICALIZE_HOST_NAME", "SERVICE_REALM", "SERVICE_HOST"),
        {"SERVICE_NAME": "mongodb"},
    ),
    PLAIN: _Rules(_REQUIRED, _REQUIRED, EXTERNAL),
    MONGODB_AWS: _Rules(_FORBIDDEN, _FORBIDDEN, None),
    MONGODB_OIDC: _Rules(_OPTIONAL, _FORBIDDEN, None, ("ENVIRONMENT", "TOKEN_RESOURCE")),
}


@dataclass(frozen=True, repr=False)
class Credentials:
    """A MongoCredential. ``mechanism`` None means "negotiate" (SCRAM-SHA-256 or -1);
    ``mechanism_properties`` are keyed by their canonical (upper-case) names, with the
    mechanism's defaults filled in."""

    mechanism: Optional[str]
    username: Optional[str]
    password: Optional[str] = field(default=None, repr=False)
    source: str = DEFAULT_AUTH_SOURCE
    mechanism_properties: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Neither the user nor the password: which mechanism against which database.
        return f"Credentials(mechanism={self.mechanism!r}, source={self.source!r})"


def credentials_for(options: ClientOptions) -> Optional[Credentials]:
    """The credentials the options configure, or None when they configure none.

    A user name (even empty: "a credential delimiter implies authentication") or an
    ``authMechanism`` asks for authentication; ``authSource`` or the URI database
    alone do not. Each mechanism's required and forbidden fields, its source and its
    properties are checked here, with a ConfigurationError naming what is wrong.
    """
    mechanism = options.auth_mechanism
    username = options.username
    password = options.password
    if mechanism is None and username is None:
        if password is not None:
            raise ConfigurationError("a password was given without a username")
        return None
    rules = _RULES.get(mechanism)
    if rules is None:
        raise ConfigurationError(
            f"unknown authMechanism {mechanism!r}; expected one of {', '.join(MECHANISMS)}"
        )
    what = mechanism or "authentication"

    username = _checked_presence(what, "username", username, rules.username)
    password = _checked_presence(what, "password", password, rules.password)
    source = _source(what, options, rules)
    properties = _properties(what, options.auth_mechanism_properties, rules)
    if mechanism == MONGODB_OIDC:
        _check_oidc(properties, username)
    return Credentials(mechanism, username, password, source, properties)


def _checked_presence(what: str, name: str, value: Optional[str], rule: str) -> Optional[str]:
    if rule == _REQUIRED:
        if name == "username" and not value:
            raise ConfigurationError(f"{what} needs a non-empty username")
        if value is None:
            raise ConfigurationError(f"{what} needs a {name}")
        return value
    if rule == _FORBIDDEN:
        if value is not None and (value or name == "password"):
            raise ConfigurationError(f"{what} takes no {name}{_FORBIDDEN_WHY.get(what, '')}")
        return None
    return value or None  # optional: an empty user name is no user name


_FORBIDDEN_WHY = {
    MONGODB_AWS: (
        " in the connection string or the client options: AWS credentials come from the environment"
    ),
}


def _source(what: str, options: ClientOptions, rules: _Rules) -> str:
    # options.auth_source is authSource if given, else the URI database (or None).
    given = options.auth_source
    if rules.default_source is not None:
        return given or rules.default_source
    explicit = given is not None and given != options.database
    if explicit and given != EXTERNAL:
        raise ConfigurationError(
            f"{what} authenticates against '$external', not {given!r}: remove authSource"
            " or set it to $external"
        )
    return EXTERNAL


def _properties(what: str, given: Mapping[str, str], rules: _Rules) -> dict[str, str]:
    if given and not rules.properties:
        if "AWS_SESSION_TOKEN" in (key.upper() for key in given):
            raise ConfigurationError(
                f"{what} takes no AWS_SESSION_TOKEN in the connection string or the client"
                " options: AWS credentials come from the environment"
            )
        raise ConfigurationError(f"{what} takes no authMechanismProperties")
    # "Naming of mechanism properties MUST be case-insensitive."
    canonical = {name.upper(): name for name in rules.properties}
    properties = dict(rules.property_defaults)
    seen: set[str] = set()
    for key, value in given.items():
        name = canonical.get(key.upper())
        if name is None:
            raise ConfigurationError(
                f"{what} does not take the authMechanismProperties key {key!r}; it takes"
                f" {', '.join(rules.properties)}"
            )
        if name in seen:
            raise ConfigurationError(f"authMechanismProperties names {name} more than once")
        seen.add(name)
        properties[name] = value
    canonicalize = properties.get("CANONICALIZE_HOST_NAME")
    if canonicalize is not None and canonicalize not in CANONICALIZE_HOST_NAME_VALUES:
        raise ConfigurationError(
            "CANONICALIZE_HOST_NAME must be one of "
            f"{', '.join(CANONICALIZE_HOST_NAME_VALUES)}, not {canonicalize!r}"
        )
    return properties


def _check_oidc(properties: Mapping[str, str], username: Optional[str]) -> None:
    environment = properties.get("ENVIRONMENT")
    if environment is None:
        raise ConfigurationError(
            "MONGODB-OIDC needs the authMechanismProperties key ENVIRONMENT (one of "
            f"{', '.join(OIDC_ENVIRONMENTS)}); mongocore has no OIDC callback API"
        )
    if environment not in OIDC_ENVIRONMENTS:
        raise ConfigurationError(
            f"MONGODB-OIDC ENVIRONMENT must be one of {', '.join(OIDC_ENVIRONMENTS)},"
            f" not {environment!r}"
        )
    needs_resource = environment in _OIDC_TOKEN_RESOURCE_ENVIRONMENTS
    if needs_resource != ("TOKEN_RESOURCE" in properties):
        raise ConfigurationError(
            f"MONGODB-OIDC ENVIRONMENT:{environment} "
            + ("needs a TOKEN_RESOURCE" if needs_resource else "takes no TOKEN_RESOURCE")
        )
    if environment == "test" and username is not None:
        raise ConfigurationError("MONGODB-OIDC ENVIRONMENT:test takes no username")
