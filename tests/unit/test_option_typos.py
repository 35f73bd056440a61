"""A misspelt option never passes silently.

Connection string keys that mongocore does not know are ignored, as the Connection
String spec ("Keys") requires, but loudly: an UnknownOptionWarning (a UserWarning,
shown by Python's default filters) and a WARNING log record, naming the nearest
valid option. Unknown keyword options are a ConfigurationError with the same hint.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from typing import Any

import pytest

from mongocore.api.client import Client
from mongocore.core import options as options_module
from mongocore.core.option_names import NOT_SUPPORTED, UnknownOptionWarning
from mongocore.core.options import CLIENT_KEYWORDS, ClientOptions
from mongocore.core.uri import parse_uri
from mongocore.core.uri_options import (
    DEPRECATED_OPTIONS,
    OPTIONS,
    URI_OPTION_SPELLINGS,
    validate_option,
)
from mongocore.errors import ConfigurationError


def _unknown_option_warnings(uri: str, *, warn: bool = False) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_uri(uri, warn=warn)
    return [w for w in caught if issubclass(w.category, UnknownOptionWarning)]


# --- connection strings --------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("retryWrite", "retryWrites"),
        ("RETRYWRITE", "retryWrites"),
        ("retryRead", "retryReads"),
        ("replset", "replicaSet"),
        ("readPref", "readPreference"),
        ("connectTimeout", "connectTimeoutMS"),
        ("tlsInsecur", "tlsInsecure"),
        ("tsl", "tls"),
        # Aliases are candidates too: "ssl" is an equal alias of "tls", and a typo of a
        # deprecated key suggests the key that replaced it.
        ("sll", "ssl"),
        ("jornal", "journal"),
        ("wtimout", "wTimeoutMS"),
        # Codec options are connection string options as well.
        ("uuidRepresentaton", "uuidRepresentation"),
        ("tz_awar", "tz_aware"),
    ],
)
@pytest.mark.parametrize("warn", [False, True])
def test_an_unknown_key_warns_naming_the_nearest_option(
    key: str, suggestion: str, warn: bool
) -> None:
    uri = f"mongodb://h/?{key}=true&w=1"
    caught = _unknown_option_warnings(uri, warn=warn)
    expected = f"unknown connection string option {key!r} (did you mean {suggestion!r}?)"
    assert [str(w.message) for w in caught] == [f"{expected}; ignored"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownOptionWarning)
        parsed = parse_uri(uri, warn=warn)
    assert parsed.unknown_options == (key,)
    assert parsed.options == {"w": 1}  # the spec: the key is ignored, nothing else is
    assert any(expected in message for message in parsed.warnings)


@pytest.mark.parametrize("key", ["foo", "fsync", "safe", "x", "authDB"])
def test_no_suggestion_when_nothing_is_close(key: str) -> None:
    caught = _unknown_option_warnings(f"mongodb://h/?{key}=1")
    assert [str(w.message) for w in caught] == [
        f"unknown connection string option {key!r}; ignored"
    ]


def test_options_left_out_on_purpose_say_why_instead_of_guessing() -> None:
    caught = _unknown_option_warnings("mongodb://h/?serverSelectionTryOnce=false")
    (message,) = [str(w.message) for w in caught]
    assert message.startswith("unsupported connection string option 'serverSelectionTryOnce'")
    assert NOT_SUPPORTED["serverselectiontryonce"] in message
    assert "did you mean" not in message


def test_the_warning_is_also_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mongocore.uri"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownOptionWarning)
        parse_uri("mongodb://h/?retryWrite=true")
    logged = [r.getMessage() for r in caplog.records if r.name == "mongocore.uri"]
    assert logged == [
        "unknown connection string option 'retryWrite' (did you mean 'retryWrites'?); ignored"
    ]


def test_the_warning_points_at_the_callers_line() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_uri("mongodb://h/?retryWrite=true")
        ClientOptions.from_uri("mongodb://h/?retryWrite=true")
    found = [w for w in caught if issubclass(w.category, UnknownOptionWarning)]
    assert len(found) == 2
    assert all(w.filename == __file__ for w in found), [w.filename for w in found]


def test_the_warning_is_a_user_warning_shown_by_default_filters() -> None:
    assert issubclass(UnknownOptionWarning, UserWarning)
    # A fresh interpreter, with Python's default filters only.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    code = (
        "from mongocore.core.options import ClientOptions\n"
        "ClientOptions.from_uri('mongodb://h/?retryWrite=true')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "UnknownOptionWarning: unknown connection string option 'retryWrite'" in result.stderr
    assert "did you mean 'retryWrites'?" in result.stderr


def test_the_warning_can_be_made_an_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownOptionWarning)
        with pytest.raises(UnknownOptionWarning, match="retryWrites"):
            ClientOptions.from_uri("mongodb://h/?retryWrite=true")
        # Known keys, aliases included, are unaffected.
        ClientOptions.from_uri("mongodb://h/?retryWrites=true&SSL=true&J=true&wtimeout=5")


@pytest.mark.parametrize(
    "query",
    [
        "retryWrites=true",
        "RETRYWRITES=true",
        "ssl=true",
        "SSL=true&tls=true",
        "j=true",
        "wtimeout=5",
        "secondaryAcceptableLatencyMS=20",
        "uuidRepresentation=standard&tz_aware=true",
    ],
)
def test_known_keys_and_aliases_raise_no_unknown_option_warning(query: str) -> None:
    assert _unknown_option_warnings(f"mongodb://h/?{query}") == []
    assert parse_uri(f"mongodb://h/?{query}").unknown_options == ()


def test_the_warning_never_repeats_the_value_or_a_displaced_password() -> None:
    (message,) = [
        str(w.message)
        for w in _unknown_option_warnings("mongodb://h/?tlsCertificateKeyFilePasword=s3cret")
    ]
    assert "s3cret" not in message
    assert "did you mean 'tlsCertificateKeyFilePassword'?" in message
    # An unencoded '?' in a password pushed "retryWrite" past the hosts: quote nothing.
    (message,) = [
        str(w.message)
        for w in _unknown_option_warnings("mongodb://alice:1?retryWrite=x@localhost", warn=True)
    ]
    assert "retryWrite" not in message
    assert "did you mean" not in message


# Names shorter than this ("w", "tls") lose too much with one letter cut.
@pytest.mark.parametrize("name", sorted(name for name in OPTIONS if len(name) >= 6))
def test_every_option_missing_its_last_letter_suggests_itself(name: str) -> None:
    typo = name[:-1]
    (message,) = [str(w.message) for w in _unknown_option_warnings(f"mongodb://h/?{typo}=1")]
    assert f"(did you mean {name!r}?)" in message


# --- keyword options ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("retryWrite", "retryWrites"),
        ("RETRYWRITE", "retryWrites"),
        ("retry_write", "retry_writes"),  # snake_case in, snake_case out
        ("server_selection_timeout", "server_selection_timeout_ms"),
        ("replset", "replicaSet"),
        ("tsl", "tls"),
        # Deprecated connection string keys are not keywords (as in pymongo):
        # the hint names their replacement.
        ("j", "journal"),
        ("wtimeout", "wTimeoutMS"),
        ("passwd", "password"),
        # Codec options and the Client's own keywords are known names.
        ("tz_awar", "tz_aware"),
        ("uuidRepresentaton", "uuidRepresentation"),
        ("document_clas", "document_class"),
        ("type_registy", "type_registry"),
        ("event_listener", "event_listeners"),
    ],
)
def test_an_unknown_keyword_is_an_error_naming_the_nearest_option(
    key: str, suggestion: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        ClientOptions.from_uri("mongodb://h", **{key: True})
    assert str(info.value) == f"unknown client option {key!r} (did you mean {suggestion!r}?)"


def test_the_client_refuses_a_misspelt_keyword_before_starting_anything() -> None:
    with pytest.raises(ConfigurationError, match=r"'retryWrite' \(did you mean 'retryWrites'\?\)"):
        Client("mongodb://h", retryWrite=True)


def test_unknown_keyword_without_a_close_name() -> None:
    with pytest.raises(ConfigurationError) as info:
        ClientOptions.from_uri("mongodb://h", noSuchOption=1)
    assert str(info.value) == "unknown client option 'noSuchOption'"


def test_keywords_left_out_on_purpose_say_why() -> None:
    with pytest.raises(ConfigurationError) as info:
        ClientOptions.from_uri("mongodb://h", connect=False)
    assert str(info.value) == f"unknown client option 'connect': {NOT_SUPPORTED['connect']}"


def test_a_client_keyword_given_to_client_options_is_named_as_such() -> None:
    with pytest.raises(ConfigurationError, match="'document_class' is a keyword of Client"):
        ClientOptions.from_uri("mongodb://h", document_class=dict)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"retryWrites": True},
        {"retry_writes": True},
        {"RETRYWRITES": True},
        {"ssl": True},
        {"tz_aware": True},
        {"uuidRepresentation": "standard"},
        {"unicode_decode_error_handler": "replace"},
    ],
)
def test_known_keywords_are_accepted(kwargs: dict[str, Any]) -> None:
    ClientOptions.from_uri("mongodb://h", **kwargs)


def test_every_suggested_keyword_is_accepted() -> None:
    """A hint must name something that works: try each name a hint can give."""
    suggestions = {
        *options_module._CAMEL_SPELLINGS.values(),
        *options_module._SNAKE_SPELLINGS.values(),
    }
    suggestions -= {"username", "password", *CLIENT_KEYWORDS}
    assert "retry_writes" in suggestions and "retryWrites" in suggestions
    for name in sorted(suggestions):
        try:
            ClientOptions.from_uri("mongodb+srv://h.example.com", **{name: "1"})
        except ConfigurationError as exc:
            assert "unknown" not in str(exc), name


def test_every_suggested_uri_key_is_known() -> None:
    for name in set(URI_OPTION_SPELLINGS.values()):
        assert name in OPTIONS or name == "ssl", name
    assert set(URI_OPTION_SPELLINGS) >= set(OPTIONS) | set(DEPRECATED_OPTIONS) | {"ssl"}


def test_validate_option_suggests_too() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown option 'retryWrite' \(did you mean"):
        validate_option("retryWrite", True)
