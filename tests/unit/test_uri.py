"""Unit and property tests for mongocore.core.uri (connection string parsing)."""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import logging
import urllib.parse
from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core.address import DEFAULT_PORT, Address
from mongocore.core.uri import parse_uri
from mongocore.core.uri_options import canonical_option_name, validate_option
from mongocore.errors import ConfigurationError, InvalidURI

# The warnings these tests provoke are what they assert on (parsed.warnings); they
# are not left for the run to report.
pytestmark = pytest.mark.filterwarnings("ignore::mongocore.core.uri.UnknownOptionWarning")

# --- structure -------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "localhost",
        "mongo://localhost",
        "MONGODB://localhost",
        "mongodb:/localhost",
        "mongodb://",
        "mongodb:///db",
        "mongodb://?w=1",
        "mongodb://a,,b",
        "mongodb://a,",
        "mongodb://host:",
        "mongodb://host:0",
        "mongodb://host:65536",
        "mongodb://host:\uff11\uff12",  # non-ASCII digits are not a port
        "mongodb://::1",
        "mongodb://[::1",
        "mongodb://[::1]x",
        "mongodb://[nothex]",
        "mongodb://ho st",
        "mongodb://%2Ftmp%2Fmongodb.socket",
        "mongodb://user@",
        "mongodb://:pw@host",
        "mongodb://us#er@host",
        "mongodb://host/d$b",
        "mongodb://host/d%20b",
        "mongodb://host/a%2Fb",
        "mongodb://host/?w",
        "mongodb://host/?=1",
        "mongodb://host/?appname=%zz",
        "mongodb://host/?appname=%ff",
        "mongodb://h%zzost",
        "mongodb+srv://a.example.com:27017",
        "mongodb+srv://a.example.com,b.example.com",
        "mongodb+srv://%2Ftmp%2Fm.sock",
        "mongodb+srv://[::1]",
        "mongodb://host/?tls=true&ssl=false",
        "mongodb://host/?proxyHost=a&proxyHost=b",
    ],
)
def test_invalid_uris(uri: str) -> None:
    for warn in (True, False):
        with pytest.raises(InvalidURI):
            parse_uri(uri, warn=warn)


def test_non_str_input_is_invalid() -> None:
    with pytest.raises(InvalidURI, match="must be a str"):
        parse_uri(b"mongodb://localhost")  # type: ignore[arg-type]


def test_lone_surrogate_is_invalid() -> None:
    with pytest.raises(InvalidURI, match="Unicode"):
        parse_uri("mongodb://local\udc80host")


def test_hosts_are_normalized() -> None:
    parsed = parse_uri("mongodb://Example.COM,[::FFFF:1.2.3.4]:27018,10.0.0.1:1,%2Ftmp%2FM.sock")
    assert parsed.hosts == (
        Address("example.com", DEFAULT_PORT),
        Address("::ffff:1.2.3.4", 27018),
        Address("10.0.0.1", 1),
        Address("/tmp/M.sock", None),  # paths keep their case
    )
    assert parsed.srv_host is None
    assert not parsed.is_srv
    assert parsed.scheme == "mongodb"


def test_srv_host_is_kept_unresolved() -> None:
    parsed = parse_uri("mongodb+srv://Cluster0.Example.com/db?retryWrites=true")
    assert parsed.is_srv and parsed.scheme == "mongodb+srv"
    assert parsed.srv_host == "cluster0.example.com"
    assert parsed.hosts == ()
    assert parsed.database == "db"


def test_userinfo_and_database_are_decoded() -> None:
    parsed = parse_uri("mongodb://us%40er:p%3Aw%2F@h/admin%3F?w=1")
    assert (parsed.username, parsed.password, parsed.database) == ("us@er", "p:w/", "admin?")
    assert parsed.options == {"w": 1}


def test_delimiting_slash_is_optional_and_empty_pairs_are_tolerated() -> None:
    assert parse_uri("mongodb://h?&w=1&").options == {"w": 1}
    assert parse_uri("mongodb://h/").database is None


def test_plus_is_not_a_space() -> None:
    assert parse_uri("mongodb://h/?appname=a+b").options["appname"] == "a+b"


