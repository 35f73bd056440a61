"""Unit tests for mongocore.io.srv, srv_polling and dns_resolver: seed-list discovery and
SRV polling, with fake DNS."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Optional, Union

import dns.exception
import dns.resolver
import dns.rrset
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core.address import Address
from mongocore.core.description.types import TopologyType
from mongocore.core.options import ClientOptions
from mongocore.errors import ConfigurationError, InvalidURI
from mongocore.io.dns_resolver import DnsPythonResolver, Resolver, TtlResolver
from mongocore.io.srv import (
    SeedList,
    is_valid_srv_target,
    merge_txt_options,
    options_with_seedlist,
    parse_txt_options,
    resolve_seedlist,
    select_srv_hosts,
    srv_domain_name,
    srv_query_name,
)
from mongocore.io.srv_polling import (
    MIN_RESCAN_SRV_INTERVAL,
    SrvPoller,
    rescan_srv_interval,
    updated_srv_hosts,
)

SrvAnswer = Union[Sequence[tuple[str, int]], Exception]
TxtAnswer = Union[Sequence[str], Exception]


class FakeResolver:
    """Answers by query name; an Exception answer is raised. Records every query."""

    def __init__(
        self,
        srv: Optional[Mapping[str, SrvAnswer]] = None,
        txt: Optional[Mapping[str, TxtAnswer]] = None,
    ) -> None:
        self.srv_answers: dict[str, SrvAnswer] = dict(srv or {})
        self.txt_answers: dict[str, TxtAnswer] = dict(txt or {})
        self.queries: list[tuple[str, str]] = []

    def srv(self, name: str) -> list[tuple[str, int]]:
        self.queries.append(("SRV", name))
        answer = self.srv_answers.get(name)
        if answer is None:
            raise ConfigurationError(f"the SRV lookup of {name} failed: NXDOMAIN")
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    def txt(self, name: str) -> list[str]:
        self.queries.append(("TXT", name))
        answer = self.txt_answers.get(name, [])
        if isinstance(answer, Exception):
            raise answer
        return list(answer)


class FakeTtlResolver(FakeResolver):
    def __init__(self, *args: Any, ttl: Optional[float] = 300.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ttl = ttl

    def srv_with_ttl(self, name: str) -> tuple[list[tuple[str, int]], Optional[float]]:
        return self.srv(name), self.ttl


class Reversing:
    """A Shuffler whose 'shuffle' reverses, so selections are known in advance."""

    def __init__(self) -> None:
        self.calls = 0

    def shuffle(self, x: list[Any]) -> None:
        self.calls += 1
        x.reverse()


def dns_error(kind: Any, **kwargs: Any) -> Exception:
    """A dnspython exception (its constructors are untyped)."""
    error: Exception = kind(**kwargs)
    return error


def _alive(poller: SrvPoller) -> bool:
    return poller.is_alive


def a(host: str, port: int = 27017) -> Address:
    return Address(host, port)


def q(host: str, service: str = "mongodb") -> str:
    return f"_{service}._tcp.{host}"


# --- names and the domain rule ------------------------------------------------------


def test_query_name_prefixes_service_and_protocol() -> None:
    assert srv_query_name("Cluster0.Example.COM.") == "_mongodb._tcp.cluster0.example.com"
    assert srv_query_name("a.example.com", "customname") == "_customname._tcp.a.example.com"


@pytest.mark.parametrize(
    ("srv_host", "domain"),
    [
        # The spec's examples ("Connection String Format").
        ("cluster_1.tests.mongodb.co.uk", "tests.mongodb.co.uk"),
        ("hosts_34.example.com", "example.com"),
        ("localhost", "localhost"),
        ("mongodb.local", "mongodb.local"),
    ],
)
def test_domain_name(srv_host: str, domain: str) -> None:
    assert srv_domain_name(srv_host) == domain


@pytest.mark.parametrize(
    ("srv_host", "target"),
    [
        ("server.mongodb.com", "mongodb1.mongodb.com"),
        ("localhost", "test_1.localhost"),
        ("mongo.local", "test_1.mongo.local"),
        ("test18.test.build.10gen.cc", "localhost.sub.test.build.10gen.cc"),
        ("blogs.mongodb.com", "CLUSTER.MONGODB.COM."),  # normalized before the check
        # Identical to an SRV host of three or more parts (2025-04-22 revision).
        ("build.10gen.cc", "build.10gen.cc"),
        ("test.build.10gen.cc", "test.build.10gen.cc"),
    ],
)
def test_valid_targets(srv_host: str, target: str) -> None:
    assert is_valid_srv_target(srv_host, target)


@pytest.mark.parametrize(
    ("srv_host", "target"),
    [
        # Prose test 2: does not end with the SRV's domain.
        ("localhost", "localhost.mongodb"),
        ("mongo.local", "test_1.evil.local"),
        ("blogs.mongodb.com", "blogs.evil.com"),
        # Prose test 3: identical to an SRV host of fewer than three parts.
        ("localhost", "localhost"),
        ("mongo.local", "mongo.local"),
        # Prose test 4: the shared part is not separated by a '.'.
        ("localhost", "test_1.cluster_1localhost"),
        ("mongo.local", "test_1.my_hostmongo.local"),
        ("blogs.mongodb.com", "cluster.testmongodb.com"),
        # The seedlist suite's DNS set-up: parent too short, parent parts mismatched.
        ("test12.test.build.10gen.cc", "localhost.build.10gen.cc"),
        ("test13.test.build.10gen.cc", "test.build.10gen.cc"),
        ("test14.test.build.10gen.cc", "localhost.not-test.build.10gen.cc"),
        ("test15.test.build.10gen.cc", "localhost.test.not-build.10gen.cc"),
        ("test16.test.build.10gen.cc", "localhost.test.build.not-10gen.cc"),
        ("test17.test.build.10gen.cc", "localhost.test.build.10gen.not-cc"),
    ],
)
def test_invalid_targets(srv_host: str, target: str) -> None:
    assert not is_valid_srv_target(srv_host, target)
    resolver = FakeResolver(srv={q(srv_host): [(target, 27017)]})
    with pytest.raises(ConfigurationError, match="not in the domain"):
        resolve_seedlist(srv_host, resolver=resolver)


# --- initial discovery ------------------------------------------------------------


def test_resolve_seedlist_uses_every_srv_record() -> None:
    resolver = FakeResolver(
        srv={
            q("server.mongodb.com"): [
                ("Mongodb1.MongoDB.com.", 27317),
                ("mongodb2.mongodb.com", 27017),
                ("mongodb1.mongodb.com", 27317),  # a duplicate is kept once
            ]
        }
    )
    seedlist = resolve_seedlist("Server.MongoDB.com", resolver=resolver)
    assert seedlist == SeedList(
        hosts=(a("mongodb1.mongodb.com", 27317), a("mongodb2.mongodb.com")),
        options={},
        min_ttl=None,
    )
    # SRV then TXT, on the host name itself for TXT; no other query.
    assert resolver.queries == [("SRV", q("server.mongodb.com")), ("TXT", "server.mongodb.com")]


def test_resolve_seedlist_custom_service_name_and_ttl() -> None:
    resolver = FakeTtlResolver(
        srv={q("test22.test.build.10gen.cc", "customname"): [("localhost.test.build.10gen.cc", 1)]},
        ttl=86400.0,
    )
    seedlist = resolve_seedlist(
        "test22.test.build.10gen.cc", service_name="customname", resolver=resolver
    )
    assert seedlist.hosts == (a("localhost.test.build.10gen.cc", 1),)
    assert seedlist.min_ttl == 86400.0


def test_one_mixed_answer_is_refused_whole() -> None:
    host = "test19.test.build.10gen.cc"
    resolver = FakeResolver(
        srv={
            q(host): [
                ("localhost.evil.build.10gen.cc", 27017),
                ("localhost.test.build.10gen.cc", 27017),
            ]
        }
    )
    with pytest.raises(ConfigurationError) as info:
        resolve_seedlist(host, resolver=resolver)
    assert "'localhost.evil.build.10gen.cc'" in str(info.value)
    assert "localhost.test.build.10gen.cc'" not in str(info.value).split("which")[0]


def test_no_srv_records_is_an_error() -> None:
    resolver = FakeResolver(srv={q("a.example.com"): []})
    with pytest.raises(ConfigurationError, match=r"_mongodb\._tcp\.a\.example\.com has no SRV"):
        resolve_seedlist("a.example.com", resolver=resolver)


def test_resolver_errors_propagate_and_stop_discovery() -> None:
    resolver = FakeResolver()  # every SRV name is NXDOMAIN
    with pytest.raises(ConfigurationError, match="NXDOMAIN"):
        resolve_seedlist("test4.test.build.10gen.cc", resolver=resolver)
    assert resolver.queries == [("SRV", q("test4.test.build.10gen.cc"))]

    txt_failure = FakeResolver(
        srv={q("a.example.com"): [("h.example.com", 1)]},
        txt={"a.example.com": ConfigurationError("the TXT lookup of a.example.com timed out")},
    )
    with pytest.raises(ConfigurationError, match="TXT lookup"):
        resolve_seedlist("a.example.com", resolver=txt_failure)


def test_fewer_than_three_parts_are_allowed() -> None:
    # Prose test 1: no error before DNS; the targets need one more level.
    for srv_host, target in (("localhost", "db.localhost"), ("mongo.local", "x.mongo.local")):
        resolver = FakeResolver(srv={q(srv_host): [(target, 27017)]})
        config = options_with_seedlist(f"mongodb+srv://{srv_host}", resolver=resolver)
        assert config.topology_settings.seeds == (a(target),)


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb+srv://a.example.com:27017",
        "mongodb+srv://a.example.com,b.example.com",
        "mongodb+srv://a.example.com/?directConnection=true",
        "mongodb+srv://a.example.com/?srvMaxHosts=1&replicaSet=rs",
        "mongodb+srv://a.example.com/?srvMaxHosts=1&loadBalanced=true",
    ],
)
def test_uri_errors_come_before_any_dns_query(uri: str) -> None:
    resolver = FakeResolver(srv={q("a.example.com"): [("h.example.com", 27017)]})
    with pytest.raises(ConfigurationError):
        options_with_seedlist(uri, resolver=resolver)
    assert resolver.queries == []


# --- TXT records ----------------------------------------------------------------------


def _with_txt(*records: str, hosts: int = 1) -> FakeResolver:
    return FakeResolver(
        srv={q("a.example.com"): [(f"h{i}.example.com", 27017) for i in range(hosts)]},
        txt={"a.example.com": list(records)},
    )


def test_txt_options() -> None:
    seedlist = resolve_seedlist(
        "a.example.com", resolver=_with_txt("replicaSet=repl0&authSource=thisDB")
    )
    assert seedlist.options == {"replicaSet": "repl0", "authSource": "thisDB"}


def test_txt_keys_are_case_insensitive_and_values_percent_decoded() -> None:
    assert parse_txt_options("REPLICASET=rs%2D0&&loadbalanced=false&") == {
        "replicaSet": "rs-0",
        "loadBalanced": "false",
    }


def test_repeated_txt_key_warns_and_the_last_wins(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mongocore.srv"):
        assert parse_txt_options("replicaSet=a&replicaSet=b") == {"replicaSet": "b"}
    assert "replicaSet more than once" in caplog.text


def test_more_than_one_txt_record_is_an_error() -> None:
    resolver = _with_txt("replicaSet=repl0", "authSource=otherDB")
    with pytest.raises(ConfigurationError, match="2 TXT records"):
        resolve_seedlist("a.example.com", resolver=resolver)


@pytest.mark.parametrize(
    ("text", "error", "named"),
    [
        ("socketTimeoutMS=500", ConfigurationError, "'socketTimeoutMS'"),
        ("ssl=false", ConfigurationError, "'ssl'"),
        ("tls=true", ConfigurationError, "'tls'"),
        ("replicaSet=rs&w=1", ConfigurationError, "'w'"),
        ("unknownKey=1", ConfigurationError, "'unknownKey'"),
        ("authSource", InvalidURI, "'authSource' without a value"),
        ("loadBalanced=maybe", InvalidURI, "loadBalanced"),
        ("replicaSet=", InvalidURI, "replicaSet"),
        ("authSource=%FF", InvalidURI, "UTF-8"),
    ],
)
def test_bad_txt_records(text: str, error: type[Exception], named: str) -> None:
    with pytest.raises(error) as info:
        resolve_seedlist("a.example.com", resolver=_with_txt(text))
    assert named in str(info.value)
    assert "a.example.com" in str(info.value)


# --- srvMaxHosts -----------------------------------------------------------------------

_FIVE = [a(f"h{i}.example.com") for i in range(5)]


@pytest.mark.parametrize("srv_max_hosts", [0, 5, 6])
def test_srv_max_hosts_keeps_all_hosts(srv_max_hosts: int) -> None:
    rng = Reversing()
    assert select_srv_hosts(_FIVE, srv_max_hosts, rng) == _FIVE
    assert rng.calls == 0


def test_srv_max_hosts_selects_with_the_injected_rng() -> None:
    rng = Reversing()
    assert select_srv_hosts(_FIVE, 2, rng) == [_FIVE[4], _FIVE[3]]
    assert rng.calls == 1


def test_srv_max_hosts_random_subset_is_seeded_and_varies() -> None:
    resolver = _with_txt(hosts=5)
    first = resolve_seedlist(
        "a.example.com", srv_max_hosts=2, resolver=resolver, rng=random.Random(7)
    )
    again = resolve_seedlist(
        "a.example.com", srv_max_hosts=2, resolver=resolver, rng=random.Random(7)
    )
    assert first == again
    assert len(first.hosts) == 2 and len(set(first.hosts)) == 2
    assert set(first.hosts) <= set(_FIVE)
    seen: set[Address] = set()
    for seed in range(100):
        seen.update(select_srv_hosts(_FIVE, 2, random.Random(seed)))
    assert seen == set(_FIVE)


# --- merging options ---------------------------------------------------------------------


def _configure(uri: str, resolver: Resolver, **kwargs: Any) -> ClientOptions:
    return options_with_seedlist(uri, resolver=resolver, **kwargs).options


def test_options_with_seedlist() -> None:
    resolver = _with_txt("replicaSet=repl0&authSource=thisDB", hosts=2)
    config = options_with_seedlist("mongodb+srv://user:pw@A.example.com/db", resolver=resolver)
    assert config.seedlist is not None
    assert config.seedlist.hosts == (a("h0.example.com"), a("h1.example.com"))
    assert config.topology_settings.seeds == config.seedlist.hosts
    assert config.topology_settings.srv
    assert config.topology_settings.replica_set == "repl0"
    options = config.options
    assert (options.srv_host, options.hosts) == ("a.example.com", ())
    assert (options.replica_set, options.auth_source, options.database) == ("repl0", "thisDB", "db")
    assert (options.username, options.password) == ("user", "pw")
    assert options.tls is True


def test_tls_defaults_on_and_can_be_turned_off() -> None:
    resolver = _with_txt()
    assert _configure("mongodb+srv://a.example.com", resolver).tls is True
    assert _configure("mongodb+srv://a.example.com/?tls=false", resolver).tls is False
    assert _configure("mongodb+srv://a.example.com/?ssl=false", resolver).tls is False
    assert _configure("mongodb+srv://a.example.com", resolver, tls=False).tls is False


def test_uri_options_override_txt_options() -> None:
    resolver = _with_txt("replicaSet=repl0&authSource=thisDB&loadBalanced=false")
    options = _configure(
        "mongodb+srv://a.example.com/?authSource=otherDB&replicaSet=mine", resolver
    )
    assert (options.auth_source, options.replica_set) == ("otherDB", "mine")

    lb = _with_txt("loadBalanced=true")
    assert _configure("mongodb+srv://a.example.com/?LOADBALANCED=false", lb).load_balanced is False
    assert _configure("mongodb+srv://a.example.com", lb).load_balanced is True


@pytest.mark.parametrize("key", ["replicaSet", "replica_set", "REPLICASET"])
def test_keyword_arguments_override_txt_options(key: str) -> None:
    resolver = _with_txt("replicaSet=repl0&authSource=thisDB")
    options = _configure("mongodb+srv://a.example.com", resolver, **{key: "fromcode"})
    assert (options.replica_set, options.auth_source) == ("fromcode", "thisDB")


def test_txt_auth_source_overrides_the_database_default() -> None:
    options = _configure("mongodb+srv://a.example.com/admin", _with_txt("authSource=thisDB"))
    assert (options.database, options.auth_source) == ("admin", "thisDB")
    plain = _configure("mongodb+srv://a.example.com/admin", _with_txt())
    assert plain.auth_source == "admin"


def test_merge_txt_options_directly() -> None:
    base = ClientOptions.from_uri("mongodb+srv://a.example.com")
    merged = merge_txt_options(
        base, {"replicaSet": "rs", "loadBalanced": "false"}, given={"replicaSet"}
    )
    assert merged.replica_set is None and merged.load_balanced is False
    assert merge_txt_options(base, {}, given=()) is base


@pytest.mark.parametrize(
    ("uri", "txt", "hosts", "message"),
    [
        # Options are checked again once the TXT options are in.
        ("mongodb+srv://a.example.com/?srvMaxHosts=1", "replicaSet=repl0", 2, "srvMaxHosts"),
        ("mongodb+srv://a.example.com/?srvMaxHosts=1", "loadBalanced=true", 1, "srvMaxHosts"),
        ("mongodb+srv://a.example.com", "loadBalanced=true", 2, "exactly one host"),
        ("mongodb+srv://a.example.com/?replicaSet=rs", "loadBalanced=true", 1, "replicaSet"),
    ],
)
def test_txt_options_are_validated_with_the_uri(
    uri: str, txt: str, hosts: int, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        options_with_seedlist(uri, resolver=_with_txt(txt, hosts=hosts))


def test_load_balanced_from_txt_with_one_host() -> None:
    config = options_with_seedlist(
        "mongodb+srv://a.example.com/?srvMaxHosts=0", resolver=_with_txt("loadBalanced=true")
    )
    assert config.options.load_balanced
    assert config.topology_settings.initial_topology_type is TopologyType.LOAD_BALANCED


def test_non_srv_uri_needs_no_dns() -> None:
    resolver = FakeResolver()
    config = options_with_seedlist("mongodb://h1,h2:27018", resolver=resolver)
    assert config.seedlist is None
    assert config.topology_settings.seeds == (a("h1"), a("h2", 27018))
    assert resolver.queries == []


# --- the dnspython resolver ----------------------------------------------------------------


class FakeDnsPython:
    """Stands in for dns.resolver.resolve: answers or raises per (name, type)."""

    def __init__(self, answers: Mapping[tuple[str, str], Any]) -> None:
        self.answers = dict(answers)
        self.calls: list[tuple[str, str, Optional[float]]] = []

    def __call__(self, name: str, rdtype: str, *, lifetime: Optional[float] = None) -> Any:
        self.calls.append((name, rdtype, lifetime))
        answer = self.answers[(name, rdtype)]
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(rrset=answer)


def test_dnspython_resolver_srv() -> None:
    name = "_mongodb._tcp.a.example.com"
    rrset = dns.rrset.from_text(
        name + ".", 120, "IN", "SRV", "0 5 27317 Host1.Example.com.", "1 0 27017 host2.example.com."
    )
    fake = FakeDnsPython({(name, "SRV"): rrset})
    resolver = DnsPythonResolver(3.5, resolve=fake)
    assert isinstance(resolver, TtlResolver)
    assert resolver.srv_with_ttl(name) == (
        [("Host1.Example.com", 27317), ("host2.example.com", 27017)],
        120.0,
    )
    assert resolver.srv(name) == [("Host1.Example.com", 27317), ("host2.example.com", 27017)]
    assert fake.calls[0] == (name, "SRV", 3.5)


def test_dnspython_resolver_txt_joins_each_records_strings() -> None:
    rrset = dns.rrset.from_text(
        "a.example.com.", 60, "IN", "TXT", '"replicaS" "et=rep" "l0"', '"authSource=x"'
    )
    resolver = DnsPythonResolver(resolve=FakeDnsPython({("a.example.com", "TXT"): rrset}))
    assert sorted(resolver.txt("a.example.com")) == ["authSource=x", "replicaSet=repl0"]


@pytest.mark.parametrize(
    "error", [dns_error(dns.resolver.NXDOMAIN), dns_error(dns.resolver.NoAnswer)]
)
def test_dnspython_resolver_no_txt_record_is_empty(error: Exception) -> None:
    resolver = DnsPythonResolver(resolve=FakeDnsPython({("a.example.com", "TXT"): error}))
    assert resolver.txt("a.example.com") == []


def test_dnspython_resolver_txt_must_be_utf8() -> None:
    rrset = dns.rrset.from_text("a.example.com.", 60, "IN", "TXT", '"authSource=\\255"')
    resolver = DnsPythonResolver(resolve=FakeDnsPython({("a.example.com", "TXT"): rrset}))
    with pytest.raises(ConfigurationError, match="not valid UTF-8"):
        resolver.txt("a.example.com")


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (dns_error(dns.resolver.NXDOMAIN), "NXDOMAIN"),
        (dns_error(dns.resolver.NoAnswer), "no SRV record"),
        (
            dns_error(dns.resolver.LifetimeTimeout, timeout=2.0, errors=[]),
            "no answer within 2.0 seconds",
        ),
        (dns_error(dns.exception.Timeout), "no answer within 2.0 seconds"),
        (dns_error(dns.resolver.NoNameservers), "All nameservers failed"),
    ],
)
def test_dnspython_resolver_srv_errors(error: Exception, reason: str) -> None:
    name = "_mongodb._tcp.a.example.com"
    resolver = DnsPythonResolver(2.0, resolve=FakeDnsPython({(name, "SRV"): error}))
    with pytest.raises(ConfigurationError) as info:
        resolver.srv(name)
    message = str(info.value)
    assert f"SRV lookup of {name} failed" in message
    assert reason in message


def test_dnspython_resolver_txt_timeout_is_an_error() -> None:
    resolver = DnsPythonResolver(
        1.0, resolve=FakeDnsPython({("a.example.com", "TXT"): dns_error(dns.exception.Timeout)})
    )
    with pytest.raises(ConfigurationError, match=r"TXT lookup of a\.example\.com failed"):
        resolver.txt("a.example.com")


def test_dnspython_resolver_error_reaches_resolve_seedlist() -> None:
    name = "_mongodb._tcp.a.example.com"
    resolver = DnsPythonResolver(
        resolve=FakeDnsPython({(name, "SRV"): dns_error(dns.resolver.NXDOMAIN)})
    )
    with pytest.raises(ConfigurationError, match="could not be used to find hosts"):
        resolve_seedlist("a.example.com", resolver=resolver)


# --- polling: the pure rules -------------------------------------------------------------

L17, L18, L19, L20 = (a("localhost.test.build.10gen.cc", p) for p in (27017, 27018, 27019, 27020))


@pytest.mark.parametrize(
    ("current", "resolved", "srv_max_hosts", "expected"),
    [
        # Polling prose tests 1-5 (srvMaxHosts 0).
        ([L17, L18], [L17, L18, L19], 0, [L17, L18, L19]),
        ([L17, L18], [L17], 0, [L17]),
        ([L17, L18], [L17, L19], 0, [L17, L19]),
        ([L17, L18], [L19], 0, [L19]),
        ([L17, L18], [L19, L20], 0, [L19, L20]),
        # Prose tests 10 and 11.
        ([L17, L18], [L17, L19, L20], 0, [L17, L19, L20]),
        ([L17, L18], [L19, L20], 2, [L19, L20]),
        # Unchanged records leave the list unchanged, in its order.
        ([L18, L17], [L17, L18], 0, [L18, L17]),
        # Kept hosts are never dropped to make room.
        ([L17, L18, L19], [L17, L18, L19, L20], 2, [L17, L18, L19]),
    ],
)
def test_updated_srv_hosts(
    current: list[Address], resolved: list[Address], srv_max_hosts: int, expected: list[Address]
) -> None:
    assert updated_srv_hosts(current, resolved, srv_max_hosts, Reversing()) == expected


def test_updated_srv_hosts_random_new_hosts_up_to_srv_max_hosts() -> None:
    # Prose test 12: srvMaxHosts=2, 27018 replaced by 27019 and 27020.
    rng = Reversing()
    assert updated_srv_hosts([L17, L18], [L17, L19, L20], 2, rng) == [L17, L20]
    assert rng.calls == 1
    outcomes = {
        tuple(updated_srv_hosts([L17, L18], [L17, L19, L20], 2, random.Random(seed)))
        for seed in range(50)
    }
    assert outcomes == {(L17, L19), (L17, L20)}


_PORTS = st.lists(st.integers(27017, 27030), unique=True, max_size=8)


@given(current=_PORTS, resolved=_PORTS.filter(bool), srv_max_hosts=st.integers(0, 10))
def test_updated_srv_hosts_properties(
    current: list[int], resolved: list[int], srv_max_hosts: int
) -> None:
    now = [a("h.example.com", p) for p in current]
    found = [a("h.example.com", p) for p in resolved]
    result = updated_srv_hosts(now, found, srv_max_hosts, random.Random(0))
    kept = [h for h in now if h in found]
    assert result[: len(kept)] == kept  # surviving hosts stay, in order
    assert set(result) <= set(found) and len(set(result)) == len(result)
    if srv_max_hosts == 0 or srv_max_hosts >= len(found):
        assert set(result) == set(found)
    else:
        assert len(result) == max(len(kept), srv_max_hosts)


def test_rescan_interval() -> None:
    heartbeat = 10_000
    assert rescan_srv_interval(86400, succeeded=True, heartbeat_frequency_ms=heartbeat) == 86400
    assert rescan_srv_interval(5, succeeded=True, heartbeat_frequency_ms=heartbeat) == 60.0
    assert rescan_srv_interval(None, succeeded=True, heartbeat_frequency_ms=heartbeat) == 60.0
    assert rescan_srv_interval(86400, succeeded=False, heartbeat_frequency_ms=heartbeat) == 10.0
    assert MIN_RESCAN_SRV_INTERVAL == 60.0


# --- polling: one rescan at a time -------------------------------------------------------

SRV1 = "test1.test.build.10gen.cc"


@dataclass
class View:
    type: TopologyType
    servers: Mapping[Address, Any]


@dataclass
class FakeTopology:
    """Applies on_hosts as the topology would; gives snapshots to the poller."""

    type: TopologyType = TopologyType.SHARDED
    hosts: list[Address] = field(default_factory=lambda: [L17, L18])
    updates: list[list[Address]] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def description(self) -> View:
        with self.lock:
            return View(self.type, dict.fromkeys(self.hosts))

    def on_hosts(self, hosts: list[Address]) -> None:
        with self.lock:
            self.hosts = list(hosts)
            self.updates.append(list(hosts))
            self.lock.notify_all()


def _poller(
    topology: FakeTopology, resolver: Resolver, srv_host: str = SRV1, **kwargs: Any
) -> SrvPoller:
    kwargs.setdefault("heartbeat_frequency_ms", 10_000)
    return SrvPoller(
        srv_host,
        resolver=resolver,
        on_hosts=topology.on_hosts,
        description=topology.description,
        **kwargs,
    )


def _records(*addresses: Address) -> list[tuple[str, int]]:
    return [(address.host, address.port or 0) for address in addresses]


def test_rescan_applies_changes_and_uses_the_ttl() -> None:
    topology = FakeTopology()
    resolver = FakeTtlResolver(srv={q(SRV1): _records(L17, L19)}, ttl=90.0)
    poller = _poller(topology, resolver)
    assert poller.rescan() == 90.0
    assert topology.updates == [[L17, L19]]
    assert poller.rescan() == 90.0  # nothing changed: no update
    assert topology.updates == [[L17, L19]]
    assert ("TXT", SRV1) not in resolver.queries  # rescans query SRV only


def test_rescan_without_ttl_waits_sixty_seconds() -> None:
    topology = FakeTopology()
    poller = _poller(topology, FakeResolver(srv={q(SRV1): _records(L17, L18)}))
    assert poller.rescan() == 60.0
    assert topology.updates == []


@pytest.mark.parametrize(
    "answer",
    [
        ConfigurationError("the SRV lookup failed: no answer within 20.0 seconds"),  # prose 6
        ConfigurationError("the SRV lookup failed: NXDOMAIN"),  # prose 7
        [],  # prose 8: all records removed
        RuntimeError("a resolver bug"),
    ],
)
def test_rescan_failures_keep_the_hosts(
    answer: SrvAnswer, caplog: pytest.LogCaptureFixture
) -> None:
    topology = FakeTopology()
    poller = _poller(topology, FakeTtlResolver(srv={q(SRV1): answer}), heartbeat_frequency_ms=2500)
    with caplog.at_level(logging.WARNING, logger="mongocore.srv"):
        assert poller.rescan() == 2.5  # heartbeatFrequencyMS until a rescan succeeds
    assert topology.updates == []
    assert topology.hosts == [L17, L18]
    assert "unchanged" in caplog.text


def test_rescan_ignores_and_logs_invalid_targets(caplog: pytest.LogCaptureFixture) -> None:
    topology = FakeTopology()
    records = [*_records(L17), ("localhost.evil.build.10gen.cc", 27019)]
    poller = _poller(topology, FakeTtlResolver(srv={q(SRV1): records}))
    with caplog.at_level(logging.WARNING, logger="mongocore.srv"):
        assert poller.rescan() == 300.0
    assert topology.updates == [[L17]]
    assert "localhost.evil.build.10gen.cc" in caplog.text

    only_invalid = _poller(
        FakeTopology(),
        FakeTtlResolver(srv={q(SRV1): [("localhost.evil.build.10gen.cc", 27019)]}),
    )
    assert only_invalid.rescan() == 10.0


def test_rescan_with_srv_max_hosts_and_service_name() -> None:
    host = "test22.test.build.10gen.cc"
    topology = FakeTopology(hosts=[L17])
    resolver = FakeTtlResolver(srv={q(host, "customname"): _records(L19, L20)})
    poller = _poller(topology, resolver, host, service_name="customname", srv_max_hosts=1)
    poller.rescan()
    assert len(topology.updates) == 1
    assert len(topology.hosts) == 1 and topology.hosts[0] in (L19, L20)


@pytest.mark.parametrize(
    "topology_type",
    [
        TopologyType.SINGLE,
        TopologyType.REPLICA_SET_NO_PRIMARY,
        TopologyType.REPLICA_SET_WITH_PRIMARY,
        TopologyType.LOAD_BALANCED,  # prose test 9
    ],
)
def test_no_rescan_unless_sharded_or_unknown(topology_type: TopologyType) -> None:
    resolver = FakeTtlResolver(srv={q(SRV1): _records(L19)})
    poller = _poller(FakeTopology(type=topology_type), resolver)
    assert poller.rescan() is None
    assert resolver.queries == []


def test_rescan_in_an_unknown_topology() -> None:
    topology = FakeTopology(type=TopologyType.UNKNOWN)
    poller = _poller(topology, FakeTtlResolver(srv={q(SRV1): _records(L17, L18, L19)}))
    poller.rescan()
    assert topology.updates == [[L17, L18, L19]]


# --- polling: the thread ---------------------------------------------------------------------


class ScriptedResolver(FakeTtlResolver):
    """Answers SRV queries from a script, then repeats the last answer; counts them."""

    def __init__(self, name: str, script: Sequence[SrvAnswer]) -> None:
        super().__init__(ttl=120.0)
        self.name = name
        self.script = list(script)
        self.calls = 0
        self.changed = threading.Condition()

    def srv(self, name: str) -> list[tuple[str, int]]:
        with self.changed:
            answer = self.script[min(self.calls, len(self.script) - 1)]
            self.calls += 1
            self.changed.notify_all()
        assert name == self.name
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    def wait_for_calls(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.calls >= count, timeout=30)


class RecordingInterval:
    def __init__(self, value: float = 0.0) -> None:
        self.value = value
        self.calls: list[tuple[Optional[float], bool]] = []
        self.lock = threading.Lock()

    def __call__(self, min_ttl: Optional[float], succeeded: bool) -> float:
        with self.lock:
            self.calls.append((min_ttl, succeeded))
        return self.value


def test_thread_follows_the_records_and_stops_on_close() -> None:
    topology = FakeTopology()
    script: list[SrvAnswer] = [
        _records(L17, L18, L19),  # prose 1: addition
        ConfigurationError("the SRV lookup failed: no answer within 1 seconds"),
        [],
        _records(L17, L19),  # prose 2: removal
        _records(L19, L20),  # prose 5: both replaced
    ]
    resolver = ScriptedResolver(q(SRV1), script)
    interval = RecordingInterval()
    poller = _poller(topology, resolver, interval=interval, initial_ttl=86400.0)
    poller.start()
    try:
        assert resolver.wait_for_calls(len(script) + 1)
        assert _alive(poller)
        assert any(t.name == "mongocore-srv-poller" for t in threading.enumerate())
    finally:
        poller.close()
    assert not poller.is_alive
    assert topology.updates == [[L17, L18, L19], [L17, L19], [L19, L20]]
    assert interval.calls[0] == (86400.0, True)  # timed from initial discovery
    assert interval.calls[1:4] == [(120.0, True), (None, False), (None, False)]
    assert interval.calls[4] == (120.0, True)


def test_close_stops_a_waiting_thread_at_once() -> None:
    resolver = ScriptedResolver(q(SRV1), [_records(L19)])
    poller = _poller(FakeTopology(), resolver, interval=RecordingInterval(3600.0))
    poller.start()
    poller.close()
    assert not poller.is_alive
    assert resolver.calls == 0
    poller.start()  # a closed poller stays closed
    assert not poller.is_alive
    poller.close()


def test_thread_ends_when_the_topology_is_not_sharded() -> None:
    topology = FakeTopology(type=TopologyType.REPLICA_SET_WITH_PRIMARY)
    seen = threading.Event()

    def description() -> View:
        seen.set()
        return topology.description()

    resolver = ScriptedResolver(q(SRV1), [_records(L19)])
    poller = SrvPoller(
        SRV1,
        resolver=resolver,
        on_hosts=topology.on_hosts,
        description=description,
        heartbeat_frequency_ms=10_000,
        interval=RecordingInterval(),
    )
    poller.start()
    assert seen.wait(30)
    poller.close()
    assert resolver.calls == 0
    assert topology.updates == []


def test_thread_survives_a_failing_callback(caplog: pytest.LogCaptureFixture) -> None:
    topology = FakeTopology()
    failures: list[list[Address]] = []

    def on_hosts(hosts: list[Address]) -> None:
        if not failures:
            failures.append(hosts)
            raise RuntimeError("topology refused the update")
        topology.on_hosts(hosts)

    resolver = ScriptedResolver(q(SRV1), [_records(L19)])
    poller = SrvPoller(
        SRV1,
        resolver=resolver,
        on_hosts=on_hosts,
        description=topology.description,
        heartbeat_frequency_ms=10_000,
        interval=RecordingInterval(),
    )
    with caplog.at_level(logging.ERROR, logger="mongocore.srv"):
        poller.start()
        try:
            with topology.lock:
                assert topology.lock.wait_for(lambda: topology.updates, timeout=30)
        finally:
            poller.close()
    assert failures == [[L19]]
    assert topology.updates[0] == [L19]
    assert "topology refused the update" in caplog.text


def test_callable_on_close_from_the_callback() -> None:
    topology = FakeTopology()
    resolver = ScriptedResolver(q(SRV1), [_records(L19)])
    holder: list[SrvPoller] = []
    done = threading.Event()

    def on_hosts(hosts: list[Address]) -> None:
        topology.on_hosts(hosts)
        holder[0].close()  # must not deadlock by joining its own thread
        done.set()

    poller = SrvPoller(
        SRV1,
        resolver=resolver,
        on_hosts=on_hosts,
        description=topology.description,
        heartbeat_frequency_ms=10_000,
        interval=RecordingInterval(),
    )
    holder.append(poller)
    poller.start()
    assert done.wait(30)
    poller.close()
    assert not poller.is_alive
    assert topology.updates == [[L19]]


def test_protocols_are_structural() -> None:
    plain: Callable[..., Any] = FakeResolver
    assert isinstance(plain(), Resolver) and not isinstance(plain(), TtlResolver)
    assert isinstance(FakeTtlResolver(), TtlResolver)
