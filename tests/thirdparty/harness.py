"""Run a third-party library's own test suite against a simulated deployment on
localhost:27017, the way its CI runs it against a real mongod.

    python tests/thirdparty/harness.py --suite DIR --report FILE [--driver pymongo|mongocore|port]
                                       [--replset NAME] [--isolation auto|namespace|port]
                                       [--summary FILE] [-- PYTEST_ARGS...]
    python tests/thirdparty/harness.py --probe   # exit 0 if a private namespace can be had

The port must be ours: by default (``auto``) the process first moves into a network
namespace of its own (``unshare(CLONE_NEWNET)``, what ``unshare -n`` does, which needs
root or CAP_SYS_ADMIN) and brings its loopback interface up, so several runs can each
have their own 27017 at once; where that is refused, it uses the machine's port 27017
if both 127.0.0.1:27017 and [::1]:27017 are free. Otherwise it exits with status 3 and
a message naming both reasons. The deployment is a replica set of one member that
listens on 127.0.0.1:27017 and advertises itself as ``localhost:27017``, the name the
library's tests connect to.

The suite runs in a child process (``python -m pytest`` in DIR) that never imports
this project's ``tests`` package (the library has one of its own), with the plugins of
inject/ (beside this file) on its path: ``mongocore_suite_report`` writes each test's
outcome, and for a failure what it asked of the server, to the ``--report`` file (JSON
lines). With ``--driver mongocore``, ``mongocore_as_pymongo`` is loaded first, before
anything imports pymongo: it calls ``mongocore.install_as_pymongo()``, so the
library's unmodified ``import pymongo`` gets mongocore. With ``--driver port``, DIR is
an import-only port (tests/thirdparty/port.py) and ``mongocore_no_pymongo`` is loaded
first: code under DIR that imports pymongo fails. The deployment lives in this
process, which imports pymongo's bson and the simulator; the child is clean.

This file is run as a script, by path: it imports nothing from the project's tests.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

PORT = 27017
#: Exit status when no port 27017 of our own can be had.
NO_PORT = 3
INJECT = Path(__file__).resolve().parent / "inject"

_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def enter_network_namespace() -> Optional[str]:
    """Move this process into a new network namespace with ``lo`` up; None on success,
    else why not (the errno's name and meaning)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        return (
            f"unshare(CLONE_NEWNET) failed: {errno.errorcode.get(code, code)} ({os.strerror(code)})"
        )
    # A new namespace has only a loopback interface, and it is down.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))
    return None


def port_in_use(port: int) -> Optional[str]:
    """The first loopback address on which ``port`` cannot be bound, with the error."""
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((address, port))
        except OSError as exc:
            if family == socket.AF_INET6 and exc.errno == errno.EADDRNOTAVAIL:
                continue  # no IPv6 loopback: nothing can listen there either
            return f"{address}:{port} cannot be bound ({exc.strerror})"
    return None


def take_port(isolation: str) -> str:
    """Make port 27017 ours; returns how ("namespace" or "port"), or exits with NO_PORT."""
    refused = None
    if isolation in ("auto", "namespace"):
        refused = enter_network_namespace()
        if refused is None:
            return "namespace"
        if isolation == "namespace":
            print(f"harness: no private network namespace: {refused}", file=sys.stderr)
            sys.exit(NO_PORT)
    busy = port_in_use(PORT)
    if busy is None:
        return "port"
    reasons = [f"no private network namespace ({refused})"] if refused else []
    reasons.append(f"port {PORT} is not free: {busy}")
    print(
        "harness: the suite needs localhost:27017 of its own, and there is none: "
        + "; ".join(reasons)
        + ". Run as root (or with CAP_SYS_ADMIN) for a private namespace, or free the port.",
        file=sys.stderr,
    )
    sys.exit(NO_PORT)


def child_environment(report: Path, driver: str, suite: Path) -> dict[str, str]:
    # Not this run's PYTEST_ADDOPTS (CI's --junitxml), nor its PYTHONPATH.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = str(INJECT)
    # The library's folder is read-only in CI and shared with others: no __pycache__.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["MONGOCORE_SUITE_REPORT"] = str(report)
    env["MONGOCORE_SUITE_DRIVER"] = driver
    if driver == "port":
        env["MONGOCORE_PORT_ROOT"] = str(suite.resolve())
    return env


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", required=True, type=Path, help="the library's checkout")
    parser.add_argument("--report", required=True, type=Path, help="the outcomes (JSON lines)")
    parser.add_argument("--driver", choices=["pymongo", "mongocore", "port"], default="pymongo")
    parser.add_argument("--replset", default="mongoengine", help="the replica set's name")
    parser.add_argument("--isolation", choices=["auto", "namespace", "port"], default="auto")
    parser.add_argument("--summary", type=Path, help="where to write how the run went (JSON)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for the suite's pytest")
    if argv is None and sys.argv[1:] == ["--probe"]:
        # Can this process have a network namespace of its own? Exit 0 if so.
        refused = enter_network_namespace()
        print(refused or "namespace")
        return 0 if refused is None else 1
    args = parser.parse_args(argv)

    how = take_port(args.isolation)
    # Imported only now: the simulator's threads must start inside the namespace.
    from mongocore.sim import MemberConfig, ReplicaSet  # noqa: PLC0415

    member = MemberConfig(port=PORT, host=f"localhost:{PORT}")
    started = time.monotonic()
    with ReplicaSet(members=[member], name=args.replset, election_delay=0.05) as rs:
        rs.wait_for_primary()
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
        # A module that cannot be imported is one outcome; the other modules still run.
        command.append("--continue-on-collection-errors")
        if args.driver == "mongocore":
            command += ["-p", "mongocore_as_pymongo"]
        elif args.driver == "port":
            command += ["-p", "mongocore_no_pymongo"]
        command += ["-p", "mongocore_suite_report", *args.pytest_args]
        report = args.report.resolve()
        report.write_text("")
        env = child_environment(report, args.driver, args.suite)
        code = subprocess.call(command, cwd=args.suite, env=env)
    if args.summary is not None:
        args.summary.write_text(
            json.dumps(
                {
                    "isolation": how,
                    "exit_status": code,
                    "seconds": round(time.monotonic() - started, 1),
                }
            )
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
