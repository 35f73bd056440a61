"""The official max-staleness suite: staleness estimates, maxStalenessSeconds checks.

One test per JSON file under max-staleness/tests (id: the path without .json).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec import specdata
from tests.spec.selection_support import check_selection

SUITE = "max-staleness/tests"


@pytest.mark.parametrize("path", specdata.json_files(SUITE, recursive=True))
def test_max_staleness(path: Path) -> None:
    check_selection(specdata.load_extended(path))
