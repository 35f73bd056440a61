"""Connection string parsing in pymongo's shape, under its module name
(``pymongo.uri_parser``).

:func:`parse_uri` returns the dictionary pymongo's returns (``nodelist``,
``username``, ``password``, ``database``, ``collection``, ``options``, ``fqdn``), with
the options in pymongo's types: a timeout in seconds (``connectTimeoutMS=1000`` gives
``1.0``), ``uuidRepresentation`` as bson's number under the key
``"uuidrepresentation"``, ``readPreferenceTags`` as a list of dicts. Libraries such as
MongoEngine read it to take a URI apart.

The connection string is checked by mongocore's own parser
(:mod:`mongocore.core.uri`), the one a client uses, so what it refuses a client would
refuse too; the option values are then converted by pymongo's validators as
:mod:`mongocore.common` has them. A ``mongodb+srv://`` URI is resolved (SRV and TXT
records), as pymongo's ``parse_uri`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Callable, Optional, Union
from urllib.parse import unquote_plus

from mongocore.common import SRV_SERVICE_NAME, get_validated_options
from mongocore.core.uri import _split
from mongocore.core.uri import parse_uri as _parse_connection_string
from mongocore.errors import ConfigurationError, InvalidURI

__all__ = [
    "parse_host",
    "parse_ipv6_literal_host",
    "parse_uri",
    "parse_userinfo",
    "split_hosts",
    "split_options",
    "validate_options",
]

SCHEME = "mongodb://"
SCHEME_LEN = len(SCHEME)
SRV_SCHEME = "mongodb+srv://"
SRV_SCHEME_LEN = len(SRV_SCHEME)
DEFAULT_PORT = 27017

#: The options pymongo's parse_uri returns under their camelCase names (the URI options
#: specification's); every other option comes back under its lower-case name.
URI_OPTIONS = frozenset(
    [
        "appname",
        "authMechanism",
        "authMechanismProperties",
        "authSource",
        "compressors",
        "connectTimeoutMS",
        "directConnection",
        "heartbeatFrequencyMS",
        "journal",
        "loadBalanced",
        "localThresholdMS",
        "maxIdleTimeMS",
        "maxPoolSize",
        "maxConnecting",
        "maxStalenessSeconds",
        "minPoolSize",
        "proxyHost",
        "proxyPort",
        "proxyUsername",
        "proxyPassword",
        "readConcernLevel",
        "readPreference",
        "readPreferenceTags",
        "replicaSet",
        "retryReads",
        "retryWrites",
        "serverMonitoringMode",
        "serverSelectionTimeoutMS",
        "serverSelectionTryOnce",
        "socketTimeoutMS",
        "srvAllowedHostsSuffix",
        "srvMaxHosts",
        "srvServiceName",
        "ssl",
        "tls",
        "tlsAllowInvalidCertificates",
        "tlsAllowInvalidHostnames",
        "tlsCAFile",
        "tlsCertificateKeyFile",
        "tlsCertificateKeyFilePassword",
        "tlsDisableCertificateRevocationCheck",
        "tlsDisableOCSPEndpointCheck",
        "tlsInsecure",
        "w",
        "waitQueueTimeoutMS",
        "wTimeoutMS",
        "zlibCompressionLevel",
    ]
)
_CASED = {name.lower(): name for name in URI_OPTIONS}

#: What tlsInsecure stands for (pymongo expands it when normalizing).
_TLS_INSECURE_IMPLIES = (
    "tlsallowinvalidcertificates",
    "tlsallowinvalidhostnames",
    "tlsdisableocspendpointcheck",
)
#: The options a DNS TXT record may set (Initial DNS Seedlist Discovery).
_TXT_OPTIONS = frozenset(["authsource", "replicaset", "loadbalanced"])

_Address = tuple[str, Optional[int]]

#: Characters pymongo refuses in the database part of a connection string.
_BAD_DATABASE_CHARACTERS = frozenset('/ "$')


# --- user information and hosts ----------------------------------------------------


def _has_unquoted_percent(text: str) -> bool:
    return any(
        char == "%" and unquote_plus(text[i : i + 3]) == text[i : i + 3]
        for i, char in enumerate(text)
    )


def parse_userinfo(userinfo: str) -> tuple[str, str]:
    """``"user:password"`` (percent-encoded) as ``(user, password)``, decoded; the
    password is ``""`` when there is none."""
    if "@" in userinfo or userinfo.count(":") > 1 or _has_unquoted_percent(userinfo):
        raise InvalidURI(
            "Username and password must be escaped according to RFC 3986, use"
            " urllib.parse.quote_plus"
        )
    user, _, password = userinfo.partition(":")
    if not user:
        raise InvalidURI("The empty string is not valid username")
    return unquote_plus(user), unquote_plus(password)


def parse_ipv6_literal_host(
    entity: str, default_port: Optional[int]
) -> tuple[str, Union[str, int, None]]:
    """``"[::1]:27018"`` as ``("::1", "27018")``; the port is ``default_port`` when
    not given (and a string when it is, as in pymongo)."""
    if "]" not in entity:
        raise ValueError(
            "an IPv6 address literal must be enclosed in '[' and ']' according to RFC 2732."
        )
    end = entity.find("]:")
    if end == -1:
        return entity[1:-1], default_port
    return entity[1:end], entity[end + 2 :]


def parse_host(entity: str, default_port: Optional[int] = DEFAULT_PORT) -> _Address:
    """``"host:port"`` (or a host, an IPv6 literal, a UNIX socket path) as
    ``(host, port)``, the host in lower case."""
    host: str = entity
    port: Union[str, int, None] = default_port
    if entity[0] == "[":
        host, port = parse_ipv6_literal_host(entity, default_port)
    elif entity.endswith(".sock"):
        return entity, default_port
    elif ":" in entity:
        if entity.count(":") > 1:
            raise ValueError(
                "Reserved characters such as ':' must be escaped according RFC 2396. An IPv6"
                " address literal must be enclosed in '[' and ']' according to RFC 2732."
            )
        host, port = entity.split(":", 1)
    if isinstance(port, str):
        if not port.isdigit():
            if any(c.isspace() for c in port) and all(c.isspace() or c.isdigit() for c in port):
                raise ValueError("Port contains whitespace character")
            raise ValueError(
                "Port contains non-digit characters. Hint: username and password must be"
                " escaped according to RFC 3986, use urllib.parse.quote_plus"
            )
        if not 0 < int(port) <= 65535:
            raise ValueError("Port must be an integer between 0 and 65535")
        port = int(port)
    return host.lower(), port


def split_hosts(hosts: str, default_port: Optional[int] = DEFAULT_PORT) -> list[_Address]:
    """``"h1,h2:27018"`` as ``[("h1", 27017), ("h2", 27018)]``; a UNIX socket path
    (percent-encoded, ending in ``.sock``) has the port None."""
    nodes = []
    for entity in hosts.split(","):
        if not entity:
            raise ConfigurationError("Empty host (or extra comma in host list)")
        port = default_port
        node = entity
        if entity.endswith(".sock"):
            node, port = unquote_plus(entity), None
        elif entity.startswith("["):
            node = entity.replace("%25", "%")  # an IPv6 zone index (RFC 6874)
        elif "%" in entity:
            raise InvalidURI(
                "Percent-encoding is only allowed in Unix domain socket paths and IPv6 zone"
                " indexes, not in hostnames"
            )
        nodes.append(parse_host(node, port))
    return nodes


# --- options -----------------------------------------------------------------------


def _parse_options(text: str, delimiter: Optional[str]) -> dict[str, Any]:
    """Lower-case key -> (key as written, raw value); readPreferenceTags collects a list."""
    options: dict[str, Any] = {}
    for pair in text.split(delimiter):
        key, value = pair.split("=")  # ValueError for a pair without exactly one "="
        lower = key.lower()
        if lower == "readpreferencetags":
            options.setdefault(lower, (key, []))[1].append(value)
            continue
        # authMechanismProperties is decoded by its validator (its values may hold ",").
        options[lower] = (key, value if lower == "authmechanismproperties" else unquote_plus(value))
    return options


def _check_security_options(options: Mapping[str, Any]) -> None:
    """The TLS options that cannot be given together (URI options, "Conflicting TLS
    options"): pymongo checks them before it validates values."""
    if "tlsinsecure" in options:
        for implied in _TLS_INSECURE_IMPLIES:
            if implied in options:
                raise InvalidURI(
                    f"URI options {options['tlsinsecure'][0]} and {options[implied][0]} cannot"
                    " be specified simultaneously."
                )
    if "tlsallowinvalidcertificates" in options and "tlsdisableocspendpointcheck" in options:
        raise InvalidURI(
            "URI options tlsallowinvalidcertificates and"
            f" {options['tlsdisableocspendpointcheck'][0]} cannot be specified simultaneously."
        )
    if "ssl" in options and "tls" in options:
        ssl, tls = options["ssl"][1], options["tls"][1]
        if (ssl in ("true", True)) != (tls in ("true", True)):
            raise InvalidURI(
                f"Can not specify conflicting values for URI options {options['ssl'][0]} and"
                f" {options['tls'][0]}."
            )


def split_options(
    opts: str,
    validate: bool = True,
    warn: bool = False,
    normalize: bool = True,
    from_uri: bool = True,
) -> MutableMapping[str, Any]:
    """The options part of a connection string (``"w=majority&journal=true"``) as a
    dict under the options' lower-case names: validated and converted when
    ``validate``; an invalid option raises, or with ``warn`` is left out with a
    warning. ``normalize`` names ``ssl`` as ``tls`` and expands ``tlsInsecure``."""
    and_at, semicolon_at = opts.find("&"), opts.find(";")
    try:
        if and_at >= 0 and semicolon_at >= 0:
            raise InvalidURI("Can not mix '&' and ';' for option separators")
        if and_at >= 0:
            raw = _parse_options(opts, "&")
        elif semicolon_at >= 0:
            raw = _parse_options(opts, ";")
        elif "=" in opts:
            raw = _parse_options(opts, None)
        else:
            raise ValueError
    except ValueError:
        raise InvalidURI("MongoDB URI options are key=value pairs") from None
    _check_security_options(raw)
    options = {key: value for key, (_, value) in raw.items()}
    if normalize:
        if "tlsinsecure" in options:
            for implied in _TLS_INSECURE_IMPLIES:
                options[implied] = options["tlsinsecure"]
        if "ssl" in options:
            options["tls"] = options.pop("ssl")
    if validate:
        options = dict(validate_options(options, warn, from_uri=from_uri))
        if options.get("authsource") == "":
            raise InvalidURI("the authSource database cannot be an empty string")
    return options


def validate_options(
    opts: Mapping[str, Any], warn: bool = False, from_uri: bool = False
) -> MutableMapping[str, Any]:
    """The options, validated and converted (see :func:`mongocore.common.get_validated_options`)."""
    return get_validated_options(opts, warn, from_uri=from_uri)


def _cased(options: Mapping[str, Any]) -> dict[str, Any]:
    return {_CASED.get(key, key): value for key, value in options.items()}


# --- the whole connection string ---------------------------------------------------


def parse_uri(  # noqa: PLR0917 - positional as pymongo's
    uri: str,
    default_port: Optional[int] = DEFAULT_PORT,
    validate: bool = True,
    warn: bool = False,
    normalize: bool = True,
    connect_timeout: Optional[float] = None,
    srv_service_name: Optional[str] = None,
    srv_max_hosts: Optional[int] = None,
    srv_allowed_hosts_suffix: Optional[str] = None,
    srv_host_validator: Optional[Callable[[str], bool]] = None,
) -> dict[str, Any]:
    """Parse and check a connection string; the result is pymongo's dictionary::

        {"nodelist": [(host, port), ...], "username": ..., "password": ...,
         "database": ..., "collection": ..., "options": {...}, "fqdn": ...}

    ``database`` and ``collection`` come from the path (``/db.coll``). For a
    ``mongodb+srv://`` URI, ``fqdn`` is its host name and ``nodelist`` the hosts its
    SRV records name (a DNS lookup, bounded by ``connect_timeout`` seconds or the
    URI's connectTimeoutMS); options of its TXT record are added. ``validate``,
    ``warn`` and ``normalize`` are as in :func:`split_options`.
    """
    scheme, hostinfo, database_text, query = _split(uri)  # InvalidURI for a wrong scheme
    is_srv = scheme == "mongodb+srv"
    if database_text and _BAD_DATABASE_CHARACTERS.intersection(unquote_plus(database_text)):
        # Also where an unencoded "/" in a password ended the hosts early.
        raise InvalidURI("Bad database name")
    options: dict[str, Any] = dict(split_options(query, validate, warn, normalize)) if query else {}
    userinfo, _, hosts = hostinfo.rpartition("@")
    if userinfo:
        parse_userinfo(userinfo)
    nodes = split_hosts(hosts, default_port=None if is_srv else default_port) if hosts else []
    _check_options(nodes, options)
    # mongocore's parser, the one clients use, checks the rest (the options' values
    # again, by mongocore's rules, and their combinations) and decodes the rest.
    parsed = _parse_connection_string(uri if validate else uri.split("?", 1)[0], warn=warn)
    username = parsed.username
    password = parsed.password
    if username is not None and password is None:
        password = ""
    database, collection = parsed.database, None
    if database and "." in database:
        database, collection = database.split(".", 1)
    if is_srv:
        assert parsed.srv_host is not None
        nodes = _resolve_srv(
            parsed.srv_host,
            options,
            validate=validate,
            warn=warn,
            normalize=normalize,
            connect_timeout=connect_timeout,
            srv_service_name=srv_service_name,
            srv_max_hosts=srv_max_hosts,
            srv_allowed_hosts_suffix=srv_allowed_hosts_suffix,
            srv_host_validator=srv_host_validator,
        )
        _check_options(nodes, options)
    return {
        "nodelist": nodes,
        "username": username,
        "password": password,
        "database": database,
        "collection": collection,
        "options": _cased(options),
        "fqdn": parsed.srv_host,
    }


def _check_options(nodes: list[_Address], options: Mapping[str, Any]) -> None:
    """pymongo's own checks of hosts against options (also when not validating: a
    value is then the string as written, and any non-empty one counts as given)."""
    if len(nodes) > 1 and options.get("directconnection"):
        raise ConfigurationError("Cannot specify multiple hosts with directConnection=true")
    if options.get("loadbalanced"):
        if len(nodes) > 1:
            raise ConfigurationError("Cannot specify multiple hosts with loadBalanced=true")
        if options.get("directconnection"):
            raise ConfigurationError("Cannot specify directConnection=true with loadBalanced=true")
        if options.get("replicaset"):
            raise ConfigurationError("Cannot specify replicaSet with loadBalanced=true")


def _resolve_srv(
    srv_host: str,
    options: dict[str, Any],
    *,
    validate: bool,
    warn: bool,
    normalize: bool,
    connect_timeout: Optional[float],
    srv_service_name: Optional[str],
    srv_max_hosts: Optional[int],
    srv_allowed_hosts_suffix: Optional[str],
    srv_host_validator: Optional[Callable[[str], bool]],
) -> list[_Address]:
    """The hosts of a mongodb+srv:// URI (Initial DNS Seedlist Discovery), with the
    options of its TXT record added to ``options`` (those of the URI win)."""
    # The lookup is the I/O shell's: it loads only for a mongodb+srv:// URI.
    from mongocore.io.dns_resolver import DnsPythonResolver  # noqa: PLC0415
    from mongocore.io.srv import resolve_seedlist  # noqa: PLC0415

    if srv_host_validator is not None and srv_allowed_hosts_suffix is not None:
        raise ConfigurationError("Cannot specify both srv_host_validator and srvAllowedHostsSuffix")
    timeout = connect_timeout or options.get("connecttimeoutms") or 20.0
    service = srv_service_name or options.get("srvservicename") or SRV_SERVICE_NAME
    max_hosts = srv_max_hosts or options.get("srvmaxhosts") or 0
    seedlist = resolve_seedlist(
        srv_host,
        service_name=str(service),
        srv_max_hosts=int(max_hosts),
        resolver=DnsPythonResolver(timeout=float(timeout)),
    )
    nodes: list[_Address] = [(a.host, a.port) for a in seedlist.hosts]
    suffix = srv_allowed_hosts_suffix or options.get("srvallowedhostssuffix")
    for host, _ in nodes:
        _check_srv_host(host, srv_host_validator, suffix)
    if seedlist.options:
        txt = split_options(
            "&".join(f"{k}={v}" for k, v in seedlist.options.items()),
            validate,
            warn,
            normalize,
            from_uri=False,
        )
        if set(txt) - _TXT_OPTIONS:
            raise ConfigurationError(
                "Only authSource, replicaSet, and loadBalanced are supported from DNS"
            )
        for key, value in txt.items():
            options.setdefault(key, value)
    if options.get("loadbalanced") and max_hosts:
        raise InvalidURI("You cannot specify loadBalanced with srvMaxHosts")
    if options.get("replicaset") and max_hosts:
        raise InvalidURI("You cannot specify replicaSet with srvMaxHosts")
    if "tls" not in options and "ssl" not in options:
        options["tls"] = True if validate else "true"
    return nodes


def _check_srv_host(
    host: str, validator: Optional[Callable[[str], bool]], suffix: Optional[str]
) -> None:
    if validator is not None:
        try:
            allowed = validator(host)
        except Exception as exc:
            raise ConfigurationError(
                f"srv_host_validator raised an exception for SRV host {host}: {exc}"
            ) from exc
        if not isinstance(allowed, bool):
            raise ConfigurationError(
                f"srv_host_validator must return a bool for SRV host {host},"
                f" not {type(allowed).__name__}"
            )
        if not allowed:
            raise ConfigurationError(f"Invalid SRV host: {host} was rejected by srv_host_validator")
    elif suffix is not None and not host.endswith("." + str(suffix).strip(".").lower()):
        raise ConfigurationError(f"Invalid SRV host: {host}")
