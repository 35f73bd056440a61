from __future__ import annotations

import io

from mongocore.cli import demo, main


def test_demo_replays_discovery_step_down_and_election() -> None:
    out = io.StringIO()
    assert demo(out) == 0
    text = out.getvalue()
    assert "db1.example.net:27017: Unknown -> RSPrimary" in text
    assert "monitoring db3.example.net:27017" in text
    assert "db1.example.net:27017: RSPrimary -> Unknown (not primary (code 10107))" in text
    assert "select a write                                -> no suitable server" in text
    assert text.rstrip().endswith(
        "<ServerDescription db3.example.net:27017 RSSecondary rtt=30.0ms setName='rs'>]>"
    )
    last_write = [line for line in text.splitlines() if "select a write" in line][-1]
    assert last_write.endswith("db2.example.net:27017")


def test_version(capsys: object) -> None:
    assert main(["version"]) == 0