# --- option values ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "fragments"),
    [
        ("heartbeatFrequencyMS=abc", ["heartbeatFrequencyMS must be an integer >= 500", "'abc'"]),
        ("heartbeatFrequencyMS=499", ["heartbeatFrequencyMS", "'499'"]),
        ("connectTimeoutMS=2147483648", ["connectTimeoutMS", "at most 2147483647"]),
        ("connectTimeoutMS=1.5", ["connectTimeoutMS", "'1.5'"]),
        ("socketTimeoutMS=" + "9" * 5000, ["socketTimeoutMS", "..."]),
        ("serverSelectionTimeoutMS=0", ["serverSelectionTimeoutMS", "'0'"]),
        ("maxConnecting=0", ["maxConnecting must be an integer >= 1", "'0'"]),
        ("maxStalenessSeconds=89", ["maxStalenessSeconds must be -1 or an integer >= 90"]),
        ("zlibCompressionLevel=10", ["zlibCompressionLevel must be an integer from -1 to 9"]),
        ("retryWrites=1", ["retryWrites must be 'true' or 'false'", "'1'"]),
        ("ssl=yes", ["ssl must be 'true' or 'false'", "'yes'"]),
        ("j=maybe", ["j must be", "'maybe'"]),
        ("readPreference=PRIMARY", ["readPreference must be one of", "'PRIMARY'"]),
        ("readPreferenceTags=dc", ["readPreferenceTags", "'dc'"]),
        ("readPreferenceTags=dc:ny,dc:sf", ["readPreferenceTags", "'dc'", "more than once"]),
        ("serverMonitoringMode=push", ["serverMonitoringMode", "'push'"]),
        ("authMechanism=scram-sha-1", ["authMechanism", "'scram-sha-1'"]),
        ("appname=" + "x" * 129, ["appname", "129 bytes"]),
        ("appname=" + "é" * 65, ["appname", "130 bytes"]),
        ("replicaSet=", ["replicaSet must be a non-empty string", "''"]),
        ("w=-1", ["w must be a non-negative integer or a tag name", "'-1'"]),
        ("srvServiceName=-mongo", ["srvServiceName", "'-mongo'"]),
        ("srvServiceName=" + "a" * 63, ["srvServiceName"]),
        ("srvServiceName=1234", ["srvServiceName"]),
        ("maxIdleTimeMS=", ["maxIdleTimeMS", "''"]),
        ("proxyPort=0", ["proxyPort", "'0'"]),
    ],
)
def test_strict_errors_name_the_option_and_value(query: str, fragments: list[str]) -> None:
    scheme = "mongodb+srv://a.example.com" if "srv" in query else "mongodb://a"
    uri = f"{scheme}/?{query}"
    with pytest.raises(InvalidURI) as info:
        parse_uri(uri)
    for fragment in fragments:
        assert fragment in str(info.value)
    parsed = parse_uri(uri, warn=True)
    assert len(parsed.invalid_options) == 1
    assert parsed.options == {}
    assert any(fragment in w for w in parsed.warnings for fragment in fragments[:1])


def test_warnings_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mongocore.uri"):
        parsed = parse_uri("mongodb://h/?foo=bar&localThresholdMS=x", warn=True)
    assert len(parsed.warnings) == 2
    logged = [r.getMessage() for r in caplog.records if r.name == "mongocore.uri"]
    assert logged == list(parsed.warnings)
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_unknown_keys_only_warn_in_both_modes() -> None:
    for warn in (True, False):
        parsed = parse_uri("mongodb://h/?FooBar=secret-value&w=1", warn=warn)
        assert parsed.unknown_options == ("FooBar",)
        assert parsed.options == {"w": 1}
        assert "FooBar" in parsed.warnings[0]
        assert "secret-value" not in parsed.warnings[0]


def test_keys_are_case_insensitive_and_canonical() -> None:
    parsed = parse_uri("mongodb://h/?REPLICASET=rs&heartbeatfrequencyms=600&TLS=True&appName=x")
    assert dict(parsed.options) == {
        "replicaSet": "rs",
        "heartbeatFrequencyMS": 600,
        "tls": True,
        "appname": "x",
    }
    assert canonical_option_name("SSL") == "tls"
    assert canonical_option_name("nope") is None


def test_repeated_keys_use_the_last_value_with_a_warning() -> None:
    parsed = parse_uri("mongodb://h/?replicaSet=a&replicaSet=b")
    assert parsed.options["replicaSet"] == "b"
    assert any("more than once" in w for w in parsed.warnings)


