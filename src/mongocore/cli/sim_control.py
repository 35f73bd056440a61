"""``python -m mongocore sim-control``: drive a running simulator's failovers.

Sends the simulator's ``simControl`` command (sim/control.py) to one of the
deployment's processes and prints the outcome. The deployment is named by ``--port``
(a process on 127.0.0.1; 27017 by default) or by ``--uri`` (the connection string
``sim`` printed, with its credentials and TLS options). The command goes to the
first process that can be reached, trying the one it acts on last: a member that was
killed or cut off cannot answer for its own restart or heal, another member does.
A real MongoDB server refuses the command (CommandNotFound), so nothing changes there.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any, Optional, TextIO

from mongocore.cli.arguments import port, seconds
from mongocore.core.address import Address, parse_address
from mongocore.core.options import ClientOptions
from mongocore.errors import ConfigurationError, ConnectionFailure, OperationFailure
from mongocore.io.auth import authenticator_for
from mongocore.io.connection import connect
from mongocore.io.connection_settings import ConnectionSettings

__all__ = ["ACTIONS", "add_control_parser", "control_main", "sim_control"]

#: The subcommand's actions and the simControl actions they send.
ACTIONS = {
    "status": "status",
    "stepdown": "stepDown",
    "elect": "elect",
    "freeze": "freeze",
    "kill": "kill",
    "restart": "restart",
    "partition": "partition",
    "heal": "heal",
}
_NEEDS_MEMBER = frozenset({"elect", "freeze", "kill", "restart", "partition", "heal"})
# Long enough for a loaded machine; short enough to move on from a member that is cut off.
_CONNECT_TIMEOUT = 5.0
_REPLY_TIMEOUT = 30.0


def member_name(text: str) -> str:
    """``host:port``, or a port alone for ``127.0.0.1:<port>``."""
    if text.isdigit():
        return f"127.0.0.1:{port(text)}"
    try:
        return str(parse_address(text))
    except (ConfigurationError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"not host:port: {text!r} ({exc})") from None


def _candidates(hosts: tuple[Address, ...], member: Optional[str]) -> list[Address]:
    """The processes to try, in order: the one acted on last."""
    if member is None:
        return list(hosts)
    target = parse_address(member)
    local = {"127.0.0.1", "localhost"}

    def is_target(address: Address) -> bool:
        if address == target:
            return True
        return address.port == target.port and {address.host, target.host} <= local

    return sorted(hosts, key=is_target)


def _status_lines(reply: dict[str, Any]) -> list[str]:
    topology = reply.get("topology")
    heading = f"{topology}"
    if reply.get("setName"):
        heading += f" {reply['setName']}, primary: {reply.get('primary') or 'none'}"
    lines = [heading]
    for entry in reply.get("members", []):
        line = f"  {entry['host']}  {entry['type']}  {entry['state']}"
        if entry.get("partitioned"):
            line += f" (partitioned: {entry['partitioned']})"
        tags = entry.get("tags")
        if tags:
            line += "  tags " + ",".join(f"{k}={v}" for k, v in tags.items())
        lines.append(line)
    return lines


def sim_control(
    action: str,
    member: Optional[str] = None,
    *,
    uri: str = "mongodb://127.0.0.1:27017/",
    secs: Optional[float] = None,
    mode: Optional[str] = None,
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
) -> int:
    """Send ``simControl`` for ``action`` (a key of ACTIONS) to the deployment at
    ``uri``; print the outcome. 0 on success, 1 when refused or nothing answered."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    command: dict[str, Any] = {"simControl": ACTIONS[action]}
    if member is not None:
        command["member"] = member
    if secs is not None:
        command["secs"] = secs
    if mode is not None:
        command["mode"] = mode
    try:
        options = ClientOptions.from_uri(uri)
        settings = dataclasses.replace(
            ConnectionSettings.from_options(options),
            connect_timeout=_CONNECT_TIMEOUT,
            socket_timeout=_REPLY_TIMEOUT,
        )
        authenticate = authenticator_for(options)
    except (ConfigurationError, ValueError) as exc:
        print(f"mongocore sim-control: {exc}", file=err)
        return 1
    if not options.hosts:
        print(f"mongocore sim-control: {uri} names no host", file=err)
        return 1
    failures: list[str] = []
    for address in _candidates(options.hosts, member):
        try:
            conn = connect(address, settings, authenticate=authenticate)
        except ConnectionFailure as exc:
            failures.append(f"{address}: {exc}")
            continue
        except OperationFailure as exc:  # the login was refused
            print(f"mongocore sim-control: {address}: {exc}", file=err)
            return 1
        try:
            reply = conn.command("admin", dict(command))
        except OperationFailure as exc:
            if exc.code == 59:
                exc = OperationFailure(f"{address} is not a mongocore simulator: {exc}")
            print(f"mongocore sim-control: {exc}", file=err)
            return 1
        except ConnectionFailure as exc:
            failures.append(f"{address}: {exc}")
            continue
        finally:
            conn.close("done")
        if action == "status":
            for line in _status_lines(reply):
                print(line, file=out)
        else:
            acted_on = f" {reply['member']}" if "member" in reply else ""
            print(f"{action}{acted_on}: done (sent to {address})", file=out)
        return 0
    print("mongocore sim-control: no process answered: " + "; ".join(failures), file=err)
    return 1


def add_control_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``sim-control`` subcommand and its options, on the top parser's subparsers."""
    control: argparse.ArgumentParser = commands.add_parser(
        "sim-control",
        help="drive a running simulator: step down, kill, restart, partition, ...",
        description="Send a control command to a simulated deployment started with "
        "'python -m mongocore sim' (another terminal). MEMBER is host:port, or a port "
        "for 127.0.0.1:port.",
    )
    control.add_argument("action", choices=list(ACTIONS), help="what to do")
    control.add_argument(
        "member",
        nargs="?",
        type=member_name,
        help="the process to act on (required, except for status and stepdown; for"
        " stepdown, it must be the primary)",
    )
    where = control.add_mutually_exclusive_group()
    where.add_argument(
        "--port", type=port, metavar="P", help="a process of the deployment on 127.0.0.1 (27017)"
    )
    where.add_argument(
        "--uri", metavar="URI", help="the connection string sim printed (credentials, TLS)"
    )
    control.add_argument(
        "--secs",
        type=seconds,
        metavar="SECONDS",
        help="stepdown: how long the old primary may not be re-elected (60); freeze: how"
        " long the member may not stand for election (0 unfreezes)",
    )
    control.add_argument(
        "--mode",
        choices=("refuse", "drop"),
        help="partition: refuse connections (the default) or accept and never answer",
    )
    control.set_defaults(control_error=control.error)
    return control


def control_main(args: argparse.Namespace) -> int:
    """Run ``sim-control`` with parsed arguments; usage errors exit 2."""
    if args.action in _NEEDS_MEMBER and args.member is None:
        args.control_error(f"{args.action} needs the MEMBER to act on")
    if args.action == "freeze" and args.secs is None:
        args.control_error("freeze needs --secs")
    if args.action not in ("stepdown", "freeze") and args.secs is not None:
        args.control_error("--secs is for stepdown and freeze")
    if args.action != "partition" and args.mode is not None:
        args.control_error("--mode is for partition")
    uri = args.uri or f"mongodb://127.0.0.1:{args.port or 27017}/"
    return sim_control(args.action, args.member, uri=uri, secs=args.secs, mode=args.mode)
