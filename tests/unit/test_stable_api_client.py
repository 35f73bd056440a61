"""The Stable API's client option (``Client(server_api=...)``): checked, kept out of
the connection string, and handed to every connection and monitor."""

from __future__ import annotations

import warnings

import pytest

from mongocore.api.client import Client
from mongocore.errors import ConfigurationError
from mongocore.server_api import ServerApi


def test_server_api_must_be_a_server_api() -> None:
    with pytest.raises(TypeError, match="server_api must be an instance of ServerApi"):
        Client("mongodb://localhost:1", server_api="1")  # type: ignore[arg-type]


def test_server_api_is_a_keyword_not_a_connection_option() -> None:
    with pytest.raises(ConfigurationError, match="'server_api' is a keyword of Client"):
        Client("mongodb://localhost:1", serverApi=ServerApi("1"))
    # In a connection string it is unknown: warned about and ignored.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Client("mongodb://localhost:1/?serverApi=1&apiVersion=1") as client:
            assert client._connection_settings.server_api is None
    assert any("serverApi" in str(w.message) for w in caught)


def test_the_client_hands_its_declaration_to_every_connection() -> None:
    api = ServerApi("1", strict=True)
    with Client("mongodb://localhost:1", server_api=api) as client:
        assert client._connection_settings.server_api is api
        assert client._monitor_settings.connection.server_api is api
