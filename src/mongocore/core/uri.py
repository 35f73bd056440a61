"""Connection strings: ``mongodb://`` and ``mongodb+srv://`` URIs.

Implements the Connection String spec ("General Syntax", "Userinfo", "Host
Information", "Auth Database", "Connection Options", "Repeated Keys", "Deprecated
Key Value Pairs") and the URI Options spec ("List of specified options",
"Conflicting TLS options", "directConnection URI option with multiple seeds or SRV
URI"), with the URI validation rules those refer to: Initial DNS Seedlist Discovery
(srvServiceName, srvMaxHosts), Load Balancer mode (through the SDAM configuration
check), SOCKS5 proxy options and max staleness. The options table and the value
validators are :mod:`mongocore.core.uri_options`; the forbidden combinations,
:mod:`mongocore.core.uri_checks`.

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

import re
import types
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from mongocore._deferred_dataclass import dataclass
from mongocore.core.address import DEFAULT_PORT, Address
from mongocore.core.lazy_logger import get_logger
from mongocore.core.option_names import (
    NOT_SUPPORTED,
    UnknownOptionWarning,
    nearest_name,
    warn_unknown_option,
)
from mongocore.core.uri_checks import check_options
from mongocore.core.uri_options import (
    DEPRECATED_BY_LOWER,
    DEPRECATED_OPTIONS,
    OPTIONS,
    PROXY_OPTIONS,
    SSL_ALIAS,
    URI_OPTION_SPELLINGS,
    InvalidValue,
    canonical_option_name,
    lower_key,
    redact_options,
    show_value,
)
from mongocore.errors import InvalidURI

__all__ = [
    "SCHEME",
    "SRV_SCHEME",
    "ConnectionString",
    # Documented public as mongocore.core.uri.UnknownOptionWarning (docs/connecting.md);
    # it lives in option_names and is re-exported here.
    "UnknownOptionWarning",
    "parse_uri",
]

_log = get_logger("mongocore.uri")

SCHEME = "mongodb"
SRV_SCHEME = "mongodb+srv"


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
    raise InvalidURI(
        f"port must be an integer from 1 to 65535, not {show_value(text)} in {host_text!r}"
    )


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
        lower = lower_key(key)
        old_name = DEPRECATED_BY_LOWER.get(lower)
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
        shown = old_name or ("ssl" if lower == SSL_ALIAS else name)
        value_text = _decode(raw_value, f"the value of {shown}")
        given[name] = given.get(name, 0) + 1
        if name in PROXY_OPTIONS and given[name] > 1:
            # The SOCKS5 spec: a repeated proxy option is an error, not a warning.
            raise InvalidURI(f"{name} must not be given more than once")

        notes: list[str] = []
        try:
            value = spec.validate(shown, value_text, notes)
        except InvalidValue as exc:
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
    reason = NOT_SUPPORTED.get(lower_key(key))
    if reason is not None:
        return f"unsupported connection string option {key!r} ({reason}); ignored"
    suggestion = nearest_name(key, URI_OPTION_SPELLINGS, normalize=lower_key)
    hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
    return f"unknown connection string option {key!r}{hint}; ignored"
