"""Databases, under pymongo's module name (``pymongo.database``).

``Database`` lives in :mod:`mongocore.api.database`. ``_check_name`` is pymongo's
private database name check, which libraries such as MongoEngine import (from here,
or from ``pymongo.database_shared``, which :func:`mongocore.install_as_pymongo` maps
to this module).
"""

from __future__ import annotations

from mongocore.api.database import Database
from mongocore.api.database import _check_name as _check_name  # noqa: PLC0414 - private, see above

__all__ = ["Database"]
