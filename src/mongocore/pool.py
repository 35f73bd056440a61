"""Connection pool options, under pymongo's module name (``pymongo.pool``).

``PoolOptions``, the class of ``client.options.pool_options``, lives in
:mod:`mongocore.api.client_options` (the CMAP options each pool is built with are
:class:`mongocore.io.pool_options.PoolOptions`).
"""

from __future__ import annotations

from mongocore.api.client_options import PoolOptions

__all__ = ["PoolOptions"]
