"""Sessions and transactions under pymongo's module name (``pymongo.client_session``):
``ClientSession``, ``SessionOptions`` and ``TransactionOptions``.

``from pymongo.client_session import TransactionOptions`` becomes
``from mongocore.client_session import TransactionOptions``. The classes live in
:mod:`mongocore.api.client_session` and :mod:`mongocore.api.transaction_options`.
"""

from __future__ import annotations

from mongocore.api.client_session import ClientSession, SessionOptions
from mongocore.api.transaction_options import TransactionOptions

__all__ = ["ClientSession", "SessionOptions", "TransactionOptions"]
