"""A client's options, under pymongo's module name (``pymongo.client_options``).

``ClientOptions`` is the class of ``client.options``; it lives in
:mod:`mongocore.api.client_options` (a client's typed settings, in mongocore's names,
are :class:`mongocore.core.options.ClientOptions`, ``client.settings``).
"""

from __future__ import annotations

from mongocore.api.client_options import ClientOptions

__all__ = ["ClientOptions"]
