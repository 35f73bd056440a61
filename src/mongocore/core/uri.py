"""Connection strings: ``mongodb://`` and ``mongodb+srv://`` URIs.

Implements the Connection String spec ("General Syntax", "Userinfo", "Host
Information", "Auth Database", "Connection Options", "Repeated Keys", "Deprecated
Key Value Pairs") and the URI Options spec ("List of specified options",
"Conflicting TLS options", "directConnection URI option with multiple seeds or SRV
URI"), with the URI validation rules those refer to: Initial DNS Seedlist Discovery
(srvServiceName, srvMaxHosts), Load Balancer mode (through the SDAM configuration
check), SOCKS5 proxy options and max staleness.

No DNS lookups happen here: a ``mongodb+srv://`` URI keeps its one SRV host name
unresolved in :attr:`ConnectionString.srv_host`.

Strict mode (``warn=False``, what the client uses) raises :class:`InvalidURI` for an
invalid option value, naming the option and the value. Warn mode (``warn=True``)
follows the URI spec to the letter: an invalid value is ignored with a warning.
Either way, unknown option keys, repeated keys and deprecated keys are only
warnings, as the Connection String spec ("Keys") requires. Every warning is kept in
:attr:`ConnectionString.warnings` and logged at WARNING level on the
``mongocore.uri`` logger; a warning about an unknown key names the nearest valid
option and is also issued as an :class:`UnknownOptionWarning` (a typo such as
``retryWrite`` must not pass unnoticed; see :mod:`mongocore.core.option_names`).

Secrets (the password, ``tlsCertificateKeyFilePassword``, ``proxyPassword``,
credential-like ``authMechanismProperties``) never appear in a repr, a warning or an
error message.
"""

from __future__ import annotations

import logging
import re
import types
from collections.abc import Mapping, Sequence
from typing import Any, Callable, NamedTuple, Optional

from bson.codec_options import DatetimeConversion

from mongocore.core.address import DEFAULT_PORT, Address
from mongocore.core.deferred_dataclass import dataclass
from mongocore.core.description.settings import DEFAULT_HEARTBEAT_FREQUENCY_MS, check_configuration
from mongocore.core.option_names import (
    NOT_SUPPORTED,
    UnknownOptionWarning,
    nearest_name,
    warn_unknown_option,
)
from mongocore.errors import ConfigurationError, InvalidURI

__all__ = [
    "DEPRECATED_OPTIONS",
    "OPTIONS",
    "SCHEME",
    "SRV_SCHEME",
    "URI_OPTION_SPELLINGS",
    "ConnectionString",
    "OptionSpec",
    "UnknownOptionWarning",
    "canonical_option_name",
    "check_options",
    "parse_uri",
    "redact_options",
    "validate_option",
]

_log = logging.getLogger("mongocore.uri")

SCHEME = "mongodb"
SRV_SCHEME = "mongodb+srv"

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
# The handshake spec's limit on the client application name.
APP_NAME_MAX_BYTES = 128

AUTH_MECHANISMS = (
    "SCRAM-SHA-1",
    "SCRAM-SHA-256",
    "MONGODB-X509",
    "GSSAPI",
    "PLAIN",
    "MONGODB-AWS",
    "MONGODB-OIDC",
)
READ_PREFERENCE_MODES = (
    "primary",
    "primaryPreferred",
    "secondary",
    "secondaryPreferred",
    "nearest",
)
SERVER_MONITORING_MODES = ("stream", "poll", "auto")
KNOWN_COMPRESSORS = ("snappy", "zlib", "zstd")

# "Conflicting TLS options": each pair may not appear together.
_TLS_CONFLICTS = (
    ("tlsInsecure", "tlsAllowInvalidCertificates"),
    ("tlsInsecure", "tlsAllowInvalidHostnames"),
    ("tlsInsecure", "tlsDisableOCSPEndpointCheck"),
    ("tlsInsecure", "tlsDisableCertificateRevocationCheck"),
    ("tlsAllowInvalidCertificates", "tlsDisableOCSPEndpointCheck"),
    ("tlsAllowInvalidCertificates", "tlsDisableCertificateRevocationCheck"),
    ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck"),
)
_PROXY_OPTIONS = ("proxyHost", "proxyPort", "proxyUsername", "proxyPassword")

# authMechanismProperties whose values are credentials (e.g. AWS_SESSION_TOKEN).
_SECRET_PROPERTY = re.compile(r"SECRET|PASSWORD|_TOKEN\Z", re.IGNORECASE)


