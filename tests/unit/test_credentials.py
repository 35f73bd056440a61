"""Credentials of every mechanism (mongocore.core.credentials) and which ones a client can
use (mongocore.io.auth.authenticator_for); the official cases are in
tests/spec/test_auth_legacy.py."""

from __future__ import annotations

import pytest

from mongocore.core.credentials import Credentials, credentials_for
from mongocore.core.options import ClientOptions
from mongocore.errors import ConfigurationError
from mongocore.io.auth import authenticator_for


def creds(uri: str, **kwargs: object) -> Credentials | None:
    return credentials_for(ClientOptions.from_uri(uri, **kwargs))


def test_property_names_are_case_insensitive() -> None:
    credentials = creds(
        "mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=service_name:other,"
        "Canonicalize_Host_Name:forward"
    )
    assert credentials is not None
    assert dict(credentials.mechanism_properties) == {
        "SERVICE_NAME": "other",
        "CANONICALIZE_HOST_NAME": "forward",
    }


@pytest.mark.parametrize(
    ("uri", "match"),
    [
        (
            "mongodb://u@h/?authMechanism=GSSAPI"
            "&authMechanismProperties=SERVICE_NAME:a,service_name:b",
            "more than once",
        ),
        ("mongodb://u@h/?authMechanism=GSSAPI&authMechanismProperties=REALM:x", "REALM"),
        ("mongodb://u:p@h/?authMechanism=PLAIN&authMechanismProperties=A:b", "takes no"),
        ("mongodb://u:p@h/?authMechanismProperties=A:b", "takes no"),
        ("mongodb://h/?authMechanism=PLAIN", "non-empty username"),
        ("mongodb://u@h/?authMechanism=PLAIN", "needs a password"),
        ("mongodb://u@h/?authMechanism=MONGODB-AWS", "environment"),
        ("mongodb://h/?authMechanism=MONGODB-AWS&authSource=admin", "'\\$external'"),
        (
            "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:k8s"
            ",TOKEN_RESOURCE:x",
            "takes no TOKEN_RESOURCE",
        ),
    ],
)
def test_invalid_credentials(uri: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        creds(uri)


def test_aws_credentials_from_keywords_are_refused_too() -> None:
    with pytest.raises(ConfigurationError, match="environment") as info:
        creds("mongodb://h/?authMechanism=MONGODB-AWS", username="AKIA", password="s3cr3t")
    assert "AKIA" not in str(info.value) and "s3cr3t" not in str(info.value)


def test_a_token_resource_with_a_comma_is_given_as_a_keyword() -> None:
    credentials = creds(
        "mongodb://h/?authMechanism=MONGODB-OIDC",
        authMechanismProperties={"ENVIRONMENT": "azure", "TOKEN_RESOURCE": "api://a,b"},
    )
    assert credentials is not None
    assert credentials.mechanism_properties["TOKEN_RESOURCE"] == "api://a,b"


@pytest.mark.parametrize(
    "uri",
    [
        "mongodb://u%40REALM@h/?authMechanism=GSSAPI",
        "mongodb://u:p@h/?authMechanism=PLAIN",
        "mongodb://h/?authMechanism=MONGODB-AWS",
        "mongodb://h/?authMechanism=MONGODB-OIDC&authMechanismProperties=ENVIRONMENT:test",
    ],
)
def test_valid_credentials_mongocore_cannot_use_fail_when_the_client_is_created(uri: str) -> None:
    options = ClientOptions.from_uri(uri)
    credentials = credentials_for(options)
    assert credentials is not None and credentials.mechanism == options.auth_mechanism
    with pytest.raises(ConfigurationError, match=f"{options.auth_mechanism} is not supported"):
        authenticator_for(options)


def test_x509_credentials_are_valid_without_tls_but_unusable() -> None:
    options = ClientOptions.from_uri("mongodb://h/?authMechanism=MONGODB-X509")
    credentials = credentials_for(options)
    assert credentials is not None and credentials.source == "$external"
    with pytest.raises(ConfigurationError, match="needs TLS"):
        authenticator_for(options)
    tls = ClientOptions.from_uri("mongodb://h/?authMechanism=MONGODB-X509&tls=true")
    authenticator = authenticator_for(tls)
    assert authenticator is not None and authenticator.credentials == credentials
