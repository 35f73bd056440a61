"""Connection string options: the supported keys, their values, their spellings.

Implements the URI Options spec ("List of specified options": every option with the
values it takes) and the Connection String spec's rules on keys ("Keys": matched
case-insensitively; "Deprecated Key Value Pairs"), with the values of the options
other specs add (Initial DNS Seedlist Discovery: srvServiceName, srvMaxHosts; SOCKS5
proxy options; the handshake's appname limit; the Compression spec's compressors).

:data:`OPTIONS` is the table: each :class:`OptionSpec` names an option and validates
its value. :func:`validate_option` checks one value given outside a connection string;
the parser (:mod:`mongocore.core.uri`) and the combination checks
(:mod:`mongocore.core.uri_checks`) use the same table. Non-fatal notes (an unknown
compressor) are logged at WARNING on the ``mongocore.uri`` logger. A secret option's
value never appears in a message, and :func:`redact_options` hides it for display.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping, Sequence
from typing import Any, Callable, NamedTuple, Optional

from bson.codec_options import DatetimeConversion

from mongocore.core.lazy_logger import get_logger
from mongocore.core.option_names import nearest_name
from mongocore.errors import ConfigurationError

__all__ = [
    "APP_NAME_MAX_BYTES",
    "AUTH_MECHANISMS",
    "DEPRECATED_BY_LOWER",
    "DEPRECATED_OPTIONS",
    "KNOWN_COMPRESSORS",
    "OPTIONS",
    "PROXY_OPTIONS",
    "READ_PREFERENCE_MODES",
    "SERVER_MONITORING_MODES",
    "SSL_ALIAS",
    "UNICODE_DECODE_ERROR_HANDLERS",
    "URI_OPTION_SPELLINGS",
    "UUID_REPRESENTATIONS",
    "InvalidValue",
    "OptionSpec",
    "Validator",
    "canonical_option_name",
    "lower_key",
    "redact_options",
    "show_value",
    "validate_option",
]

_log = get_logger("mongocore.uri")

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

#: SOCKS5 support: each may be given once, and none of them without proxyHost.
PROXY_OPTIONS = ("proxyHost", "proxyPort", "proxyUsername", "proxyPassword")

# authMechanismProperties whose values are credentials (e.g. AWS_SESSION_TOKEN).
_SECRET_PROPERTY = re.compile(r"SECRET|PASSWORD|_TOKEN\Z", re.IGNORECASE)


class InvalidValue(Exception):
    """An option value failed validation; the message names the option (and value)."""


def show_value(value: object) -> str:
    """A value as shown in messages: its repr, shortened when very long."""
    if isinstance(value, str) and len(value) > 80:
        value = value[:77] + "..."
    return repr(value)


# --- value validators ----------------------------------------------------------
# Each takes (option name, value, notes) and returns the typed value or raises
# InvalidValue. URI values arrive as str; keyword arguments may also arrive typed.
# ``notes`` collects non-fatal warnings (e.g. an unknown compressor name).

Validator = Callable[[str, object, list[str]], object]


def _boolean(name: str, value: object, notes: list[str]) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidValue(f"{name} must be 'true' or 'false', not {show_value(value)}")


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
                raise InvalidValue(
                    f"{name} must be {description} (at most {maximum}), not {show_value(value)}"
                )
            raise InvalidValue(f"{name} must be {description}, not {show_value(value)}")
        return number

    return validate


def _string(*, non_empty: bool = True, secret: bool = False) -> Validator:
    def validate(name: str, value: object, notes: list[str]) -> str:
        if not isinstance(value, str):
            shown = "" if secret else f", not {show_value(value)}"
            raise InvalidValue(f"{name} must be a string{shown}")
        if non_empty and not value:
            raise InvalidValue(f"{name} must be a non-empty string, not ''")
        return value

    return validate


def _choice(choices: Sequence[str]) -> Validator:
    allowed = ", ".join(repr(c) for c in choices)

    def validate(name: str, value: object, notes: list[str]) -> str:
        if isinstance(value, str) and value in choices:
            return value
        raise InvalidValue(f"{name} must be one of {allowed}, not {show_value(value)}")

    return validate


def _app_name(name: str, value: object, notes: list[str]) -> str:
    text = _string(non_empty=False)(name, value, notes)
    assert isinstance(text, str)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > APP_NAME_MAX_BYTES:
        raise InvalidValue(
            f"{name} must be at most {APP_NAME_MAX_BYTES} bytes in UTF-8, "
            f"not {show_value(text)} ({size} bytes)"
        )
    return text


def _key_value_pairs(name: str, value: object, *, secret_values: bool) -> dict[str, str]:
    """``k1:v1,k2:v2``; the key ends at the first ':' so values may contain ':'."""
    if isinstance(value, Mapping):
        pairs: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key or not isinstance(item, str):
                raise InvalidValue(f"{name} must map non-empty string keys to strings")
            pairs[key] = item
        return pairs
    if not isinstance(value, str):
        raise InvalidValue(f"{name} must be a string of KEY:value pairs or a mapping")
    pairs = {}
    if value == "":
        return pairs
    for position, item in enumerate(value.split(","), 1):
        key, colon, item_value = item.partition(":")
        if not colon or not key:
            # Values may be credentials: name the position, never the text.
            shown = "" if secret_values else f", not {show_value(value)}"
            raise InvalidValue(
                f"{name} must be comma-separated KEY:value pairs (item {position} "
                f"has no key or no ':'){shown}"
            )
        if key in pairs:
            raise InvalidValue(f"{name} names the key {key!r} more than once")
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
        raise InvalidValue(
            f"{name} must be a comma-separated list of names, not {show_value(value)}"
        )
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
            raise InvalidValue(
                f"{name} must be a non-negative integer or a tag name, not {show_value(value)}"
            )
        return number
    if isinstance(value, str) and value:
        return value
    raise InvalidValue(
        f"{name} must be a non-negative integer or a tag name, not {show_value(value)}"
    )


# RFC 6335 section 5.1: 1-15 characters, letters, digits and hyphens, at least one
# letter, no leading, trailing or doubled hyphen.
_SERVICE_NAME = re.compile(r"(?=.{1,62}\Z)(?=.*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\Z")


def _srv_service_name(name: str, value: object, notes: list[str]) -> str:
    if isinstance(value, str) and _SERVICE_NAME.match(value):
        return value
    raise InvalidValue(
        f"{name} must be a valid SRV service name (RFC 6335), not {show_value(value)}"
    )


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
    raise InvalidValue(f"{name} must be one of {names}, not {show_value(value)}")


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
SSL_ALIAS = "ssl"

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lower_key(key: str) -> str:
    """Keys are normalized by lower-casing A-Z only; other characters stay as they are."""
    return key.translate(_ASCII_LOWER)


_BY_LOWER: dict[str, str] = {lower_key(name): name for name in OPTIONS}
DEPRECATED_BY_LOWER: dict[str, str] = {lower_key(name): name for name in DEPRECATED_OPTIONS}

#: Every key a connection string accepts -> the name to suggest for a typo of it:
#: canonical names as they are, ``ssl`` as itself (an equal alias), a deprecated key
#: as its replacement.
URI_OPTION_SPELLINGS: Mapping[str, str] = types.MappingProxyType(
    {**{name: name for name in OPTIONS}, SSL_ALIAS: SSL_ALIAS, **DEPRECATED_OPTIONS}
)


def canonical_option_name(key: str) -> Optional[str]:
    """The canonical spelling of a supported option key (case-insensitive), or None.

    ``ssl`` maps to ``tls``; deprecated keys are not mapped (see DEPRECATED_OPTIONS).
    """
    lower = lower_key(key)
    if lower == SSL_ALIAS:
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
        suggestion = nearest_name(name, URI_OPTION_SPELLINGS, normalize=lower_key)
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
    except InvalidValue as exc:
        raise ConfigurationError(str(exc)) from None
    for note in notes:
        _log.warning("%s", note)
    return result


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