class _InvalidValue(Exception):
    """An option value failed validation; the message names the option (and value)."""


def _show(value: object) -> str:
    """A value as shown in messages: its repr, shortened when very long."""
    if isinstance(value, str) and len(value) > 80:
        value = value[:77] + "..."
    return repr(value)


# --- value validators ----------------------------------------------------------
# Each takes (option name, value, notes) and returns the typed value or raises
# _InvalidValue. URI values arrive as str; keyword arguments may also arrive typed.
# ``notes`` collects non-fatal warnings (e.g. an unknown compressor name).

Validator = Callable[[str, object, list[str]], object]


def _boolean(name: str, value: object, notes: list[str]) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _InvalidValue(f"{name} must be 'true' or 'false', not {_show(value)}")


def _parse_int(value: object) -> Optional[int]:
    """An int from an int (not bool) or a decimal string; None if it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value) and len(value) <= 24:
        return int(value)
    return None


def _integer(
    minimum: int,
    maximum: int = _INT32_MAX,
    *,
    also: tuple[int, ...] = (),
    description: Optional[str] = None,
) -> Validator:
    if description is None:
        if maximum in (_INT32_MAX, _INT64_MAX):
            description = f"an integer >= {minimum}"
        else:
            description = f"an integer from {minimum} to {maximum}"

    def validate(name: str, value: object, notes: list[str]) -> int:
        number = _parse_int(value)
        if number is None or not (number in also or minimum <= number <= maximum):
            if number is not None and number > maximum:
                raise _InvalidValue(
                    f"{name} must be {description} (at most {maximum}), not {_show(value)}"
                )
            raise _InvalidValue(f"{name} must be {description}, not {_show(value)}")
        return number

    return validate


def _string(*, non_empty: bool = True, secret: bool = False) -> Validator:
    def validate(name: str, value: object, notes: list[str]) -> str:
        if not isinstance(value, str):
            shown = "" if secret else f", not {_show(value)}"
            raise _InvalidValue(f"{name} must be a string{shown}")
        if non_empty and not value:
            raise _InvalidValue(f"{name} must be a non-empty string, not ''")
        return value

    return validate


def _choice(choices: Sequence[str]) -> Validator:
    allowed = ", ".join(repr(c) for c in choices)

    def validate(name: str, value: object, notes: list[str]) -> str:
        if isinstance(value, str) and value in choices:
            return value
        raise _InvalidValue(f"{name} must be one of {allowed}, not {_show(value)}")

    return validate


def _app_name(name: str, value: object, notes: list[str]) -> str:
    text = _string(non_empty=False)(name, value, notes)
    assert isinstance(text, str)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > APP_NAME_MAX_BYTES:
        raise _InvalidValue(
            f"{name} must be at most {APP_NAME_MAX_BYTES} bytes in UTF-8, "
            f"not {_show(text)} ({size} bytes)"
        )
    return text


def _key_value_pairs(name: str, value: object, *, secret_values: bool) -> dict[str, str]:
    """``k1:v1,k2:v2``; the key ends at the first ':' so values may contain ':'."""
    if isinstance(value, Mapping):
        pairs: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key or not isinstance(item, str):
                raise _InvalidValue(f"{name} must map non-empty string keys to strings")
            pairs[key] = item
        return pairs
    if not isinstance(value, str):
        raise _InvalidValue(f"{name} must be a string of KEY:value pairs or a mapping")
    pairs = {}
    if value == "":
        return pairs
    for position, item in enumerate(value.split(","), 1):
        key, colon, item_value = item.partition(":")
        if not colon or not key:
            # Values may be credentials: name the position, never the text.
            shown = "" if secret_values else f", not {_show(value)}"
            raise _InvalidValue(
                f"{name} must be comma-separated KEY:value pairs (item {position} "
                f"has no key or no ':'){shown}"
            )
        if key in pairs:
            raise _InvalidValue(f"{name} names the key {key!r} more than once")
        pairs[key] = item_value
    return pairs


def _auth_mechanism_properties(name: str, value: object, notes: list[str]) -> dict[str, str]:
    return _key_value_pairs(name, value, secret_values=True)


def _tag_set(name: str, value: object, notes: list[str]) -> dict[str, str]:
    """One readPreferenceTags occurrence; the empty string is the empty tag set."""
    return _key_value_pairs(name, value, secret_values=False)


def _compressors(name: str, value: object, notes: list[str]) -> list[str]:
    if isinstance(value, str):
        items = [] if value == "" else value.split(",")
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        raise _InvalidValue(f"{name} must be a comma-separated list of names, not {_show(value)}")
    result: list[str] = []
    for item in items:
        if item in KNOWN_COMPRESSORS:
            if item not in result:
                result.append(item)
        else:
            # The compression spec: an unsupported compressor is skipped, not fatal.
            notes.append(f"unsupported compressor {item!r} in {name}; ignored")
    return result


def _write_concern_w(name: str, value: object, notes: list[str]) -> object:
    number = _parse_int(value)
    if number is not None:
        if number < 0:
            raise _InvalidValue(
                f"{name} must be a non-negative integer or a tag name, not {_show(value)}"
            )
        return number
    if isinstance(value, str) and value:
        return value
    raise _InvalidValue(f"{name} must be a non-negative integer or a tag name, not {_show(value)}")


# RFC 6335 section 5.1: 1-15 characters, letters, digits and hyphens, at least one
# letter, no leading, trailing or doubled hyphen.
_SERVICE_NAME = re.compile(r"(?=.{1,62}\Z)(?=.*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\Z")


def _srv_service_name(name: str, value: object, notes: list[str]) -> str:
    if isinstance(value, str) and _SERVICE_NAME.match(value):
        return value
    raise _InvalidValue(f"{name} must be a valid SRV service name (RFC 6335), not {_show(value)}")


# Codec options (pymongo's URI options of the same names; mongocore.core.codec builds the
# CodecOptions from them).
UUID_REPRESENTATIONS = ("unspecified", "standard", "pythonLegacy", "javaLegacy", "csharpLegacy")
UNICODE_DECODE_ERROR_HANDLERS = (
    "strict",
    "replace",
    "ignore",
    "backslashreplace",
    "surrogateescape",
)


def _datetime_conversion(name: str, value: object, notes: list[str]) -> object:
    """A DatetimeConversion, its name ("DATETIME_AUTO") or its number."""
    try:
        if isinstance(value, DatetimeConversion):
            return value
        if isinstance(value, str):
            return DatetimeConversion(int(value)) if value.isdigit() else DatetimeConversion[value]
        if isinstance(value, int) and not isinstance(value, bool):
            return DatetimeConversion(value)
    except (KeyError, ValueError):
        pass
    names = ", ".join(repr(c.name) for c in DatetimeConversion)
    raise _InvalidValue(f"{name} must be one of {names}, not {_show(value)}")


class OptionSpec(NamedTuple):
    """One supported option: its canonical name and how its value is validated."""

    name: str
    validate: Validator
    secret: bool = False
    #: Repeated keys build a list, in URI order (readPreferenceTags).
    repeatable: bool = False


_timeout = _integer(0)

#: Every supported option, keyed by its canonical (URI Options spec) spelling.
OPTIONS: Mapping[str, OptionSpec] = types.MappingProxyType(
    {
        spec.name: spec
        for spec in (
            OptionSpec("appname", _app_name),
            OptionSpec("authMechanism", _choice(AUTH_MECHANISMS)),
            OptionSpec("authMechanismProperties", _auth_mechanism_properties),
            OptionSpec("authSource", _string()),
            OptionSpec("compressors", _compressors),
            OptionSpec("connectTimeoutMS", _timeout),
            OptionSpec("datetime_conversion", _datetime_conversion),
            OptionSpec("directConnection", _boolean),
            OptionSpec("enableOverloadRetargeting", _boolean),
            OptionSpec("heartbeatFrequencyMS", _integer(500)),
            OptionSpec("journal", _boolean),
            OptionSpec("loadBalanced", _boolean),
            OptionSpec("localThresholdMS", _integer(0)),
            OptionSpec("maxAdaptiveRetries", _integer(0)),
            OptionSpec("maxConnecting", _integer(1)),
            OptionSpec("maxIdleTimeMS", _timeout),
            OptionSpec("maxPoolSize", _integer(0)),
            OptionSpec(
                "maxStalenessSeconds",
                _integer(90, also=(-1,), description="-1 or an integer >= 90"),
            ),
            OptionSpec("minPoolSize", _integer(0)),
            OptionSpec("proxyHost", _string()),
            OptionSpec("proxyPassword", _string(secret=True), secret=True),
            OptionSpec("proxyPort", _integer(1, 65535)),
            OptionSpec("proxyUsername", _string()),
            OptionSpec("readConcernLevel", _string()),
            OptionSpec("readPreference", _choice(READ_PREFERENCE_MODES)),
            OptionSpec("readPreferenceTags", _tag_set, repeatable=True),
            OptionSpec("replicaSet", _string()),
            OptionSpec("retryReads", _boolean),
            OptionSpec("retryWrites", _boolean),
            OptionSpec("serverMonitoringMode", _choice(SERVER_MONITORING_MODES)),
            OptionSpec("serverSelectionTimeoutMS", _integer(1)),
            OptionSpec("socketTimeoutMS", _timeout),
            OptionSpec("srvMaxHosts", _integer(0)),
            OptionSpec("srvServiceName", _srv_service_name),
            OptionSpec("timeoutMS", _timeout),
            OptionSpec("tls", _boolean),
            OptionSpec("tlsAllowInvalidCertificates", _boolean),
            OptionSpec("tlsAllowInvalidHostnames", _boolean),
            OptionSpec("tlsCAFile", _string()),
            OptionSpec("tlsCertificateKeyFile", _string()),
            OptionSpec("tlsCertificateKeyFilePassword", _string(secret=True), secret=True),
            OptionSpec("tlsDisableCertificateRevocationCheck", _boolean),
            OptionSpec("tlsDisableOCSPEndpointCheck", _boolean),
            OptionSpec("tlsInsecure", _boolean),
            OptionSpec("tz_aware", _boolean),
            OptionSpec("unicode_decode_error_handler", _choice(UNICODE_DECODE_ERROR_HANDLERS)),
            OptionSpec("uuidRepresentation", _choice(UUID_REPRESENTATIONS)),
            OptionSpec("w", _write_concern_w),
            OptionSpec("waitQueueTimeoutMS", _timeout),
            OptionSpec("wTimeoutMS", _integer(0, _INT64_MAX)),
            OptionSpec("zlibCompressionLevel", _integer(-1, 9)),
        )
    }
)

#: Renamed keys still accepted ("Deprecated Key Value Pairs"): old name -> new name.
DEPRECATED_OPTIONS: Mapping[str, str] = types.MappingProxyType(
    {
        "j": "journal",
        "wtimeout": "wTimeoutMS",
        "secondaryAcceptableLatencyMS": "localThresholdMS",
    }
)

# "ssl" is an equal alias of "tls" (not deprecated): all instances must agree.
_SSL = "ssl"

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower_key(key: str) -> str:
    """Keys are normalized by lower-casing A-Z only; other characters stay as they are."""
    return key.translate(_ASCII_LOWER)


_BY_LOWER: dict[str, str] = {_lower_key(name): name for name in OPTIONS}
_DEPRECATED_BY_LOWER: dict[str, str] = {_lower_key(name): name for name in DEPRECATED_OPTIONS}

#: Every key a connection string accepts -> the name to suggest for a typo of it:
#: canonical names as they are, ``ssl`` as itself (an equal alias), a deprecated key
#: as its replacement.
URI_OPTION_SPELLINGS: Mapping[str, str] = types.MappingProxyType(
    {**{name: name for name in OPTIONS}, _SSL: _SSL, **DEPRECATED_OPTIONS}
)


def canonical_option_name(key: str) -> Optional[str]:
    """The canonical spelling of a supported option key (case-insensitive), or None.

    ``ssl`` maps to ``tls``; deprecated keys are not mapped (see DEPRECATED_OPTIONS).
    """
    lower = _lower_key(key)
    if lower == _SSL:
        return "tls"
    return _BY_LOWER.get(lower)


def validate_option(name: str, value: object) -> Any:
    """Validate one option value given outside a URI (``name`` matched case-insensitively).

    Accepts the URI string form or the typed value (``True``, ``100``, a list of
    dicts for readPreferenceTags). Raises ConfigurationError naming the option and,
    unless the option is a secret, the value.
    """
    canonical = name if name in OPTIONS else canonical_option_name(name)
    if canonical is None:
        suggestion = nearest_name(name, URI_OPTION_SPELLINGS, normalize=_lower_key)
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        raise ConfigurationError(f"unknown option {name!r}{hint}")
    name, spec = canonical, OPTIONS[canonical]
    notes: list[str] = []
    try:
        if spec.repeatable:
            items = value if isinstance(value, (list, tuple)) else [value]
            result: Any = [spec.validate(name, item, notes) for item in items]
        else:
            result = spec.validate(name, value, notes)
    except _InvalidValue as exc:
        raise ConfigurationError(str(exc)) from None
    for note in notes:
        _log.warning("%s", note)
    return result


# --- the parsed connection string ----------------------------------------------


@dataclass(frozen=True, repr=False)
class ConnectionString:
    """A parsed connection string. ``options`` holds validated, typed values keyed by
    canonical option name, only for options the URI actually gave."""

    scheme: str
    is_srv: bool
    hosts: tuple[Address, ...]
    srv_host: Optional[str]
    username: Optional[str]
    password: Optional[str]
    database: Optional[str]
    options: Mapping[str, Any]
    warnings: tuple[str, ...] = ()
    #: Keys (as written) that are not supported options and were ignored.
    unknown_options: tuple[str, ...] = ()
    #: Options whose invalid values were ignored (warn mode only), named as in the
    #: warning: the canonical name, or the alias the URI used ("ssl", "j").
    invalid_options: tuple[str, ...] = ()

    def __repr__(self) -> str:
        where = f"srv_host={self.srv_host!r}" if self.is_srv else f"hosts={list(self.hosts)!r}"
        return (
            f"ConnectionString(scheme={self.scheme!r}, {where}, username={self.username!r}, "
            f"database={self.database!r}, options={redact_options(self.options)!r}, "
            f"warnings={list(self.warnings)!r})"
        )


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` fit for display: secret values replaced by '***'."""
    shown: dict[str, Any] = {}
    for key, value in options.items():
        spec = OPTIONS.get(key)
        if spec is not None and spec.secret:
            shown[key] = "***"
        elif key == "authMechanismProperties" and isinstance(value, Mapping):
            shown[key] = {k: "***" if _SECRET_PROPERTY.search(k) else v for k, v in value.items()}
        else:
            shown[key] = value
    return shown


