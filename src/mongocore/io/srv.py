"""``mongodb+srv://`` seed lists and SRV polling.

Implements the Initial DNS Seedlist Discovery spec ("Seedlist Discovery": "Querying
DNS"; "Default Connection String Options"; the ``srvMaxHosts`` and ``srvServiceName``
sections of "MongoClient Configuration") and the Polling SRV Records for mongos
Discovery spec ("Implementation", "Multi-Threaded Drivers").

DNS is reached only through a :class:`Resolver`, so everything here runs against a
fake resolver in tests. :class:`DnsPythonResolver` is the real one, built on
dnspython. The pure parts (target verification, TXT parsing, the srvMaxHosts
selection, the polled host list, the rescan interval) are plain functions; the I/O
shell is :func:`resolve_seedlist`, :func:`options_with_seedlist` and the
:class:`SrvPoller` thread.
"""

from __future__ import annotations

import logging
import random
import threading
import urllib.parse
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Callable, Optional, Protocol, runtime_checkable

from mongocore.core.address import Address
from mongocore.core.deferred_dataclass import dataclass, field, replace
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.types import TopologyType
from mongocore.core.options import ClientOptions
from mongocore.core.uri import canonical_option_name, validate_option
from mongocore.errors import ConfigurationError, InvalidURI

__all__ = [
    "MIN_RESCAN_SRV_INTERVAL",
    "SRV_POLLING_TOPOLOGY_TYPES",
    "TXT_OPTIONS",
    "DnsPythonResolver",
    "IntervalSource",
    "Resolver",
    "SeedList",
    "Shuffler",
    "SrvConfiguration",
    "SrvPoller",
    "TopologyView",
    "TtlResolver",
    "is_valid_srv_target",
    "merge_txt_options",
    "options_with_seedlist",
    "parse_txt_options",
    "rescan_srv_interval",
    "resolve_seedlist",
    "select_srv_hosts",
    "srv_domain_name",
    "srv_query_name",
    "updated_srv_hosts",
]

_log = logging.getLogger("mongocore.srv")

#: "Default Connection String Options": the only options a TXT record may set.
TXT_OPTIONS: frozenset[str] = frozenset({"authSource", "replicaSet", "loadBalanced"})

#: Polling: "rescanSRVIntervalMS ... MUST NOT be lower than 60 seconds" (seconds here).
MIN_RESCAN_SRV_INTERVAL = 60.0

#: Polling: "only available when ... the TopologyType is Sharded, or Unknown".
SRV_POLLING_TOPOLOGY_TYPES: frozenset[TopologyType] = frozenset(
    {TopologyType.SHARDED, TopologyType.UNKNOWN}
)

_DEFAULT_DNS_TIMEOUT = 20.0  # seconds; the connectTimeoutMS default


# --- resolvers -----------------------------------------------------------------


@runtime_checkable
class Resolver(Protocol):
    """What seed-list discovery needs from DNS.

    ``srv`` answers an SRV query (``name`` is the full query name, e.g.
    ``_mongodb._tcp.cluster0.example.com``) with (target, port) pairs; ``txt`` answers
    a TXT query with one string per record, that record's strings joined in order. A
    name with no TXT record answers ``[]``. Lookup failures raise ConfigurationError.
    """

    def srv(self, name: str) -> list[tuple[str, int]]: ...

    def txt(self, name: str) -> list[str]: ...


@runtime_checkable
class TtlResolver(Resolver, Protocol):
    """A resolver that also reports the lowest TTL (seconds) of an SRV answer, which
    the polling spec uses as the rescan interval. Without it the poller rescans every
    60 seconds ("If a driver is unable to access the TTL values ...")."""

    def srv_with_ttl(self, name: str) -> tuple[list[tuple[str, int]], Optional[float]]: ...


def _dnspython() -> tuple[Any, Any]:
    """dnspython's ``resolver`` and ``exception`` modules, imported on first use: a
    client of a plain ``mongodb://`` connection string never resolves SRV or TXT
    records, so importing mongocore does not load dnspython's resolver (about a fifth
    of the import time)."""
    import dns.exception  # noqa: PLC0415 (deferred on purpose, see above)
    import dns.resolver  # noqa: PLC0415

    return dns.resolver, dns.exception


