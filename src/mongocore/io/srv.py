"""``mongodb+srv://`` seed lists: the SRV and TXT lookups of initial discovery.

Implements the Initial DNS Seedlist Discovery spec ("Seedlist Discovery": "Querying
DNS"; "Default Connection String Options"; the ``srvMaxHosts`` and ``srvServiceName``
sections of "MongoClient Configuration").

DNS is reached only through a :class:`~mongocore.io.dns_resolver.Resolver`
(:mod:`mongocore.io.dns_resolver`), so everything here runs against a fake resolver in
tests. The pure parts (target verification, TXT parsing, the srvMaxHosts selection)
are plain functions; the I/O shell is :func:`resolve_seedlist` and
:func:`options_with_seedlist`. Polling the SRV records once connected is
:mod:`mongocore.io.srv_polling`.
"""

from __future__ import annotations

import logging
import random
import urllib.parse
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Optional, Protocol

from mongocore._deferred_dataclass import dataclass, field, replace
from mongocore.core.address import Address
from mongocore.core.description.settings import TopologySettings
from mongocore.core.options import ClientOptions
from mongocore.core.uri_options import canonical_option_name, validate_option
from mongocore.errors import ConfigurationError, InvalidURI

# DnsPythonResolver and Resolver are documented public as names of mongocore.io.srv
# (docs/srv.md): they live in dns_resolver and are re-exported here.
from mongocore.io.dns_resolver import DnsPythonResolver, Resolver, lookup_srv

__all__ = [
    "TXT_OPTIONS",
    "DnsPythonResolver",
    "Resolver",
    "SeedList",
    "Shuffler",
    "SrvConfiguration",
    "is_valid_srv_target",
    "merge_txt_options",
    "normalize_host",
    "options_with_seedlist",
    "parse_txt_options",
    "resolve_seedlist",
    "select_srv_hosts",
    "srv_domain_name",
    "srv_query_name",
    "verified_hosts",
]

_log = logging.getLogger("mongocore.srv")

#: "Default Connection String Options": the only options a TXT record may set.
TXT_OPTIONS: frozenset[str] = frozenset({"authSource", "replicaSet", "loadBalanced"})


# --- pure rules ------------------------------------------------------------------


class Shuffler(Protocol):
    """A source of randomness: ``random``, or a seeded ``random.Random``."""

    def shuffle(self, x: list[Any]) -> None: ...


def normalize_host(name: str) -> str:
    """Host names compare case-insensitively and without the root's trailing dot."""
    return name.rstrip(".").lower()


def srv_query_name(srv_host: str, service_name: str = "mongodb") -> str:
    """ "Querying DNS": ``_{srvServiceName}._tcp.{hostname}``."""
    return f"_{service_name}._tcp.{normalize_host(srv_host)}"


def srv_domain_name(srv_host: str) -> str:
    """The ``{domainname}`` of "Connection String Format".

    Since the 2024-09-24 revision the spec no longer requires three or more
    '.'-separated parts: a host name with three or more parts drops its left-most part
    (the ``{subdomain}``); one with one or two parts is its own ``{domainname}``.
    """
    host = normalize_host(srv_host)
    parts = host.split(".")
    return ".".join(parts[1:]) if len(parts) >= 3 else host


def is_valid_srv_target(srv_host: str, target: str) -> bool:
    """ "Querying DNS": a returned host name must share the SRV host's ``{domainname}``.

    Matching is on whole labels: the target must end with ``.{domainname}``. For an
    SRV host of fewer than three parts ``{domainname}`` is the host itself, so this
    also gives the rule that the target "MUST have at least one more domain level"
    (it can be neither the SRV host itself nor share only a text suffix). For three or
    more parts a target identical to the SRV host is valid (2025-04-22 revision).
    """
    return normalize_host(target).endswith("." + srv_domain_name(srv_host))


def verified_hosts(
    srv_host: str, records: Iterable[tuple[str, int]]
) -> tuple[list[Address], list[str]]:
    """(valid hosts, normalized and deduplicated in order; rejected target names)."""
    valid: list[Address] = []
    rejected: list[str] = []
    for target, port in records:
        host = normalize_host(target)
        if not is_valid_srv_target(srv_host, host):
            rejected.append(host)
            continue
        address = Address(host, int(port))
        if address not in valid:
            valid.append(address)
    return valid, rejected


