"""What a declared server API version adds to the commands a client sends.

Spec: Stable API For Drivers, "Sending Declared API Version to the Server":

- "Command Syntax": ``version`` is sent as ``apiVersion`` on every command;
  ``strict`` and ``deprecationErrors`` as ``apiStrict`` and ``apiDeprecationErrors``
  whenever the user gave them, even when equal to the server's default, and never
  otherwise. Without a declared version nothing is added.
- "Cursors" and "Transactions": getMore and every command of a transaction, commit
  and abort included, carry the fields too (an earlier version of the spec left them
  out; servers since 5.0 check that they match the cursor's or the transaction's
  first command).
- "Generic command helper": the command document is not inspected; the client's
  declared version is applied to it like to any other command, so fields the user
  wrote in a runCommand are replaced by the client's (the spec leaves that case
  undefined and forbids overriding the declared version below the client).
- "Handshake behavior": with a declared version the handshake, and every later
  monitoring check, uses ``hello`` over OP_MSG, never legacy hello.

Pure: the shell (:mod:`mongocore.io.connection`, :mod:`mongocore.io.monitor`,
:mod:`mongocore.io.command_monitoring`) calls these where commands are finalized.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Optional

from mongocore.server_api import ServerApi

__all__ = ["API_FIELDS", "add_api_fields", "api_fields", "hello_command_name", "requires_op_msg"]

#: The command fields of the Stable API, in the order they are added.
API_FIELDS = ("apiVersion", "apiStrict", "apiDeprecationErrors")


def api_fields(server_api: Optional[ServerApi]) -> dict[str, Any]:
    """The fields ``server_api`` adds to every command (none without one)."""
    if server_api is None:
        return {}
    fields: dict[str, Any] = {"apiVersion": server_api.version}
    if server_api.strict is not None:
        fields["apiStrict"] = server_api.strict
    if server_api.deprecation_errors is not None:
        fields["apiDeprecationErrors"] = server_api.deprecation_errors
    return fields


def add_api_fields(command: MutableMapping[str, Any], server_api: Optional[ServerApi]) -> None:
    """Put the declared version's fields into ``command`` (in place), replacing any
    the command already had: the client's declaration is the one that counts."""
    if server_api is not None:
        command.update(api_fields(server_api))


def requires_op_msg(server_api: Optional[ServerApi], load_balanced: bool) -> bool:
    """Must every message, the handshake's first included, be OP_MSG? (Stable API
    "Sending Declared API Version to the Server"; Load Balancer Support
    "Connection Establishment".)"""
    return server_api is not None or load_balanced


def hello_command_name(hello_ok: bool, server_api: Optional[ServerApi]) -> str:
    """``hello`` when the server said helloOk or an API version is declared (which
    rules legacy hello out for good), else the legacy ``isMaster``."""
    return "hello" if hello_ok or server_api is not None else "isMaster"
