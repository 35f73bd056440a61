"""The README's Python examples run as written.

The quickstart is run against a simulated replica set named ``rs``, as the README
starts one with ``python -m mongocore sim --name rs``; only its connection string's
host list is replaced by the simulator's (the README's fixed ports 27017-27019 may be
taken on a test machine). The pure-core quickstart runs unchanged.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytest.importorskip("pyuca")

from mongocore.sim import ReplicaSet

README = Path(__file__).resolve().parents[2] / "README.md"
README_URI = "mongodb://localhost:27017/?replicaSet=rs"


def _python_blocks() -> dict[str, str]:
    """Each ```python block, under the title of the section it is in."""
    blocks: dict[str, str] = {}
    section = ""
    text = README.read_text(encoding="utf-8")
    for match in re.finditer(r"^## ([^\n]+)$|^```python\n(.*?)^```", text, re.M | re.S):
        if match.group(1):
            section = match.group(1).strip()
        else:
            blocks[section] = match.group(2)
    return blocks


def _run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    return out.getvalue()


def test_the_quickstart_runs_against_a_replica_set_named_rs() -> None:
    code = _python_blocks()["Quickstart"]
    assert README_URI in code
    with ReplicaSet(3, name="rs", election_delay=0.05) as rs:
        hosts = ",".join(rs.hosts)
        printed = _run(code.replace(README_URI, f"mongodb://{hosts}/?replicaSet=rs"))
    assert "A-1 exists already" in printed
    assert "'qty': 3" in printed


def test_the_pure_core_quickstart_runs_unchanged() -> None:
    printed = _run(_python_blocks()["Quickstart: the pure core"])
    assert "db2.example.net" in printed