class DnsPythonResolver:
    """A :class:`TtlResolver` backed by dnspython.

    ``timeout`` is each query's lifetime in seconds (None: dnspython's default).
    ``resolve`` replaces ``dns.resolver.resolve`` (same signature), e.g. to use a
    configured ``dns.resolver.Resolver().resolve``.
    """

    def __init__(
        self,
        timeout: Optional[float] = _DEFAULT_DNS_TIMEOUT,
        *,
        resolve: Optional[Callable[..., Any]] = None,
    ) -> None:
        self._timeout = timeout
        self._resolve: Callable[..., Any] = (
            resolve if resolve is not None else _dnspython()[0].resolve
        )

    @property
    def timeout(self) -> Optional[float]:
        return self._timeout

    def srv(self, name: str) -> list[tuple[str, int]]:
        return self.srv_with_ttl(name)[0]

    def srv_with_ttl(self, name: str) -> tuple[list[tuple[str, int]], Optional[float]]:
        answer = self._query(name, "SRV")
        rrset = answer.rrset
        records = [(str(r.target.to_text(omit_final_dot=True)), int(r.port)) for r in rrset]
        # One RRset has one TTL: the lowest TTL of the records dnspython returned.
        ttl = getattr(rrset, "ttl", None)
        return records, (float(ttl) if ttl is not None else None)

    def txt(self, name: str) -> list[str]:
        try:
            resolver, _ = _dnspython()
            answer = self._query(name, "TXT", no_record=(resolver.NXDOMAIN, resolver.NoAnswer))
        except _NoRecord:
            return []  # no TXT record is the common case, not an error
        texts: list[str] = []
        for record in answer.rrset:
            raw = b"".join(record.strings)
            try:
                texts.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise ConfigurationError(
                    f"the TXT record of {name} is not valid UTF-8, so its connection "
                    "options cannot be read"
                ) from None
        return texts

    def _query(self, name: str, rdtype: str, no_record: tuple[type[Exception], ...] = ()) -> Any:
        resolver, exception = _dnspython()
        try:
            return self._resolve(name, rdtype, lifetime=self._timeout)
        except no_record:
            raise _NoRecord from None
        except resolver.NXDOMAIN:
            reason = "the name does not exist (NXDOMAIN)"
        except resolver.NoAnswer:
            reason = f"the name has no {rdtype} record"
        except exception.Timeout:
            reason = f"no answer within {self._timeout} seconds"
        except exception.DNSException as exc:
            reason = str(exc) or type(exc).__name__
        raise ConfigurationError(
            f"the {rdtype} lookup of {name} failed, so the mongodb+srv:// connection "
            f"string could not be used to find hosts: {reason}"
        )


class _NoRecord(Exception):
    """Internal: the queried name has no record of the asked type."""


def _lookup_srv(resolver: Resolver, name: str) -> tuple[list[tuple[str, int]], Optional[float]]:
    if isinstance(resolver, TtlResolver):
        return resolver.srv_with_ttl(name)
    return resolver.srv(name), None


# --- pure rules ------------------------------------------------------------------


class Shuffler(Protocol):
    """A source of randomness: ``random``, or a seeded ``random.Random``."""

    def shuffle(self, x: list[Any]) -> None: ...


def _normalize_host(name: str) -> str:
    """Host names compare case-insensitively and without the root's trailing dot."""
    return name.rstrip(".").lower()


def srv_query_name(srv_host: str, service_name: str = "mongodb") -> str:
    """ "Querying DNS": ``_{srvServiceName}._tcp.{hostname}``."""
    return f"_{service_name}._tcp.{_normalize_host(srv_host)}"


def srv_domain_name(srv_host: str) -> str:
    """The ``{domainname}`` of "Connection String Format".

    Since the 2024-09-24 revision the spec no longer requires three or more
    '.'-separated parts: a host name with three or more parts drops its left-most part
    (the ``{subdomain}``); one with one or two parts is its own ``{domainname}``.
    """
    host = _normalize_host(srv_host)
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
    return _normalize_host(target).endswith("." + srv_domain_name(srv_host))


def _verified_hosts(
    srv_host: str, records: Iterable[tuple[str, int]]
) -> tuple[list[Address], list[str]]:
    """(valid hosts, normalized and deduplicated in order; rejected target names)."""
    valid: list[Address] = []
    rejected: list[str] = []
    for target, port in records:
        host = _normalize_host(target)
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


def updated_srv_hosts(
    current: Sequence[Address],
    resolved: Sequence[Address],
    srv_max_hosts: int,
    rng: Shuffler,
) -> list[Address]:
    """The host list after a rescan (Polling, "Implementation").

    ``resolved`` are the verified hosts of the rescan (not empty: an empty rescan
    leaves the topology alone). Hosts of ``current`` that are still resolved are
    kept, in their order and unchanged; the others are removed. New hosts are all
    added when srvMaxHosts is 0 or not below the number of resolved hosts; otherwise
    new hosts are chosen at random, with the same shuffle as initial discovery, until
    there are srvMaxHosts hosts (kept hosts are never dropped to make room).
    """
    resolved_set = set(resolved)
    kept = [address for address in current if address in resolved_set]
    kept_set = set(kept)
    new = [address for address in resolved if address not in kept_set]
    if srv_max_hosts <= 0 or srv_max_hosts >= len(resolved):
        return kept + new
    rng.shuffle(new)
    return kept + new[: max(0, srv_max_hosts - len(kept))]


def rescan_srv_interval(
    min_ttl: Optional[float], *, succeeded: bool, heartbeat_frequency_ms: int
) -> float:
    """rescanSRVIntervalMS, in seconds (Polling, "Implementation").

    After a rescan with at least one verified host: the lowest TTL of its records, but
    not below 60 seconds, and 60 seconds when the TTL is unknown. After a failed or
    empty rescan: heartbeatFrequencyMS, until a rescan succeeds again.
    """
    if not succeeded:
        return heartbeat_frequency_ms / 1000.0
    if min_ttl is None:
        return MIN_RESCAN_SRV_INTERVAL
    return max(float(min_ttl), MIN_RESCAN_SRV_INTERVAL)


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
    host = _normalize_host(srv_host)
    query = srv_query_name(host, service_name)
    records, min_ttl = _lookup_srv(resolver, query)
    if not records:
        raise ConfigurationError(
            f"the DNS name {query} has no SRV records, so the mongodb+srv:// connection "
            "string could not be used to find hosts"
        )
    valid, rejected = _verified_hosts(host, records)
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


