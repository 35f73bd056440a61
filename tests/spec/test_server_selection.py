"""The official server_selection suite: suitable servers and the latency window.

One test per JSON file under server-selection/tests/server_selection (id: the path
without .json), for every topology type, reads and writes, and the deprioritized
servers of the newer suites.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec import specdata
from tests.spec.selection_support import check_selection

SUITE = "server-selection/tests/server_selection"


@pytest.mark.parametrize("path", specdata.json_files(SUITE, recursive=True))
def test_server_selection(path: Path) -> None:
    check_selection(specdata.load_extended(path))