def select_srv_hosts(hosts: Sequence[Address], srv_max_hosts: int, rng: Shuffler) -> list[Address]:
    """srvMaxHosts at initial discovery: all hosts when it is 0 or not below their
    number; otherwise that many, chosen at random with a Fisher-Yates shuffle
    (``random.shuffle`` is one)."""
    if srv_max_hosts <= 0 or srv_max_hosts >= len(hosts):
        return list(hosts)
    shuffled = list(hosts)
    rng.shuffle(shuffled)
    return shuffled[:srv_max_hosts]


def parse_txt_options(text: str, *, srv_host: str = "") -> dict[str, str]:
    """ "Default Connection String Options": the options of one TXT record.

    The text is a URI options string (``key=value&key=value``), percent-decoded like
    the connection string's. Returns canonical option names with their raw (decoded,
    still untyped) values. Only ``authSource``, ``replicaSet`` and ``loadBalanced``
    are allowed (``ssl`` and ``tls`` never are): any other key is a
    ConfigurationError; a malformed pair or an invalid value is an InvalidURI.
    """
    where = f"the TXT record of {srv_host}" if srv_host else "a TXT record"
    options: dict[str, str] = {}
    for pair in text.split("&"):
        if pair == "":
            continue  # tolerated in a connection string, so here too
        raw_key, equals, raw_value = pair.partition("=")
        key = _decode_txt(raw_key, where)
        if not equals:
            raise InvalidURI(f"{where} has the option {key!r} without a value")
        name = canonical_option_name(key)
        if name not in TXT_OPTIONS:
            raise ConfigurationError(
                f"{where} sets {key!r}, but only authSource, replicaSet and loadBalanced "
                "may be set through a TXT record"
            )
        value = _decode_txt(raw_value, where)
        try:
            validate_option(name, value)
        except ConfigurationError as exc:
            raise InvalidURI(f"{where}: {exc}") from None
        if name in options:
            # The connection string rule for a repeated key: warn, the last one wins.
            _log.warning("%s gives %s more than once; the last value is used", where, name)
        options[name] = value
    return options


def _decode_txt(text: str, where: str) -> str:
    try:
        return urllib.parse.unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise InvalidURI(f"{where} is not valid UTF-8 once percent-decoded") from None


# --- initial seed list -----------------------------------------------------------


@dataclass(frozen=True)
class SeedList:
    """The outcome of initial seed-list discovery.

    ``hosts`` is the seed list (after srvMaxHosts); ``options`` are the TXT record's
    options, canonical name -> raw string value; ``min_ttl`` is the lowest TTL of the
    SRV records in seconds, or None when the resolver does not report it.
    """

    hosts: tuple[Address, ...]
    options: dict[str, str] = field(default_factory=dict)
    min_ttl: Optional[float] = None


def resolve_seedlist(
    srv_host: str,
    *,
    service_name: str = "mongodb",
    srv_max_hosts: int = 0,
    resolver: Resolver,
    rng: Shuffler = random,
) -> SeedList:
    """Initial DNS seed-list discovery for ``mongodb+srv://{srv_host}``.

    Queries the SRV records of ``_{service_name}._tcp.{srv_host}`` and the TXT record
    of ``srv_host``. Raises ConfigurationError when the lookup fails or finds no SRV
    record, when any target does not share the SRV host's ``{domainname}`` (no host
    of such an answer is used), when there is more than one TXT record, or when the
    TXT record sets an option it may not; InvalidURI for a malformed TXT record.

    The connection string's own checks (no port, one host, srvServiceName and
    srvMaxHosts values) belong to the URI parser and are done before this.
    """
    host = normalize_host(srv_host)
    query = srv_query_name(host, service_name)
    records, min_ttl = lookup_srv(resolver, query)
    if not records:
        raise ConfigurationError(
            f"the DNS name {query} has no SRV records, so the mongodb+srv:// connection "
            "string could not be used to find hosts"
        )
    valid, rejected = verified_hosts(host, records)
    if rejected:
        raise ConfigurationError(
            f"the SRV records of {query} name {', '.join(repr(r) for r in rejected)}, "
            f"which {'is' if len(rejected) == 1 else 'are'} not in the domain "
            f"{srv_domain_name(host)!r} of {host!r} (a returned host must end with "
            f"'.{srv_domain_name(host)}'); no host of this answer is used"
        )

    texts = resolver.txt(host)
    if len(texts) > 1:
        raise ConfigurationError(
            f"{host} has {len(texts)} TXT records; at most one is allowed for the "
            "connection options of a mongodb+srv:// connection string"
        )
    options = parse_txt_options(texts[0], srv_host=host) if texts else {}

    hosts = select_srv_hosts(valid, srv_max_hosts, rng)
    _log.debug("SRV seed list of %s: %s; TXT options: %s", host, hosts, options)
    return SeedList(hosts=tuple(hosts), options=options, min_ttl=min_ttl)


