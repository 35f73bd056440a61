"""The README's main command, run in-process: nothing acknowledged is lost or doubled."""

from __future__ import annotations

import io
import re

import pytest

pytest.importorskip("pyuca", reason="the demo runs on the simulated deployment (sim extra)")

from mongocore.cli.demo import live_demo


def test_demo_rides_through_failovers_without_losing_or_doubling_writes() -> None:
    out = io.StringIO()
    assert live_demo(writers=2, readers=1, step_downs=2, interval=0.6, out=out) == 0
    text = out.getvalue()
    assert "step-down 2:" in text
    acknowledged = int(re.search(r"writes acknowledged\s+(\d+)", text).group(1))  # type: ignore[union-attr]
    assert acknowledged > 0
    assert re.search(r"writes lost\s+0\n", text)
    assert re.search(r"duplicates\s+0\n", text)
    assert "longest pause a caller saw" in text
