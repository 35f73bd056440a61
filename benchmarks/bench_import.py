"""Import time, mongocore against pymongo: fresh interpreters, best of N.

Each measurement is a new Python process that times, with ``time.perf_counter``
around the statement only (interpreter start-up excluded, as it is the same for
both), either

- ``from <driver> import MongoClient``, or
- that import and constructing a client (``MongoClient("mongodb://localhost:1")``,
  closed afterwards, outside the timing): what a program pays before its first
  operation.

Both drivers are timed as installed, with their bytecode compiled: the script points
``PYTHONPYCACHEPREFIX`` at a temporary directory and imports each driver once
before measuring, so neither pays for compiling its sources (which
``PYTHONDONTWRITEBYTECODE`` or a read-only checkout would otherwise charge to
whichever driver is not installed from a wheel). Runs alternate between the
drivers; the best (lowest) of ``--repeat`` runs is reported. The ratio is
mongocore's time divided by pymongo's.

pymongo's import time depends on what else is installed: when it finds the
packages of its ``ocsp`` extra (pyOpenSSL, service_identity) or of its other
extras, its import loads them too (pyOpenSSL and cryptography cost tens of
milliseconds). The script says which of them the measured interpreters loaded; a
plain ``pip install pymongo`` has none.

Run: python benchmarks/bench_import.py [--repeat 30] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile

import pymongo

from ratio_table import print_ratio_table

TIMED = """
import time
start = time.perf_counter()
from {driver} import MongoClient
{construct}
elapsed = time.perf_counter() - start
{close}
print(elapsed)
"""

CONSTRUCT = 'client = MongoClient("mongodb://localhost:1")'

# Packages of pymongo's extras that its import loads when they are installed.
OPTIONAL = ("OpenSSL", "service_identity", "cryptography", "pymongocrypt", "pymongo_auth_aws")

LOADED = """
import sys
import {driver}
print(", ".join(name for name in {optional!r} if name in sys.modules) or "none")
"""

SCENARIOS = [
    ("import MongoClient", "", ""),
    ("import MongoClient, construct a client", CONSTRUCT, "client.close()"),
]


def output(code: str, env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout


def run(code: str, env: dict[str, str]) -> float:
    return float(output(code, env).split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-import-") as cache:
        env = dict(os.environ, PYTHONPYCACHEPREFIX=cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        rows = []
        for label, construct, close in SCENARIOS:
            codes = {
                driver: TIMED.format(driver=driver, construct=construct, close=close)
                for driver in ("mongocore", "pymongo")
            }
            for code in codes.values():  # compile and cache the bytecode
                run(code, env)
            best = dict.fromkeys(codes, float("inf"))
            for _ in range(args.repeat):
                for driver, code in codes.items():
                    best[driver] = min(best[driver], run(code, env))
            rows.append((label, best["mongocore"], best["pymongo"]))
        optional = output(LOADED.format(driver="pymongo", optional=OPTIONAL), env).strip()
    print(
        f"python {platform.python_version()}, pymongo {pymongo.version} (optional packages"
        f" its import loaded: {optional}), best of {args.repeat} fresh interpreters"
    )
    in_ms = [(label, mine * 1e3, other * 1e3) for label, mine, other in rows]
    print_ratio_table(in_ms, heading="work", unit="ms", markdown=args.markdown)


if __name__ == "__main__":
    main()