# --- parsing -----------------------------------------------------------------------

_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _decode(text: str, what: str) -> str:
    """Percent-decode ``text`` (UTF-8); ``what`` names the part in error messages."""
    if "%" not in text:
        return text
    if _BAD_PERCENT.search(text):
        raise InvalidURI(
            f"{what} has a '%' that is not followed by two hex digits: "
            "percent-encode a literal '%' as %25"
        )
    import urllib.parse  # noqa: PLC0415 - only percent-encoded text needs it

    try:
        return urllib.parse.unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise InvalidURI(f"{what} is not valid UTF-8 once percent-decoded") from None


# Characters that cannot appear in a host name (after percent-decoding).
_BAD_HOST_CHARS = re.compile(r"[\x00-\x20\x7f@/\\?#\[\]%,:<>\"{}|^`]")
_PORT = re.compile(r"[0-9]{1,5}")


def _parse_port(text: str, host_text: str) -> int:
    if _PORT.fullmatch(text):
        port = int(text)
        if 1 <= port <= 65535:
            return port
    raise InvalidURI(f"port must be an integer from 1 to 65535, not {_show(text)} in {host_text!r}")


def _normalize_ipv6(literal: str) -> str:
    """The compressed, lower-case form, so one server has one address however it is
    written. IPv4-mapped addresses keep the dotted quad on every Python version."""
    import ipaddress  # noqa: PLC0415 - only IP literals need it

    ip = ipaddress.IPv6Address(literal)
    mapped = ip.ipv4_mapped
    if mapped is not None and ip.scope_id is None:
        return f"::ffff:{mapped}"
    return str(ip).lower()


