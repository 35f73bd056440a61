"""Client options: every setting of a client, typed, validated, with its default.

Implements the URI Options spec's "List of specified options" as client settings,
with the defaults of the specs mongocore follows: SDAM (heartbeatFrequencyMS),
server selection 1.5 (localThresholdMS, serverSelectionTimeoutMS, read preference),
retryable writes 1.0 of 2018-03-14 (retryWrites defaults to false), retryable reads
(retryReads defaults to true), connection pooling (maxPoolSize 100, maxConnecting 2)
and the handshake spec (appname at most 128 bytes).

Build options with :meth:`ClientOptions.from_uri`; keyword arguments override the
connection string's options (the precedence the Connection String spec asks drivers
to document).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from mongocore._deferred_dataclass import dataclass, field, fields
from mongocore.core.address import Address
from mongocore.core.codec import CODEC_KEYWORDS
from mongocore.core.description.settings import (
    DEFAULT_HEARTBEAT_FREQUENCY_MS,
    DEFAULT_LOCAL_THRESHOLD_MS,
    DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
    TopologySettings,
)
from mongocore.core.option_names import NOT_SUPPORTED, nearest_name
from mongocore.core.uri import _parse
from mongocore.core.uri_checks import check_options
from mongocore.core.uri_options import (
    OPTIONS,
    URI_OPTION_SPELLINGS,
    canonical_option_name,
    lower_key,
    redact_options,
    validate_option,
)
from mongocore.errors import ConfigurationError

__all__ = ["ClientOptions", "held_value"]

DEFAULT_CONNECT_TIMEOUT_MS = 20_000
DEFAULT_MAX_POOL_SIZE = 100
DEFAULT_MAX_CONNECTING = 2
DEFAULT_SRV_SERVICE_NAME = "mongodb"
#: Client backpressure's adaptive retries are not implemented: none is what mongocore
#: does, so 0 is the only value a client takes (see _refuse_backpressure).
DEFAULT_MAX_ADAPTIVE_RETRIES = 0

#: Canonical option name -> ClientOptions attribute.
_ATTRIBUTES: Mapping[str, str] = {
    "appname": "app_name",
    "authMechanism": "auth_mechanism",
    "authMechanismProperties": "auth_mechanism_properties",
    "authSource": "auth_source",
    "compressors": "compressors",
    "connectTimeoutMS": "connect_timeout_ms",
    "datetime_conversion": "datetime_conversion",
    "directConnection": "direct_connection",
    "enableOverloadRetargeting": "enable_overload_retargeting",
    "heartbeatFrequencyMS": "heartbeat_frequency_ms",
    "journal": "journal",
    "loadBalanced": "load_balanced",
    "localThresholdMS": "local_threshold_ms",
    "maxAdaptiveRetries": "max_adaptive_retries",
    "maxConnecting": "max_connecting",
    "maxIdleTimeMS": "max_idle_time_ms",
    "maxPoolSize": "max_pool_size",
    "maxStalenessSeconds": "max_staleness_seconds",
    "minPoolSize": "min_pool_size",
    "readConcernLevel": "read_concern_level",
    "readPreference": "read_preference",
    "readPreferenceTags": "read_preference_tags",
    "replicaSet": "replica_set",
    "retryReads": "retry_reads",
    "retryWrites": "retry_writes",
    "serverMonitoringMode": "server_monitoring_mode",
    "serverSelectionTimeoutMS": "server_selection_timeout_ms",
    "socketTimeoutMS": "socket_timeout_ms",
    "srvMaxHosts": "srv_max_hosts",
    "srvServiceName": "srv_service_name",
    "timeoutMS": "timeout_ms",
    "tls": "tls",
    "tlsAllowInvalidCertificates": "tls_allow_invalid_certificates",
    "tlsAllowInvalidHostnames": "tls_allow_invalid_hostnames",
    "tlsCAFile": "tls_ca_file",
    "tlsCertificateKeyFile": "tls_certificate_key_file",
    "tlsCertificateKeyFilePassword": "tls_certificate_key_file_password",
    "tlsDisableCertificateRevocationCheck": "tls_disable_certificate_revocation_check",
    "tlsDisableOCSPEndpointCheck": "tls_disable_ocsp_endpoint_check",
    "tlsInsecure": "tls_insecure",
    "tz_aware": "tz_aware",
    "unicode_decode_error_handler": "unicode_decode_error_handler",
    "uuidRepresentation": "uuid_representation",
    "w": "w",
    "waitQueueTimeoutMS": "wait_queue_timeout_ms",
    "wTimeoutMS": "w_timeout_ms",
    "zlibCompressionLevel": "zlib_compression_level",
}

# Options whose value 0 means "no limit"; the attribute holds None for that.
_ZERO_IS_NONE = ("connectTimeoutMS", "socketTimeoutMS", "maxIdleTimeMS", "waitQueueTimeoutMS")

# Parsed and validated by the URI parser, but mongocore cannot honour them: refusing
# is safer than connecting directly when a proxy was asked for.
_UNSUPPORTED = ("proxyHost", "proxyPort", "proxyUsername", "proxyPassword")

# tlsInsecure relaxes every check these options relax one at a time.
_TLS_INSECURE_IMPLIES = (
    "tls_allow_invalid_certificates",
    "tls_allow_invalid_hostnames",
    "tls_disable_ocsp_endpoint_check",
    "tls_disable_certificate_revocation_check",
)


def _kwarg_key(key: str) -> str:
    """Keyword names match canonical names case-insensitively; snake_case works too."""
    return lower_key(key.replace("_", ""))


_CANONICAL_BY_KWARG: dict[str, str] = {_kwarg_key(name): name for name in OPTIONS}


@dataclass(frozen=True, repr=False)
class ClientOptions:
    """Every client setting, typed. Secrets are left out of the repr."""

    # Where to connect.
    hosts: tuple[Address, ...] = ()
    srv_host: Optional[str] = None
    srv_service_name: str = DEFAULT_SRV_SERVICE_NAME
    srv_max_hosts: int = 0
    # Credentials and the database named in the URI path.
    username: Optional[str] = None
    password: Optional[str] = field(default=None, repr=False)
    database: Optional[str] = None
    auth_source: Optional[str] = None
    auth_mechanism: Optional[str] = None
    auth_mechanism_properties: dict[str, str] = field(default_factory=dict)
    # Topology (SDAM) and server selection.
    direct_connection: Optional[bool] = None
    replica_set: Optional[str] = None
    load_balanced: bool = False
    heartbeat_frequency_ms: int = DEFAULT_HEARTBEAT_FREQUENCY_MS
    server_monitoring_mode: str = "auto"
    local_threshold_ms: int = DEFAULT_LOCAL_THRESHOLD_MS
    server_selection_timeout_ms: int = DEFAULT_SERVER_SELECTION_TIMEOUT_MS
    read_preference: str = "primary"
    read_preference_tags: list[dict[str, str]] = field(default_factory=list)
    max_staleness_seconds: Optional[int] = None
    # Retries.
    retry_writes: bool = False
    retry_reads: bool = True
    max_adaptive_retries: int = DEFAULT_MAX_ADAPTIVE_RETRIES
    enable_overload_retargeting: bool = False
    # Connections and the pool.
    app_name: Optional[str] = None
    connect_timeout_ms: Optional[int] = DEFAULT_CONNECT_TIMEOUT_MS
    socket_timeout_ms: Optional[int] = None
    timeout_ms: Optional[int] = None
    max_pool_size: int = DEFAULT_MAX_POOL_SIZE
    min_pool_size: int = 0
    max_idle_time_ms: Optional[int] = None
    wait_queue_timeout_ms: Optional[int] = None
    max_connecting: int = DEFAULT_MAX_CONNECTING
    compressors: list[str] = field(default_factory=list)
    zlib_compression_level: int = -1
    # TLS.
    tls: bool = False
    tls_ca_file: Optional[str] = None
    tls_certificate_key_file: Optional[str] = None
    tls_certificate_key_file_password: Optional[str] = field(default=None, repr=False)
    tls_allow_invalid_certificates: bool = False
    tls_allow_invalid_hostnames: bool = False
    tls_insecure: bool = False
    tls_disable_ocsp_endpoint_check: bool = False
    tls_disable_certificate_revocation_check: bool = False
    # Default read and write concern.
    read_concern_level: Optional[str] = None
    w: Union[int, str, None] = None
    w_timeout_ms: Optional[int] = None
    journal: Optional[bool] = None
    # Codec options (mongocore.core.codec): how documents are encoded and decoded.
    uuid_representation: Optional[str] = None
    tz_aware: bool = False
    unicode_decode_error_handler: str = "strict"
    datetime_conversion: Optional[Any] = None

    def __post_init__(self) -> None:
        if self.srv_host is not None and self.hosts:
            raise ConfigurationError("hosts and srv_host cannot both be set")
        given: dict[str, Any] = {}
        for name, attribute in _ATTRIBUTES.items():
            value = getattr(self, attribute)
            if value is None:
                continue
            validate_option(name, value)
            if value != _field_defaults()[attribute]:
                given[name] = value
        _refuse_backpressure(self.max_adaptive_retries, self.enable_overload_retargeting)
        # minPoolSize is bounded by the effective maxPoolSize, default or not.
        given["maxPoolSize"] = self.max_pool_size
        # Presence rules for TLS options are checked where presence is known
        # (parse_uri, from_uri); here the values are already the effective ones.
        check_options(given, hosts=self.hosts, is_srv=self.is_srv, tls_conflicts=False)

    @classmethod
    def from_uri(cls, uri: str, **kwargs: Any) -> ClientOptions:
        """Parse ``uri`` strictly and apply ``kwargs`` over its options.

        Keyword names are the canonical option names, case-insensitively
        (``retryWrites=True``), or the attribute names (``retry_writes=True``);
        ``username`` and ``password`` are accepted too. Values may be typed or in
        their connection-string form. An unknown keyword is a ConfigurationError (a
        typo in code is not a portable connection string).
        """
        parsed = _parse(uri, warn=False, check=False)
        given: dict[str, Any] = dict(parsed.options)
        username, password = parsed.username, parsed.password
        for key, value in kwargs.items():
            normalized = _kwarg_key(key)
            if normalized == "username":
                username = _credential("username", value)
                continue
            if normalized == "password":
                password = _credential("password", value)
                continue
            name = _CANONICAL_BY_KWARG.get(normalized) or canonical_option_name(key)
            if name is None:
                raise ConfigurationError(_unknown_keyword_message(key))
            given[name] = validate_option(name, value)

        check_options(given, hosts=parsed.hosts, is_srv=parsed.is_srv)
        unsupported = [name for name in _UNSUPPORTED if name in given]
        if unsupported:
            raise ConfigurationError(
                f"{', '.join(unsupported)}: connecting through a SOCKS5 proxy is not "
                "supported by mongocore"
            )

        attributes: dict[str, Any] = {
            "hosts": parsed.hosts,
            "srv_host": parsed.srv_host,
            "username": username,
            "password": password,
            "database": parsed.database,
            "auth_source": parsed.database,
        }
        for name, value in given.items():
            attributes[_ATTRIBUTES[name]] = _held(name, value)
        # TLS is on when asked for, for mongodb+srv:// (Initial DNS Seedlist
        # Discovery), or when any other tls* option is given; tls=false with other
        # tls* options was refused by check_options.
        if "tls" not in given:
            attributes["tls"] = parsed.is_srv or any(k.startswith("tls") for k in given)
        if given.get("tlsInsecure"):
            for attribute in _TLS_INSECURE_IMPLIES:
                attributes[attribute] = True
        return cls(**attributes)

    @property
    def is_srv(self) -> bool:
        return self.srv_host is not None

    def get_option(self, name: str) -> Any:
        """The value of an option by its connection-string name, any case (``ssl`` is
        ``tls``), as these options hold it: ``options.get_option("replicaSet")`` is
        ``options.replica_set``. KeyError for a name that is no option of a client."""
        canonical = canonical_option_name(name)
        if canonical is None or canonical not in _ATTRIBUTES:
            raise KeyError(name)
        return getattr(self, _ATTRIBUTES[canonical])

    @property
    def topology_settings(self) -> TopologySettings:
        """The SDAM and server selection settings (seeds are the URI's hosts; empty
        for mongodb+srv:// until the SRV lookup gives them, see topology_settings_for)."""
        return self.topology_settings_for(self.hosts)

    def topology_settings_for(self, seeds: Sequence[Address]) -> TopologySettings:
        """The topology settings with the given seeds (e.g. the SRV lookup's hosts)."""
        return TopologySettings(
            seeds=tuple(seeds),
            direct_connection=self.direct_connection,
            replica_set=self.replica_set,
            load_balanced=self.load_balanced,
            srv=self.is_srv,
            heartbeat_frequency_ms=self.heartbeat_frequency_ms,
            local_threshold_ms=self.local_threshold_ms,
            server_selection_timeout_ms=self.server_selection_timeout_ms,
        )

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            if not f.repr:
                continue
            value = getattr(self, f.name)
            if f.name == "auth_mechanism_properties":
                value = redact_options({"authMechanismProperties": value})[
                    "authMechanismProperties"
                ]
            parts.append(f"{f.name}={value!r}")
        return f"ClientOptions({', '.join(parts)})"


def _held(name: str, value: Any) -> Any:
    """What the attribute of canonical option ``name`` holds for a validated value:
    None where the value means "no limit"."""
    means_none = (name in _ZERO_IS_NONE and value == 0) or (
        name == "maxStalenessSeconds" and value == -1
    )
    return None if means_none else value


def held_value(name: str, value: Any) -> Any:
    """The value ``ClientOptions.get_option(name)`` returns for a client given option
    ``name`` (any case, ``ssl`` for ``tls``) with ``value``, in its connection-string
    form or typed: validated as the client validates it, None where the value means
    "no limit" (0 for connectTimeoutMS, socketTimeoutMS, maxIdleTimeMS and
    waitQueueTimeoutMS; -1 for maxStalenessSeconds). KeyError for a name that is no
    option of a client; ConfigurationError for an invalid value."""
    canonical = canonical_option_name(name)
    if canonical is None or canonical not in _ATTRIBUTES:
        raise KeyError(name)
    return _held(canonical, validate_option(canonical, value))


def _refuse_backpressure(max_adaptive_retries: int, enable_overload_retargeting: bool) -> None:
    """Client backpressure (retrying an overloaded server's errors with a budget and a
    back-off, elsewhere if retargeting) is not implemented. The connection-string
    parser takes its options, as the URI options spec asks; a client accepts only the
    values that describe what it does (no adaptive retry, no retargeting) and refuses
    the others rather than ignore them."""
    asked = []
    if max_adaptive_retries:
        asked.append(f"maxAdaptiveRetries={max_adaptive_retries}")
    if enable_overload_retargeting:
        asked.append("enableOverloadRetargeting=true")
    if asked:
        raise ConfigurationError(
            f"{', '.join(asked)}: client backpressure is not supported by mongocore;"
            " remove the option (retries follow the retryable reads and writes rules,"
            " see docs/retryability.md)"
        )


#: Keywords of :class:`mongocore.api.client.Client` that are Python objects, not
#: connection options: the client takes them before its other keywords reach
#: :meth:`ClientOptions.from_uri`. Known here so a typo of one is told its name.
CLIENT_KEYWORDS = (
    "event_listeners",
    "srv_resolver",
    "driver_info",
    "server_api",
    *CODEC_KEYWORDS.values(),
)

# Keyword spellings -> the name to suggest for a typo of them, in the two styles a
# caller may write (a deprecated URI key suggests its replacement: as keywords only
# the canonical names are accepted, as in pymongo).
_KWARG_EXTRAS = ("username", "password", *CLIENT_KEYWORDS)
_CLIENT_KEYWORDS_BY_KWARG = {_kwarg_key(name): name for name in CLIENT_KEYWORDS}
_CAMEL_SPELLINGS: Mapping[str, str] = {
    **URI_OPTION_SPELLINGS,
    **{name: name for name in _KWARG_EXTRAS},
}
_SNAKE_SPELLINGS: Mapping[str, str] = {
    **{spelling: _ATTRIBUTES.get(name, name) for spelling, name in URI_OPTION_SPELLINGS.items()},
    **{name: name for name in _KWARG_EXTRAS},
}


def _unknown_keyword_message(key: str) -> str:
    """The error for an unknown keyword option, naming the nearest valid one (in the
    caller's style: ``retry_writes`` for ``retry_write``, ``retryWrites`` for
    ``retryWrite``)."""
    reason = NOT_SUPPORTED.get(lower_key(key))
    if reason is not None:
        return f"unknown client option {key!r}: {reason}"
    if _kwarg_key(key) in _CLIENT_KEYWORDS_BY_KWARG:
        client_keyword = _CLIENT_KEYWORDS_BY_KWARG[_kwarg_key(key)]
        return (
            f"unknown client option {key!r}: {client_keyword!r} is a keyword of Client, "
            "not a connection option"
        )
    spellings = _SNAKE_SPELLINGS if "_" in key else _CAMEL_SPELLINGS
    suggestion = nearest_name(key, spellings, normalize=_kwarg_key)
    hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
    return f"unknown client option {key!r}{hint}"


def _credential(name: str, value: object) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    raise ConfigurationError(f"{name} must be a string")


_DEFAULTS: dict[str, Any] = {}


def _field_defaults() -> dict[str, Any]:
    """Each attribute's default, read from the dataclass fields on first use (at
    import time ClientOptions is not yet processed: mongocore._deferred_dataclass)."""
    if not _DEFAULTS:
        from dataclasses import MISSING  # noqa: PLC0415 - loaded by fields() already

        defaults: dict[str, Any] = {}
        for f in fields(ClientOptions):
            if f.default is not MISSING:
                defaults[f.name] = f.default
            elif f.default_factory is not MISSING:
                defaults[f.name] = f.default_factory()
        _DEFAULTS.update(defaults)
    return _DEFAULTS