def test_repeated_read_preference_tags_build_a_list() -> None:
    parsed = parse_uri(
        "mongodb://h/?readPreference=nearest&readPreferenceTags=dc:ny,rack:1"
        "&readPreferenceTags=dc:ny&readPreferenceTags="
    )
    assert parsed.options["readPreferenceTags"] == [{"dc": "ny", "rack": "1"}, {"dc": "ny"}, {}]
    assert parsed.warnings == ()


def test_an_invalid_repeat_keeps_the_valid_value_in_warn_mode() -> None:
    parsed = parse_uri("mongodb://h/?heartbeatFrequencyMS=600&heartbeatFrequencyMS=x", warn=True)
    assert parsed.options["heartbeatFrequencyMS"] == 600
    assert parsed.invalid_options == ("heartbeatFrequencyMS",)


def test_tls_and_ssl_aliases_must_agree() -> None:
    assert parse_uri("mongodb://h/?ssl=true").options == {"tls": True}
    parsed = parse_uri("mongodb://h/?tls=true&ssl=true&tls=true")
    assert parsed.options == {"tls": True}
    assert parsed.warnings == ()
    with pytest.raises(InvalidURI, match="tls and ssl"):
        parse_uri("mongodb://h/?ssl=false&tls=true")


def test_deprecated_keys() -> None:
    parsed = parse_uri("mongodb://h/?j=true&wtimeout=5")
    assert parsed.options == {"journal": True, "wTimeoutMS": 5}
    assert len(parsed.warnings) == 2
    assert all("deprecated" in w for w in parsed.warnings)
    parsed = parse_uri("mongodb://h/?journal=false&j=true")
    assert parsed.options == {"journal": False}
    assert "ignored" in parsed.warnings[0]


def test_unknown_compressors_are_dropped_with_a_warning() -> None:
    parsed = parse_uri("mongodb://h/?compressors=zstd,lz4,zlib,zlib")
    assert parsed.options["compressors"] == ["zstd", "zlib"]
    assert any("'lz4'" in w for w in parsed.warnings)


def test_key_value_pairs_keep_colons_in_values() -> None:
    parsed = parse_uri(
        "mongodb://h/?authMechanism=MONGODB-OIDC"
        "&authMechanismProperties=TOKEN_RESOURCE:api://x:1,ENVIRONMENT:azure"
    )
    assert parsed.options["authMechanismProperties"] == {
        "TOKEN_RESOURCE": "api://x:1",
        "ENVIRONMENT": "azure",
    }


def test_w_is_an_integer_or_a_tag() -> None:
    assert parse_uri("mongodb://h/?w=majority").options["w"] == "majority"
    assert parse_uri("mongodb://h/?w=0").options["w"] == 0


# --- combinations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("tlsInsecure", "tlsAllowInvalidCertificates"),
        ("tlsInsecure", "tlsAllowInvalidHostnames"),
        ("tlsInsecure", "tlsDisableOCSPEndpointCheck"),
        ("tlsInsecure", "tlsDisableCertificateRevocationCheck"),
        ("tlsAllowInvalidCertificates", "tlsDisableOCSPEndpointCheck"),
        ("tlsAllowInvalidCertificates", "tlsDisableCertificateRevocationCheck"),
        ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck"),
    ],
)
def test_conflicting_tls_options(first: str, second: str) -> None:
    for value in ("true", "false"):
        with pytest.raises(ConfigurationError, match=f"{first} and {second}"):
            parse_uri(f"mongodb://h/?{second}={value}&{first}={value}")


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("mongodb://h/?tls=false&tlsCAFile=ca.pem", "tls=false"),
        ("mongodb://a,b/?directConnection=true", "directConnection"),
        ("mongodb+srv://a.example.com/?directConnection=true", "directConnection"),
        ("mongodb://h/?loadBalanced=true&replicaSet=rs", "loadBalanced"),
        ("mongodb://h/?srvServiceName=mongodb", "srvServiceName"),
        ("mongodb://h/?srvMaxHosts=0", "srvMaxHosts"),
        ("mongodb+srv://a.example.com/?srvMaxHosts=1&replicaSet=rs", "srvMaxHosts"),
        ("mongodb://h/?maxStalenessSeconds=120", "maxStalenessSeconds"),
        ("mongodb://h/?readPreference=primary&maxStalenessSeconds=90", "maxStalenessSeconds"),
        ("mongodb://h/?readPreferenceTags=dc:ny", "readPreferenceTags"),
        ("mongodb://h/?minPoolSize=10&maxPoolSize=5", "minPoolSize"),
        ("mongodb://h/?w=0&journal=true", "journal"),
        ("mongodb://h/?proxyPort=1080", "proxyHost"),
        ("mongodb://h/?proxyHost=p&proxyPassword=x", "proxyUsername"),
    ],
)
def test_forbidden_combinations(uri: str, fragment: str) -> None:
    for warn in (True, False):
        with pytest.raises(ConfigurationError, match=fragment):
            parse_uri(uri, warn=warn)


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb://h/?maxStalenessSeconds=-1",
        "mongodb://h/?readPreferenceTags=",
        "mongodb://h/?readPreference=secondary&maxStalenessSeconds=90&readPreferenceTags=a:b",
        "mongodb://h/?minPoolSize=10&maxPoolSize=0",
        "mongodb://h/?w=0&journal=false",
        "mongodb://h/?tls=false&tls=false",
        "mongodb+srv://a.example.com/?srvMaxHosts=0&replicaSet=rs",
        "mongodb+srv://a.example.com/?directConnection=false&srvServiceName=custom-1",
    ],
)
def test_allowed_combinations(uri: str) -> None:
    assert parse_uri(uri).warnings == ()