def _parse_host(raw: str) -> Address:
    """One host identifier: hostname[:port], IPv4[:port], [IPv6][:port] or a socket path."""
    if not raw:
        raise InvalidURI("the host list has an empty host (check for stray commas)")
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0:
            raise InvalidURI(f"an IPv6 address must end with ']': {raw!r}")
        literal = _decode(raw[1:end], "an IPv6 address")
        rest = raw[end + 1 :]
        try:
            ip = _normalize_ipv6(literal)
        except ValueError:
            raise InvalidURI(f"{literal!r} inside '[' and ']' is not an IPv6 address") from None
        if rest == "":
            return Address(ip, DEFAULT_PORT)
        if not rest.startswith(":"):
            raise InvalidURI(f"unexpected characters after the IPv6 address in {raw!r}")
        return Address(ip, _parse_port(rest[1:], raw))
    decoded = _decode(raw, "a host")
    if "/" in decoded:
        # Only a percent-encoded path can contain '/', and it must name a socket.
        if not decoded.endswith(".sock"):
            raise InvalidURI(
                f"host {decoded!r} looks like a path, but UNIX domain socket paths must end "
                "in '.sock'"
            )
        return Address(decoded, None)
    host, colon, port_text = raw.rpartition(":")
    if not colon:
        host, port_text = raw, ""
    host = _decode(host, "a host")
    if not host:
        raise InvalidURI(f"missing host name in {raw!r}")
    if ":" in host:
        raise InvalidURI(
            f"invalid host {raw!r}: an IPv6 address must be enclosed in '[' and ']', "
            "and a host has at most one ':port'"
        )
    if _BAD_HOST_CHARS.search(host):
        raise InvalidURI(f"invalid character in host name {host!r}")
    port = _parse_port(port_text, raw) if colon else DEFAULT_PORT
    return Address(host.lower(), port)


