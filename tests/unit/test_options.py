"""Unit tests for mongocore.core.options.ClientOptions."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mongocore.core.address import Address
from mongocore.core.description.settings import TopologySettings
from mongocore.core.options import ClientOptions
from mongocore.core.uri import parse_uri
from mongocore.errors import ConfigurationError, InvalidURI


def test_defaults() -> None:
    options = ClientOptions.from_uri("mongodb://localhost")
    expected: dict[str, Any] = {
        "hosts": (Address("localhost", 27017),),
        "srv_host": None,
        "username": None,
        "password": None,
        "database": None,
        "auth_source": None,
        "auth_mechanism": None,
        "auth_mechanism_properties": {},
        "direct_connection": None,
        "replica_set": None,
        "load_balanced": False,
        "heartbeat_frequency_ms": 10_000,
        "local_threshold_ms": 15,
        "server_selection_timeout_ms": 30_000,
        "server_monitoring_mode": "auto",
        "read_preference": "primary",
        "read_preference_tags": [],
        "max_staleness_seconds": None,
        "retry_writes": False,  # retryable writes 1.0 (2018-03-14)
        "retry_reads": True,
        "app_name": None,
        "connect_timeout_ms": 20_000,
        "socket_timeout_ms": None,
        "timeout_ms": None,
        "max_pool_size": 100,
        "min_pool_size": 0,
        "max_idle_time_ms": None,
        "wait_queue_timeout_ms": None,
        "max_connecting": 2,
        "tls": False,
        "tls_ca_file": None,
        "tls_certificate_key_file": None,
        "tls_certificate_key_file_password": None,
        "tls_allow_invalid_certificates": False,
        "tls_allow_invalid_hostnames": False,
        "tls_insecure": False,
        "tls_disable_ocsp_endpoint_check": False,
        "tls_disable_certificate_revocation_check": False,
        "srv_service_name": "mongodb",
        "srv_max_hosts": 0,
        "compressors": [],
        "zlib_compression_level": -1,
        "read_concern_level": None,
        "w": None,
        "w_timeout_ms": None,
        "journal": None,
        "max_adaptive_retries": 0,
        "enable_overload_retargeting": False,
        "uuid_representation": None,
        "tz_aware": False,
        "unicode_decode_error_handler": "strict",
        "datetime_conversion": None,
    }
    actual = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    assert actual == expected
    assert ClientOptions(hosts=(Address("localhost", 27017),)) == options


def test_uri_options_become_typed_attributes() -> None:
    options = ClientOptions.from_uri(
        "mongodb://u:p@a:1,B:2/mydb?replicaSet=rs&heartbeatFrequencyMS=500&localThresholdMS=0"
        "&serverSelectionTimeoutMS=100&readPreference=secondary&readPreferenceTags=dc:ny"
        "&readPreferenceTags=&maxStalenessSeconds=90&retryWrites=true&retryReads=false"
        "&appname=app&connectTimeoutMS=0&socketTimeoutMS=0&timeoutMS=0&maxPoolSize=0"
        "&minPoolSize=3&maxIdleTimeMS=0&waitQueueTimeoutMS=5&maxConnecting=4"
        "&compressors=zlib&zlibCompressionLevel=9&authMechanism=SCRAM-SHA-256"
        "&authSource=admin&w=majority&wTimeoutMS=10&journal=true&readConcernLevel=local"
        "&serverMonitoringMode=poll&maxAdaptiveRetries=0&enableOverloadRetargeting=false"
    )
    assert options.hosts == (Address("a", 1), Address("b", 2))
    assert (options.username, options.password, options.database) == ("u", "p", "mydb")
    assert options.auth_source == "admin"
    assert options.auth_mechanism == "SCRAM-SHA-256"
    assert options.replica_set == "rs"
    assert options.heartbeat_frequency_ms == 500
    assert options.local_threshold_ms == 0
    assert options.server_selection_timeout_ms == 100
    assert options.read_preference == "secondary"
    assert options.read_preference_tags == [{"dc": "ny"}, {}]
    assert options.max_staleness_seconds == 90
    assert options.retry_writes is True
    assert options.retry_reads is False
    assert options.app_name == "app"
    # 0 means "no timeout" / "no limit": those attributes say None.
    assert options.connect_timeout_ms is None
    assert options.socket_timeout_ms is None
    assert options.max_idle_time_ms is None
    # ...except where 0 has its own meaning.
    assert options.timeout_ms == 0
    assert options.max_pool_size == 0
    assert options.min_pool_size == 3
    assert options.wait_queue_timeout_ms == 5
    assert options.max_connecting == 4
    assert options.compressors == ["zlib"]
    assert options.zlib_compression_level == 9
    assert (options.w, options.w_timeout_ms, options.journal) == ("majority", 10, True)
    assert options.read_concern_level == "local"
    assert options.server_monitoring_mode == "poll"
    assert options.max_adaptive_retries == 0
    assert options.enable_overload_retargeting is False


@pytest.mark.parametrize(
    ("uri", "kwargs", "named"),
    [
        ("mongodb://h/?maxAdaptiveRetries=2", {}, "maxAdaptiveRetries=2"),
        ("mongodb://h/?enableOverloadRetargeting=true", {}, "enableOverloadRetargeting=true"),
        ("mongodb://h", {"max_adaptive_retries": 1}, "maxAdaptiveRetries=1"),
        ("mongodb://h", {"enableOverloadRetargeting": True}, "enableOverloadRetargeting=true"),
    ],
)
def test_client_backpressure_options_are_refused_not_ignored(
    uri: str, kwargs: dict[str, Any], named: str
) -> None:
    """Client backpressure is not implemented: a value asking for it is refused (a
    client that took maxAdaptiveRetries=5 and did not retry would mislead), while
    the parser still takes the options (the URI options suite) and the values that
    describe what mongocore does are accepted."""
    with pytest.raises(ConfigurationError, match=named):
        ClientOptions.from_uri(uri, **kwargs)


def test_client_backpressure_values_that_describe_mongocore_are_accepted() -> None:
    options = ClientOptions.from_uri(
        "mongodb://h/?maxAdaptiveRetries=0&enableOverloadRetargeting=false"
    )
    assert (options.max_adaptive_retries, options.enable_overload_retargeting) == (0, False)
    assert parse_uri("mongodb://h/?maxAdaptiveRetries=3").options["maxAdaptiveRetries"] == 3
    with pytest.raises(ConfigurationError, match="client backpressure"):
        ClientOptions(max_adaptive_retries=3)


def test_auth_source_defaults_to_the_uri_database() -> None:
    assert ClientOptions.from_uri("mongodb://u@h/db").auth_source == "db"
    assert ClientOptions.from_uri("mongodb://u@h/db?authSource=other").auth_source == "other"


def test_max_staleness_minus_one_means_none() -> None:
    uri = "mongodb://h/?readPreference=nearest&maxStalenessSeconds=-1"
    assert ClientOptions.from_uri(uri).max_staleness_seconds is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"retryWrites": True, "serverSelectionTimeoutMS": 100},
        {"RETRYWRITES": "true", "serverselectiontimeoutms": "100"},
        {"retry_writes": True, "server_selection_timeout_ms": 100},
    ],
)
def test_keyword_arguments_override_the_uri(kwargs: dict[str, Any]) -> None:
    options = ClientOptions.from_uri(
        "mongodb://h/?retryWrites=false&serverSelectionTimeoutMS=5", **kwargs
    )
    assert options.retry_writes is True
    assert options.server_selection_timeout_ms == 100


def test_keyword_credentials_and_aliases() -> None:
    options = ClientOptions.from_uri("mongodb://a:b@h", username="x", password="y", ssl=True)
    assert (options.username, options.password, options.tls) == ("x", "y", True)
    tags = ClientOptions.from_uri(
        "mongodb://h", readPreference="secondary", read_preference_tags=[{"dc": "ny"}, {}]
    )
    assert tags.read_preference_tags == [{"dc": "ny"}, {}]


def test_keywords_can_complete_a_uri_combination() -> None:
    # The URI alone would be invalid (tags with the default mode primary).
    options = ClientOptions.from_uri(
        "mongodb://h/?readPreferenceTags=dc:ny", readPreference="secondary"
    )
    assert options.read_preference_tags == [{"dc": "ny"}]


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"heartbeatFrequencyMS": "abc"}, ["heartbeatFrequencyMS", "'abc'"]),
        ({"heartbeat_frequency_ms": 100}, ["heartbeatFrequencyMS", "100"]),
        ({"maxPoolSize": True}, ["maxPoolSize", "True"]),
        ({"retryReads": "yes"}, ["retryReads", "'yes'"]),
        ({"readPreference": "fastest"}, ["readPreference", "'fastest'"]),
        ({"maxConnecting": 0}, ["maxConnecting", "0"]),
        ({"appname": "x" * 200}, ["appname", "200 bytes"]),
        ({"noSuchOption": 1}, ["unknown client option", "'noSuchOption'"]),
        ({"serverSelectionTryOnce": False}, ["unknown client option"]),
    ],
)
def test_invalid_keywords_are_errors(kwargs: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info:
        ClientOptions.from_uri("mongodb://h", **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_invalid_uri_values_are_errors() -> None:
    with pytest.raises(InvalidURI, match="heartbeatFrequencyMS must be an integer >= 500"):
        ClientOptions.from_uri("mongodb://h/?heartbeatFrequencyMS=abc")


@pytest.mark.parametrize(
    ("uri", "kwargs", "fragment"),
    [
        ("mongodb://a,b", {"directConnection": True}, "directConnection"),
        ("mongodb://a,b/?directConnection=true", {}, "directConnection"),
        ("mongodb://a/?loadBalanced=true", {"replicaSet": "rs"}, "loadBalanced"),
        ("mongodb+srv://a.example.com", {"directConnection": True}, "directConnection"),
        ("mongodb+srv://a.example.com", {"srvMaxHosts": 2, "replicaSet": "rs"}, "srvMaxHosts"),
        ("mongodb://a", {"srvServiceName": "other"}, "srvServiceName"),
        ("mongodb://a", {"maxStalenessSeconds": 120}, "maxStalenessSeconds"),
        ("mongodb://a", {"minPoolSize": 200}, "minPoolSize"),
        ("mongodb://a/?tlsInsecure=true", {"tlsAllowInvalidHostnames": False}, "tlsInsecure"),
        ("mongodb://a/?tlsCAFile=ca.pem", {"tls": False}, "tls=false"),
        ("mongodb://a/?proxyHost=p", {}, "SOCKS5"),
    ],
)
def test_forbidden_combinations(uri: str, kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        ClientOptions.from_uri(uri, **kwargs)


def test_direct_construction_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="maxPoolSize"):
        ClientOptions(max_pool_size=-1)
    with pytest.raises(ConfigurationError, match="directConnection"):
        ClientOptions(hosts=(Address("a", 1), Address("b", 1)), direct_connection=True)
    with pytest.raises(ConfigurationError, match="readPreferenceTags"):
        ClientOptions(read_preference_tags=[{"dc": "ny"}])
    with pytest.raises(ConfigurationError, match="srv_host"):
        ClientOptions(hosts=(Address("a", 1),), srv_host="b.example.com")
    with pytest.raises(ConfigurationError, match="heartbeatFrequencyMS"):
        dataclasses.replace(ClientOptions(), heartbeat_frequency_ms=499)


def test_tls_rules() -> None:
    assert ClientOptions.from_uri("mongodb://h").tls is False
    assert ClientOptions.from_uri("mongodb+srv://a.example.com").tls is True
    assert ClientOptions.from_uri("mongodb+srv://a.example.com/?tls=false").tls is False
    assert ClientOptions.from_uri("mongodb+srv://a.example.com", tls=False).tls is False
    assert ClientOptions.from_uri("mongodb://h/?tlsCAFile=ca.pem").tls is True
    insecure = ClientOptions.from_uri("mongodb://h/?tls=true&tlsInsecure=true")
    assert insecure.tls_insecure
    assert insecure.tls_allow_invalid_certificates
    assert insecure.tls_allow_invalid_hostnames
    assert insecure.tls_disable_ocsp_endpoint_check
    assert insecure.tls_disable_certificate_revocation_check
    strict = ClientOptions.from_uri("mongodb://h/?tls=true&tlsAllowInvalidHostnames=true")
    assert strict.tls_allow_invalid_hostnames and not strict.tls_allow_invalid_certificates


def test_srv_options() -> None:
    options = ClientOptions.from_uri(
        "mongodb+srv://Cluster.Example.com/?srvServiceName=custom&srvMaxHosts=3"
    )
    assert options.is_srv
    assert options.srv_host == "cluster.example.com"
    assert options.hosts == ()
    assert (options.srv_service_name, options.srv_max_hosts) == ("custom", 3)


def test_topology_settings() -> None:
    options = ClientOptions.from_uri(
        "mongodb://a,b/?replicaSet=rs&heartbeatFrequencyMS=600&localThresholdMS=5",
        serverSelectionTimeoutMS=50,
    )
    assert options.topology_settings == TopologySettings(
        seeds=(Address("a", 27017), Address("b", 27017)),
        direct_connection=None,
        replica_set="rs",
        load_balanced=False,
        srv=False,
        heartbeat_frequency_ms=600,
        local_threshold_ms=5,
        server_selection_timeout_ms=50,
    )
    srv = ClientOptions.from_uri("mongodb+srv://a.example.com/?loadBalanced=true")
    resolved = srv.topology_settings_for([Address("x.example.com", 27017)])
    assert resolved.srv and resolved.load_balanced
    assert resolved.seeds == (Address("x.example.com", 27017),)


def test_secrets_stay_out_of_repr_and_errors() -> None:
    options = ClientOptions.from_uri(
        "mongodb://user:hunter2@h/?tlsCertificateKeyFilePassword=keypass"
        "&authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tokenvalue",
    )
    shown = repr(options) + str(options)
    for secret in ("hunter2", "keypass", "tokenvalue"):
        assert secret not in shown
    assert "password" not in shown
    assert options.password == "hunter2"
    assert options.tls_certificate_key_file_password == "keypass"
    with pytest.raises(ConfigurationError) as info:
        ClientOptions.from_uri("mongodb://h", tlsCertificateKeyFilePassword=1234567)
    assert "1234567" not in str(info.value)


def test_client_options_are_frozen() -> None:
    options = ClientOptions.from_uri("mongodb://h")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_pool_size = 1  # type: ignore[misc]


def test_get_option_by_connection_string_name() -> None:
    options = ClientOptions.from_uri(
        "mongodb://h/?replicaSet=rs&SSL=true&connectTimeoutMS=0&appname=app"
    )
    assert options.get_option("replicaSet") == options.get_option("REPLICASET") == "rs"
    assert options.get_option("ssl") is options.get_option("tls") is True
    assert options.get_option("connectTimeoutMS") is None  # 0 means no limit
    assert options.get_option("appName") == "app"
    assert options.get_option("retryWrites") is False  # a default
    for name in ("noSuchOption", "proxyHost", "hosts"):
        with pytest.raises(KeyError):
            options.get_option(name)
