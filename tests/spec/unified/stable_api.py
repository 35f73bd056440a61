"""The ``serverApi`` option of a client entity (unified test format, "client"): the
declared API version, as a :class:`~mongocore.server_api.ServerApi`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore.server_api import ServerApi
from tests.spec.unified.entities import UnsupportedFeature

_FIELDS = frozenset({"version", "strict", "deprecationErrors"})


def server_api_of(spec: Optional[Mapping[str, Any]]) -> Optional[ServerApi]:
    """The ServerApi a client entity declares (None without ``serverApi``)."""
    if spec is None:
        return None
    unknown = set(spec) - _FIELDS
    if unknown:
        raise UnsupportedFeature(f"serverApi fields {sorted(unknown)}")
    return ServerApi(
        spec["version"],
        strict=spec.get("strict"),
        deprecation_errors=spec.get("deprecationErrors"),
    )
