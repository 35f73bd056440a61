"""Diagnostic commands of a simulated mongod or mongos: serverStatus, listCommands, getLog,
getCmdLineOpts.

What they report is the simulated process's own: its host, uptime, connections,
opcounters and, on a replica-set member, the ``repl`` section built from its hello.
``mem`` is the memory of the Python process that runs every simulated server (there is
no other), and the storage engine is ``inMemory``: the data lives in memory and is lost
when the deployment stops. The logs hold the lines a server writes at startup.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import BUILD_VERSION, CommandContext, Reply
from mongocore.sim.registry import MONGOS, REPLICA_SET_MEMBER, STANDALONE
from mongocore.sim.system_collections import replica_set_of

if TYPE_CHECKING:
    from mongocore.sim.member import Process
    from mongocore.sim.registry import Registry

__all__ = [
    "cmd_get_cmd_line_opts",
    "cmd_get_log",
    "cmd_list_commands",
    "cmd_server_status",
    "process_of",
]

# A server's default maxIncomingConnections on a host allowing a million open files.
MAX_INCOMING_CONNECTIONS = 838_860
_MIB = 1024 * 1024
LOG_NAMES = ("global", "startupWarnings")


def process_of(ctx: CommandContext) -> Process:
    """The process running the command (every server-side handler has one)."""
    if ctx.process is None:
        # CommandNotSupported: a known command that cannot run where there is no process.
        raise CommandError(115, f"{ctx.name} is not supported here")
    return ctx.process


def _started_wall(process: Process) -> float:
    return time.time() - (time.monotonic() - process.started_at)


def _memory() -> dict[str, Any]:
    doc: dict[str, Any] = {"bits": 64 if sys.maxsize > 2**32 else 32}
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            virtual_pages, resident_pages = (int(v) for v in statm.read().split()[:2])
        page = os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        doc.update(resident=0, virtual=0, supported=False)
        return doc
    doc.update(
        resident=resident_pages * page // _MIB, virtual=virtual_pages * page // _MIB, supported=True
    )
    return doc


def _storage_engine() -> dict[str, Any]:
    return {
        "name": "inMemory",
        "supportsCommittedReads": True,
        "supportsPendingDrops": True,
        "dropPendingIdents": Int64(0),
        "supportsSnapshotReadConcern": True,
        "readOnly": False,
        "persistent": False,
        "backupCursorOpen": False,
    }


def cmd_server_status(ctx: CommandContext) -> Reply:
    process = process_of(ctx)
    uptime = max(0.0, time.monotonic() - process.started_at)
    server = process.server
    current = server.connection_count()
    reply: Reply = {
        "host": process.host,
        "version": BUILD_VERSION,
        "process": process.kind,
        "pid": Int64(os.getpid()),
        "uptime": float(int(uptime)),
        "uptimeMillis": Int64(int(uptime * 1000)),
        "uptimeEstimate": Int64(int(uptime)),
        "localTime": datetime.datetime.now(datetime.timezone.utc),
        "connections": {
            "current": current,
            "available": MAX_INCOMING_CONNECTIONS - current,
            "totalCreated": server.connections_created,
            "rejected": 0,
            "active": len(process.operations.snapshot()),
        },
        "mem": _memory(),
        "opcounters": process.opcounters.document(),
    }
    if replica_set_of(process) is not None:
        repl = process.hello_document(None, {})
        repl.pop("ok", None)
        repl["rbid"] = 1
        reply["repl"] = repl
    if process.kind == "mongod":
        reply["storageEngine"] = _storage_engine()
        monitor = getattr(getattr(process, "deployment", None), "ttl_monitor", None)
        if monitor is not None:
            reply["metrics"] = {"ttl": monitor.metrics()}
    # {section: 0} leaves a section out, as on a server.
    for key, value in ctx.cmd.items():
        if key != "serverStatus" and key in reply and not value and key != "ok":
            del reply[key]
    reply["ok"] = 1.0
    return reply


def cmd_list_commands(registry: Registry, ctx: CommandContext) -> Reply:
    """listCommands: every command of the registry this kind of process has, each once
    (by its main name)."""
    process = process_of(ctx)
    deployment = MONGOS if process.kind == "mongos" else STANDALONE
    if replica_set_of(process) is not None:
        deployment = REPLICA_SET_MEMBER
    listed = [
        command
        for command in registry
        # A mongod lists the replSet* commands whether or not it runs with --replSet.
        if command.runs_on(deployment)
        or (deployment == STANDALONE and command.runs_on(REPLICA_SET_MEMBER))
    ]
    commands: dict[str, Any] = {}
    for command in sorted(listed, key=lambda c: c.name.lower()):
        commands[command.name] = {
            "help": f"the {command.name} command",
            "requiresAuth": command.requires_auth,
            "secondaryOk": command.kind != "write",
            "adminOnly": command.admin_only,
            "apiVersions": ["1"] if command.api_version_1 else [],
            "deprecatedApiVersions": [],
        }
    return {"commands": commands, "ok": 1.0}


def _log_line(
    when: float,
    head: str,
    msg: str,
    attr: Optional[Mapping[str, Any]] = None,
    tags: tuple[str, ...] = (),
) -> str:
    """One structured log line; ``head`` is "severity component id context"."""
    severity, component, log_id, context = head.split()
    stamp = datetime.datetime.fromtimestamp(when, datetime.timezone.utc)
    line: dict[str, Any] = {
        "t": {"$date": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")},
        "s": severity,
        "c": component,
        "id": int(log_id),
        "ctx": context,
        "msg": msg,
    }
    if attr:
        line["attr"] = dict(attr)
    if tags:
        line["tags"] = list(tags)
    return json.dumps(line, separators=(",", ":"))


def _startup_warnings(process: Process, when: float) -> list[str]:
    if process.security.auth_enabled:
        return []
    return [
        _log_line(
            when,
            "W CONTROL 22120 initandlisten",
            "Access control is not enabled for the database. Read and write access to data"
            " and configuration is unrestricted",
            tags=("startupWarnings",),
        )
    ]


def _global_log(process: Process, when: float) -> list[str]:
    starting = "mongos" if process.kind == "mongos" else "MongoDB"
    attr = {"pid": os.getpid(), "port": process.port, "architecture": "64-bit"}
    lines = [
        _log_line(when, "I CONTROL 4615611 initandlisten", f"{starting} starting", attr),
        _log_line(
            when,
            "I CONTROL 23403 initandlisten",
            "Build Info",
            {"buildInfo": {"version": BUILD_VERSION}},
        ),
        *_startup_warnings(process, when),
    ]
    tls = "on" if process.security.tls is not None else "off"
    lines.append(
        _log_line(
            when,
            "I NETWORK 23016 listener",
            "Waiting for connections",
            {"port": process.port, "ssl": tls},
        )
    )
    return lines


def cmd_get_log(ctx: CommandContext) -> Reply:
    name = ctx.cmd.get("getLog")
    if name is None:
        raise CommandError(40414, "BSON field 'getLog.getLog' is missing but a required field")
    if not isinstance(name, str):
        raise CommandError(
            14,
            f"BSON field 'getLog.getLog' is the wrong type '{type(name).__name__}',"
            " expected type 'string'",
        )
    if name == "*":
        return {"names": list(LOG_NAMES), "ok": 1.0}
    process = process_of(ctx)
    when = _started_wall(process)
    if name == "global":
        lines = _global_log(process, when)
    elif name == "startupWarnings":
        lines = _startup_warnings(process, when)
    else:
        raise CommandError(96, f"No log named '{name}'")
    return {"totalLinesWritten": len(lines), "log": lines, "ok": 1.0}


def cmd_get_cmd_line_opts(ctx: CommandContext) -> Reply:
    process = process_of(ctx)
    security = process.security
    argv = [process.kind, "--port", str(process.port), "--bind_ip", "127.0.0.1"]
    net: dict[str, Any] = {"bindIp": "127.0.0.1", "port": process.port}
    parsed: dict[str, Any] = {"net": net}
    if security.tls is not None:
        argv += ["--tlsMode", security.tls_mode]
        net["tls"] = {"mode": security.tls_mode}
    if security.compressors:
        compressors = ",".join(security.compressors)
        argv += ["--networkMessageCompressors", compressors]
        net["compression"] = {"compressors": compressors}
    if replica_set_of(process) is not None:
        set_name = str(getattr(process.deployment, "name", ""))
        argv += ["--replSet", set_name]
        parsed["replication"] = {"replSet": set_name}
    if security.auth_enabled and process.kind == "mongod":
        argv.append("--auth")
        parsed["security"] = {"authorization": "enabled"}
    if process.kind == "mongod":
        argv += ["--storageEngine", "inMemory"]
        parsed["storage"] = {"engine": "inMemory"}
    return {"argv": argv, "parsed": parsed, "ok": 1.0}