# --- secrets -------------------------------------------------------------------------


def test_secrets_never_appear_in_repr_str_or_warnings() -> None:
    parsed = parse_uri(
        "mongodb://user:hunter2@h/?tlsCertificateKeyFilePassword=keypass&proxyHost=p"
        "&proxyUsername=u&proxyPassword=proxypass"
        "&authMechanismProperties=AWS_SESSION_TOKEN:tokenvalue,SERVICE_NAME:svc"
        "&replicaSet=a&replicaSet=b"
    )
    shown = repr(parsed) + str(parsed) + " ".join(parsed.warnings)
    for secret in ("hunter2", "keypass", "proxypass", "tokenvalue"):
        assert secret not in shown
    assert "svc" in shown  # not a secret
    assert parsed.password == "hunter2"


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb://user:hun@ter2@h",
        "mongodb://user:hun:ter2@h",
        "mongodb://user:hunter2%@h",
        "mongodb://user:hunter2%zz@h",
        "mongodb://user:hunter2%ff@h",
        "mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN:hunter2,broken",
        "mongodb://h/?proxyHost=p&proxyUsername=u&proxyPassword=hunter2&proxyPassword=hunter2",
        # An unencoded '/' or '?' in the password moves part of it past the hosts.
        "mongodb://alice:hunter2/x@localhost/db",
        "mongodb://alice:x/hunter2@localhost/db",
        "mongodb://alice:1?hunter2@localhost",
        "mongodb://alice:hunter2?x@localhost",
        "mongodb://alice:hunter2/@localhost",
    ],
)
def test_errors_never_echo_secrets(uri: str) -> None:
    with pytest.raises(InvalidURI) as info:
        parse_uri(uri)
    assert "hunter2" not in str(info.value)
    assert "ter2" not in str(info.value)


def test_warnings_never_echo_a_displaced_password() -> None:
    parsed = parse_uri("mongodb://alice:1?hunter2=x@localhost", warn=True)
    assert parsed.warnings
    assert not any("hunter2" in w for w in parsed.warnings)


def test_at_signs_in_options_are_not_userinfo() -> None:
    parsed = parse_uri("mongodb://h/?replicaSet=a@b&foo=1")
    assert parsed.options == {"replicaSet": "a@b"}
    assert parsed.unknown_options == ("foo",)


def test_connection_string_is_frozen() -> None:
    parsed = parse_uri("mongodb://h")
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.database = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        parsed.options["w"] = 1  # type: ignore[index]


def test_validate_option_accepts_typed_values() -> None:
    assert validate_option("retryWrites", True) is True
    assert validate_option("retryWrites", "false") is False
    assert validate_option("readPreferenceTags", [{"dc": "ny"}, ""]) == [{"dc": "ny"}, {}]
    with pytest.raises(ConfigurationError, match="maxPoolSize"):
        validate_option("maxPoolSize", True)
    with pytest.raises(ConfigurationError, match="appname"):
        validate_option("appname", 5)


