"""The Stable API (mongocore.server_api, mongocore.core.stable_api): the ServerApi
class, the fields each declaration adds, the handshake's command.

Pure and fast (mutation testing runs it); the client option, which starts a
client's monitors, is in test_stable_api_client.py."""

from __future__ import annotations

import copy
import pickle
from typing import Any, Optional

import pytest

from mongocore.core.stable_api import (
    add_api_fields,
    api_fields,
    hello_command_name,
    requires_op_msg,
)
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.io.handshake import handshake_command
from mongocore.server_api import ServerApi, ServerApiVersion

# --- ServerApi ---------------------------------------------------------------------


def test_version_1_is_the_one_known_version() -> None:
    assert ServerApiVersion.V1 == "1"
    api = ServerApi(ServerApiVersion.V1)
    assert (api.version, api.strict, api.deprecation_errors) == ("1", None, None)


@pytest.mark.parametrize("version", ["2", "", "1.0", 1, None])
def test_unknown_versions_are_refused_by_the_client(version: Any) -> None:
    with pytest.raises(ValueError, match="Unknown ServerApi version"):
        ServerApi(version)


@pytest.mark.parametrize("name", ["strict", "deprecation_errors"])
@pytest.mark.parametrize("value", [1, "true", 0])
def test_flags_must_be_booleans(name: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"ServerApi {name}"):
        ServerApi("1", **{name: value})


def test_server_api_is_immutable() -> None:
    api = ServerApi("1", strict=True)
    with pytest.raises(AttributeError, match="immutable"):
        api._version = "2"
    with pytest.raises(AttributeError):
        api.strict = False  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del api._strict
    assert api.version == "1" and api.strict is True


def test_equality_hash_copies_and_repr() -> None:
    api = ServerApi("1", strict=True, deprecation_errors=False)
    assert api == ServerApi("1", strict=True, deprecation_errors=False)
    assert api != ServerApi("1", strict=True)
    assert api != "1"
    assert len({api, ServerApi("1", strict=True, deprecation_errors=False)}) == 1
    for other in (copy.copy(api), copy.deepcopy(api), pickle.loads(pickle.dumps(api))):
        assert other == api and other.strict is True and other.deprecation_errors is False
    assert repr(api) == "ServerApi(version='1', strict=True, deprecation_errors=False)"


# --- the fields ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strict", "deprecation_errors", "expected"),
    [
        (None, None, {"apiVersion": "1"}),
        (True, None, {"apiVersion": "1", "apiStrict": True}),
        # Given equal to the server's default: still sent ("Command Syntax").
        (False, False, {"apiVersion": "1", "apiStrict": False, "apiDeprecationErrors": False}),
        (None, True, {"apiVersion": "1", "apiDeprecationErrors": True}),
    ],
)
def test_fields_sent_are_those_the_user_gave(
    strict: Optional[bool], deprecation_errors: Optional[bool], expected: dict[str, Any]
) -> None:
    api = ServerApi("1", strict=strict, deprecation_errors=deprecation_errors)
    assert api_fields(api) == expected
    command: dict[str, Any] = {"find": "c", "filter": {}}
    add_api_fields(command, api)
    assert command == {"find": "c", "filter": {}, **expected}
    assert next(iter(command)) == "find"  # the command name stays first


def test_nothing_is_added_without_a_declared_version() -> None:
    assert api_fields(None) == {}
    command = {"ping": 1, "apiVersion": "mine", "apiStrict": "as given"}
    add_api_fields(command, None)
    # runCommand's document goes as the user wrote it.
    assert command == {"ping": 1, "apiVersion": "mine", "apiStrict": "as given"}


def test_the_clients_declaration_replaces_what_a_command_carries() -> None:
    command = {"ping": 1, "apiVersion": "2", "apiStrict": False}
    add_api_fields(command, ServerApi("1", strict=True))
    assert command == {"ping": 1, "apiVersion": "1", "apiStrict": True}
    # A flag the client did not set is left as the command has it.
    command = {"ping": 1, "apiDeprecationErrors": True}
    add_api_fields(command, ServerApi("1"))
    assert command == {"ping": 1, "apiDeprecationErrors": True, "apiVersion": "1"}


def test_hello_and_op_msg_rules() -> None:
    api = ServerApi("1")
    assert hello_command_name(False, None) == "isMaster"
    assert hello_command_name(True, None) == "hello"
    assert hello_command_name(False, api) == "hello"
    assert requires_op_msg(None, False) is False
    assert requires_op_msg(None, True) is True
    assert requires_op_msg(api, False) is True


# --- the handshake's command --------------------------------------------------------


def test_handshake_without_a_declared_version_is_legacy_hello() -> None:
    command = handshake_command(ConnectionSettings())
    assert next(iter(command)) == "isMaster"
    assert not {"apiVersion", "apiStrict", "apiDeprecationErrors"} & set(command)


def test_handshake_with_a_declared_version_is_hello_with_the_fields() -> None:
    api = ServerApi("1", strict=True, deprecation_errors=True)
    command = handshake_command(ConnectionSettings(server_api=api))
    assert next(iter(command)) == "hello"
    assert "isMaster" not in command
    assert command["helloOk"] is True
    assert "client" in command
    assert (command["apiVersion"], command["apiStrict"], command["apiDeprecationErrors"]) == (
        "1",
        True,
        True,
    )
    balanced = handshake_command(ConnectionSettings(server_api=api, load_balanced=True))
    assert next(iter(balanced)) == "hello"
    assert balanced["loadBalanced"] is True and balanced["apiVersion"] == "1"
