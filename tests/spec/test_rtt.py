"""The official rtt suite: the exponentially-weighted moving average of RTTs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mongocore.core.selection.rtt import RoundTripTime
from tests.spec import specdata
from tests.spec.format_keys import check_keys

SUITE = "server-selection/tests/rtt"


@pytest.mark.parametrize("path", specdata.json_files(SUITE))
def test_rtt(path: Path) -> None:
    test = specdata.load(path)
    # The format's keys (the server-selection suite's README, "RTT Calculation Tests").
    check_keys(path.name, test, ("avg_rtt_ms", "new_rtt_ms", "new_avg_rtt"))
    previous = test["avg_rtt_ms"]
    start = RoundTripTime() if previous == "NULL" else RoundTripTime(float(previous))
    assert start.add(float(test["new_rtt_ms"])).average == pytest.approx(
        float(test["new_avg_rtt"]), rel=1e-12, abs=1e-12
    )