def _parse_userinfo(userinfo: str) -> tuple[str, Optional[str]]:
    # Never echo userinfo in a message: it holds the password.
    advice = (
        "the username and password in a connection string must be percent-encoded "
        "(RFC 3986), e.g. '@' as %40, ':' as %3A, '/' as %2F and '%' as %25"
    )
    if "@" in userinfo or userinfo.count(":") > 1 or re.search(r"[\[\]#]", userinfo):
        raise InvalidURI(advice)
    if _BAD_PERCENT.search(userinfo):
        raise InvalidURI(advice)
    user_text, colon, password_text = userinfo.partition(":")
    username = _decode(user_text, "the username")
    if not username:
        raise InvalidURI("the username in a connection string must not be empty")
    password = _decode(password_text, "the password") if colon else None
    return username, password


_BAD_DATABASE_CHARS = re.compile(r"[/\\ \"$\x00]")
_WITHHELD = (
    "percent-encode any '/', '?', '@' or ':' in the username and password "
    "(details withheld: they may include part of the password)"
)


def _split(uri: str) -> tuple[str, str, Optional[str], Optional[str]]:
    """Scheme, host information, database text, option text (undecoded)."""
    for scheme in (SRV_SCHEME, SCHEME):
        prefix = scheme + "://"
        if uri.startswith(prefix):
            rest = uri[len(prefix) :]
            break
    else:
        raise InvalidURI(f"a connection string must begin with '{SCHEME}://' or '{SRV_SCHEME}://'")
    # Host information ends at the first '/' (before the auth database) or, as the
    # delimiting slash is optional, at the first '?'.
    ends = [i for i in (rest.find("/"), rest.find("?")) if i >= 0]
    if not ends:
        return scheme, rest, None, None
    end = min(ends)
    hostinfo, tail = rest[:end], rest[end:]
    database: Optional[str] = None
    if tail.startswith("/"):
        database, question, query = tail[1:].partition("?")
        return scheme, hostinfo, database, query if question else None
    return scheme, hostinfo, database, tail[1:]


