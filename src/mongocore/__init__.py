"""mongocore: a pure-Python, synchronous MongoDB driver core."""

from __future__ import annotations

__version__ = "0.1.0"

DRIVER_NAME = "mongocore"
