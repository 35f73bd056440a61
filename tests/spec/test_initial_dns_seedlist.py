"""The official initial-dns-seedlist-discovery suite (Initial DNS Seedlist Discovery
spec), one test per file of its replica-set, sharded and load-balanced folders, run
with a real DNS server and simulated deployments, as the suite's README sets them up.

- DNS: the A, SRV and TXT records the README lists are served by an authoritative
  server on 127.0.0.1 (tests/spec/dns_zone.py, built on dnspython). The client asks
  it through its public ``srv_resolver`` hook: a DnsPythonResolver whose dnspython
  resolver has that server as its only name server.
- Deployments (README, "Test Setup"): for replica-set, a replica set "repl0" whose
  members name themselves localhost:27017, :27018 and :27019; for sharded, two mongos
  at 27017 and 27018; for load-balanced, a load-balanced mongos behind port 8000 (the
  port of the records test23 and test24). Each is a simulated deployment
  (mongocore.sim) with TLS ("the clusters MUST be started with SSL enabled"), in
  preferTLS mode so that a test turning TLS off still reaches it. A class-scoped
  fixture starts each for its own folder's tests only and stops it after them.
- Host names: the simulated processes listen on free ports of 127.0.0.1, not on the
  fixed ports the records name (those would collide with a local mongod or with a
  parallel run). During each test, socket.getaddrinfo (which is how mongocore resolves
  a host) is patched to answer for exactly the (name, port) pairs the deployment
  serves: the records' host names and "localhost" with the deployment's record ports
  map to the process behind them; any other record host name resolves to its A
  record's address; every other lookup goes to the real function. The patch is undone
  after the test.

Assertions follow the README's "Test Format and Use": ``error`` means creating the
Client raises ConfigurationError (no deployment involved); otherwise ``seeds`` and
``numSeeds`` are checked against the client's initial seed list, ``options`` (any URI
option, its value in the file's form) against ``client.settings.get_option``,
``parsed_options`` against the user name, password and database of the connection
string, ``hosts`` and ``numHosts`` against the topology description's servers (waited
for on SDAM events), and a ``ping`` must succeed unless ``ping`` is false. A field,
option or parsed option the README does not define, or that the client does not hold,
fails the test naming it (tests/spec/format_keys.py).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import dns.resolver
import pytest
import trustme

from mongocore.api.client import Client
from mongocore.core.events import TopologyDescriptionChangedEvent, TopologyListener
from mongocore.core.options import ClientOptions, held_value
from mongocore.errors import ConfigurationError
from mongocore.io.dns_resolver import DnsPythonResolver
from mongocore.sim import LoadBalanced, MemberConfig, ReplicaSet, ShardedCluster
from tests.spec import deviations, specdata
from tests.spec.dns_zone import DnsServer, Zone, parse_records
from tests.spec.format_keys import check_keys

SUITE = "initial-dns-seedlist-discovery/tests"
#: Generous: every wait ends as soon as its condition holds.
DEADLINE = 30.0
DNS_TIMEOUT = 10.0
HEARTBEAT_FREQUENCY_MS = 500
REPLICA_SET_PORTS = (27017, 27018, 27019)
MONGOS_PORTS = (27017, 27018)
LOAD_BALANCER_PORT = 8000
KNOWN_FOLDERS = ("replica-set", "sharded", "load-balanced")


# --- session-wide parts: records, DNS server, certificates --------------------------------


#: A record the suite's files need that the README's list leaves out: for the custom
#: service name the README lists one SRV record (port 27017), while the test of
#: srvServiceName expects the seeds 27017 and 27018, as the public zone upstream runs
#: against answers. Serving it too is harmless if a later README lists it.
README_OMISSIONS = (
    (
        "_customname._tcp.test22.test.build.10gen.cc.",
        86400,
        "SRV",
        "27018 localhost.test.build.10gen.cc.",
    ),
)


@pytest.fixture(scope="module")
def zone() -> Zone:
    root = specdata.suite_dir(SUITE)
    assert root is not None, specdata.HOW_TO_GET
    records = parse_records((root / "README.md").read_text(encoding="utf-8"))
    for name, ttl, rdtype, data in README_OMISSIONS:
        records.add(name, ttl, rdtype, data)
    return records


@pytest.fixture(scope="module")
def dns_server(zone: Zone) -> Iterator[DnsServer]:
    server = DnsServer(zone).start()
    yield server
    server.stop()


@dataclass(frozen=True)
class Pki:
    ca_file: str
    server_context: ssl.SSLContext


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory, zone: Zone) -> Pki:
    """A CA, and a server certificate for every host name a client may connect to."""
    ca = trustme.CA()
    names = sorted(zone.names_of_type("A") | {"localhost"})
    certificate = ca.issue_cert(*names, "127.0.0.1")
    ca_file = tmp_path_factory.mktemp("dns-seedlist") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    certificate.configure_cert(context)
    return Pki(str(ca_file), context)


# --- deployments --------------------------------------------------------------------------


@dataclass(frozen=True)
class Deployment:
    #: The port a record names -> the port the simulated process listens on.
    ports: Mapping[int, int]


@pytest.fixture(scope="class")
def replica_set(pki: Pki) -> Iterator[Deployment]:
    members = [MemberConfig(host=f"localhost:{port}") for port in REPLICA_SET_PORTS]
    with ReplicaSet(
        members, name="repl0", tls=pki.server_context, tls_mode="preferTLS"
    ) as deployment:
        yield Deployment({p: m.port for p, m in zip(REPLICA_SET_PORTS, deployment.members)})


@pytest.fixture(scope="class")
def sharded(pki: Pki) -> Iterator[Deployment]:
    with ShardedCluster(
        len(MONGOS_PORTS), shard_members=1, tls=pki.server_context, tls_mode="preferTLS"
    ) as deployment:
        yield Deployment({p: m.port for p, m in zip(MONGOS_PORTS, deployment.mongoses)})


@pytest.fixture(scope="class")
def load_balanced(pki: Pki) -> Iterator[Deployment]:
    with LoadBalanced(shard_members=1, tls=pki.server_context, tls_mode="preferTLS") as lb:
        yield Deployment({LOAD_BALANCER_PORT: lb.mongoses[0].port})


def _virtual_getaddrinfo(zone: Zone, deployment: Deployment) -> Callable[..., Any]:
    real = socket.getaddrinfo
    served = zone.names_of_type("A") | {"localhost"}
    addresses = {
        owner.to_text(omit_final_dot=True).lower(): rdata.to_text()
        for (owner, _), found in zone.records.items()
        for _, rdata in found
        if rdata.rdtype == dns.rdatatype.A
    }

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.rstrip(".").lower() if isinstance(host, str) else host
        if name in served and isinstance(port, int) and port in deployment.ports:
            sockaddr = ("127.0.0.1", deployment.ports[port])
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr)]
        if name in addresses:
            host = addresses[name]
        return real(host, port, *args, **kwargs)

    return getaddrinfo


# --- one test -----------------------------------------------------------------------------


class TopologyWatcher(TopologyListener):
    """Wakes waiters whenever the topology description changes."""

    def __init__(self) -> None:
        self.cond = threading.Condition()

    def description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, predicate: Callable[[], bool]) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, DEADLINE)


def _client_kwargs(uri: str, pki: Pki) -> dict[str, Any]:
    """Trust the test CA, unless the connection string turns TLS off (a TLS option
    would then contradict it). Short heartbeats: an awaitable hello the client leaves
    behind at close ends, on the simulated server, within one heartbeat."""
    kwargs: dict[str, Any] = {"heartbeatFrequencyMS": HEARTBEAT_FREQUENCY_MS}
    try:
        tls = ClientOptions.from_uri(uri).tls
    except ConfigurationError:
        tls = True  # an invalid connection string: Client() must raise anyway
    if tls:
        kwargs["tlsCAFile"] = pki.ca_file
    return kwargs


@dataclass
class Network:
    """What one test needs around its client: the DNS server, the CA, and the name
    patch (installed for one deployment by :meth:`serve`, undone after the test)."""

    zone: Zone
    dns_server: DnsServer
    pki: Pki
    monkeypatch: pytest.MonkeyPatch

    def serve(self, deployment: Deployment) -> None:
        self.monkeypatch.setattr(socket, "getaddrinfo", _virtual_getaddrinfo(self.zone, deployment))

    def resolver(self) -> DnsPythonResolver:
        nameservers = dns.resolver.Resolver(configure=False)
        nameservers.nameservers = ["127.0.0.1"]
        nameservers.port = self.dns_server.port
        return DnsPythonResolver(DNS_TIMEOUT, resolve=nameservers.resolve)


@pytest.fixture
def network(
    zone: Zone, dns_server: DnsServer, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> Network:
    return Network(zone, dns_server, pki, monkeypatch)


def run(folder: str, path: Path, deployment: Deployment, network: Network) -> None:
    case = specdata.load(path)
    check_keys(path.name, case, FILE_KEYS)
    entry = deviations.not_applicable(f"{SUITE}/{folder}", case, case, path.stem)
    if entry is not None:
        pytest.skip(f"not applicable (specs/deviations.toml): {entry['selects']}")
    network.serve(deployment)
    resolver = network.resolver()
    uri = case["uri"]
    kwargs = _client_kwargs(uri, network.pki)

    if case.get("error"):
        try:
            client = Client(uri, srv_resolver=resolver, **kwargs)
        except ConfigurationError:
            return
        client.close()
        pytest.fail(f"Client({uri!r}) did not raise: {case.get('comment', '')}")

    watcher = TopologyWatcher()
    client = Client(uri, srv_resolver=resolver, event_listeners=[watcher], **kwargs)
    try:
        _assert_seeds(client, case)
        _assert_options(client, case)
        _assert_hosts(client, watcher, case)
        if case.get("ping", True):
            assert client["admin"].command("ping")["ok"] == 1
    finally:
        client.close()


def _assert_seeds(client: Client, case: Mapping[str, Any]) -> None:
    seeds = {str(address) for address in client.topology.settings.seeds}
    if "seeds" in case:
        assert seeds == set(case["seeds"])
    if "numSeeds" in case:
        assert len(seeds) == case["numSeeds"]


#: The fields of a file ("Test Format and Use" of the suite's README).
FILE_KEYS = (
    "uri",
    "seeds",
    "numSeeds",
    "hosts",
    "numHosts",
    "options",
    "parsed_options",
    "error",
    "comment",
    "ping",
)

#: ``parsed_options``: "additional, parsed options from other Connection String
#: components", by the names the README gives them ("UserInfo (as user and password)
#: and Auth database (as auth_database)") and the names the Connection String suite's
#: format gives the same components (``auth``: username, password, db). The README's
#: list is open ("include, but are not limited to"): the Auth database is also called
#: the default database (``defaultDatabase``, as the database a client uses by
#: default). A name outside these is no component this runner knows, and fails.
PARSED_OPTIONS: Mapping[str, Callable[[ClientOptions], Any]] = {
    "user": lambda options: options.username,
    "username": lambda options: options.username,
    "password": lambda options: options.password,
    "auth_database": lambda options: options.database,
    "db": lambda options: options.database,
    "defaultDatabase": lambda options: options.database,
}


def _assert_options(client: Client, case: Mapping[str, Any]) -> None:
    """``options``: each is a URI option (uri-options spec) whose value, in the file's
    form, must be what the client holds for it; ``parsed_options``: see
    :data:`PARSED_OPTIONS`. A key this runner cannot check fails, naming it."""
    options = case.get("options") or {}
    check_keys("options", options, [k for k in options if _is_client_option(k)])
    for name, value in options.items():
        assert client.settings.get_option(name) == held_value(name, value), name
    parsed = case.get("parsed_options") or {}
    check_keys("parsed_options", parsed, PARSED_OPTIONS)
    for name, value in parsed.items():
        assert PARSED_OPTIONS[name](client.settings) == value, name


def _is_client_option(name: str) -> bool:
    """A URI option a client holds (an unknown or unsupported key is not)."""
    try:
        _DEFAULT_OPTIONS.get_option(name)
    except KeyError:
        return False
    return True


_DEFAULT_OPTIONS = ClientOptions()


def _assert_hosts(client: Client, watcher: TopologyWatcher, case: Mapping[str, Any]) -> None:
    def hosts() -> set[str]:
        return {str(address) for address in client.topology_description.servers}

    if "hosts" in case:
        expected = set(case["hosts"])
        assert watcher.wait_for(lambda: hosts() == expected), (hosts(), expected)
    if "numHosts" in case:
        number = case["numHosts"]
        assert watcher.wait_for(lambda: len(hosts()) == number), (hosts(), number)


# --- the folders --------------------------------------------------------------------------


def _files(folder: str) -> list[Any]:
    return specdata.json_files(f"{SUITE}/{folder}")


def test_every_folder_has_a_deployment() -> None:
    """A new upstream folder needs a deployment here before its tests can run."""
    root = specdata.suite_dir(SUITE)
    if root is None:
        pytest.skip(f"spec suite {SUITE} not found: {specdata.HOW_TO_GET}")
    folders = {p.name for p in root.iterdir() if p.is_dir()}
    assert folders <= set(KNOWN_FOLDERS), sorted(folders - set(KNOWN_FOLDERS))


class TestReplicaSet:
    @pytest.mark.parametrize("path", _files("replica-set"))
    def test_replica_set(self, path: Path, replica_set: Deployment, network: Network) -> None:
        run("replica-set", path, replica_set, network)


class TestSharded:
    @pytest.mark.parametrize("path", _files("sharded"))
    def test_sharded(self, path: Path, sharded: Deployment, network: Network) -> None:
        run("sharded", path, sharded, network)


class TestLoadBalanced:
    @pytest.mark.parametrize("path", _files("load-balanced"))
    def test_load_balanced(self, path: Path, load_balanced: Deployment, network: Network) -> None:
        run("load-balanced", path, load_balanced, network)
