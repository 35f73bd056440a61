"""A client's options, under pymongo's module name (``pymongo.client_options``).

``ClientOptions`` is the class of ``client.options``; it lives in
:mod:`mongocore.core.options`. docs/from-pymongo.md lists how it differs from
pymongo's.
"""

from __future__ import annotations

from mongocore.core.options import ClientOptions

__all__ = ["ClientOptions"]
