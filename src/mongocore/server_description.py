"""Server descriptions, under pymongo's module name (``pymongo.server_description``).

``ServerDescription`` lives in :mod:`mongocore.core.description.server`.
``SERVER_TYPE`` holds the server types under pymongo's names
(``SERVER_TYPE.RSPrimary``); its values are mongocore's :class:`ServerType` members
(``ServerType.RS_PRIMARY``, which a description's ``type`` holds), not pymongo's
integers, so ``description.type == SERVER_TYPE.RSPrimary`` holds as it does in pymongo.
"""

from __future__ import annotations

import datetime
from typing import NamedTuple

from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import ServerType

__all__ = ["EPOCH_NAIVE", "SERVER_TYPE", "ServerDescription"]


class _ServerTypes(NamedTuple):
    Unknown: ServerType
    Mongos: ServerType
    RSPrimary: ServerType
    RSSecondary: ServerType
    RSArbiter: ServerType
    RSOther: ServerType
    RSGhost: ServerType
    Standalone: ServerType
    LoadBalancer: ServerType
    PossiblePrimary: ServerType


#: The server types by the SDAM specification's names, as pymongo's ``SERVER_TYPE``.
SERVER_TYPE = _ServerTypes(
    ServerType.UNKNOWN,
    ServerType.MONGOS,
    ServerType.RS_PRIMARY,
    ServerType.RS_SECONDARY,
    ServerType.RS_ARBITER,
    ServerType.RS_OTHER,
    ServerType.RS_GHOST,
    ServerType.STANDALONE,
    ServerType.LOAD_BALANCER,
    ServerType.POSSIBLE_PRIMARY,
)

#: The Unix epoch as a naive datetime (pymongo's constant).
EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