# --- properties ----------------------------------------------------------------------


@given(st.text())
def test_arbitrary_text_raises_only_configuration_errors(text: str) -> None:
    for uri in (text, "mongodb://" + text, "mongodb+srv://" + text, "mongodb://h/?" + text):
        for warn in (True, False):
            with contextlib.suppress(ConfigurationError):
                parse_uri(uri, warn=warn)


_URI_ALPHABET = "mongdbsrv+:/@?&=%,[].;-_~ 0123456789abcdefABCDEF:wWtTlLjJ$\\\"'é"
_OPTION_NAMES = st.sampled_from(
    [
        *("w", "tls", "ssl", "j", "readPreferenceTags", "replicaSet", "maxPoolSize"),
        *("minPoolSize", "directConnection", "loadBalanced", "srvMaxHosts", "zz"),
        "authMechanismProperties",
    ]
)


@given(
    st.text(alphabet=_URI_ALPHABET, max_size=40),
    st.lists(st.tuples(_OPTION_NAMES, st.text(alphabet=_URI_ALPHABET, max_size=12)), max_size=5),
)
def test_uri_like_text_raises_only_configuration_errors(
    hosts: str, pairs: list[tuple[str, str]]
) -> None:
    query = "&".join(f"{k}={v}" for k, v in pairs)
    for scheme in ("mongodb://", "mongodb+srv://"):
        for warn in (True, False):
            try:
                parsed = parse_uri(f"{scheme}{hosts}?{query}", warn=warn)
            except ConfigurationError:
                continue
            assert parsed.hosts or parsed.srv_host


_LABEL = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,8}[A-Za-z0-9])?", fullmatch=True)
_HOSTNAME = st.lists(_LABEL, min_size=1, max_size=4).map(".".join)
_PORT = st.one_of(st.none(), st.integers(1, 65535))
_PATH_PART = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="/\x00"),
    min_size=1,
    max_size=8,
)


@st.composite
def _host(draw: st.DrawFn) -> tuple[str, Address]:
    kind = draw(st.sampled_from(["name", "ipv4", "ipv6", "unix"]))
    port: Optional[int] = draw(_PORT)
    suffix = "" if port is None else f":{port}"
    expected_port = DEFAULT_PORT if port is None else port
    if kind == "name":
        name = draw(_HOSTNAME)
        return name + suffix, Address(name.lower(), expected_port)
    if kind == "ipv4":
        ip = str(draw(st.ip_addresses(v=4)))
        return ip + suffix, Address(ip, expected_port)
    if kind == "ipv6":
        ip6 = ipaddress.IPv6Address(draw(st.ip_addresses(v=6)))
        text = draw(st.sampled_from([str(ip6), ip6.exploded, str(ip6).upper()]))
        mapped = ip6.ipv4_mapped
        normal = f"::ffff:{mapped}" if mapped is not None else str(ip6)
        return f"[{text}]{suffix}", Address(normal, expected_port)
    # A socket path contains a '/': "mongodb-27017.sock" alone is a host name.
    parts = draw(st.lists(_PATH_PART, min_size=2, max_size=4))
    path = draw(st.sampled_from(["/", ""])) + "/".join(parts) + ".sock"
    return urllib.parse.quote(path, safe=""), Address(path, None)


@given(st.lists(_host(), min_size=1, max_size=6))
def test_host_lists_round_trip(hosts: list[tuple[str, Address]]) -> None:
    uri = "mongodb://" + ",".join(text for text, _ in hosts) + "/?w=1"
    parsed = parse_uri(uri)
    assert parsed.hosts == tuple(address for _, address in hosts)
    assert parsed.options == {"w": 1}


_ANY_TEXT = st.text(alphabet=st.characters(codec="utf-8"), min_size=1)


@given(_ANY_TEXT, st.one_of(st.none(), st.text(alphabet=st.characters(codec="utf-8"))))
def test_userinfo_round_trips(username: str, password: Optional[str]) -> None:
    userinfo = urllib.parse.quote(username, safe="")
    if password is not None:
        userinfo += ":" + urllib.parse.quote(password, safe="")
    parsed = parse_uri(f"mongodb://{userinfo}@localhost/")
    assert (parsed.username, parsed.password) == (username, password)