def parse_uri(uri: str, *, warn: bool = False) -> ConnectionString:
    """Parse and validate a connection string.

    With ``warn=False`` an invalid option value raises InvalidURI; with ``warn=True``
    it is ignored with a warning. Structural errors and forbidden option
    combinations raise in both modes.
    """
    return _parse(uri, warn=warn, check=True)


def _parse(uri: str, *, warn: bool, check: bool) -> ConnectionString:
    if not isinstance(uri, str):
        raise InvalidURI(f"a connection string must be a str, not {type(uri).__name__}")
    try:
        uri.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidURI("the connection string is not valid Unicode text") from None
    scheme, hostinfo, database_text, query = _split(uri)
    is_srv = scheme == SRV_SCHEME

    userinfo, at, host_text = hostinfo.rpartition("@")
    username: Optional[str] = None
    password: Optional[str] = None
    if at:
        username, password = _parse_userinfo(userinfo)
    if not host_text:
        raise InvalidURI("a connection string must name at least one host")
    # An unencoded '/' or '?' in a password ends the host list early, and the rest
    # of the userinfo lands in the hosts, database or options: then messages about
    # those parts must not quote them.
    may_hold_password = not at and "@" in (database_text or "") + (query or "")

    hosts: tuple[Address, ...] = ()
    srv_host: Optional[str] = None
    raw_hosts = host_text.split(",")
    try:
        if is_srv:
            if len(raw_hosts) != 1:
                raise InvalidURI(f"a {SRV_SCHEME}:// connection string must name exactly one host")
            srv_host = _parse_srv_host(raw_hosts[0])
        else:
            hosts = tuple(_parse_host(raw) for raw in raw_hosts)
    except InvalidURI:
        if not may_hold_password:
            raise
        raise InvalidURI(f"the host list is invalid; {_WITHHELD}") from None

    database: Optional[str] = None
    if database_text:
        database = _decode(database_text, "the database name")
        bad = _BAD_DATABASE_CHARS.search(database)
        if bad:
            shown = _WITHHELD if may_hold_password else f"not {database!r}"
            raise InvalidURI(
                f"a database name cannot contain {bad.group()!r} (UNIX socket paths must "
                f"be percent-encoded); {shown}"
            )

    parsed = _parse_options(query or "", warn=warn, quote_keys=not may_hold_password)
    if check:
        check_options(parsed.options, hosts=hosts, is_srv=is_srv)
    for message in parsed.warnings:
        _log.warning("%s", message)
    for message in parsed.unknown_warnings:
        warn_unknown_option(message)
    return ConnectionString(
        scheme=scheme,
        is_srv=is_srv,
        hosts=hosts,
        srv_host=srv_host,
        username=username,
        password=password,
        database=database,
        options=types.MappingProxyType(parsed.options),
        warnings=tuple(parsed.warnings),
        unknown_options=tuple(parsed.unknown),
        invalid_options=tuple(parsed.invalid),
    )


