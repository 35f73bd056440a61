"""Read preferences: mode, tag sets and maxStalenessSeconds, and how they reach a server.

Seed: server-selection.rst 1.5, sections "Read Preference" ("Components of a read
preference": mode, maxStalenessSeconds, tag_sets), "Passing read preference to
mongos", "Topology type: Single" (the secondaryOk rule for direct connections) and
"Topology types: ReplicaSetWithPrimary or ReplicaSetNoPrimary" (secondaryOk for
every mode but primary).

A ``ReadPreference`` is validated once, when it is built, for the rules that do not
depend on the deployment. The rules that do (maxStalenessSeconds against
heartbeatFrequencyMS and the servers' wire versions) are checked at selection time
by ``mongocore.core.selection.selectors``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, NamedTuple, Optional, Union

from mongocore.core.description.types import ServerType, TopologyType
from mongocore.errors import InvalidReadPreference

__all__ = [
    "NEAREST",
    "PRIMARY",
    "PRIMARY_PREFERRED",
    "SECONDARY",
    "SECONDARY_PREFERRED",
    "Mode",
    "ReadPreference",
    "ReadPreferenceForServer",
    "read_preference_for_server",
]


class Mode(str, Enum):
    """The read preference modes; each value is the camelCase name the wire uses."""

    PRIMARY = "primary"
    PRIMARY_PREFERRED = "primaryPreferred"
    SECONDARY = "secondary"
    SECONDARY_PREFERRED = "secondaryPreferred"
    NEAREST = "nearest"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, name: Union[str, Mode]) -> Mode:
        """The mode named ``name``, in any letter case (``"SecondaryPreferred"`` too)."""
        if isinstance(name, Mode):
            return name
        if not isinstance(name, str):
            raise InvalidReadPreference(
                f"read preference mode must be a string, not {type(name).__name__}"
            )
        mode = _MODES_BY_LOWER_NAME.get(name.lower())
        if mode is None:
            allowed = ", ".join(m.value for m in cls)
            raise InvalidReadPreference(
                f"unknown read preference mode {name!r}: expected one of {allowed}"
            )
        return mode


_MODES_BY_LOWER_NAME = {m.value.lower(): m for m in Mode}

#: The seed's default tag_sets: "a list with an empty tag set: [{}]".
DEFAULT_TAG_SETS: tuple[dict[str, Any], ...] = ({},)

TagSets = Iterable[Mapping[str, Any]]


class ReadPreference:
    """An immutable, validated read preference.

    ``tag_sets`` is a tuple of tag-set dicts, tried in order; the default ``({},)``
    matches every server. ``max_staleness_seconds`` is None for "no maximum"; -1 is
    accepted as the same thing and stored as None.

    Raises InvalidReadPreference for: an unknown mode; non-empty tag sets, or a
    positive maxStalenessSeconds, with mode primary; a maxStalenessSeconds that is
    neither positive nor -1.
    """

    __slots__ = ("_has_tags", "_hash", "_key", "max_staleness_seconds", "mode", "tag_sets")

    mode: Mode
    tag_sets: tuple[dict[str, Any], ...]
    max_staleness_seconds: Optional[int]
    _has_tags: bool
    _key: tuple[Any, ...]
    _hash: int

    def __init__(
        self,
        mode: Union[Mode, str] = Mode.PRIMARY,
        tag_sets: Optional[TagSets] = None,
        max_staleness_seconds: Optional[int] = None,
    ) -> None:
        init = object.__setattr__
        mode = Mode.parse(mode)
        tags = _validate_tag_sets(tag_sets)
        max_staleness = _validate_max_staleness(max_staleness_seconds)
        has_tags = any(tags)
        if mode is Mode.PRIMARY:
            if has_tags:
                raise InvalidReadPreference(
                    f"read preference mode primary cannot be combined with tag sets "
                    f"(got {list(tags)}): tags select secondaries; use primaryPreferred, "
                    "secondary, secondaryPreferred or nearest"
                )
            if max_staleness is not None:
                raise InvalidReadPreference(
                    f"read preference mode primary cannot be combined with "
                    f"maxStalenessSeconds={max_staleness}: the primary is never stale; "
                    "use another mode, or drop maxStalenessSeconds"
                )
        init(self, "mode", mode)
        init(self, "tag_sets", tags)
        init(self, "max_staleness_seconds", max_staleness)
        init(self, "_has_tags", has_tags)
        key = (mode, tuple(frozenset(t.items()) for t in tags), max_staleness)
        init(self, "_key", key)
        init(self, "_hash", hash(key))

    @classmethod
    def from_options(
        cls,
        mode: Optional[str] = None,
        tags: Optional[TagSets] = None,
        max_staleness_seconds: Union[int, str, None] = None,
    ) -> ReadPreference:
        """Build from connection-string style values.

        ``mode`` is a case-insensitive mode name (None means primary); ``tags`` is
        the list of tag sets from ``readPreferenceTags`` (None or empty means the
        default ``[{}]``); ``max_staleness_seconds`` may be an int or a decimal
        string, None or -1 meaning "no maximum".
        """
        if isinstance(max_staleness_seconds, str):
            text = max_staleness_seconds.strip()
            try:
                max_staleness_seconds = int(text)
            except ValueError:
                raise InvalidReadPreference(
                    f"maxStalenessSeconds must be an integer, not {max_staleness_seconds!r}"
                ) from None
        tag_list = None if tags is None else list(tags)
        return cls(
            Mode.PRIMARY if mode is None else mode,
            tag_list or None,
            max_staleness_seconds,
        )

    # --- immutability, equality ------------------------------------------------

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ReadPreference is immutable; cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, ReadPreference):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadPreference, (self.mode, self.tag_sets, self.max_staleness_seconds))

    def __repr__(self) -> str:
        parts = [f"mode={self.mode.value!r}"]
        if self.tag_sets != DEFAULT_TAG_SETS:
            parts.append(f"tag_sets={list(self.tag_sets)!r}")
        if self.max_staleness_seconds is not None:
            parts.append(f"max_staleness_seconds={self.max_staleness_seconds}")
        return f"ReadPreference({', '.join(parts)})"

    def __str__(self) -> str:
        text = self.mode.value
        if self._has_tags:
            text += f", tag sets {list(self.tag_sets)}"
        if self.max_staleness_seconds is not None:
            text += f", maxStalenessSeconds {self.max_staleness_seconds}"
        return text

    # --- what the wire needs -----------------------------------------------

    @property
    def secondary_ok(self) -> bool:
        """Whether a read may go to a secondary: every mode but primary."""
        return self.mode is not Mode.PRIMARY

    @property
    def has_tags(self) -> bool:
        """True if some tag set is non-empty (``[{}]`` alone matches every server)."""
        return self._has_tags

    def document(self) -> dict[str, Any]:
        """The ``$readPreference`` document: camelCase mode, ``tags``, ``maxStalenessSeconds``.

        ``tags`` is present only when some tag set is non-empty, and
        ``maxStalenessSeconds`` only when there is a maximum; with mode primary
        neither can be present. A new dict each call: callers may change it.
        """
        doc: dict[str, Any] = {"mode": self.mode.value}
        if self._has_tags:
            doc["tags"] = [dict(t) for t in self.tag_sets]
        if self.max_staleness_seconds is not None:
            doc["maxStalenessSeconds"] = self.max_staleness_seconds
        return doc

    def for_mongos(self) -> ReadPreferenceForServer:
        """ "Passing read preference to mongos": which of $readPreference and secondaryOk.

        primary: neither. secondary, primaryPreferred, nearest: both.
        secondaryPreferred: secondaryOk, and $readPreference only with non-empty
        tag sets or a maxStalenessSeconds (older mongos read secondaryOk alone as
        secondaryPreferred).
        """
        mode = self.mode
        if mode is Mode.PRIMARY:
            return _NOTHING
        if mode is Mode.SECONDARY_PREFERRED and not (
            self._has_tags or self.max_staleness_seconds is not None
        ):
            return _SECONDARY_OK_ONLY
        return ReadPreferenceForServer(self.document(), True)


class ReadPreferenceForServer(NamedTuple):
    """How a read's preference is sent to the selected server.

    ``document`` is the ``$readPreference`` to send, or None to send none;
    ``secondary_ok`` is the secondaryOk flag (the slaveOK wire bit of the seed).
    """

    document: Optional[dict[str, Any]]
    secondary_ok: bool


_NOTHING = ReadPreferenceForServer(None, False)
_SECONDARY_OK_ONLY = ReadPreferenceForServer(None, True)

# Enum members compared on every operation, bound once: on Python 3.11 an enum
# member read from its class is several times slower (EnumType.__getattr__).
_MONGOS, _LOAD_BALANCER = ServerType.MONGOS, ServerType.LOAD_BALANCER
_STANDALONE, _SINGLE, _PRIMARY = ServerType.STANDALONE, TopologyType.SINGLE, Mode.PRIMARY


def read_preference_for_server(
    read_preference: Optional[ReadPreference],
    topology_type: TopologyType,
    server_type: ServerType,
) -> ReadPreferenceForServer:
    """What to send with a read to a server of ``server_type`` in ``topology_type``.

    - a Mongos (in a Sharded or a Single topology) or a LoadBalancer: the rules of
      "Passing read preference to mongos";
    - a Standalone (of a Single topology): nothing, it serves any read (the newer
      spec's OP_MSG rule: "clients MUST NOT send the read preference to the server");
    - any other server of a Single topology: secondaryOk, always, so that a direct
      connection can read from any member;
    - a replica set member: secondaryOk for every mode but primary, no document.

    ``read_preference`` None means the default, primary.
    """
    rp = PRIMARY if read_preference is None else read_preference
    if server_type is _MONGOS or server_type is _LOAD_BALANCER:
        return rp.for_mongos()
    if server_type is _STANDALONE:
        return _NOTHING
    if topology_type is _SINGLE:
        return _SECONDARY_OK_ONLY
    return _SECONDARY_OK_ONLY if rp.mode is not _PRIMARY else _NOTHING


# --- validation ----------------------------------------------------------------


def _validate_tag_sets(tag_sets: Optional[TagSets]) -> tuple[dict[str, Any], ...]:
    if tag_sets is None:
        return DEFAULT_TAG_SETS
    if isinstance(tag_sets, (Mapping, str, bytes)):
        raise InvalidReadPreference(
            "tag_sets must be a list of tag sets (documents), for example "
            "[{'dc': 'ny'}, {}], not a single " + type(tag_sets).__name__
        )
    result = []
    for tag_set in tag_sets:
        if not isinstance(tag_set, Mapping):
            raise InvalidReadPreference(
                f"each tag set must be a document, not {type(tag_set).__name__} ({tag_set!r})"
            )
        for key, value in tag_set.items():
            if not isinstance(key, str):
                raise InvalidReadPreference(f"tag names must be strings, not {key!r}")
            try:
                hash(value)
            except TypeError:
                raise InvalidReadPreference(
                    f"tag {key!r} has an unusable value {value!r}: tag values are strings"
                ) from None
        result.append(dict(tag_set))
    if not result or result == [{}]:
        # An empty list and [{}] both make every candidate eligible.
        return DEFAULT_TAG_SETS
    return tuple(result)


def _validate_max_staleness(value: Optional[Any]) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidReadPreference(
            f"maxStalenessSeconds must be an integer number of seconds, not {value!r}"
        )
    number = float(value)
    if math.isfinite(number) and number.is_integer():
        seconds = int(number)
    else:
        raise InvalidReadPreference(
            f"maxStalenessSeconds must be a whole number of seconds, not {value!r}"
        )
    if seconds == -1:
        return None  # "-1 MUST mean 'no maximum'"
    if seconds <= 0:
        raise InvalidReadPreference(
            f"maxStalenessSeconds must be a positive number of seconds, or -1 for no "
            f"maximum, not {seconds}"
        )
    return seconds


PRIMARY = ReadPreference(Mode.PRIMARY)
PRIMARY_PREFERRED = ReadPreference(Mode.PRIMARY_PREFERRED)
SECONDARY = ReadPreference(Mode.SECONDARY)
SECONDARY_PREFERRED = ReadPreference(Mode.SECONDARY_PREFERRED)
NEAREST = ReadPreference(Mode.NEAREST)
