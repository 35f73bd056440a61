"""A pymongo application ported by changing its import lines only.

The application (``pymongo_style_app.py``) uses what a pymongo user reaches for in
the first hour: attribute access, ``tz_aware`` and standard UUIDs, a unique index and
``DuplicateKeyError``, ``ASCENDING``/``DESCENDING``, ``IndexModel``, write models,
``ReturnDocument``, ``raw_result``, read preference objects, ``with_options`` with
``CodecOptions``, a session, a command listener, ``client.admin``. Run with pymongo
and with mongocore against the same simulated replica set, it must report the same.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

from mongocore.sim import ReplicaSet
from tests.integration import pymongo_style_app as app


def _run(imports: str, uri: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(imports + app.BODY, "pymongo_style_app", "exec"), namespace)
    report: dict[str, Any] = namespace["run"](uri)
    return report


def test_the_same_application_reports_the_same_with_either_driver(rs: ReplicaSet) -> None:
    with_pymongo = _run(app.PYMONGO_IMPORTS, rs.uri)
    with_mongocore = _run(app.MONGOCORE_IMPORTS, rs.uri)
    assert with_pymongo["duplicate_code"] == 11000
    assert with_pymongo["found"]["placed_aware"] and with_pymongo["found"]["placed_same"]
    assert with_mongocore == with_pymongo
