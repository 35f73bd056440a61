"""Connection pool options, under pymongo's module name (``pymongo.pool``).

``PoolOptions`` lives in :mod:`mongocore.io.pool_options` (a light module: the pool
itself loads with the first client).
"""

from __future__ import annotations

from mongocore.io.pool_options import PoolOptions

__all__ = ["PoolOptions"]
