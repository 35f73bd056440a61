"""The unified runner's matcher (tests/spec/unified/matching.py) on values where
Python's equality and BSON's differ."""

from __future__ import annotations

import pytest
from bson import Int64

from tests.spec.unified.matching import match

NAN = float("nan")


def test_nan_matches_nan() -> None:
    """BSON compares NaN equal to NaN: an outcome of ``{_id: NaN}`` is met by a stored
    NaN (a matcher using Python's ``==`` would fail every such test)."""
    match({"_id": NAN}, {"_id": float("nan")})
    match([NAN], [float("nan")], root=False)


@pytest.mark.parametrize("actual", [0.0, 1, Int64(1), float("inf")])
def test_nan_does_not_match_a_number(actual: object) -> None:
    with pytest.raises(AssertionError):
        match({"x": NAN}, {"x": actual})
    with pytest.raises(AssertionError):
        match({"x": actual}, {"x": NAN})