# --- polling ---------------------------------------------------------------------


class TopologyView(Protocol):
    """What the poller reads from the topology: its type and its servers' addresses.
    A TopologyDescription is one."""

    @property
    def type(self) -> TopologyType: ...

    @property
    def servers(self) -> Mapping[Address, Any]: ...


#: (lowest TTL of the last rescan or None, whether it found verified hosts) -> seconds.
IntervalSource = Callable[[Optional[float], bool], float]


class SrvPoller:
    """The SRV polling thread of a ``mongodb+srv://`` client (Polling, "Multi-Threaded
    Drivers").

    Every rescanSRVIntervalMS, counted from the end of the previous lookup (the first
    from the end of initial discovery, whose TTL is ``initial_ttl``), while the
    topology is Sharded or Unknown, it queries the SRV records again, drops (and
    logs) targets outside the SRV host's domain, and computes the new host list with
    :func:`updated_srv_hosts` from the topology's current servers. When that list
    differs from the current servers it calls ``on_hosts(new_hosts)`` on this
    thread; applying it to the topology is the caller's work. A failed lookup or one
    with no verified host changes nothing; it is logged on ``mongocore.srv`` and the
    next rescan comes after heartbeatFrequencyMS.

    SDAM never turns a topology of another type back into Sharded or Unknown, so the
    thread ends once it sees one. ``interval`` replaces :func:`rescan_srv_interval`.
    """

    THREAD_NAME = "mongocore-srv-poller"

    def __init__(
        self,
        srv_host: str,
        *,
        resolver: Resolver,
        on_hosts: Callable[[list[Address]], None],
        description: Callable[[], TopologyView],
        service_name: str = "mongodb",
        srv_max_hosts: int = 0,
        heartbeat_frequency_ms: int,
        initial_ttl: Optional[float] = None,
        interval: Optional[IntervalSource] = None,
        rng: Shuffler = random,
    ) -> None:
        self._srv_host = _normalize_host(srv_host)
        self._query = srv_query_name(self._srv_host, service_name)
        self._resolver = resolver
        self._on_hosts = on_hosts
        self._description = description
        self._srv_max_hosts = srv_max_hosts
        self._initial_ttl = initial_ttl
        if interval is None:

            def interval(min_ttl: Optional[float], succeeded: bool) -> float:
                return rescan_srv_interval(
                    min_ttl, succeeded=succeeded, heartbeat_frequency_ms=heartbeat_frequency_ms
                )

        self._interval: IntervalSource = interval
        self._rng = rng
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """Start the thread (once; a closed poller does not start again)."""
        with self._lock:
            if self._thread is not None or self._stopped.is_set():
                return
            self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the thread and join it. A lookup in progress is not interrupted: the
        join waits for it (at most the resolver's timeout)."""
        self._stopped.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    @property
    def is_alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def rescan(self) -> Optional[float]:
        """One rescan, now, on the calling thread: what the thread does each time.

        Returns the seconds until the next rescan, or None when the topology type
        no longer allows polling.
        """
        view = self._description()
        if view.type not in SRV_POLLING_TOPOLOGY_TYPES:
            _log.debug("SRV polling of %s stops: the topology is %s", self._query, view.type)
            return None
        try:
            records, min_ttl = _lookup_srv(self._resolver, self._query)
        except Exception as exc:  # any resolver failure leaves the topology alone
            _log.warning(
                "SRV rescan of %s failed; the host list is unchanged: %s", self._query, exc
            )
            return self._interval(None, False)
        valid, rejected = _verified_hosts(self._srv_host, records)
        for host in rejected:
            _log.warning(
                "SRV rescan of %s: ignoring %r, which is not in the domain %r",
                self._query,
                host,
                srv_domain_name(self._srv_host),
            )
        if not valid:
            _log.warning(
                "SRV rescan of %s found no %shosts; the host list is unchanged",
                self._query,
                "valid " if rejected else "",
            )
            return self._interval(None, False)
        current = list(view.servers)
        new_hosts = updated_srv_hosts(current, valid, self._srv_max_hosts, self._rng)
        if set(new_hosts) != set(current) and not self._stopped.is_set():
            _log.info("SRV rescan of %s: hosts are now %s", self._query, new_hosts)
            self._on_hosts(new_hosts)
        return self._interval(min_ttl, True)

    def _run(self) -> None:
        wait: Optional[float] = self._interval(self._initial_ttl, True)
        while wait is not None and not self._stopped.wait(wait):
            try:
                wait = self.rescan()
            except Exception:  # e.g. in on_hosts: log it, keep polling
                _log.exception("SRV rescan of %s failed", self._query)
                wait = self._interval(None, False)
