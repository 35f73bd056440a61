"""The official auth suite's connection-string tests (auth/tests/legacy), one test per
case: the credential a connection string gives, per the Authentication spec's
"MongoCredential Properties" of each mechanism.

A case runs the client's own path: ``ClientOptions.from_uri`` (strict parsing) then
``credentials_for``. ``valid: false`` must raise ConfigurationError; ``valid: true``
must give exactly the file's credential (``null`` mechanism_properties: none). Then
the runner checks what creating a client does with it: an Authenticator for the
mechanisms mongocore speaks, a ConfigurationError naming the mechanism for the others.

A case a [[deviation]] rule of specs/deviations.toml selects is one the file itself
contradicts (an older rule left beside the newer one): mongocore follows the newer
rule, so its connection string must be refused (ConfigurationError).
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

from mongocore.core.credentials import MONGODB_X509, Credentials, credentials_for
from mongocore.core.options import ClientOptions
from mongocore.errors import ConfigurationError
from mongocore.io.auth import SUPPORTED_MECHANISMS, Authenticator, authenticator_for
from tests.spec import deviations, specdata
from tests.spec.format_keys import check_keys

SUITE = "auth/tests/legacy"
# The format's keys (the auth suite's README, "Format").
CASE_KEYS = ("description", "uri", "valid", "credential")
CREDENTIAL_KEYS = ("username", "password", "source", "mechanism", "mechanism_properties")


def _cases() -> list[Any]:
    params: list[Any] = []
    for file_param in specdata.json_files(SUITE):
        path = file_param.values[0]
        if path is None:  # the suite is missing: keep the skipped placeholder
            params.append(pytest.param(None, None, id=file_param.id, marks=file_param.marks))
            continue
        document = specdata.load(path)
        for case in document["tests"]:
            params.append(pytest.param(document, case, id=case["description"]))
    return params


@pytest.mark.parametrize(("document", "case"), _cases())
def test_auth_legacy(document: dict[str, Any], case: dict[str, Any]) -> None:
    check_keys(str(case.get("description")), case, CASE_KEYS)
    uri = case["uri"]
    if deviations.deviation(SUITE, document, case, case["description"]) is not None:
        with pytest.raises(ConfigurationError):
            credentials_for(ClientOptions.from_uri(uri))
        return

    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            credentials_for(ClientOptions.from_uri(uri))
        return

    options = ClientOptions.from_uri(uri)
    credentials = credentials_for(options)
    expected = case.get("credential")
    if expected is None:
        assert credentials is None
        assert authenticator_for(options) is None
        return
    assert credentials is not None
    check_keys("credential", expected, CREDENTIAL_KEYS)
    # "If any key is missing, no assertion about that key is necessary"; a null value
    # means the property is not set (for mechanism: negotiated).
    for key in ("username", "password", "source", "mechanism"):
        if key in expected:
            assert getattr(credentials, key) == expected[key], key
    if expected.get("mechanism_properties") is not None:
        # "a subset of properties that must match": others may exist.
        properties = dict(credentials.mechanism_properties)
        for key, value in expected["mechanism_properties"].items():
            assert key in properties, f"mechanism_properties lacks {key!r}: {properties}"
            assert properties[key] == value, key
    elif "mechanism_properties" in expected:
        assert not credentials.mechanism_properties
    _assert_client_use(options, credentials)


def _assert_client_use(options: ClientOptions, credentials: Credentials) -> None:
    """A client authenticates with the supported mechanisms and refuses the others
    when it is created, naming the mechanism."""
    mechanism: Optional[str] = credentials.mechanism
    if mechanism is not None and mechanism not in SUPPORTED_MECHANISMS:
        with pytest.raises(ConfigurationError, match=f"{mechanism} is not supported"):
            authenticator_for(options)
        return
    if mechanism == MONGODB_X509 and not options.tls:
        with pytest.raises(ConfigurationError, match="MONGODB-X509 needs TLS"):
            authenticator_for(options)
        return
    authenticator = authenticator_for(options)
    assert isinstance(authenticator, Authenticator)
    assert authenticator.credentials == credentials