@dataclass(frozen=True)
class SrvConfiguration:
    """A client's configuration once the SRV and TXT lookups are done."""

    options: ClientOptions
    #: The topology settings with the discovered seeds (the URI's hosts when not SRV).
    topology_settings: TopologySettings
    #: None for a ``mongodb://`` connection string.
    seedlist: Optional[SeedList] = None


def options_with_seedlist(
    uri: str,
    *,
    resolver: Optional[Resolver] = None,
    rng: Shuffler = random,
    **kwargs: Any,
) -> SrvConfiguration:
    """Client options and topology settings for ``uri``, with the SRV lookup done.

    ``kwargs`` are those of :meth:`ClientOptions.from_uri`. Precedence, highest
    first: keyword arguments, the connection string's options, the TXT record's
    options. The connection string is parsed and checked before any DNS query (a
    port or a second host fails without one); the combined options are checked again
    once the TXT options are in (srvMaxHosts with a TXT replicaSet or
    loadBalanced=true, loadBalanced=true with several SRV hosts). Without
    ``resolver`` a :class:`DnsPythonResolver` is used, with connectTimeoutMS as its
    timeout.
    """
    base = ClientOptions.from_uri(uri, **kwargs)
    if base.srv_host is None:
        return SrvConfiguration(options=base, topology_settings=base.topology_settings)
    if resolver is None:
        timeout = base.connect_timeout_ms / 1000.0 if base.connect_timeout_ms else None
        resolver = DnsPythonResolver(timeout)
    seedlist = resolve_seedlist(
        base.srv_host,
        service_name=base.srv_service_name,
        srv_max_hosts=base.srv_max_hosts,
        resolver=resolver,
        rng=rng,
    )
    given = _options_in_uri(uri) | {
        name for name in (canonical_option_name(key.replace("_", "")) for key in kwargs) if name
    }
    options = merge_txt_options(base, seedlist.options, given=given)
    return SrvConfiguration(
        options=options,
        topology_settings=options.topology_settings_for(seedlist.hosts),
        seedlist=seedlist,
    )


# ClientOptions attributes of the options a TXT record may set.
_TXT_ATTRIBUTES: Mapping[str, str] = {
    "authSource": "auth_source",
    "replicaSet": "replica_set",
    "loadBalanced": "load_balanced",
}


def merge_txt_options(
    options: ClientOptions, txt_options: Mapping[str, str], *, given: Collection[str]
) -> ClientOptions:
    """``options`` with the TXT record's options applied where the connection string
    and the keyword arguments did not set them (``given``: canonical names they set).

    ClientOptions re-checks every option combination on the result.
    """
    changes = {
        _TXT_ATTRIBUTES[name]: validate_option(name, value)
        for name, value in txt_options.items()
        if name not in given
    }
    return replace(options, **changes) if changes else options


def _options_in_uri(uri: str) -> set[str]:
    """Canonical names of the options a (valid) connection string gives.

    A valid connection string has no '?' before its options (userinfo must encode
    it), so the options are everything after the first '?'.
    """
    names: set[str] = set()
    _, _, query = uri.partition("?")
    for pair in query.split("&"):
        key = pair.partition("=")[0]
        name = canonical_option_name(urllib.parse.unquote(key))
        if name is not None:
            names.add(name)
    return names
