"""Shared runner for the connection-string and uri-options suites (same format).

Each case runs in warn mode (``parse_uri(uri, warn=True)``, the URI spec's
behaviour, which the files describe) and then in strict mode (what the client
uses): strict mode must raise, naming the option, exactly when warn mode ignored an
invalid value, and must otherwise give the same result.
"""

from __future__ import annotations

import ipaddress
import warnings
from typing import Any

import pytest

from mongocore.core.address import DEFAULT_PORT, Address
from mongocore.core.uri import ConnectionString, UnknownOptionWarning
from mongocore.core.uri import parse_uri as _parse_uri
from mongocore.errors import ConfigurationError, InvalidURI
from tests.spec import deviations, specdata
from tests.spec.format_keys import check_keys

# The format's keys (the Connection String suite's README, "Format"; the uri-options
# suite shares it).
CASE_KEYS = ("description", "uri", "valid", "warning", "hosts", "auth", "options")
HOST_KEYS = ("type", "host", "port")
AUTH_KEYS = ("username", "password", "db")


def cases(suite: str) -> list[Any]:
    """One pytest param per test case, with id "file-stem: description"."""
    params: list[Any] = []
    for file_param in specdata.json_files(suite):
        path = file_param.values[0]
        if path is None:  # the suite is missing: keep the skipped placeholder
            params.append(pytest.param(None, None, id=file_param.id, marks=file_param.marks))
            continue
        for case in specdata.load(path)["tests"]:
            test_id = f"{path.stem}: {case['description']}"
            params.append(pytest.param(test_id, case, id=test_id))
    return params


def host_type(address: Address) -> str:
    if address.port is None:
        return "unix"
    if ":" in address.host:
        return "ip_literal"
    try:
        ipaddress.IPv4Address(address.host)
    except ValueError:
        return "hostname"
    return "ipv4"


def _lowered(options: Any) -> dict[str, Any]:
    return {key.lower(): value for key, value in options.items()}


def parse_uri(uri: str, *, warn: bool) -> ConnectionString:
    """Parse as the client does; the UnknownOptionWarning an unknown key raises is the
    behaviour under test (``parsed.warnings`` records it), not noise for the run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownOptionWarning)
        return _parse_uri(uri, warn=warn)


def run(suite: str, test_id: str, case: dict[str, Any], *, warning_means_error: bool) -> None:
    """Run one case. ``warning_means_error``: every warning must come from an invalid
    value (strict mode raises) or an unknown key (the uri-options suite's promise)."""
    check_keys(test_id, case, CASE_KEYS)
    uri = case["uri"]
    if deviations.not_applicable(suite, case, case, test_id) is not None:
        _assert_ignored_as_unsupported(case)
        return

    if not case["valid"]:
        for warn in (True, False):
            with pytest.raises(ConfigurationError):
                parse_uri(uri, warn=warn)
        return

    parsed = parse_uri(uri, warn=True)
    assert bool(parsed.warnings) == case["warning"], parsed.warnings
    if case["warning"] and warning_means_error:
        assert parsed.invalid_options or parsed.unknown_options, parsed.warnings
    _assert_hosts(parsed, case.get("hosts"))
    _assert_auth(parsed, case.get("auth"))
    _assert_options(parsed, case.get("options"))
    _assert_strict(uri, parsed)


def _assert_hosts(parsed: ConnectionString, expected: Any) -> None:
    if expected is None:
        return
    assert len(parsed.hosts) == len(expected), parsed.hosts
    for address, want in zip(parsed.hosts, expected):
        check_keys("hosts", want, HOST_KEYS)
        assert address.host == want["host"]
        # "Asserting the type is optional": asserted whenever the case gives it.
        if want.get("type") is not None:
            assert host_type(address) == want["type"]
        if want.get("port") is not None:
            assert address.port == want["port"]
        elif want.get("type") != "unix" and host_type(address) != "unix":
            assert address.port == DEFAULT_PORT  # our documented default


def _assert_auth(parsed: ConnectionString, expected: Any) -> None:
    if expected is None:
        return
    check_keys("auth", expected, AUTH_KEYS)
    # A key the case leaves out is not asserted; a null one is asserted absent.
    if "username" in expected:
        assert parsed.username == expected["username"]
    if "password" in expected:
        assert parsed.password == expected["password"]
    if "db" in expected:
        assert parsed.database == expected["db"]


def _assert_options(parsed: ConnectionString, expected: Any) -> None:
    if expected is None:
        return
    actual = _lowered(parsed.options)
    for key, value in expected.items():
        assert key.lower() in actual, f"{key} missing from {dict(parsed.options)}"
        assert actual[key.lower()] == value, key


def _assert_strict(uri: str, parsed: ConnectionString) -> None:
    if parsed.invalid_options:
        with pytest.raises(InvalidURI) as info:
            parse_uri(uri, warn=False)
        message = str(info.value)
        named = [name for name in parsed.invalid_options if name in message]
        assert named, f"{message!r} names none of {parsed.invalid_options}"
        assert all(name.lower() in uri.lower() for name in named)
    else:
        assert parse_uri(uri, warn=False) == parsed


def _assert_ignored_as_unsupported(case: dict[str, Any]) -> None:
    """A not-applicable option is an unknown key to mongocore: warned about, ignored."""
    for warn in (True, False):
        parsed = parse_uri(case["uri"], warn=warn)
        assert parsed.unknown_options, parsed.warnings
        assert all(
            any(key in message for message in parsed.warnings) for key in parsed.unknown_options
        )
        actual = _lowered(parsed.options)
        for key in (case.get("options") or {}) | {k: None for k in parsed.unknown_options}:
            assert key.lower() not in actual