def _parse_srv_host(raw: str) -> str:
    if raw.startswith("[") or ":" in raw:
        raise InvalidURI(
            f"a {SRV_SCHEME}:// connection string must name a host name without a port, not {raw!r}"
        )
    address = _parse_host(raw)
    if address.port is None:
        raise InvalidURI(f"a {SRV_SCHEME}:// connection string cannot name a UNIX domain socket")
    return address.host


class _ParsedOptions(NamedTuple):
    options: dict[str, Any]
    warnings: list[str]
    unknown: list[str]
    invalid: list[str]
    #: The warnings about unknown keys, also issued as UnknownOptionWarning.
    unknown_warnings: list[str]


def _parse_options(query: str, *, warn: bool, quote_keys: bool = True) -> _ParsedOptions:
    options: dict[str, Any] = {}
    warnings: list[str] = []
    unknown: list[str] = []
    invalid: list[str] = []
    unknown_warnings: list[str] = []
    tls_values: list[bool] = []
    deprecated: dict[str, tuple[str, Any]] = {}  # new name -> (old name, value)
    given: dict[str, int] = {}

    for pair in query.split("&"):
        if pair == "":
            continue  # tolerate '?&a=1' and a trailing '&'
        raw_key, equals, raw_value = pair.partition("=")
        key = _decode(raw_key, "a connection option name")
        if not equals:
            if not quote_keys:
                raise InvalidURI(f"a connection option has no '=' and value; {_WITHHELD}")
            raise InvalidURI(f"connection option {key!r} has no value: write {key}=<value>")
        if not key:
            raise InvalidURI("a connection option has an empty name")
        lower = _lower_key(key)
        old_name = _DEPRECATED_BY_LOWER.get(lower)
        name = canonical_option_name(key)
        if name is None and old_name is None:
            message = _unknown_key_message(key, quote_keys=quote_keys)
            warnings.append(message)
            unknown_warnings.append(message)
            unknown.append(key)
            continue
        if name is None:
            assert old_name is not None
            name = DEPRECATED_OPTIONS[old_name]
        spec = OPTIONS[name]
        # Messages name the key as the user knows it: "ssl", "j", or the canonical name.
        shown = old_name or ("ssl" if lower == _SSL else name)
        value_text = _decode(raw_value, f"the value of {shown}")
        given[name] = given.get(name, 0) + 1
        if name in _PROXY_OPTIONS and given[name] > 1:
            # The SOCKS5 spec: a repeated proxy option is an error, not a warning.
            raise InvalidURI(f"{name} must not be given more than once")

        notes: list[str] = []
        try:
            value = spec.validate(shown, value_text, notes)
        except _InvalidValue as exc:
            if not warn:
                raise InvalidURI(str(exc)) from None
            warnings.append(f"{exc}; ignored")
            invalid.append(shown)
            continue
        warnings.extend(notes)

        if old_name is not None:
            deprecated[name] = (old_name, value)
        elif name == "tls":
            tls_values.append(bool(value))
            options[name] = value
        elif spec.repeatable:
            options.setdefault(name, []).append(value)
        else:
            if name in options:
                warnings.append(f"{name} is given more than once; the last value is used")
            options[name] = value

    if len(set(tls_values)) > 1:
        raise InvalidURI("all instances of tls and ssl in a connection string must agree")
    for name, (old_name, value) in deprecated.items():
        if name in options:
            warnings.append(
                f"deprecated option {old_name!r} is ignored because {name!r} is also given"
            )
        else:
            warnings.append(f"option {old_name!r} is deprecated; use {name!r} instead")
            options[name] = value
    return _ParsedOptions(options, warnings, unknown, invalid, unknown_warnings)


def _unknown_key_message(key: str, *, quote_keys: bool) -> str:
    """The warning for an unknown key, naming the nearest valid option if one is close.

    Never echoes the value (an unknown key may be a misspelt secret option), and
    says nothing about the key when it may be part of a displaced password.
    """
    if not quote_keys:
        return f"an unknown connection string option is ignored; {_WITHHELD}"
    reason = NOT_SUPPORTED.get(_lower_key(key))
    if reason is not None:
        return f"unsupported connection string option {key!r} ({reason}); ignored"
    suggestion = nearest_name(key, URI_OPTION_SPELLINGS, normalize=_lower_key)
    hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
    return f"unknown connection string option {key!r}{hint}; ignored"


# --- option combinations ---------------------------------------------------------


def check_options(
    options: Mapping[str, Any],
    *,
    hosts: Sequence[Address],
    is_srv: bool,
    tls_conflicts: bool = True,
) -> None:
    """Raise ConfigurationError for option combinations the specs forbid.

    ``options`` maps canonical names to typed values, holding only options that were
    given. ``tls_conflicts=False`` skips the rules about which TLS options may
    appear together (for callers that no longer know what was given).
    """
    if tls_conflicts:
        for first, second in _TLS_CONFLICTS:
            if first in options and second in options:
                raise ConfigurationError(f"{first} and {second} cannot be given together")
        if options.get("tls") is False:
            others = sorted(k for k in options if k.startswith("tls") and k != "tls")
            if others:
                raise ConfigurationError(
                    f"tls=false contradicts the TLS options also given: {', '.join(others)}"
                )

    # Initial DNS Seedlist Discovery, "URI Validation".
    if not is_srv:
        for name in ("srvServiceName", "srvMaxHosts"):
            if name in options:
                raise ConfigurationError(f"{name} can only be used with {SRV_SCHEME}://")
    if options.get("srvMaxHosts", 0) > 0:
        if "replicaSet" in options:
            raise ConfigurationError("srvMaxHosts > 0 cannot be used with replicaSet")
        if options.get("loadBalanced"):
            raise ConfigurationError("srvMaxHosts > 0 cannot be used with loadBalanced=true")

    # SDAM "Allowed configuration combinations" and Load Balancer URI validation.
    check_configuration(
        tuple(hosts),
        direct_connection=options.get("directConnection"),
        replica_set=options.get("replicaSet"),
        load_balanced=bool(options.get("loadBalanced", False)),
        srv=is_srv,
        heartbeat_frequency_ms=options.get("heartbeatFrequencyMS", DEFAULT_HEARTBEAT_FREQUENCY_MS),
    )

    # Server selection, "Components of a read preference": mode primary takes
    # neither tags nor a max staleness (an absent mode is primary).
    mode = options.get("readPreference", "primary")
    if mode == "primary":
        tags = options.get("readPreferenceTags")
        if tags and tags != [{}]:
            raise ConfigurationError(
                "readPreferenceTags cannot be used with read preference mode 'primary': "
                "set readPreference to another mode"
            )
        staleness = options.get("maxStalenessSeconds")
        if staleness is not None and staleness != -1:
            raise ConfigurationError(
                "maxStalenessSeconds cannot be used with read preference mode 'primary': "
                "set readPreference to another mode"
            )

    max_pool = options.get("maxPoolSize")
    min_pool = options.get("minPoolSize")
    if max_pool and min_pool is not None and min_pool > max_pool:
        raise ConfigurationError(
            f"minPoolSize ({min_pool}) cannot be greater than maxPoolSize ({max_pool})"
        )

    if options.get("w") == 0 and options.get("journal") is True:
        raise ConfigurationError("w=0 cannot be used with journal=true")

    # SOCKS5 support, "MongoClient Configuration".
    if "proxyHost" not in options:
        given = [name for name in _PROXY_OPTIONS if name in options]
        if given:
            raise ConfigurationError(f"{', '.join(given)} cannot be used without proxyHost")
    if ("proxyUsername" in options) != ("proxyPassword" in options):
        raise ConfigurationError("proxyUsername and proxyPassword must be given together")
